// Options as a strict app (`exactOptionalPropertyTypes`) writes them, and the trip rule as a union:
// one rule compiles, two do not.
import {
  BreakerRegistry,
  CircuitBreaker,
  FallbackChain,
  withRetry,
  type CallContext,
  type CircuitBreakerOptions,
  type ExecuteOptions,
  type StreamOptions,
} from 'breakwater';
import { SharedCircuitBreaker, type SharedBreakerOptions } from 'breakwater/shared';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { fallbackModel, type FallbackModelOptions, type FallbackTier } from 'breakwater/ai';

declare const model: FallbackTier<never>['model'];
declare const maybeSignal: AbortSignal | undefined;
declare const maybeMs: number | undefined;
const breaker = new CircuitBreaker('opts');
const shared = new SharedCircuitBreaker('opts', { transport: { exchange: async () => { throw new Error('x'); } } });

// The context's signal (`AbortSignal | undefined`) goes on to every breaker and chain.
export async function forwarded(): Promise<unknown> {
  return breaker.execute(async ({ signal }: CallContext) => {
    await breaker.execute(() => 1, { signal });
    await breaker.stream(() => fetch('https://example.com', { signal: signal ?? null }), { signal, firstChunkTimeoutMs: maybeMs });
    await shared.execute(() => 1, { signal, timeoutMs: maybeMs });
    await new FallbackChain([{ breaker, call: () => 1 }]).execute({ signal });
    await withRetry(() => 1, { signal });
    return 1;
  });
}

// Every option may be given as undefined.
export const allUndefined: CircuitBreakerOptions = {
  failureThreshold: undefined, monitoringWindow: undefined, failureRate: undefined, slowCallRate: undefined,
  resetTimeout: undefined, halfOpenSuccessThreshold: undefined, halfOpenMaxProbes: undefined, probeTimeoutMs: undefined,
  openJitter: undefined, openBackoffFactor: undefined, maxResetTimeoutMs: undefined, isFailure: undefined,
  clock: undefined, random: undefined,
};
export const execUndefined: ExecuteOptions<string> = { fallback: undefined, signal: maybeSignal, timeoutMs: maybeMs };
export const streamUndefined: StreamOptions<Uint8Array> = {
  signal: undefined, firstChunkTimeoutMs: undefined, idleTimeoutMs: undefined, onInterrupted: undefined,
  isContent: undefined, errorOf: undefined, measure: undefined,
};
export const sharedUndefined: SharedBreakerOptions = {
  shared: undefined, service: undefined, maxBatch: undefined, failClosed: undefined, retryUnreachableMs: undefined,
  requestTimeoutMs: undefined, local: undefined, waitUntil: undefined, classify: undefined, clock: undefined, clientId: undefined,
};
export const modelUndefined: FallbackModelOptions = {
  name: undefined, fallThrough: undefined, registry: undefined, breakerOptions: undefined,
  timeoutMs: undefined, firstChunkTimeoutMs: undefined, idleTimeoutMs: undefined, onInterrupted: undefined,
};
new FallbackChain([{ breaker, call: () => 1, name: undefined }], { name: undefined, fallThrough: undefined });
new StoreCircuitBreaker('opts', { store: new MemoryStore(), breaker: undefined, prefix: undefined, leaseMs: undefined });

// One trip rule at a time.
new CircuitBreaker('a', { failureThreshold: 5 });
new CircuitBreaker('b', { failureThreshold: 5, monitoringWindow: 60_000, resetTimeout: 30_000 });
new CircuitBreaker('c', { failureRate: { threshold: 50, windowMs: 60_000 }, resetTimeout: 30_000 });
new CircuitBreaker('d', { slowCallRate: { threshold: 50, slowCallMs: 2_000 }, halfOpenMaxProbes: 2 });
new CircuitBreaker('e', { failureRate: { threshold: 50 }, failureThreshold: undefined });
// @ts-expect-error two trip rules
new CircuitBreaker('f', { failureThreshold: 5, failureRate: { threshold: 50 } });
// @ts-expect-error two trip rules
new CircuitBreaker('g', { monitoringWindow: 60_000, slowCallRate: { threshold: 50, slowCallMs: 2_000 } });
// @ts-expect-error two trip rules
new CircuitBreaker('h', { failureRate: { threshold: 50 }, slowCallRate: { threshold: 50, slowCallMs: 2_000 } });
// @ts-expect-error a slow-call rule needs slowCallMs
new CircuitBreaker('i', { slowCallRate: { threshold: 50 } });

// Wherever CircuitBreakerOptions are taken.
const registry = new BreakerRegistry({ failureRate: { threshold: 50 }, resetTimeout: 10_000 });
registry.get('x', { failureThreshold: 3 }); // another rule replaces the defaults'
// @ts-expect-error two trip rules
new BreakerRegistry({ failureThreshold: 3, slowCallRate: { threshold: 50, slowCallMs: 1 } });
// @ts-expect-error two trip rules
registry.get('y', { failureThreshold: 3, failureRate: { threshold: 50 } });
new SharedCircuitBreaker('s', { transport: shared as never, local: { failureRate: { threshold: 50 } } });
// @ts-expect-error two trip rules
new SharedCircuitBreaker('s', { transport: shared as never, local: { failureThreshold: 3, failureRate: { threshold: 50 } } });
new StoreCircuitBreaker('t', { store: new MemoryStore(), breaker: { failureRate: { threshold: 50 }, resetTimeout: 5_000 } });
// @ts-expect-error two trip rules
new StoreCircuitBreaker('t', { store: new MemoryStore(), breaker: { failureThreshold: 3, failureRate: { threshold: 50 } } });
// @ts-expect-error a shared breaker cannot honour a slow-call rule
new StoreCircuitBreaker('t', { store: new MemoryStore(), breaker: { slowCallRate: { threshold: 50, slowCallMs: 1 } } });
// @ts-expect-error the store's clock decides
new StoreCircuitBreaker('t', { store: new MemoryStore(), breaker: { clock: Date.now } });
fallbackModel([{ model }], { breakerOptions: { slowCallRate: { threshold: 50, slowCallMs: 1 } } });
// @ts-expect-error two trip rules
fallbackModel([{ model }], { breakerOptions: { failureThreshold: 3, slowCallRate: { threshold: 50, slowCallMs: 1 } } });
