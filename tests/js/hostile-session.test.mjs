// A holder of the service token sends the coordinator what it likes: here the package's own
// coordinator (its wasm, as breakwater/cloudflare's object and breakwater/store run it) takes the
// messages such a client sends. What it must not win: a throttle on a healthy fleet, a failing
// breaker held CLOSED by forged successes, a record changed by a flood of requests. And the
// settings every breaker kind accepts leave it able to close: each refuses the rest by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'breakwater';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { StoreCircuitBreaker, MemoryStore } from 'breakwater/store';
import { coordinatorGlue } from 'breakwater/coordinator';

const T0 = 1_800_000_000_000;
const report = (client, session, batches) => JSON.stringify({ client, session, batches });
const counts = (c) => ({ generation: 0, successes: 0, failures: 0, ignored: 0, throttled: 0, ...c });

function coordinator(breaker) {
  const co = coordinatorGlue().WasmCoordinator.create('llm', JSON.stringify({ breaker }), undefined, false);
  assert.ok(co, 'settings accepted');
  return co;
}

test('a forged report of a million shed calls does not throttle a healthy fleet', (t) => {
  // A rule that does not trip here, so that the throttle alone answers a degraded upstream.
  const co = coordinator({ trip: { kind: 'consecutive_failures', threshold: 1_000_000 }, throttle: {} });
  t.after(() => co.free());
  co.exchange(T0, report('honest', 1, [{ seq: 1, counts: [counts({ successes: 400 })] }]), false);
  const forged = Array.from({ length: 16 }, (_, i) => ({ seq: i + 1, counts: [counts({ throttled: 62_500 })] }));
  const reply = JSON.parse(co.exchange(T0, report('mallory', 9, forged), false));
  assert.equal(co.status(), 200);
  assert.equal(reply.lease.state, 'CLOSED');
  assert.equal(reply.lease.throttle_ppm ?? 0, 0, 'a healthy fleet sheds nothing');
  assert.equal(JSON.parse(co.view(T0)).counters.sheds_dropped, 1_000_000);
  // Liveness: a failing upstream still throttles.
  co.exchange(T0 + 1, report('honest', 1, [{ seq: 2, counts: [counts({ successes: 100, failures: 1_900 })] }]), false);
  assert.ok(JSON.parse(co.view(T0 + 1)).lease.throttle_ppm > 0);
});

test('forged successes from one session do not hold a failing breaker CLOSED; it closes once the upstream heals', (t) => {
  const co = coordinator({ trip: { kind: 'failure_rate', threshold_percent: 50, minimum_calls: 20, window: { millis: 10_000 } }, open_duration_ms: 1_000 });
  t.after(() => co.free());
  let now = T0;
  const seq = new Map();
  const send = (client, c) => {
    const n = (seq.get(client) ?? 0) + 1;
    seq.set(client, n);
    const generation = JSON.parse(co.view(now)).lease.generation;
    return JSON.parse(co.exchange(now, report(client, 1, [{ seq: n, counts: [counts({ generation, ...c })] }]), false));
  };
  let state = 'CLOSED';
  for (let i = 0; i < 100 && state === 'CLOSED'; i++) {
    now += 100;
    send('mallory', { successes: 62_500 });
    for (let k = 0; k < 10; k++) state = send(`honest-${k}`, { failures: 20 }).lease.state;
  }
  const view = JSON.parse(co.view(now));
  t.diagnostic(`opened after ${now - T0} ms; forged outcomes dropped: ${view.counters.outcomes_dropped}`);
  assert.equal(state, 'OPEN', 'the honest failures open it');
  assert.ok(view.counters.outcomes_dropped > 0);
  // The upstream heals and the forger stops: a probe closes it.
  now += 1_100;
  const probe = JSON.parse(co.exchange(now, report('honest-0', 1, []), true));
  assert.ok(probe.permit, JSON.stringify(probe));
  const { generation, probe: id, issued_at } = probe.permit;
  const probes = [{ generation, id, issued_at, outcome: 'success' }];
  const closed = JSON.parse(co.exchange(now + 10, report('honest-0', 1, [{ seq: seq.get('honest-0') + 1, counts: [], probes }]), false));
  assert.equal(closed.lease.state, 'CLOSED', JSON.stringify(closed.lease));
});

test('a session flooding the coordinator with requests is answered 429 and changes nothing', (t) => {
  const co = coordinator({});
  t.after(() => co.free());
  const statuses = new Map();
  for (let i = 0; i < 400; i++) {
    co.exchange(T0, report('flood', 3, []), true);
    statuses.set(co.status(), (statuses.get(co.status()) ?? 0) + 1);
  }
  t.diagnostic(`400 requests in one ms: ${JSON.stringify(Object.fromEntries(statuses))}`);
  assert.ok((statuses.get(429) ?? 0) > 0, 'some refused');
  assert.ok((statuses.get(200) ?? 0) > 0, 'some served');
  const view = JSON.parse(co.view(T0));
  assert.equal(view.counters.requests_refused, statuses.get(429));
  // Liveness: a second later the same session is served again.
  co.exchange(T0 + 5_000, report('flood', 3, []), true);
  assert.equal(co.status(), 200);
});

test('every breaker kind refuses by name a half-open success threshold that would keep it from closing', () => {
  const options = { halfOpenSuccessThreshold: 101 };
  const kinds = [
    () => new CircuitBreaker('llm', options),
    () => new SharedCircuitBreaker('llm', { service: { url: 'https://breakwater.example', token: 't' }, breaker: options }),
    () => new StoreCircuitBreaker('llm', { store: new MemoryStore(), breaker: options }),
  ];
  for (const make of kinds) assert.throws(make, /halfOpenSuccessThreshold.*101/);
  // 100 is accepted by each.
  assert.ok(new CircuitBreaker('llm', { halfOpenSuccessThreshold: 100 }));
  assert.ok(new StoreCircuitBreaker('llm', { store: new MemoryStore(), breaker: { halfOpenSuccessThreshold: 100 } }));
});

test('a shared breaker refuses by name an open period longer than an hour; a local one may keep it', () => {
  const long = { resetTimeout: 3_600_001 };
  assert.throws(() => new StoreCircuitBreaker('llm', { store: new MemoryStore(), breaker: long }), /resetTimeout.*3600001/);
  assert.ok(new CircuitBreaker('llm', long));
});
