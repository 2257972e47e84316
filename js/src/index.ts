/**
 * breakwater: a circuit breaker and retry policy for LLM API calls, one Rust state machine
 * compiled to WebAssembly, for Node, browsers, Vercel Edge, Cloudflare Workers and Deno.
 * @packageDocumentation
 */
export {
  CircuitBreaker,
  type BreakerMode,
  type BreakerPermit,
  type BreakerSnapshot,
  type BreakerState,
  type BreakerStats,
  type BreakerStreamOptions,
  type CallContext,
  type StreamDefaults,
  type CircuitBreakerOptions,
  type ExecuteOptions,
  type FallbackReason,
  type LimitOption,
  type OutcomeEvent,
  type RejectEvent,
  type StreamContext,
  type StateChangeEvent,
  type ThrottleOption,
  type HedgeOption,
  type HedgeStats,
} from './breakers/breaker.js';
export {
  CircuitOpenError,
  isCircuitOpenError,
  TimeoutError,
  isTimeoutError,
  type RejectReason,
} from './helpers/errors.js';
export {
  withRetry,
  RetryBudget,
  type GiveUpEvent,
  type GiveUpReason,
  type RetryEvent,
  type RetryBreaker,
  type RetryObserver,
  type RetryOptions,
  type StreamRetryOptions,
} from './breakers/retry.js';
export { BreakerRegistry, globalBreakers } from './breakers/registry.js';
export { StreamError, type SseEvent, type StreamOptions } from './guards/stream.js';
export {
  FallbackChain,
  type ChainResult,
  type ChainCallOptions,
  type ChainStreamOptions,
  type FallbackChainOptions,
  type Tier,
  type TierEvent,
} from './chain.js';
export { classifyError, endingOf, retryAfterMs, statusOfCode, type Ending, type ErrorClass, type Verdict } from './classify.js';
export type { Unsubscribe } from './helpers/events.js';
