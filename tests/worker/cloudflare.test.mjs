// `breakwater/cloudflare` in a JavaScript developer's own Worker (apps/user-worker.ts, the packed
// package; apps/user-worker-shared.ts, the same with its clients from breakwater/shared):
// BreakerObject exported by the Worker itself, module-level SharedCircuitBreakers in
// several isolates sharing it, a restart on persisted storage, a rolling deploy with other
// settings, and settings pinned by BREAKERS. Real workerd through Miniflare, on 127.0.0.1.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startUpstream, userWorker, USER_WORKER, USER_WORKER_SHARED, start, call, admin, drive, sleep, until, tmpDir, captureLogs, ADMIN_TOKEN } from './harness.mjs';

const stats = async (f) => (await call(f, '/app/stats', { method: 'GET' })).body;
const flush = async (f) => (await call(f, '/app/flush')).body;

// The Worker of the README (its SharedCircuitBreaker from breakwater/cloudflare: one shared wasm
// module, the coordinator's, serves the object and the clients), and the same Worker with its
// clients from breakwater/shared (both shared modules: the lease client's serves the clients).
const ENTRIES = [
  ['breakwater/cloudflare', USER_WORKER, { clients_from: 'breakwater/cloudflare' }],
  ['breakwater/shared', USER_WORKER_SHARED, { clients_from: 'breakwater/shared', same_class: true, instance_of: true }],
];

test('the Worker with its clients from breakwater/cloudflare bundles one shared wasm module; from breakwater/shared, both', () => {
  const wasm = (file) => [...fs.readFileSync(file, 'utf8').matchAll(/["'][^"']*?(breakwater(?:_shared|_coordinator)?)_bg-?[^"']*\.wasm["']/g)].map((m) => m[1]).sort();
  assert.deepEqual([...new Set(wasm(USER_WORKER))], ['breakwater', 'breakwater_coordinator']);
  assert.deepEqual([...new Set(wasm(USER_WORKER_SHARED))], ['breakwater', 'breakwater_coordinator', 'breakwater_shared']);
});

for (const [clientsFrom, script, entry] of ENTRIES)
describe(`several isolates share one breaker held by the Worker’s own BreakerObject (clients from ${clientsFrom})`, () => {
  const OPEN_MS = 1000;
  const LEASE_MS = 300;
  const NAME = 'shared-llm';
  const NAMES = ['host', 'iso-2', 'iso-3', 'iso-4'];
  let upstream;
  let env;
  let apps;
  const view = async () => {
    const r = await admin(env.mf, `/breakwater/admin/breakers/${NAME}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };

  before(async () => {
    upstream = await startUpstream();
    env = await start(
      NAMES.map((n) =>
        userWorker(n, {
          upstream: upstream.url,
          breaker: NAME,
          settings: { failureThreshold: 3, resetTimeout: OPEN_MS },
          leaseMs: LEASE_MS,
          bindings: n === 'host' ? { ADMIN_TOKEN, NAMES: NAME } : {},
          script,
        }),
      ),
    );
    apps = await Promise.all(NAMES.map(async (n) => [n, await env.app(n)]));
  });

  test(`the clients are breakwater's one SharedCircuitBreaker class, imported from ${clientsFrom}`, async () => {
    for (const [name, f] of apps) assert.deepEqual((await call(f, '/app/entry', { method: 'GET' })).body, entry, name);
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });

  test('healthy: every isolate admits, every outcome reaches the object once', async () => {
    const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.ok >= 15 });
    for (const [name, t] of tallies) assert.ok(t.ok >= 15 && t.failed + t.rejected + t.fallback === 0, `${name}: ${JSON.stringify(t)}`);
    for (const [, f] of apps) assert.equal((await flush(f)).unacknowledged, 0);
    const s = await view();
    assert.equal(s.lease.state, 'CLOSED');
    assert.equal(s.stats.successes, upstream.state.count);
    assert.equal(s.stats.failures, 0);
    assert.equal(s.sessions, NAMES.length, 'one session per isolate');
    assert.equal(s.options_mismatch, null);
  });

  test('an outage opens it for every isolate; then none of them calls the upstream', async () => {
    upstream.state.mode = 'down';
    const before = upstream.state.count;
    const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.rejected > 0, deadlineMs: 10000 });
    const spent = upstream.state.count - before;
    for (const [name, t] of tallies) {
      assert.ok(t.rejected > 0, `${name} never saw the circuit open: ${JSON.stringify(t)}`);
      assert.equal(t.fallback, 0, `${name} fell back`);
    }
    // Three failures trip it; an isolate stops at the latest when the answer to its own first
    // failure report arrives (two calls in flight per isolate).
    assert.ok(spent >= 3 && spent <= 3 + NAMES.length * 2, `upstream calls during the outage: ${spent}`);
    const s = await view();
    assert.equal(s.lease.state, 'OPEN');
    assert.equal(s.stats.opened, 1);
    const quiet = upstream.state.count;
    for (const [name, f] of apps) {
      const { body } = await call(f);
      assert.equal(body.result, 'rejected', `${name}: ${JSON.stringify(body)}`);
      assert.ok(body.retry_after_ms > 0 && body.retry_after_ms <= OPEN_MS, `${name} retry_after_ms ${body.retry_after_ms}`);
      assert.equal(body.state, 'OPEN', name);
    }
    assert.equal(upstream.state.count, quiet, 'a rejected call reached the upstream');
  });

  test('when the open period ends, exactly one probe runs across all isolates per round', async () => {
    upstream.state.delayMs = 200;
    const first = upstream.state.arrivals.length;
    const c0 = (await view()).counters;
    const o0 = (await view()).stats.opened;
    await drive(apps, { concurrency: 3, deadlineMs: 2 * OPEN_MS + 700 });
    await sleep(300); // the last probe's answer
    const s = await view();
    const rounds = s.counters.half_open_entered - c0.half_open_entered;
    const arrivals = upstream.state.arrivals.slice(first);
    assert.ok(rounds >= 1, 'no HALF_OPEN round happened');
    assert.equal(arrivals.length, rounds, 'one upstream call per HALF_OPEN round, from 12 concurrent callers');
    assert.equal(s.counters.probes_granted - c0.probes_granted, rounds);
    assert.equal(s.stats.opened - o0, rounds, 'every failed probe reopened it');
    for (let i = 1; i < arrivals.length; i++) {
      assert.ok(arrivals[i].at >= arrivals[i - 1].done, 'two probes were in flight at once');
      assert.ok(arrivals[i].at - arrivals[i - 1].at >= OPEN_MS - 50, 'a probe before the open period ended');
    }
    assert.notEqual(s.lease.state, 'CLOSED');
  });

  test('after the upstream recovers it closes for every isolate by itself', async () => {
    upstream.state.mode = 'up';
    upstream.state.delayMs = 300;
    const first = upstream.state.arrivals.length;
    const c0 = (await view()).counters;
    const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.ok > 0, deadlineMs: 2 * OPEN_MS + 4000 });
    for (const [name, t] of tallies) assert.ok(t.ok > 0, `${name} never closed: ${JSON.stringify(t)}`);
    const probe = upstream.state.arrivals[first];
    assert.ok(probe, 'no probe reached the upstream');
    const during = upstream.state.arrivals.slice(first).filter((a) => a.at >= probe.at && a.at < probe.done);
    assert.equal(during.length, 1, 'only the probe reached the upstream while it was in flight');
    const s = await view();
    assert.equal(s.lease.state, 'CLOSED');
    assert.equal(s.counters.closed - c0.closed, 1);
    for (const [name, f] of apps) assert.equal((await stats(f)).state, 'CLOSED', name);
  });

  test('the counts are exact: every upstream call counted once', async () => {
    upstream.state.delayMs = 0;
    for (const [name, f] of apps) assert.equal((await flush(f)).unacknowledged, 0, name);
    const s = await view();
    assert.equal(s.stats.successes + s.stats.failures + s.stats.ignored, upstream.state.count, JSON.stringify(s.stats));
    assert.equal(s.counters.counted_outcomes + s.counters.probe_outcomes, upstream.state.count);
  });
});

describe('the state survives a restart of the object on persisted storage', () => {
  const OPEN_MS = 3000;
  const NAME = 'persisted';
  const SETTINGS = { failureThreshold: 2, resetTimeout: OPEN_MS };
  const dir = tmpDir('cf-persist-');
  let upstream;
  let env;
  const runtime = () =>
    start(
      ['host', 'app'].map((n) =>
        userWorker(n, {
          upstream: upstream.url,
          breaker: NAME,
          settings: SETTINGS,
          leaseMs: 200,
          bindings: n === 'host' ? { ADMIN_TOKEN, NAMES: NAME } : {},
        }),
      ),
      { durableObjectsPersist: dir },
    );
  const view = async () => (await admin(env.mf, `/breakwater/admin/breakers/${NAME}`)).body;
  let options; // the fingerprint of SETTINGS, as the object reports it

  before(async () => {
    upstream = await startUpstream();
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('an OPEN breaker is still OPEN after the restart, with its retry-after, then recovers', async () => {
    upstream.state.mode = 'down';
    env = await runtime();
    const app = await env.app('app');
    const r = await until(async () => ((await call(app)).body.result === 'rejected' ? true : null), { everyMs: 0 });
    assert.ok(r, 'never opened');
    const before = await view();
    assert.equal(before.lease.state, 'OPEN');
    assert.equal(before.stats.failures, 2);
    await env.mf.dispose();
    env = undefined;

    env = await runtime();
    const count = upstream.state.count;
    // A fresh isolate asks the restored object, which answers OPEN until the same time.
    const restarted = await env.app('app');
    const t0 = Date.now();
    const { body } = await call(restarted);
    const t1 = Date.now();
    assert.equal(body.result, 'rejected', JSON.stringify(body));
    assert.ok(t1 < before.open_until, 'the restart took longer than the open period');
    // What is left of the open period when the object answered.
    assert.ok(
      body.retry_after_ms >= before.open_until - t1 - 5 && body.retry_after_ms <= before.open_until - t0 + 5,
      `retry_after_ms ${body.retry_after_ms}, ${before.open_until - t1}..${before.open_until - t0} ms left`,
    );
    const restored = await view();
    assert.equal(restored.restore_error, null);
    assert.equal(restored.lease.state, 'OPEN');
    assert.equal(restored.open_until, before.open_until);
    assert.equal(restored.opened_at, before.opened_at);
    assert.equal(restored.stats.failures, before.stats.failures);
    assert.equal(restored.lease.generation, before.lease.generation);
    assert.equal(restored.options, before.options);
    assert.equal(restored.options_mismatch, null);
    options = restored.options;
    assert.equal(upstream.state.count, count, 'nobody called the upstream');

    upstream.state.mode = 'up';
    const host = await env.app('host');
    const closed = await until(async () => ((await call(host)).body.result === 'ok' ? true : null), { deadlineMs: OPEN_MS + 3000, everyMs: 50 });
    assert.ok(closed, 'never recovered');
    assert.ok(Date.now() >= before.open_until, 'admitted before the open period ended');
    assert.equal((await view()).lease.state, 'CLOSED');
    assert.equal(upstream.state.count - count, 1, 'one probe, then closed');
    await env.mf.dispose();
    env = undefined;
  });

  test('before any client asked since the restart, the admin route shows and a reset keeps the clients’ settings', async () => {
    // Evicted or restarted: the operator's view is the object's first request.
    env = await runtime();
    const first = await view();
    assert.equal(first.options, options);
    assert.equal(first.options_mismatch, null, 'no client asked, so no client’s settings differ');
    await env.mf.dispose();
    // The operator's reset is the object's first request.
    env = await runtime();
    const reset = await admin(env.mf, `/breakwater/admin/breakers/${NAME}/reset`, { method: 'POST' });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.equal(reset.body.lease.state, 'CLOSED');
    assert.equal(reset.body.options, options, 'the clients’ settings stay in force (not the library defaults)');
    assert.equal(reset.body.options_mismatch, null);
    // The clients' threshold (2) still rules.
    upstream.state.mode = 'down';
    const app = await env.app('app');
    const states = [];
    for (let i = 0; i < 2; i++) {
      assert.equal((await call(app)).body.result, 'failed');
      await flush(app);
      states.push((await view()).lease.state);
    }
    assert.deepEqual(states, ['CLOSED', 'OPEN']);
    assert.equal((await view()).options_mismatch, null);
  });
});

describe('the object’s log: one line per transition', () => {
  test('reading the state (admin view, /metrics) does not repeat the last transitions', async () => {
    const upstream = await startUpstream();
    const logs = captureLogs();
    const env = await start(
      ['host', 'app'].map((n) =>
        userWorker(n, {
          upstream: upstream.url,
          breaker: 'logged',
          settings: { failureThreshold: 2, resetTimeout: 60000 },
          leaseMs: 200,
          bindings: n === 'host' ? { ADMIN_TOKEN, NAMES: 'logged' } : {},
        }),
      ),
      logs.options,
    );
    try {
      const transitions = () => logs.lines.filter((l) => /^breakwater logged: /.test(l)).map((l) => l.replace(/ at \d+$/, ''));
      const app = await env.app('app');
      upstream.state.mode = 'down';
      for (let i = 0; i < 2; i++) {
        assert.equal((await call(app)).body.result, 'failed');
        await flush(app);
      }
      for (let i = 0; i < 3; i++) assert.equal((await admin(env.mf, '/breakwater/admin/breakers/logged')).body.lease.state, 'OPEN');
      assert.equal((await admin(env.mf, '/breakwater/metrics')).status, 200);
      const reset = await admin(env.mf, '/breakwater/admin/breakers/logged/reset', { method: 'POST' });
      assert.equal(reset.body.lease.state, 'CLOSED');
      for (let i = 0; i < 2; i++) assert.equal((await admin(env.mf, '/breakwater/admin/breakers/logged')).status, 200);
      await until(() => transitions().length >= 2, { deadlineMs: 500 });
      await sleep(100); // anything printed late
      assert.deepEqual(transitions(), ['breakwater logged: CLOSED -> OPEN', 'breakwater logged: OPEN -> CLOSED']);
    } finally {
      await env.mf.dispose();
      await upstream.close();
    }
  });
});

describe('a rolling deploy with other settings', () => {
  const LEASE_MS = 300;
  const NAME = 'deploy';
  const V1 = { failureThreshold: 3, resetTimeout: 1500 };
  const V2 = { failureThreshold: 6, resetTimeout: 1500 };
  const NAMES = ['v1-a', 'v1-b', 'v2-a', 'v2-b'];
  let upstream;
  let env;
  let app;
  let F1;
  let F2;
  const view = async () => {
    const r = await admin(env.mf, `/breakwater/admin/breakers/${NAME}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  /** One failed call from each of `from`, reported at once; the state after each. */
  const failEach = async (from) => {
    const states = [];
    for (const n of from) {
      const { body } = await call(app[n]);
      assert.equal(body.result, 'failed', `${n}: ${JSON.stringify(body)}`);
      assert.equal((await flush(app[n])).unacknowledged, 0);
      states.push((await view()).lease.state);
    }
    return states;
  };

  before(async () => {
    upstream = await startUpstream();
    env = await start(
      NAMES.map((n) =>
        userWorker(n, {
          host: 'v1-a',
          upstream: upstream.url,
          breaker: NAME,
          settings: n.startsWith('v1') ? V1 : V2,
          leaseMs: LEASE_MS,
          bindings: n === 'v1-a' ? { ADMIN_TOKEN, NAMES: NAME } : {},
        }),
      ),
    );
    app = Object.fromEntries(await Promise.all(NAMES.map(async (n) => [n, await env.app(n)])));
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });

  test('while both versions run, the stored settings stay in force for both, and both are counted', async () => {
    for (const n of ['v1-a', 'v1-b']) {
      assert.equal((await call(app[n])).body.result, 'ok');
      await flush(app[n]);
    }
    const first = await view();
    assert.equal(first.options_mismatch, null);
    F1 = first.options;
    for (const n of ['v2-a', 'v2-b']) {
      assert.equal((await call(app[n])).body.result, 'ok');
      await flush(app[n]);
    }
    const both = await view();
    assert.equal(both.options, F1, 'the stored settings stay in force');
    assert.equal(both.options_mismatch?.resolution, 'adopted', JSON.stringify(both.options_mismatch));
    assert.equal(both.options_mismatch.stored, F1);
    F2 = both.options_mismatch.configured;
    assert.notEqual(F2, F1);
    assert.equal(both.stats.successes, 4);
    assert.equal(both.stats.successes, upstream.state.count);

    // Three failures (the stored threshold, not the new version's six), from both versions.
    upstream.state.mode = 'down';
    assert.deepEqual(await failEach(['v2-a', 'v1-b', 'v2-b']), ['CLOSED', 'CLOSED', 'OPEN']);
    const open = await view();
    assert.equal(open.stats.failures, 3);
    assert.equal(open.options, F1);
    await sleep(LEASE_MS + 50);
    const count = upstream.state.count;
    for (const n of NAMES) assert.equal((await call(app[n])).body.result, 'rejected', n);
    assert.equal(upstream.state.count, count);
  });

  test('once the new version alone asks, reset from the admin route installs its settings', async () => {
    await flush(app['v2-a']);
    const reset = await admin(env.mf, `/breakwater/admin/breakers/${NAME}/reset`, { method: 'POST' });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.equal(reset.body.lease.state, 'CLOSED');
    assert.equal(reset.body.options, F2);
    assert.equal(reset.body.options_mismatch, null);
    // An old isolate still around now runs the new settings (adopted).
    await flush(app['v1-b']);
    const adopted = await view();
    assert.equal(adopted.options, F2);
    assert.deepEqual(adopted.options_mismatch, { stored: F2, configured: F1, resolution: 'adopted' });

    await sleep(LEASE_MS + 50); // the clients' OPEN leases run out
    const states = await failEach(['v2-a', 'v2-b', 'v1-b', 'v2-a', 'v2-b', 'v2-a']);
    assert.deepEqual(states, ['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED', 'CLOSED', 'OPEN'], 'opens at six failures now');
  });
});

describe('settings pinned by BREAKERS', () => {
  const BREAKERS = {
    pinned: { lease_ms: 300, breaker: { trip: { kind: 'consecutive_failures', threshold: 2 }, open_duration_ms: 60000 } },
  };
  let upstream;
  let env;
  before(async () => {
    upstream = await startUpstream();
    const settings = { failureThreshold: 5, resetTimeout: 1000 };
    env = await start([
      // BREAKERS as the JSON string a wrangler.toml var holds.
      userWorker('host', { breaker: 'pinned', settings, upstream: upstream.url, bindings: { ADMIN_TOKEN, BREAKERS: JSON.stringify(BREAKERS) } }),
      userWorker('app', { breaker: 'pinned', settings, upstream: upstream.url }),
      userWorker('stray', { breaker: 'not-declared', settings, upstream: upstream.url }),
    ]);
  });
  after(async () => {
    await env?.mf.dispose();
    await upstream?.close();
  });

  test('the clients’ settings are ignored: the BREAKERS threshold and open period rule', async () => {
    const app = await env.app('app');
    const view = async () => (await admin(env.mf, '/breakwater/admin/breakers/pinned')).body;
    upstream.state.mode = 'down';
    const states = [];
    for (let i = 0; i < 2; i++) {
      assert.equal((await call(app)).body.result, 'failed');
      await flush(app);
      states.push((await view()).lease.state);
    }
    assert.deepEqual(states, ['CLOSED', 'OPEN'], 'opens at two failures (BREAKERS), not five (the clients)');
    const v = await view();
    assert.equal(v.options_mismatch, null);
    assert.ok(v.open_until - v.opened_at >= 59000, `open period ${v.open_until - v.opened_at} ms`);
    const { body } = await call(app);
    assert.equal(body.result, 'rejected');
    assert.ok(body.retry_after_ms > 50000, `retry_after_ms ${body.retry_after_ms} (the clients say 1000)`);
    const metrics = await admin(env.mf, '/breakwater/metrics');
    assert.deepEqual(metrics.body.map((m) => m.name), ['pinned']);
  });

  test('a name BREAKERS does not declare: the client decides locally, the admin route answers 404', async () => {
    upstream.state.mode = 'up';
    const stray = await env.app('stray');
    const { body } = await call(stray);
    assert.equal(body.result, 'ok', JSON.stringify(body));
    assert.equal(body.fallback, true);
    const s = await stats(stray);
    assert.equal(s.fallback, true);
    assert.ok(s.events.includes('local'), JSON.stringify(s.events));
    assert.ok(s.object_requests >= 1);
    const raw = await call(stray, '/raw?op=acquire&name=not-declared', { method: 'POST', body: '{"client":"x"}' });
    assert.equal(raw.status, 404);
    assert.match(raw.body.message, /no breaker of that name/);
    const r = await admin(env.mf, '/breakwater/admin/breakers/not-declared');
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'not_found');
    assert.equal(typeof r.body.message, 'string', 'the routes’ 404, not the app’s');
  });
});
