// Very long durations in CircuitBreaker options (resetTimeout, probeTimeoutMs) against the snapshot
// round trip an app relies on to keep a breaker across restarts: toJSON() → JSON →
// CircuitBreaker.fromJSON(...) or restore(). The clock is injected.
//
// Today: the constructor accepts any integer up to 2^53 - 1, but a breaker opened (or probing)
// with such a duration writes an end time past what a snapshot may hold, and fromJSON() / restore()
// then refuse its own toJSON() ("not a breaker snapshot"): the app that
// persists its breakers cannot start again.
// Property: every value is either refused by the constructor (a RangeError naming the option) or
// round-trips, OPEN (and, for probeTimeoutMs, HALF_OPEN with the probe out) included; the largest
// value the constructor's own error message documents is accepted and round-trips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'breakwater';

const NOW = 1_800_000_000_000;
// 2^53 - 1 and its neighbour; the values that end the open period at 2^53 - 1 and at 2^53 from
// NOW; 2^52 and below; a thousand years.
const LARGE = [2 ** 53 - 1, 2 ** 53 - 2, 2 ** 53 - 1 - NOW, 2 ** 53 - NOW, 2 ** 52, 2 ** 51, 2 ** 50, 1e15, 365 * 24 * 3_600_000 * 1000];

/** The options a breaker with `option` set to `value` is built with (its clock fixed at `now`). */
function options(option, value, clock) {
  const o = { failureThreshold: 1, clock };
  if (option === 'probeTimeoutMs') o.resetTimeout = 1000;
  o[option] = value;
  return o;
}

/** The largest value of `option` its RangeError documents ("... (expected an integer in [lo, hi])"). */
function documentedMax(option) {
  let message;
  try {
    new CircuitBreaker('x', { [option]: -1 });
  } catch (e) {
    message = e.message;
  }
  const m = /in \[(\d+), ([^\]]+)\]/.exec(message ?? '');
  assert.ok(m, `the RangeError for ${option}: -1 states the range: ${message}`);
  const hi = m[2].trim();
  const pow = /^2\^(\d+)$/.exec(hi);
  const max = pow ? 2 ** Number(pow[1]) : Number(hi.replace(/[_,\s]/g, ''));
  assert.ok(Number.isFinite(max), `a number: ${hi}`);
  // "2^53" stands for the safe integers' bound: the largest integer a number holds exactly.
  return Math.min(max, Number.MAX_SAFE_INTEGER);
}

/**
 * Builds the breaker; if the constructor takes the value, opens it (and for probeTimeoutMs, lets the
 * probe out) and checks the snapshot round trip. Answers 'refused' or 'round-trips'.
 */
function check(option, value) {
  let now = NOW;
  const clock = () => now;
  let b;
  try {
    b = new CircuitBreaker('x', options(option, value, clock));
  } catch (e) {
    assert.ok(e instanceof RangeError, `${option}: ${value} refused with a RangeError, not ${e?.name}: ${e?.message}`);
    assert.match(e.message, new RegExp(option), 'the refusal names the option');
    return 'refused';
  }
  // Each snapshot is read back at the clock it was taken at, as a restart would.
  const roundTrip = (snapshot) => {
    const stored = JSON.parse(JSON.stringify(snapshot));
    const a = CircuitBreaker.fromJSON(stored, options(option, value, clock));
    assert.equal(a.state, snapshot.state, `fromJSON keeps ${snapshot.state}`);
    const r = new CircuitBreaker('x', options(option, value, clock));
    r.restore(stored);
    assert.equal(r.state, snapshot.state, `restore keeps ${snapshot.state}`);
    assert.deepEqual(r.toJSON().data, snapshot.data, 'the restored breaker writes the same snapshot');
    return a;
  };
  b.recordFailure(Object.assign(new Error('529'), { status: 529 }));
  assert.equal(b.state, 'OPEN');
  const open = roundTrip(b.toJSON());
  assert.equal(open.isOpen(), true);
  assert.equal(open.openUntil, b.openUntil, 'the open period ends when it did');
  if (option === 'probeTimeoutMs') {
    now += 1000;
    const permit = b.tryAcquire();
    assert.ok(permit, 'the probe is let through');
    assert.equal(b.state, 'HALF_OPEN');
    assert.equal(roundTrip(b.toJSON()).probesInFlight, 1, 'the probe is still out');
  }
  return 'round-trips';
}

for (const option of ['resetTimeout', 'probeTimeoutMs']) {
  test(`${option}: a large value is refused by the constructor or survives toJSON() → fromJSON() / restore()`, async (t) => {
    const max = documentedMax(option);
    t.diagnostic(`${option}: documented maximum ${max}`);
    for (const value of LARGE) {
      await t.test(`${option}: ${value}`, () => {
        const how = check(option, value);
        t.diagnostic(`${option}: ${value}: ${how}`);
      });
    }
    await t.test(`${option}: the documented maximum (${max}) is accepted and round-trips`, () => {
      assert.equal(check(option, max), 'round-trips');
    });
  });
}
