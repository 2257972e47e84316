// A JavaScript app Worker for the end-to-end tests: guards calls to a fake upstream with the
// shared breaker (breakwater/shared, from the built package) through a Durable Object binding to the Rust Worker's
// BreakerObject (`scriptName`), or with a per-isolate local breaker (MODE = "local").
// Bundled by esbuild into tests/worker/.build/js-app.mjs.
import { CircuitBreaker } from 'breakwater';
import { SharedCircuitBreaker, type NamespaceLike } from 'breakwater/shared';
import { guardedRoutes, json, raw, upstream, type UpstreamError } from './guarded.js';

interface Env {
  BREAKER: NamespaceLike;
  UPSTREAM: string;
  BREAKER_NAME: string;
  MODE?: string;
  FAIL_CLOSED?: string;
  LOCAL_THRESHOLD?: string;
  LOCAL_OPEN_MS?: string;
}

let shared: SharedCircuitBreaker | null = null;
let local: CircuitBreaker | null = null;
const events: string[] = [];

function breaker(env: Env): SharedCircuitBreaker {
  if (!shared) {
    shared = new SharedCircuitBreaker(env.BREAKER_NAME, {
      shared: env.BREAKER,
      failClosed: env.FAIL_CLOSED === 'true',
      retryUnreachableMs: 500,
      requestTimeoutMs: 2000,
      local: { failureThreshold: Number(env.LOCAL_THRESHOLD ?? 5), resetTimeout: Number(env.LOCAL_OPEN_MS ?? 30000) },
    });
    shared.onEvent((e) => events.push(e.type === 'state' ? `state:${e.to}` : e.type));
  }
  return shared;
}

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(req.url);
    const waitUntil = (p: Promise<unknown>) => ctx.waitUntil(p);
    if (env.MODE === 'local') {
      local ??= new CircuitBreaker('local', { failureThreshold: Number(env.LOCAL_THRESHOLD ?? 5), resetTimeout: Number(env.LOCAL_OPEN_MS ?? 30000) });
      if (url.pathname === '/app/call') {
        if (!local.isHealthy()) return json({ result: 'rejected', state: local.state });
        try {
          const status = await upstream(env.UPSTREAM);
          local.recordSuccess();
          return json({ result: 'ok', status, state: local.state });
        } catch (e) {
          local.recordFailure(e);
          return json({ result: 'failed', status: (e as UpstreamError).status ?? 0, state: local.state });
        }
      }
      if (url.pathname === '/app/stats' || url.pathname === '/app/flush') {
        return json({ state: local.state, object_requests: 0, unacknowledged: 0, fallback: false, events });
      }
      return json({ error: 'not_found' }, 404);
    }
    const b = breaker(env);
    const guarded = await guardedRoutes(b, url, env.UPSTREAM, waitUntil, events, (r) =>
      r.ok ? 'success' : (r.error as UpstreamError).status >= 400 && (r.error as UpstreamError).status < 500 && (r.error as UpstreamError).status !== 429 ? 'ignored' : 'failure',
    );
    if (guarded) return guarded;
    switch (url.pathname) {
      case '/app/unbatched': {
        // Reference for the measurements: one object round trip per call (what the lease and the
        // batches avoid): each call reports its own success to the object.
        const n = Math.min(100_000, Number(url.searchParams.get('n') ?? 100));
        const stub = env.BREAKER.get(env.BREAKER.idFromName(env.BREAKER_NAME));
        const client = `unbatched-${crypto.randomUUID().slice(0, 8)}`;
        for (let i = 1; i <= n; i++) {
          const resp = await stub.fetch('https://breaker/report', {
            method: 'POST',
            body: JSON.stringify({ client, batches: [{ seq: i, counts: [{ generation: null, successes: 1 }] }] }),
          });
          await resp.arrayBuffer();
        }
        return json({ ok: n });
      }
      case '/raw':
        return raw(req, url, env.BREAKER as unknown as DurableObjectNamespace, env.BREAKER_NAME);
      default:
        return json({ error: 'not_found' }, 404);
    }
  },
};
