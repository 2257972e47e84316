// The ways the store once let an outage through, each tried against the packed package: a probe
// that never reports (a serverless function killed at its time-out), a probe's outcome settling
// another probe, an instance whose clock is 10 minutes fast, a rolling deploy with two settings
// side by side, an isolation outliving the key's expiry, a failing Response counted as a success.
// Most run on MemoryStore with an injected clock (the store's clock); the lost probe and the
// rolling deploy also run on the real redis-server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, MemoryStore, fromNodeRedis } from 'breakwater/store';
import { namer, useRedis, ok, failsWith } from './helpers.mjs';

let redis;
const uniq = namer();
useRedis((c) => (redis = c));

const boom = failsWith(529);
const BREAKER = { failureThreshold: 2, resetTimeout: 1_000, probeTimeoutMs: 5_000 };

/** Five instances of one app sharing `store`, on `clock` (each may be off by `skew[i]`). */
function instances(name, store, clock, { skew = [0, 0, 0, 0, 0], breaker = BREAKER } = {}) {
  return skew.map(
    (s, i) => new StoreCircuitBreaker(name, { store, clock: () => clock() + s, clientId: `i${i}`, breaker, leaseMs: 100 }),
  );
}

/**
 * Seed 000's isHealthy() answers from what the instance knows: in HALF_OPEN the probe is fetched
 * in the background for the next call, so the first answer after the open period is false.
 */
async function healthy(b) {
  if (b.isHealthy()) return true;
  await b.flush();
  return b.isHealthy();
}

async function trip(b) {
  for (let i = 0; i < 2; i++) await assert.rejects(b.execute(boom));
}

for (const where of ['memory', 'redis']) {
  test(`${where}: a probe that never reports lets nobody else through until its lease ends, then exactly one`, async () => {
    // In memory the store's clock is injected; on Redis it is Redis's own, so real time passes.
    let now = 1_800_000_000_000;
    const memory = where === 'memory';
    const clock = memory ? () => now : Date.now;
    const store = memory ? new MemoryStore(clock) : new RedisStore(fromNodeRedis(redis));
    const wait = memory ? async (ms) => void (now += ms) : (ms) => new Promise((r) => setTimeout(r, ms));
    const breaker = memory ? BREAKER : { failureThreshold: 2, resetTimeout: 200, probeTimeoutMs: 400 };
    const [killed, ...others] = instances(uniq('lost-probe'), store, clock, { breaker });
    await trip(killed);
    await wait(breaker.resetTimeout + 20);
    // The function holding the probe is killed: it never reports.
    assert.equal(await healthy(killed), true);
    const upstream = { calls: 0 };
    const reach = async () => {
      upstream.calls++;
      return 'ok';
    };
    for (const b of others) {
      const e = await b.execute(reach).catch((e) => e);
      assert.ok(isCircuitOpenError(e), 'rejected while the probe holds its lease');
      assert.equal(e.reason, 'half-open-full');
    }
    assert.equal(upstream.calls, 0);
    await wait(breaker.probeTimeoutMs);
    // The lease ran out: exactly one instance probes, the others are still refused while it runs.
    let release;
    const held = new Promise((r) => (release = r));
    const slow = async () => {
      upstream.calls++;
      await held;
      return 'ok';
    };
    const results = others.map((b) => b.execute(slow).then(() => 'ok', (e) => e.reason));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(upstream.calls, 1, 'one probe cluster-wide');
    release();
    const outcomes = await Promise.all(results);
    assert.deepEqual(outcomes.filter((r) => r !== 'ok'), Array(others.length - 1).fill('half-open-full'));
    const view = await others[0].inspect();
    assert.equal(view.state, 'CLOSED');
    assert.equal(view.counters.probesGranted, 2);
  });
}

test('a probe reports for itself: with two probes, a failed one is not lost when the other succeeds', async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const store = new MemoryStore(clock);
  const breaker = { ...BREAKER, halfOpenMaxProbes: 2, halfOpenSuccessThreshold: 2 };
  const [a, b, c] = instances(uniq('two-probes'), store, clock, { breaker });
  // Each instance has a lease (before its first, an instance's own breaker decides).
  await Promise.all([a, b, c].map((x) => x.flush()));
  await trip(a);
  now += 1_000;
  // Each learns HALF_OPEN (a lapsed lease is otherwise answered by the instance's own breaker
  // until the renewal is back).
  await Promise.all([a, b, c].map((x) => x.flush()));
  assert.equal(await healthy(a), true);
  assert.equal(await healthy(b), true);
  assert.equal(await healthy(c), false, 'two probe slots, both taken');
  b.recordFailure(Object.assign(new Error('529'), { status: 529 }));
  await b.flush();
  a.recordSuccess();
  await a.flush();
  const view = await c.inspect();
  assert.equal(view.state, 'OPEN', "b's failed probe reopened the breaker; a's success does not close it");
  assert.equal(view.counters.unmatchedProbeReports, 1);
});

test('an instance whose clock is 10 minutes fast does not keep the others out', async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const store = new MemoryStore(clock);
  const [fast, normal] = instances(uniq('skew'), store, clock, { skew: [600_000, 0] });
  await trip(fast);
  now += 1_000;
  // The store's clock says the open period is over, whatever the fast instance's says.
  assert.equal(await normal.execute(ok), 'ok');
  assert.equal((await normal.inspect()).state, 'CLOSED');
});

test('rolling deploy: old and new settings side by side lose nothing, and the new ones take over on reset', async () => {
  for (const where of ['memory', 'redis']) {
    let now = 1_800_000_000_000;
    const clock = () => now;
    const store = where === 'memory' ? new MemoryStore(clock) : new RedisStore(fromNodeRedis(redis));
    const name = uniq('deploy');
    const old = new StoreCircuitBreaker(name, { store, clock, clientId: 'old', breaker: { failureThreshold: 3, resetTimeout: 60_000 } });
    const neu = new StoreCircuitBreaker(name, { store, clock, clientId: 'new', breaker: { failureThreshold: 10, resetTimeout: 5_000 } });
    for (let i = 0; i < 3; i++) await assert.rejects(old.execute(boom));
    let v = await neu.inspect();
    assert.equal(v.state, 'OPEN', `${where}: the new instance does not wipe the trip`);
    assert.equal(v.optionsMismatch?.resolution, 'adopted');
    await assert.rejects(neu.execute(ok), (e) => isCircuitOpenError(e));
    // Both keep reporting; the record keeps one client table.
    v = await old.inspect();
    assert.equal(v.counters.failures, 3);
    assert.equal(v.clients, 1);
    v = await neu.reset();
    assert.equal(v.state, 'CLOSED');
    assert.equal(v.optionsMismatch, undefined);
    assert.notEqual(v.options, (await old.inspect()).options === v.options ? -1 : v.options);
    for (let i = 0; i < 3; i++) await assert.rejects(neu.execute(boom));
    assert.equal((await old.inspect()).state, 'CLOSED', `${where}: 3 failures no longer trip under the new settings`);
  }
});

test('an isolation never expires with the key; a CLOSED record does', async () => {
  const store = new RedisStore(fromNodeRedis(redis));
  const name = uniq('isolated');
  const b = new StoreCircuitBreaker(name, { store, keyTtlMs: 900_000 });
  await b.execute(boom).catch(() => {});
  assert.ok((await redis.pTTL(`breakwater:${name}`)) > 0, 'CLOSED: expires');
  await b.isolate();
  assert.equal(await redis.pTTL(`breakwater:${name}`), -1, 'isolated: no expiry');
  await b.reset();
  assert.ok((await redis.pTTL(`breakwater:${name}`)) > 0);
});

test('a failing Response counts as a failure, a 400 is ignored, as with CircuitBreaker.execute', async () => {
  let now = 1_800_000_000_000;
  const store = new MemoryStore(() => now);
  const b = new StoreCircuitBreaker(uniq('response'), { store, clock: () => now, breaker: BREAKER });
  const reply = (status) => () => new Response('x', { status });
  await b.execute(reply(400));
  await b.execute(reply(400));
  assert.equal((await b.inspect()).state, 'CLOSED');
  await b.execute(reply(503));
  await b.execute(reply(503));
  const v = await b.inspect();
  assert.equal(v.state, 'OPEN');
  assert.deepEqual([v.stats.failures, v.stats.ignored], [2, 2]);
});

test('options the shared mode cannot honour are refused with the option named', () => {
  const store = new MemoryStore();
  assert.throws(
    () => new StoreCircuitBreaker('slow', { store, breaker: { slowCallRate: { threshold: 50, slowCallMs: 1000 } } }),
    /option "slowCallRate" in StoreCircuitBreaker options\.breaker is not supported here/,
  );
  assert.throws(
    () => new StoreCircuitBreaker('long', { store, breaker: { resetTimeout: 2 ** 52 } }),
    /invalid option "resetTimeout" in StoreCircuitBreaker options\.breaker: 4503599627370496 \(a shared breaker accepts at most/,
  );
});

test('a rollback: a record written by a newer version is left alone (instances serve on their local breakers) until reset()', async () => {
  // Once, the older version replaced a newer version's record with a fresh CLOSED one at its
  // first step, so rolling back a deploy during an outage ended the outage for everyone.
  let now = 1_800_000_000_000;
  const store = new MemoryStore(() => now);
  const name = uniq('rollback');
  const key = `breakwater:${name}`;
  const opener = new StoreCircuitBreaker(name, { store, clock: () => now, breaker: BREAKER });
  await trip(opener);
  const ours = await store.read(key);
  const record = JSON.parse(ours.value);
  assert.equal(record.snapshot.state, 'OPEN');
  // What a newer version would write: another snapshot version.
  record.snapshot.version = 2;
  const newer = JSON.stringify(record);
  assert.equal((await store.compareAndSet(key, ours.version, ours.version === 7 ? 8 : 7, newer, 0)).ok, true);

  const events = [];
  const old = new StoreCircuitBreaker(name, { store, clock: () => now, breaker: BREAKER, clientId: 'old' });
  old.onEvent((e) => events.push(e));
  assert.equal(await old.execute(ok), 'ok', 'served by the local breaker');
  assert.equal(old.decidingLocally, true);
  const fallback = events.find((e) => e.type === 'local');
  assert.match(fallback?.reason ?? '', /newer version/);
  assert.equal((await store.read(key)).value, newer, 'the newer record is untouched');
  const view = await old.inspect();
  assert.match(view.restoreError ?? '', /newer version/);

  // The operator decides: reset() replaces it, and the instances are back on the shared breaker.
  await old.reset();
  assert.notEqual((await store.read(key)).value, newer);
  now += 1_100;
  assert.equal(await old.execute(ok), 'ok');
  assert.equal(old.decidingLocally, false);
  assert.equal(old.state, 'CLOSED');
});
