import { isCircuitOpenError, withRetry } from 'breakwater';
import { ANTHROPIC_BASE_URL, ProviderError, retryAfterSeconds, summarizeBreaker } from '@/lib/provider';

// No `export const runtime` or `dynamic` here: with `cacheComponents: true` (create-next-app's
// default in Next.js 16.4) route segment config fails `next build`. A POST handler is dynamic
// anyway, and runs on the Node.js runtime.

/** POST {"text": "..."} → {"summary": "..."}; 503 + Retry-After while the provider is down. */
export async function POST(request: Request): Promise<Response> {
  const { text } = (await request.json().catch(() => ({}))) as { text?: unknown };
  if (typeof text !== 'string' || text === '') {
    return Response.json({ error: 'the body must be JSON: {"text": "..."}' }, { status: 400 });
  }
  try {
    const summary = await summarizeBreaker.execute(() =>
      // A few retries inside the breaker: it counts the call once, after the last attempt.
      withRetry(
        async ({ signal }) => {
          const res = await fetch(`${ANTHROPIC_BASE_URL}/v1/messages`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'anthropic-version': '2023-06-01',
              'x-api-key': process.env.ANTHROPIC_API_KEY ?? '',
            },
            body: JSON.stringify({
              model: 'claude-haiku-4-5',
              max_tokens: 300,
              messages: [{ role: 'user', content: `Summarize in two sentences:\n\n${text}` }],
            }),
            signal,
          });
          if (!res.ok) throw new ProviderError(res.status, res.headers);
          const message = (await res.json()) as { content?: { type: string; text?: string }[] };
          return message.content?.find((c) => c.type === 'text')?.text ?? '';
        },
        { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 2_000, signal: request.signal },
      ),
    );
    return Response.json({ summary });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      // Refused at once, no request sent: say when to come back.
      return Response.json(
        { error: 'The summarizer is unavailable right now, try again later.' },
        { status: 503, headers: { 'retry-after': retryAfterSeconds(err.retryAfterMs) } },
      );
    }
    if (err instanceof ProviderError) {
      // The provider failed after the retries (the breaker counted it).
      return Response.json({ error: err.message }, { status: 502 });
    }
    throw err;
  }
}
