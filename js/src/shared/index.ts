/**
 * `breakwater/shared`: a circuit breaker shared by every isolate of a Cloudflare Worker (through
 * breakwater's `BreakerObject` Durable Object), or by every instance of an app anywhere `fetch`
 * runs (through the Worker's breaker service), or through a store (`breakwater/store`).
 *
 * The lease logic is the core's (`src/shared/client.rs`, in its own WebAssembly module); this
 * entry only carries messages. CLOSED: admit locally until the lease runs out, outcomes go in
 * batches (a failure at once). OPEN: reject locally until the retry-after. HALF_OPEN: ask the
 * coordinator for every admission, so exactly the configured number of probes run. Coordinator
 * unreachable: the core's local breaker decides (`failClosed: true` rejects instead).
 *
 * ```ts
 * import { SharedCircuitBreaker } from 'breakwater/shared';
 * const breaker = new SharedCircuitBreaker('anthropic', { shared: env.BREAKER });
 * const reply = await breaker.execute(() => callTheModel(), { waitUntil: (p) => ctx.waitUntil(p) });
 * ```
 * @packageDocumentation
 */
export {
  SharedCircuitBreaker,
  classifyOutcome,
  type CallOutcome,
  type Exchange,
  type NamespaceLike,
  type Reply,
  type ServiceOptions,
  type SharedBreakerOptions,
  type SharedEvent,
  type SharedExecuteOptions,
  type SharedStreamOptions,
  type SharedTransport,
} from './client.js';
