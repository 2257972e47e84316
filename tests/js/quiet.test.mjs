// The CLOSED fast path counts what the core lets it count without it (its quiet answer:
// admissions, and the successes that cannot open the breaker), and hands the counts over before
// anything else reaches the core or is read. Whatever it skipped, a breaker must answer exactly
// as one that reported every call: these run the same calls through a breaker and check the
// trip, the open period and every count against the rule's arithmetic.
import test from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'breakwater';

const overloaded = async () => {
  throw Object.assign(new Error('overloaded'), { status: 529 });
};
const ok = async () => 'ok';

/** A breaker on a clock the test moves. */
function clocked(options) {
  const clock = { t: 1_700_000_000_000 };
  const b = new CircuitBreaker('quiet', { resetTimeout: 30_000, ...options, clock: () => clock.t });
  return { b, clock };
}

test('a time window: successes counted alone land in their bucket, and leave the window with it', async () => {
  // 10 buckets of 1 s. 30 successes now (most counted alone), then 11 s later they have left the
  // window: 4 failures alone make 100 % and open at the fourth (the minimum).
  const { b, clock } = clocked({ failureRate: { threshold: 50, minimumCalls: 4, windowMs: 10_000 } });
  for (let i = 0; i < 30; i++) await b.execute(ok);
  assert.equal(b.stats.successes, 30);
  clock.t += 11_000;
  const states = [];
  for (let i = 0; i < 4; i++) {
    await b.execute(overloaded).catch(() => {});
    states.push(b.state);
  }
  assert.deepEqual(states, ['CLOSED', 'CLOSED', 'CLOSED', 'OPEN']);
  assert.equal(b.openUntil, clock.t + 30_000, 'opened at the time of the fourth failure');

  // The same successes, still in the window (5 s later): 4 failures of 34 calls stay below 50 %.
  const other = clocked({ failureRate: { threshold: 50, minimumCalls: 4, windowMs: 10_000 } });
  for (let i = 0; i < 30; i++) await other.b.execute(ok);
  other.clock.t += 5_000;
  for (let i = 0; i < 4; i++) await other.b.execute(overloaded).catch(() => {});
  assert.equal(other.b.state, 'CLOSED');
  assert.deepEqual([other.b.stats.successes, other.b.stats.failures, other.b.stats.admitted], [30, 4, 34]);
});

test('a time window: successes after the bucket ended are counted in their own', async () => {
  // 5 successes in the first bucket, 5 in the next (its first call ends the answer for the
  // first bucket). 10.5 s after the first bucket began only the second is in the window: 4
  // failures make 4 of 9 calls (44 %). Were the later successes counted in the first bucket,
  // they would have left with it: 4 of 4, open.
  const { b, clock } = clocked({ failureRate: { threshold: 50, minimumCalls: 4, windowMs: 10_000 } });
  clock.t = 1_700_000_000_000;
  for (let i = 0; i < 5; i++) await b.execute(ok);
  clock.t += 1_000;
  for (let i = 0; i < 5; i++) await b.execute(ok);
  clock.t += 9_500;
  for (let i = 0; i < 4; i++) await b.execute(overloaded).catch(() => {});
  assert.equal(b.state, 'CLOSED', '4 failures of 9 calls');
  await b.execute(overloaded).catch(() => {});
  assert.equal(b.state, 'OPEN', '5 of 10');
  assert.deepEqual([b.stats.successes, b.stats.failures], [10, 5]);
});

test('a count window: the success that brings it to its minimum at the rate opens, after successes counted alone', async () => {
  const { b, clock } = clocked({ failureRate: { threshold: 50, minimumCalls: 6, windowCalls: 20 } });
  for (let i = 0; i < 3; i++) await b.execute(overloaded).catch(() => {});
  for (let i = 0; i < 2; i++) await b.execute(ok);
  assert.equal(b.state, 'CLOSED', '3 failures of 5 calls: below the minimum');
  await b.execute(ok);
  assert.equal(b.state, 'OPEN', '3 of 6 is 50 %');
  assert.equal(b.openUntil, clock.t + 30_000);
  assert.deepEqual([b.stats.successes, b.stats.failures, b.stats.opened], [3, 3, 1]);

  // Liveness: after the open period a healthy upstream closes it again, and the fast path
  // counts the successes that follow (the same trip arithmetic as before the outage).
  clock.t += 30_000;
  for (let i = 0; i < 3; i++) await b.execute(ok);
  assert.equal(b.state, 'CLOSED', 'recovered by itself');
  for (let i = 0; i < 50; i++) await b.execute(ok);
  assert.equal(b.stats.successes, 56);
  assert.equal(b.state, 'CLOSED');
});

test('the consecutive rule: a failure after successes counted alone starts a new run', async () => {
  const { b } = clocked({ failureThreshold: 3 });
  await b.execute(overloaded).catch(() => {});
  await b.execute(overloaded).catch(() => {});
  for (let i = 0; i < 50; i++) await b.execute(ok);
  await b.execute(overloaded).catch(() => {});
  await b.execute(overloaded).catch(() => {});
  assert.equal(b.state, 'CLOSED', 'the successes ended the first run');
  await b.execute(overloaded).catch(() => {});
  assert.equal(b.state, 'OPEN');
  assert.deepEqual([b.stats.admitted, b.stats.successes, b.stats.failures], [55, 50, 5]);
});

test('the slow-call rule: a slow success is never counted alone', async () => {
  const { b, clock } = clocked({ slowCallRate: { threshold: 50, slowCallMs: 100, minimumCalls: 4, windowCalls: 10 } });
  for (let i = 0; i < 20; i++) await b.execute(ok);
  const slow = () => b.execute(async () => {
    clock.t += 101;
    return 'late';
  });
  for (let i = 0; i < 4; i++) await slow();
  assert.equal(b.stats.slow, 4);
  assert.equal(b.state, 'CLOSED', '4 slow of the last 10');
  await slow();
  assert.equal(b.state, 'OPEN', '5 slow of the last 10');
});

test('what was counted alone is in every read: stats, toJSON, and a breaker restored from it', async () => {
  const { b } = clocked({ failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 } });
  for (let i = 0; i < 25; i++) await b.execute(ok);
  for (let i = 0; i < 10; i++) {
    if (b.isHealthy()) b.recordSuccess();
  }
  const snapshot = b.toJSON();
  const again = CircuitBreaker.fromJSON(snapshot, { failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 } });
  assert.deepEqual([again.stats.admitted, again.stats.successes], [35, 35]);
  // The window came along: 4 failures make 4 of the last 10, 5 open.
  for (let i = 0; i < 4; i++) await again.execute(overloaded).catch(() => {});
  assert.equal(again.state, 'CLOSED');
  await again.execute(overloaded).catch(() => {});
  assert.equal(again.state, 'OPEN');
});

test('a success listener hears every success counted alone', async () => {
  const { b } = clocked({ failureThreshold: 5 });
  let heard = 0;
  const off = b.onSuccess(() => heard++);
  for (let i = 0; i < 10; i++) await b.execute(ok);
  for (let i = 0; i < 10; i++) if (b.isHealthy()) b.recordSuccess();
  assert.equal(heard, 20);
  off();
  assert.equal(b.stats.successes, 20);
});
