// withRetry and RetryBudget of the built package, with injected sleep, random and clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { withRetry, RetryBudget, CircuitBreaker, retryAfterMs, isCircuitOpenError, isTimeoutError, classifyError } from 'breakwater';
import { manualClock, httpError } from './helpers.mjs';

const seed002 = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 16000, retryableStatuses: [429, 500, 503, 529] };

/** A scripted upstream: each element is thrown (Error) or returned. */
function upstream(...script) {
  const fn = async (ctx) => {
    fn.calls.push(ctx);
    const next = script[Math.min(fn.calls.length - 1, script.length - 1)];
    if (next instanceof Error) throw next;
    return next;
  };
  fn.calls = [];
  return fn;
}

function recorder(clock) {
  const sleeps = [];
  const sleep = async (ms) => {
    sleeps.push(ms);
    clock?.advance(ms);
  };
  return { sleeps, sleep };
}

test('seed 002: retries 529/503 with exponential backoff, then succeeds', async () => {
  const { sleeps, sleep } = recorder();
  const fn = upstream(httpError(529), httpError(503), httpError(429), 'done');
  const v = await withRetry(fn, { ...seed002, jitter: 'none', sleep });
  assert.equal(v, 'done');
  assert.equal(fn.calls.length, 4);
  assert.deepEqual(fn.calls.map((c) => c.attempt), [1, 2, 3, 4]);
  assert.deepEqual(sleeps, [1000, 2000, 4000]);
});

test('seed 002: a non-retryable status (400, 401, 404) is thrown at once', async () => {
  for (const s of [400, 401, 404]) {
    const { sleeps, sleep } = recorder();
    const fn = upstream(httpError(s), 'never');
    await assert.rejects(withRetry(fn, { ...seed002, sleep }), (e) => e.status === s);
    assert.equal(fn.calls.length, 1);
    assert.deepEqual(sleeps, []);
  }
});

test('seed 002: after maxAttempts the last error is thrown; errors without status are retried', async () => {
  const { sleeps, sleep } = recorder();
  const last = new Error('socket hang up');
  const fn = upstream(httpError(503), new Error('ECONNRESET'), httpError(500), last);
  await assert.rejects(withRetry(fn, { ...seed002, sleep }), (e) => e === last);
  assert.equal(fn.calls.length, 4);
  assert.equal(sleeps.length, 3);
});

test('retryableStatuses replaces the defaults', async () => {
  const { sleep } = recorder();
  const only429 = upstream(httpError(503), 'x');
  await assert.rejects(withRetry(only429, { retryableStatuses: [429], sleep }), (e) => e.status === 503);
  assert.equal(only429.calls.length, 1);
  const with418 = upstream(httpError(418), 'x');
  assert.equal(await withRetry(with418, { retryableStatuses: [418], sleep }), 'x');
});

test('jitter kinds use the injected random and stay within their ranges', async () => {
  const run = async (jitter, r) => {
    const { sleeps, sleep } = recorder();
    await withRetry(upstream(httpError(503), httpError(503), httpError(503), 1), {
      baseDelayMs: 1000,
      maxDelayMs: 16000,
      jitter,
      sleep,
      random: () => r,
    });
    return sleeps;
  };
  assert.deepEqual(await run('none', 0.5), [1000, 2000, 4000]);
  assert.deepEqual(await run('full', 0.5), [500, 1000, 2000]);
  assert.deepEqual(await run('full', 0), [0, 0, 0]);
  assert.deepEqual(await run('equal', 0), [500, 1000, 2000]);
  assert.deepEqual(await run(0.3, 0), [700, 1400, 2800]); // seed 002's ±30 %
  assert.deepEqual(await run(0.3, 0.5), [1000, 2000, 4000]);
  const dec = await run('decorrelated', 0.999);
  assert.ok(dec.every((d) => d >= 1000 && d <= 16000), String(dec));
  assert.ok(dec[1] > dec[0] && dec[2] > dec[1]);
});

test('maxDelayMs caps every delay', async () => {
  const { sleeps, sleep } = recorder();
  await withRetry(upstream(...Array(6).fill(httpError(503)), 1), {
    maxAttempts: 7,
    baseDelayMs: 1000,
    maxDelayMs: 5000,
    jitter: 'none',
    sleep,
  });
  assert.deepEqual(sleeps, [1000, 2000, 4000, 5000, 5000, 5000]);
});

test('Retry-After: seconds, HTTP-date, retry-after-ms, plain objects and fetch Headers', async () => {
  const clock = manualClock(Date.parse('Sun, 06 Nov 1994 08:49:37 GMT'));
  const cases = [
    [{ 'retry-after': '7' }, 7000],
    [{ 'Retry-After': '2.5' }, 2500],
    [new Headers({ 'retry-after': '3' }), 3000],
    [{ 'retry-after': 'Sun, 06 Nov 1994 08:49:47 GMT' }, 10000],
    [new Headers({ 'retry-after-ms': '1234.5', 'retry-after': '60' }), 1235],
    [{ 'retry-after': 'soon' }, undefined],
  ];
  for (const [headers, expected] of cases) {
    assert.equal(retryAfterMs(httpError(429, headers), clock()), expected, JSON.stringify([...Object.entries(headers)]));
    const { sleeps, sleep } = recorder();
    await withRetry(upstream(httpError(429, headers), 'ok'), { jitter: 'none', baseDelayMs: 100, sleep, clock });
    assert.deepEqual(sleeps, [expected ?? 100]);
  }
  // Anthropic/OpenAI SDK errors keep headers on `headers`; some clients on `response.headers`.
  assert.equal(retryAfterMs({ status: 429, response: { headers: new Headers({ 'retry-after': '4' }) } }), 4000);
});

test('a resolved fetch Response with a retryable status is retried, and returned when retries run out', async () => {
  const { sleeps, sleep } = recorder();
  const busy = () => new Response('busy', { status: 503, headers: { 'retry-after': '1' } });
  const fn = upstream(busy(), new Response('ok', { status: 200 }));
  const r = await withRetry(fn, { sleep, jitter: 'none', baseDelayMs: 10 });
  assert.equal(r.status, 200);
  assert.deepEqual(sleeps, [1000]);
  const last = busy();
  const r2 = await withRetry(upstream(busy(), last), { maxAttempts: 2, sleep });
  assert.equal(r2, last);
  const bad = new Response('bad', { status: 400 });
  assert.equal(await withRetry(upstream(bad), { sleep }), bad);
});

test('a Retry-After beyond maxRetryAfterMs gives up at once', async () => {
  const { sleeps, sleep } = recorder();
  const giveUps = [];
  const fn = upstream(httpError(429, { 'retry-after': '120' }), 'x');
  await assert.rejects(
    withRetry(fn, { maxRetryAfterMs: 60_000, sleep, onGiveUp: (e, info) => giveUps.push(info) }),
    (e) => e.status === 429,
  );
  assert.equal(fn.calls.length, 1);
  assert.deepEqual(sleeps, []);
  assert.equal(giveUps[0].reason, 'retry-after-too-long');
  assert.equal(giveUps[0].retryAfterMs, 120_000);
});

test('an exhausted quota (openai insufficient_quota) is not retried', async () => {
  const { sleep } = recorder();
  const giveUps = [];
  const err = httpError(429, {}, { code: 'insufficient_quota', type: 'insufficient_quota' });
  const fn = upstream(err, 'x');
  await assert.rejects(withRetry(fn, { sleep, onGiveUp: (_, i) => giveUps.push(i) }));
  assert.equal(fn.calls.length, 1);
  assert.equal(giveUps[0].reason, 'not-retryable');
  assert.equal(giveUps[0].verdict.class, 'quota-exhausted');
});

test('onRetry sees each retry; onGiveUp is the dead-letter hook, called once', async () => {
  const { sleep } = recorder();
  const retries = [];
  const giveUps = [];
  await assert.rejects(
    withRetry(upstream(httpError(503)), {
      maxAttempts: 3,
      jitter: 'none',
      sleep,
      onRetry: (e) => retries.push([e.attempt, e.delayMs, e.error.status, e.verdict.class]),
      onGiveUp: (e, info) => giveUps.push([e.status, info.attempts, info.reason]),
    }),
  );
  assert.deepEqual(retries, [
    [1, 1000, 503, 'transient'],
    [2, 2000, 503, 'transient'],
  ]);
  assert.deepEqual(giveUps, [[503, 3, 'attempts-exhausted']]);
});

test('deadlineMs stops retries that would start too late', async () => {
  const clock = manualClock();
  const { sleeps, sleep } = recorder(clock);
  const giveUps = [];
  await assert.rejects(
    withRetry(upstream(httpError(503)), {
      maxAttempts: 10,
      jitter: 'none',
      deadlineMs: 5_000,
      sleep,
      clock,
      onGiveUp: (_, i) => giveUps.push(i.reason),
    }),
  );
  assert.deepEqual(sleeps, [1000, 2000]);
  assert.deepEqual(giveUps, ['deadline']);
});

test('shouldRetry overrides the classification', async () => {
  const { sleep } = recorder();
  const fn = upstream(httpError(400), 'ok');
  assert.equal(await withRetry(fn, { sleep, shouldRetry: (e) => e.status === 400 || undefined }), 'ok');
  const fn2 = upstream(httpError(503), 'ok');
  await assert.rejects(withRetry(fn2, { sleep, shouldRetry: () => false }));
  assert.equal(fn2.calls.length, 1);
});

test('a shared RetryBudget stops retries when they exceed their share of calls', async () => {
  const clock = manualClock();
  const budget = new RetryBudget({ ttlMs: 10_000, minPerSec: 0, retryPercent: 20, clock });
  const { sleep } = recorder();
  const giveUps = [];
  let upstreamCalls = 0;
  const failing = async () => {
    upstreamCalls++;
    throw httpError(503);
  };
  // 10 logical calls, each allowed 3 retries: without a budget that would be 40 upstream calls.
  for (let i = 0; i < 10; i++) {
    await withRetry(failing, { budget, sleep, clock, onGiveUp: (_, i) => giveUps.push(i.reason) }).catch(() => {});
  }
  assert.equal(upstreamCalls, 10 + 2); // 20 % of 10 calls
  // Every call ends on an empty budget (the two that retried failed again).
  assert.deepEqual(giveUps, Array(10).fill('budget-exhausted'));
  assert.ok(budget.available < 1);
});

test('an abort stops the sleep at once and rejects with the reason; not a give-up', async () => {
  const ac = new AbortController();
  const giveUps = [];
  let calls = 0;
  const p = withRetry(
    async ({ signal }) => {
      calls++;
      assert.equal(signal, ac.signal);
      throw httpError(503);
    },
    { signal: ac.signal, baseDelayMs: 3_600_000, maxDelayMs: 3_600_000, jitter: 'none', onGiveUp: () => giveUps.push(1) },
  );
  setImmediate(() => ac.abort(new Error('client disconnected')));
  await assert.rejects(p, /client disconnected/);
  assert.equal(calls, 1);
  assert.deepEqual(giveUps, []);
  // An injected sleep that ignores the signal is still cut short.
  const ac2 = new AbortController();
  const p2 = withRetry(upstream(httpError(503)), { signal: ac2.signal, sleep: () => new Promise(() => {}) });
  setImmediate(() => ac2.abort(new Error('stop')));
  await assert.rejects(p2, /stop/);
  // An attempt in flight is abandoned at once too.
  const ac3 = new AbortController();
  const p3 = withRetry(() => new Promise(() => {}), { signal: ac3.signal });
  setImmediate(() => ac3.abort(new Error('gone')));
  await assert.rejects(p3, /gone/);
});

test('with a breaker: attempts go through it, and an open breaker is waited out like a Retry-After', async () => {
  const clock = manualClock();
  const breaker = new CircuitBreaker('p', { failureThreshold: 2, resetTimeout: 5_000, clock });
  const { sleeps, sleep } = recorder(clock);
  const fn = upstream(httpError(503), httpError(503), 'recovered');
  const v = await withRetry(fn, { breaker, sleep, clock, jitter: 'none', baseDelayMs: 100, maxAttempts: 5 });
  assert.equal(v, 'recovered');
  assert.equal(fn.calls.length, 3);
  // The second failure opened the breaker: the third attempt was refused (not sent upstream)
  // and the fourth waited out the rest of the open period.
  assert.deepEqual(sleeps, [100, 200, 4_800]);
  assert.equal(breaker.state, 'CLOSED');
  // Too long to wait: give up with the CircuitOpenError.
  const b2 = new CircuitBreaker('q', { resetTimeout: 600_000, clock });
  b2.isolate();
  await assert.rejects(withRetry(upstream('x'), { breaker: b2, sleep }), (e) => isCircuitOpenError(e));
});

test('invalid withRetry options throw naming the option and the value', async () => {
  const cases = [
    [{ maxAttempts: 0 }, RangeError, /"maxAttempts": 0/],
    [{ maxAttempts: NaN }, RangeError, /"maxAttempts": NaN/],
    [{ baseDelayMs: -1 }, RangeError, /"baseDelayMs": -1/],
    [{ maxDelayMs: Infinity }, RangeError, /"maxDelayMs": Infinity/],
    [{ baseDelayMs: 5000, maxDelayMs: 1000 }, RangeError, /"maxDelayMs": 1000 \(expected an integer in \[5000, /],
    [{ jitter: 'random' }, TypeError, /"jitter": "random"/],
    [{ jitter: 2 }, RangeError, /"jitter": 2/],
    [{ retryableStatuses: 503 }, RangeError, /"retryableStatuses": 503/],
    [{ retryableStatuses: [503, 'x'] }, TypeError, /"retryableStatuses": "x"/],
    [{ maxAtempts: 3 }, TypeError, /unknown option "maxAtempts".*"maxAttempts"/],
    [{ sleep: 100 }, TypeError, /"sleep": 100/],
    [{ budget: {} }, TypeError, /"budget"/],
    [{ attemptTimeoutMs: 0 }, RangeError, /"attemptTimeoutMs": 0 \(expected an integer in \[1, /],
    [{ attemptTimeoutMs: -5 }, RangeError, /"attemptTimeoutMs": -5/],
    [{ attemptTimeoutMs: 1.5 }, RangeError, /"attemptTimeoutMs": 1.5/],
    [{ attemptTimeoutMs: NaN }, RangeError, /"attemptTimeoutMs": NaN/],
    [{ attemptTimeoutMs: Infinity }, RangeError, /"attemptTimeoutMs": Infinity/],
    [{ attemptTimeoutMs: '100' }, TypeError, /"attemptTimeoutMs": "100"/],
    [{ attemptTimeoutMs: null }, TypeError, /"attemptTimeoutMs": null/],
    [{ attemptTimoutMs: 100 }, TypeError, /unknown option "attemptTimoutMs".*"attemptTimeoutMs"/],
  ];
  for (const [opts, type, message] of cases) {
    await assert.rejects(withRetry(async () => 1, opts), (e) => e instanceof type && message.test(e.message), JSON.stringify(opts));
  }
  assert.throws(() => new RetryBudget({ ttlMs: 100 }), /"ttlMs": 100/);
});

// attemptTimeoutMs: each attempt's own time limit (real timers of tens of ms; no assertion on speed).

/** An upstream that never answers, but records its attempts and when their signal aborts. */
function hanging() {
  const fn = ({ attempt, signal }) => {
    fn.calls.push({ attempt, signal });
    return new Promise(() => {});
  };
  fn.calls = [];
  return fn;
}

test('attemptTimeoutMs: a hung attempt is aborted with a TimeoutError and retried, each with its own signal', async () => {
  const fn = hanging();
  const retries = [];
  const giveUps = [];
  const err = await withRetry(fn, {
    attemptTimeoutMs: 20,
    maxAttempts: 3,
    baseDelayMs: 1,
    jitter: 'none',
    onRetry: (e) => retries.push(e),
    onGiveUp: (e, ev) => giveUps.push(ev),
  }).then(
    () => assert.fail('resolved'),
    (e) => e,
  );
  assert.ok(isTimeoutError(err), String(err));
  assert.equal(err.name, 'TimeoutError');
  assert.equal(err.timeoutMs, 20);
  assert.deepEqual(fn.calls.map((c) => c.attempt), [1, 2, 3]);
  const signals = fn.calls.map((c) => c.signal);
  assert.equal(new Set(signals).size, 3, 'a fresh signal per attempt');
  for (const s of signals) {
    assert.ok(s instanceof AbortSignal);
    assert.equal(s.aborted, true);
    assert.ok(isTimeoutError(s.reason));
  }
  assert.equal(retries.length, 2);
  for (const r of retries) {
    assert.ok(isTimeoutError(r.error));
    assert.equal(r.verdict.class, 'timeout');
    assert.equal(r.verdict.retryable, true);
    assert.equal(r.verdict.failure, true);
  }
  assert.deepEqual(giveUps.map((g) => [g.reason, g.attempts, g.verdict.class]), [['attempts-exhausted', 3, 'timeout']]);
});

test('attemptTimeoutMs: a slow first attempt times out, a fast second one succeeds', async () => {
  const seen = [];
  const v = await withRetry(
    async ({ attempt, signal }) => {
      seen.push(signal);
      if (attempt === 1) return new Promise(() => {});
      return 'fast';
    },
    { attemptTimeoutMs: 20, baseDelayMs: 1, jitter: 'none' },
  );
  assert.equal(v, 'fast');
  assert.equal(seen.length, 2);
  assert.equal(seen[0].aborted, true);
  // The attempt that answered keeps an unaborted signal (a response body read later is not cut).
  await delay(40);
  assert.equal(seen[1].aborted, false);
});

test('attemptTimeoutMs: the timer is cleared when an attempt settles (nothing keeps the process waiting)', async () => {
  // One hour: a leaked timer would keep this test file's process alive; node --test would then hang.
  assert.equal(await withRetry(async () => 'ok', { attemptTimeoutMs: 3_600_000 }), 'ok');
  const fn = upstream(httpError(503), 'ok');
  assert.equal(await withRetry(fn, { attemptTimeoutMs: 3_600_000, baseDelayMs: 1, jitter: 'none' }), 'ok');
  assert.equal(fn.calls.length, 2);
  assert.equal(fn.calls[0].signal.aborted, false);
});

test("attemptTimeoutMs: the caller's abort during an attempt stops everything at once, not retried", async () => {
  const ac = new AbortController();
  const fn = hanging();
  const retries = [];
  const giveUps = [];
  const p = withRetry(fn, {
    signal: ac.signal,
    attemptTimeoutMs: 60_000,
    onRetry: (e) => retries.push(e),
    onGiveUp: () => giveUps.push(1),
  });
  setImmediate(() => ac.abort(new Error('client disconnected')));
  await assert.rejects(p, /client disconnected/);
  assert.equal(fn.calls.length, 1);
  // The attempt's own signal is not the caller's, but aborts with it, for the same reason.
  assert.notEqual(fn.calls[0].signal, ac.signal);
  assert.equal(fn.calls[0].signal.aborted, true);
  assert.equal(fn.calls[0].signal.reason, ac.signal.reason);
  assert.deepEqual(retries, []);
  assert.deepEqual(giveUps, []);
  // Already aborted: no attempt at all.
  const fn2 = hanging();
  await assert.rejects(withRetry(fn2, { signal: AbortSignal.abort(new Error('early')), attemptTimeoutMs: 20 }), /early/);
  assert.equal(fn2.calls.length, 0);
});

test('attemptTimeoutMs with a breaker: each time-out counts as a failure on it and opens it', async () => {
  const breaker = new CircuitBreaker('attempt-timeouts', { failureThreshold: 2, resetTimeout: 600_000 });
  const failures = [];
  breaker.onFailure((e) => failures.push(e.error));
  const fn = hanging();
  const err = await withRetry(fn, { breaker, attemptTimeoutMs: 20, maxAttempts: 5, baseDelayMs: 1, jitter: 'none' }).then(
    () => assert.fail('resolved'),
    (e) => e,
  );
  // Two time-outs opened it; the third attempt was refused, and its wait is too long to honour.
  assert.equal(fn.calls.length, 2);
  assert.equal(breaker.state, 'OPEN');
  assert.ok(isCircuitOpenError(err), String(err));
  assert.equal(breaker.stats.failures, 2);
  assert.equal(failures.length, 2);
  for (const e of failures) assert.ok(isTimeoutError(e), String(e));
  for (const c of fn.calls) assert.ok(isTimeoutError(c.signal.reason));
});

test('an AbortSignal.timeout abort is classified as a timeout (retryable), as thrown or wrapped by Node', async () => {
  // What fetch rejects with: the signal's reason, a DOMException named TimeoutError.
  const s = AbortSignal.timeout(5);
  const alive = setInterval(() => {}, 1_000); // AbortSignal.timeout's own timer does not hold the process
  await new Promise((r) => s.addEventListener('abort', r, { once: true }));
  clearInterval(alive);
  assert.equal(s.reason.name, 'TimeoutError');
  assert.deepEqual(
    { ...classifyError(s.reason) },
    { class: 'timeout', retryable: true, failure: true, ignored: false, status: undefined },
  );
  // What Node's timers/promises, http and events reject with: an AbortError whose cause is it.
  const wrapped = await delay(60_000, 'late', { signal: AbortSignal.timeout(5) }).catch((e) => e);
  assert.equal(wrapped.name, 'AbortError');
  assert.equal(wrapped.cause?.name, 'TimeoutError');
  assert.equal(classifyError(wrapped).class, 'timeout');
  assert.equal(classifyError(wrapped).retryable, true);
  // A plain AbortError (a cancel, no time-out behind it) is not taken for one.
  const cancel = await delay(60_000, 'late', { signal: AbortSignal.abort() }).catch((e) => e);
  assert.notEqual(classifyError(cancel).class, 'timeout');
  // Per attempt, made by the caller's fn: onRetry says timeout, and the attempt is retried.
  const kinds = [];
  let n = 0;
  const v = await withRetry(
    async ({ attempt }) => {
      n++;
      if (attempt === 1) return delay(60_000, 'late', { signal: AbortSignal.timeout(10) });
      return 'second';
    },
    { baseDelayMs: 1, jitter: 'none', onRetry: (e) => kinds.push([e.verdict.class, e.verdict.retryable]) },
  );
  assert.equal(v, 'second');
  assert.equal(n, 2);
  assert.deepEqual(kinds, [['timeout', true]]);
});
