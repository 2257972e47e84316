// A record that disappears between a step's read and its write: evicted, lost in a failover,
// deleted by hand. The step was computed on the lost record; its compare-and-set must not land
// on whatever is stored by then, or an operator's isolate() (which answered 'isolated') is undone
// by an instance's lease written over it. Run against the real redis-server, the key deleted by
// the test between the read and the compare-and-set. Also: the store says when Redis may evict a
// breaker's record (maxmemory-policy allkeys-*), once, and never fails for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, MemoryStore, fromNodeRedis } from 'breakwater/store';
import { namer, sleep, useRedis, ok, failsWith } from './helpers.mjs';

let redis;
const uniq = namer();
useRedis((c) => (redis = c));

const boom = failsWith(529);
const BREAKER = { failureThreshold: 2, resetTimeout: 200, probeTimeoutMs: 400 };

/**
 * `inner`, whose next compare-and-set (once `pause()` is called) waits for `release()` before it
 * is sent: what the test does meanwhile happens between that step's read and its write. `paused`
 * resolves when the compare-and-set is held.
 */
function holding(inner) {
  let hold = null;
  return {
    pause() {
      let held;
      const paused = new Promise((r) => (held = r));
      let release;
      const released = new Promise((r) => (release = r));
      hold = { held, released };
      return { paused, release };
    },
    read: (...args) => inner.read(...args),
    async compareAndSet(...args) {
      const h = hold;
      hold = null;
      if (h) {
        h.held();
        await h.released;
      }
      return inner.compareAndSet(...args);
    },
  };
}

/** One call through `b`: 'ok', 'failed' or 'rejected' (a CircuitOpenError). */
async function call(b, fn) {
  try {
    await b.execute(fn);
    return 'ok';
  } catch (e) {
    return isCircuitOpenError(e) ? 'rejected' : 'failed';
  }
}

/** Liveness: `b` admits once the operator resets, trips on failures, and closes after a probe. */
async function stillWorks(b, operator) {
  await operator.reset();
  await sleep(150); // b's lease (100 ms) ends: the next call asks the store
  assert.equal(await call(b, ok), 'ok', 'admitted after reset()');
  assert.equal(await call(b, boom), 'failed');
  assert.equal(await call(b, boom), 'failed');
  await b.flush();
  assert.equal((await operator.inspect()).state, 'OPEN', 'tripped by the failures');
  assert.equal(await call(b, ok), 'rejected');
  await sleep(BREAKER.resetTimeout + 50);
  let closed = false;
  for (let i = 0; i < 20 && !closed; i++) {
    await call(b, ok);
    await b.flush();
    closed = (await operator.inspect()).state === 'CLOSED';
    if (!closed) await sleep(50);
  }
  assert.equal(closed, true, 'closed again after a successful probe');
}

/** Two instances and an operator on one Redis key; `b`'s reads can be held. */
function fleet(name) {
  const plain = new RedisStore(fromNodeRedis(redis));
  const held = holding(new RedisStore(fromNodeRedis(redis)));
  const opts = { breaker: BREAKER, leaseMs: 100 };
  return {
    held,
    a: new StoreCircuitBreaker(name, { ...opts, store: plain, clientId: 'a' }),
    b: new StoreCircuitBreaker(name, { ...opts, store: held, clientId: 'b' }),
    operator: new StoreCircuitBreaker(name, { ...opts, store: plain, clientId: 'ops' }),
  };
}

test('redis: a key deleted and written again between a step\'s read and its write keeps the new record (isolate() stays isolated)', async () => {
  // Once, the version restarted at 1 with the new record, the step's compare-and-set found the
  // version it expected and wrote the lost record's batch over the operator's isolation:
  // isolate() answered 'isolated', the record then read automatic/CLOSED.
  const name = uniq('recreated');
  const key = `breakwater:${name}`;
  const { held, a, b, operator } = fleet(name);
  await a.reset(); // the record's first write
  assert.equal(await call(b, ok), 'ok');
  const { paused, release } = held.pause();
  const flushed = b.flush(); // b's batch: read, one step, then the compare-and-set (held)
  await paused;
  await redis.del(key); // evicted, or lost in a failover
  const isolated = await operator.isolate(); // the record written again, by another client
  assert.equal(isolated.mode, 'isolated');
  release();
  await flushed;
  const view = await operator.inspect();
  assert.deepEqual([view.mode, view.state], ['isolated', 'OPEN'], 'the isolation is still stored');
  await sleep(150); // b's lease ends
  assert.equal(await call(b, ok), 'rejected', 'b learnt of the isolation');
  await stillWorks(b, operator);
});

test('redis: a key deleted between a step\'s read and its write: the write is refused, the step runs again on no record', async () => {
  const name = uniq('deleted');
  const key = `breakwater:${name}`;
  const { held, a, b, operator } = fleet(name);
  await a.reset();
  assert.equal(await call(a, boom), 'failed');
  await a.flush(); // the lost record counts one failure
  assert.equal(await call(b, ok), 'ok');
  const { paused, release } = held.pause();
  const flushed = b.flush();
  await paused;
  await redis.del(key);
  release();
  await flushed;
  assert.equal(b.casConflicts, 1, 'the compare-and-set expecting the lost record was refused');
  const view = await operator.inspect();
  assert.equal(view.state, 'CLOSED');
  assert.deepEqual([view.stats.failures, view.stats.successes], [0, 1], 'b\'s batch on a new record, nothing of the lost one');
  await stillWorks(b, operator);
});

test('memory: a record expired and written again between a step\'s read and its write keeps the new record', async () => {
  // The same on MemoryStore, where a record goes by expiring (a CLOSED one after keyTtlMs).
  let now = 1_800_000_000_000;
  const clock = () => now;
  const name = uniq('expired');
  const store = new MemoryStore(clock);
  const held = holding(store);
  const opts = { breaker: BREAKER, leaseMs: 100, clock, keyTtlMs: 900_000 };
  const a = new StoreCircuitBreaker(name, { ...opts, store, clientId: 'a' });
  const b = new StoreCircuitBreaker(name, { ...opts, store: held, clientId: 'b' });
  await a.reset();
  assert.equal(await call(b, ok), 'ok');
  const { paused, release } = held.pause();
  const flushed = b.flush();
  await paused;
  now += 900_001; // the record expires
  assert.equal((await a.isolate()).mode, 'isolated');
  release();
  await flushed;
  const view = await a.inspect();
  assert.deepEqual([view.mode, view.state], ['isolated', 'OPEN'], 'the isolation is still stored');
  now += 150;
  assert.equal(await call(b, ok), 'rejected');
  await a.reset();
  now += 150;
  assert.equal(await call(b, ok), 'ok', 'admitted after reset()');
});

test('redis: a record of an earlier release (`<count>|<record>`) is read, and replaced at the next write', async () => {
  const name = uniq('earlier');
  const key = `breakwater:${name}`;
  const { a, operator } = fleet(name);
  await a.reset();
  assert.equal(await call(a, boom), 'failed');
  assert.equal(await call(a, boom), 'failed');
  await a.flush();
  const raw = await redis.get(key);
  await redis.set(key, `3|${raw.slice(raw.indexOf('|') + 1)}`); // as an earlier release wrote it
  const before = await operator.inspect();
  assert.deepEqual([before.version, before.state, before.stats.failures], [3, 'OPEN', 2]);
  const after = await operator.isolate();
  assert.equal(after.mode, 'isolated');
  assert.notEqual(after.version, 4, 'not a count');
  assert.ok((await redis.get(key)).startsWith(`${after.version}|`));
  assert.deepEqual([(await a.inspect()).mode, (await a.inspect()).stats.failures], ['isolated', 2]);
});

test('a store whose read answers a version of another kind gets an error naming it', async () => {
  const store = new MemoryStore();
  const old = { read: async (k) => ({ ...(await store.read(k)), version: '0' }), compareAndSet: () => assert.fail('no write') };
  const b = new StoreCircuitBreaker(uniq('kind'), { store: old });
  await assert.rejects(b.inspect(), /the store's read answered `version` "0" \(expected an integer in \[0, 9007199254740990\]\)/);
  await assert.rejects(store.compareAndSet('k', 0, 0, '{}', 0), /invalid `version` 0 \(expected an integer in \[1, /);
});

/** `console.warn`'s messages while `fn` runs. */
async function warnings(fn) {
  const seen = [];
  const warn = console.warn;
  console.warn = (...args) => seen.push(args.join(' '));
  try {
    await fn();
  } finally {
    console.warn = warn;
  }
  return seen;
}

for (const [policy, expected] of [['allkeys-lru', 1], ['volatile-lru', 0], ['noeviction', 0]]) {
  test(`redis: maxmemory-policy ${policy}: ${expected ? 'one warning' : 'no warning'}`, async () => {
    const was = (await redis.configGet('maxmemory-policy'))['maxmemory-policy'];
    await redis.configSet('maxmemory-policy', policy);
    try {
      const store = new RedisStore(fromNodeRedis(redis));
      const seen = await warnings(async () => {
        const a = new StoreCircuitBreaker(uniq('policy'), { store, breaker: BREAKER });
        const b = new StoreCircuitBreaker(uniq('policy'), { store, breaker: BREAKER });
        assert.equal(await call(a, ok), 'ok');
        assert.equal(await call(b, ok), 'ok');
        await a.inspect();
      });
      const about = seen.filter((w) => w.includes('maxmemory-policy'));
      assert.equal(about.length, expected, seen.join('\n'));
      if (expected) assert.match(about[0], new RegExp(`maxmemory-policy ${policy} may evict an OPEN breaker \\(no TTL\\): use noeviction or volatile-\\*$`));
    } finally {
      await redis.configSet('maxmemory-policy', was);
    }
  });
}

test('redis: a Redis that refuses to tell its maxmemory-policy: no warning, the store works', async () => {
  const was = (await redis.configGet('maxmemory-policy'))['maxmemory-policy'];
  await redis.configSet('maxmemory-policy', 'allkeys-lru');
  try {
    const adapter = fromNodeRedis(redis);
    const refusing = {
      eval: (script, keys, args) =>
        /INFO|CONFIG/.test(script) ? Promise.reject(new Error("ERR unknown command 'INFO'")) : adapter.eval(script, keys, args),
    };
    const name = uniq('refused');
    const seen = await warnings(async () => {
      const a = new StoreCircuitBreaker(name, { store: new RedisStore(refusing), breaker: BREAKER, leaseMs: 100 });
      assert.equal(await call(a, ok), 'ok');
      assert.equal(await call(a, boom), 'failed');
      assert.equal(await call(a, boom), 'failed');
      await a.flush();
      assert.equal((await a.inspect()).state, 'OPEN');
      assert.equal(a.decidingLocally, false);
    });
    assert.deepEqual(seen, []);
  } finally {
    await redis.configSet('maxmemory-policy', was);
  }
});
