import { streamText } from 'ai';
import { chatModel, noticeOnError } from '@/lib/models';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** The same chat as /api/chat-stream, through the Vercel AI SDK: plain text, word by word. */
export async function POST(request: Request): Promise<Response> {
  let prompt: string;
  try {
    const payload = (await request.json()) as { prompt?: unknown };
    prompt = typeof payload.prompt === 'string' ? payload.prompt : '';
  } catch {
    return Response.json({ error: 'the body must be JSON: {"prompt": "…"}' }, { status: 400 });
  }
  const result = streamText({
    model: chatModel,
    prompt,
    abortSignal: request.signal, // the reader leaving: ignored by the breakers
    experimental_transform: noticeOnError,
  });
  return result.toTextStreamResponse();
}
