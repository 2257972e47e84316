// The options this layer range-checks before the core sees them take their bounds from the core
// (`Limit` in js/src/codes/layout.ts, twinned with src/wasm/layout.rs and checked equal by
// tests/layout.rs). Here each bound is tried at its edge and just past it: at the edge the core
// must accept what the layer let through (a refusal there reads "the core refused a
// configuration these options were checked to give"), and past it the layer must refuse by the
// option's name. A layer bound stricter or looser than the core's fails one of the two.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, RetryBudget, withRetry } from 'breakwater';
import { limit, throttle } from 'breakwater/adaptive';
import { SharedCircuitBreaker } from 'breakwater/shared';

let n = 0;
const breaker = (options) => new CircuitBreaker(`limits-${n++}`, options);
const MAX_DURATION = 2 ** 52;
const MAX_COUNT = 2 ** 32 - 1;

// [option, make(value), last value accepted, first value refused]
const EDGES = [
  ['failureThreshold', (v) => breaker({ failureThreshold: v }), MAX_COUNT, MAX_COUNT + 1],
  ['failureThreshold', (v) => breaker({ failureThreshold: v, monitoringWindow: 1_000 }), 100_000, 100_001],
  ['failureRate.windowCalls', (v) => breaker({ failureRate: { threshold: 50, windowCalls: v } }), 100_000, 100_001],
  ['failureRate.minimumCalls', (v) => breaker({ failureRate: { threshold: 50, minimumCalls: v } }), MAX_COUNT, MAX_COUNT + 1],
  ['failureRate.threshold', (v) => breaker({ failureRate: { threshold: v } }), 1e-9, 0],
  ['failureRate.threshold', (v) => breaker({ failureRate: { threshold: v } }), 100, 100.001],
  ['openJitter', (v) => breaker({ openJitter: v }), 0.9999999, 1],
  ['openBackoffFactor', (v) => breaker({ openBackoffFactor: v }), 1e300, Infinity],
  ['halfOpenMaxProbes', (v) => breaker({ halfOpenMaxProbes: v }), 1024, 1025],
  ['halfOpenSuccessThreshold', (v) => breaker({ halfOpenSuccessThreshold: v }), 100, 101],
  ['resetTimeout', (v) => breaker({ resetTimeout: v, maxResetTimeoutMs: MAX_DURATION }), MAX_DURATION, MAX_DURATION + 2],
  ['probeTimeoutMs', (v) => breaker({ probeTimeoutMs: v }), MAX_DURATION, MAX_DURATION + 2],
  ['adaptiveThrottle.multiplier', (v) => breaker({ adaptiveThrottle: throttle({ multiplier: v }) }), 1e300, Infinity],
  ['adaptiveThrottle.maxRejectionProbability', (v) => breaker({ adaptiveThrottle: throttle({ maxRejectionProbability: v }) }), 1e-9, 0],
  ['adaptiveThrottle.minimumRequests', (v) => breaker({ adaptiveThrottle: throttle({ minimumRequests: v }) }), MAX_COUNT, MAX_COUNT + 1],
  ['concurrency.maxConcurrent', (v) => breaker({ concurrency: limit({ maxConcurrent: v }) }), 100_000, 100_001],
  ['concurrency.maxQueued', (v) => breaker({ concurrency: limit({ maxConcurrent: 1, maxQueued: v }) }), 100_000, 100_001],
  ['ttlMs', (v) => new RetryBudget({ ttlMs: v }), 60_000, 60_001],
  ['ttlMs', (v) => new RetryBudget({ ttlMs: v }), 1_000, 999],
  ['retryPercent', (v) => new RetryBudget({ retryPercent: v }), 1_000, 1_000.5],
  ['minPerSec', (v) => new RetryBudget({ minPerSec: v }), MAX_COUNT, MAX_COUNT + 1],
];

test('every bound the options are checked against is the core: accepted at the edge, refused by name past it', () => {
  for (const [option, make, edge, past] of EDGES) {
    assert.doesNotThrow(() => make(edge), `${option} = ${edge}`);
    assert.throws(() => make(past), (e) => e instanceof RangeError && e.message.includes(`"${option}"`) && e.message.includes(String(past)), `${option} = ${past}`);
  }
});

test('a retry policy is bounded by the core: maxAttempts and factor at the edge run, past it refused by name', async () => {
  const once = async () => 'ok';
  assert.equal(await withRetry(once, { maxAttempts: 10_000, factor: 1e300 }), 'ok');
  await assert.rejects(withRetry(once, { maxAttempts: 10_001 }), /invalid option "maxAttempts": 10001 \(expected an integer in \[1, 10000\]\)/);
  await assert.rejects(withRetry(once, { factor: Infinity }), /invalid option "factor": Infinity \(expected a number in \[1, Infinity\)\)/);
});

// The shared breaker's own limits are the core's too (src/shared/spec.rs): refused by the
// option's name, with the core's value and reason, never the core's field names.
const ns = { idFromName: () => ({}), get: () => ({ fetch: async () => new Response('') }) };
const shared = (options) => new SharedCircuitBreaker('limits', { shared: ns, ...options });

test('a shared breaker refuses what its coordinator cannot hold by the option name, with the core reason', () => {
  const cases = [
    [{ breaker: { resetTimeout: 7_200_000, maxResetTimeoutMs: 7_200_000 } }, /invalid option "resetTimeout" in SharedCircuitBreaker options\.breaker: 7200000 \(a shared breaker accepts at most 3600000 ms, one hour\)/],
    [{ breaker: { probeTimeoutMs: 3_600_001 } }, /invalid option "probeTimeoutMs" in SharedCircuitBreaker options\.breaker: 3600001 \(/],
    [{ breaker: { failureRate: { threshold: 50, windowCalls: 10_001 } } }, /invalid option "failureRate\.windowCalls" in SharedCircuitBreaker options\.breaker: 10001 \(a shared breaker accepts at most 10000/],
    [{ breaker: { failureThreshold: 10_001, monitoringWindow: 1_000 } }, /invalid option "failureThreshold" in SharedCircuitBreaker options\.breaker: 10001 \(/],
    [{ breaker: { failureThreshold: 2, monitoringWindow: 400 * 24 * 3_600_000 } }, /invalid option "monitoringWindow" in SharedCircuitBreaker options\.breaker: 34560000000 \(a shared breaker accepts at most 31536000000 ms, one year\)/],
    [{ breaker: { failureRate: { threshold: 50, windowMs: 400 * 24 * 3_600_000 } } }, /invalid option "failureRate\.windowMs" in SharedCircuitBreaker options\.breaker: 34560000000 \(/],
    [{ leaseMs: 3_600_001 }, /invalid option "leaseMs": 3600001 \(expected an integer in \[1, 3600000\]\)/],
    [{ maxBatch: 62_501 }, /invalid option "maxBatch": 62501 \(expected an integer in \[1, 62500\]\)/],
    [{ retryUnreachableMs: 300_001 }, /invalid option "retryUnreachableMs": 300001 \(expected an integer in \[1, 300000\]\)/],
  ];
  for (const [options, words] of cases) {
    assert.throws(() => shared(options), (e) => e instanceof RangeError && words.test(e.message), JSON.stringify(options));
  }
  // At the edges, the core accepts what the layer let through.
  for (const options of [
    { breaker: { resetTimeout: 3_600_000, maxResetTimeoutMs: 3_600_000, probeTimeoutMs: 3_600_000 } },
    { breaker: { failureRate: { threshold: 50, windowCalls: 10_000 } } },
    { breaker: { failureThreshold: 10_000, monitoringWindow: 365 * 24 * 3_600_000 } },
    { leaseMs: 3_600_000, maxBatch: 62_500, retryUnreachableMs: 300_000 },
  ]) {
    assert.doesNotThrow(() => shared(options), JSON.stringify(options));
  }
});

test("a store's keys live at least the coordinator's dedup window: keyTtlMs is bounded by the core", async () => {
  const { MemoryStore, StoreCircuitBreaker } = await import('breakwater/store');
  const store = new MemoryStore();
  assert.doesNotThrow(() => new StoreCircuitBreaker('ttl-edge', { store, keyTtlMs: 900_000 }));
  assert.throws(() => new StoreCircuitBreaker('ttl-past', { store, keyTtlMs: 899_999 }), /invalid option "keyTtlMs": 899999 \(expected an integer in \[900000, 2\^52\]\)/);
  assert.throws(() => new StoreCircuitBreaker('cas', { store, maxCasAttempts: 0 }), /invalid option "maxCasAttempts": 0 \(expected an integer in \[1, 2\^52\]\)/);
  assert.throws(() => new StoreCircuitBreaker('lease', { store, leaseMs: 3_600_001 }), /invalid option "leaseMs": 3600001 \(expected an integer in \[1, 3600000\]\)/);
});
