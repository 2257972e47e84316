// The breaker object unreachable (every request fails like an overloaded Durable Object): the
// clients keep serving through their local breaker (fail-open), or reject (fail-closed), and say
// so through an event.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startUpstream, rustApp, jsApp, start, call, BROKEN_OBJECT, COMPAT_DATE } from './harness.mjs';

const BREAKERS = { upstream: { lease_ms: 200, breaker: { trip: { kind: 'consecutive_failures', threshold: 3 } } } };
let upstream;
let env;

before(async () => {
  upstream = await startUpstream();
  const opts = { upstream: upstream.url, breaker: 'upstream', breakers: BREAKERS, scriptName: 'broken', localThreshold: 3 };
  env = await start([
    { name: 'broken', modules: true, scriptPath: BROKEN_OBJECT, modulesRoot: path.dirname(BROKEN_OBJECT), compatibilityDate: COMPAT_DATE, durableObjects: { BREAKER: { className: 'BreakerObject', useSQLite: true } } },
    rustApp('rust-open', opts),
    jsApp('js-open', opts),
    rustApp('rust-closed', { ...opts, failClosed: true }),
    jsApp('js-closed', { ...opts, failClosed: true }),
  ]);
});

after(async () => {
  await env?.mf.dispose();
  await upstream?.close();
});

test('fail-open clients keep serving through their local breaker and report the fallback', async () => {
  for (const name of ['rust-open', 'js-open']) {
    const app = await env.app(name);
    for (let i = 0; i < 5; i++) {
      const { body } = await call(app);
      assert.equal(body.result, 'ok', `${name}: ${JSON.stringify(body)}`);
      assert.equal(body.fallback, true);
    }
    const { body } = await call(app, '/app/stats', { method: 'GET' });
    assert.ok(body.events.includes('local'), `${name} events: ${body.events}`);
    assert.ok(body.unacknowledged >= 5, 'outcomes wait for the object');
  }
});

test('the local fallback breaker still trips on upstream failures', async () => {
  upstream.state.mode = 'down';
  for (const name of ['rust-open', 'js-open']) {
    const app = await env.app(name);
    const results = [];
    for (let i = 0; i < 6; i++) results.push((await call(app)).body.result);
    assert.deepEqual(results.slice(0, 3), ['failed', 'failed', 'failed'], name);
    assert.deepEqual(results.slice(3), ['rejected', 'rejected', 'rejected'], name);
  }
  upstream.state.mode = 'up';
});

test('fail-closed clients reject while the object is unreachable', async () => {
  const before = upstream.state.count;
  for (const name of ['rust-closed', 'js-closed']) {
    const app = await env.app(name);
    for (let i = 0; i < 3; i++) {
      const { body } = await call(app);
      assert.equal(body.result, 'rejected', `${name}: ${JSON.stringify(body)}`);
    }
    const { body } = await call(app, '/app/stats', { method: 'GET' });
    assert.ok(body.events.includes('local'), `${name} events: ${body.events}`);
  }
  assert.equal(upstream.state.count, before);
});
