/** The chat routes' request body, `{ "prompt": "…" }`: the prompt, or a 400 to return. */
export async function promptOf(request: Request): Promise<string | Response> {
  try {
    const payload = (await request.json()) as { prompt?: unknown };
    return typeof payload.prompt === 'string' ? payload.prompt : '';
  } catch {
    return Response.json({ error: 'the body must be JSON: {"prompt": "…"}' }, { status: 400 });
  }
}
