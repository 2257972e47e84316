// The CircuitBreaker of the built package (ESM entry), driven by an injected clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CircuitBreaker,
  CircuitOpenError,
  isCircuitOpenError,
  isTimeoutError,
  BreakerRegistry,
  classifyError,
} from 'breakwater';
import { manualClock, httpError, deferred, tick, reportedErrors } from './helpers.mjs';

const seed000 = {
  failureThreshold: 5,
  monitoringWindow: 60_000,
  resetTimeout: 30_000,
  halfOpenSuccessThreshold: 2,
};
const fail = (status = 529) => async () => {
  throw httpError(status);
};
const ok = async () => 'ok';

function tripped(clock, options = seed000, name = 'anthropic') {
  const b = new CircuitBreaker(name, { ...options, clock });
  for (let i = 0; i < (options.failureThreshold ?? 5); i++) b.recordFailure();
  assert.equal(b.state, 'OPEN');
  return b;
}

test('seed 000: five failures within the monitoring window open the circuit', () => {
  const clock = manualClock();
  const b = new CircuitBreaker('anthropic', { ...seed000, clock });
  assert.equal(b.name, 'anthropic');
  assert.equal(b.state, 'CLOSED');
  for (let i = 0; i < 4; i++) {
    assert.equal(b.isHealthy(), true);
    b.recordFailure();
    clock.advance(10_000);
  }
  assert.equal(b.state, 'CLOSED');
  b.recordFailure();
  assert.equal(b.state, 'OPEN');
  assert.equal(b.isHealthy(), false);
});

test('seed 000: failures spread wider than the window do not open it', () => {
  const clock = manualClock();
  const b = new CircuitBreaker('anthropic', { ...seed000, clock });
  for (let i = 0; i < 20; i++) {
    b.recordFailure();
    clock.advance(15_001); // never 5 within 60 s
  }
  assert.equal(b.state, 'CLOSED');
});

test('seed 000: after resetTimeout a probe goes through and two successes close it', () => {
  const clock = manualClock();
  const b = tripped(clock);
  clock.advance(29_999);
  assert.equal(b.isHealthy(), false);
  clock.advance(1);
  assert.equal(b.state, 'HALF_OPEN');
  assert.equal(b.isHealthy(), true);
  b.recordSuccess();
  assert.equal(b.state, 'HALF_OPEN', 'one success is not enough with halfOpenSuccessThreshold 2');
  assert.equal(b.isHealthy(), true);
  b.recordSuccess();
  assert.equal(b.state, 'CLOSED');
});

test('a failed probe opens the circuit again for another resetTimeout', () => {
  const clock = manualClock();
  const b = tripped(clock);
  clock.advance(30_000);
  assert.equal(b.isHealthy(), true);
  b.recordFailure();
  assert.equal(b.state, 'OPEN');
  assert.equal(b.openUntil, clock() + 30_000);
});

test('50 concurrent isHealthy()/record callers when the reset timeout expires: exactly 1 upstream call', async () => {
  const clock = manualClock();
  const b = tripped(clock);
  clock.advance(30_000);
  let upstream = 0;
  const gate = deferred();
  const caller = async () => {
    if (!b.isHealthy()) return 'fallback';
    try {
      upstream++;
      await gate.promise;
      b.recordSuccess();
      return 'live';
    } catch {
      b.recordFailure();
    }
  };
  const all = Promise.all(Array.from({ length: 50 }, caller));
  await tick();
  gate.resolve();
  const results = await all;
  assert.equal(upstream, 1);
  assert.equal(results.filter((r) => r === 'live').length, 1);
  assert.equal(results.filter((r) => r === 'fallback').length, 49);
});

test('50 concurrent execute() callers when the reset timeout expires: exactly 1 upstream call', async () => {
  const clock = manualClock();
  const b = tripped(clock);
  clock.advance(30_000);
  let upstream = 0;
  const gate = deferred();
  const results = await Promise.allSettled(
    Array.from({ length: 50 }, () =>
      b.execute(async () => {
        upstream++;
        await gate.promise;
        return 'live';
      }),
    ).concat(tick().then(() => gate.resolve())),
  );
  assert.equal(upstream, 1);
  const rejected = results.filter((r) => r.status === 'rejected');
  assert.equal(rejected.length, 49);
  for (const r of rejected) {
    assert.ok(isCircuitOpenError(r.reason));
    assert.equal(r.reason.reason, 'half-open-full');
  }
});

test('halfOpenMaxProbes lets that many probes through at once', async () => {
  const clock = manualClock();
  const b = tripped(clock, { ...seed000, halfOpenMaxProbes: 3, halfOpenSuccessThreshold: 3 });
  clock.advance(30_000);
  let upstream = 0;
  const gate = deferred();
  const calls = Promise.allSettled(
    Array.from({ length: 20 }, () =>
      b.execute(async () => {
        upstream++;
        await gate.promise;
      }),
    ),
  );
  await tick();
  gate.resolve();
  await calls;
  assert.equal(upstream, 3);
  assert.equal(b.state, 'CLOSED');
});

test('a probe that never reports frees its slot after probeTimeoutMs', async () => {
  const clock = manualClock();
  const b = tripped(clock, { ...seed000, probeTimeoutMs: 5_000 });
  clock.advance(30_000);
  assert.equal(b.isHealthy(), true); // the probe's caller vanishes without reporting
  assert.equal(b.isHealthy(), false);
  clock.advance(4_999);
  assert.equal(b.isHealthy(), false);
  clock.advance(1);
  assert.equal(b.isHealthy(), true);
});

test('default rule: 5 consecutive failures, and a success resets the run', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('openai', { clock });
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 4; i++) await assert.rejects(b.execute(fail(503)));
    await b.execute(ok);
  }
  assert.equal(b.state, 'CLOSED');
  for (let i = 0; i < 5; i++) await assert.rejects(b.execute(fail(503)));
  assert.equal(b.state, 'OPEN');
  const err = await b.execute(ok).catch((e) => e);
  assert.ok(err instanceof CircuitOpenError);
  assert.equal(err.retryAfterMs, 30_000);
  assert.equal(err.breaker, 'openai');
});

test('failureRate over a count window trips at the threshold share', async () => {
  const clock = manualClock();
  const opts = { failureRate: { threshold: 50, minimumCalls: 10, windowCalls: 10 }, clock };
  const under = new CircuitBreaker('a', opts);
  for (let i = 0; i < 10; i++) under.execute(i < 4 ? fail() : ok).catch(() => {});
  await tick();
  assert.equal(under.state, 'CLOSED');
  const over = new CircuitBreaker('b', opts);
  for (let i = 0; i < 10; i++) over.execute(i % 2 ? fail() : ok).catch(() => {});
  await tick();
  assert.equal(over.state, 'OPEN');
});

test('failureRate over a count window: the open period starts at the call that trips, a failure or a success', async () => {
  // A success can trip a rate rule: the one that brings the window to its minimum of calls while
  // the failures already make up the threshold. It once reached the core without the time (read
  // as a clock stepped back to 1970), so the breaker "opened" with its open period long over and
  // let the next call through as a probe: no open period at all.
  const clock = manualClock();
  const b = new CircuitBreaker('count', { failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 }, resetTimeout: 30_000, clock });
  for (let i = 0; i < 3; i++) await b.execute(fail()).catch(() => {});
  clock.advance(5_000);
  await b.execute(ok);
  assert.equal(b.state, 'OPEN');
  assert.equal(b.openUntil, clock() + 30_000, 'opened at the success that brought the window to its minimum');
  clock.advance(1_000);
  const err = await b.execute(ok).catch((e) => e);
  assert.ok(isCircuitOpenError(err), 'still open a second later');
  assert.equal(err.retryAfterMs, 29_000);
  // And at a failure that trips, later on.
  clock.advance(29_000);
  await b.execute(ok); // the probe closes it
  assert.equal(b.state, 'CLOSED');
  for (let i = 0; i < 4; i++) await b.execute(ok);
  clock.advance(60_000);
  for (let i = 0; i < 4; i++) await b.execute(fail()).catch(() => {});
  assert.equal(b.state, 'OPEN');
  assert.equal(b.openUntil, clock() + 30_000, 'opened at the tripping failure');
});

test('failureRate over a time window', () => {
  const clock = manualClock();
  const b = new CircuitBreaker('t', { failureRate: { threshold: 50, minimumCalls: 4, windowMs: 10_000 }, clock });
  b.recordFailure();
  b.recordFailure();
  clock.advance(20_000); // those two leave the window
  b.recordSuccess();
  b.recordSuccess();
  b.recordFailure();
  assert.equal(b.state, 'CLOSED');
  b.recordFailure();
  assert.equal(b.state, 'OPEN');
});

test('slowCallRate counts calls slower than slowCallMs, even successful ones', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('slow', {
    slowCallRate: { threshold: 50, slowCallMs: 1_000, minimumCalls: 4, windowCalls: 4 },
    clock,
  });
  const slow = async () => {
    clock.advance(1_001);
    return 'late';
  };
  assert.equal(await b.execute(slow), 'late');
  await b.execute(ok);
  await b.execute(ok);
  assert.equal(b.state, 'CLOSED');
  await b.execute(slow);
  assert.equal(b.state, 'OPEN');
  assert.equal(b.stats.slow, 2);
});

test('openJitter spreads the open period by ±fraction, drawn from the injected random', () => {
  const periods = new Set();
  for (const r of [0.01, 0.3, 0.6, 0.99]) {
    const clock = manualClock();
    const b = tripped(clock, { failureThreshold: 1, resetTimeout: 10_000, openJitter: 0.5, random: () => r });
    const period = b.openUntil - clock();
    assert.ok(period >= 5_000 && period <= 15_000, `period ${period}`);
    periods.add(period);
  }
  assert.ok(periods.size > 1, 'different seeds give different periods');
});

test('openBackoffFactor grows the open period after each failed probe, up to maxResetTimeoutMs', () => {
  const clock = manualClock();
  const b = tripped(clock, { failureThreshold: 1, resetTimeout: 1_000, openBackoffFactor: 2, maxResetTimeoutMs: 5_000 });
  const periods = [];
  for (let i = 0; i < 5; i++) {
    clock.advance(b.openUntil - clock());
    assert.equal(b.isHealthy(), true);
    b.recordFailure();
    periods.push(b.openUntil - clock());
  }
  assert.deepEqual(periods, [2_000, 4_000, 5_000, 5_000, 5_000]);
});

test('isolate, reset, disable and enable', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('manual', { clock });
  const seen = [];
  b.onStateChange((e) => seen.push(`${e.from}>${e.to}`));
  b.isolate();
  assert.equal(b.mode, 'isolated');
  clock.advance(10 * 60_000);
  const err = await b.execute(ok).catch((e) => e);
  assert.equal(err.reason, 'isolated');
  b.reset();
  assert.equal(b.state, 'CLOSED');
  assert.equal(b.mode, 'automatic');
  b.disable();
  for (let i = 0; i < 10; i++) await assert.rejects(b.execute(fail()));
  assert.equal(b.state, 'CLOSED');
  assert.equal(await b.execute(ok), 'ok');
  b.enable();
  assert.equal(b.mode, 'automatic');
  assert.deepEqual(seen, ['CLOSED>OPEN', 'OPEN>CLOSED']);
});

test('errors are classified: 4xx and aborts do not count, 429/5xx/529/quota/timeouts do', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('c', { failureThreshold: 1, clock });
  for (const s of [400, 401, 403, 404, 422]) {
    await assert.rejects(b.execute(fail(s)));
    assert.equal(b.state, 'CLOSED', `status ${s}`);
  }
  assert.equal(b.stats.ignored, 5);
  for (const err of [
    httpError(429),
    httpError(500),
    httpError(503),
    httpError(529),
    httpError(429, {}, { code: 'insufficient_quota' }),
    new TypeError('fetch failed'),
  ]) {
    const x = new CircuitBreaker('x', { failureThreshold: 1, clock });
    await assert.rejects(x.execute(async () => Promise.reject(err)));
    assert.equal(x.state, 'OPEN', String(err.status ?? err.message));
  }
  assert.deepEqual(
    [classifyError(httpError(429, {}, { code: 'insufficient_quota' }))].map((v) => [v.class, v.retryable, v.failure]),
    [['quota-exhausted', false, true]],
  );
});

test('a resolved fetch Response with a failing status counts, and is returned', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('fetch', { failureThreshold: 2, clock });
  const r503 = new Response('busy', { status: 503 });
  assert.equal(await b.execute(async () => r503), r503);
  await b.execute(async () => new Response('no', { status: 400 }));
  assert.equal(b.state, 'CLOSED');
  await b.execute(async () => new Response('busy', { status: 503 }));
  assert.equal(b.state, 'OPEN');
});

test('execute with a signal: an abort rejects at once and is not an upstream failure', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('abort', { failureThreshold: 1, clock });
  const ac = new AbortController();
  let seenSignal;
  const never = new Promise(() => {});
  const p = b.execute(
    async ({ signal }) => {
      seenSignal = signal;
      return never;
    },
    { signal: ac.signal },
  );
  ac.abort(new Error('user went away'));
  await assert.rejects(p, /user went away/);
  assert.equal(seenSignal.aborted, true, 'the call is told to stop');
  assert.equal(b.state, 'CLOSED');
  assert.equal(b.stats.failures, 0);
  assert.equal(b.stats.ignored, 1);
  // Already aborted: not even admitted.
  await assert.rejects(b.execute(ok, { signal: AbortSignal.abort() }));
  assert.equal(b.stats.admitted, 1);
});

test('execute with timeoutMs: TimeoutError, counted as a failure', async () => {
  const b = new CircuitBreaker('timeout', { failureThreshold: 1 });
  const err = await b.execute(() => new Promise(() => {}), { timeoutMs: 5 }).catch((e) => e);
  assert.ok(isTimeoutError(err));
  assert.equal(err.name, 'TimeoutError');
  assert.equal(b.state, 'OPEN');
});

test('fallback replaces CircuitOpenError when the breaker refuses', async () => {
  const clock = manualClock();
  const b = tripped(clock);
  let upstream = 0;
  const v = await b.execute(
    async () => {
      upstream++;
    },
    { fallback: (e) => `cached (${e.reason}, ${e.retryAfterMs})` },
  );
  assert.equal(v, 'cached (open, 30000)');
  assert.equal(upstream, 0);
});

test("execute's fallback answers a refused call and an upstream failure, with the reason; a client error and an abort are thrown", async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('fb', { failureThreshold: 3, clock });
  const answer = (e, reason) => ({ reason, status: e?.status, open: isCircuitOpenError(e) });
  const overloaded = () => Promise.reject(Object.assign(new Error('Overloaded'), { status: 529 }));
  assert.deepEqual(await b.execute(overloaded, { fallback: answer }), { reason: 'failure', status: 529, open: false });
  // A resolved failing Response: counted, and answered by the fallback instead of returned.
  const r503 = await b.execute(() => new Response('busy', { status: 503 }), { fallback: (e, reason) => `${reason} ${e.status}` });
  assert.equal(r503, 'failure 503');
  // A time-out is an upstream failure too.
  const slow = (c) => new Promise((_, reject) => c.signal.addEventListener('abort', () => reject(c.signal.reason)));
  const late = b.execute(slow, { timeoutMs: 10, fallback: (e, reason) => reason });
  assert.equal(await late, 'timeout');
  assert.equal(b.state, 'OPEN');
  assert.deepEqual(await b.execute(() => 'never', { fallback: answer }), { reason: 'open', status: undefined, open: true });
  assert.equal(b.stats.fallbacks, 4);
  // What is the caller's own is thrown, fallback or not.
  const c = new CircuitBreaker('fb2', { clock });
  const bad = Object.assign(new Error('bad request'), { status: 400 });
  await assert.rejects(c.execute(() => Promise.reject(bad), { fallback: () => 'no' }), (e) => e === bad);
  const ac = new AbortController();
  const pending = c.execute(slow, { signal: ac.signal, fallback: () => 'no' });
  ac.abort(new Error('the client left'));
  await assert.rejects(pending, /the client left/);
  assert.equal(c.stats.fallbacks, 0);
});

test('events are subscriptions that return an unsubscribe', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('ev', { failureThreshold: 1, clock });
  const changes = [];
  const rejects = [];
  const failures = [];
  const successes = [];
  const off = b.onStateChange((e) => changes.push([e.breaker, e.from, e.to, e.at]));
  b.onReject((e) => rejects.push(e.reason));
  const offFailure = b.onFailure((e) => failures.push(e.error.status));
  b.onSuccess(() => successes.push(1));
  await b.execute(ok);
  await assert.rejects(b.execute(fail(502)));
  await assert.rejects(b.execute(ok));
  assert.deepEqual(changes, [['ev', 'CLOSED', 'OPEN', clock()]]);
  assert.deepEqual(rejects, ['open']);
  assert.deepEqual(failures, [502]);
  assert.deepEqual(successes, [1]);
  off();
  off.dispose(); // idempotent
  offFailure();
  clock.advance(30_000);
  await assert.rejects(b.execute(fail(502)));
  assert.equal(changes.length, 1);
  assert.deepEqual(failures, [502]);
});

test('a listener that throws stops neither the other listeners nor the breaker; its error is reported asynchronously', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('ev', { failureThreshold: 1, clock });
  const seen = [];
  const reported = await reportedErrors(async () => {
    b.onStateChange(() => {
      throw new Error('a listener bug');
    });
    b.onStateChange((e) => seen.push(`${e.from} -> ${e.to}`));
    await assert.rejects(b.execute(fail(502)), { status: 502 });
    assert.equal(b.state, 'OPEN');
    await assert.rejects(b.execute(ok), isCircuitOpenError);
  });
  assert.deepEqual(seen, ['CLOSED -> OPEN']);
  assert.deepEqual(reported.map((e) => e.message), ['a listener bug'], 'the throw is reported, not swallowed');
});

test('toJSON and restore carry the state across a restart', async () => {
  const clock = manualClock();
  const b = tripped(clock, { ...seed000 });
  const json = JSON.parse(JSON.stringify(b));
  assert.equal(json.state, 'OPEN');
  const c = CircuitBreaker.fromJSON(json, { ...seed000, clock });
  assert.equal(c.name, 'anthropic');
  assert.equal(c.state, 'OPEN');
  assert.equal(c.openUntil, b.openUntil);
  assert.deepEqual(c.stats, b.stats);
  clock.advance(30_000);
  assert.equal(c.isHealthy(), true);
  assert.equal(c.isHealthy(), false, 'the probe slot is taken');
  // The window (failure times) survives too.
  const d = new CircuitBreaker('w', { ...seed000, clock });
  for (let i = 0; i < 4; i++) d.recordFailure();
  const e = new CircuitBreaker('w', { ...seed000, clock });
  e.restore(d.toJSON());
  e.recordFailure();
  assert.equal(e.state, 'OPEN');
});

test('restore refuses garbage and mismatched snapshots without touching the breaker', () => {
  const clock = manualClock();
  const b = tripped(clock);
  const json = b.toJSON();
  const c = new CircuitBreaker('c', { clock });
  for (const bad of [
    null,
    {},
    { breakwater: 1, name: 'x', data: 'nope' },
    { ...json, data: json.data.slice(0, 5) },
    { ...json, data: json.data.map((n, i) => (i === 1 ? 7 : n)) },
    { ...json, data: [...json.data, 1] },
    { ...json, data: json.data.map((n, i) => (i === 4 ? -1 : n)) },
  ]) {
    assert.throws(() => c.restore(bad), TypeError);
  }
  // A snapshot of a window rule does not fit a consecutive rule.
  assert.throws(() => c.restore(json), /cannot restore/);
  assert.equal(c.state, 'CLOSED');
});

test('invalid options throw RangeError/TypeError naming the option and the value', () => {
  const cases = [
    [{ resetTimeout: -1 }, RangeError, /"resetTimeout" in CircuitBreaker options: -1/],
    [{ resetTimeout: NaN }, RangeError, /"resetTimeout" in CircuitBreaker options: NaN/],
    [{ failureThreshold: Infinity }, RangeError, /"failureThreshold" in CircuitBreaker options: Infinity/],
    [{ failureThreshold: 0 }, RangeError, /"failureThreshold" in CircuitBreaker options: 0/],
    [{ failureThreshold: 2.5 }, RangeError, /"failureThreshold" in CircuitBreaker options: 2.5/],
    [{ monitoringWindow: '60s' }, TypeError, /"monitoringWindow" in CircuitBreaker options: "60s"/],
    [{ resetTimout: 30_000 }, TypeError, /unknown option "resetTimout".*did you mean "resetTimeout"/],
    [{ openJitter: 1 }, RangeError, /"openJitter" in CircuitBreaker options: 1/],
    [{ openBackoffFactor: 0.5 }, RangeError, /"openBackoffFactor" in CircuitBreaker options: 0.5/],
    [{ resetTimeout: 10_000, maxResetTimeoutMs: 5_000 }, RangeError, /"maxResetTimeoutMs" in CircuitBreaker options: 5000 \(expected an integer in \[10000, /],
    [{ halfOpenMaxProbes: 2000 }, RangeError, /"halfOpenMaxProbes" in CircuitBreaker options: 2000/],
    [{ probeTimeoutMs: 0 }, RangeError, /"probeTimeoutMs" in CircuitBreaker options: 0/],
    [{ clock: 5 }, TypeError, /"clock" in CircuitBreaker options: 5/],
    [{ failureRate: { threshold: 150 } }, RangeError, /"failureRate.threshold" in CircuitBreaker options: 150/],
    [{ failureRate: { threshold: 50, windowCals: 10 } }, TypeError, /unknown option "windowCals"/],
    [{ slowCallRate: { threshold: 50 } }, TypeError, /slowCallRate.slowCallMs/],
    [{ failureThreshold: 3, failureRate: { threshold: 50 } }, TypeError, /choose one trip rule/],
    ['fast', TypeError, /"CircuitBreaker options": "fast"/],
  ];
  for (const [opts, type, message] of cases) {
    assert.throws(() => new CircuitBreaker('v', opts), (e) => e instanceof type && message.test(e.message), JSON.stringify(opts));
  }
  assert.throws(() => new CircuitBreaker('', {}), TypeError);
  assert.throws(() => new CircuitBreaker(undefined), TypeError);
});

test('isCircuitOpenError recognises the marker, not the class identity', () => {
  assert.equal(isCircuitOpenError(new CircuitOpenError('x', 'OPEN', 'open', 5)), true);
  assert.equal(isCircuitOpenError({ isCircuitOpenError: true }), true);
  assert.equal(isCircuitOpenError(new Error('open')), false);
  assert.equal(isCircuitOpenError(null), false);
  assert.equal(isCircuitOpenError('CircuitOpenError'), false);
});

test('BreakerRegistry hands out one breaker per name, with per-name overrides', async () => {
  const clock = manualClock();
  const reg = new BreakerRegistry({ failureThreshold: 2, clock });
  const a = reg.get('anthropic:claude-sonnet');
  assert.equal(reg.get('anthropic:claude-sonnet'), a);
  const o = reg.get('openai', { failureThreshold: 1 });
  const changes = [];
  reg.onStateChange((e) => changes.push(`${e.breaker}:${e.to}`));
  await assert.rejects(o.execute(fail()));
  await assert.rejects(a.execute(fail()));
  assert.equal(a.state, 'CLOSED');
  await assert.rejects(a.execute(fail()));
  assert.deepEqual(changes, ['openai:OPEN', 'anthropic:claude-sonnet:OPEN']);
  assert.deepEqual(reg.names().sort(), ['anthropic:claude-sonnet', 'openai']);
  const saved = JSON.parse(JSON.stringify(reg));
  const reg2 = new BreakerRegistry({ failureThreshold: 2, clock });
  reg2.get('openai', { failureThreshold: 1 });
  reg2.restore(saved);
  assert.equal(reg2.get('openai').state, 'OPEN');
  assert.equal(reg2.get('anthropic:claude-sonnet').state, 'OPEN');
  assert.equal(reg.delete('openai'), true);
  assert.notEqual(reg.get('openai'), o);
  assert.throws(() => new BreakerRegistry({ resetTimeout: -5 }), RangeError);
});

test('CLOSED fast path: stats and snapshots count every call the core did not see', async () => {
  const clock = manualClock();
  for (const options of [{}, { failureThreshold: 3, monitoringWindow: 10_000 }]) {
    const b = new CircuitBreaker('fast', { ...options, clock });
    for (let i = 0; i < 10; i++) await b.execute(ok);
    for (let i = 0; i < 5; i++) if (b.isHealthy()) b.recordSuccess();
    await assert.rejects(b.execute(fail(503)));
    await b.execute(ok);
    assert.deepEqual(
      [b.stats.admitted, b.stats.successes, b.stats.failures],
      [17, 16, 1],
      JSON.stringify(options),
    );
    const c = CircuitBreaker.fromJSON(JSON.parse(JSON.stringify(b)), { ...options, clock });
    assert.deepEqual(c.stats, b.stats);
  }
});

test('CLOSED fast path: a run of failures is still broken only by a success, and stale permits stay stale', async () => {
  const clock = manualClock();
  const b = new CircuitBreaker('runs', { failureThreshold: 3, clock });
  for (let round = 0; round < 5; round++) {
    await assert.rejects(b.execute(fail(503)));
    await assert.rejects(b.execute(fail(503)));
    await b.execute(ok);
    await b.execute(ok);
  }
  assert.equal(b.state, 'CLOSED');
  b.recordFailure();
  b.recordFailure();
  b.recordSuccess();
  b.recordFailure();
  b.recordFailure();
  assert.equal(b.state, 'CLOSED');
  // A call admitted while CLOSED that succeeds after the breaker opened does not close it.
  const gate = deferred();
  const slow = b.execute(() => gate.promise);
  b.recordFailure();
  assert.equal(b.state, 'OPEN');
  gate.resolve('late');
  assert.equal(await slow, 'late');
  assert.equal(b.state, 'OPEN');
  assert.equal(b.stats.stale, 1);
});
