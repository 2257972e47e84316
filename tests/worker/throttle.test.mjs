// Adaptive throttling across a fleet under workerd: eight app Workers (separate isolates: four
// Rust, four JavaScript) share one breaker held by the Rust BreakerObject, whose BREAKERS give it
// a throttle. The object counts the fleet's requests and accepts from the batches, every lease
// carries the probability (`throttle_ppm`), and each isolate sheds locally and reports what it
// shed. Then the upstream recovers, and the shedding stops by itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet, drive } from './harness.mjs';

const BREAKERS = {
  upstream: {
    lease_ms: 200,
    breaker: {
      // A rule that does not trip here (100 % of 1 000 calls): only the throttle acts.
      trip: { kind: 'failure_rate', threshold_percent: 100, minimum_calls: 1000, window: { calls: 1000 } },
      throttle: { multiplier: 2, window_ms: 3000, minimum_requests: 20 },
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

test('a degraded upstream is shed by every isolate, Rust and JavaScript, and then no more', { timeout: 60_000 }, async (t) => {
  upstream.state.mode = 'degraded';
  const before = upstream.state.count;
  const tallies = await drive(apps, { concurrency: 1, stopApp: (_, x) => x.ok + x.failed + x.rejected >= 40 });
  await flushAll();
  const s = await state();
  const shedBy = [...tallies].map(([name, x]) => `${name} ${x.rejected}`);
  t.diagnostic(`shed while 80 % failed: ${shedBy.join(', ')}; the object counted ${s.stats.throttled} shed, lease throttle_ppm ${s.lease.throttle_ppm ?? 0}`);
  assert.equal(s.lease.state, 'CLOSED', 'the trip rule did not act');
  for (const [name, x] of tallies) assert.ok(x.rejected > 0, `${name} shed nothing: ${JSON.stringify(x)}`);
  const shed = [...tallies].reduce((n, [, x]) => n + x.rejected, 0);
  assert.equal(upstream.state.count - before, 8 * 40 - shed, 'a shed call never reached the upstream');
  assert.ok(s.stats.throttled > 0 && s.stats.throttled <= shed, `the object counted ${s.stats.throttled} of ${shed}`);
  // Liveness: the upstream recovers; after the window (3 s) and the leases, nothing is shed.
  upstream.state.mode = 'up';
  // Polled, not timed: rounds of 5 calls per isolate until one round sheds nothing (bounded by
  // node:test's timeout).
  const recovered = Date.now();
  let quiet = false;
  while (!quiet) {
    const r = await drive(apps, { concurrency: 1, stopApp: (_, x) => x.ok + x.failed + x.rejected >= 5 });
    quiet = [...r].every(([, x]) => x.rejected === 0);
    if (!quiet) await new Promise((ok) => setTimeout(ok, 100));
  }
  t.diagnostic(`nothing shed ${Date.now() - recovered} ms after the recovery (window 3000 ms)`);
  await flushAll();
  assert.equal((await state()).lease.throttle_ppm ?? 0, 0);
});
