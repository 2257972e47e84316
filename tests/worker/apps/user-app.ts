// A Worker written as a JavaScript developer would from the README: breakwater's Durable Object
// exported from their own Worker (`breakwater/cloudflare`), a module-level SharedCircuitBreaker
// on `env` from 'cloudflare:workers', the admin and service routes mounted under /breakwater.
// The settings come from vars, so that the tests can run two versions side by side (a rolling
// deploy). The body of two entries that differ only in where SharedCircuitBreaker comes from:
// user-worker.ts (breakwater/cloudflare, as the README says: one shared wasm module) and
// user-worker-shared.ts (breakwater/shared: both shared modules), bundled by
// scripts/test-worker.sh into tests/worker/.build/.
import { env } from 'cloudflare:workers';
import type { CircuitBreakerOptions } from 'breakwater';
import type { NamespaceLike, SharedCircuitBreaker } from 'breakwater/shared';
import { breakerRoutes } from 'breakwater/cloudflare';
import { guardedRoutes, json, raw } from './guarded.js';

interface Env {
  BREAKER: NamespaceLike;
  UPSTREAM: string;
  BREAKER_NAME?: string;
  /** JSON of the `breaker` option (CircuitBreakerOptions). */
  SETTINGS?: string;
  LEASE_MS?: string;
  /** Comma-separated names the routes serve (their `names` option); default: BREAKERS' names. */
  NAMES?: string;
}

/**
 * The Worker's handler, with its module-level breaker made by `Breaker` (the entry's import of
 * SharedCircuitBreaker); `entry` is what `/app/entry` answers (which import, and its checks).
 */
export function userApp(Breaker: typeof SharedCircuitBreaker, entry: Record<string, unknown>): ExportedHandler<Env> {
  const vars = env as unknown as Env;
  const settings: CircuitBreakerOptions = vars.SETTINGS ? JSON.parse(vars.SETTINGS) : { failureThreshold: 3, resetTimeout: 2000 };
  const events: string[] = [];

  // Module scope (the entry calls this at its top level): one client per isolate, as in the README.
  const breaker = new Breaker(vars.BREAKER_NAME ?? 'anthropic', {
    shared: vars.BREAKER,
    breaker: settings,
    leaseMs: Number(vars.LEASE_MS ?? 1000),
    retryUnreachableMs: 500,
    requestTimeoutMs: 2000,
  });
  breaker.onEvent((e) => events.push(e.type === 'state' ? `state:${e.to}` : e.type));

  return {
    async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
      const names = env.NAMES ? env.NAMES.split(',') : undefined;
      const routed = await breakerRoutes(req, env, { prefix: '/breakwater', names });
      if (routed) return routed;
      const url = new URL(req.url);
      const waitUntil = (p: Promise<unknown>) => ctx.waitUntil(p);
      const guarded = await guardedRoutes(breaker, url, env.UPSTREAM, waitUntil, events);
      if (guarded) return guarded;
      switch (url.pathname) {
        case '/app/entry':
          return json(entry);
        case '/raw':
          return raw(req, url, env.BREAKER as unknown as DurableObjectNamespace, vars.BREAKER_NAME ?? 'anthropic');
        default:
          return json({ error: 'not_found' }, 404);
      }
    },
  };
}
