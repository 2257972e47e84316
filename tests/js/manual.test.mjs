// The manual API (for code that cannot wrap its call in `execute`): isOpen() and retryAfterMs
// look without taking anything, tryAcquire() hands out a permit settled exactly once,
// recordFailure() classifies like execute, recordIgnored() frees a probe slot; globalBreakers()
// is one registry for every copy of the package in the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { CircuitBreaker, CircuitOpenError, TimeoutError, StreamError, globalBreakers, isCircuitOpenError } from 'breakwater';
import { manualClock, httpError } from './helpers.mjs';

const require = createRequire(import.meta.url);
const options = { failureThreshold: 3, resetTimeout: 10_000, probeTimeoutMs: 60_000 };

function tripped(clock, extra = {}) {
  const b = new CircuitBreaker('llm', { ...options, ...extra, clock });
  for (let i = 0; i < 3; i++) b.recordFailure();
  assert.equal(b.state, 'OPEN');
  return b;
}

test('isOpen() and retryAfterMs follow the state and take nothing: no probe slot, no rejection counted', () => {
  const clock = manualClock(1_000_000);
  const b = new CircuitBreaker('llm', { ...options, clock });
  assert.equal(b.isOpen(), false);
  assert.equal(b.retryAfterMs, 0);
  for (let i = 0; i < 3; i++) b.recordFailure();
  clock.advance(4_000);
  assert.equal(b.isOpen(), true);
  assert.equal(b.retryAfterMs, 6_000);
  for (let i = 0; i < 100; i++) b.isOpen();
  assert.equal(b.stats.rejected, 0, 'looking is not a rejection');
  // The period ends: the next call would be the probe, so the gate opens...
  clock.advance(6_000);
  assert.equal(b.isOpen(), false);
  assert.equal(b.retryAfterMs, 0);
  for (let i = 0; i < 100; i++) assert.equal(b.isOpen(), false);
  assert.equal(b.probesInFlight, 0, 'isOpen() took no probe slot');
  // ...and the call behind the gate gets the probe; while it is out, the gate is shut.
  const permit = b.tryAcquire();
  assert.ok(permit);
  assert.equal(b.state, 'HALF_OPEN');
  assert.equal(b.isOpen(), true);
  assert.equal(b.retryAfterMs, 60_000, 'until the probe lease runs out');
  permit.success();
  assert.equal(b.state, 'CLOSED');
  assert.equal(b.isOpen(), false);
});

test('isOpen() reads true for an isolated breaker and false for a disabled one', () => {
  const clock = manualClock(5_000);
  const b = new CircuitBreaker('llm', { ...options, clock });
  b.isolate();
  assert.equal(b.isOpen(), true);
  assert.equal(b.retryAfterMs, 10_000);
  b.reset();
  b.disable();
  for (let i = 0; i < 10; i++) b.recordFailure();
  assert.equal(b.isOpen(), false);
});

test('tryAcquire(): refused while OPEN (a rejection counted, onReject told); a permit settles once', () => {
  const clock = manualClock(1_000);
  const b = tripped(clock);
  const rejects = [];
  b.onReject((e) => rejects.push(e));
  assert.equal(b.tryAcquire(), undefined);
  assert.equal(b.stats.rejected, 1);
  assert.deepEqual(rejects, [{ breaker: 'llm', reason: 'open', retryAfterMs: 10_000 }]);

  clock.advance(10_000);
  const probe = b.tryAcquire();
  assert.ok(probe);
  assert.equal(b.tryAcquire(), undefined, 'one probe slot');
  probe.failure(httpError(529));
  assert.equal(b.state, 'OPEN');
  const failures = b.stats.failures;
  probe.failure(httpError(529));
  probe.success();
  probe.ignore();
  assert.equal(b.stats.failures, failures, 'settling again does nothing');
  assert.equal(b.state, 'OPEN');
});

test('a permit settled with ignore() gives its probe slot back at once', () => {
  const clock = manualClock(1_000);
  const b = tripped(clock);
  clock.advance(10_000);
  const probe = b.tryAcquire();
  assert.equal(b.probesInFlight, 1);
  probe.ignore(); // the call was never made
  assert.equal(b.probesInFlight, 0);
  assert.equal(b.state, 'HALF_OPEN');
  assert.ok(b.tryAcquire(), 'the next caller gets the slot');
});

test('a permit from an earlier state does not settle a later probe (no stale success closes the breaker)', () => {
  const clock = manualClock(1_000);
  const b = new CircuitBreaker('llm', { ...options, clock });
  const old = b.tryAcquire(); // CLOSED
  for (let i = 0; i < 3; i++) b.recordFailure();
  clock.advance(10_000);
  const probe = b.tryAcquire();
  assert.ok(probe);
  old.success();
  assert.equal(b.state, 'HALF_OPEN', 'the old permit is stale');
  assert.equal(b.probesInFlight, 1);
  assert.equal(b.stats.stale, 1);
  probe.success();
  assert.equal(b.state, 'CLOSED');
});

test('permit.failure(error) and recordFailure(error) classify like execute: client errors and the caller\'s aborts do not count', () => {
  const clock = manualClock(1_000);
  const b = new CircuitBreaker('llm', { ...options, clock });
  const controller = new AbortController();
  controller.abort();
  const abort = new DOMException('the user left', 'AbortError');
  for (let i = 0; i < 10; i++) {
    b.recordFailure(httpError(400));
    b.recordFailure(abort, controller.signal);
    b.recordFailure(controller.signal.reason, controller.signal);
    b.tryAcquire().failure(httpError(422));
    b.tryAcquire().failure(abort, controller.signal);
  }
  assert.equal(b.state, 'CLOSED');
  assert.equal(b.stats.failures, 0);
  assert.equal(b.stats.ignored, 50);
  b.recordFailure(httpError(529));
  b.tryAcquire().failure(httpError(429));
  b.recordFailure(); // no error: an upstream failure
  assert.equal(b.stats.failures, 3);
  assert.equal(b.state, 'OPEN');
});

test('an AbortError with no aborted signal behind it (a hand-made time-out) counts, as in execute', async () => {
  const b = new CircuitBreaker('llm', { ...options, clock: manualClock(1) });
  const abort = new DOMException('timed out by hand', 'AbortError');
  b.recordFailure(abort);
  b.tryAcquire().failure(abort);
  await b.execute(() => Promise.reject(abort)).catch(() => {});
  assert.equal(b.stats.failures, 3);
  // An AbortSignal.timeout() abort is a time-out whatever the signal: a failure.
  const timeout = new CircuitBreaker('llm2', { ...options, clock: manualClock(1) });
  timeout.recordFailure(new DOMException('slow', 'TimeoutError'));
  assert.equal(timeout.stats.failures, 1);
});

test('recordFailure(error) honours isFailure, as execute does', () => {
  const b = new CircuitBreaker('llm', { ...options, isFailure: (e) => (e?.fatal ? true : false), clock: manualClock(1) });
  for (let i = 0; i < 5; i++) b.recordFailure(httpError(529));
  assert.equal(b.stats.failures, 0);
  for (let i = 0; i < 3; i++) b.recordFailure({ fatal: true });
  assert.equal(b.state, 'OPEN');
});

test('isHealthy() in HALF_OPEN: a client error or recordIgnored() frees the probe slot', () => {
  const clock = manualClock(1_000);
  const b = tripped(clock);
  clock.advance(10_000);
  assert.equal(b.isHealthy(), true);
  assert.equal(b.isHealthy(), false, 'the slot is taken');
  b.recordFailure(httpError(400)); // the prompt was bad: says nothing about the upstream
  assert.equal(b.state, 'HALF_OPEN');
  assert.equal(b.probesInFlight, 0);
  assert.equal(b.isHealthy(), true);
  b.recordIgnored();
  assert.equal(b.probesInFlight, 0);
  assert.equal(b.isHealthy(), true);
  b.recordSuccess();
  assert.equal(b.state, 'CLOSED');
});

test('globalBreakers(): the ESM and the CommonJS copies of the package in one process share one registry', async () => {
  const cjs = require('breakwater');
  assert.notEqual(cjs.CircuitBreaker, CircuitBreaker, 'two copies of the package');
  const cjsRegistry = cjs.globalBreakers(); // made by the CommonJS copy, with its classes
  const esmRegistry = globalBreakers();
  assert.equal(esmRegistry, cjsRegistry);
  const name = `shared-${Math.random()}`;
  const fromCjs = cjs.globalBreakers().get(name, { failureThreshold: 2 });
  assert.equal(esmRegistry.get(name), fromCjs);
  // What one copy's calls learn, the other copy's gate sees.
  for (let i = 0; i < 2; i++) await fromCjs.execute(() => Promise.reject(httpError(529))).catch(() => {});
  const gate = globalBreakers().get(name);
  assert.equal(gate.isOpen(), true);
  const err = await gate.execute(() => 'never').catch((e) => e);
  assert.ok(isCircuitOpenError(err));
  // The breaker was built by the CommonJS copy: its errors are still `instanceof` the ESM classes.
  assert.equal(Object.getPrototypeOf(err), cjs.CircuitOpenError.prototype);
  assert.ok(err instanceof CircuitOpenError);
  assert.ok(new cjs.TimeoutError(5) instanceof TimeoutError);
  assert.ok(new cjs.StreamError('empty', 'no content') instanceof StreamError);
  assert.equal(new Error('x') instanceof CircuitOpenError, false);
  assert.equal(null instanceof TimeoutError, false);
  esmRegistry.delete(name);
});

test('the browser entry, where its .wasm cannot be fetched, fails with an error that says what to check', async () => {
  // Node's fetch refuses file: URLs, as a browser would a .wasm the bundler did not copy.
  const path = await import('node:path');
  const { pathToFileURL } = await import('node:url');
  const root = path.dirname(require.resolve('breakwater/package.json'));
  const err = await import(pathToFileURL(path.join(root, 'dist/browser.mjs')).href).catch((e) => e);
  assert.ok(err instanceof Error);
  assert.match(err.message, /breakwater: could not load its WebAssembly from file:.*breakwater_bg\.wasm/);
  assert.match(err.message, /new URL\(\.\.\., import\.meta\.url\)/);
  assert.match(err.message, /node entry/);
});
