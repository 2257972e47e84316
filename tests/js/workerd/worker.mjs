// A Cloudflare Worker: one breaker per isolate (module scope), guarding an upstream fetch.
import { CircuitBreaker, isCircuitOpenError, BreakerRegistry } from 'breakwater';
import { countTrip } from '../count-trip.mjs';
import { adaptiveCase } from '../adaptive-case.mjs';
import { SharedCircuitBreaker } from 'breakwater/cloudflare';
import { seed000Case, seed000LocalCase } from '../seed000-case.mjs';

// The Durable Object holding the shared breaker, as an app's Worker exports it.
export { BreakerObject } from 'breakwater/cloudflare';

/** Seed 000's options, with the open period and the lease short enough to wait out for real. */
const SEED000 = { failureThreshold: 2, monitoringWindow: 60_000, resetTimeout: 300, halfOpenSuccessThreshold: 2 };
const LEASE_MS = 200;
let seedRuns = 0;

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
    if (url.pathname === '/count-trip') return Response.json(await countTrip());
    if (url.pathname === '/adaptive') return Response.json(await adaptiveCase());
    if (url.pathname === '/seed000-local') {
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      return Response.json(await seed000LocalCase({ breaker: new CircuitBreaker('seed000-local', SEED000), wait: sleep, resetTimeout: SEED000.resetTimeout }));
    }
    if (url.pathname === '/seed000') {
      // Two instances of one breaker held by the Durable Object; the object's clock is workerd's.
      const name = `seed000-${++seedRuns}`;
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      const result = await seed000Case({
        make: () => new SharedCircuitBreaker(name, { shared: env.BREAKER, breaker: SEED000, leaseMs: LEASE_MS }),
        wait: sleep,
        flush: (b) => b.flush(),
        leaseMs: LEASE_MS,
        resetTimeout: SEED000.resetTimeout,
      });
      return Response.json(result);
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
