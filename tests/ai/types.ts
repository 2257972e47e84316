// The README recipe's types against each AI SDK version: scripts/test-ai.sh type-checks a copy of this
// file inside tests/ai/v6 and tests/ai/v7 (so that `ai` resolves to that folder's version).
import { wrapLanguageModel, generateText, streamText } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { CircuitBreaker } from 'breakwater';
import { StoreCircuitBreaker, MemoryStore } from 'breakwater/store';
import { globalBreakers } from 'breakwater';
import { breakerMiddleware, fallbackModel, answerBegun, errorResponse } from 'breakwater/ai';
const anthropic = createAnthropic({ apiKey: 'k' });
const openai = createOpenAI({ apiKey: 'k' });
const b = new CircuitBreaker('a');
const s = new StoreCircuitBreaker('s', { store: new MemoryStore() });
const m1 = wrapLanguageModel({ model: anthropic('x'), middleware: breakerMiddleware(b) });
const m2 = wrapLanguageModel({ model: openai.chat('x'), middleware: [breakerMiddleware(s, { idleTimeoutMs: 5 })] });
const fb = fallbackModel([{ model: anthropic('x'), breaker: b }, { model: openai.chat('y'), breaker: s }], {
  onInterrupted: (e: unknown) => `\n[interrupted: ${String(e)}]`,
});
fb.onTier((e) => e.outcome);
// The README recipe: breakwater's own limits, the backup's breaker from globalBreakers().
const limits = { firstChunkTimeoutMs: 15_000, idleTimeoutMs: 10_000, totalTimeoutMs: 120_000 };
export const openaiBreaker = globalBreakers().get('openai.chat:gpt-5-mini');
export const assistant = fallbackModel(
  [
    { model: anthropic('claude-sonnet-4-5'), breaker: b },
    { model: openai.chat('gpt-5-mini'), breaker: openaiBreaker },
  ],
  { ...limits, onInterrupted: () => '\n\n[interrupted]' },
);
export const claude = wrapLanguageModel({ model: anthropic('x'), middleware: breakerMiddleware(b, { ...limits, onInterrupted: () => '' }) });
export async function f() {
  await generateText({ model: m1, prompt: 'hi' });
  await generateText({ model: fb, prompt: 'hi' });
  streamText({ model: fb, prompt: 'hi' });
  streamText({ model: assistant, prompt: 'hi', timeout: { totalMs: 180_000 } });
  streamText({ model: m2, prompt: 'hi' });
  streamText({ model: wrapLanguageModel({ model: fb, middleware: breakerMiddleware(b) }), prompt: 'hi' });
}
// js/README's route: a streamText result (this SDK version's type) fits answerBegun; a 503 when no tier began.
export async function route(): Promise<Response> {
  const result = streamText({ model: assistant, prompt: 'hi' });
  try {
    await answerBegun(result);
  } catch (error) {
    return errorResponse(error);
  }
  return Math.random() < 0.5 ? result.toUIMessageStreamResponse() : errorResponse(new Error('x'), 'busy');
}
