// Compiled by store.test.mjs with tsc (module nodenext) against the installed package: the
// declarations of breakwater/store as a TypeScript app sees them.
import { createClient } from 'redis';
import { isCircuitOpenError, type CircuitBreakerOptions } from 'breakwater';
import {
  StoreCircuitBreaker,
  RedisStore,
  MemoryStore,
  fromNodeRedis,
  type BreakerStore,
  type StoreView,
} from 'breakwater/store';
import type { SharedEvent } from 'breakwater/shared';

export async function main(): Promise<StoreView> {
  const redis = createClient({ url: 'redis://127.0.0.1:1', disableOfflineQueue: true });
  const options: CircuitBreakerOptions = { failureThreshold: 5, resetTimeout: 30_000 };
  const store: BreakerStore = Math.random() > 2 ? new MemoryStore() : new RedisStore(fromNodeRedis(redis));
  const breaker = new StoreCircuitBreaker('anthropic', { store, breaker: options, leaseMs: 1000, failClosed: false });
  breaker.onEvent((e: SharedEvent) => {
    if (e.type === 'local') console.warn(e.reason);
  });
  try {
    const n: number = await breaker.execute(async () => 42);
    void n;
  } catch (e) {
    if (isCircuitOpenError(e)) console.warn(e.retryAfterMs);
  }
  const calls: number = breaker.storeCalls + breaker.casConflicts;
  void calls;
  // @ts-expect-error the store is required
  new StoreCircuitBreaker('x', {});
  return breaker.inspect();
}
