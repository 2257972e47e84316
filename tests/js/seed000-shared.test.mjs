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

const SEED000 = { failureThreshold: 2, monitoringWindow: 60_000, resetTimeout: 30_000, halfOpenSuccessThreshold: 2 };
const LEASE_MS = 1000;

/** A provider that fails on cue, counting the calls that reach it. */
function provider() {
  const p = { down: false, calls: 0 };
  p.messages = {
    create: async () => {
      p.calls++;
      await new Promise((r) => setTimeout(r, 1));
      if (p.down) throw Object.assign(new Error('Overloaded'), { status: 529 });
      return { content: [{ type: 'text', text: 'hello' }] };
    },
  };
  return p;
}

// Seed 000's route body, as the article writes it (a breaker and a client passed in).
async function callAgent(anthropicBreaker, client, prompt) {
  if (!anthropicBreaker.isHealthy()) {
    return getFallbackResponse(prompt);
  }

  try {
    const response = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      messages: [{ role: 'user', content: prompt }],
    });

    anthropicBreaker.recordSuccess();
    const content = response.content[0];
    return content.type === 'text' ? content.text : '';
  } catch (error) {
    anthropicBreaker.recordFailure();
    throw error;
  }
}
const getFallbackResponse = () => 'fallback';

/** `n` calls through `callAgent`; answers by kind. */
async function calls(breaker, client, n) {
  const seen = { text: 0, fallback: 0, error: 0 };
  for (let i = 0; i < n; i++) {
    try {
      const r = await callAgent(breaker, client, 'hi');
      seen[r === 'fallback' ? 'fallback' : 'text']++;
    } catch {
      seen.error++;
    }
  }
  return seen;
}

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

test('seed 000 on shared breakers: isHealthy() is a boolean, the failing instance blocks at once, the others within one lease', async () => {
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

  // `b` learns within one lease: once its lease runs out, the renewal (sent in the background by
  // the call that found it expired) brings the OPEN state.
  client.calls = 0;
  now += LEASE_MS;
  await calls(b, client, 1);
  await b.flush();
  const before = client.calls;
  assert.ok(before <= 1, `at most the call that renewed the lease reached the provider (${before})`);
  assert.deepEqual(await calls(b, client, 10), { text: 0, fallback: 10, error: 0 });
  assert.equal(client.calls, before);
  assert.equal(b.state, 'OPEN');

  // Liveness: the provider heals; after the open period, probes go through and close the fleet's
  // breaker (two successes), and every instance lets calls through again.
  client.down = false;
  now += SEED000.resetTimeout;
  let rounds = 0;
  while (f.view().state !== 'CLOSED' && rounds++ < 10) {
    await calls(a, client, 1);
    await a.flush();
  }
  assert.equal(f.view().state, 'CLOSED', `closed after ${rounds} rounds`);
  assert.ok(rounds <= 4, `two probes, each asked for in the background: ${rounds} rounds`);
  assert.deepEqual(await calls(a, client, 3), { text: 3, fallback: 0, error: 0 });
  now += LEASE_MS;
  await calls(b, client, 1);
  await b.flush();
  assert.deepEqual(await calls(b, client, 3), { text: 3, fallback: 0, error: 0 });
  assert.equal(b.state, 'CLOSED');
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
