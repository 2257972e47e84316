// breaker.stream and FallbackChain against real HTTP streams: a local SSE server on 127.0.0.1
// that answers in Anthropic's and OpenAI's streaming shapes, cuts an answer, stalls, sends an
// error event inside a 200, or answers with no content; and in-memory streams.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  CircuitBreaker,
  CircuitOpenError,
  FallbackChain,
  StreamError,
  isCircuitOpenError,
  isTimeoutError,
  withRetry,
  classifyError,
  retryAfterMs,
} from 'breakwater';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { manualClock } from './helpers.mjs';
import { anthropic, openai, sseFrame } from '../../js/src/cli/formats.mjs';

// The frames are those of `breakwater fake-llm` (js/src/cli/formats.mjs): START before the first
// delta (message_start, content_block_start, ping), STOP after the last, OVERLOADED the in-stream
// overloaded_error, EMPTY a whole answer with no content block.
const events = anthropic.stream({ id: 'msg_test', model: 'claude-test', text: 'Hello world', inputTokens: 3 });
const delta = events.delta;
const START = events.head();
const STOP = events.tail();
const OVERLOADED = events.error();
const EMPTY = events.empty();

// Each request takes the next cue: { status?, headers?, parts: [string | { wait: ms } | 'CUT' | 'STALL'] }.
let server;
let url;
const cues = [];
let requests = 0;
const sockets = new Set();
before(async () => {
  server = http.createServer(async (req, res) => {
    requests++;
    for await (const _ of req);
    const cue = cues.shift() ?? { parts: [START, delta('Hello'), delta(' world'), STOP] };
    res.writeHead(cue.status ?? 200, { 'content-type': cue.type ?? 'text/event-stream', ...(cue.headers ?? {}) });
    for (const p of cue.parts ?? []) {
      if (p === 'CUT') return res.destroy();
      if (p === 'STALL') return; // never another byte; the client's timeout ends it
      if (typeof p === 'object') await new Promise((r) => setTimeout(r, p.wait));
      else res.write(p);
    }
    res.end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}/v1/messages`;
});
after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  cues.length = 0;
  requests = 0;
});

const text = async (stream) => {
  let out = '';
  const dec = new TextDecoder();
  for await (const c of stream) out += typeof c === 'string' ? c : dec.decode(c, { stream: true });
  return out;
};
// `data: [contingency]` is what the tests' onInterrupted appends (the app's words, not a provider's frame).
const deltas = (raw) =>
  [...raw.matchAll(/"text":"([^"]*)"/g)].map((m) => m[1]).join('') + (raw.includes('[contingency]') ? '[contingency]' : '');
const call = ({ signal }) => fetch(url, { method: 'POST', body: '{}', signal });
const counts = (b) => {
  const s = b.stats;
  return { admitted: s.admitted, successes: s.successes, failures: s.failures, ignored: s.ignored };
};

test('a completed stream is one success, its bytes untouched', async () => {
  const b = new CircuitBreaker('s-ok');
  const stream = await b.stream(call);
  assert.equal(deltas(await text(stream)), 'Hello world');
  assert.deepEqual(counts(b), { admitted: 1, successes: 1, failures: 0, ignored: 0 });
});

test('a stream cut mid-answer: partial text once, the contingency, one failure, never retried', async () => {
  cues.push({ parts: [START, delta('Hel'), delta('lo'), { wait: 20 }, 'CUT'] });
  const b = new CircuitBreaker('s-cut');
  let attempts = 0;
  const stream = await withRetry(
    () => {
      attempts++;
      return b.stream(call, { onInterrupted: () => 'data: [contingency]\n\n' });
    },
    { maxAttempts: 3, baseDelayMs: 1 },
  );
  assert.equal(deltas(await text(stream)), 'Hello[contingency]');
  assert.equal(attempts, 1);
  assert.equal(requests, 1);
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('without onInterrupted a cut errors the stream after the partial answer', async () => {
  cues.push({ parts: [START, delta('Hel'), { wait: 20 }, 'CUT'] });
  const b = new CircuitBreaker('s-cut-error');
  const reader = (await b.stream(call)).getReader();
  const dec = new TextDecoder();
  let got = '';
  await assert.rejects(async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      got += dec.decode(value);
    }
  });
  assert.equal(deltas(got), 'Hel');
  assert.equal(b.stats.failures, 1);
});

test("an overloaded_error event inside a 200 before the first delta rejects (529), so withRetry tries again", async () => {
  cues.push({ parts: [START, OVERLOADED] });
  const b = new CircuitBreaker('s-event');
  const seen = [];
  const stream = await withRetry(() => b.stream(call), {
    maxAttempts: 3,
    baseDelayMs: 1,
    onRetry: (e) => seen.push(e.error),
  });
  assert.equal(deltas(await text(stream)), 'Hello world');
  assert.equal(requests, 2);
  assert.equal(seen.length, 1);
  assert.ok(seen[0] instanceof StreamError);
  assert.equal(seen[0].status, 529);
  assert.equal(seen[0].type, 'overloaded_error');
  assert.equal(classifyError(seen[0]).class, 'overloaded');
  assert.deepEqual(counts(b), { admitted: 2, successes: 1, failures: 1, ignored: 0 });
});

test("OpenAI's error object in a data line counts like its code (429), after content too", async () => {
  const chat = openai.stream({ id: 'chatcmpl-test', created: 1_700_000_000, model: 'gpt-test' });
  // A chunk with a top-level `error`, as chat.error() sends it, with the 429's body.
  const err = sseFrame(undefined, openai.error(429, 'Rate limit reached'));
  cues.push({ parts: [chat.head(), err] }, { parts: [chat.head(), chat.delta('Hi'), err] });
  const b = new CircuitBreaker('s-openai', { failureThreshold: 10 });
  const e = await b.stream(call).catch((x) => x);
  assert.ok(e instanceof StreamError);
  assert.equal(e.status, 429);
  assert.equal(classifyError(e).class, 'rate-limited');
  const stream = await b.stream(call, { onInterrupted: () => 'data: [contingency]\n\n' });
  const raw = await text(stream);
  assert.ok(raw.includes('"Hi"') && raw.endsWith('data: [contingency]\n\n'));
  assert.deepEqual(counts(b), { admitted: 2, successes: 0, failures: 2, ignored: 0 });
});

test('a stream that ends with no content is a failure (the empty answer)', async () => {
  cues.push({ parts: [EMPTY] });
  const b = new CircuitBreaker('s-empty');
  const e = await b.stream(call).catch((x) => x);
  assert.ok(e instanceof StreamError);
  assert.equal(e.kind, 'empty');
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('firstChunkTimeoutMs: a stall before the first token rejects with a TimeoutError, a failure', async () => {
  cues.push({ parts: [START, 'STALL'] });
  const b = new CircuitBreaker('s-ttft');
  const e = await b.stream(call, { firstChunkTimeoutMs: 100 }).catch((x) => x);
  assert.ok(isTimeoutError(e));
  assert.equal(e.timeoutMs, 100);
  assert.equal(classifyError(e).retryable, true);
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('firstChunkTimeoutMs also covers waiting for the headers', async () => {
  cues.push({ parts: [{ wait: 2000 }] });
  const slow = http.createServer(() => {}); // accepts, never answers
  await new Promise((r) => slow.listen(0, '127.0.0.1', r));
  const b = new CircuitBreaker('s-headers');
  const e = await b
    .stream(({ signal }) => fetch(`http://127.0.0.1:${slow.address().port}/`, { signal }), { firstChunkTimeoutMs: 80 })
    .catch((x) => x);
  slow.closeAllConnections();
  await new Promise((r) => slow.close(r));
  assert.ok(isTimeoutError(e));
  assert.equal(b.stats.failures, 1);
});

test('idleTimeoutMs after the first chunk: partial answer, contingency, one failure', async () => {
  cues.push({ parts: [START, delta('Hi'), 'STALL'] });
  const b = new CircuitBreaker('s-idle');
  const stream = await b.stream(call, { idleTimeoutMs: 100, onInterrupted: (e) => `data: [contingency] ${e.name}\n\n` });
  const raw = await text(stream);
  assert.equal(deltas(raw), 'Hi[contingency]');
  assert.ok(raw.endsWith('[contingency] TimeoutError\n\n'));
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('the reader cancelling (a client gone) is ignored; so is the signal aborting', async () => {
  cues.push({ parts: [START, delta('Hi'), { wait: 200 }, delta('!'), STOP] }, { parts: [START, 'STALL'] });
  const b = new CircuitBreaker('s-cancel');
  const stream = await b.stream(call);
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel('client went away');
  const ctl = new AbortController();
  const p = b.stream(call, { signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error('user stopped')), 50);
  await assert.rejects(p, /user stopped/);
  assert.deepEqual(counts(b), { admitted: 2, successes: 0, failures: 0, ignored: 2 });
});

test('a signal aborted by a time-out (AbortSignal.timeout, an SDK chunk timeout) is a failure', async () => {
  cues.push({ parts: [START, 'STALL'] });
  const b = new CircuitBreaker('s-abort-timeout');
  await assert.rejects(b.stream(call, { signal: AbortSignal.timeout(60) }));
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('an error status rejects with its status and Retry-After; an OPEN breaker rejects without calling', async () => {
  cues.push({ status: 529, type: 'application/json', headers: { 'retry-after': '7' }, parts: [JSON.stringify(anthropic.error(529))] });
  const b = new CircuitBreaker('s-status', { failureThreshold: 1, resetTimeout: 60_000 });
  const e = await b.stream(call).catch((x) => x);
  assert.equal(e.status, 529);
  assert.equal(retryAfterMs(e), 7000);
  assert.equal(b.state, 'OPEN');
  let called = 0;
  const open = await b.stream(() => (called++, fetch(url))).catch((x) => x);
  assert.ok(isCircuitOpenError(open));
  assert.equal(called, 0);
  assert.equal(requests, 1);
});

test('async iterables and object streams: isContent holds back non-content, errorOf sees errors inside', async () => {
  const b = new CircuitBreaker('s-objects');
  async function* parts(list) {
    yield* list;
  }
  const isContent = (p) => p.type === 'text-delta';
  const errorOf = (p) => (p.type === 'error' ? p.error : undefined);
  const s = await b.stream(() => parts([{ type: 'start' }, { type: 'text-delta', text: 'a' }, { type: 'finish' }]), { isContent, errorOf });
  const got = [];
  for await (const p of s) got.push(p.type);
  assert.deepEqual(got, ['start', 'text-delta', 'finish']);
  const overloaded = Object.assign(new Error('overloaded'), { status: 529 });
  await assert.rejects(b.stream(() => parts([{ type: 'start' }, { type: 'error', error: overloaded }]), { isContent, errorOf }), /overloaded/);
  const cut = await b.stream(() => parts([{ type: 'text-delta', text: 'a' }, { type: 'error', error: overloaded }]), {
    isContent,
    errorOf,
    onInterrupted: () => ({ type: 'text-delta', text: ' (interrupted)' }),
  });
  const texts = [];
  for await (const p of cut) if (p.type === 'text-delta') texts.push(p.text);
  assert.deepEqual(texts, ['a', ' (interrupted)']);
  const strings = await b.stream(() => parts(['', 'x', 'y']));
  assert.equal(await text(strings), 'xy');
  assert.deepEqual(counts(b), { admitted: 4, successes: 2, failures: 2, ignored: 0 });
});

test('the slow-call rule sees the time to first content (or the whole stream with measure: "total")', async () => {
  const clock = manualClock();
  async function* slowStart() {
    clock.advance(500); // time to first token
    yield 'a';
    clock.advance(5000); // a long answer
    yield 'b';
  }
  const rule = { slowCallRate: { threshold: 100, slowCallMs: 1000, minimumCalls: 100 }, clock };
  const first = new CircuitBreaker('s-ttft-slow', rule);
  await text(await first.stream(slowStart));
  assert.equal(first.stats.slow, 0);
  const total = new CircuitBreaker('s-total-slow', rule);
  await text(await total.stream(slowStart, { measure: 'total' }));
  assert.equal(total.stats.slow, 1);
});

test('bad options name the option and the value, and give the permit back', async () => {
  const b = new CircuitBreaker('s-options', { halfOpenMaxProbes: 1 });
  await assert.rejects(b.stream(call, { idleTimeoutMs: -5 }), /invalid option "idleTimeoutMs": -5/);
  await assert.rejects(b.stream(call, { firstChunkTimeout: 5 }), /unknown option "firstChunkTimeout" in stream options \(did you mean "firstChunkTimeoutMs"\?\)/);
  await assert.rejects(b.stream(() => 42), /must return a Response, a ReadableStream or an AsyncIterable/);
  assert.deepEqual(counts(b), { admitted: 3, successes: 0, failures: 1, ignored: 2 });
  assert.equal(requests, 0);
});

test('the shared breakers stream through the same guard (a store breaker counts a cut once)', async () => {
  cues.push({ parts: [START, delta('Hi'), { wait: 20 }, 'CUT'] });
  const store = new MemoryStore();
  const b = new StoreCircuitBreaker('s-store', { store, breaker: { failureThreshold: 1, resetTimeout: 60_000 } });
  const stream = await b.stream(call, { onInterrupted: () => 'data: [contingency]\n\n' });
  assert.equal(deltas(await text(stream)), 'Hi[contingency]');
  await b.flush();
  assert.equal((await b.inspect()).state, "OPEN");
  assert.ok(isCircuitOpenError(await b.stream(call).catch((x) => x)));
  assert.equal(requests, 1);
});

// ----- FallbackChain -----

const ok = (v) => () => v;
const boom = (status) => () => {
  throw Object.assign(new Error(`HTTP ${status}`), { status });
};

test('FallbackChain: an OPEN tier is skipped at once, the backup answers, events say which', async () => {
  const primary = new CircuitBreaker('c-primary');
  primary.isolate();
  const backup = new CircuitBreaker('c-backup');
  let primaryCalls = 0;
  const chain = new FallbackChain([
    { breaker: primary, call: () => (primaryCalls++, 'opus') },
    { breaker: backup, call: ok('sonnet'), name: 'sonnet' },
  ]);
  const events = [];
  chain.onTier((e) => events.push(`${e.tier}:${e.name}:${e.outcome}`));
  assert.deepEqual(await chain.execute(), { value: 'sonnet', tier: 1, name: 'sonnet' });
  assert.equal(primaryCalls, 0);
  assert.deepEqual(events, ['0:c-primary:skipped', '1:sonnet:answered']);
});

test('FallbackChain: upstream failures move on and count on their own breaker; a 400 stops', async () => {
  const a = new CircuitBreaker('c-a');
  const b = new CircuitBreaker('c-b');
  const chain = new FallbackChain([
    { breaker: a, call: boom(529) },
    { breaker: b, call: ok('b') },
  ]);
  assert.equal((await chain.execute()).value, 'b');
  assert.equal(a.stats.failures, 1);
  const strict = new FallbackChain([
    { breaker: a, call: boom(400) },
    { breaker: b, call: ok('b') },
  ]);
  await assert.rejects(strict.execute(), /HTTP 400/);
  assert.equal(b.stats.admitted, 1);
  const lenient = new FallbackChain(
    [
      { breaker: a, call: boom(400) },
      { breaker: b, call: ok('b') },
    ],
    { fallThrough: () => true },
  );
  assert.equal((await lenient.execute()).tier, 1);
});

test('FallbackChain: every tier OPEN → CircuitOpenError with the soonest retryAfterMs; a failing Response moves on', async () => {
  const clock = manualClock();
  const a = new CircuitBreaker('c-open-a', { failureThreshold: 1, resetTimeout: 30_000, clock });
  const b = new CircuitBreaker('c-open-b', { failureThreshold: 1, resetTimeout: 10_000, clock });
  const chain = new FallbackChain(
    [
      { breaker: a, call: () => Response.json(anthropic.error(529), { status: 529 }) },
      { breaker: b, call: boom(503) },
    ],
    { name: 'models' },
  );
  await assert.rejects(chain.execute(), /HTTP 503/);
  assert.equal(a.state, 'OPEN');
  assert.equal(b.state, 'OPEN');
  clock.advance(4000);
  const e = await chain.execute().catch((x) => x);
  assert.ok(e instanceof CircuitOpenError);
  assert.equal(e.breaker, 'models');
  assert.equal(e.retryAfterMs, 6000);
});

test('FallbackChain.stream falls through before the first chunk only', async () => {
  cues.push({ parts: [START, OVERLOADED] }, { parts: [START, delta('backup'), STOP] });
  const a = new CircuitBreaker('c-s-a');
  const b = new CircuitBreaker('c-s-b');
  const chain = new FallbackChain([
    { breaker: a, call },
    { breaker: b, call },
  ]);
  const r = await chain.stream();
  assert.equal(r.tier, 1);
  assert.equal(deltas(await text(r.value)), 'backup');
  assert.equal(a.stats.failures, 1);
  assert.equal(b.stats.successes, 1);
  cues.push({ parts: [START, delta('pri'), { wait: 20 }, 'CUT'] });
  const cut = await chain.stream({ onInterrupted: () => 'data: [contingency]\n\n' });
  assert.equal(cut.tier, 0);
  assert.equal(deltas(await text(cut.value)), 'pri[contingency]');
  assert.equal(requests, 3);
});

test('FallbackChain: bad tiers are named', () => {
  assert.throws(() => new FallbackChain([]), /invalid option "tiers"/);
  assert.throws(() => new FallbackChain([{ breaker: {}, call: ok(1) }]), /invalid option "tiers\[0\]\.breaker"/);
  assert.throws(() => new FallbackChain([{ breaker: new CircuitBreaker('x'), cal: ok(1) }]), /unknown option "cal" in tiers\[0\]/);
});

// ----- retry signals -----

test('x-should-retry overrides the status; Gemini retryDelay and AI SDK responseHeaders give the wait', () => {
  const e500 = Object.assign(new Error('x'), { status: 500, headers: { 'x-should-retry': 'false' } });
  assert.equal(classifyError(e500).retryable, false);
  assert.equal(classifyError(e500).failure, true);
  const e409 = Object.assign(new Error('x'), { status: 409, headers: new Headers({ 'x-should-retry': 'true' }) });
  assert.equal(classifyError(e409).retryable, true);
  const gemini = Object.assign(new Error('quota'), {
    statusCode: 429,
    responseBody: JSON.stringify({
      error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '31.5s' }] },
    }),
  });
  assert.equal(retryAfterMs(gemini), 31_500);
  const sdk = Object.assign(new Error('x'), { statusCode: 429, responseHeaders: { 'retry-after': '12' } });
  assert.equal(retryAfterMs(sdk), 12_000);
  const nested = Object.assign(new Error('x'), { response: { status: 429, headers: new Headers({ 'retry-after-ms': '250' }) } });
  assert.equal(retryAfterMs(nested), 250);
});

test('event streams are read across any chunking: CRLF split between chunks, comments, one field per line', async () => {
  // Re-encoded on purpose: a comment and CRLF line ends, which SSE allows and formats.mjs never writes.
  const body = ': keep-alive\r\n\r\n' + START.replaceAll('\n', '\r\n') + delta('Hi').replaceAll('\n', '\r\n') + OVERLOADED.replaceAll('\n', '\r\n');
  // Every byte in its own chunk, so CR and LF arrive apart.
  cues.push({ parts: [...body].flatMap((c) => [c, { wait: 0 }]) });
  const b = new CircuitBreaker('s-chunking');
  const stream = await b.stream(call, { onInterrupted: () => '[contingency]' });
  const raw = await text(stream);
  assert.equal(raw, body + '[contingency]');
  assert.deepEqual(counts(b), { admitted: 1, successes: 0, failures: 1, ignored: 0 });
});

test('FallbackChain over shared breakers: an isolated store breaker is skipped, the next one called with a context', async () => {
  const store = new MemoryStore();
  const opus = new StoreCircuitBreaker('c-store-opus', { store });
  const sonnet = new StoreCircuitBreaker('c-store-sonnet', { store });
  await opus.isolate();
  let opusCalls = 0;
  const chain = new FallbackChain([
    { breaker: opus, call: ({ signal }) => (opusCalls++, `opus ${signal === undefined}`) },
    { breaker: sonnet, call: ({ signal }) => `sonnet ${signal === undefined}` },
  ]);
  assert.deepEqual(await chain.execute(), { value: 'sonnet true', tier: 1, name: 'c-store-sonnet' });
  assert.equal(opusCalls, 0);
  cues.push({ parts: [START, delta('from sonnet'), STOP] });
  const streamed = new FallbackChain([
    { breaker: opus, call },
    { breaker: sonnet, call },
  ]);
  const r = await streamed.stream();
  assert.equal(r.name, 'c-store-sonnet');
  assert.equal(deltas(await text(r.value)), 'from sonnet');
  assert.equal(requests, 1);
});

test("the shared breakers' execute takes signal and timeoutMs: a cancel is not counted, a time-out fails", async () => {
  const store = new MemoryStore();
  const b = new StoreCircuitBreaker('x-shared-execute', { store, breaker: { failureThreshold: 10 } });
  const hang = ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
  const ctl = new AbortController();
  const cancelled = b.execute(hang, { signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error('user left')), 20);
  await assert.rejects(cancelled, /user left/);
  const timedOut = await b.execute(hang, { timeoutMs: 30 }).catch((x) => x);
  assert.ok(isTimeoutError(timedOut));
  await assert.rejects(b.execute(hang, { signal: AbortSignal.timeout(30) }), { name: 'TimeoutError' });
  assert.equal(await b.execute(({ signal }) => `ok ${signal.aborted}`, { timeoutMs: 1000 }), 'ok false');
  await assert.rejects(b.execute(hang, { timeoutMs: -1 }), /invalid option "timeoutMs": -1/);
  await b.flush();
  const { stats } = await b.inspect();
  assert.deepEqual([stats.successes, stats.failures, stats.ignored], [1, 2, 1]);
});
