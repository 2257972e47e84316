import { createAnthropic } from '@ai-sdk/anthropic';
import { fallbackModel } from 'breakwater/ai';
import { breaker } from './breakers';
import { BACKUP_MODEL, INTERRUPTED, PRIMARY_MODEL } from './anthropic-stream';

// Anthropic at PROVIDER_URL when it is set (the tests' fake provider), otherwise the real API.
const anthropic = createAnthropic(process.env.PROVIDER_URL ? { baseURL: `${process.env.PROVIDER_URL}/v1` } : {});

/**
 * The chat model: the primary, or the backup when the primary's breaker is OPEN (no request) or
 * its answer fails before the first word. The breakers are those of /api/chat-stream, one per
 * model per process, whichever route calls it. An answer cut after its first words is never
 * retried: breakwater counts the failure and ends the answer with INTERRUPTED.
 */
export const chatModel = fallbackModel(
  [
    { model: anthropic(PRIMARY_MODEL), breaker: breaker(PRIMARY_MODEL) },
    { model: anthropic(BACKUP_MODEL), breaker: breaker(BACKUP_MODEL) },
  ],
  { firstChunkTimeoutMs: 15_000, idleTimeoutMs: 30_000, onInterrupted: () => INTERRUPTED },
);
