// A JavaScript app Worker for the end-to-end tests: guards calls to a fake upstream with the
// shared breaker (breakwater/shared, from the built package) through a Durable Object binding to the Rust Worker's
// BreakerObject (`scriptName`), or with a per-isolate local breaker (MODE = "local").
// Bundled by esbuild into tests/worker/.build/js-app.mjs.
import { LocalFallbackBreaker, SharedCircuitBreaker, type NamespaceLike } from 'breakwater/shared';

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
let local: LocalFallbackBreaker | null = null;
const events: string[] = [];

function breaker(env: Env): SharedCircuitBreaker {
  if (!shared) {
    shared = new SharedCircuitBreaker(env.BREAKER_NAME, {
      shared: env.BREAKER,
      failClosed: env.FAIL_CLOSED === 'true',
      retryUnreachableMs: 500,
      requestTimeoutMs: 2000,
      fallback: new LocalFallbackBreaker(Number(env.LOCAL_THRESHOLD ?? 5), Number(env.LOCAL_OPEN_MS ?? 30000)),
    });
    shared.onEvent((e) => events.push(e.type === 'state' ? `state:${e.to}` : e.type));
  }
  return shared;
}

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
    const url = new URL(req.url);
    const waitUntil = (p: Promise<unknown>) => ctx.waitUntil(p);
    if (env.MODE === 'local') {
      local ??= new LocalFallbackBreaker(Number(env.LOCAL_THRESHOLD ?? 5), Number(env.LOCAL_OPEN_MS ?? 30000));
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
    switch (url.pathname) {
      case '/app/call': {
        try {
          const status = await b.execute(() => upstream(env.UPSTREAM), {
            waitUntil,
            classify: (r) =>
              r.ok ? 'success' : (r.error as UpstreamError).status >= 400 && (r.error as UpstreamError).status < 500 && (r.error as UpstreamError).status !== 429 ? 'ignored' : 'failure',
          });
          return json({ result: 'ok', status, state: b.state, fallback: b.inFallback, object_requests: b.objectRequests });
        } catch (e) {
          const rejected = (e as { isCircuitOpenError?: boolean }).isCircuitOpenError === true;
          return json({
            result: rejected ? 'rejected' : 'failed',
            status: rejected ? 0 : ((e as UpstreamError).status ?? 0),
            retry_after_ms: rejected ? (e as { retryAfterMs: number }).retryAfterMs : 0,
            state: b.state,
            fallback: b.inFallback,
            object_requests: b.objectRequests,
          });
        }
      }
      case '/app/bench': {
        const n = Math.min(1_000_000, Number(url.searchParams.get('n') ?? 1000));
        let ok = 0;
        let rejected = 0;
        for (let i = 0; i < n; i++) {
          try {
            await b.execute(() => undefined, { waitUntil });
            ok++;
          } catch {
            rejected++;
          }
        }
        return json({ ok, rejected, state: b.state, object_requests: b.objectRequests });
      }
      case '/app/flush':
        await b.flush();
      // falls through
      case '/app/stats':
        return json({
          state: b.state,
          object_requests: b.objectRequests,
          unacknowledged: b.unacknowledged,
          fallback: b.inFallback,
          events,
        });
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
      case '/raw': {
        // Test hook: sends the request body as is to the object (malformed-input tests).
        // `?id=string` addresses it by `idFromString(idFromName(name).toString())` (an id without
        // a name, as wrangler dev's registry makes); `query` is appended to the object's URL.
        const name = url.searchParams.get('name') ?? env.BREAKER_NAME;
        const op = url.searchParams.get('op') ?? 'report';
        const ns = env.BREAKER as unknown as DurableObjectNamespace;
        const id = url.searchParams.get('id') === 'string' ? ns.idFromString(ns.idFromName(name).toString()) : ns.idFromName(name);
        const stub = ns.get(id);
        const init: RequestInit = { method: req.method, headers: req.headers };
        if (req.method !== 'GET' && req.method !== 'HEAD') init.body = await req.arrayBuffer();
        const resp = await stub.fetch(`https://breaker/${op}${url.searchParams.get('query') ?? ''}`, init);
        return new Response(await resp.text(), { status: resp.status, headers: { 'content-type': 'application/json' } });
      }
      default:
        return json({ error: 'not_found' }, 404);
    }
  },
};
