// `breakwater/cloudflare`'s routes and object edges in a JavaScript developer's own Worker
// (apps/user-worker.ts, the packed package): the breaker service shared with Node clients, the
// admin and metrics routes, objects addressed by an id without a name (the JS object and the
// Rust one), and malformed input to the JS object. Real workerd through Miniflare, on 127.0.0.1.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { startUpstream, userWorker, objectWorker, jsApp, start, call, admin, sleep, until, ADMIN_TOKEN } from './harness.mjs';
import { hostileServiceCases, post } from './hostile-cases.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SERVICE_TOKEN = 'test-service-token-9876543210';
const stats = async (f) => (await call(f, '/app/stats', { method: 'GET' })).body;
const flush = async (f) => (await call(f, '/app/flush')).body;

describe('the service routes: Node clients and Worker isolates share one breaker', () => {
  const OPEN_MS = 1000;
  const LEASE_MS = 300;
  const SETTINGS = { failureThreshold: 3, resetTimeout: OPEN_MS };
  let upstream;
  let env;
  let url;
  let Shared;
  const view = async () => (await admin(env.mf, '/breakwater/admin/breakers/svc')).body;

  before(async () => {
    // The packed package, as a Node app installs it (scripts/test-worker.sh installs it here).
    const resolved = fileURLToPath(import.meta.resolve('breakwater/shared'));
    assert.ok(resolved.startsWith(path.join(HERE, 'node_modules/breakwater/')), resolved);
    Shared = await import('breakwater/shared');
    upstream = await startUpstream();
    env = await start(
      ['host', 'app'].map((n) =>
        userWorker(n, {
          upstream: upstream.url,
          breaker: 'svc',
          settings: SETTINGS,
          leaseMs: LEASE_MS,
          bindings: n === 'host' ? { ADMIN_TOKEN, SERVICE_TOKEN, NAMES: 'svc,svc-warn,svc-fresh' } : {},
        }),
      ),
    );
    url = `${(await env.mf.ready).href.replace(/\/$/, '')}/breakwater`;
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });

  test('failures reported from Node open it for the Worker isolates; a Worker’s probe closes it for Node', async () => {
    const workers = [await env.app('host'), await env.app('app')];
    for (const f of workers) {
      assert.equal((await call(f)).body.result, 'ok');
      await flush(f);
    }
    const node = new Shared.SharedCircuitBreaker('svc', { service: { url, token: SERVICE_TOKEN }, breaker: SETTINGS, leaseMs: LEASE_MS, clientId: 'node-1' });
    assert.equal(await node.execute(() => 'ok'), 'ok');
    for (let i = 0; i < 3; i++) {
      await assert.rejects(
        node.execute(() => {
          throw new Error('upstream 503');
        }),
        /upstream 503/,
      );
    }
    await node.flush();
    assert.equal(node.state, 'OPEN');
    assert.equal(node.decidingLocally, false);
    const open = await view();
    assert.equal(open.lease.state, 'OPEN');
    assert.equal(open.stats.failures, 3);
    assert.equal(open.sessions, 3, 'two isolates and the Node client');
    assert.equal(open.options_mismatch, null, 'the Node client runs under the settings the isolates’ clients gave the object');

    await sleep(LEASE_MS + 50); // the isolates' CLOSED leases run out
    const count = upstream.state.count;
    for (const f of workers) {
      const { body } = await call(f);
      assert.equal(body.result, 'rejected', JSON.stringify(body));
      assert.ok(body.retry_after_ms > 0 && body.retry_after_ms <= OPEN_MS);
    }
    assert.equal(upstream.state.count, count, 'no Worker isolate called the upstream');

    const closed = await until(async () => ((await call(workers[1])).body.result === 'ok' ? true : null), { deadlineMs: OPEN_MS + 3000, everyMs: 50 });
    assert.ok(closed, 'the Worker never probed');
    assert.equal(upstream.state.count - count, 1, 'one probe');
    await sleep(LEASE_MS + 50);
    assert.equal(await node.execute(() => 'after'), 'after');
    assert.equal(node.state, 'CLOSED');
    const s = await view();
    assert.equal(s.lease.state, 'CLOSED');
    assert.equal(s.counters.probes_granted, 1);
  });

  test('a wrong token: 401, the Node client decides locally and warns once', async () => {
    const warns = [];
    const warn = console.warn;
    console.warn = (...args) => warns.push(args.join(' '));
    try {
      const wrong = new Shared.SharedCircuitBreaker('svc-warn', { service: { url, token: 'not-the-token' }, breaker: SETTINGS, retryUnreachableMs: 50 });
      const events = [];
      wrong.onEvent((e) => events.push(e));
      assert.equal(await wrong.execute(() => 'local'), 'local');
      assert.equal(wrong.decidingLocally, true);
      assert.equal(events[0]?.type, 'local', JSON.stringify(events));
      assert.equal(events[0].status, 401);
      const asked = wrong.coordinatorRequests;
      await sleep(100);
      assert.equal(await wrong.execute(() => 'local again'), 'local again');
      assert.ok(wrong.coordinatorRequests > asked, 'asked the service again');
      assert.equal(wrong.decidingLocally, true);
      assert.equal(warns.length, 1, JSON.stringify(warns));
      assert.match(warns[0], /"svc-warn"/);
      assert.match(warns[0], /401/);
      assert.match(warns[0], /SERVICE_TOKEN/);
    } finally {
      console.warn = warn;
    }
    const r = await fetch(`${url}/v1/acquire?breaker=svc-warn`, { method: 'POST', headers: { authorization: 'Bearer nope' }, body: '{"client":"x"}' });
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('www-authenticate'), 'Bearer');
    await r.text();
    assert.equal((await admin(env.mf, '/breakwater/admin/breakers/svc-warn')).body.sessions, 0, 'the object never heard of it');
  });

  hostileServiceCases({ base: () => url, serviceToken: SERVICE_TOKEN, adminToken: ADMIN_TOKEN, name: 'svc', fresh: 'svc-fresh', view: () => admin(env.mf, '/breakwater/admin/breakers/svc') });

  test('an operator’s reset that names settings installs them; a reset without keeps those the breaker runs under', async () => {
    const reset = (body) => post(`${url}/admin/breakers/svc-warn/reset`, { token: ADMIN_TOKEN, body });
    const named = { lease_ms: 1234, breaker: { trip: { kind: 'consecutive_failures', threshold: 7 } } };
    const r = await reset(JSON.stringify(named));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.lease.lease_ms, 1234);
    const again = await reset('');
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.lease.lease_ms, 1234);
    assert.equal(again.body.options, r.body.options);
    // A service client runs under them, whatever its own settings say.
    const a = await post(`${url}/v1/acquire?breaker=svc-warn`, { token: SERVICE_TOKEN, body: '{"client":"after-reset"}', headers: { 'breakwater-settings': '{"lease_ms":5}' } });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(a.body.lease.lease_ms, 1234);
  });
});

describe('the admin and metrics routes', () => {
  const LEASE_MS = 300;
  // BREAKERS as an object (a JSON binding), the names the routes serve.
  const BREAKERS = {
    'adm-a': { lease_ms: LEASE_MS, breaker: { trip: { kind: 'consecutive_failures', threshold: 2 }, open_duration_ms: 30000 } },
    'adm-b': { lease_ms: LEASE_MS },
  };
  const ISOLATES = ['host', 'iso-2', 'iso-3'];
  let upstream;
  let env;
  let apps;
  const view = async () => (await admin(env.mf, '/breakwater/admin/breakers/adm-a')).body;
  const prometheus = async () => {
    const r = await admin(env.mf, '/breakwater/metrics?format=prometheus');
    assert.equal(r.status, 200);
    return parsePrometheusTextFormat(r.body);
  };
  const sample = (families, name, labels) =>
    families
      .find((f) => f.name === name)
      ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value;

  before(async () => {
    upstream = await startUpstream();
    env = await start(
      ISOLATES.map((n) =>
        userWorker(n, { upstream: upstream.url, breaker: 'adm-a', bindings: n === 'host' ? { ADMIN_TOKEN, BREAKERS } : { BREAKERS } }),
      ),
    );
    apps = await Promise.all(ISOLATES.map((n) => env.app(n)));
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });

  test('/metrics lists the BREAKERS names; the Prometheus text parses and shows breakwater_state', async () => {
    for (const f of apps) {
      assert.equal((await call(f)).body.result, 'ok');
      await flush(f);
    }
    const json = await admin(env.mf, '/breakwater/metrics');
    assert.equal(json.status, 200);
    assert.deepEqual(json.body.map((v) => v.name), ['adm-a', 'adm-b']);
    assert.equal(json.body[0].stats.successes, 3);
    assert.equal(json.body[1].stats.successes, 0);
    const families = await prometheus();
    assert.equal(families.find((f) => f.name === 'breakwater_state')?.type, 'GAUGE');
    assert.equal(sample(families, 'breakwater_state', { breaker: 'adm-a', state: 'closed' }), '1');
    assert.equal(sample(families, 'breakwater_state', { breaker: 'adm-b', state: 'closed' }), '1');
    assert.equal(sample(families, 'breakwater_calls_total', { breaker: 'adm-a', result: 'success' }), '3');
  });

  test('isolate: every isolate rejects; reset: CLOSED, every isolate admits again', async () => {
    const isolated = await admin(env.mf, '/breakwater/admin/breakers/adm-a/isolate', { method: 'POST' });
    assert.equal(isolated.status, 200);
    assert.equal(isolated.body.lease.state, 'OPEN');
    assert.equal(isolated.body.lease.mode, 'isolated');
    await sleep(LEASE_MS + 50);
    const count = upstream.state.count;
    for (const [i, f] of apps.entries()) {
      const { body } = await call(f);
      assert.equal(body.result, 'rejected', `${ISOLATES[i]}: ${JSON.stringify(body)}`);
    }
    assert.equal(upstream.state.count, count);
    assert.equal(sample(await prometheus(), 'breakwater_state', { breaker: 'adm-a', state: 'open' }), '1');

    const reset = await admin(env.mf, '/breakwater/admin/breakers/adm-a/reset', { method: 'POST' });
    assert.equal(reset.status, 200);
    assert.equal(reset.body.lease.state, 'CLOSED');
    assert.equal(reset.body.lease.mode, 'automatic');
    for (const [i, f] of apps.entries()) {
      const ok = await until(async () => ((await call(f)).body.result === 'ok' ? true : null), { deadlineMs: LEASE_MS + 2000 });
      assert.ok(ok, `${ISOLATES[i]} still rejects after the reset`);
    }
    assert.equal(sample(await prometheus(), 'breakwater_state', { breaker: 'adm-a', state: 'closed' }), '1');
  });

  test('BREAKERS pins the settings: a reset that names others is refused (409) and changes nothing; the same ones reset', async () => {
    const base = `${(await env.mf.ready).href.replace(/\/$/, '')}/breakwater`;
    const reset = (body) => post(`${base}/admin/breakers/adm-b/reset`, { token: ADMIN_TOKEN, body });
    const before = (await admin(env.mf, '/breakwater/admin/breakers/adm-b')).body;
    const other = await reset(JSON.stringify({ lease_ms: 999 }));
    assert.equal(other.status, 409, JSON.stringify(other.body));
    assert.equal(other.body.error, 'conflict');
    assert.match(other.body.message, /BREAKERS/);
    const after = (await admin(env.mf, '/breakwater/admin/breakers/adm-b')).body;
    assert.equal(after.options, before.options);
    assert.equal(after.lease.lease_ms, LEASE_MS);
    const same = await reset(JSON.stringify(BREAKERS['adm-b']));
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal(same.body.lease.lease_ms, LEASE_MS);
  });

  test('no token or a wrong one → 401; without ADMIN_TOKEN the routes are not there (the app’s own 404)', async () => {
    const before = await view();
    for (const token of [null, '', 'wrong', `${ADMIN_TOKEN}x`]) {
      for (const [route, method] of [['/metrics', 'GET'], ['/admin/breakers/adm-a', 'GET'], ['/admin/breakers/adm-a/isolate', 'POST'], ['/admin/breakers/adm-a/reset', 'POST']]) {
        const r = await admin(env.mf, `/breakwater${route}`, { method, token });
        assert.equal(r.status, 401, `${route} with ${token}`);
        assert.equal(r.body.error, 'unauthorized');
      }
    }
    const after = await view();
    assert.deepEqual({ ...after.lease, now: 0 }, { ...before.lease, now: 0 }, 'nothing was isolated or reset');
    assert.deepEqual(after.stats, before.stats);
    assert.equal(after.counters.requests - before.counters.requests, 1, 'no refused request reached the object');
    // iso-2 has no ADMIN_TOKEN (nor SERVICE_TOKEN): breakerRoutes returns null, the app answers.
    for (const route of ['/breakwater/metrics', '/breakwater/admin/breakers/adm-a', '/breakwater/v1/acquire?breaker=adm-a']) {
      const r = await call(apps[1], route, { method: route.includes('/v1/') ? 'POST' : 'GET', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      assert.equal(r.status, 404, route);
      assert.deepEqual(r.body, { error: 'not_found' }, route);
    }
  });
});

describe('an object addressed by an id without a name (wrangler dev’s cross-process case)', () => {
  const NAME = 'nameless';
  const report = (client, seq, counts) => JSON.stringify({ client, batches: [{ seq, counts: [{ generation: 0, ...counts }] }] });
  const q = (breaker) => `&query=${encodeURIComponent(`?breaker=${breaker}`)}`;

  /** The same steps for either object: `viewRoute` reads it by name through the admin route. */
  async function nameless(env, app, viewRoute) {
    const raw = (extra, body) => call(app, `/raw?op=report&id=string&name=${NAME}${extra}`, { method: 'POST', body });
    const named = async () => {
      const r = await admin(env.mf, viewRoute);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const missing = await raw('', report('nl-1', 1, { successes: 1, failures: 1 }));
    assert.equal(missing.status, 404, JSON.stringify(missing.body));
    assert.match(missing.body.message, /object has no name/);

    const ok = await raw(q(NAME), report('nl-1', 1, { successes: 1, failures: 1 }));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual(ok.body.acked, [1]);
    const v = await named();
    assert.equal(v.name, NAME);
    assert.equal(v.stats.failures, 1, 'the named path sees what the nameless id reported');
    assert.equal(v.stats.successes, 1);

    const other = await raw(q('someone-else'), report('nl-2', 1, { failures: 1 }));
    assert.equal(other.status, 409, JSON.stringify(other.body));
    assert.equal(other.body.error, 'conflict');
    assert.match(other.body.message, /nameless/);
    // The object keeps the name it was first given: later requests need not repeat it.
    const again = await raw('', report('nl-1', 2, { failures: 1 }));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const after = await named();
    assert.equal(after.stats.failures, 2, 'the 409 changed nothing; the kept name serves');
    // The app's own client (by name) shares the state.
    assert.equal((await call(app)).body.result, 'ok');
    await flush(app);
    assert.equal((await named()).stats.successes, 2);
  }

  test('the JS object (breakwater/cloudflare): 404 without ?breaker=, 200 with it (the same state as by name), 409 for another name', async () => {
    const upstream = await startUpstream();
    const env = await start(
      ['host', 'app'].map((n) => userWorker(n, { upstream: upstream.url, breaker: NAME, bindings: n === 'host' ? { ADMIN_TOKEN, NAMES: NAME } : {} })),
    );
    try {
      await nameless(env, await env.app('app'), `/breakwater/admin/breakers/${NAME}`);
    } finally {
      await env.mf.dispose();
      await upstream.close();
    }
  });

  test('the Rust object: the same', async () => {
    const upstream = await startUpstream();
    const env = await start([objectWorker({ breakers: { [NAME]: { lease_ms: 300 } } }), jsApp('js-app', { upstream: upstream.url, breaker: NAME })]);
    try {
      await nameless(env, await env.app('js-app'), `/admin/breakers/${NAME}`);
    } finally {
      await env.mf.dispose();
      await upstream.close();
    }
  });
});

describe('malformed input to the JS object', () => {
  const NAME = 'mal';
  let upstream;
  let env;
  let app;
  before(async () => {
    upstream = await startUpstream();
    env = await start(
      ['host', 'app'].map((n) =>
        userWorker(n, { upstream: upstream.url, breaker: NAME, settings: { failureThreshold: 3, resetTimeout: 60000 }, bindings: n === 'host' ? { ADMIN_TOKEN, NAMES: NAME } : {} }),
      ),
    );
    app = await env.app('app');
    // Real state first: the app's client's settings, a success, then two failures (one short of opening).
    assert.equal((await call(app)).body.result, 'ok');
    await flush(app);
    const r = await call(app, '/raw?op=report', { method: 'POST', body: report('setup', 1, { failures: 2 }) });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });
  const report = (client, seq, counts) => JSON.stringify({ client, batches: [{ seq, counts: [{ generation: 0, ...counts }] }] });

  /** What a request could change. */
  async function snapshot() {
    const { body } = await admin(env.mf, `/breakwater/admin/breakers/${NAME}`);
    const { requests, acquires, reports, ...counters } = body.counters;
    return { lease: { ...body.lease, now: 0 }, stats: body.stats, counters, options: body.options, mismatch: body.options_mismatch, sessions: body.sessions };
  }

  const settings = (v) => ({ 'breakwater-settings': v });
  const cases = [
    ['invalid JSON', 'report', 'POST', 'this is not json', {}, 400, /invalid JSON/],
    ['a report with a wrong field type', 'report', 'POST', '{"client":"a","batches":[{"seq":"1"}]}', {}, 400, /invalid type/],
    ['a body over 64 KiB', 'report', 'POST', 'x'.repeat(70 * 1024), {}, 413, /64 KiB/],
    ['a bad settings header', 'acquire', 'POST', '{"client":"a"}', settings('{"breaker":{"open_jitter":2}}'), 400, /open_jitter/],
    ['a settings header that is not JSON', 'acquire', 'POST', '{"client":"a"}', settings('not json'), 400, /breakwater-settings/],
    ['an unknown operation', 'explode', 'POST', '{}', {}, 404, /unknown operation/],
    ['GET on report', 'report', 'GET', null, {}, 405, /POST/],
    ['PUT on state', 'state', 'PUT', '', {}, 405, /POST/],
  ];
  for (const [what, op, method, body, headers, status, message] of cases) {
    test(`${what} → ${status}; the state is unchanged and the object still serves`, async () => {
      const before = await snapshot();
      const init = { method, headers };
      if (body !== null) init.body = body;
      const r = await call(app, `/raw?op=${op}`, init);
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.equal(typeof r.body.error, 'string');
      assert.match(r.body.message, message);
      assert.deepEqual(await snapshot(), before);
      const ok = await call(app, '/raw?op=acquire', { method: 'POST', body: `{"client":"ok-${op}-${status}"}` });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.lease.state, 'CLOSED');
      assert.ok(ok.body.permit, 'a permit');
    });
  }

  test('the bad input changed nothing: two failures recorded, and the third opens it (the settings in force)', async () => {
    const s = await snapshot();
    assert.equal(s.stats.failures, 2);
    assert.equal(s.mismatch, null);
    const r = await call(app, '/raw?op=report', { method: 'POST', body: report('setup', 2, { failures: 1 }) });
    assert.equal(r.status, 200);
    assert.equal(r.body.lease.state, 'OPEN');
  });
});
