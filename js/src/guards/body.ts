// Reading a failing Response's body before it is classified. A module of its own, loaded on the
// first failing Response (by `withRetry` and the stream guard), so that apps whose calls succeed
// do not download it.
const MAX_BODY = 65_536;

/**
 * A failing fetch `Response` as an error the classifier reads: its status and headers, and its
 * body (at most 64 KiB, as text in `responseBody` and parsed in `data`, where the AI SDK keeps
 * them) so that the provider's code and `RetryInfo` are seen. `copy` reads a clone and leaves the
 * body to the caller; otherwise the body is consumed (the rest cancelled).
 */
export async function readErrorBody(
  r: Response,
  copy: boolean,
): Promise<{ status: number; headers: Headers; responseBody: string | undefined; data: unknown }> {
  let text: string | undefined;
  let data: unknown;
  try {
    const body = (copy ? r.clone() : r).body;
    if (body) {
      const reader = body.getReader();
      const decoder = new TextDecoder();
      // An error body comes with its headers; one that does not end within a second is let go.
      const late = setTimeout(() => void reader.cancel().catch(() => {}), 1000);
      text = '';
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) {
          clearTimeout(late);
          break;
        }
        text += decoder.decode(value, { stream: true });
        if (text.length >= MAX_BODY) {
          clearTimeout(late);
          void reader.cancel().catch(() => {});
          break;
        }
      }
      data = JSON.parse(text);
    }
  } catch {
    /* no body, cut, or not JSON: the status and headers say what they say */
  }
  return { status: r.status, headers: r.headers, responseBody: text, data };
}

