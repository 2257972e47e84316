// `maxConcurrent` / `maxQueued` / `queueTimeoutMs` of the built package: slots and the line are
// the core's (src/bulkhead.rs, through the wasm); these check every way a call gives its slot
// back (success, failure, cancel, time-out, a stream's end, a permit never settled) and that after
// 10 000 random settles nothing is leaked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, FallbackChain, isCircuitOpenError } from 'breakwater';
import { limit } from 'breakwater/adaptive';
import { manualClock, httpError, deferred, tick } from './helpers.mjs';

const full = (e) => isCircuitOpenError(e) && e.reason === 'full';

test('limit(): options are checked, naming the option', () => {
  assert.throws(() => limit({ maxConcurrent: 0 }), (e) => e instanceof RangeError && /"concurrency\.maxConcurrent".*0/.test(e.message));
  assert.throws(() => limit({ maxConcurrent: 1.5 }), /"concurrency\.maxConcurrent".*1\.5/);
  assert.throws(() => limit({ maxQueued: 3 }), (e) => e instanceof TypeError && /"concurrency\.maxConcurrent"/.test(e.message));
  assert.throws(() => limit({ maxConcurrent: 2, queueTimeoutMs: 10 }), /"concurrency\.queueTimeoutMs".*needs "concurrency\.maxQueued"/);
  assert.throws(() => limit({ maxConcurrent: 2, maxQueued: -1 }), /"concurrency\.maxQueued".*-1/);
  assert.throws(() => limit({ maxConcurrent: 2, maxQueued: 1, queueTimeoutMs: 0 }), /"concurrency\.queueTimeoutMs".*0/);
  assert.throws(() => limit({ maxConcurrent: 2, maxQueue: 1 }), /maxQueue/);
  assert.throws(() => new CircuitBreaker('c', { concurrency: { maxConcurrent: 2 } }), (e) => e instanceof TypeError && /"concurrency".*limit\(\) from 'breakwater\/adaptive'/.test(e.message));
  const b = new CircuitBreaker('c', { concurrency: limit({ maxConcurrent: 2 }) });
  assert.equal(b.inFlight, 0);
  assert.equal(b.stats.full, 0);
});

test('maxConcurrent: over the limit a call is refused as full, while CLOSED', async () => {
  const b = new CircuitBreaker('c', { concurrency: limit({ maxConcurrent: 2 }) });
  const rejects = [];
  b.onReject((e) => rejects.push(e.reason));
  const gates = [deferred(), deferred()];
  const running = gates.map((g) => b.execute(() => g.promise));
  assert.equal(b.inFlight, 2);
  const err = await b.execute(async () => 'never').catch((e) => e);
  assert.ok(full(err), String(err));
  assert.equal(err.state, 'CLOSED');
  assert.match(err.message, /"c" is full/);
  assert.equal(await b.execute(async () => 'x', { fallback: (e) => `fallback: ${e.reason}` }), 'fallback: full');
  assert.deepEqual(rejects, ['full', 'full']);
  gates[0].resolve('a');
  gates[1].reject(httpError(529));
  assert.equal(await running[0], 'a');
  await assert.rejects(running[1], (e) => e.status === 529);
  assert.equal(b.inFlight, 0);
  assert.equal(await b.execute(async () => 'free again'), 'free again');
  assert.equal(b.stats.full, 2);
  assert.equal(b.stats.rejected, 0, 'the breaker itself refused nothing');
});

test('maxQueued: the line is first in, first out; a full line refuses at once; a long wait times out', async () => {
  const b = new CircuitBreaker('q', { concurrency: limit({ maxConcurrent: 1, maxQueued: 2, queueTimeoutMs: 200 }) });
  const order = [];
  const first = deferred();
  const a = b.execute(() => first.promise);
  const w1 = b.execute(async () => order.push('w1'));
  const w2 = b.execute(async () => order.push('w2'));
  assert.equal(b.queued, 2);
  const over = await b.execute(async () => 'never').catch((e) => e);
  assert.ok(full(over));
  first.resolve('a');
  await Promise.all([a, w1, w2]);
  assert.deepEqual(order, ['w1', 'w2']);
  assert.equal(b.queued, 0);
  // A slot that stays taken longer than queueTimeoutMs: the waiter is refused as full.
  const held = deferred();
  const h = b.execute(() => held.promise);
  const started = Date.now();
  const late = await b.execute(async () => 'never').catch((e) => e);
  assert.ok(full(late), String(late));
  assert.ok(Date.now() - started >= 150, `waited ${Date.now() - started} ms`);
  held.resolve();
  await h;
  assert.equal(b.inFlight, 0);
  assert.equal(b.stats.full, 2);
});

test('maxQueued: a caller that aborts while waiting leaves the line at once', async () => {
  const b = new CircuitBreaker('abort', { concurrency: limit({ maxConcurrent: 1, maxQueued: 1, queueTimeoutMs: 60_000 }) });
  const held = deferred();
  const h = b.execute(() => held.promise);
  const ac = new AbortController();
  const waiting = b.execute(async () => 'never', { signal: ac.signal });
  assert.equal(b.queued, 1);
  ac.abort(new Error('the user left'));
  await assert.rejects(waiting, /the user left/);
  assert.equal(b.queued, 0);
  // Its place is free for the next one, which gets the slot when the first call ends.
  const next = b.execute(async () => 'next');
  held.resolve();
  await h;
  assert.equal(await next, 'next');
  assert.equal(b.inFlight, 0);
});

test('maxConcurrent: a time-out frees the slot, and a stream holds it until it ends', async () => {
  const b = new CircuitBreaker('s', { concurrency: limit({ maxConcurrent: 1 }) });
  await assert.rejects(b.execute(() => new Promise(() => {}), { timeoutMs: 20 }), (e) => e.name === 'TimeoutError');
  assert.equal(b.inFlight, 0);
  let push;
  const source = new ReadableStream({ start: (c) => (push = c) });
  const pending = b.stream(() => source);
  push.enqueue('first');
  const stream = await pending;
  assert.equal(b.inFlight, 1, 'the stream holds its slot after its first chunk');
  assert.ok(full(await b.execute(async () => 'x').catch((e) => e)));
  const reader = stream.getReader();
  assert.equal((await reader.read()).value, 'first');
  await reader.cancel();
  await tick();
  assert.equal(b.inFlight, 0, 'the reader cancelled: the slot is free');
  // A stream that completes frees it too.
  const done = await b.stream(() => ReadableStream.from(['a', 'b']));
  for await (const _ of done);
  await tick();
  assert.equal(b.inFlight, 0);
});

test('maxConcurrent: a permit never settled frees its slot after probeTimeoutMs', () => {
  const clock = manualClock();
  const b = new CircuitBreaker('p', { concurrency: limit({ maxConcurrent: 1 }), probeTimeoutMs: 10_000, clock });
  const lost = b.tryAcquire();
  assert.ok(lost);
  assert.equal(b.tryAcquire(), undefined, 'full while the first is held');
  clock.advance(10_000);
  const next = b.tryAcquire();
  assert.ok(next, 'the lost permit\'s slot was freed by its lease');
  next.success();
  lost.success(); // late: frees nothing more
  assert.equal(b.inFlight, 0);
});

test('maxConcurrent: restore() keeps the slots in flight and the line', async () => {
  const b = new CircuitBreaker('r', { concurrency: limit({ maxConcurrent: 1, maxQueued: 1, queueTimeoutMs: 60_000 }) });
  const held = deferred();
  const h = b.execute(() => held.promise);
  const waiter = b.execute(async () => 'waited');
  b.restore(b.toJSON());
  assert.equal(b.inFlight, 1);
  assert.equal(b.queued, 1);
  held.resolve();
  await h;
  assert.equal(await waiter, 'waited');
  assert.equal(b.inFlight, 0);
});

test('maxConcurrent: FallbackChain falls to the backup when the primary is full', async () => {
  const primary = new CircuitBreaker('primary', { concurrency: limit({ maxConcurrent: 1 }) });
  const backup = new CircuitBreaker('backup');
  const held = deferred();
  const chain = new FallbackChain([
    { breaker: primary, call: () => held.promise },
    { breaker: backup, call: async () => 'from the backup' },
  ]);
  const first = chain.execute();
  const second = await chain.execute();
  assert.deepEqual([second.tier, second.value], [1, 'from the backup']);
  held.resolve('from the primary');
  assert.equal((await first).value, 'from the primary');
});

test('concurrency: limit({ maxConcurrent: 10 }) 000 random settles leak no slot', async () => {
  // Calls end every way there is, 100 at a time: success, upstream failure, a thrown client
  // error, the caller's abort (in line or running), a time-out, a stream read to its end or
  // cancelled, a tryAcquire permit settled or ignored. Liveness: afterwards nothing is held and
  // nobody waits, and the limit admits as many as it did at first.
  const b = new CircuitBreaker('random', { failureThreshold: 2 ** 32 - 1, concurrency: limit({ maxConcurrent: 8, maxQueued: 16, queueTimeoutMs: 5 }) });
  let seed = 12345;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  let settled = 0;
  const one = async () => {
    const kind = rand(9);
    const ac = new AbortController();
    try {
      if (kind === 0) await b.execute(async () => 'ok');
      else if (kind === 1) await b.execute(async () => { throw httpError(529); });
      else if (kind === 2) await b.execute(async () => { throw httpError(400); });
      else if (kind === 3) {
        const p = b.execute(() => new Promise(() => {}), { signal: ac.signal });
        p.catch(() => {}); // settled below, after the abort
        await tick();
        ac.abort(new Error('gone'));
        await p;
      } else if (kind === 4) await b.execute(() => new Promise(() => {}), { timeoutMs: 1 });
      else if (kind === 5) {
        const s = await b.stream(() => ReadableStream.from(['x', 'y']));
        for await (const _ of s);
      } else if (kind === 6) {
        const s = await b.stream(() => ReadableStream.from(['x', 'y']));
        await s.getReader().cancel();
      } else {
        const permit = b.tryAcquire();
        if (permit) {
          await tick();
          if (kind === 7) permit.success();
          else permit.ignore();
        }
      }
    } catch {
      // Refusals (full), failures, aborts and time-outs all end a call.
    }
    settled++;
  };
  for (let round = 0; round < 100; round++) {
    await Promise.all(Array.from({ length: 100 }, one));
    assert.ok(b.inFlight <= 8 && b.queued <= 16);
  }
  await tick();
  assert.equal(settled, 10_000);
  assert.equal(b.inFlight, 0);
  assert.equal(b.queued, 0);
  assert.ok(b.stats.full > 0, 'the limit was reached');
  const permits = Array.from({ length: 8 }, () => b.tryAcquire());
  assert.ok(permits.every(Boolean), 'all 8 slots are free');
  assert.equal(b.tryAcquire(), undefined);
  permits.forEach((p) => p.success());
});

test('maxConcurrent: a shared breaker refuses it, naming it, rather than ignoring it', async () => {
  // The limit is per instance: a shared breaker's settings travel to the coordinator, which has
  // no calls in flight to count.
  const { SharedCircuitBreaker } = await import('breakwater/shared');
  const service = { url: 'http://127.0.0.1:1', token: 't' };
  for (const options of [{ breaker: { concurrency: limit({ maxConcurrent: 4 }) } }, { local: { concurrency: limit({ maxConcurrent: 4 }) } }]) {
    assert.throws(
      () => new SharedCircuitBreaker('x', { service, ...options }),
      (e) => e instanceof TypeError && /"concurrency".*not supported here/.test(e.message),
    );
  }
});
