import { streamText } from 'ai';
import { answerBegun, errorResponse } from 'breakwater/ai';
import { chatModel } from '@/lib/models';
import { UNAVAILABLE } from '@/lib/anthropic-stream';
import { promptOf } from '@/lib/prompt';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The same chat as /api/chat-stream, through the Vercel AI SDK: plain text, word by word. */
export async function POST(request: Request): Promise<Response> {
  const prompt = await promptOf(request);
  if (prompt instanceof Response) return prompt;
  const result = streamText({
    model: chatModel,
    prompt,
    abortSignal: request.signal, // the reader leaving: ignored by the breakers
  });
  try {
    // Until some model's answer begins: the status is still ours to choose.
    await answerBegun(result);
  } catch (error) {
    // Every model's breaker OPEN, or each failing before its first word: 503 with Retry-After
    // (the soonest breaker's), not a 200 with an error inside the stream.
    return errorResponse(error, UNAVAILABLE);
  }
  return result.toTextStreamResponse();
}
