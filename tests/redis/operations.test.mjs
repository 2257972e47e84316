// Field operations the shared breaker must live through, tried against the packed package as an
// app would use it. Each test says what a user sees today and the liveness property it checks:
// the shared breaker still trips when the upstream fails (every instance seeing it), still closes
// when the upstream is healthy again, and its instances do not flood the store meanwhile.
//
// Each runs on MemoryStore with an injected clock (simulated time, no sleeping) and on the real
// redis-server of scripts/test-redis.sh. On Redis the store's clock is Redis's TIME: where a
// scenario needs a second or two of it, real time passes ('redis'); where it needs minutes, the
// store is wrapped so that the TIME Redis answers is shifted by the simulated time
// ('redis-shifted'), the record still being read and compare-and-set by the package's own Lua
// scripts on the server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, MemoryStore, fromNodeRedis } from 'breakwater/store';
import { namer, redisUrl, sleep, startUpstream, startWorkers, useRedis } from './helpers.mjs';

let redis;
const uniq = namer();
useRedis((c) => (redis = c));

const T0 = 1_800_000_000_000;
const upstreamError = () => Object.assign(new Error('upstream 529'), { status: 529 });

/**
 * Where a scenario runs. `clock` is the instances' clock, `pass(ms)` makes `ms` of store (and
 * instance) time pass.
 *  - memory: MemoryStore on an injected clock; time passes at once.
 *  - redis: RedisStore on the test command's redis-server; real time passes (a sleep).
 *  - redis-shifted: RedisStore whose answers' `now` (Redis TIME) is shifted by the simulated time,
 *    and instances on Date.now() shifted alike; time passes at once.
 */
function where(kind) {
  if (kind === 'memory') {
    let now = T0;
    const clock = () => now;
    return { store: new MemoryStore(clock), clock, pass: async (ms) => void (now += ms) };
  }
  if (kind === 'redis') {
    return { store: new RedisStore(fromNodeRedis(redis)), clock: Date.now, pass: (ms) => sleep(ms) };
  }
  let shift = 0;
  const inner = new RedisStore(fromNodeRedis(redis));
  const shifted = (v) => (v && v.now !== undefined ? { ...v, now: v.now + shift } : v);
  const store = {
    async read(key) {
      return shifted(await inner.read(key));
    },
    async compareAndSet(key, expected, version, value, ttlMs) {
      const r = await inner.compareAndSet(key, expected, version, value, ttlMs);
      return r.ok ? r : { ok: false, current: shifted(r.current) };
    },
  };
  return { store, clock: () => Date.now() + shift, pass: async (ms) => void (shift += ms) };
}

/** A store that throws on every call while `down` is true (Redis unreachable, DNS gone, ...). */
function flaky(inner) {
  const s = {
    down: false,
    refusedCalls: 0,
    async read(key) {
      if (s.down) {
        s.refusedCalls++;
        throw new Error('connect ECONNREFUSED 10.0.0.7:6379');
      }
      return inner.read(key);
    },
    async compareAndSet(key, expected, version, value, ttlMs) {
      if (s.down) {
        s.refusedCalls++;
        throw new Error('connect ECONNREFUSED 10.0.0.7:6379');
      }
      return inner.compareAndSet(key, expected, version, value, ttlMs);
    },
  };
  return s;
}

/** One call through `b`: 'ok', 'failed' or 'rejected' (a CircuitOpenError). */
async function call(b, fn) {
  try {
    await b.execute(fn);
    return 'ok';
  } catch (e) {
    if (isCircuitOpenError(e)) return 'rejected';
    return 'failed';
  }
}

/**
 * The upstream fails hard: every instance not yet refused calls once per round, all at once, until
 * each has been refused (at most `rounds` rounds). Answers how many calls reached the upstream and
 * which instances were refused.
 */
async function failUntilAllRefuse(fleet, { rounds = 30, pass = async () => {}, stepMs = 0 } = {}) {
  const refused = new Set();
  let reached = 0;
  const fail = () => {
    reached++;
    throw upstreamError();
  };
  for (let r = 0; r < rounds && refused.size < fleet.length; r++) {
    await Promise.all(
      fleet.map(async (b, i) => {
        if (refused.has(i)) return;
        if ((await call(b, fail)) === 'rejected') refused.add(i);
      }),
    );
    if (stepMs) await pass(stepMs);
  }
  return { reached, refused: refused.size };
}

/**
 * The upstream is healthy: every instance calls once per round, one after the other, then
 * `stepMs` pass, until every instance's state is CLOSED and the store's is too (at most `rounds`
 * rounds). Round r starts with instance 2r + 1 (mod n): in the rolling deploy, the first to ask
 * after the open period, and so the one granted the probe, is always on the new settings (B),
 * the record having been written first under the old ones (A).
 */
async function healthyUntilClosed(fleet, { rounds, stepMs, pass }) {
  let admitted = 0;
  let view;
  for (let r = 0; r < rounds; r++) {
    const out = [];
    for (let i = 0; i < fleet.length; i++) out.push(await call(fleet[(i + 2 * r + 1) % fleet.length], () => 'ok'));
    admitted += out.filter((o) => o === 'ok').length;
    view = await fleet[0].inspect();
    if (view.state === 'CLOSED' && fleet.every((b) => b.state === 'CLOSED')) break;
    await pass(stepMs);
  }
  return { admitted, view, states: fleet.map((b) => b.state) };
}

// ----- a rolling deploy -----

// Two settings side by side while a deploy rolls: 8 instances, the odd ones already on the new
// release (resetTimeout 1500 instead of 1000), started in interleaved order.
// Today: the coordinator of every instance whose settings differ from the stored ones carries the
// state over to a new generation on every exchange, so outcomes reported under the generation
// just handed out, and probes granted by such an instance, no longer count. In one process the
// fleet never trips it (every failure is stale: 240 failing calls, still CLOSED); as 8 processes
// it trips late (over a hundred failing calls instead of at most 11). Once OPEN, a probe taken by
// an instance on the new settings is never matched: the record stays HALF_OPEN with a healthy
// upstream, every instance refused, until that probe times out (and the next one may go the
// same way).
// Liveness: a failing upstream trips it within threshold + the calls in flight (8), every
// instance sees OPEN; once the open period has passed, a healthy upstream closes it for everyone.
const A = { failureThreshold: 3, resetTimeout: 1000, probeTimeoutMs: 5000 };
const B = { ...A, resetTimeout: 1500 };

for (const kind of ['memory', 'redis']) {
  test(`${kind}: rolling deploy, 8 instances on two settings: trips within threshold + in flight, then closes`, async (t) => {
    const w = where(kind);
    const name = uniq('rolling');
    const fleet = Array.from(
      { length: 8 },
      (_, i) => new StoreCircuitBreaker(name, { store: w.store, clock: w.clock, clientId: `deploy-${i}`, breaker: i % 2 ? B : A }),
    );
    // Healthy traffic first: every instance holds a lease, its successes acknowledged.
    for (const b of fleet) {
      assert.equal(await call(b, () => 'ok'), 'ok');
      await b.flush();
    }

    await t.test('a failing upstream trips it for every instance', async () => {
      const trip = await failUntilAllRefuse(fleet);
      const open = await fleet[0].inspect();
      t.diagnostic(
        `${kind}: ${trip.reached} failing calls reached the upstream, ${trip.refused}/8 instances refused; ` +
          `store: ${open.state}, generation ${open.generation}, ${open.counters.failures} failures counted, ${open.counters.stale} stale; ` +
          `instances: ${fleet.map((b) => b.state).join(' ')}`,
      );
      assert.equal(trip.refused, 8, 'every instance refuses once the upstream fails hard');
      assert.ok(trip.reached <= A.failureThreshold + fleet.length, `${trip.reached} failing calls reached the upstream`);
      assert.deepEqual(fleet.map((b) => b.state), Array(8).fill('OPEN'));
    });

    await t.test('after the open period, a healthy upstream closes it for every instance', async () => {
      // If the fleet did not trip it, one instance failing alone does (at most 20 calls), so that
      // closing is tried from OPEN.
      let forced = 0;
      while ((await fleet[0].inspect()).state !== 'OPEN' && forced < 20) {
        forced++;
        await call(fleet[0], () => {
          throw upstreamError();
        });
      }
      const open = await fleet[0].inspect();
      if (forced) t.diagnostic(`${kind}: the fleet did not trip it; ${forced} more failures of one instance: store ${open.state}`);
      assert.equal(open.state, 'OPEN');
      // The longer of the two open periods passes; then the upstream is healthy.
      await w.pass(B.resetTimeout + 50);
      const end = await healthyUntilClosed(fleet, { rounds: 20, stepMs: 250, pass: w.pass });
      t.diagnostic(
        `${kind}: after the open period, ${end.admitted} healthy calls admitted; store: ${end.view.state}, ` +
          `generation ${end.view.generation}, probes granted ${end.view.counters.probesGranted}, ` +
          `probe outcomes ${end.view.counters.probeOutcomes}, unmatched ${end.view.counters.unmatchedProbeReports}, ` +
          `stale ${end.view.counters.stale}; instances: ${end.states.join(' ')}`,
      );
      assert.equal(end.view.state, 'CLOSED', 'a healthy upstream closes the shared breaker');
      assert.deepEqual(end.states, Array(8).fill('CLOSED'), 'every instance is back to CLOSED');
    });
  });
}

test('redis, 8 processes: rolling deploy on two settings trips and closes again', { timeout: 90_000 }, async (t) => {
  // The same deploy as 8 Node processes (tests/redis/worker.mjs), on real time and Redis's TIME,
  // against a fake upstream on 127.0.0.1. Recovery is polled for a generous while (about ten
  // times what it takes), not timed.
  const name = uniq('rolling-procs');
  const upstream = await startUpstream();
  t.after(() => upstream.close());
  upstream.mode = 'up';
  const w = await startWorkers(8, (i) => ({ mode: 'shared', name, redisUrl: redisUrl(), upstream: upstream.url, breaker: i % 2 ? B : A }));
  t.after(() => w.stop());
  const inspect = () => new StoreCircuitBreaker(name, { store: new RedisStore(fromNodeRedis(redis)), breaker: A }).inspect();
  await w.all({ cmd: 'run', n: 5 });
  await w.all({ cmd: 'flush' });

  await t.test('a failing upstream trips it for every process', async () => {
    upstream.mode = 'down';
    const r0 = upstream.requests;
    const outage = await w.all({ cmd: 'untilRejected' });
    const reached = upstream.requests - r0;
    const view = await inspect();
    t.diagnostic(
      `8 processes: ${reached} failing calls reached the upstream; per process: ${outage.map((o) => o.calls).join(' ')}; ` +
        `store: ${view.state}, generation ${view.generation}`,
    );
    assert.ok(reached <= A.failureThreshold + 8, `${reached} failing calls reached the upstream`);
    for (const o of outage) assert.equal(o.reason, 'open');
  });

  await t.test('a healthy upstream closes it for every process', async () => {
    upstream.mode = 'up';
    await w.all({ cmd: 'loopStart' });
    let stats;
    let view;
    const deadline = Date.now() + 15_000;
    do {
      await sleep(100);
      stats = await w.all({ cmd: 'stats' });
      view = await inspect();
    } while (!(view.state === 'CLOSED' && stats.every((s) => s.state === 'CLOSED')) && Date.now() < deadline);
    stats = await w.all({ cmd: 'loopStop' });
    t.diagnostic(
      `8 processes, healthy again: store ${view.state} (generation ${view.generation}, probes granted ` +
        `${view.counters.probesGranted}, unmatched probe reports ${view.counters.unmatchedProbeReports}); ` +
        `processes: ${stats.map((s) => s.state).join(' ')}; admitted per process: ${stats.map((s) => s.successes).join(' ')}; ` +
        `rejected per process: ${stats.map((s) => s.rejected).join(' ')}`,
    );
    assert.equal(view.state, 'CLOSED', 'a healthy upstream closes the shared breaker');
    assert.deepEqual(stats.map((s) => s.state), Array(8).fill('CLOSED'));
  });
  await w.all({ cmd: 'quit' });
});

// ----- a fleet bigger than the session table -----

// 1 100 instances (the coordinator keeps 1 024 client sessions), each of which has been serving
// healthy traffic (one batch of successes acknowledged), then each reports ONE failure.
// Today: none of the 1 100 failures counts. Every instance's second batch comes from a session the
// table has just evicted to make room for another, and batches of unknown sessions are
// acknowledged without being counted for the next 15 minutes: the breaker stays CLOSED while
// the whole fleet is failing.
// Liveness: 1 100 failures in a row (threshold 5) open the shared breaker.
for (const kind of ['memory', 'redis']) {
  test(`${kind}: 1 100 instances, one failure each, open the shared breaker`, { timeout: 120_000 }, async (t) => {
    const w = where(kind);
    const name = uniq('fleet');
    const breaker = { failureThreshold: 5, resetTimeout: 30_000 };
    const fleet = Array.from(
      { length: 1100 },
      (_, i) => new StoreCircuitBreaker(name, { store: w.store, clock: w.clock, clientId: `fleet-${i}`, breaker }),
    );
    // The fleet's calls are spread over time (on Redis, real time passes anyway).
    const spread = kind === 'memory' ? () => w.pass(2) : async () => {};
    for (const b of fleet) {
      assert.equal(await call(b, () => 'ok'), 'ok');
      await b.flush();
      await spread();
    }
    const outcomes = { ok: 0, failed: 0, rejected: 0 };
    for (const b of fleet) {
      await spread();
      outcomes[
        await call(b, () => {
          throw upstreamError();
        })
      ]++;
    }
    const view = await fleet[0].inspect();
    t.diagnostic(
      `${kind}: 1 100 instances, one failing call each: ${outcomes.failed} failed, ${outcomes.rejected} refused; store: ` +
        `${view.state}, ${view.counters.failures} failures counted (${view.stats.failures} by the core), ` +
        `${view.counters.successes} successes, ${view.clients} sessions kept, ${view.counters.batches} batches applied`,
    );
    assert.equal(view.state, 'OPEN', `${view.counters.failures} of 1 100 failures counted`);
  });
}

// ----- the store down for 30 minutes under traffic -----

// Redis unreachable for 30 minutes while 4 instances keep serving (2 % of calls fail, the local
// fallback breaker admits them), then Redis is back, then the upstream fails hard.
// Today: after a long outage every batch an instance sends is refused ("numbered too far past the
// session's last batch": it numbered a batch at each retry while the store was down), and keeps
// being refused, so nothing it reports is counted again: the upstream fails on every call and the
// breaker never trips.
// Liveness: once the store answers again, a failing upstream trips it within threshold + in
// flight and every instance sees OPEN; after the open period a healthy upstream closes it.
for (const kind of ['memory', 'redis-shifted']) {
  test(`${kind}: after the store was down 30 minutes under traffic, the breaker trips and closes again`, { timeout: 120_000 }, async (t) => {
    const w = where(kind);
    const store = flaky(w.store);
    const name = uniq('outage');
    const breaker = { failureThreshold: 5, resetTimeout: 1000, probeTimeoutMs: 5000 };
    const fleet = Array.from(
      { length: 4 },
      (_, i) => new StoreCircuitBreaker(name, { store, clock: w.clock, clientId: `outage-${i}`, breaker }),
    );
    const events = fleet.map(() => []);
    fleet.forEach((b, i) => b.onEvent((e) => events[i].push(e.type)));
    let k = 0;
    const traffic = () => {
      k++;
      if (k % 50 === 0) throw upstreamError();
      return 'ok';
    };
    // Serving, the store up: every session is known to the coordinator.
    for (let s = 0; s < 3; s++) {
      for (const b of fleet) await call(b, traffic);
      await w.pass(2000);
    }
    for (const b of fleet) await b.flush();

    store.down = true;
    const during = { ok: 0, failed: 0, rejected: 0 };
    for (let s = 0; s < (30 * 60_000) / 2000; s++) {
      await w.pass(2000);
      for (const b of fleet) for (let c = 0; c < 3; c++) during[await call(b, traffic)]++;
    }
    store.down = false;
    t.diagnostic(
      `${kind}: 30 min down: ${during.ok} ok, ${during.failed} failed, ${during.rejected} refused; ` +
        `${store.refusedCalls} store calls failed; local events: ${events.map((e) => e.filter((x) => x === 'local').length).join(' ')}`,
    );
    // The store is back; a few seconds of healthy traffic, acknowledged.
    for (let s = 0; s < 3; s++) {
      await w.pass(2000);
      for (const b of fleet) await call(b, () => 'ok');
    }
    for (const b of fleet) await b.flush();
    const back = await fleet[0].inspect();

    await t.test('once the store is back, a failing upstream trips it for every instance', async () => {
      const trip = await failUntilAllRefuse(fleet);
      const open = await fleet[0].inspect();
      t.diagnostic(
        `${kind}: store back (${back.state}, refused batches so far ${back.counters.refusedBatches}); upstream failing: ` +
          `${trip.reached} failing calls reached it, ${trip.refused}/4 instances refused; store: ${open.state}, ` +
          `${open.counters.failures} failures counted in all, refused batches ${open.counters.refusedBatches}; ` +
          `dropped per instance: ${fleet.map((b) => b.dropped).join(' ')}; instances: ${fleet.map((b) => b.state).join(' ')}`,
      );
      assert.equal(open.state, 'OPEN', 'the failing upstream trips the shared breaker');
      assert.equal(trip.refused, 4, 'every instance refuses');
      assert.ok(trip.reached <= breaker.failureThreshold + fleet.length, `${trip.reached} failing calls reached the upstream`);
      assert.deepEqual(fleet.map((b) => b.state), Array(4).fill('OPEN'));
    });

    await t.test('after the open period, a healthy upstream closes it for every instance', async () => {
      await w.pass(breaker.resetTimeout + 50);
      const end = await healthyUntilClosed(fleet, { rounds: 20, stepMs: 250, pass: w.pass });
      t.diagnostic(`${kind}: healthy again: store ${end.view.state}, ${end.view.stats.opened} openings in all; instances: ${end.states.join(' ')}`);
      assert.equal(end.view.state, 'CLOSED');
      assert.ok(end.view.stats.opened >= 1, 'it opened on the way');
      assert.deepEqual(end.states, Array(4).fill('CLOSED'));
    });
  });
}

// ----- a client clock stepped back 10 minutes -----

// An instance's clock is corrected by NTP: 10 minutes back, while the store's clock goes on.
// Today: the instance keeps the OPEN it learned until its own clock reaches the old end of the
// open period again: it rejects every call for 601 s, although the store's open period ended
// after 1 s and the upstream is healthy.
// Liveness: within a few seconds of store time (the open period, a lease, some slack) after the
// upstream is healthy, the instance admits calls again and the shared breaker closes.
for (const kind of ['memory', 'redis']) {
  test(`${kind}: an instance whose clock steps back 10 minutes admits again once the store's open period is over`, async (t) => {
    const w = where(kind);
    const breaker = { failureThreshold: 3, resetTimeout: 1000, probeTimeoutMs: 5000 };
    const leaseMs = 1000;
    let offset = 0;
    const b = new StoreCircuitBreaker(uniq('ntp'), { store: w.store, clock: () => w.clock() + offset, clientId: 'ntp', breaker, leaseMs });
    for (let i = 0; i < breaker.failureThreshold; i++) {
      assert.equal(
        await call(b, () => {
          throw upstreamError();
        }),
        'failed',
      );
    }
    assert.equal(await call(b, () => 'ok'), 'rejected');
    assert.equal(b.state, 'OPEN');
    offset = -600_000;

    const stepMs = 100;
    const budget = breaker.resetTimeout + leaseMs + 3000;
    let firstAdmitAfter;
    let rejected = 0;
    let lastRetryAfter;
    let view;
    for (let waited = 0; waited <= budget; waited += stepMs) {
      const r = await b.execute(() => 'ok').then(
        () => 'ok',
        (e) => e,
      );
      if (r === 'ok') firstAdmitAfter ??= waited;
      else if (isCircuitOpenError(r)) {
        rejected++;
        lastRetryAfter = r.retryAfterMs;
      } else throw r;
      if (firstAdmitAfter !== undefined) {
        view = await b.inspect();
        if (view.state === 'CLOSED' && b.state === 'CLOSED') break;
      }
      await w.pass(stepMs);
    }
    view = await b.inspect();
    t.diagnostic(
      `${kind}: clock stepped back 600 s: first call admitted ` +
        (firstAdmitAfter === undefined ? `never within ${budget} ms` : `after ${firstAdmitAfter} ms`) +
        ` of store time; ${rejected} calls rejected (last retry-after ${lastRetryAfter ?? '-'} ms); ` +
        `store: ${view.state}; instance: ${b.state}`,
    );
    assert.notEqual(firstAdmitAfter, undefined, `no call admitted within ${budget} ms of store time`);
    assert.equal(view.state, 'CLOSED', 'the shared breaker closes');
    assert.equal(b.state, 'CLOSED');
  });
}

// ----- coordinator requests while one instance holds the only probe -----

// One instance holds the only half-open probe and never reports for 30 s of store time (its
// function was killed; probeTimeoutMs is 60 s). Four other instances call 100 times each meanwhile.
// Today: every one of their calls is one more coordinator request (a read, on Redis an EVAL),
// 100 per instance, each answered "half-open-full" with a retry-after the client does not keep.
// Liveness (of the store, under load): each refused instance asks again only when its lease or the
// retry-after it was given runs out: at most 30 s / leaseMs + 2 requests, not one per call.
for (const kind of ['memory', 'redis-shifted']) {
  test(`${kind}: while one instance holds the only probe, the others do not ask the store on every call`, async (t) => {
    const w = where(kind);
    const breaker = { failureThreshold: 1, resetTimeout: 1000, probeTimeoutMs: 60_000 };
    const leaseMs = 5000;
    const name = uniq('probe-held');
    const [holder, ...others] = Array.from(
      { length: 5 },
      (_, i) => new StoreCircuitBreaker(name, { store: w.store, clock: w.clock, clientId: `held-${i}`, breaker, leaseMs }),
    );
    // The others have no lease yet: their first call asks, and learns HALF_OPEN.
    assert.equal(
      await call(holder, () => {
        throw upstreamError();
      }),
      'failed',
    );
    await w.pass(breaker.resetTimeout);
    // isHealthy() answers from what the holder knows: the probe is fetched in the background
    // by the first call after the open period, for the next one.
    if (!holder.isHealthy()) await holder.flush();
    assert.equal(holder.isHealthy(), true, 'the holder takes the probe (and never reports)');

    const before = others.map((b) => ({ requests: b.coordinatorRequests, storeCalls: b.storeCalls }));
    const reasons = {};
    const stepMs = 300;
    for (let s = 0; s < 100; s++) {
      await w.pass(stepMs);
      for (const b of others) {
        const e = await b.execute(() => 'ok').then(
          () => 'admitted',
          (e) => (isCircuitOpenError(e) ? e.reason : 'failed'),
        );
        reasons[e] = (reasons[e] ?? 0) + 1;
      }
    }
    const requests = others.map((b, i) => b.coordinatorRequests - before[i].requests);
    const storeCalls = others.map((b, i) => b.storeCalls - before[i].storeCalls);
    const view = await holder.inspect();
    t.diagnostic(
      `${kind}: 100 calls per instance over ${(100 * stepMs) / 1000} s while the probe is held: coordinator requests per instance ` +
        `${requests.join(' ')}, store calls per instance ${storeCalls.join(' ')}; outcomes ${JSON.stringify(reasons)}; ` +
        `store: ${view.state}, probes in flight ${view.probesInFlight}`,
    );
    assert.deepEqual(reasons, { 'half-open-full': 400 }, 'nobody else reaches the upstream while the probe is held');
    const bound = Math.ceil((100 * stepMs) / leaseMs) + 2;
    for (const [i, n] of requests.entries()) {
      assert.ok(n <= bound, `instance ${i + 1}: ${n} coordinator requests for 100 calls (bound ${bound})`);
    }
  });
}
