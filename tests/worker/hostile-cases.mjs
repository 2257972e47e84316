// What a holder of SERVICE_TOKEN (every client outside Cloudflare has it) may try on the routes,
// written once and run against both Workers: the Rust one (routes.test.mjs) and a JavaScript
// developer's own Worker with breakwater/cloudflare's routes (cloudflare-routes.test.mjs). The
// routes of both are the core's (src/shared/routes.rs); these cases hold each host to them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { answer } from './harness.mjs';

const MiB = 1024 * 1024;

/**
 * POSTs a body without a length (chunked) of up to `total` bytes, writing as fast as the socket
 * takes it, until the answer comes: the status, the text and how many bytes were written first.
 * A host that reads the whole body before answering takes all `total` bytes. `reset`: the
 * connection was reset before the answer could be read.
 */
export function pushUntilAnswered(url, { token, total, chunk = 64 * 1024, headers = {} }) {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const q = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers } });
    q.on('error', (e) => {
      // The server answered and closed while the body was still being written: the connection
      // is reset under the writer, sometimes before the answer is read. That too is the server
      // refusing to read on.
      if (answered) return;
      if (e.code === 'ECONNRESET' || e.code === 'EPIPE') resolve({ status: null, reset: e.code, text: '', sent });
      else reject(e);
    });
    q.on('response', (resp) => {
      answered = true;
      let text = '';
      resp.on('data', (d) => (text += d));
      resp.on('end', () => {
        q.destroy();
        resolve({ status: resp.statusCode, text, sent });
      });
    });
    const buf = Buffer.alloc(chunk, 0x20);
    const pump = () => {
      while (!answered && sent < total) {
        sent += chunk;
        if (!q.write(buf)) {
          q.once('drain', pump);
          return;
        }
      }
      if (!answered) q.end();
    };
    pump();
  });
}

/** A POST with a body and headers: status and parsed body. */
export async function post(url, { token, body = '', headers = {} }) {
  return answer(await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body }));
}

/**
 * Registers the cases. `base()`: the routes' URL (mount point included); `name`: a breaker the
 * routes serve; `fresh`: another, which nothing has used yet (where settings could be chosen);
 * `view()`: `name`'s admin view (`{ status, body }`).
 */
export function hostileServiceCases({ base, serviceToken, adminToken, name, fresh, view }) {
  const service = (op) => `${base()}/v1/${op}?breaker=${encodeURIComponent(name)}`;

  test('hostile service client: a 256 MiB chunked report is cut at 64 KiB (413), never read whole; the Worker serves on', async (t) => {
    const r = await pushUntilAnswered(service('report'), { token: serviceToken, total: 256 * MiB });
    t.diagnostic(`written before the answer: ${(r.sent / MiB).toFixed(2)} MiB (${r.reset ?? r.status})`);
    if (r.reset === undefined) {
      assert.equal(r.status, 413, r.text);
      assert.equal(JSON.parse(r.text).error, 'payload_too_large');
    }
    // What the socket took before the answer came: the limit plus what the buffers on the way
    // hold, far from the whole body.
    assert.ok(r.sent < 32 * MiB, `${(r.sent / MiB).toFixed(1)} MiB written before the answer`);
    // The isolate is alive and the breaker answers.
    const ok = await post(service('acquire'), { token: serviceToken, body: '{"client":"after-the-flood"}' });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.ok(ok.body.lease, JSON.stringify(ok.body));
  });

  test('a chunked report over the limit that never ends is answered 413 as soon as the limit is passed', async () => {
    // 80 KiB in 16 KiB chunks, and the request never ends: an answer can only come from reading
    // the stream and stopping at the limit.
    const r = await new Promise((resolve, reject) => {
      const q = http.request(service('report'), { method: 'POST', headers: { authorization: `Bearer ${serviceToken}`, 'content-type': 'application/json' } });
      const timer = setTimeout(() => {
        q.destroy();
        reject(new Error('no answer within 10 s'));
      }, 10_000);
      q.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      q.on('response', (resp) => {
        let text = '';
        resp.on('data', (d) => (text += d));
        resp.on('end', () => {
          clearTimeout(timer);
          q.destroy();
          resolve({ status: resp.statusCode, text, ended: q.writableEnded });
        });
      });
      for (let i = 0; i < 5; i++) q.write(' '.repeat(16 * 1024));
    });
    assert.equal(r.status, 413, r.text);
    assert.equal(JSON.parse(r.text).error, 'payload_too_large');
    assert.equal(r.ended, false);
  });

  test('hostile service client: its settings header changes nothing, on a breaker never used, nor through a reset after it', async () => {
    // Valid settings, which would refuse the fleet for an hour at the first failure.
    const hostile = JSON.stringify({ lease_ms: 3_600_000, breaker: { open_duration_ms: 3_600_000, max_open_duration_ms: 3_600_000, trip: { kind: 'consecutive_failures', threshold: 1 } } });
    const ask = (breaker, client) =>
      post(`${base()}/v1/acquire?breaker=${encodeURIComponent(breaker)}`, { token: serviceToken, body: JSON.stringify({ client }), headers: { 'breakwater-settings': hostile } });
    if (fresh !== undefined) {
      // The first request a breaker ever hears.
      const first = await ask(fresh, 'hostile-first');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.notEqual(first.body.lease.lease_ms, 3_600_000, 'the hostile lease');
    }
    const before = (await view()).body;
    for (let i = 0; i < 3; i++) {
      const r = await ask(name, `hostile-${i}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.lease.lease_ms, before.lease.lease_ms, 'the lease the breaker runs under');
    }
    // An operator's reset right after: the settings the breaker ran under, not the last request's.
    const reset = await post(`${base()}/admin/breakers/${encodeURIComponent(name)}/reset`, { token: adminToken });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    const after = (await view()).body;
    assert.equal(after.options, before.options, 'the settings fingerprint');
    assert.equal(after.options_mismatch, null);
    assert.equal(after.lease.lease_ms, before.lease.lease_ms);
  });

  test('hostile service client: the admin routes stay shut to its token', async () => {
    for (const [method, route] of [
      ['GET', '/metrics'],
      ['GET', `/admin/breakers/${encodeURIComponent(name)}`],
      ['POST', `/admin/breakers/${encodeURIComponent(name)}/isolate`],
      ['POST', `/admin/breakers/${encodeURIComponent(name)}/reset`],
    ]) {
      const resp = await fetch(`${base()}${route}`, { method, headers: { authorization: `Bearer ${serviceToken}` } });
      assert.equal(resp.status, 401, `${method} ${route}`);
      await resp.text();
    }
    assert.equal((await view()).body.lease.mode, 'automatic');
    // And the admin token is not a service token.
    const r = await post(service('acquire'), { token: adminToken, body: '{"client":"admin"}' });
    assert.equal(r.status, 401);
  });

  test('a reset whose body is not valid settings is refused by field and value, and changes nothing', async () => {
    // A failure on record first, which a reset would clear.
    const lease = await post(service('acquire'), { token: serviceToken, body: '{"client":"reset-witness"}' });
    assert.equal(lease.status, 200, JSON.stringify(lease.body));
    const report = { client: 'reset-witness', batches: [{ seq: 1, counts: [{ generation: lease.body.lease.generation, failures: 1 }] }] };
    const reported = await post(service('report'), { token: serviceToken, body: JSON.stringify(report) });
    assert.equal(reported.status, 200, JSON.stringify(reported.body));
    const before = (await view()).body;
    assert.ok(before.stats.failures >= 1, JSON.stringify(before.stats));
    const url = `${base()}/admin/breakers/${encodeURIComponent(name)}/reset`;
    const r = await post(url, { token: adminToken, body: JSON.stringify({ lease_ms: 0 }) });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.message, /lease_ms.*0/);
    const bad = await post(url, { token: adminToken, body: 'not json' });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    const too = await post(url, { token: adminToken, body: JSON.stringify({ breaker: { half_open_success_threshold: 4_000_000_000 } }) });
    assert.equal(too.status, 400, JSON.stringify(too.body));
    assert.match(too.body.message, /half_open_success_threshold/);
    const after = (await view()).body;
    assert.equal(after.options, before.options);
    assert.deepEqual(after.stats, before.stats, 'no reset happened');
  });
}
