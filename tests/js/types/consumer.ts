// Type-checks the published declarations the way an app uses them.
import {
  CircuitBreaker,
  FallbackChain,
  isCircuitOpenError,
  withRetry,
  BreakerRegistry,
  RetryBudget,
  type BreakerState,
  type CircuitBreakerOptions,
} from 'breakwater';

const options: CircuitBreakerOptions = { failureThreshold: 5, monitoringWindow: 60_000, resetTimeout: 30_000, halfOpenSuccessThreshold: 2 };
export const breaker = new CircuitBreaker('anthropic', options);
const state: BreakerState = breaker.state;
export async function call(signal: AbortSignal): Promise<string | null> {
  const off = breaker.onStateChange((e) => console.log(e.from, e.to, state));
  off();
  try {
    return await breaker.execute(
      ({ signal: inner }) => withRetry(async ({ attempt }) => `attempt ${attempt} ${inner?.aborted}`, { maxAttempts: 3, jitter: 0.3, budget: new RetryBudget() }),
      { signal, timeoutMs: 10_000, fallback: () => null },
    );
  } catch (err) {
    if (isCircuitOpenError(err)) return `retry in ${err.retryAfterMs} ms`;
    throw err;
  }
}
export const registry = new BreakerRegistry({ failureThreshold: 3 });
registry.get('openai').recordFailure(new Error('x'));
// @ts-expect-error unknown options are type errors too
new CircuitBreaker('x', { resetTimout: 1 });

// A string contingency does not turn a chain's byte stream into a stream of strings.
export async function streamed(): Promise<ReadableStream<Uint8Array>> {
  const chain = new FallbackChain([{ breaker, call: ({ signal }) => fetch('https://example.com', { signal }) }]);
  const { value } = await chain.stream({ onInterrupted: () => '[interrupted]' });
  return value;
}
