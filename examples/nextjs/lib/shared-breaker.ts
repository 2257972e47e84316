import type { SharedCircuitBreaker } from 'breakwater/shared';
import type { StoreCircuitBreaker } from 'breakwater/store';

export type Via = 'redis' | 'service';
type Shared = SharedCircuitBreaker | StoreCircuitBreaker;

function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name] ?? fallback);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

/**
 * The breaker shared by every instance of this app (several `next start` processes, serverless
 * instances...), not one per instance as in `breakers.ts`:
 *
 * - `redis`: kept in Redis at REDIS_URL (`breakwater/store`);
 * - `service`: kept by the Cloudflare Worker's Durable Object, reached over HTTPS at
 *   BREAKWATER_SERVICE_URL with BREAKWATER_SERVICE_TOKEN (`breakwater/shared`).
 *
 * Made once per process, on first use, and kept on `globalThis` (see `breakers.ts`). Null when
 * that backend is not configured.
 */
export function sharedBreaker(via: Via): Promise<Shared | null> {
  const g = globalThis as typeof globalThis & { __breakwaterShared?: Map<Via, Promise<Shared | null>> };
  const made = (g.__breakwaterShared ??= new Map());
  let b = made.get(via);
  if (!b) {
    b = via === 'redis' ? overRedis() : overService();
    made.set(via, b);
  }
  return b;
}

async function overRedis(): Promise<Shared | null> {
  const url = process.env.REDIS_URL;
  if (!url) return null;
  const [{ createClient }, { StoreCircuitBreaker, RedisStore, fromNodeRedis }] = await Promise.all([
    import('redis'),
    import('breakwater/store'),
  ]);
  // Fail at once while disconnected (then the local breaker decides), rather than queue.
  const redis = createClient({ url, disableOfflineQueue: true });
  redis.on('error', () => {});
  await redis.connect();
  return new StoreCircuitBreaker('anthropic', {
    store: new RedisStore(fromNodeRedis(redis)),
    breaker: {
      failureThreshold: envNumber('BREAKER_FAILURE_THRESHOLD', 5),
      resetTimeout: envNumber('BREAKER_RESET_MS', 30_000),
    },
  });
}

async function overService(): Promise<Shared | null> {
  const url = process.env.BREAKWATER_SERVICE_URL;
  const token = process.env.BREAKWATER_SERVICE_TOKEN;
  if (!url || !token) return null;
  const { SharedCircuitBreaker } = await import('breakwater/shared');
  return new SharedCircuitBreaker('anthropic', { service: { url, token } });
}
