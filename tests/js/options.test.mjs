// Options as an app passes them: an option set to `undefined` is the option left out (what
// `exactOptionalPropertyTypes` lets a typed app write), and an invalid one is reported under the
// name of the constructor or function that took it, with the option and the value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BreakerRegistry, CircuitBreaker, FallbackChain } from 'breakwater';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { fallbackModel } from 'breakwater/ai';
import { manualClock } from './helpers.mjs';

const UNDEFINED_OPTIONS = {
  failureThreshold: undefined,
  monitoringWindow: undefined,
  failureRate: undefined,
  slowCallRate: undefined,
  resetTimeout: undefined,
  halfOpenSuccessThreshold: undefined,
  halfOpenMaxProbes: undefined,
  probeTimeoutMs: undefined,
  openJitter: undefined,
  openBackoffFactor: undefined,
  maxResetTimeoutMs: undefined,
  isFailure: undefined,
  clock: undefined,
  random: undefined,
};

test('a CircuitBreaker option set to undefined is the option left out', async () => {
  const given = new CircuitBreaker('u', UNDEFINED_OPTIONS);
  // The defaults: 5 failures in a row open it for 30 s.
  const defaults = new CircuitBreaker('d', UNDEFINED_OPTIONS);
  for (let i = 0; i < 4; i++) defaults.recordFailure();
  assert.equal(defaults.state, 'CLOSED');
  defaults.recordFailure();
  assert.equal(defaults.state, 'OPEN');
  const left = defaults.openUntil - Date.now();
  assert.ok(left > 29_000 && left <= 30_000, `open for ${left} ms`);
  // The default trip rule (5 in a row), with the rate rules' keys present but undefined.
  const b = new CircuitBreaker('u', { failureThreshold: 2, failureRate: undefined, slowCallRate: undefined });
  for (let i = 0; i < 2; i++) b.recordFailure();
  assert.equal(b.state, 'OPEN');
  const r = new CircuitBreaker('r', { failureRate: { threshold: 50, minimumCalls: undefined, windowCalls: undefined, windowMs: undefined }, failureThreshold: undefined });
  assert.equal(r.state, 'CLOSED');
  // execute's and stream's options alike.
  assert.equal(await given.execute(() => 1, { signal: undefined, timeoutMs: undefined, fallback: undefined }), 1);
  const body = await given.stream(async function* () { yield 'a'; }, {
    signal: undefined, firstChunkTimeoutMs: undefined, idleTimeoutMs: undefined, onInterrupted: undefined,
    isContent: undefined, errorOf: undefined, measure: undefined,
  });
  for await (const chunk of body) assert.equal(chunk, 'a');
  const chain = new FallbackChain([{ breaker: given, call: () => 2, name: undefined }], { name: undefined, fallThrough: undefined });
  assert.deepEqual(await chain.execute({ signal: undefined, timeoutMs: undefined }), { value: 2, tier: 0, name: 'u' });
});

test('BreakerRegistry.get: an undefined override keeps the default; another trip rule replaces the defaults\'', () => {
  const clock = manualClock();
  const reg = new BreakerRegistry({ failureThreshold: 2, monitoringWindow: 60_000, clock });
  const kept = reg.get('kept', { failureThreshold: undefined, resetTimeout: undefined });
  kept.recordFailure();
  kept.recordFailure();
  assert.equal(kept.state, 'OPEN', 'the defaults\' threshold of 2, not the built-in 5');
  // Same rule: merged with the defaults (3 failures within the defaults' window of 60 s).
  const merged = reg.get('merged', { failureThreshold: 3 });
  merged.recordFailure();
  merged.recordSuccess();
  merged.recordFailure();
  clock.advance(61_000);
  merged.recordFailure();
  merged.recordFailure();
  assert.equal(merged.state, 'CLOSED', 'the first failure left the window');
  merged.recordFailure();
  assert.equal(merged.state, 'OPEN');
  // A rate rule instead of the defaults' failures-in-window rule: no "choose one trip rule".
  const rate = reg.get('rate', { failureRate: { threshold: 50, minimumCalls: 2, windowCalls: 2 } });
  rate.recordSuccess();
  rate.recordFailure();
  assert.equal(rate.state, 'OPEN');
  const rateDefaults = new BreakerRegistry({ failureRate: { threshold: 50 } });
  assert.equal(rateDefaults.get('c', { failureThreshold: 1 }).state, 'CLOSED');
  // Two rules in one override are still refused.
  assert.throws(
    () => reg.get('two', { failureThreshold: 1, failureRate: { threshold: 50 } }),
    /choose one trip rule in BreakerRegistry\.get options/,
  );
});

const transport = { exchange: async () => { throw new Error('unreachable'); } };

/** Each way to hand over breaker options, and the name its messages must use. */
const CONSTRUCTORS = [
  ['CircuitBreaker options', (o) => new CircuitBreaker('x', o)],
  ['BreakerRegistry defaults', (o) => new BreakerRegistry(o)],
  ['BreakerRegistry.get options', (o) => new BreakerRegistry().get('x', o)],
  ['SharedCircuitBreaker options.local', (o) => new SharedCircuitBreaker('x', { transport, local: o })],
  ['StoreCircuitBreaker options.breaker', (o) => new StoreCircuitBreaker('x', { store: new MemoryStore(), breaker: o })],
  ['StoreCircuitBreaker options.local', (o) => new StoreCircuitBreaker('x', { store: new MemoryStore(), local: o })],
  ['fallbackModel options.breakerOptions', (o) => fallbackModel([{ model: fakeModel() }], { breakerOptions: o })],
];

function fakeModel() {
  return {
    specificationVersion: 'v3', provider: 'fake', modelId: `m${Math.random()}`, supportedUrls: {},
    doGenerate: async () => ({ content: [] }), doStream: async () => ({ stream: new ReadableStream() }),
  };
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

for (const [where, make] of CONSTRUCTORS) {
  test(`invalid breaker options given as ${where} name it, the option and the value`, () => {
    const w = escape(where);
    const cases = [
      [{ resetTimout: 30_000 }, TypeError, new RegExp(`unknown option "resetTimout" in ${w} \\(did you mean "resetTimeout"\\?\\)`)],
      [{ resetTimeout: -1 }, RangeError, new RegExp(`invalid option "resetTimeout" in ${w}: -1 \\(expected`)],
      [{ failureThreshold: 2.5 }, RangeError, new RegExp(`invalid option "failureThreshold" in ${w}: 2\\.5 `)],
      [{ failureRate: { threshold: 150 } }, RangeError, new RegExp(`invalid option "failureRate\\.threshold" in ${w}: 150 `)],
      [{ failureRate: { threshold: 50, windowCals: 10 } }, TypeError, new RegExp(`unknown option "windowCals" in failureRate of ${w}`)],
      // A shared breaker's local breaker takes outcomes the client classified: refused there.
      where.endsWith('.local')
        ? [{ isFailure: () => true }, TypeError, new RegExp(`option "isFailure" in ${w} is not supported here`)]
        : [{ isFailure: 'yes' }, TypeError, new RegExp(`invalid option "isFailure" in ${w}: "yes"`)],
      [{ failureThreshold: 3, failureRate: { threshold: 50 } }, TypeError, new RegExp(`choose one trip rule in ${w}`)],
    ];
    for (const [options, type, message] of cases) {
      assert.throws(() => make(options), (e) => e instanceof type && message.test(e.message), `${JSON.stringify(options)}: ${message}`);
    }
  });
}

test('the store breaker names itself when its breaker options cannot be shared', () => {
  assert.throws(
    () => new StoreCircuitBreaker('x', { store: new MemoryStore(), breaker: { slowCallRate: { threshold: 50, slowCallMs: 1000 } } }),
    /option "slowCallRate" in StoreCircuitBreaker options\.breaker is not supported here: outcomes reach the coordinator as counts, without durations/,
  );
});

test("execute's options are checked like every other options object: a misspelt timeoutMs is an error, not no limit", async () => {
  const b = new CircuitBreaker('execute-options');
  let calls = 0;
  const fn = async () => ++calls;
  assert.throws(() => b.execute(fn, { timeout: 5 }), /unknown option "timeout" in execute options \(did you mean "timeoutMs"\?\)/);
  assert.throws(() => b.execute(fn, { fallBack: () => 0 }), /unknown option "fallBack" in execute options \(did you mean "fallback"\?\)/);
  const chain = new FallbackChain([{ breaker: b, call: fn }]);
  await assert.rejects(chain.execute({ timeout: 5 }), /unknown option "timeout" in FallbackChain execute options/);
  const store = new StoreCircuitBreaker('execute-options', { store: new MemoryStore() });
  await assert.rejects(store.execute(fn, { timeout: 5 }), /unknown option "timeout" in execute options/);
  assert.equal(calls, 0, 'nothing was called');
  // The known ones still work, and a chain over a store breaker passes them on.
  assert.equal(await b.execute(fn, { timeoutMs: 1000, fallback: () => -1 }), 1);
  const mixed = new FallbackChain([{ breaker: store, call: fn }]);
  assert.deepEqual(await mixed.execute({ timeoutMs: 1000, fallback: () => -1 }), { value: 2, tier: 0, name: 'execute-options' });
});
