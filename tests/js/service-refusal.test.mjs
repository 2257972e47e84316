// breakwater/shared's `service` transport when the breaker service starts refusing every request
// (a 401 after the service's token was rotated and this app still sends the old one), against a
// local HTTP server on 127.0.0.1 that answers /v1/acquire and /v1/report with the package's own
// coordinator (wasm) until the token is rotated. The clock is injected: simulated time passes
// between calls, the lease (1000 ms by default) runs out again and again.
//
// Today: a 4xx on the lease renewal is taken as "this report will be refused again": the report is
// dropped but the client neither falls back nor backs off; every call renews again, up to six
// times, then throws a CircuitOpenError although the state it knows is CLOSED. Nearly every call
// is rejected, and each costs about six requests to the service.
// Liveness: while the service refuses, calls keep being admitted by the local fallback breaker
// (the 'local' event names the 401), and the service is asked again about once per
// retryUnreachableMs (default 1000 ms), not on every call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { isCircuitOpenError } from 'breakwater';
import { SharedCircuitBreaker } from 'breakwater/shared';
// The core's coordinator in this process, from the package's hidden subpath (what breakwater/store
// and breakwater/cloudflare use), which loads its wasm module.
import { coordinatorGlue } from 'breakwater/coordinator';

const SPEC = JSON.stringify({ lease_ms: 1000, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 }, open_duration_ms: 1000 } });

/** The breaker service on 127.0.0.1: the coordinator behind `Bearer <token>`, 401 otherwise. */
async function startService(clock) {
  const co = coordinatorGlue().WasmCoordinator.create('llm', SPEC, undefined, false);
  const s = { token: 't', requests: 0, refused: 0, byOp: { acquire: 0, report: 0 } };
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    s.requests++;
    const op = req.url.startsWith('/v1/acquire') ? 'acquire' : req.url.startsWith('/v1/report') ? 'report' : null;
    if (op === null) {
      res.writeHead(404).end('{"error":"not_found"}');
      return;
    }
    s.byOp[op]++;
    if (s.tooMany) {
      s.refused++;
      res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":"too_many_requests","message":"slow down"}');
      return;
    }
    if (req.headers.authorization !== `Bearer ${s.token}`) {
      s.refused++;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(co.exchange(clock(), body, op === 'acquire'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  s.url = `http://127.0.0.1:${server.address().port}`;
  s.view = (now) => co.view(now);
  s.close = async () => {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
    co.free?.();
  };
  return s;
}

test('service answering 401 after a token rotation: calls are admitted by the local breaker, requests stay bounded', async (t) => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const service = await startService(clock);
  t.after(() => service.close());
  const b = new SharedCircuitBreaker('llm', { service: { url: service.url, token: 't' }, clock });
  const events = [];
  b.onEvent((e) => events.push(e));

  // Healthy: a lease, renewed as it runs out.
  for (let i = 0; i < 5; i++) {
    now += 250;
    assert.equal(await b.execute(() => 'ok'), 'ok');
  }
  assert.equal(b.state, 'CLOSED');
  assert.ok(service.requests > 0 && service.refused === 0);

  // The service's token is rotated; this app still sends the old one.
  service.token = 'rotated';
  const r0 = service.requests;
  const stepMs = 250;
  const calls = 100;
  const seen = { admitted: 0, rejected: 0, other: 0 };
  const statesWhenRejected = new Set();
  for (let i = 0; i < calls; i++) {
    now += stepMs;
    try {
      await b.execute(() => 'ok');
      seen.admitted++;
    } catch (e) {
      if (isCircuitOpenError(e)) {
        seen.rejected++;
        statesWhenRejected.add(b.state);
      } else seen.other++;
    }
  }
  const requests = service.requests - r0;
  const elapsed = calls * stepMs;
  const fallback = events.find((e) => e.type === 'local');
  t.diagnostic(
    `token rotated: ${seen.admitted} of ${calls} calls admitted, ${seen.rejected} rejected with CircuitOpenError ` +
      `(state then: ${[...statesWhenRejected].join(', ') || '-'}), ${seen.other} other errors; ${requests} requests to the ` +
      `service over ${elapsed} ms (${service.byOp.acquire} acquire, ${service.byOp.report} report in all); ` +
      `events: ${[...new Set(events.map((e) => e.type))].join(', ')}; fallback reason: ${fallback?.reason ?? '-'}; ` +
      `decidingLocally ${b.decidingLocally}, dropped ${b.dropped}`,
  );
  assert.equal(seen.other, 0);
  assert.ok(seen.admitted >= 90, `${seen.admitted} of ${calls} calls admitted while the service refuses`);
  assert.ok(fallback, `a 'local' event (events: ${events.map((e) => e.type).join(', ')})`);
  assert.match(fallback.reason, /401/);
  // About one request per retryUnreachableMs (1000 ms): twice that, with one more period, at most.
  const bound = 2 * (Math.ceil(elapsed / 1000) + 1);
  assert.ok(requests <= bound, `${requests} requests to the service over ${elapsed} ms (bound ${bound})`);
});

test('service answering 429 (too many requests): the lease in hand is kept, no local event, the service is left alone a while, then all goes on', async (t) => {
  let now = 1_800_000_000_000;
  const clock = () => now;
  const service = await startService(clock);
  t.after(() => service.close());
  const b = new SharedCircuitBreaker('llm', { service: { url: service.url, token: 't' }, clock, leaseMs: 1000 });
  const events = [];
  b.onEvent((e) => events.push(e));
  now += 10;
  assert.equal(await b.execute(() => 'ok'), 'ok');
  await b.flush();
  assert.equal(b.decidingLocally, false);

  // Every request is now answered 429. A failure is reported at once: refused.
  service.tooMany = true;
  const r0 = service.requests;
  now += 10;
  await assert.rejects(b.execute(() => Promise.reject(new Error('upstream 529'))), /529/);
  await b.flush();
  // Within the lease: calls admitted on it, not by the local breaker, no `local` event.
  for (let i = 0; i < 8; i++) {
    now += 100;
    assert.equal(await b.execute(() => 'ok'), 'ok');
  }
  assert.equal(b.decidingLocally, false, 'the coordinator answered: its lease stands');
  assert.equal(events.filter((e) => e.type === 'local').length, 0, JSON.stringify(events));
  const during = service.requests - r0;
  assert.ok(during <= 2, `${during} requests while held off`);

  // The service serves again: within a few held-off periods everything counted reaches it.
  service.tooMany = false;
  for (let i = 0; i < 40; i++) {
    now += 100;
    assert.equal(await b.execute(() => 'ok'), 'ok');
  }
  await b.flush();
  assert.equal(b.decidingLocally, false);
  assert.equal(b.state, 'CLOSED');
  const fleet = JSON.parse(service.view(now));
  t.diagnostic(`429s: ${during} requests while held off; then the service counted ${fleet.stats.failures} failure(s), ${fleet.stats.successes} successes`);
  assert.equal(fleet.stats.failures, 1, 'the failure refused with a 429 is counted once it goes through');
});
