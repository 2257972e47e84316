// Nothing a call does is left in the core's table (breakers, retry policies, budgets: one handle
// each, src/wasm/exports.rs). A file of its own, so that its process has made no other object
// that a collection could give back meanwhile: the handle the table would give next is then the
// same before and after the calls exactly when they left nothing behind (the table reuses the
// handle released last, or grows by one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, RetryBudget, withRetry } from 'breakwater';
// The package's own hidden entry: the core's exports.
import { wasm } from 'breakwater/internal';
import { httpError } from './helpers.mjs';

/** The handle the table gives the next object: made (a retry budget) and released at once. */
function nextHandle() {
  const x = wasm();
  // A budget's configuration (`Budget` in js/src/codes/layout.ts): ttl, minimum per second, percent.
  const at = x.io(3);
  new Float64Array(x.memory.buffer).set([10_000, 10, 20], at / 8);
  const h = x.budget_new();
  assert.ok(h > 0, `the core refused a retry budget (${h})`);
  x.release(h);
  return h;
}

const ok = async () => 'ok';
const fail = async () => {
  throw httpError(503);
};

test('a breaker and withRetry leave nothing in the core after 20 000 calls (no leaked handle or permit)', async () => {
  const b = new CircuitBreaker('loop', { failureThreshold: 1_000_000 });
  const budget = new RetryBudget({ minPerSec: 1_000_000 });
  const before = nextHandle();
  for (let i = 0; i < 20_000; i++) {
    await b.execute(i % 3 ? ok : fail).catch(() => {});
  }
  for (let i = 0; i < 2_000; i++) {
    let n = 0;
    await withRetry(() => (n++ % 2 ? ok() : fail()), { breaker: b, budget, sleep: async () => {}, random: () => 0.5 });
  }
  for (let i = 0; i < 2_000; i++) {
    if (b.isHealthy()) i % 2 ? b.recordSuccess() : b.recordFailure();
  }
  assert.ok(b.stats.admitted >= 24_000, `admitted ${b.stats.admitted}`);
  assert.equal(b.state, 'CLOSED');
  assert.equal(b.probesInFlight, 0);
  assert.ok(budget.available > 0);
  const after = nextHandle();
  assert.equal(after, before, `the calls left ${after - before} objects in the core's table`);
});

test('the check sees an object left behind', () => {
  const before = nextHandle();
  const kept = new RetryBudget();
  const after = nextHandle();
  assert.notEqual(after, before, 'the budget kept holds the handle the table would have given');
  assert.ok(kept.available >= 0);
});
