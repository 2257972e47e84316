// A Worker written as a JavaScript developer would from the README: breakwater's Durable Object
// exported from their own Worker (`breakwater/cloudflare`), a module-level SharedCircuitBreaker
// on `env` from 'cloudflare:workers', the admin and service routes mounted under /breakwater.
// The settings come from vars, so that the tests can run two versions side by side (a rolling
// deploy). Bundled by scripts/test-worker.sh into tests/worker/.build/user-worker.mjs.
import { env } from 'cloudflare:workers';
import { SharedCircuitBreaker, type NamespaceLike, type SharedBreakerRule } from 'breakwater/shared';
import { breakerRoutes } from 'breakwater/cloudflare';

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

class UpstreamError extends Error {
  constructor(readonly status: number) {
    super(`upstream ${status}`);
  }
}

async function upstream(url: string): Promise<number> {
  let resp: Response;
  try {
    resp = await fetch(url);
  } catch {
    throw new UpstreamError(0);
  }
  await resp.arrayBuffer();
  if (resp.status >= 500 || resp.status === 429) throw new UpstreamError(resp.status);
  return resp.status;
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

export default {
  async fetch(req: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const names = env.NAMES ? env.NAMES.split(',') : undefined;
    const routed = await breakerRoutes(req, env, { prefix: '/breakwater', names });
    if (routed) return routed;
    const url = new URL(req.url);
    const waitUntil = (p: Promise<unknown>) => ctx.waitUntil(p);
    switch (url.pathname) {
      case '/app/call': {
        try {
          const status = await breaker.execute(() => upstream(env.UPSTREAM), { waitUntil });
          return json({ result: 'ok', status, state: breaker.state, fallback: breaker.inFallback, object_requests: breaker.objectRequests });
        } catch (e) {
          const rejected = (e as { isCircuitOpenError?: boolean }).isCircuitOpenError === true;
          return json({
            result: rejected ? 'rejected' : 'failed',
            status: rejected ? 0 : ((e as UpstreamError).status ?? 0),
            retry_after_ms: rejected ? (e as { retryAfterMs: number }).retryAfterMs : 0,
            state: breaker.state,
            fallback: breaker.inFallback,
            object_requests: breaker.objectRequests,
          });
        }
      }
      case '/app/bench': {
        const n = Math.min(1_000_000, Number(url.searchParams.get('n') ?? 1000));
        let ok = 0;
        let rejected = 0;
        for (let i = 0; i < n; i++) {
          try {
            await breaker.execute(() => undefined, { waitUntil });
            ok++;
          } catch {
            rejected++;
          }
        }
        return json({ ok, rejected, state: breaker.state, object_requests: breaker.objectRequests });
      }
      case '/app/flush':
        await breaker.flush();
      // falls through
      case '/app/stats':
        return json({
          state: breaker.state,
          object_requests: breaker.objectRequests,
          unacknowledged: breaker.unacknowledged,
          fallback: breaker.inFallback,
          events,
        });
      case '/raw': {
        // Test hook: sends the request body as is to the object (malformed input, ids without
        // a name): `?id=string` addresses it by `idFromString(idFromName(name).toString())`, as
        // wrangler dev's registry does; `query` is appended to the object's URL as it is.
        const name = url.searchParams.get('name') ?? vars.BREAKER_NAME ?? 'anthropic';
        const op = url.searchParams.get('op') ?? 'report';
        const ns = env.BREAKER as unknown as DurableObjectNamespace;
        const id = url.searchParams.get('id') === 'string' ? ns.idFromString(ns.idFromName(name).toString()) : ns.idFromName(name);
        const init: RequestInit = { method: req.method, headers: req.headers };
        if (req.method !== 'GET' && req.method !== 'HEAD') init.body = await req.arrayBuffer();
        const resp = await ns.get(id).fetch(`https://breaker/${op}${url.searchParams.get('query') ?? ''}`, init);
        return new Response(await resp.text(), { status: resp.status, headers: { 'content-type': 'application/json' } });
      }
      default:
        return json({ error: 'not_found' }, 404);
    }
  },
};
