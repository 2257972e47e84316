import { convertToModelMessages, streamText, type UIMessage } from 'ai';
import { answerBegun, errorResponse } from 'breakwater/ai';
import { chatModel } from '@/lib/models';

const UNAVAILABLE = 'The assistant is unavailable right now. Please try again shortly.';

/** The chat of the page (useChat posts {"messages": [...]} here): a UI message stream. */
export async function POST(request: Request): Promise<Response> {
  const { messages } = (await request.json().catch(() => ({}))) as { messages?: UIMessage[] };
  if (!Array.isArray(messages)) {
    return Response.json({ error: 'the body must be JSON: {"messages": [...]} (what useChat sends)' }, { status: 400 });
  }

  const result = streamText({
    model: chatModel,
    messages: await convertToModelMessages(messages),
    abortSignal: request.signal, // the user's Stop: not counted against the provider
  });
  try {
    // Until some model's answer begins. The status is still ours to choose: once the stream
    // has started it is 200, and a failure can only travel inside it.
    await answerBegun(result);
  } catch (error) {
    // No answer could begin (every model's breaker OPEN, or every model failing before its
    // first word): 503 with Retry-After when the refusal or the provider said how long;
    // useChat shows the text as its error.
    return errorResponse(error, UNAVAILABLE);
  }
  return result.toUIMessageStreamResponse({
    // A failure after the answer began reaches useChat as its error, with this message rather
    // than "An error occurred.".
    onError: () => 'The answer failed. Please try again.',
  });
}
