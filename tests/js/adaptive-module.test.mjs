// `adaptiveThrottle` and `maxConcurrent` live in breakwater/adaptive's module, so that the main
// entry stays as small as it was without them. Before that entry is loaded, the main entry's
// CircuitBreaker refuses them, naming the option and the import to use; once it is loaded, the
// same class (from either import) takes them, and breakers made before go on in the main module.
// In its own process (node --test runs each file apart), so that nothing has loaded
// breakwater/adaptive before the first test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, FallbackChain, isCircuitOpenError } from 'breakwater';
import { manualClock, httpError } from './helpers.mjs';

let before;

test('without breakwater/adaptive: the options are refused, naming the option and the import', async () => {
  for (const [option, value] of [['adaptiveThrottle', true], ['adaptiveThrottle', { multiplier: 1.5 }], ['maxConcurrent', 4]]) {
    assert.throws(
      () => new CircuitBreaker('early', { [option]: value }),
      (e) => e instanceof TypeError && e.message.includes(`"${option}"`) && e.message.includes("from 'breakwater/adaptive'"),
      option,
    );
  }
  // The reader of these options is breakwater/adaptive's too: a bad value is refused the same way.
  assert.throws(() => new CircuitBreaker('early', { adaptiveThrottle: { multiplier: 0.5 } }), /"adaptiveThrottle".*from 'breakwater\/adaptive'/);
  // A misspelt option is still named as one.
  assert.throws(() => new CircuitBreaker('early', { adaptiveThrotle: true }), /adaptiveThrotle/);
  // `false` is no throttle: nothing to load.
  before = new CircuitBreaker('before', { failureThreshold: 2, resetTimeout: 60_000, adaptiveThrottle: false });
  assert.equal(await before.execute(() => 'ok'), 'ok');
  assert.equal(before.throttleProbability, 0);
  assert.equal(before.inFlight, 0);
});

test('with breakwater/adaptive loaded: one class, the options taken, earlier breakers unaffected', async () => {
  assert.ok(before, 'the breaker of the first test');
  const adaptive = await import('breakwater/adaptive');
  // Bad values are now named as such.
  assert.throws(() => new CircuitBreaker('late', { adaptiveThrottle: { multiplier: 0.5 } }), /"adaptiveThrottle\.multiplier".*0\.5/);
  assert.equal(adaptive.CircuitBreaker, CircuitBreaker, 'the same class whichever way it is imported');
  assert.equal(adaptive.isCircuitOpenError, isCircuitOpenError);
  const clock = manualClock();
  const limited = new CircuitBreaker('limited', { maxConcurrent: 1, clock });
  assert.ok(limited instanceof adaptive.CircuitBreaker);
  const slow = limited.execute(() => new Promise((r) => setTimeout(() => r('slow'), 5)));
  const refused = await limited.execute(() => 'never').catch((e) => e);
  assert.ok(isCircuitOpenError(refused) && refused.reason === 'full', String(refused));
  assert.equal(await slow, 'slow');
  assert.equal(limited.inFlight, 0);

  // A throttled primary (made through the main entry's import) falls to its backup.
  const primary = new CircuitBreaker('primary', { failureThreshold: 1_000, adaptiveThrottle: { minimumRequests: 10 }, clock, random: () => 0.25 });
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

  // The breaker made before the module was loaded stays in the main module and works on.
  await before.execute(() => Promise.reject(httpError(503))).catch(() => {});
  await before.execute(() => Promise.reject(httpError(503))).catch(() => {});
  assert.equal(before.state, 'OPEN');
  const again = CircuitBreaker.fromJSON(before.toJSON(), { failureThreshold: 2, resetTimeout: 60_000 });
  assert.equal(again.state, 'OPEN');
  // A snapshot moves between the modules both ways.
  const moved = CircuitBreaker.fromJSON(before.toJSON(), { failureThreshold: 2, resetTimeout: 60_000, adaptiveThrottle: true });
  assert.equal(moved.state, 'OPEN');
  const back = CircuitBreaker.fromJSON(primary.toJSON(), { failureThreshold: 1_000 });
  assert.equal(back.state, 'CLOSED');
  assert.equal(back.stats.throttled, primary.stats.throttled);
});
