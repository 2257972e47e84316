// The breaker service: the Worker's /v1/acquire and /v1/report routes over HTTP(S) with a bearer
// token, in real workerd (Miniflare on 127.0.0.1), driven by `breakwater/shared` clients in Node
// (`service: { url, token }`), as a Next.js app on Vercel or any runtime with fetch would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { objectWorker, start, admin, sleep } from './harness.mjs';

const SERVICE_TOKEN = 'test-service-token-abcdef0123';
const BREAKERS = {
  llm: { lease_ms: 200, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 }, open_duration_ms: 300 } },
  'openai:gpt-4.1/chat': { lease_ms: 200 },
};

let mf;
let url;
let Shared;
before(async () => {
  // The package as a Node app installs it (scripts/test-worker.sh links the built pkg/).
  Shared = await import('breakwater/shared');
  const w = objectWorker({ breakers: BREAKERS });
  w.bindings.SERVICE_TOKEN = SERVICE_TOKEN;
  ({ mf } = await start([w]));
  url = (await mf.ready).href.replace(/\/$/, '');
});
after(async () => {
  await mf?.dispose();
});

const boom = () => {
  throw new Error('upstream 503');
};
const client = (id, token = SERVICE_TOKEN, name = 'llm') =>
  new Shared.SharedCircuitBreaker(name, { service: { url, token }, clientId: id, requestTimeoutMs: 5000 });

test('two clients outside Cloudflare share one breaker through the service: a trip seen by one is seen by the other, one probe, both close', async () => {
  const a = client('a');
  const b = client('b');
  assert.equal(await a.execute(() => 'ok'), 'ok');
  for (let i = 0; i < 3; i++) await assert.rejects(a.execute(boom), /upstream 503/);
  assert.equal(a.state, 'OPEN');
  // b has never called: its first admission asks the service and is refused.
  await assert.rejects(b.execute(() => 'never'), (e) => e.isCircuitOpenError && e.reason === 'open');

  await sleep(350);
  let release;
  const held = new Promise((r) => (release = r));
  const probe = b.execute(() => held.then(() => 'probe'));
  await sleep(50);
  let refused;
  for (let i = 0; i < 20 && !refused; i++) {
    await a.execute(() => 'second').then(
      () => assert.fail('a second probe was admitted'),
      (e) => (refused = e.isCircuitOpenError && e.reason),
    );
  }
  assert.equal(refused, 'half-open-full');
  release();
  assert.equal(await probe, 'probe');
  // a keeps the refusal it was given (every probe slot taken) for one lease at most, without
  // asking: then it asks, and finds the breaker CLOSED.
  await sleep(250);
  assert.equal(await a.execute(() => 'closed'), 'closed');
  assert.equal(a.state, 'CLOSED');
  assert.equal(await a.flush(), true);
  const { status, body } = await admin(mf, '/admin/breakers/llm');
  assert.equal(status, 200);
  assert.equal(body.lease.state, 'CLOSED');
  assert.equal(body.counters.probes_granted, 1);
  assert.equal(body.stats.failures, 3);
  assert.ok(a.coordinatorRequests > 0 && b.coordinatorRequests > 0);
});

test('names with / and : travel in the query; a wrong token makes the client fall back and say so', async () => {
  const c = client('c', SERVICE_TOKEN, 'openai:gpt-4.1/chat');
  assert.equal(await c.execute(() => 'ok'), 'ok');
  assert.equal(c.state, 'CLOSED');
  assert.equal(c.decidingLocally, false);

  const wrong = client('w', 'not-the-token');
  const events = [];
  wrong.onEvent((e) => events.push(e));
  assert.equal(await wrong.execute(() => 'served locally'), 'served locally');
  assert.equal(wrong.decidingLocally, true);
  assert.equal(events[0].type, 'local');
  assert.match(events[0].reason, /401/);
});

test('the routes refuse what they should: token, method, name, body', async () => {
  const post = (route, { token = SERVICE_TOKEN, method = 'POST', body = '{"client":"x","batches":[]}' } = {}) =>
    fetch(`${url}${route}`, {
      method,
      headers: token === null ? {} : { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: method === 'GET' ? undefined : body,
    }).then(async (r) => ({ status: r.status, text: await r.text() }));
  for (const token of [null, '', 'wrong', `${SERVICE_TOKEN}x`, SERVICE_TOKEN.slice(0, -1)]) {
    assert.equal((await post('/v1/acquire?breaker=llm', { token })).status, 401, String(token));
  }
  // The admin token is not a service token, nor the reverse.
  assert.equal((await post('/v1/report?breaker=llm', { token: 'test-admin-token-0123456789' })).status, 401);
  assert.equal((await admin(mf, '/admin/breakers/llm', { token: SERVICE_TOKEN })).status, 401);
  assert.equal((await post('/v1/acquire?breaker=llm', { method: 'GET' })).status, 405);
  assert.equal((await post('/v1/acquire')).status, 400);
  assert.equal((await post('/v1/acquire?breaker=unknown')).status, 404);
  assert.equal((await post('/v1/acquire?breaker=bad%20name')).status, 404);
  assert.equal((await post('/v1/steal?breaker=llm')).status, 404);
  assert.equal((await post('/v1/report?breaker=llm', { body: '{not json' })).status, 400);
  assert.equal((await post('/v1/report?breaker=llm', { body: 'x'.repeat(70 * 1024) })).status, 413);
  const ok = await post('/v1/report?breaker=llm');
  assert.equal(ok.status, 200);
  assert.ok(JSON.parse(ok.text).lease);
});

test('without SERVICE_TOKEN the routes do not exist', async () => {
  const { mf: bare } = await start([objectWorker({ breakers: BREAKERS })]);
  try {
    const base = (await bare.ready).href.replace(/\/$/, '');
    const r = await fetch(`${base}/v1/acquire?breaker=llm`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
      body: '{"client":"x","batches":[]}',
    });
    assert.equal(r.status, 404);
    await r.text();
  } finally {
    await bare.dispose();
  }
});
