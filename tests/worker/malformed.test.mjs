// Malformed requests to the object and to the admin routes get a clear 4xx and leave the state
// untouched; the admin routes need the bearer token, and are off without the secret.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, objectWorker, jsApp, start, call, admin, ADMIN_TOKEN } from './harness.mjs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

const BREAKERS = { upstream: { lease_ms: 200, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 } } } };
let upstream;
let env;
let app;

before(async () => {
  upstream = await startUpstream();
  env = await start([
    objectWorker({ breakers: BREAKERS }),
    jsApp('js-app', { upstream: upstream.url, breaker: 'upstream' }),
    { ...objectWorker({ breakers: BREAKERS, adminToken: null }), name: 'no-secret' },
  ]);
  app = await env.app('js-app');
  // Some real state first: two failures (one short of opening) and a success.
  const raw = (body) => call(app, '/raw?op=report', { method: 'POST', body: JSON.stringify(body) });
  const r = await raw({ client: 'setup', batches: [{ seq: 1, counts: [{ generation: 0, successes: 1, failures: 2 }] }] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});

after(async () => {
  await env?.mf.dispose();
  await upstream?.close();
});

/** The parts of the state a request could change. */
async function snapshot() {
  const { body } = await admin(env.mf, '/admin/breakers/upstream');
  const { requests, acquires, reports, ...counters } = body.counters;
  return { lease: { ...body.lease, now: 0 }, stats: body.stats, counters, probes: body.probes_in_flight };
}

const big = 'x'.repeat(70 * 1024);
const cases = [
  ['not JSON', 'report', 'POST', 'this is not json', 400],
  ['empty body', 'report', 'POST', '', 400],
  ['no client', 'report', 'POST', '{}', 400],
  ['bad client id', 'report', 'POST', '{"client":"no spaces please"}', 400],
  ['client id too long', 'acquire', 'POST', JSON.stringify({ client: 'a'.repeat(65) }), 400],
  ['unknown field', 'report', 'POST', '{"client":"a","surprise":1}', 400],
  ['seq zero', 'report', 'POST', '{"client":"a","batches":[{"seq":0}]}', 400],
  ['seq not increasing', 'report', 'POST', '{"client":"a","batches":[{"seq":2},{"seq":2}]}', 400],
  ['negative count', 'report', 'POST', '{"client":"a","batches":[{"seq":1,"counts":[{"generation":0,"failures":-1}]}]}', 400],
  ['count overflows u32', 'report', 'POST', '{"client":"a","batches":[{"seq":1,"counts":[{"generation":0,"failures":4294967296}]}]}', 400],
  ['too many batches', 'report', 'POST', JSON.stringify({ client: 'a', batches: Array.from({ length: 17 }, (_, i) => ({ seq: i + 1 })) }), 400],
  ['bad outcome', 'report', 'POST', '{"client":"a","batches":[{"seq":1,"probes":[{"generation":0,"id":0,"issued_at":0,"outcome":"meh"}]}]}', 400],
  ['string where a number goes', 'report', 'POST', '{"client":"a","batches":[{"seq":"1"}]}', 400],
  ['body too large', 'report', 'POST', big, 413],
  ['GET on acquire', 'acquire', 'GET', null, 405],
  ['unknown operation', 'explode', 'POST', '{}', 404],
];

for (const [what, op, method, body, status] of cases) {
  test(`object: ${what} → ${status}, state untouched`, async () => {
    const before = await snapshot();
    const init = { method };
    if (body !== null) init.body = body;
    const r = await call(app, `/raw?op=${op}`, init);
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.equal(typeof r.body.error, 'string');
    assert.equal(typeof r.body.message, 'string');
    assert.deepEqual(await snapshot(), before);
  });
}

test('object: a batch over the limits is refused alone (listed in `refused`), nothing applied', async () => {
  const before = await snapshot();
  const body = JSON.stringify({ client: 'a', batches: [{ seq: 1, counts: [{ generation: 0, successes: 4000000000 }] }] });
  const r = await call(app, '/raw?op=report', { method: 'POST', body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.acked, []);
  assert.equal(r.body.refused.length, 1);
  assert.equal(r.body.refused[0].seq, 1);
  assert.match(r.body.refused[0].reason, /outcomes/);
  const after = await snapshot();
  assert.deepEqual(after.stats, before.stats);
  assert.equal(after.counters.refused_batches, before.counters.refused_batches + 1);
});

test('object: a name that is not configured → 404, nothing created', async () => {
  const r = await call(app, '/raw?op=report&name=someone-else', { method: 'POST', body: '{"client":"a"}' });
  assert.equal(r.status, 404);
  assert.equal(r.body.error, 'not_found');
});

test('admin: a missing or wrong bearer token → 401, state untouched', async () => {
  const before = await snapshot();
  for (const token of [null, '', 'wrong', `${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1)]) {
    for (const [route, method] of [['/metrics', 'GET'], ['/admin/breakers/upstream', 'GET'], ['/admin/breakers/upstream/isolate', 'POST'], ['/admin/breakers/upstream/reset', 'POST']]) {
      const r = await admin(env.mf, route, { method, token });
      assert.equal(r.status, 401, `${route} with ${token}`);
    }
  }
  assert.deepEqual(await snapshot(), before);
});

test('admin: unknown names, routes and methods → 404/405', async () => {
  const before = await snapshot();
  assert.equal((await admin(env.mf, '/admin/breakers/not-configured')).status, 404);
  assert.equal((await admin(env.mf, '/admin/breakers/bad%20name')).status, 404);
  assert.equal((await admin(env.mf, '/admin/breakers/upstream/explode', { method: 'POST' })).status, 404);
  assert.equal((await admin(env.mf, '/admin/breakers/upstream', { method: 'DELETE' })).status, 405);
  assert.equal((await admin(env.mf, '/admin/breakers/upstream/isolate', { method: 'GET' })).status, 405);
  assert.equal((await admin(env.mf, '/metrics', { method: 'POST' })).status, 405);
  assert.equal((await admin(env.mf, '/nothing-here')).status, 404);
  assert.deepEqual(await snapshot(), before);
});

test('admin: without the ADMIN_TOKEN secret the routes are off', async () => {
  const noSecret = await env.app('no-secret');
  for (const route of ['/metrics', '/admin/breakers/upstream']) {
    const resp = await noSecret.fetch(`http://x${route}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await resp.text();
    assert.equal(resp.status, 404, route);
  }
});

test('admin: metrics, isolate and reset with the token', async () => {
  const metrics = await admin(env.mf, '/metrics');
  assert.equal(metrics.status, 200);
  assert.deepEqual(metrics.body.map((v) => v.name), ['upstream']);
  const text = await admin(env.mf, '/metrics?format=prometheus');
  assert.equal(text.status, 200);
  assert.match(text.body, /^breakwater_state\{breaker="upstream",state="closed"\} 1$/m);
  assert.match(text.body, /^breakwater_calls_total\{breaker="upstream",result="failure"\} 2$/m);
  const isolated = await admin(env.mf, '/admin/breakers/upstream/isolate', { method: 'POST' });
  assert.equal(isolated.status, 200);
  assert.equal(isolated.body.lease.state, 'OPEN');
  assert.equal(isolated.body.lease.mode, 'isolated');
  const { body } = await call(app);
  assert.equal(body.result, 'rejected');
  const reset = await admin(env.mf, '/admin/breakers/upstream/reset', { method: 'POST' });
  assert.equal(reset.body.lease.state, 'CLOSED');
  assert.equal(reset.body.lease.mode, 'automatic');
  // The isolation was an incident (OPEN → CLOSED): breakwater_incident_seconds counts it, and
  // the whole text is accepted by a Prometheus text parser.
  const after = await admin(env.mf, '/metrics?format=prometheus');
  assert.match(after.body, /^breakwater_incident_seconds_count\{breaker="upstream"\} 1$/m);
  assert.match(after.body, /^breakwater_incident_seconds_bucket\{breaker="upstream",le="\+Inf"\} 1$/m);
  const names = parsePrometheusTextFormat(after.body).map((f) => `${f.name} ${f.type}`);
  assert.deepEqual(names, [
    'breakwater_state GAUGE',
    'breakwater_opened_total COUNTER',
    'breakwater_calls_total COUNTER',
    'breakwater_incident_seconds HISTOGRAM',
    'breakwater_probes_granted_total COUNTER',
  ]);
});
