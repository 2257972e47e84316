// The live demo's "no breaker" app Worker: calls the provider directly, with nothing in front of
// it, and answers like the Rust demo app's `/app/call` (src/worker/routes/demo.rs) so the demo can
// drive every strategy the same way.
const json = (body) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } });

export default {
  async fetch(req, env) {
    const { pathname } = new URL(req.url);
    if (pathname === '/app/call') {
      try {
        const resp = await fetch(env.DEMO_UPSTREAM);
        await resp.arrayBuffer();
        const failed = resp.status >= 500 || resp.status === 429;
        return json({ result: failed ? 'failed' : 'ok', status: resp.status, state: null, object_requests: 0 });
      } catch {
        return json({ result: 'failed', status: 0, state: null, object_requests: 0 });
      }
    }
    if (pathname === '/app/stats') return json({ state: null, object_requests: 0 });
    return new Response('{"error":"not_found"}', { status: 404 });
  },
};
