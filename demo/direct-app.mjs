// The live demo's "no breaker" app Worker: calls the primary model directly, with nothing in front
// of it, and answers like the Rust demo app's `/app/call` (src/worker/routes/demo.rs) so the demo
// can drive every strategy the same way. Like that app it has a deadline per call
// (DEMO_DEADLINE_MS) and falls back to the backup model (DEMO_BACKUP) with whatever time is left
// when the primary fails; it only learns that the primary is down by calling it, every time.
const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });

/** `{ ok, status, timedOut }` of one call that must end by `deadline` (epoch ms). */
async function upstreamCall(url, deadline) {
  const left = deadline - Date.now();
  if (left <= 0) return { ok: false, status: 0, timedOut: true };
  try {
    const resp = await fetch(url, { signal: AbortSignal.timeout(left) });
    await resp.arrayBuffer();
    return { ok: !(resp.status >= 500 || resp.status === 429), status: resp.status, timedOut: false };
  } catch (e) {
    return { ok: false, status: 0, timedOut: e?.name === 'TimeoutError' };
  }
}

export default {
  async fetch(req, env) {
    const { pathname } = new URL(req.url);
    if (pathname === '/app/call') {
      const deadline = Date.now() + Number(env.DEMO_DEADLINE_MS ?? 10000);
      const primary = await upstreamCall(env.DEMO_UPSTREAM, deadline);
      let answeredBy = primary.ok ? 'primary' : null;
      if (!primary.ok && env.DEMO_BACKUP && (await upstreamCall(env.DEMO_BACKUP, deadline)).ok) answeredBy = 'backup';
      return json({
        result: primary.ok ? 'ok' : 'failed',
        status: primary.status,
        timed_out: primary.timedOut,
        answered_by: answeredBy,
        state: null,
        object_requests: 0,
      });
    }
    if (pathname === '/app/stats') return json({ state: null, object_requests: 0 });
    return new Response('{"error":"not_found"}', { status: 404 });
  },
};
