// breakwater/store through @upstash/redis (Vercel KV's REST client) and the same real Redis, via
// a local bridge that speaks Upstash's REST protocol (upstash-bridge.mjs, test scaffolding):
// an instance on the REST client and one on node-redis share one breaker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import { Redis } from '@upstash/redis';
import { isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, fromNodeRedis, fromUpstash } from 'breakwater/store';
import { startUpstashBridge } from './upstash-bridge.mjs';
import { redisUrl, sleep } from './helpers.mjs';

let bridge;
let redis;
before(async () => {
  bridge = await startUpstashBridge(redisUrl());
  redis = createClient({ url: redisUrl() });
  redis.on('error', () => {});
  await redis.connect();
});
after(async () => {
  await bridge?.close();
  await redis?.close?.();
});

const boom = () => {
  throw Object.assign(new Error('upstream 503'), { status: 503 });
};
const breaker = { failureThreshold: 3, resetTimeout: 50 };

test('an instance on @upstash/redis and one on node-redis share one breaker', async () => {
  const name = `upstash-${process.pid}`;
  const kv = new Redis({ url: bridge.url, token: bridge.token, enableTelemetry: false });
  const edge = new StoreCircuitBreaker(name, { store: new RedisStore(fromUpstash(kv)), breaker, clientId: 'edge' });
  const node = new StoreCircuitBreaker(name, { store: new RedisStore(fromNodeRedis(redis)), breaker, clientId: 'node' });

  assert.equal(await edge.execute(() => 'ok'), 'ok');
  for (let i = 0; i < 3; i++) await assert.rejects(edge.execute(boom), /upstream 503/);
  assert.equal(edge.state, 'OPEN');
  assert.ok(bridge.stats.commands > 0, 'the REST client went through the bridge');
  // The node-redis instance has never called: its first admission reads the shared state.
  await assert.rejects(node.execute(() => 'never'), (e) => isCircuitOpenError(e) && e.reason === 'open');

  // Half-open: the probe goes to whoever asks first; the other is told the slot is taken.
  await sleep(60);
  let release;
  const held = new Promise((r) => (release = r));
  const probe = node.execute(() => held.then(() => 'probe'));
  await new Promise((r) => setTimeout(r, 20));
  let refused;
  for (let i = 0; i < 20 && !refused; i++) {
    await edge.execute(() => 'second').then(
      () => assert.fail('a second probe was admitted'),
      (e) => (refused = isCircuitOpenError(e) && e.reason),
    );
  }
  assert.equal(refused, 'half-open-full');
  release();
  assert.equal(await probe, 'probe');
  // edge keeps the refusal it was given (every probe slot taken) for one lease at most (1 s by
  // default), without asking: then it asks, and finds the breaker CLOSED.
  await sleep(1_050);
  assert.equal(await edge.execute(() => 'closed'), 'closed');
  assert.equal(edge.state, 'CLOSED');
  await edge.flush();
  const v = await node.inspect();
  assert.deepEqual(
    [v.state, v.counters.probesGranted, v.counters.successes, v.counters.failures, v.clients],
    ['CLOSED', 1, 3, 3, 2],
  );
});

test('a REST store refusing the token: the local breaker serves and says so', async () => {
  const kv = new Redis({ url: bridge.url, token: 'wrong', enableTelemetry: false, retry: false });
  const events = [];
  const b = new StoreCircuitBreaker(`upstash-denied-${process.pid}`, { store: new RedisStore(fromUpstash(kv)), breaker });
  b.onEvent((e) => events.push(e));
  assert.equal(await b.execute(() => 'served'), 'served');
  assert.equal(b.decidingLocally, true);
  assert.equal(events[0].type, 'local');
  assert.match(events[0].reason, /Unauthorized/);
});
