import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { answerBegun, errorResponse } from 'breakwater/ai';
import { chatModel } from '@/lib/models';
import { UNAVAILABLE } from '@/lib/anthropic-stream';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/**
 * The chat of /chat-ui (`useChat`): the same models and breakers as /api/chat-ai, answered as a
 * UI message stream. A cut after the first words ends with the contingency and a normal finish,
 * so `useChat` shows both and goes back to `ready`.
 */
export async function POST(request: Request): Promise<Response> {
  let messages: UIMessage[];
  try {
    ({ messages } = (await request.json()) as { messages: UIMessage[] });
    if (!Array.isArray(messages)) throw new TypeError('messages is not an array');
  } catch {
    return Response.json({ error: 'the body must be JSON: {"messages": [...]} (what useChat sends)' }, { status: 400 });
  }
  const result = streamText({
    model: chatModel,
    messages: await convertToModelMessages(messages),
    abortSignal: request.signal, // the user's Stop: ignored by the breakers
  });
  try {
    await answerBegun(result);
  } catch (error) {
    // An answer that could not begin (every model's breaker OPEN, or each failing before its
    // first word): 503 with Retry-After; useChat shows the text as its error.
    return errorResponse(error, UNAVAILABLE);
  }
  return result.toUIMessageStreamResponse({
    // A later step failing (after the answer began) reaches useChat as its error.
    onError: () => 'The answer failed. Please try again.',
  });
}
