import { FallbackChain, isCircuitOpenError } from 'breakwater';
import { breaker } from '@/lib/breakers';
import {
  BACKUP_MODEL,
  INTERRUPTED,
  PRIMARY_MODEL,
  UNAVAILABLE,
  streamMessage,
  textDeltaEvent,
  textOfEvents,
} from '@/lib/anthropic-stream';
import { promptOf } from '@/lib/prompt';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

// One breaker per model, kept for the life of the server (see lib/breakers.ts).
const primary = breaker(PRIMARY_MODEL);
const backup = breaker(BACKUP_MODEL);

/**
 * A streamed chat answer as plain text: from the primary model, or from the backup when the
 * primary's breaker is OPEN (skipped without a call) or its answer fails before the first word.
 * Once words have been sent nothing is retried: a cut ends the text with INTERRUPTED.
 */
export async function POST(request: Request): Promise<Response> {
  const prompt = await promptOf(request);
  if (prompt instanceof Response) return prompt;
  // The chain keeps no state (the breakers do), so one per request can carry the prompt.
  const chain = new FallbackChain([
    { breaker: primary, call: ({ signal }) => streamMessage(PRIMARY_MODEL, prompt, signal) },
    { breaker: backup, call: ({ signal }) => streamMessage(BACKUP_MODEL, prompt, signal) },
  ]);
  try {
    const answer = await chain.stream({
      signal: request.signal,
      firstChunkTimeoutMs: 15_000,
      idleTimeoutMs: 30_000,
      onInterrupted: () => textDeltaEvent(INTERRUPTED),
    });
    return new Response(answer.value.pipeThrough(textOfEvents()), {
      headers: { 'content-type': 'text/plain; charset=utf-8', 'x-model': answer.name },
    });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      return Response.json(
        { error: UNAVAILABLE },
        { status: 503, headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) } },
      );
    }
    return Response.json({ error: `The answer could not start: ${String(err)}` }, { status: 502 });
  }
}
