// The Worker's routes in real workerd (Miniflare on 127.0.0.1): breaker names with / on the admin
// routes, the Authorization scheme in any case, request bodies without a length read as a stream
// and cut at the limit, and a BREAKERS that cannot be parsed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { objectWorker, start, admin, answer, ADMIN_TOKEN } from './harness.mjs';
import { hostileServiceCases, post } from './hostile-cases.mjs';

const SERVICE_TOKEN = 'test-service-token-abcdef0123';
const BREAKERS = {
  'openai:gpt-4.1/chat': { lease_ms: 200 },
  a: { lease_ms: 200 },
  'a/reset': { lease_ms: 200 },
};
// Valid JSON, not a valid configuration: a lease of 0 ms.
const BAD_BREAKERS = { a: { lease_ms: 0 } };
const MAX_BODY_BYTES = 64 * 1024;

let mf;
let url;
let entry;
let misconfigured;
before(async () => {
  const w = objectWorker({ breakers: BREAKERS });
  w.bindings.SERVICE_TOKEN = SERVICE_TOKEN;
  const bad = { ...objectWorker({ breakers: BAD_BREAKERS }), name: 'misconfigured' };
  bad.bindings.SERVICE_TOKEN = SERVICE_TOKEN;
  const env = await start([w, bad]);
  mf = env.mf;
  url = (await mf.ready).href.replace(/\/$/, '');
  entry = { fetch: (u, init) => mf.dispatchFetch(u, init) };
  misconfigured = await env.app('misconfigured');
});
after(async () => {
  await mf?.dispose();
});

/** A request with the given Authorization header value (none if null). */
async function send(fetcher, route, { method = 'GET', authorization = null, body } = {}) {
  const headers = authorization === null ? {} : { authorization };
  return answer(await fetcher.fetch(`http://breakwater${route}`, { method, headers, body }));
}

test('admin: a name with / is the rest of the path, as it is or with %2F', async () => {
  const name = 'openai:gpt-4.1/chat';
  let r = await admin(mf, `/admin/breakers/${name}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.name, name);
  assert.equal(r.body.lease.state, 'CLOSED');

  r = await admin(mf, `/admin/breakers/${name}/isolate`, { method: 'POST' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.name, name);
  assert.equal(r.body.lease.state, 'OPEN');
  assert.equal(r.body.lease.mode, 'isolated');

  r = await admin(mf, '/admin/breakers/openai%3Agpt-4.1%2Fchat');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.name, name);
  assert.equal(r.body.lease.state, 'OPEN');

  r = await admin(mf, '/admin/breakers/openai:gpt-4.1%2Fchat/reset', { method: 'POST' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.name, name);
  assert.equal(r.body.lease.state, 'CLOSED');
  assert.equal(r.body.lease.mode, 'automatic');

  const text = await admin(mf, '/metrics?format=prometheus');
  assert.match(text.body, /^breakwater_state\{breaker="openai:gpt-4\.1\/chat",state="closed"\} 1$/m);
  assert.match(text.body, /^breakwater_opened_total\{breaker="openai:gpt-4\.1\/chat"\} 1$/m);
});

test('admin: GET never strips /reset or /isolate, POST does', async () => {
  let r = await admin(mf, '/admin/breakers/a/isolate', { method: 'POST' });
  assert.equal(r.status, 200);
  assert.equal(r.body.name, 'a');
  assert.equal(r.body.lease.state, 'OPEN');

  // GET of `a/reset` views the breaker `a/reset`, and resets nothing.
  r = await admin(mf, '/admin/breakers/a/reset');
  assert.equal(r.status, 200);
  assert.equal(r.body.name, 'a/reset');
  assert.equal(r.body.lease.state, 'CLOSED');
  assert.equal((await admin(mf, '/admin/breakers/a')).body.lease.state, 'OPEN');

  // POST of `a/reset` resets `a`, and leaves the breaker `a/reset` alone.
  r = await admin(mf, '/admin/breakers/a/reset', { method: 'POST' });
  assert.equal(r.status, 200);
  assert.equal(r.body.name, 'a');
  assert.equal(r.body.lease.state, 'CLOSED');
  r = await admin(mf, '/admin/breakers/a%2Freset');
  assert.equal(r.body.name, 'a/reset');
  assert.equal(r.body.stats.opened, 0);

  // An encoded slash is part of the name: POST on a breaker's view is the wrong method.
  assert.equal((await admin(mf, '/admin/breakers/a%2Freset', { method: 'POST' })).status, 405);
  assert.equal((await admin(mf, '/admin/breakers/a/isolate')).status, 405);
  assert.equal((await admin(mf, '/admin/breakers/a/explode', { method: 'POST' })).status, 404);
  assert.equal((await admin(mf, '/admin/breakers/b%2Fc')).status, 404);
  assert.equal((await admin(mf, '/admin/breakers/a%ZZ')).status, 404);
  assert.equal((await admin(mf, '/admin/breakers/')).status, 404);
});

test('the Authorization scheme is matched without regard to case', async () => {
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    const r = await send(entry, '/admin/breakers/a', { authorization: `${scheme} ${ADMIN_TOKEN}` });
    assert.equal(r.status, 200, scheme);
    const s = await send(entry, '/v1/report?breaker=a', {
      method: 'POST',
      authorization: `${scheme} ${SERVICE_TOKEN}`,
      body: '{"client":"x","batches":[]}',
    });
    assert.equal(s.status, 200, `service, ${scheme}: ${JSON.stringify(s.body)}`);
  }
  assert.equal((await send(entry, '/admin/breakers/a', { authorization: `bearer   ${ADMIN_TOKEN}` })).status, 200);
  for (const authorization of [`Basic ${ADMIN_TOKEN}`, `Bearer${ADMIN_TOKEN}`, ADMIN_TOKEN, `Bearer-${ADMIN_TOKEN}`]) {
    const r = await send(entry, '/admin/breakers/a', { authorization });
    assert.equal(r.status, 401, authorization);
  }
});

/**
 * POSTs to the service over a real socket with a chunked body (no content-length): `chunks`
 * chunks of `size` bytes, ending the request only if `end`. Resolves with the answer, which may
 * come before the body is complete.
 */
function chunked(route, { size, chunks, end, timeoutMs = 10000 }) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.on('response', (resp) => {
      let text = '';
      resp.setEncoding('utf8');
      resp.on('data', (d) => (text += d));
      resp.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: resp.statusCode, text, headers: resp.headers, ended: req.writableEnded });
      });
    });
    assert.equal(req.getHeader('content-length'), undefined);
    for (let i = 0; i < chunks; i++) req.write(typeof size === 'string' ? size : ' '.repeat(size));
    if (end) req.end();
  });
}

test('a chunked body under the limit is read whole', async () => {
  const r = await chunked('/v1/report?breaker=a', { size: '{"client":"chunked","batches":[]}', chunks: 1, end: true });
  assert.equal(r.status, 200, r.text);
  assert.ok(JSON.parse(r.text).lease);
  // Padding after the JSON, in several chunks, up to the limit exactly: still accepted.
  const json = '{"client":"chunked","batches":[]}';
  const pad = MAX_BODY_BYTES - json.length;
  const req = await new Promise((resolve, reject) => {
    const q = http.request(`${url}/v1/report?breaker=a`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    });
    q.on('error', reject);
    q.on('response', (resp) => {
      let text = '';
      resp.on('data', (d) => (text += d));
      resp.on('end', () => resolve({ status: resp.statusCode, text }));
    });
    q.write(json);
    for (let left = pad; left > 0; left -= 4096) q.write(' '.repeat(Math.min(4096, left)));
    q.end();
  });
  assert.equal(req.status, 200, req.text);
});

test('a chunked body over the limit is refused with 413 as soon as the limit is passed, before it ends', async () => {
  // 80 KiB in 16 KiB chunks, and the request never ends: an answer can only come from reading
  // the stream and stopping at the limit.
  const r = await chunked('/v1/report?breaker=a', { size: 16 * 1024, chunks: 5, end: false });
  assert.equal(r.status, 413, r.text);
  assert.equal(JSON.parse(r.text).error, 'payload_too_large');
  assert.equal(r.ended, false);
  // One byte over the limit, ended: refused too.
  const over = await chunked('/v1/report?breaker=a', { size: MAX_BODY_BYTES + 1, chunks: 1, end: true });
  assert.equal(over.status, 413, over.text);
});

test('BREAKERS that cannot be parsed: the admin routes say why, the service routes do not', async () => {
  for (const route of ['/admin/breakers/a', '/metrics']) {
    const r = await send(misconfigured, route, { authorization: `Bearer ${ADMIN_TOKEN}` });
    assert.equal(r.status, 500, route);
    assert.equal(r.body.error, 'misconfigured');
    assert.match(r.body.message, /BREAKERS\["a"\]: invalid `lease_ms`: 0/, route);
  }
  // Not before the token is checked.
  const anonymous = await send(misconfigured, '/admin/breakers/a');
  assert.equal(anonymous.status, 401);
  assert.doesNotMatch(JSON.stringify(anonymous.body), /lease_ms/);
  const s = await send(misconfigured, '/v1/report?breaker=a', {
    method: 'POST',
    authorization: `Bearer ${SERVICE_TOKEN}`,
    body: '{"client":"x","batches":[]}',
  });
  assert.equal(s.status, 500);
  assert.equal(s.body.error, 'misconfigured');
  assert.equal(s.body.message, 'BREAKERS is not valid');
});

hostileServiceCases({
  base: () => url,
  serviceToken: SERVICE_TOKEN,
  adminToken: ADMIN_TOKEN,
  name: 'a',
  view: () => admin(mf, '/admin/breakers/a'),
});

test('BREAKERS pins the settings: a reset that names others is refused (409) and changes nothing; the same ones, or none, reset', async () => {
  const reset = (body) => post(`${url}/admin/breakers/a/reset`, { token: ADMIN_TOKEN, body });
  const before = (await admin(mf, '/admin/breakers/a')).body;
  const other = await reset(JSON.stringify({ lease_ms: 999 }));
  assert.equal(other.status, 409, JSON.stringify(other.body));
  assert.equal(other.body.error, 'conflict');
  assert.match(other.body.message, /BREAKERS/);
  const after = (await admin(mf, '/admin/breakers/a')).body;
  assert.equal(after.options, before.options);
  assert.equal(after.lease.lease_ms, 200);
  for (const body of [JSON.stringify(BREAKERS.a), '']) {
    const r = await reset(body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.lease.state, 'CLOSED');
    assert.equal(r.body.lease.lease_ms, 200);
  }
});
