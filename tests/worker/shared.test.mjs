// Eight app Workers (separate isolates: four Rust, four JavaScript) share one breaker held by the
// Rust BreakerObject, against a fake upstream that goes down and comes back.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet, call, drive, sleep } from './harness.mjs';

const OPEN_MS = 1200;
const LEASE_MS = 300;
const BREAKERS = {
  upstream: {
    lease_ms: LEASE_MS,
    breaker: {
      trip: { kind: 'consecutive_failures', threshold: 5 },
      open_duration_ms: OPEN_MS,
      half_open_max_probes: 1,
      probe_timeout_ms: 5000,
    },
  },
};
let fleet;
let upstream;
let apps;
const state = () => fleet.state();
const flushAll = () => fleet.flushAll();

before(async () => {
  fleet = await startFleet(BREAKERS);
  ({ upstream, apps } = fleet);
});

after(() => fleet?.close());

test('healthy traffic is admitted locally and every outcome reaches the object once', async () => {
  const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.ok >= 40 });
  let total = 0;
  for (const [name, t] of tallies) {
    assert.ok(t.ok >= 40 && t.failed + t.rejected === 0, `${name}: ${JSON.stringify(t)}`);
    total += t.ok;
  }
  await flushAll();
  const s = await state();
  assert.equal(s.lease.state, 'CLOSED');
  assert.equal(s.stats.successes, upstream.state.count);
  assert.equal(s.stats.successes, total);
  assert.equal(s.stats.failures, 0);
});

test('an outage opens the breaker for every isolate', async () => {
  upstream.state.mode = 'down';
  const before = upstream.state.count;
  const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.rejected > 0 });
  const spent = upstream.state.count - before;
  for (const [name, t] of tallies) {
    assert.ok(t.rejected > 0, `${name} never saw the circuit open`);
    assert.equal(t.fallback, 0, `${name} fell back`);
  }
  const s = await state();
  assert.equal(s.lease.state, 'OPEN');
  assert.equal(s.stats.opened, 1);
  // Five failures trip it; each isolate learns at the latest from the answer to its own first
  // failure report (two calls in flight per isolate).
  assert.ok(spent >= 5 && spent <= 5 + 8 * 2, `upstream calls during the outage: ${spent}`);
  console.log(`# outage (shared object, 8 isolates x 2 loops): ${spent} upstream calls before all stopped`);
  for (const [name, f] of apps) {
    const { body } = await call(f, '/app/stats', { method: 'GET' });
    assert.equal(body.state, 'OPEN', name);
  }
});

test('HALF_OPEN lets exactly one probe reach the upstream per round, cluster-wide', async () => {
  upstream.state.delayMs = 200;
  const u0 = upstream.state.count;
  const c0 = (await state()).counters;
  const o0 = (await state()).stats.opened;
  await drive(apps, { concurrency: 2, deadlineMs: 2 * OPEN_MS + 600 });
  await sleep(300); // the last probe's answer
  const s = await state();
  const rounds = s.counters.half_open_entered - c0.half_open_entered;
  assert.ok(rounds >= 1, 'no HALF_OPEN round happened');
  assert.equal(upstream.state.count - u0, rounds, 'one upstream call per HALF_OPEN round');
  assert.equal(s.counters.probes_granted - c0.probes_granted, rounds);
  assert.equal(s.stats.opened - o0, rounds, 'every failed probe reopened the breaker');
  assert.equal(s.lease.state === 'CLOSED', false);
});

test('after recovery one probe closes the breaker and every isolate closes', async () => {
  upstream.state.mode = 'up';
  upstream.state.delayMs = 300;
  const firstIndex = upstream.state.arrivals.length;
  const c0 = (await state()).counters;
  const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.ok > 0, deadlineMs: 3 * OPEN_MS + 3000 });
  for (const [name, t] of tallies) assert.ok(t.ok > 0, `${name} never closed: ${JSON.stringify(t)}`);
  const probe = upstream.state.arrivals[firstIndex];
  assert.ok(probe, 'no probe reached the upstream');
  const during = upstream.state.arrivals.slice(firstIndex).filter((a) => a.at >= probe.at && a.at < probe.done);
  assert.equal(during.length, 1, 'only the probe reached the upstream while it was in flight');
  const s = await state();
  assert.equal(s.lease.state, 'CLOSED');
  assert.equal(s.counters.closed - c0.closed, 1);
  assert.equal(s.counters.probes_granted - c0.probes_granted, s.counters.half_open_entered - c0.half_open_entered);
  for (const [name, f] of apps) {
    const { body } = await call(f, '/app/stats', { method: 'GET' });
    assert.equal(body.state, 'CLOSED', name);
  }
});

test('the counts in the object are exact: nothing lost, nothing counted twice', async () => {
  upstream.state.delayMs = 0;
  await flushAll();
  const stats = await Promise.all(apps.map(([, f]) => call(f, '/app/stats', { method: 'GET' })));
  for (const { body } of stats) assert.equal(body.unacknowledged, 0);
  const s = await state();
  const outcomes = s.stats.successes + s.stats.failures + s.stats.ignored;
  assert.equal(outcomes, upstream.state.count, JSON.stringify(s.stats));
  assert.equal(s.counters.counted_outcomes + s.counters.probe_outcomes, upstream.state.count);
});

test('a trip is seen by an idle isolate within one lease period', async () => {
  // Everyone holds a fresh CLOSED lease; one isolate alone meets the outage.
  await Promise.all(apps.map(([, f]) => call(f)));
  upstream.state.mode = 'down';
  const [, first] = apps[0];
  let r;
  let n = 0;
  do r = (await call(first)).body;
  while (r.result !== 'rejected' && ++n < 20);
  assert.equal(r.result, 'rejected', JSON.stringify(r));
  const before = upstream.state.count;
  await sleep(LEASE_MS + 50);
  for (const [name, f] of apps.slice(1)) {
    const { body } = await call(f);
    assert.equal(body.result, 'rejected', `${name} still admitted after one lease period`);
  }
  assert.equal(upstream.state.count, before, 'no upstream call after the lease period');
  upstream.state.mode = 'up';
});

test('a Rust isolate that abandons its probe call gives the probe back to the fleet at once', async () => {
  // OPEN since the test before; the upstream is back, but slow.
  assert.equal((await state()).lease.state, 'OPEN');
  upstream.state.mode = 'up';
  upstream.state.delayMs = 3000;
  await sleep(OPEN_MS + LEASE_MS);
  const [[, rust], [, other]] = apps;
  const granted = (await state()).counters.probes_granted;
  // The app's own time-out drops the call (its probe) after 100 ms.
  const { body } = await call(rust, '/app/call?abandon_ms=100');
  assert.equal(body.result, 'abandoned', JSON.stringify(body));
  assert.equal((await state()).counters.probes_granted - granted, 1, 'the abandoned call held the probe');
  await sleep(100);
  // Kept, the probe would refuse every call until probe_timeout_ms (5 s).
  assert.equal((await state()).probes_in_flight, 0, 'the probe was given back');
  upstream.state.delayMs = 0;
  const t0 = Date.now();
  const next = (await call(other)).body;
  assert.equal(next.result, 'ok', JSON.stringify(next));
  console.log(`# an abandoned probe: another isolate probed ${Date.now() - t0} ms later`);
  assert.equal((await state()).lease.state, 'CLOSED');
  assert.equal((await call(rust)).body.result, 'ok');
});
