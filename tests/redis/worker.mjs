// One instance of an app: a breaker (shared through Redis, or per process) in front of the fake
// upstream, driven by the test over IPC. See helpers.mjs `startWorkers`.
import { createClient } from 'redis';
import { CircuitBreaker, isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, fromNodeRedis } from 'breakwater/store';

let breaker;
let redis;
let upstream;
let loop = null;
const t = { calls: 0, successes: 0, failures: 0, rejected: 0, reasons: {}, servedInFallback: 0 };
const send = (m) => process.send(m);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function callUpstream() {
  const r = await fetch(upstream);
  const text = await r.text();
  if (!r.ok) throw Object.assign(new Error(`upstream answered ${r.status}`), { status: r.status });
  return text;
}

/** One call through the breaker: 'ok', 'failed' or the rejection. */
async function call(fn = callUpstream) {
  const fallbackAtStart = breaker.decidingLocally === true;
  try {
    await breaker.execute(fn);
    t.calls++;
    t.successes++;
    if (fallbackAtStart) t.servedInFallback++;
    return { ok: true };
  } catch (e) {
    if (isCircuitOpenError(e)) {
      t.rejected++;
      t.reasons[e.reason] = (t.reasons[e.reason] ?? 0) + 1;
      return { rejected: e };
    }
    t.calls++;
    t.failures++;
    return { failed: e };
  }
}

function stats() {
  return {
    ...t,
    reasons: { ...t.reasons },
    state: breaker.state,
    decidingLocally: breaker.decidingLocally ?? false,
    storeCalls: breaker.storeCalls ?? 0,
    casConflicts: breaker.casConflicts ?? 0,
    unacknowledged: breaker.unacknowledged ?? 0,
  };
}

/**
 * The breaker's settings as the test sent them (JSON): an `adaptiveThrottle` given as its
 * settings becomes breakwater/adaptive's `throttle(settings)` here, in the process.
 */
async function settings(breaker) {
  if (breaker?.adaptiveThrottle === undefined) return breaker;
  const { throttle } = await import('breakwater/adaptive');
  return { ...breaker, adaptiveThrottle: throttle(breaker.adaptiveThrottle) };
}

const commands = {
  async init(m) {
    upstream = m.upstream;
    m.breaker = await settings(m.breaker);
    if (m.mode === 'local') {
      breaker = new CircuitBreaker(m.name, m.breaker);
      return stats();
    }
    redis = createClient({
      url: m.redisUrl,
      disableOfflineQueue: true,
      socket: { connectTimeout: 500, reconnectStrategy: (n) => Math.min(20 + n * 20, 200) },
    });
    redis.on('error', () => {});
    await redis.connect();
    breaker = new StoreCircuitBreaker(m.name, {
      store: new RedisStore(fromNodeRedis(redis)),
      breaker: m.breaker,
      clientId: m.clientId,
      leaseMs: m.leaseMs,
      maxBatch: m.maxBatch,
      storeTimeoutMs: m.storeTimeoutMs,
      retryUnreachableMs: m.retryUnreachableMs,
    });
    breaker.onEvent((e) => send({ event: e }));
    return stats();
  },
  /** Sequential calls until the breaker refuses one. */
  async untilRejected() {
    const before = { ...t };
    for (;;) {
      const r = await call();
      if (r.rejected) {
        return { calls: t.calls - before.calls, failures: t.failures - before.failures, reason: r.rejected.reason, state: r.rejected.state };
      }
    }
  },
  /** `n` sequential calls; the store round trips they cost. */
  async run(m) {
    const calls0 = breaker.storeCalls ?? 0;
    const s0 = t.successes;
    for (let i = 0; i < m.n; i++) await call();
    return { successes: t.successes - s0, storeCalls: (breaker.storeCalls ?? 0) - calls0 };
  },
  /** Calls in a loop until `loopStop`; a refused call waits for its retry-after (at most 25 ms). */
  async loopStart() {
    let stop = false;
    const done = (async () => {
      while (!stop) {
        const r = await call();
        if (r.rejected) await sleep(Math.min(r.rejected.retryAfterMs, 25));
        else await sleep(1);
      }
    })();
    loop = { done, stop: () => (stop = true) };
    return true;
  },
  async loopStop() {
    loop?.stop();
    await loop?.done;
    loop = null;
    return stats();
  },
  /** `n` calls on `lanes` concurrent lanes, no upstream: every `failEvery`-th fails (and is reported at once). */
  async storm(m) {
    let k = 0;
    const lane = async () => {
      while (k < m.n) {
        const i = k++;
        await call(async () => {
          await new Promise((r) => setImmediate(r));
          if (i % m.failEvery === 0) throw Object.assign(new Error('boom'), { status: 503 });
          return i;
        });
      }
    };
    await Promise.all(Array.from({ length: m.lanes }, lane));
    return stats();
  },
  /** Sends whatever waits until the store has acknowledged everything. */
  async flush() {
    for (let i = 0; i < 100 && breaker.unacknowledged > 0; i++) {
      if (!(await breaker.flush())) await sleep(20);
    }
    await breaker.flush();
    return stats();
  },
  async stats() {
    return stats();
  },
  async quit() {
    await redis?.close?.().catch(() => {});
    return true;
  },
};

process.on('message', async (m) => {
  try {
    send({ id: m.id, result: await commands[m.cmd](m) });
  } catch (e) {
    send({ id: m.id, error: e?.stack ?? String(e) });
  }
});
