// `adaptiveThrottle` and `concurrency` take values that breakwater/adaptive makes (`throttle()`,
// `limit()`), which bring that entry's module: the main entry stays as small as it was without
// them, nothing registers anything globally, and an app that never imports breakwater/adaptive
// never loads its module. Without such a value the main entry's CircuitBreaker refuses the option,
// naming it and the import to use. In its own process (node --test runs each file apart), so
// that nothing has loaded breakwater/adaptive before the first test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, FallbackChain, isCircuitOpenError } from 'breakwater';
import { manualClock, httpError } from './helpers.mjs';

let before;

test('without a value of breakwater/adaptive: the options are refused, naming the option and the import', async () => {
  for (const [option, value, fn] of [
    ['adaptiveThrottle', true, 'throttle'],
    ['adaptiveThrottle', { multiplier: 1.5 }, 'throttle'],
    ['adaptiveThrottle', false, 'throttle'],
    ['concurrency', 4, 'limit'],
    ['concurrency', { maxConcurrent: 4 }, 'limit'],
  ]) {
    assert.throws(
      () => new CircuitBreaker('early', { [option]: value }),
      (e) => e instanceof TypeError && e.message.includes(`"${option}"`) && e.message.includes(`${fn}() from 'breakwater/adaptive'`),
      `${option}: ${JSON.stringify(value)}`,
    );
  }
  // The options of the earlier shape are named as unknown, not ignored.
  for (const option of ['maxConcurrent', 'maxQueued', 'queueTimeoutMs', 'adaptiveThrotle']) {
    assert.throws(() => new CircuitBreaker('early', { [option]: 1 }), new RegExp(option));
  }
  before = new CircuitBreaker('before', { failureThreshold: 2, resetTimeout: 60_000 });
  assert.equal(await before.execute(() => 'ok'), 'ok');
  assert.equal(before.throttleProbability, 0);
  assert.equal(before.inFlight, 0);
});

test('with values of breakwater/adaptive: each brings its module, bad settings are named, earlier breakers unaffected', async () => {
  assert.ok(before, 'the breaker of the first test');
  const { throttle, limit, hedge, ...rest } = await import('breakwater/adaptive');
  assert.deepEqual(Object.keys(rest), [], 'breakwater/adaptive exports throttle, limit and hedge only');
  assert.equal(hedge().kind, 'hedge');
  assert.throws(() => throttle({ multiplier: 0.5 }), /"adaptiveThrottle\.multiplier".*0\.5/);
  assert.throws(() => throttle({ multipler: 2 }), /multipler/);
  assert.throws(() => limit({ maxConcurrent: 0 }), /"concurrency\.maxConcurrent".*0/);
  assert.throws(() => limit({}), /concurrency\.maxConcurrent/);
  assert.throws(() => limit({ maxConcurrent: 2, queueTimeoutMs: 10 }), /queueTimeoutMs.*maxQueued/);
  // A value of one option is refused for the other.
  assert.throws(() => new CircuitBreaker('swap', { concurrency: throttle() }), /"concurrency".*limit/);
  const clock = manualClock();
  const limited = new CircuitBreaker('limited', { concurrency: limit({ maxConcurrent: 1 }), clock });
  const slow = limited.execute(() => new Promise((r) => setTimeout(() => r('slow'), 5)));
  const refused = await limited.execute(() => 'never').catch((e) => e);
  assert.ok(isCircuitOpenError(refused) && refused.reason === 'full', String(refused));
  assert.equal(await slow, 'slow');
  assert.equal(limited.inFlight, 0);

  // A throttled primary falls to its backup.
  const primary = new CircuitBreaker('primary', { failureThreshold: 1_000, adaptiveThrottle: throttle({ minimumRequests: 10 }), clock, random: () => 0.25 });
  for (let i = 0; i < 40; i++) await primary.execute(() => Promise.reject(httpError(529))).catch(() => {});
  assert.ok(primary.throttleProbability > 0.5, String(primary.throttleProbability));
  const chain = new FallbackChain([
    { breaker: primary, call: () => Promise.reject(httpError(529)) },
    { breaker: new CircuitBreaker('backup'), call: async () => 'from the backup' },
  ]);
  let served = 0;
  for (let i = 0; i < 20; i++) if ((await chain.execute()).value === 'from the backup') served++;
  assert.equal(served, 20, 'every call ends at the backup, shed or failed at the primary');
  assert.ok(primary.stats.throttled > 0, JSON.stringify(primary.stats));

  // The breaker made without them stays in the main module and works on.
  await before.execute(() => Promise.reject(httpError(503))).catch(() => {});
  await before.execute(() => Promise.reject(httpError(503))).catch(() => {});
  assert.equal(before.state, 'OPEN');
  const again = CircuitBreaker.fromJSON(before.toJSON(), { failureThreshold: 2, resetTimeout: 60_000 });
  assert.equal(again.state, 'OPEN');
  // A snapshot moves between the modules both ways.
  const moved = CircuitBreaker.fromJSON(before.toJSON(), { failureThreshold: 2, resetTimeout: 60_000, adaptiveThrottle: throttle() });
  assert.equal(moved.state, 'OPEN');
  const back = CircuitBreaker.fromJSON(primary.toJSON(), { failureThreshold: 1_000 });
  assert.equal(back.state, 'CLOSED');
  assert.equal(back.stats.throttled, primary.stats.throttled);
});
