import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { isCircuitOpenError } from 'breakwater';
import { allTiersOpenFor, chatModel } from '@/lib/models';
import { retryAfterSeconds } from '@/lib/provider';

const UNAVAILABLE = 'The assistant is unavailable right now. Please try again shortly.';

/** The chat of the page (useChat posts {"messages": [...]} here): a UI message stream. */
export async function POST(request: Request): Promise<Response> {
  const { messages } = (await request.json().catch(() => ({}))) as { messages?: UIMessage[] };
  if (!Array.isArray(messages)) {
    return Response.json({ error: 'the body must be JSON: {"messages": [...]} (what useChat sends)' }, { status: 400 });
  }

  // Every model's breaker OPEN: answer 503 + Retry-After before streaming. Once the stream has
  // started its status is 200, and a failure can only travel inside it (below). isOpen() only
  // looks: it takes no half-open probe slot.
  const openFor = allTiersOpenFor();
  if (openFor !== undefined) {
    return new Response(UNAVAILABLE, {
      status: 503,
      headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': retryAfterSeconds(openFor) },
    });
  }

  const result = streamText({
    model: chatModel,
    messages: await convertToModelMessages(messages),
    abortSignal: request.signal, // the user's Stop: not counted against the provider
  });
  return result.toUIMessageStreamResponse({
    // An answer that could not start (every model failing before its first word, or refused)
    // reaches useChat as its `error`, with this message rather than "An error occurred.".
    onError: (error) =>
      isCircuitOpenError(error) || isCircuitOpenError((error as { lastError?: unknown } | null)?.lastError)
        ? UNAVAILABLE
        : 'The answer failed. Please try again.',
  });
}
