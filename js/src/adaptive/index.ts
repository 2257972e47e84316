/**
 * `breakwater/adaptive`: the main entry's `CircuitBreaker` with the options that shed load before
 * the breaker opens, `adaptiveThrottle` (Google SRE's client-side throttling) and `maxConcurrent`
 * (a concurrency limit with a bounded queue). They live in a WebAssembly module of their own,
 * which this entry loads, so that an app that does not use them does not download them.
 *
 * The class is the same as `breakwater`'s (one class, `instanceof` holds across the two imports):
 * once this entry is loaded, a `CircuitBreaker` from either accepts the options.
 *
 * ```ts
 * import { CircuitBreaker } from 'breakwater/adaptive';
 * const breaker = new CircuitBreaker('anthropic', { adaptiveThrottle: true, maxConcurrent: 8 });
 * ```
 * @packageDocumentation
 */
export {
  CircuitBreaker,
  CircuitOpenError,
  isCircuitOpenError,
  type AdaptiveThrottle,
  type BreakerSettings,
  type BreakerStats,
  type CircuitBreakerOptions,
  type RejectReason,
} from 'breakwater';
