// 8 separate Node processes sharing one breaker through a real redis-server, against a fake
// upstream on 127.0.0.1 that goes down and recovers. No timing assertions: every wait polls for
// a condition, and node:test's timeout bounds the whole.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import { StoreCircuitBreaker, RedisStore, fromNodeRedis } from 'breakwater/store';
import { redisUrl, startRedis, startUpstream, startWorkers, until, sleep } from './helpers.mjs';

const N = 8;
const BREAKER = { failureThreshold: 5, resetTimeout: 1000 };
const LEASE_MS = 5000;
const sum = (xs, f) => xs.reduce((a, x) => a + f(x), 0);

let upstream;
let redis;
before(async () => {
  upstream = await startUpstream();
  redis = createClient({ url: redisUrl() });
  redis.on('error', () => {});
  await redis.connect();
});
after(async () => {
  await redis?.close?.();
  await upstream?.close();
});

/** Reads the shared record as the processes see it (same core options: the snapshot must fit). */
const inspect = async (name, breaker = BREAKER, client = redis) => {
  // The settings as the processes make them (tests/redis/worker.mjs): a throttle through throttle().
  const { throttle } = await import('breakwater/adaptive');
  const settings = breaker.adaptiveThrottle ? { ...breaker, adaptiveThrottle: throttle(breaker.adaptiveThrottle) } : breaker;
  return new StoreCircuitBreaker(name, { store: new RedisStore(fromNodeRedis(client)), breaker: settings }).inspect();
};

test('8 processes: everyone opens, exactly one probe cluster-wide, everyone closes, counts exact', { timeout: 120_000 }, async (t) => {
  const name = `cluster-${process.pid}`;
  upstream.mode = 'up';
  const w = await startWorkers(N, { mode: 'shared', name, redisUrl: redisUrl(), upstream: upstream.url, breaker: BREAKER, leaseMs: LEASE_MS });
  t.after(() => w.stop());

  // Healthy: what the store costs. The first call of each process asks for a lease; then the
  // lease admits locally and the successes wait in a batch.
  const started = Date.now();
  const first = await w.all({ cmd: 'run', n: 100 });
  assert.deepEqual(first.map((r) => r.successes), Array(N).fill(100));
  const steady = await w.all({ cmd: 'run', n: 500 });
  assert.deepEqual(steady.map((r) => r.successes), Array(N).fill(500));
  const perHundredFirst = sum(first, (r) => r.storeCalls) / N;
  const perHundredSteady = (sum(steady, (r) => r.storeCalls) / N / 500) * 100;
  const rate = (N * 600) / ((Date.now() - started) / 1000);
  t.diagnostic(
    `store round trips per 100 healthy calls: ${perHundredFirst} for a process's first 100 (the lease), ` +
      `${perHundredSteady.toFixed(2)} for the next 500 (renewals every ${LEASE_MS} ms carrying the batch; ` +
      `${Math.round(rate)} calls/s over ${N} processes)`,
  );
  // A lease, then renewals: a few round trips, against one per call without the lease.
  assert.ok(perHundredFirst < 10, `first 100 calls cost ${perHundredFirst} round trips`);
  assert.ok(perHundredSteady < 10, `500 calls cost ${perHundredSteady} round trips per 100`);
  await w.all({ cmd: 'flush' });
  let view = await inspect(name);
  assert.equal(view.state, 'CLOSED');
  assert.equal(view.counters.successes, N * 600);

  // Outage: every process calls until its breaker refuses. Shared: the opening is seen by all.
  upstream.mode = 'down';
  const r0 = upstream.requests;
  const outage = await w.all({ cmd: 'untilRejected' });
  const spentShared = upstream.requests - r0;
  for (const o of outage) assert.equal(o.reason, 'open');
  view = await inspect(name);
  assert.equal(view.state, 'OPEN');
  t.diagnostic(`upstream calls spent before all ${N} processes stop (shared breaker): ${spentShared}; per process: ${outage.map((o) => o.calls).join(' ')}`);
  assert.ok(spentShared < N * BREAKER.failureThreshold, `shared breaker spent ${spentShared}`);
  assert.ok(spentShared >= BREAKER.failureThreshold);

  // Recovery: the upstream holds its answers. Every process keeps calling; only one call may reach
  // the upstream (the probe) while everybody else is told the half-open slot is taken.
  upstream.mode = 'hold';
  const r1 = upstream.requests;
  const before1 = await w.all({ cmd: 'stats' });
  await w.all({ cmd: 'loopStart' });
  await until(async () => {
    if (upstream.requests - r1 < 1) return false;
    // Everyone but the process holding the probe has been refused a few times.
    const now = await w.all({ cmd: 'stats' });
    const refused = now.filter((s, i) => (s.reasons['half-open-full'] ?? 0) - (before1[i].reasons['half-open-full'] ?? 0) >= 3);
    return refused.length >= N - 1;
  });
  assert.equal(upstream.requests - r1, 1, 'exactly one half-open probe reached the upstream');
  view = await inspect(name);
  assert.equal(view.state, 'HALF_OPEN');
  assert.equal(view.probesInFlight, 1);
  assert.equal(view.counters.probesGranted, 1);
  upstream.mode = 'up';
  upstream.release();
  await until(async () => {
    const now = await w.all({ cmd: 'stats' });
    return now.every((s) => s.state === 'CLOSED');
  });
  const end = await w.all({ cmd: 'loopStop' });
  const flushed = await w.all({ cmd: 'flush' });
  assert.deepEqual(flushed.map((s) => s.unacknowledged), Array(N).fill(0));

  view = await inspect(name);
  assert.equal(view.state, 'CLOSED');
  assert.equal(view.counters.probesGranted, 1, 'one probe in the whole incident');
  // Counts exact: every call any process made is in the record once (applied, or stale when it
  // came back after the state had moved: counted in the statistics, and as stale), and what was
  // applied is what the core counted.
  const made = sum(flushed, (s) => s.successes + s.failures);
  const c = view.counters;
  assert.equal(c.successes + c.failures + c.ignored, made);
  assert.equal(view.stats.successes, c.successes);
  assert.equal(view.stats.failures, c.failures);
  assert.equal(view.stats.opened, 1);
  assert.equal(sum(flushed, (s) => s.failures), spentShared);
  // Everyone saw it open and close again.
  for (let i = 0; i < N; i++) {
    const states = w.events.filter((e) => e.worker === i && e.type === 'state').map((e) => e.to);
    assert.ok(states.includes('OPEN'), `worker ${i} saw OPEN: ${states}`);
    assert.equal(states.at(-1), 'CLOSED', `worker ${i} ended CLOSED: ${states}`);
  }
  assert.ok(end.every((s) => s.rejected > 0));
  t.diagnostic(`record: ${JSON.stringify(c)}`);

  // The same outage with a breaker per process: each spends its own threshold.
  const local = await startWorkers(N, { mode: 'local', name, upstream: upstream.url, breaker: BREAKER });
  t.after(() => local.stop());
  upstream.mode = 'down';
  const r2 = upstream.requests;
  const alone = await local.all({ cmd: 'untilRejected' });
  const spentLocal = upstream.requests - r2;
  t.diagnostic(`upstream calls spent before all ${N} processes stop: shared ${spentShared}, per-process breakers ${spentLocal}`);
  assert.equal(spentLocal, N * BREAKER.failureThreshold);
  for (const o of alone) assert.equal(o.reason, 'open');
  upstream.mode = 'up';
});

test('CAS conflict storm: 8 processes reporting at once lose nothing', { timeout: 120_000 }, async (t) => {
  const name = `storm-${process.pid}`;
  const breaker = { failureThreshold: 1_000_000 };
  const w = await startWorkers(N, { mode: 'shared', name, redisUrl: redisUrl(), upstream: upstream.url, breaker, maxBatch: 4 });
  t.after(() => w.stop());
  // 20 rounds: every process makes 15 calls on 3 lanes (every third fails and is reported at
  // once, the others in batches of 4), then all 8 flush at the same moment.
  const rounds = 20;
  let flushed;
  for (let r = 0; r < rounds; r++) {
    await w.all({ cmd: 'storm', n: 15, failEvery: 3, lanes: 3 });
    flushed = await w.all({ cmd: 'flush' });
  }
  assert.deepEqual(flushed.map((s) => s.unacknowledged), Array(N).fill(0));
  for (const s of flushed) {
    assert.equal(s.successes, rounds * 10);
    assert.equal(s.failures, rounds * 5);
    assert.equal(s.rejected, 0);
  }
  const view = await inspect(name, breaker);
  assert.equal(view.state, 'CLOSED');
  assert.equal(view.counters.successes, N * rounds * 10);
  assert.equal(view.counters.failures, N * rounds * 5);
  assert.equal(view.counters.stale, 0);
  assert.equal(view.stats.successes, N * rounds * 10);
  assert.equal(view.stats.failures, N * rounds * 5);
  const conflicts = sum(flushed, (s) => s.casConflicts);
  const fellBack = w.events.filter((e) => e.type === 'local').length;
  t.diagnostic(`storm: ${view.counters.batches} batches, ${conflicts} compare-and-set conflicts retried, ${view.counters.duplicateBatches} duplicate batches, ${fellBack} fallbacks`);
});

test('Redis killed mid-run: every process keeps serving on its local breaker, then resynchronises', { timeout: 120_000 }, async (t) => {
  const own = await startRedis({ aof: true });
  t.after(() => own.kill());
  const name = `kill-${process.pid}`;
  upstream.mode = 'up';
  const w = await startWorkers(N, {
    mode: 'shared',
    name,
    redisUrl: own.url,
    upstream: upstream.url,
    breaker: BREAKER,
    leaseMs: 100,
    maxBatch: 10,
    storeTimeoutMs: 200,
    retryUnreachableMs: 100,
  });
  t.after(() => w.stop());
  await w.all({ cmd: 'loopStart' });
  await until(async () => (await w.all({ cmd: 'stats' })).every((s) => s.successes >= 20 && s.storeCalls > 0));

  await own.kill('SIGKILL');
  let seen = '';
  await until(async () => {
    const s = await w.all({ cmd: 'stats' });
    const fell = new Set(w.events.filter((e) => e.type === 'local').map((e) => e.worker));
    seen = `fell back: ${[...fell].sort().join(' ')}; served in fallback: ${s.map((x) => x.servedInFallback).join(' ')}`;
    return fell.size === N && s.every((x) => x.servedInFallback >= 20);
  }, () => `every process on its local breaker (${seen})`);
  const during = await w.all({ cmd: 'stats' });
  assert.ok(during.every((s) => s.decidingLocally || s.servedInFallback >= 20));

  const again = await startRedis({ port: own.port, dir: own.dir, aof: true });
  t.after(() => again.kill());
  const mark = w.events.length;
  const atRestart = await w.all({ cmd: 'stats' });
  await until(async () => {
    const back = new Set(w.events.slice(mark).filter((e) => e.type === 'recovered').map((e) => e.worker));
    const s = await w.all({ cmd: 'stats' });
    seen = `recovered: ${[...back].sort().join(' ')}; deciding locally: ${s.map((x) => +x.decidingLocally).join(' ')}; successes since: ${s.map((x, i) => x.successes - atRestart[i].successes).join(' ')}; events since: ${w.events.slice(mark).map((e) => `${e.worker}:${e.type}`).slice(-24).join(' ')}`;
    return back.size === N && s.every((x, i) => !x.decidingLocally && x.successes >= atRestart[i].successes + 20);
  }, () => `every process back on the shared breaker (${seen})`);
  const end = await w.all({ cmd: 'loopStop' });
  const flushed = await w.all({ cmd: 'flush' });
  assert.deepEqual(flushed.map((s) => s.unacknowledged), Array(N).fill(0));
  // Served throughout: nothing refused, nothing failed.
  for (const s of end) {
    assert.equal(s.rejected, 0);
    assert.equal(s.failures, 0);
  }
  // Resynchronised: with an append-only file fsynced on every write, the record survived the
  // kill; every outcome is in it exactly once (the batches sent again were recognised).
  const client = createClient({ url: again.url });
  client.on('error', () => {});
  await client.connect();
  const view = await inspect(name, BREAKER, client);
  await client.close();
  assert.equal(view.state, 'CLOSED');
  assert.equal(view.counters.successes, sum(flushed, (s) => s.successes));
  assert.equal(view.counters.stale, 0);
  t.diagnostic(
    `kill: ${sum(during, (s) => s.servedInFallback)} calls served on local breakers while Redis was down; ` +
      `${view.counters.successes} outcomes in the record, ${view.counters.duplicateBatches} batches sent again and recognised`,
  );
});

test('8 processes, adaptiveThrottle: the fleet sheds a degraded upstream together, then stops by itself', { timeout: 120_000 }, async (t) => {
  // A failure-rate rule that does not trip (100 % of 1 000 calls), so that only the throttle acts,
  // over a 3 s window. Each process alone sends fewer calls per window than the throttle's
  // minimum of 20; the coordinator in Redis counts them all and every lease carries the fleet's
  // probability.
  const name = `throttle-${process.pid}`;
  const breaker = {
    failureRate: { threshold: 100, minimumCalls: 1000, windowCalls: 1000 },
    // throttle({ … }) of breakwater/adaptive, made in each process (tests/redis/worker.mjs).
    adaptiveThrottle: { windowMs: 3_000, minimumRequests: 20 },
  };
  const w = await startWorkers(N, { mode: 'shared', name, redisUrl: redisUrl(), upstream: upstream.url, breaker, leaseMs: 200 });
  t.after(() => w.stop());
  upstream.mode = 'degraded';
  const before = await w.all({ cmd: 'stats' });
  // 8 calls per process, 60 ms apart: ~64 calls per window fleet-wide, 8 per process.
  for (let i = 0; i < 15; i++) {
    await w.all({ cmd: 'run', n: 1 });
    await sleep(60);
  }
  const during = await w.all({ cmd: 'stats' });
  const shed = during.map((s, i) => (s.reasons.throttled ?? 0) - (before[i].reasons.throttled ?? 0));
  t.diagnostic(`shed per process while 80 % of calls failed: ${shed.join(' ')} of 15 each`);
  assert.ok(shed.reduce((a, b) => a + b, 0) > 15, `the fleet shed ${shed.join(' ')}`);
  assert.ok(shed.filter((s) => s > 0).length >= N / 2, `processes that shed: ${shed.join(' ')}`);
  // Liveness: the upstream recovers; within a few windows no process sheds any more.
  upstream.mode = 'up';
  await until(async () => {
    const a = await w.all({ cmd: 'stats' });
    await w.all({ cmd: 'run', n: 5 });
    const b = await w.all({ cmd: 'stats' });
    return b.every((s, i) => (s.reasons.throttled ?? 0) === (a[i].reasons.throttled ?? 0));
  }, 'no process sheds after the recovery', 100);
  const view = await inspect(name, breaker);
  assert.equal(view.state, 'CLOSED');
});
