// breakwater/store in one process against the test command's redis-server: keys, names, the
// compare-and-set under a forced conflict, exactly-once batches after a lost answer, the store
// timing out (fail-open and fail-closed) and coming back, admin operations, damaged records,
// ignored probes, and the adapters' call shapes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { StoreCircuitBreaker, RedisStore, MemoryStore, fromNodeRedis, fromIoredis, fromUpstash } from 'breakwater/store';
import { namer, sleep, until, useRedis, ok, failsWith } from './helpers.mjs';
import { checkSeed000, seed000Case } from '../js/seed000-case.mjs';

let redis;
const uniq = namer();
useRedis((c) => (redis = c));

const boom = failsWith(503);
/** A RedisEval over the real client, with a hook before each script runs. */
function tapped(hook = async () => {}) {
  const real = fromNodeRedis(redis);
  return {
    calls: [],
    eval: async function (script, keys, args) {
      const kind = script.includes("'SET'") ? 'cas' : 'read';
      this.calls.push(kind);
      return hook(kind, () => real.eval(script, keys, args));
    },
  };
}

test("seed 000's synchronous pattern on a Redis-backed breaker: the failing instance blocks at once, the others within one lease, all recover", async () => {
  // Seed 000's options, with the open period and the lease short enough to wait out for real
  // (Redis's clock is the coordinator's).
  const SEED000 = { failureThreshold: 2, monitoringWindow: 60_000, resetTimeout: 300, halfOpenSuccessThreshold: 2 };
  const name = uniq('seed000');
  const store = new RedisStore(fromNodeRedis(redis));
  const result = await seed000Case({
    make: (i) => new StoreCircuitBreaker(name, { store, breaker: SEED000, leaseMs: 200, clientId: `i${i}` }),
    wait: sleep,
    flush: (b) => b.flush(),
    leaseMs: 200,
    resetTimeout: SEED000.resetTimeout,
  });
  checkSeed000(result, assert);
  assert.equal((await new StoreCircuitBreaker(name, { store, breaker: SEED000 }).inspect()).state, 'CLOSED');
});

test('names are validated, keys are namespaced under the prefix and expire', async () => {
  const store = new RedisStore(fromNodeRedis(redis));
  for (const bad of ['', 'a b', 'x'.repeat(129), 'é', 'a\nb', 42, undefined]) {
    assert.throws(() => new StoreCircuitBreaker(bad, { store }), TypeError, String(bad));
  }
  assert.throws(() => new StoreCircuitBreaker('ok', { store, prefix: 'bad prefix' }), TypeError);
  assert.throws(() => new StoreCircuitBreaker('ok', {}), TypeError);
  assert.throws(() => new StoreCircuitBreaker('ok', { store, leaseMs: 0 }), RangeError);
  assert.throws(() => new StoreCircuitBreaker('ok', { store, breaker: { resetTimeout: -1 } }), /"resetTimeout" in StoreCircuitBreaker options\.breaker: -1/);
  // The lease's bound is the shared breaker's, named as the option (not as the core's `lease_ms`).
  assert.throws(() => new StoreCircuitBreaker('ok', { store, leaseMs: 4_000_000 }), /"leaseMs": 4000000 \(expected an integer in \[1, 3600000\]\)/);
  assert.throws(() => new RedisStore({}), TypeError);

  const name = `${uniq('openai')}:gpt-4.1/chat_v1.2`;
  const b = new StoreCircuitBreaker(name, { store, keyTtlMs: 900_000 });
  assert.equal(b.key, `breakwater:${name}`);
  await assert.rejects(b.execute(boom));
  const raw = await redis.get(`breakwater:${name}`);
  assert.match(raw, /^[1-9]\d{0,15}\|\{/, '`<version>|<record>`');
  assert.equal(raw.slice(0, raw.indexOf('|')), String((await b.inspect()).version));
  const ttl = await redis.pTTL(`breakwater:${name}`);
  assert.ok(ttl > 0 && ttl <= 900_000, `ttl ${ttl}`);
  assert.throws(() => new StoreCircuitBreaker(name, { store, keyTtlMs: 60_000 }), /keyTtlMs.*900000/);

  const p = new StoreCircuitBreaker(name, { store, prefix: 'app1:bw:' });
  assert.equal(p.key, `app1:bw:${name}`);
  await assert.rejects(p.execute(boom));
  assert.match(await redis.get(`app1:bw:${name}`), /^[1-9]\d{0,15}\|\{/);
  assert.equal((await b.inspect()).counters.failures, 1, 'another prefix is another breaker');
});

test('a compare-and-set that finds the version moved is retried with what it found: nothing lost', async () => {
  const name = uniq('conflict');
  const store = new RedisStore(fromNodeRedis(redis));
  const b = new StoreCircuitBreaker(name, { store, clientId: 'b', breaker: { failureThreshold: 100 } });
  let once = true;
  const a = new StoreCircuitBreaker(name, {
    clientId: 'a',
    breaker: { failureThreshold: 100 },
    // Just before a's first write, b writes.
    store: new RedisStore(
      tapped(async (kind, run) => {
        if (kind === 'cas' && once) {
          once = false;
          await assert.rejects(b.execute(boom));
        }
        return run();
      }),
    ),
  });
  for (let i = 0; i < 3; i++) await a.execute(ok);
  await assert.rejects(a.execute(boom));
  assert.equal(a.casConflicts, 1);
  assert.equal(a.unacknowledged, 0);
  const v = await a.inspect();
  assert.deepEqual([v.counters.successes, v.counters.failures, v.counters.batches, v.clients], [3, 2, 2, 2]);
  assert.equal(v.stats.failures, 2);
});

test('a batch whose answer was lost is sent again and counted once', async () => {
  const name = uniq('lost');
  let lose = 1;
  const events = [];
  const a = new StoreCircuitBreaker(name, {
    breaker: { failureThreshold: 100 },
    retryUnreachableMs: 1,
    store: new RedisStore(
      tapped(async (kind, run) => {
        const r = await run();
        if (kind === 'cas' && lose-- > 0) throw new Error('connection reset (after the write)');
        return r;
      }),
    ),
  });
  a.onEvent((e) => events.push(e.type));
  for (let i = 0; i < 5; i++) await a.execute(ok);
  await assert.rejects(a.execute(boom)); // the write lands, its answer is lost: fallback
  assert.ok(events.includes('local'));
  assert.ok(a.unacknowledged > 0);
  assert.equal(await a.flush(), true);
  assert.ok(events.includes('recovered'));
  assert.equal(a.unacknowledged, 0);
  const v = await a.inspect();
  assert.deepEqual([v.counters.successes, v.counters.failures, v.counters.duplicateBatches], [5, 1, 1]);
  assert.equal(v.stats.successes, 5);
});

test('store slow: every call is bounded; fail-open serves through the local breaker, fail-closed refuses; then it resynchronises', async () => {
  for (const failClosed of [false, true]) {
    const name = uniq(failClosed ? 'closed' : 'open');
    let hang = true;
    const events = [];
    const b = new StoreCircuitBreaker(name, {
      failClosed,
      storeTimeoutMs: 50,
      retryUnreachableMs: 1,
      store: new RedisStore(tapped((kind, run) => (hang ? new Promise(() => {}) : run()))),
    });
    b.onEvent((e) => e.type !== 'state' && events.push(e.type));
    let served = 0;
    let refused = 0;
    for (let i = 0; i < 5; i++) {
      try {
        await b.execute(ok);
        served++;
      } catch (e) {
        assert.ok(isCircuitOpenError(e));
        refused++;
      }
    }
    assert.deepEqual(events, ['local']);
    assert.equal(b.decidingLocally, true);
    assert.deepEqual([served, refused], failClosed ? [0, 5] : [5, 0]);
    hang = false;
    await sleep(2);
    await b.execute(ok);
    assert.deepEqual(events.slice(0, 2), ['local', 'recovered']);
    assert.equal(b.decidingLocally, false);
    await b.flush();
    const v = await b.inspect();
    // The calls served meanwhile reach the record; decided before any lease (no generation known),
    // they count as stale: statistics, never a state change.
    assert.equal(v.counters.successes, served + 1);
    assert.equal(v.counters.stale, served);
  }
});

test('isolate() and reset() reach every instance at its next lease', async () => {
  const name = uniq('admin');
  const store = new RedisStore(fromNodeRedis(redis));
  const a = new StoreCircuitBreaker(name, { store, leaseMs: 20 });
  const b = new StoreCircuitBreaker(name, { store, leaseMs: 20 });
  await b.execute(ok);
  const v = await a.isolate();
  assert.deepEqual([v.state, v.mode], ['OPEN', 'isolated']);
  const reason = await until(async () => {
    try {
      await b.execute(ok);
      return false;
    } catch (e) {
      return isCircuitOpenError(e) && e.reason;
    }
  });
  assert.equal(reason, 'isolated');
  assert.equal((await a.reset()).state, 'CLOSED');
  await until(async () => {
    try {
      return (await b.execute(ok)) === 'ok';
    } catch {
      return false;
    }
  });
  assert.equal(b.state, 'CLOSED');
});

test('a damaged record is replaced by a CLOSED breaker, never trusted', async () => {
  const name = uniq('damaged');
  await redis.set(`breakwater:${name}`, 'garbage');
  const b = new StoreCircuitBreaker(name, { store: new RedisStore(fromNodeRedis(redis)), breaker: { failureThreshold: 1 } });
  const v = await b.inspect();
  assert.equal(v.state, 'CLOSED');
  assert.ok(v.restoreError);
  await assert.rejects(b.execute(boom));
  const after = await b.inspect();
  assert.equal(after.state, 'OPEN');
  assert.equal(after.restoreError, undefined);
  await redis.set(`breakwater:${name}`, '7|{"s":{"breakwater":1,"name":"x","state":"OPEN","data":[1,2,3]}}');
  assert.equal((await b.inspect()).state, 'CLOSED');
});

test('an ignored probe (a 400) frees the half-open slot without closing or reopening', async () => {
  const name = uniq('ignored');
  const b = new StoreCircuitBreaker(name, {
    store: new RedisStore(fromNodeRedis(redis)),
    breaker: { failureThreshold: 1, resetTimeout: 30 },
  });
  await assert.rejects(b.execute(boom));
  assert.equal(b.state, 'OPEN');
  await sleep(40);
  await assert.rejects(b.execute(() => Promise.reject(Object.assign(new Error('bad request'), { status: 400 }))));
  let v = await b.inspect();
  assert.deepEqual([v.state, v.probesInFlight, v.counters.probesGranted, v.counters.ignored], ['HALF_OPEN', 0, 1, 1]);
  assert.equal(await b.execute(ok), 'ok');
  v = await b.inspect();
  assert.deepEqual([v.state, v.counters.probesGranted], ['CLOSED', 2]);
});

test('MemoryStore: the same breaker for instances of one process', async () => {
  const store = new MemoryStore();
  const a = new StoreCircuitBreaker('mem', { store, breaker: { failureThreshold: 2 } });
  const b = new StoreCircuitBreaker('mem', { store, breaker: { failureThreshold: 2 } });
  await assert.rejects(a.execute(boom));
  await assert.rejects(b.execute(boom));
  assert.equal(b.state, 'OPEN');
  await a.flush();
  assert.equal(a.state, 'OPEN');
});

test('adapters: the call shapes of node redis, ioredis and @upstash/redis', async () => {
  const seen = [];
  const rec = (tag) => ({ eval: async (...args) => (seen.push([tag, ...args]), 1) });
  await fromNodeRedis(rec('redis')).eval('S', ['k'], ['1', '2']);
  await fromIoredis(rec('ioredis')).eval('S', ['k'], ['1', '2']);
  await fromUpstash(rec('upstash')).eval('S', ['k'], ['1', '2']);
  assert.deepEqual(seen, [
    ['redis', 'S', { keys: ['k'], arguments: ['1', '2'] }],
    ['ioredis', 'S', 1, 'k', '1', '2'],
    ['upstash', 'S', ['k'], ['1', '2']],
  ]);
  // Upstash deserialises JSON answers: a bare number comes back as a number.
  const store = new RedisStore({ eval: async () => 1 });
  assert.deepEqual(await store.compareAndSet('k', 0, 1, '{}', 1000), { ok: true });
});

test('the declarations of breakwater/store compile in a TypeScript app (tsc, module nodenext)', async () => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { fileURLToPath } = await import('node:url');
  const path = await import('node:path');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const tsc = path.join(here, '../../node_modules/typescript/bin/tsc');
  const args = [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext',
    '--target', 'es2022', '--lib', 'es2022,dom', path.join(here, 'types/consumer.ts')];
  const r = await promisify(execFile)(process.execPath, args, { cwd: here }).catch((e) => e);
  assert.equal(r.code ?? 0, 0, `${r.stdout}${r.stderr}`);
});
