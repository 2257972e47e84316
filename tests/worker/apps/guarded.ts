// What the JavaScript app Workers of the tests share (js-app.ts, bound to the Rust Worker's
// object; user-worker.ts, hosting breakwater/cloudflare's): the fake upstream's call, the
// guarded routes under /app/*, and the /raw hook that talks to the object directly.
import type { SharedCircuitBreaker, SharedBreakerOptions } from 'breakwater/shared';

export class UpstreamError extends Error {
  constructor(readonly status: number) {
    super(`upstream ${status}`);
  }
}

/** One call to the fake upstream: its status, or an UpstreamError for a 5xx, a 429 or no answer. */
export async function upstream(url: string): Promise<number> {
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

export const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/**
 * `/app/call` (one guarded upstream call), `/app/bench?n=` (n guarded no-op calls),
 * `/app/stats` and `/app/flush` for breaker `b`; null for any other path.
 */
export async function guardedRoutes(
  b: SharedCircuitBreaker,
  url: URL,
  upstreamUrl: string,
  waitUntil: (p: Promise<unknown>) => void,
  events: string[],
  classify?: SharedBreakerOptions['classify'],
): Promise<Response | null> {
  switch (url.pathname) {
    case '/app/call': {
      try {
        const status = await b.execute(() => upstream(upstreamUrl), classify ? { waitUntil, classify } : { waitUntil });
        return json({ result: 'ok', status, state: b.state, fallback: b.decidingLocally, object_requests: b.coordinatorRequests });
      } catch (e) {
        const rejected = (e as { isCircuitOpenError?: boolean }).isCircuitOpenError === true;
        return json({
          result: rejected ? 'rejected' : 'failed',
          status: rejected ? 0 : ((e as UpstreamError).status ?? 0),
          retry_after_ms: rejected ? (e as { retryAfterMs: number }).retryAfterMs : 0,
          state: b.state,
          fallback: b.decidingLocally,
          object_requests: b.coordinatorRequests,
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
      return json({ ok, rejected, state: b.state, object_requests: b.coordinatorRequests });
    }
    case '/app/flush':
      await b.flush();
    // falls through
    case '/app/stats':
      return json({ state: b.state, object_requests: b.coordinatorRequests, unacknowledged: b.unacknowledged, fallback: b.decidingLocally, events });
    default:
      return null;
  }
}

/**
 * `/raw`: sends the request body as is to the object (malformed input, ids without a name).
 * `?name=` (default `name`), `?op=` (default report); `?id=string` addresses it by
 * `idFromString(idFromName(name).toString())`, an id without its name as wrangler dev's registry
 * makes; `?query=` is appended to the object's URL as it is.
 */
export async function raw(req: Request, url: URL, ns: DurableObjectNamespace, name: string): Promise<Response> {
  const target = url.searchParams.get('name') ?? name;
  const op = url.searchParams.get('op') ?? 'report';
  const id = url.searchParams.get('id') === 'string' ? ns.idFromString(ns.idFromName(target).toString()) : ns.idFromName(target);
  const init: RequestInit = { method: req.method, headers: req.headers };
  if (req.method !== 'GET' && req.method !== 'HEAD') init.body = await req.arrayBuffer();
  const resp = await ns.get(id).fetch(`https://breaker/${op}${url.searchParams.get('query') ?? ''}`, init);
  return new Response(await resp.text(), { status: resp.status, headers: { 'content-type': 'application/json' } });
}
