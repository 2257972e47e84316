// Seed 000's synchronous pattern — `if (!breaker.isHealthy()) return fallback(); … recordSuccess()
// / recordFailure()` — unchanged but for the constructor, on a local `CircuitBreaker` and on
// shared breakers over one coordinator (the package's own, in this process, behind the breaker
// service's routes). Each must block the provider after the threshold: on the instance that saw
// the failures at once, on the others within one lease; and (liveness) every instance lets calls
// through again by itself once the provider heals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'breakwater';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { settingsJson } from 'breakwater/shared/internal';
import { coordinatorGlue } from 'breakwater/coordinator';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { calls, checkSeed000, provider, seed000Case } from './seed000-case.mjs';

const SEED000 = { failureThreshold: 2, monitoringWindow: 60_000, resetTimeout: 30_000, halfOpenSuccessThreshold: 2 };
const LEASE_MS = 1000;

/** The fleet: one coordinator running seed 000's settings, reached through the service routes. */
function fleet(clock) {
  const settings = settingsJson(SEED000, LEASE_MS, 'test');
  const co = coordinatorGlue().WasmCoordinator.create('anthropic', settings, undefined, false);
  const fetch = async (url, init) => new Response(co.exchange(clock(), init.body, url.includes('/v1/acquire')), { status: 200 });
  const instance = () =>
    new SharedCircuitBreaker('anthropic', {
      service: { url: 'https://breakwater.example', token: 't', fetch },
      breaker: SEED000,
      leaseMs: LEASE_MS,
      clock,
    });
  return { co, instance, view: () => JSON.parse(co.view(clock())).lease };
}

test('seed 000 on a local CircuitBreaker: blocks after the threshold, recovers by itself', async () => {
  let now = 1_800_000_000_000;
  const b = new CircuitBreaker('anthropic', { ...SEED000, clock: () => now });
  const client = provider();
  client.down = true;
  assert.deepEqual(await calls(b, client, 10), { text: 0, fallback: 8, error: 2 });
  assert.equal(client.calls, 2);
  client.down = false;
  now += 30_000;
  assert.deepEqual(await calls(b, client, 3), { text: 3, fallback: 0, error: 0 });
  assert.equal(b.state, 'CLOSED');
});

test('seed 000 on a service-backed shared breaker (Node): the failing instance blocks at once, the others within one lease, all recover', async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const f = fleet(clock);
  checkSeed000(
    await seed000Case({
      make: () => f.instance(),
      wait: async (ms) => void (now += ms),
      flush: (b) => b.flush(),
      leaseMs: LEASE_MS,
      resetTimeout: SEED000.resetTimeout,
    }),
    assert,
  );
  assert.equal(f.view().state, 'CLOSED');
});

test('seed 000 on a store-backed shared breaker (Node, MemoryStore): the same', async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const store = new MemoryStore(clock);
  checkSeed000(
    await seed000Case({
      make: (i) => new StoreCircuitBreaker('anthropic', { store, breaker: SEED000, leaseMs: LEASE_MS, clock, clientId: `i${i}` }),
      wait: async (ms) => void (now += ms),
      flush: (b) => b.flush(),
      leaseMs: LEASE_MS,
      resetTimeout: SEED000.resetTimeout,
    }),
    assert,
  );
});

test('seed 000 on shared breakers, step by step: isHealthy() is a boolean, the failing instance blocks at once, the others within one lease', async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const f = fleet(clock);
  const a = f.instance();
  const b = f.instance();
  assert.equal(a.state, 'CLOSED', 'a state before any lease, never null');
  const client = provider();
  // Both instances are up and have a lease.
  assert.deepEqual(await calls(a, client, 2), { text: 2, fallback: 0, error: 0 });
  assert.deepEqual(await calls(b, client, 2), { text: 2, fallback: 0, error: 0 });
  await Promise.all([a.flush(), b.flush()]);
  assert.equal(typeof a.isHealthy(), 'boolean');
  a.recordIgnored();

  // The provider goes down. On `a`, 10 calls: the threshold's 2 reach it, then `a` blocks at once
  // (no await between a failure's report and the next isHealthy()).
  client.down = true;
  client.calls = 0;
  assert.deepEqual(await calls(a, client, 10), { text: 0, fallback: 8, error: 2 });
  assert.equal(client.calls, 2);
  assert.equal(a.state, 'OPEN');
  assert.equal(a.isOpen(), true);
  assert.ok(a.retryAfterMs > 0);
  await a.flush();
  assert.equal(f.view().state, 'OPEN', 'the fleet heard both failures');
  assert.equal(a.fleetState, 'OPEN');
});

test('a shared breaker tells the same events as a CircuitBreaker, and a refused execute gets its fallback', async () => {
  let now = 1_800_000_000_000;
  const f = fleet(() => now);
  const a = f.instance();
  const seen = [];
  a.onStateChange((e) => seen.push(`${e.from}>${e.to}`));
  a.onReject((e) => seen.push(`reject:${e.reason}`));
  a.onFailure(() => seen.push('failure'));
  a.onSuccess(() => seen.push('success'));
  const client = provider();
  await calls(a, client, 1);
  client.down = true;
  await calls(a, client, 3);
  // As a CircuitBreaker tells them: the transition, then the failure that caused it.
  assert.deepEqual(seen, ['success', 'failure', 'CLOSED>OPEN', 'failure', 'reject:open']);
  await a.flush();
  const answer = await a.execute(() => 'never', { fallback: (e) => `fallback after ${e.reason}` });
  assert.equal(answer, 'fallback after open');
});

test("a shared breaker honours breaker.isFailure: a 529 the app judges harmless does not open the fleet's breaker", async () => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const settings = { ...SEED000, isFailure: (e) => (e?.status === 529 ? false : undefined) };
  const co = coordinatorGlue().WasmCoordinator.create('anthropic', settingsJson(SEED000, LEASE_MS, 'test'), undefined, false);
  const fetch = async (url, init) => new Response(co.exchange(clock(), init.body, url.includes('/v1/acquire')), { status: 200 });
  const a = new SharedCircuitBreaker('anthropic', { service: { url: 'https://x.example', token: 't', fetch }, breaker: settings, clock });
  const overloaded = () => Promise.reject(Object.assign(new Error('Overloaded'), { status: 529 }));
  for (let i = 0; i < 5; i++) await assert.rejects(a.execute(overloaded));
  for (let i = 0; i < 5; i++) {
    if (a.isHealthy()) a.recordFailure(Object.assign(new Error('Overloaded'), { status: 529 }));
  }
  await a.flush();
  const view = JSON.parse(co.view(now));
  assert.equal(view.lease.state, 'CLOSED');
  assert.equal(view.stats.failures, 0);
  assert.ok(view.stats.ignored >= 9, JSON.stringify(view.stats));
  assert.equal(a.state, 'CLOSED');
  // A 503 is still a failure: the hook said nothing of it.
  for (let i = 0; i < 2; i++) await assert.rejects(a.execute(() => Promise.reject(Object.assign(new Error('x'), { status: 503 }))));
  assert.equal(a.state, 'OPEN');
});
