// The object persists its snapshot on every change and restores it lazily after a restart of the
// runtime on the same storage; an OPEN state keeps its reopen time.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startUpstream, objectWorker, jsApp, rustApp, start, call, admin, tmpDir } from './harness.mjs';

const BREAKERS = {
  persisted: { lease_ms: 200, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 }, open_duration_ms: 600_000, max_open_duration_ms: 600_000 } },
  isolated: { lease_ms: 200 },
};

const dir = tmpDir('persist-');
let upstream;
let env;
after(async () => {
  await env?.mf.dispose();
  await upstream?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function runtime(breakers = BREAKERS) {
  const opts = { upstream: upstream.url, breaker: 'persisted', breakers };
  return start([objectWorker({ breakers }), jsApp('js-app', opts), rustApp('rust-app', opts)], {
    durableObjectsPersist: dir,
  });
}

test('an OPEN state and its reopen time survive a restart on persisted storage', async () => {
  upstream = await startUpstream();
  upstream.state.mode = 'down';
  env = await runtime();
  const app = await env.app('rust-app');
  let r;
  let n = 0;
  do r = (await call(app)).body;
  while (r.result !== 'rejected' && ++n < 20);
  assert.equal(r.result, 'rejected', JSON.stringify(r));
  const before = (await admin(env.mf, '/admin/breakers/persisted')).body;
  assert.equal(before.lease.state, 'OPEN');
  assert.ok(before.open_until > Date.now() + 500_000);
  assert.equal((await admin(env.mf, '/admin/breakers/isolated/isolate', { method: 'POST' })).status, 200);
  await env.mf.dispose();

  upstream.state.mode = 'up';
  const countBefore = upstream.state.count;
  env = await runtime();
  const afterView = (await admin(env.mf, '/admin/breakers/persisted')).body;
  assert.equal(afterView.restore_error, null);
  assert.equal(afterView.lease.state, 'OPEN');
  assert.equal(afterView.open_until, before.open_until, 'reopen time survives');
  assert.equal(afterView.opened_at, before.opened_at);
  assert.equal(afterView.stats.failures, before.stats.failures);
  assert.equal(afterView.lease.generation, before.lease.generation);
  // Fresh isolates learn OPEN from the restored object and do not call the upstream.
  for (const name of ['js-app', 'rust-app']) {
    const { body } = await call(await env.app(name));
    assert.equal(body.result, 'rejected', name);
    assert.ok(body.retry_after_ms > 500_000, `${name} retry_after_ms ${body.retry_after_ms}`);
  }
  assert.equal(upstream.state.count, countBefore);
  const isolated = (await admin(env.mf, '/admin/breakers/isolated')).body;
  assert.equal(isolated.lease.state, 'OPEN');
  assert.equal(isolated.lease.mode, 'isolated');
  assert.equal(isolated.restore_error, null);
  await env.mf.dispose();
  env = undefined;
});

test('a redeploy with another trip rule carries the state over: still OPEN, the new settings in force, and says so', async () => {
  // Redeployed with another trip rule mid-outage: the stored window does not fit it, but the
  // outage does not end because of a deploy.
  const changed = {
    ...BREAKERS,
    persisted: { ...BREAKERS.persisted, breaker: { ...BREAKERS.persisted.breaker, trip: { kind: 'failures_in_window', threshold: 3, window_ms: 60000 } } },
  };
  env = await runtime(changed);
  const view = (await admin(env.mf, '/admin/breakers/persisted')).body;
  assert.equal(view.restore_error, null);
  assert.equal(view.lease.state, 'OPEN');
  assert.ok(view.open_until > Date.now() + 500_000, 'the reopen time carried over');
  assert.equal(view.options_mismatch.resolution, 'installed');
  assert.notEqual(view.options_mismatch.stored, view.options_mismatch.configured);
  assert.equal(view.options, view.options_mismatch.configured);
  const count = upstream.state.count;
  for (const name of ['js-app', 'rust-app']) {
    const { body } = await call(await env.app(name));
    assert.equal(body.result, 'rejected', `${name}: ${JSON.stringify(body)}`);
  }
  assert.equal(upstream.state.count, count, 'nobody called the upstream');
  await env.mf.dispose();
  env = undefined;
});
