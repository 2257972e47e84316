import { createAnthropic } from '@ai-sdk/anthropic';
import { CircuitBreaker } from 'breakwater';
import { fallbackModel } from 'breakwater/ai';
import { ANTHROPIC_BASE_URL, breakerOptions } from './provider';

// The AI SDK's Anthropic provider wants the base URL with `/v1` (it reads ANTHROPIC_BASE_URL
// itself too, but then without adding `/v1`): pass it explicitly.
const anthropic = createAnthropic({ baseURL: `${ANTHROPIC_BASE_URL}/v1` });

/** One breaker per model, made once per server process. */
export const primaryBreaker = new CircuitBreaker('claude-sonnet-4-5', breakerOptions);
export const backupBreaker = new CircuitBreaker('claude-haiku-4-5', breakerOptions);

/**
 * The chat model: Sonnet, or Haiku when Sonnet's breaker is OPEN (no request sent) or its
 * answer fails before the first word. An answer cut after its first words is not retried: it
 * ends with the line below, and the failure is counted.
 */
export const chatModel = fallbackModel(
  [
    { model: anthropic('claude-sonnet-4-5'), breaker: primaryBreaker },
    { model: anthropic('claude-haiku-4-5'), breaker: backupBreaker },
  ],
  {
    firstChunkTimeoutMs: 15_000,
    idleTimeoutMs: 30_000,
    onInterrupted: () => '\n\n[The answer was interrupted. Please try again.]',
  },
);
