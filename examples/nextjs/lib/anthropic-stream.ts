/** A streamed answer from Anthropic's Messages API over plain `fetch`, and its text for the page. */

/** The two models of the streaming chat: each has a breaker of its own. */
export const PRIMARY_MODEL = 'claude-sonnet-4-5';
export const BACKUP_MODEL = 'claude-haiku-4-5';

/** What ends an answer cut after its first words (they are kept: the reader has seen them). */
export const INTERRUPTED = '\n\n[The answer was interrupted. Please try again.]';
/** What the reader sees when no model can answer. */
export const UNAVAILABLE = 'Every model is unavailable right now. Please try again later.';

/** Asks the provider at PROVIDER_URL for a streamed answer (server-sent events). */
export function streamMessage(model: string, prompt: string, signal?: AbortSignal): Promise<Response> {
  const base = process.env.PROVIDER_URL;
  if (!base) throw new Error('PROVIDER_URL is not set');
  return fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': process.env.ANTHROPIC_API_KEY ?? '',
    },
    body: JSON.stringify({ model, max_tokens: 1024, stream: true, messages: [{ role: 'user', content: prompt }] }),
    signal: signal ?? null,
  });
}

/**
 * `text` as one more Anthropic text delta, to append to a cut stream. The leading blank line
 * ends whatever event the cut left half-written.
 */
export function textDeltaEvent(text: string): string {
  const data = { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } };
  return `\n\nevent: content_block_delta\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Turns Anthropic's event stream into the answer's plain text (UTF-8). */
export function textOfEvents(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let line = '';
  return new TransformStream({
    transform(chunk, out) {
      const lines = (line + decoder.decode(chunk, { stream: true })).split('\n');
      line = lines.pop()!; // unfinished until its newline arrives
      for (const l of lines) {
        if (!l.startsWith('data:')) continue;
        let event: { type?: string; delta?: { type?: string; text?: string } };
        try {
          event = JSON.parse(l.slice(5));
        } catch {
          continue; // a line the cut left unfinished
        }
        if (event.type === 'content_block_delta' && typeof event.delta?.text === 'string') {
          out.enqueue(encoder.encode(event.delta.text));
        }
      }
    },
  });
}
