// A route handler as it would run on Vercel Edge: a module-level breaker shared by requests.
import { CircuitBreaker, isCircuitOpenError, withRetry } from 'breakwater';
import { countTrip } from '../count-trip.mjs';
import { adaptiveCase } from '../adaptive-case.mjs';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { seed000Case, seed000LocalCase } from '../seed000-case.mjs';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { settingsJson } from 'breakwater/shared/internal';
import { coordinatorGlue } from 'breakwater/coordinator';

/** Seed 000's options, with the open period and the lease short enough to wait out for real. */
const SEED000 = { failureThreshold: 2, monitoringWindow: 60_000, resetTimeout: 300, halfOpenSuccessThreshold: 2 };
const LEASE_MS = 200;

/** Seed 000's pattern on a local breaker, and on two instances of a service-backed one (a coordinator in this sandbox behind the service's routes). */
async function seed000Others() {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const local = await seed000LocalCase({ breaker: new CircuitBreaker('seed000-local', SEED000), wait: sleep, resetTimeout: SEED000.resetTimeout });
  const co = coordinatorGlue().WasmCoordinator.create('seed000', settingsJson(SEED000, LEASE_MS, 'edge'), undefined, false);
  const fetch = async (url, init) => new Response(co.exchange(Date.now(), init.body, url.includes('/v1/acquire')), { status: 200 });
  const service = await seed000Case({
    make: () => new SharedCircuitBreaker('seed000', { service: { url: 'https://breakwater.example', token: 't', fetch }, breaker: SEED000, leaseMs: LEASE_MS }),
    wait: sleep,
    flush: (b) => b.flush(),
    leaseMs: LEASE_MS,
    resetTimeout: SEED000.resetTimeout,
  });
  return { local, service };
}

/** Seed 000's pattern on two instances of a store-backed shared breaker, on the edge. */
async function seed000() {
  const store = new MemoryStore();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  return seed000Case({
    make: (i) => new StoreCircuitBreaker('seed000', { store, breaker: SEED000, leaseMs: LEASE_MS, clientId: `edge-${i}` }),
    wait: sleep,
    flush: (b) => b.flush(),
    leaseMs: LEASE_MS,
    resetTimeout: SEED000.resetTimeout,
  });
}

const breaker = new CircuitBreaker('edge-upstream', { failureThreshold: 2, resetTimeout: 60_000 });

const streams = new CircuitBreaker('edge-stream', { failureThreshold: 5, resetTimeout: 60_000 });

/** breaker.stream in the edge runtime: an answer of two chunks, whole or cut mid-answer. */
async function stream(cut) {
  const enc = new TextEncoder();
  const chunks = ['Hel', 'lo'];
  const body = await streams.stream(
    () =>
      new ReadableStream({
        async pull(c) {
          await new Promise((r) => setTimeout(r, 5));
          if (chunks.length) c.enqueue(enc.encode(chunks.shift()));
          else if (cut) c.error(new TypeError('terminated'));
          else c.close();
        },
      }),
    { onInterrupted: () => ' [interrupted]', idleTimeoutMs: 1000 },
  );
  const text = await new Response(body).text();
  return Response.json({ text, successes: streams.stats.successes, failures: streams.stats.failures });
}

async function handle(request) {
  const path = new URL(request.url).pathname;
  if (path === '/api/count-trip') return Response.json(await countTrip());
  if (path === '/api/adaptive') return Response.json(await adaptiveCase());
  if (path === '/api/seed000') return Response.json(await seed000());
  if (path === '/api/seed000-others') return Response.json(await seed000Others());
  if (path === '/api/stream') return stream(new URL(request.url).searchParams.has('cut'));
  const upstream = new URL(request.url).searchParams.get('upstream');
  try {
    const res = await breaker.execute(() =>
      withRetry(() => fetch(upstream), { maxAttempts: 2, sleep: async () => {} }),
    );
    return Response.json({ state: breaker.state, upstreamStatus: res.status });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      return Response.json({ state: breaker.state, fallback: true, retryAfterMs: err.retryAfterMs }, { status: 503 });
    }
    throw err;
  }
}

self.addEventListener('fetch', (event) => event.respondWith(handle(event.request)));
