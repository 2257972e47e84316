import { createAnthropic } from '@ai-sdk/anthropic';
import { wrapLanguageModel, type LanguageModelMiddleware, type StreamTextTransform, type ToolSet } from 'ai';
import { fallbackModel } from 'breakwater/ai';
import { registry } from './breakers';
import { BACKUP_MODEL, INTERRUPTED, PRIMARY_MODEL, UNAVAILABLE } from './anthropic-stream';

// Anthropic at PROVIDER_URL when it is set (the tests' fake provider), otherwise the real API.
const anthropic = createAnthropic({
  baseURL: process.env.PROVIDER_URL ? `${process.env.PROVIDER_URL}/v1` : undefined,
});

/**
 * A middleware: a stream that breaks (an answer cut after its first words: breakwater counts the
 * failure and never retries it) ends with an `error` part, as a provider's error event would,
 * rather than aborting the response. The words sent so far stay.
 */
const cutAsErrorPart: LanguageModelMiddleware = {
  specificationVersion: 'v3',
  async wrapStream({ doStream }) {
    const { stream, ...rest } = await doStream();
    type Part = typeof stream extends ReadableStream<infer P> ? P : never;
    const reader = stream.getReader();
    return {
      ...rest,
      stream: new ReadableStream<Part>({
        async pull(out) {
          try {
            const { done, value } = await reader.read();
            if (done) out.close();
            else out.enqueue(value);
          } catch (error) {
            out.enqueue({ type: 'error', error });
            out.close();
          }
        },
        cancel: (reason) => reader.cancel(reason),
      }),
    };
  },
};

/**
 * For `streamText`'s `experimental_transform`: an answer that fails ends with a line for the
 * reader: INTERRUPTED after its first words, or UNAVAILABLE when it could not start (every
 * model's breaker OPEN, or every model failing).
 */
export const noticeOnError: StreamTextTransform<ToolSet> = () => {
  let id: string | undefined; // the text block, once the answer began
  return new TransformStream({
    transform(part, out) {
      if (part.type === 'text-delta') id = part.id;
      if (part.type === 'error') out.enqueue({ type: 'text-delta', id: id ?? 'notice', text: id ? INTERRUPTED : UNAVAILABLE });
      out.enqueue(part);
    },
  });
};

/**
 * The chat model: the primary, or the backup when the primary's breaker is OPEN (no request) or
 * its answer fails before the first word. The breakers are those of /api/chat-stream, one per
 * model per process, whichever route calls it.
 */
export const chatModel = wrapLanguageModel({
  model: fallbackModel(
    [
      { model: anthropic(PRIMARY_MODEL), breaker: registry.get(PRIMARY_MODEL) },
      { model: anthropic(BACKUP_MODEL), breaker: registry.get(BACKUP_MODEL) },
    ],
    { firstChunkTimeoutMs: 15_000, idleTimeoutMs: 30_000 },
  ),
  middleware: cutAsErrorPart,
});
