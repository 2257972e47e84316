// One body of checks for the runtimes that are not Node (tests/js/deno, tests/js/bun): each runner
// imports `cases` and registers every case with its own test function. `breakwater` is the packed
// package installed in tests/js/node_modules; each runtime picks its entry from the exports map.
import assert from 'node:assert/strict';
import {
  CircuitBreaker,
  CircuitOpenError,
  isCircuitOpenError,
  isTimeoutError,
  withRetry,
} from 'breakwater';

const T0 = 1_700_000_000_000;
const boom = () => Promise.reject(Object.assign(new Error('overloaded'), { status: 529 }));

/** The file the runtime resolved `specifier` to, from the package's dist/ (e.g. "node.mjs"). */
export function entryOf(specifier) {
  const url = import.meta.resolve(specifier);
  return url.slice(url.lastIndexOf('/dist/') + '/dist/'.length);
}

export const cases = [
  ['breakwater/adaptive: its module loads beside the main one; the same class sheds and limits there', async () => {
    const { adaptiveCase, checkAdaptive } = await import('./adaptive-case.mjs');
    assert.match(entryOf('breakwater/adaptive'), /^adaptive-(node|browser)\.mjs$/);
    checkAdaptive(await adaptiveCase(), assert);
  }],
  ['a success that brings a count window to its minimum opens the breaker then, for the whole open period', async () => {
    let t = T0;
    const b = new CircuitBreaker('runtime-count-trip', { failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 }, resetTimeout: 30_000, clock: () => t });
    for (let i = 0; i < 3; i++) await assert.rejects(b.execute(boom), { status: 529 });
    t += 5_000;
    assert.equal(await b.execute(async () => 'ok'), 'ok');
    assert.equal(b.state, 'OPEN');
    assert.equal(b.openUntil, t + 30_000);
    t += 1_000;
    const err = await b.execute(async () => 'probe?').catch((e) => e);
    assert.ok(isCircuitOpenError(err), String(err));
  }],

  ['a breaker opens after failures and rejects with CircuitOpenError', async () => {
    let t = T0;
    const b = new CircuitBreaker('runtime-open', { failureThreshold: 2, resetTimeout: 1_000, clock: () => t });
    await assert.rejects(b.execute(boom), { status: 529 });
    await assert.rejects(b.execute(boom), { status: 529 });
    assert.equal(b.state, 'OPEN');
    let called = false;
    const err = await b.execute(() => (called = true)).catch((e) => e);
    assert.ok(err instanceof CircuitOpenError, String(err));
    assert.ok(isCircuitOpenError(err));
    assert.equal(err.reason, 'open');
    assert.equal(err.retryAfterMs, 1_000);
    assert.equal(called, false);
    assert.equal(b.stats.rejected, 1);
  }],

  ['HALF_OPEN then CLOSED after the open period, with an injected clock', async () => {
    let t = T0;
    const transitions = [];
    const b = new CircuitBreaker('runtime-recover', {
      failureThreshold: 1,
      resetTimeout: 5_000,
      halfOpenSuccessThreshold: 2,
      clock: () => t,
    });
    b.onStateChange((e) => transitions.push(`${e.from}>${e.to}`));
    await b.execute(boom).catch(() => {});
    assert.equal(b.state, 'OPEN');
    t += 4_999;
    assert.ok(isCircuitOpenError(await b.execute(() => 1).catch((e) => e)));
    t += 1;
    assert.equal(await b.execute(() => 'probe 1'), 'probe 1');
    assert.equal(b.state, 'HALF_OPEN');
    assert.equal(await b.execute(() => Promise.resolve('probe 2')), 'probe 2');
    assert.equal(b.state, 'CLOSED');
    assert.deepEqual(transitions, ['CLOSED>OPEN', 'OPEN>HALF_OPEN', 'HALF_OPEN>CLOSED']);
  }],

  ['withRetry honours Retry-After (fetch Headers) and retries a 503 Response', async () => {
    const sleeps = [];
    let n = 0;
    const v = await withRetry(
      () => {
        n++;
        if (n === 1) throw Object.assign(new Error('busy'), { status: 429, headers: new Headers({ 'retry-after': '2' }) });
        if (n === 2) return new Response('down', { status: 503, headers: { 'retry-after-ms': '1500' } });
        return Promise.resolve('ok');
      },
      { jitter: 'none', baseDelayMs: 100, sleep: (ms) => (sleeps.push(ms), Promise.resolve()) },
    );
    assert.equal(v, 'ok');
    assert.deepEqual(sleeps, [2_000, 1_500]);
  }],

  ['withRetry attemptTimeoutMs aborts a hung attempt with a TimeoutError and retries it', async () => {
    const signals = [];
    const v = await withRetry(
      ({ attempt, signal }) => {
        signals.push(signal);
        return attempt === 1 ? new Promise(() => {}) : 'second';
      },
      { attemptTimeoutMs: 20, baseDelayMs: 1, jitter: 'none' },
    );
    assert.equal(v, 'second');
    assert.equal(signals.length, 2);
    assert.ok(isTimeoutError(signals[0].reason));
  }],

  ['breaker.stream passes a ReadableStream through and counts it once when it ends', async () => {
    const b = new CircuitBreaker('runtime-stream', { failureThreshold: 1, resetTimeout: 60_000 });
    const enc = new TextEncoder();
    const source = () =>
      new ReadableStream({
        start(c) {
          for (const part of ['data: Hello', ' world\n\n']) c.enqueue(enc.encode(part));
          c.close();
        },
      });
    const stream = await b.stream(source);
    assert.ok(stream instanceof ReadableStream);
    assert.equal(await new Response(stream).text(), 'data: Hello world\n\n');
    assert.equal(b.stats.successes, 1);
    // Cut after its first chunk: a failure (not retried), which opens this breaker.
    const cut = await b.stream(
      () =>
        new ReadableStream({
          pull(c) {
            if (this.sent) return c.error(new Error('connection reset'));
            this.sent = true;
            c.enqueue(enc.encode('data: Hi'));
          },
        }),
    );
    await assert.rejects(new Response(cut).text());
    assert.equal(b.stats.failures, 1);
    assert.equal(b.state, 'OPEN');
    assert.ok(isCircuitOpenError(await b.stream(source).catch((e) => e)));
  }],

  ['breakwater/shared loads its wasm: a shared breaker opens against an in-process coordinator', async () => {
    const { SharedCircuitBreaker } = await import('breakwater/shared');
    // The core's coordinator in this process, from the package's hidden subpath (which loads the
    // coordinator's module, as breakwater/store does).
    const { coordinatorGlue } = await import('breakwater/coordinator');
    let now = T0;
    const spec = JSON.stringify({ lease_ms: 1000, breaker: { trip: { kind: 'consecutive_failures', threshold: 2 }, open_duration_ms: 1000 } });
    const co = coordinatorGlue().WasmCoordinator.create('llm', spec, undefined, false);
    const fetch = async (url, init) =>
      new Response(co.exchange(now, init.body, url.includes('/v1/acquire')), { status: 200 });
    const b = new SharedCircuitBreaker('llm', {
      service: { url: 'https://breakwater.example', token: 't', fetch },
      local: { failureThreshold: 2, resetTimeout: 1_000 },
      clock: () => now,
    });
    assert.equal(await b.execute(() => 'fine'), 'fine');
    for (let i = 0; i < 2; i++) await b.execute(() => new Response('overloaded', { status: 503 }));
    assert.equal(b.state, 'OPEN');
    assert.ok(isCircuitOpenError(await b.execute(() => 'never').catch((e) => e)));
  }],

  ['breakwater/store loads: a StoreCircuitBreaker on a MemoryStore opens for every instance', async () => {
    const { MemoryStore, StoreCircuitBreaker } = await import('breakwater/store');
    const store = new MemoryStore();
    const options = { store, breaker: { failureThreshold: 2, resetTimeout: 60_000 } };
    const a = new StoreCircuitBreaker('runtime-store', options);
    const b = new StoreCircuitBreaker('runtime-store', options);
    assert.equal(await a.execute(() => 'ok'), 'ok');
    await a.execute(boom).catch(() => {});
    await a.execute(boom).catch(() => {});
    await a.flush();
    assert.equal((await a.inspect()).state, 'OPEN');
    assert.ok(isCircuitOpenError(await b.execute(() => 'never').catch((e) => e)));
  }],
];
