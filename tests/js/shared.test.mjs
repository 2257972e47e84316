// breakwater/shared's client in Node against transports written in the test: how it counts what a
// call returns, which service URLs it accepts, what it does with a refused report, and its local
// breaker while the coordinator is unreachable. The coordinator is the package's own (wasm).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { SharedCircuitBreaker, classifyOutcome } from 'breakwater/shared';
// The core's coordinator in this process, from the package's hidden subpath (what breakwater/store
// and breakwater/cloudflare use), which loads its wasm module.
import { coordinatorGlue } from 'breakwater/coordinator';
import { reportedErrors } from './helpers.mjs';

const SPEC = JSON.stringify({ lease_ms: 1000, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 }, open_duration_ms: 1000 } });

/** A coordinator in this process behind a `service` fetch; `hook(op, body)` may answer instead. */
function service(clock, hook = () => undefined) {
  const co = coordinatorGlue().WasmCoordinator.create('llm', SPEC, undefined, false);
  const seen = [];
  const fetch = async (url, init) => {
    const op = url.includes('/v1/acquire') ? 'acquire' : 'report';
    seen.push({ op, body: init.body });
    const instead = await hook(op, init.body);
    if (instead) return instead;
    return new Response(co.exchange(clock(), init.body, op === 'acquire'), { status: 200 });
  };
  return { co, seen, options: { service: { url: 'https://breakwater.example', token: 't', fetch } } };
}

test('a returned Response of 503 counts as a failure and a 400 is ignored, as execute counts them', async () => {
  let now = 1_800_000_000_000;
  const s = service(() => now);
  const b = new SharedCircuitBreaker('llm', { ...s.options, clock: () => now });
  for (let i = 0; i < 5; i++) await b.execute(() => new Response('bad prompt', { status: 400 }));
  assert.equal(b.state, 'CLOSED');
  for (let i = 0; i < 3; i++) await b.execute(() => new Response('overloaded', { status: 503 }));
  assert.equal(b.state, 'OPEN');
  await assert.rejects(b.execute(() => 'never'), isCircuitOpenError);
  const stats = JSON.parse(s.co.view(now)).stats;
  assert.deepEqual([stats.failures, stats.ignored], [3, 5]);
  assert.equal(classifyOutcome({ ok: true, value: new Response('', { status: 529 }) }), 'failure');
  assert.equal(classifyOutcome({ ok: false, error: Object.assign(new Error('x'), { status: 422 }) }), 'ignored');
  assert.equal(classifyOutcome({ ok: true, value: { status: 503 } }), 'success', 'only a Response is read for its status');
});

test('the service URL must be https, except on loopback; the token is required', () => {
  const ok = (url) => new SharedCircuitBreaker('llm', { service: { url, token: 't' } });
  for (const url of ['https://breakwater.example.workers.dev', 'http://127.0.0.1:8787', 'http://localhost:8787', 'http://[::1]:8787']) {
    assert.ok(ok(url), url);
  }
  for (const url of ['http://breakwater.example.workers.dev', 'ftp://x', 'not a url']) {
    assert.throws(() => ok(url), /service\.url/, url);
  }
  assert.throws(() => new SharedCircuitBreaker('llm', { service: { url: 'https://x', token: '' } }), /token/);
});

test('the local breaker is the core: CircuitBreaker options, never another object', () => {
  const s = service(Date.now);
  assert.ok(new SharedCircuitBreaker('llm', { ...s.options, local: { failureThreshold: 2, resetTimeout: 1000 } }));
  const homemade = { isHealthy: () => true, recordSuccess() {}, recordFailure() {} };
  assert.throws(() => new SharedCircuitBreaker('llm', { ...s.options, local: homemade }), /local/);
  assert.throws(() => new SharedCircuitBreaker('llm', { ...s.options, local: { failureThreshold: 0 } }), /failureThreshold/);
  assert.throws(() => new SharedCircuitBreaker('llm', { ...s.options, maxBatch: 100_000 }), /maxBatch/);
});

test('a report the coordinator refuses is dropped and announced, never sent again', async () => {
  let now = 1_800_000_000_000;
  const s = service(() => now, (op) => (op === 'report' ? new Response('{"error":"payload_too_large"}', { status: 413 }) : undefined));
  const b = new SharedCircuitBreaker('llm', { ...s.options, clock: () => now });
  const events = [];
  b.onEvent((e) => events.push(e));
  await assert.rejects(b.execute(() => Promise.reject(Object.assign(new Error('overloaded'), { status: 529 }))));
  const reports = s.seen.filter((x) => x.op === 'report');
  assert.equal(reports.length, 1);
  const dropped = events.find((e) => e.type === 'dropped');
  assert.ok(dropped, JSON.stringify(events));
  assert.equal(dropped.outcomes, 1);
  assert.match(dropped.reason, /413/);
  assert.equal(b.dropped, 1);
  assert.equal(b.unacknowledged, 0);
  now += 2_000;
  await b.flush();
  for (const r of s.seen.filter((x) => x.op === 'report').slice(1)) {
    assert.notEqual(r.body, reports[0].body, 'the refused report was sent again unchanged');
  }
});

test('while the coordinator is unreachable the local breaker trips, probes, and an ignored probe does not lock it shut', async () => {
  let now = 1_800_000_000_000;
  const down = async () => {
    throw new Error('connect ECONNREFUSED');
  };
  const b = new SharedCircuitBreaker('llm', {
    service: { url: 'https://breakwater.example', token: 't', fetch: down },
    clock: () => now,
    retryUnreachableMs: 300_000,
    local: { failureThreshold: 2, resetTimeout: 1_000 },
  });
  const events = [];
  b.onEvent((e) => events.push(e.type));
  const fail = () => Promise.reject(Object.assign(new Error('overloaded'), { status: 529 }));
  await assert.rejects(b.execute(fail), /overloaded/);
  assert.equal(b.decidingLocally, true);
  assert.deepEqual(events, ['local']);
  await assert.rejects(b.execute(fail), /overloaded/);
  await assert.rejects(b.execute(() => 'never'), isCircuitOpenError);
  now += 1_000;
  // The probe's answer is a 400: it says nothing about the upstream and frees the probe slot.
  assert.equal((await b.execute(() => new Response('bad prompt', { status: 400 }))).status, 400);
  assert.equal(await b.execute(() => 'probe'), 'probe');
  assert.equal(await b.execute(() => 'closed again'), 'closed again');
});

test('a listener that throws stops neither the other listeners nor the breaker; its error is reported asynchronously', async () => {
  let now = 1_800_000_000_000;
  const s = service(() => now);
  const b = new SharedCircuitBreaker('llm', { ...s.options, clock: () => now });
  const seen = [];
  const reported = await reportedErrors(async () => {
    b.onEvent(() => {
      throw new Error('a listener bug');
    });
    b.onEvent((e) => seen.push(e.type === 'state' ? `${e.from} -> ${e.to}` : e.type));
    assert.equal(await b.execute(() => 'ok'), 'ok');
    for (let i = 0; i < 3; i++) await b.execute(() => new Response('overloaded', { status: 503 }));
    assert.equal(b.state, 'OPEN');
    await assert.rejects(b.execute(() => 'never'), isCircuitOpenError);
  });
  assert.deepEqual(seen, ['null -> CLOSED', 'CLOSED -> OPEN']);
  assert.deepEqual(
    reported.map((e) => e.message),
    seen.map(() => 'a listener bug'),
    'each throw is reported, none swallowed',
  );
});
