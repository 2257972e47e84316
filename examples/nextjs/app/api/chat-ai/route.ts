import { streamText } from 'ai';
import { chatModel, noticeOnError } from '@/lib/models';
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
    experimental_transform: noticeOnError,
  });
  return result.toTextStreamResponse();
}
