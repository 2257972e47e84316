/**
 * `breakwater/adaptive`: the option values that shed load before the breaker opens, for the
 * main entry's `CircuitBreaker`: `throttle()` for `adaptiveThrottle` (Google SRE's client-side
 * throttling) and `limit()` for `concurrency` (a concurrency limit with a bounded line). They
 * live in a WebAssembly module of their own, which this entry loads and each value brings, so
 * that an app that does not use them does not download them.
 *
 * ```ts
 * import { CircuitBreaker } from 'breakwater';
 * import { limit, throttle } from 'breakwater/adaptive';
 * const breaker = new CircuitBreaker('anthropic', { adaptiveThrottle: throttle(), concurrency: limit({ maxConcurrent: 8 }) });
 * ```
 * @packageDocumentation
 */
export { throttle, limit, hedge, type AdaptiveThrottle, type ConcurrencyLimit, type HedgeSettings } from './options.js';
