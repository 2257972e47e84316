// docs/migrating.md's mapping, checked against the libraries it maps from (cockatiel and opossum,
// root dev dependencies for the benchmark): where a number or a sense changes on the way
// (cockatiel's maxAttempts counts retries; opossum's errorFilter says what does NOT count), both
// sides are run and compared. No real waits: every backoff is zero.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { CircuitBreaker, withRetry, isCircuitOpenError } from 'breakwater';

const require = createRequire(import.meta.url);
const cockatiel = require('cockatiel');
const Opossum = require('opossum');

const failing = (status) => {
  const calls = { n: 0 };
  const fn = async () => {
    calls.n++;
    throw Object.assign(new Error(`upstream ${status}`), { status });
  };
  return { fn, calls };
};

test("cockatiel's maxAttempts: 3 makes 4 calls; withRetry's maxAttempts: 4 makes the same 4", async () => {
  const { retry, handleAll, ConstantBackoff } = cockatiel;
  const before = failing(503);
  await assert.rejects(retry(handleAll, { maxAttempts: 3, backoff: new ConstantBackoff(0) }).execute(before.fn));
  const after = failing(503);
  await assert.rejects(withRetry(after.fn, { maxAttempts: 4, baseDelayMs: 0, jitter: 'none', sleep: async () => {} }));
  assert.equal(before.calls.n, 4);
  assert.equal(after.calls.n, before.calls.n);
});

test("cockatiel's ConsecutiveBreaker(5) and failureThreshold: 5 open on the same fifth failure; the refusal says when to come back", async () => {
  const { circuitBreaker, handleAll, ConsecutiveBreaker, isBrokenCircuitError } = cockatiel;
  const policy = circuitBreaker(handleAll, { halfOpenAfter: 30_000, breaker: new ConsecutiveBreaker(5) });
  const breaker = new CircuitBreaker('migrating', { failureThreshold: 5, resetTimeout: 30_000 });
  const up = failing(503);
  for (let i = 0; i < 5; i++) {
    await assert.rejects(policy.execute(up.fn));
    await assert.rejects(breaker.execute(up.fn));
  }
  const refusedBefore = await policy.execute(up.fn).catch((e) => e);
  const refusedAfter = await breaker.execute(up.fn).catch((e) => e);
  assert.ok(isBrokenCircuitError(refusedBefore));
  assert.ok(isCircuitOpenError(refusedAfter));
  assert.ok(refusedAfter.retryAfterMs > 29_000 && refusedAfter.retryAfterMs <= 30_000);
  assert.equal(up.calls.n, 10, 'neither called the upstream once open');
  policy.dispose?.();
});

test("opossum's errorFilter returning true (not counted) is isFailure returning false (ignored)", async () => {
  // A 503 counts by default on both; each is told not to count it.
  const up = failing(503);
  const before = new Opossum(up.fn, { timeout: false, errorFilter: (err) => err.status === 503 });
  const after = new CircuitBreaker('filtered', { isFailure: (err) => (err.status === 503 ? false : undefined), failureThreshold: 1 });
  await assert.rejects(before.fire());
  await assert.rejects(after.execute(up.fn));
  assert.equal(before.stats.failures, 0);
  assert.equal(after.stats.failures, 0);
  assert.equal(after.stats.ignored, 1);
  assert.equal(after.state, 'CLOSED');
  before.shutdown();
});

test("opossum's fallback and breakwater's execute({ fallback }) both answer a failed call", async () => {
  const up = failing(503);
  const before = new Opossum(up.fn, { timeout: false });
  before.fallback(() => 'The assistant is busy.');
  const after = new CircuitBreaker('with-fallback');
  assert.equal(await before.fire(), 'The assistant is busy.');
  assert.equal(await after.execute(up.fn, { fallback: () => 'The assistant is busy.' }), 'The assistant is busy.');
  before.shutdown();
});
