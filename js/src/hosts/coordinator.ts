// `breakwater/coordinator`: the core's coordinator (src/wasm/coordinator.rs), in a wasm module of
// its own, for breakwater/store and breakwater/cloudflare. Not documented for apps. Its runtime
// entries (js/entry/coordinator-*) load the module their runtime's way and hand the glue over
// with `setCoordinatorGlue`, and to breakwater/shared/internal's `setSharedGlue` as well (the
// module carries the lease client too: js/src/shared/glue.ts); the sub-entries then reach it with
// `coordinatorGlue()`. Apart from breakwater/shared's module, which every client elsewhere
// loads, so that such a client does not carry the coordinator.
export { coordinatorGlue, setCoordinatorGlue, type CoordinatorGlue, type WasmCoordinator, type WasmRoute } from '../shared/glue.js';

import { coordinatorGlue, type WasmRoute } from '../shared/glue.js';
import { Http, Verb } from '../codes/layout.js';

// What the coordinator's hosts (breakwater/cloudflare, breakwater/store) answer, written once.

/** A JSON response. */
export function json(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** A route the core planned, read and freed: its answer. */
export function answerOf(r: WasmRoute): Response {
  try {
    if (r.log !== '') console.error(`breakwater: ${r.log}`);
    return json(r.status, r.answer, r.challenge ? { 'www-authenticate': 'Bearer' } : {});
  } finally {
    r.free();
  }
}

/** The answer to a refusal the host meets itself (an `Http`). */
export const refusal = (code: Http): Response => answerOf(coordinatorGlue().refusal(code));

/** A request's method, as the core's routes read it. */
export const verbOf = (method: string): Verb => (method === 'GET' ? Verb.Get : method === 'POST' ? Verb.Post : Verb.Other);

/**
 * The status page (the core's, src/shared/status.rs) for `/state` views (a JSON array) as of
 * `now` (ms since the epoch), with its headers (a strict CSP among them); 502 when the views
 * cannot be read.
 */
export function statusResponse(views: string, now: number): Response {
  const g = coordinatorGlue();
  const page = g.status_page(views, now);
  if (page === undefined) return refusal(Http.BadGateway);
  const headers = new Headers();
  for (const line of g.status_headers().split('\n')) {
    const at = line.indexOf(': ');
    if (at > 0) headers.set(line.slice(0, at), line.slice(at + 2));
  }
  return new Response(page, { status: 200, headers });
}
