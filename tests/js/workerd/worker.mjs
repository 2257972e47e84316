// A Cloudflare Worker: one breaker per isolate (module scope), guarding an upstream fetch.
import { CircuitBreaker, isCircuitOpenError, BreakerRegistry } from 'breakwater';

const registry = new BreakerRegistry({ failureThreshold: 2, resetTimeout: 60_000 });
const streams = new CircuitBreaker('stream', { failureThreshold: 5, resetTimeout: 60_000 });

/** An answer in two chunks, then the end or a cut. */
function answer(cut) {
  const enc = new TextEncoder();
  const chunks = ['Hel', 'lo'];
  return new ReadableStream({
    async pull(c) {
      await new Promise((r) => setTimeout(r, 5));
      if (chunks.length) c.enqueue(enc.encode(chunks.shift()));
      else if (cut) c.error(new TypeError('terminated'));
      else c.close();
    },
  });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/count-trip') {
      // A success that brings a count window to its minimum opens the breaker then.
      let t = 1_700_000_000_000;
      const w = new CircuitBreaker('count-trip', { failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 }, resetTimeout: 30_000, clock: () => t });
      const boom = async () => {
        throw Object.assign(new Error('overloaded'), { status: 529 });
      };
      for (let i = 0; i < 3; i++) await w.execute(boom).catch(() => {});
      await w.execute(async () => 'ok');
      const openFor = w.openUntil - t;
      t += 1_000;
      const still = await w.execute(async () => 'probe?').catch((e) => e);
      return Response.json({ state: w.state, openFor, refused: isCircuitOpenError(still) });
    }
    if (url.pathname === '/snapshot') {
      return Response.json(registry.toJSON());
    }
    if (url.pathname === '/stream') {
      // breaker.stream in workerd: a whole answer, or one cut mid-answer (partial + contingency).
      const body = await streams.stream(() => answer(url.searchParams.has('cut')), {
        onInterrupted: () => ' [interrupted]',
        idleTimeoutMs: 1000,
      });
      const text = await new Response(body).text();
      const { successes, failures } = streams.stats;
      return Response.json({ text, successes, failures });
    }
    if (url.pathname === '/stream-upstream') {
      const e = await streams.stream(() => fetch(env.UPSTREAM)).catch((x) => x);
      return Response.json({ name: e.name, status: e.status, failures: streams.stats.failures });
    }
    const breaker = registry.get(url.searchParams.get('provider') ?? 'anthropic');
    try {
      const res = await breaker.execute(() => fetch(env.UPSTREAM));
      return Response.json({ state: breaker.state, upstreamStatus: res.status });
    } catch (err) {
      if (isCircuitOpenError(err)) {
        return Response.json({ state: breaker.state, fallback: true }, { status: 503 });
      }
      return Response.json({ error: String(err) }, { status: 500 });
    }
  },
};
