// A Worker written as a JavaScript developer would from the README: breakwater's Durable Object
// exported from their own Worker (`breakwater/cloudflare`), a module-level SharedCircuitBreaker
// on `env` from 'cloudflare:workers', the admin and service routes mounted under /breakwater.
// The settings come from vars, so that the tests can run two versions side by side (a rolling
// deploy). Bundled by scripts/test-worker.sh into tests/worker/.build/user-worker.mjs.
import { env } from 'cloudflare:workers';
import { SharedCircuitBreaker, type NamespaceLike, type SharedBreakerRule } from 'breakwater/shared';
import { breakerRoutes } from 'breakwater/cloudflare';
import { guardedRoutes, json, raw } from './guarded.js';

export { BreakerObject } from 'breakwater/cloudflare';

interface Env {
  BREAKER: NamespaceLike;
  UPSTREAM: string;
  BREAKER_NAME?: string;
  /** JSON of the `breaker` option (SharedBreakerRule). */
  SETTINGS?: string;
  LEASE_MS?: string;
  /** Comma-separated names the routes serve (their `names` option); default: BREAKERS' names. */
  NAMES?: string;
}

const vars = env as unknown as Env;
const settings: SharedBreakerRule = vars.SETTINGS ? JSON.parse(vars.SETTINGS) : { failureThreshold: 3, resetTimeout: 2000 };
const events: string[] = [];

// Module scope: one client per isolate, as in the README.
const breaker = new SharedCircuitBreaker(vars.BREAKER_NAME ?? 'anthropic', {
  shared: vars.BREAKER,
  breaker: settings,
  leaseMs: Number(vars.LEASE_MS ?? 1000),
  retryUnreachableMs: 500,
  requestTimeoutMs: 2000,
});
breaker.onEvent((e) => events.push(e.type === 'state' ? `state:${e.to}` : e.type));

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const names = env.NAMES ? env.NAMES.split(',') : undefined;
    const routed = await breakerRoutes(req, env, { prefix: '/breakwater', names });
    if (routed) return routed;
    const url = new URL(req.url);
    const waitUntil = (p: Promise<unknown>) => ctx.waitUntil(p);
    const guarded = await guardedRoutes(breaker, url, env.UPSTREAM, waitUntil, events);
    if (guarded) return guarded;
    switch (url.pathname) {
      case '/raw':
        return raw(req, url, env.BREAKER as unknown as DurableObjectNamespace, vars.BREAKER_NAME ?? 'anthropic');
      default:
        return json({ error: 'not_found' }, 404);
    }
  },
};
