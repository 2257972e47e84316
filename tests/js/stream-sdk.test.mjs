// breaker.stream over what users really hand it: a raw `fetch` of an event stream and the official
// SDKs' own stream objects (`@anthropic-ai/sdk` messages, `openai` chat completions and responses,
// `@google/genai`'s generateContentStream), against the fake provider replaying the real-format
// transcripts of tests/fixtures/llm. The same transcript through each path must come out the
// same: what the reader gets, whether the call rejected (so retries and fallbacks apply), and how
// the breaker counted it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { CircuitBreaker, FallbackChain, StreamError, withRetry, classifyError, isTimeoutError, retryAfterMs } from 'breakwater';
import * as llm from '../fixtures/llm/index.mjs';
import { useSdkClients, ASK, CHAT } from './sdk-clients.mjs';

let provider, anthropic, openai, gemini;
useSdkClients((c) => ({ provider, anthropic, openai, gemini } = c));


// Each API through each path; `fn` is what the app hands `breaker.stream`.
const raw = (path) => ({ signal }) => fetch(provider.url + path, { method: 'POST', body: '{"stream":true}', signal });
const PATHS = {
  anthropic: {
    raw: raw('/v1/messages'),
    sdk: ({ signal }) => anthropic.messages.create({ ...ASK, stream: true }, { signal }),
  },
  chat: {
    raw: raw('/v1/chat/completions'),
    sdk: ({ signal }) => openai.chat.completions.create({ ...CHAT, stream: true }, { signal }),
  },
  responses: {
    raw: raw('/v1/responses'),
    sdk: ({ signal }) => openai.responses.create({ model: 'gpt-5-nano', input: 'hi', stream: true }, { signal }),
  },
  gemini: {
    raw: raw('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse'),
    sdk: ({ signal }) => gemini.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi', config: { abortSignal: signal } }),
  },
};

const CONTINGENCY = '[contingency]';
/** The contingency: text for a byte stream, an object for an SDK's stream of events. */
const contingency = (how) => (how === 'raw' ? `data: ${CONTINGENCY}\n\n` : { type: CONTINGENCY });

const decoder = new TextDecoder();
/** The text an event carries, in any API's shape (an SDK's event or an event stream's data). */
const textOf = (e) =>
  (e.type === 'content_block_delta' ? e.delta.text ?? '' : '') +
  (e.type === 'response.output_text.delta' ? e.delta : '') +
  (e.choices?.[0]?.delta?.content ?? '') +
  (e.candidates?.[0]?.content?.parts?.map((p) => p.text ?? '').join('') ?? '');
/** The text of the answer the reader got, whether the contingency came, and the stream's error. */
async function read(stream) {
  let text = '';
  let contingent = false;
  let error;
  let sse = '';
  try {
    for await (const c of stream) {
      if (c instanceof Uint8Array) sse += decoder.decode(c, { stream: true });
      else if (c.type === CONTINGENCY) contingent = true;
      else text += textOf(c);
    }
  } catch (e) {
    error = e;
  }
  for (const m of sse.matchAll(/^data: (.*)$/gm)) {
    if (m[1] === CONTINGENCY) contingent = true;
    else if (m[1].startsWith('{')) text += textOf(JSON.parse(m[1]));
  }
  return { text, contingent, error };
}

const counts = (b) => {
  const s = b.stats;
  return { successes: s.successes, failures: s.failures, ignored: s.ignored };
};
const SUCCESS = { successes: 1, failures: 0, ignored: 0 };
const FAILURE = { successes: 0, failures: 1, ignored: 0 };
const IGNORED = { successes: 0, failures: 0, ignored: 1 };

/** Streams `transcript` through `api`'s `how` path behind a fresh breaker. */
async function run(api, how, transcript, options = {}) {
  provider.reset();
  provider.cue({ transcript });
  const b = new CircuitBreaker(`${api}-${how}`, { failureThreshold: 10 });
  const stream = await b.stream(PATHS[api][how], { onInterrupted: () => contingency(how), ...options }).catch((e) => ({ rejected: e }));
  if (stream.rejected) return { rejected: stream.rejected, counts: counts(b) };
  const got = await read(stream);
  return { ...got, counts: counts(b) };
}

// What each transcript must come to, the same through every path that serves its API:
// `text` the reader got, `contingent` whether the contingency was appended, or `rejects` (a
// failure before content: the call rejects with an error `classifyError` puts in this class),
// and `counts`.
const SCENARIOS = [
  ['anthropic', 'anthropicText', { text: llm.ANTHROPIC_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  // A refusal with no text is the app's to read: the stream as it came, not counted (defect 1).
  ['anthropic', 'anthropicRefusal', { text: '', contingent: false, counts: IGNORED }],
  ['anthropic', 'anthropicRefusalAfterText', { text: 'Hello! I', contingent: false, counts: IGNORED }],
  // Thinking is content; the budget then ran out: the answer was given, cut by the app's limit.
  ['anthropic', 'anthropicMaxTokensNoText', { text: '', contingent: false, counts: SUCCESS }],
  ['anthropic', 'anthropicToolUseCutMidInput', { text: "Okay, let's check the weather for San Francisco, CA:", contingent: true, counts: FAILURE }],
  // The SDK's stream must not begin at `message_start` (defect 4): the error before text rejects.
  ['anthropic', 'anthropicOverloadedBeforeText', { rejects: 'overloaded', counts: FAILURE }],
  ['anthropic', 'anthropicOverloadedAfterText', { text: 'Hello! I', contingent: true, counts: FAILURE }],
  ['anthropic', 'anthropicCitationRejectedBySdk6', { text: llm.ANTHROPIC_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  ['chat', 'openaiChatText', { text: llm.OPENAI_CHAT_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  ['chat', 'openaiChatContentFilter', { text: '', contingent: false, counts: IGNORED }],
  ['chat', 'openaiChatLengthNoText', { text: '', contingent: false, counts: IGNORED }],
  ['chat', 'openaiChatErrorChunk', { text: '**Holiday', contingent: true, counts: FAILURE }],
  ['chat', 'openaiChatOpenRouterKeepAlive', { text: llm.OPENAI_CHAT_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  ['chat', 'openaiChatUsageChunkWithoutChoices', { text: llm.OPENAI_CHAT_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  ['responses', 'responsesText', { text: llm.RESPONSES_TEXT_DELTAS.join(''), contingent: false, counts: SUCCESS }],
  // The Responses API's own endings and errors (defect 8).
  ['responses', 'responsesFailed', { rejects: 'rate-limited', counts: FAILURE }],
  ['responses', 'responsesErrorQuota', { rejects: 'quota-exhausted', counts: FAILURE }],
  ['responses', 'responsesServerErrorAfterText', { text: 'Hello!', contingent: true, counts: FAILURE }],
  ['responses', 'responsesIncompleteMaxOutputTokens', { text: '', contingent: false, counts: IGNORED }],
  ['responses', 'responsesIncompleteContentFilter', { text: 'Hello!', contingent: false, counts: IGNORED }],
  ['gemini', 'geminiText', { text: llm.GEMINI_TEXT_PARTS.join(''), contingent: false, counts: SUCCESS }],
  ['gemini', 'geminiSafety', { text: '', contingent: false, counts: IGNORED }],
  ['gemini', 'geminiPromptBlocked', { text: '', contingent: false, counts: IGNORED }],
  ['gemini', 'geminiMaxTokensNoText', { text: '', contingent: false, counts: IGNORED }],
];

for (const [api, name, want] of SCENARIOS) {
  for (const how of Object.keys(PATHS[api])) {
    test(`${name} through ${how === 'raw' ? 'fetch' : 'the SDK stream'}: ${want.rejects ? `rejects (${want.rejects})` : want.contingent ? 'cut, with the contingency' : 'resolves'}, counted ${Object.keys(want.counts).find((k) => want.counts[k])}`, async () => {
      const got = await run(api, how, llm[name]);
      if (want.rejects) {
        assert.ok(got.rejected, `the call resolved`);
        assert.equal(classifyError(got.rejected).class, want.rejects, String(got.rejected));
      } else {
        assert.equal(got.rejected, undefined, `rejected with ${got.rejected}`);
        assert.equal(got.text, want.text);
        assert.equal(got.contingent, want.contingent);
        assert.equal(got.error, undefined, 'with onInterrupted the stream ends normally');
      }
      assert.deepEqual(got.counts, want.counts);
    });
  }
}

// ----- what retries and fallbacks do with it -----

for (const [api, name] of [
  ['anthropic', 'anthropicRefusal'],
  ['chat', 'openaiChatContentFilter'],
  ['chat', 'openaiChatLengthNoText'],
  ['responses', 'responsesIncompleteMaxOutputTokens'],
]) {
  for (const how of Object.keys(PATHS[api])) {
    test(`${name} through ${how}: withRetry does not retry it and a FallbackChain answers with it`, async () => {
      provider.cue({ transcript: llm[name] }, { transcript: llm[name] });
      const b = new CircuitBreaker(`${name}-retry`);
      const stream = await withRetry(() => b.stream(PATHS[api][how]), { baseDelayMs: 1 });
      await read(stream);
      assert.equal(provider.requests.length, 1, 'asked once');
      const primary = new CircuitBreaker(`${name}-primary`);
      const backup = new CircuitBreaker(`${name}-backup`);
      const chain = new FallbackChain([
        { breaker: primary, call: PATHS[api][how] },
        { breaker: backup, call: PATHS[api][how] },
      ]);
      const r = await chain.stream();
      await read(r.value);
      assert.equal(r.tier, 0, 'the refusal is the answer: the backup is not asked the same prompt');
      assert.equal(provider.requests.length, 2);
      assert.deepEqual([b.stats.failures, primary.stats.failures, primary.stats.ignored, backup.stats.admitted], [0, 0, 1, 0]);
    });
  }
}

for (const how of ['raw', 'sdk']) {
  test(`overloaded_error right after message_start (${how}): withRetry tries again and a FallbackChain moves on`, async () => {
    provider.cue({ transcript: llm.anthropicOverloadedBeforeText }, { transcript: llm.anthropicText });
    const b = new CircuitBreaker(`overloaded-${how}`);
    const stream = await withRetry(() => b.stream(PATHS.anthropic[how]), { baseDelayMs: 1 });
    assert.equal((await read(stream)).text, llm.ANTHROPIC_TEXT_DELTAS.join(''));
    assert.equal(provider.requests.length, 2);
    assert.deepEqual(counts(b), { successes: 1, failures: 1, ignored: 0 });

    provider.reset();
    provider.cue({ transcript: llm.anthropicOverloadedBeforeText }, { transcript: llm.openaiChatText });
    const primary = new CircuitBreaker(`overloaded-primary-${how}`);
    const backup = new CircuitBreaker(`overloaded-backup-${how}`);
    const chain = new FallbackChain([
      { breaker: primary, call: PATHS.anthropic[how] },
      { breaker: backup, call: PATHS.chat[how] },
    ]);
    const r = await chain.stream({ onInterrupted: () => contingency(how) });
    assert.equal(r.tier, 1, 'the backup answered');
    assert.equal((await read(r.value)).text, llm.OPENAI_CHAT_TEXT_DELTAS.join(''));
    assert.deepEqual([primary.stats.failures, backup.stats.successes], [1, 1]);
  });
}

test('a non-fatal error after content, then a normal finish: the ending decides (a success, nothing appended)', async () => {
  // What the AI SDK's providers stream for a chunk that failed validation (vercel/ai #7417).
  const b = new CircuitBreaker('error-then-finish');
  async function* parts() {
    yield { type: 'text-delta', id: '0', delta: 'Hello' };
    yield { type: 'error', error: new Error('Type validation failed') };
    yield { type: 'text-delta', id: '0', delta: ' world' };
    yield { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' } };
  }
  const isContent = (p) => p.type === 'text-delta';
  const errorOf = (p) => (p.type === 'error' ? p.error : undefined);
  const got = [];
  for await (const p of await b.stream(parts, { isContent, errorOf, onInterrupted: () => ({ type: 'contingency' }) })) got.push(p.type);
  assert.deepEqual(got, ['text-delta', 'error', 'text-delta', 'finish']);
  assert.deepEqual(counts(b), SUCCESS);
  // Without the finish, the remembered error decides: a failure, and the contingency.
  async function* unfinished() {
    yield { type: 'text-delta', id: '0', delta: 'Hello' };
    yield { type: 'error', error: new Error('Type validation failed') };
  }
  const cut = [];
  for await (const p of await b.stream(unfinished, { isContent, errorOf, onInterrupted: () => ({ type: 'contingency' }) })) cut.push(p.type);
  assert.deepEqual(cut, ['text-delta', 'error', 'contingency']);
  assert.equal(b.stats.failures, 1);
  // A finish part saying "error" is a failure too, and one saying "content-filter" is not counted.
  const end = (finishReason) =>
    async function* () {
      yield { type: 'text-delta', id: '0', delta: 'Hi' };
      yield { type: 'finish', finishReason };
    };
  await read(await b.stream(end('error'), { isContent, onInterrupted: () => ({ type: CONTINGENCY }) }));
  await read(await b.stream(end({ unified: 'content-filter', raw: 'refusal' }), { isContent }));
  assert.deepEqual(counts(b), { successes: 1, failures: 2, ignored: 1 });
});

test("the user aborting through the SDK's own signal: ignored, before content and after it", async () => {
  const head = { ...llm.anthropicText, events: llm.anthropicText.events.slice(0, 3) }; // message_start, block start, ping
  const words = { ...llm.anthropicText, events: llm.anthropicText.events.slice(0, 5) }; // and the first words
  const b = new CircuitBreaker('sdk-signal', { failureThreshold: 1 });
  // The SDK ends its stream quietly when its signal aborts (no error): not an empty answer.
  provider.cue({ transcript: head, stall: { pingMs: 20 } });
  const before = new AbortController();
  const p = b.stream(() => anthropic.messages.create({ ...ASK, stream: true }, { signal: before.signal }));
  while (provider.requests.length < 1) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  before.abort();
  await assert.rejects(p, { name: 'AbortError' });
  // Nor a complete one.
  provider.cue({ transcript: words, stall: { pingMs: 20 } });
  const after = new AbortController();
  const s = await b.stream(() => anthropic.messages.create({ ...ASK, stream: true }, { signal: after.signal }));
  const reading = read(s);
  setTimeout(() => after.abort(), 50);
  const got = await reading;
  assert.equal(got.text, 'Hello! I');
  assert.equal(got.error?.name, 'AbortError');
  assert.deepEqual(counts(b), { successes: 0, failures: 0, ignored: 2 });
  assert.equal(b.state, 'CLOSED');
});

test('a cut after the answer named its ending (no error after it) closes the stream: the ending decides', async () => {
  const t = llm.anthropicText;
  // `message_delta` with `end_turn` came; the socket closed before `message_stop`.
  const got = await run('anthropic', 'raw', { ...t, events: t.events.slice(0, -1), cut: true });
  assert.equal(got.text, llm.ANTHROPIC_TEXT_DELTAS.join(''));
  assert.equal(got.contingent, false);
  assert.deepEqual(got.counts, SUCCESS);
  // Cut before it: a failure.
  const cut = await run('anthropic', 'raw', { ...t, events: t.events.slice(0, -3), cut: true });
  assert.equal(cut.contingent, true);
  assert.deepEqual(cut.counts, FAILURE);
});

// ----- time limits -----

/** The recorded answer stalled after its first words, kept alive by a ping every 50 ms for `ms`, then finished. */
function pingsFor(ms) {
  const t = llm.anthropicPingsDuringStall;
  const head = t.events.slice(0, 5);
  const tail = t.events.filter((e) => !('delayMs' in e)).slice(-(llm.ANTHROPIC_TEXT_DELTAS.length - 2 + 3));
  const ping = t.events.find((e) => e.event === 'ping');
  return { ...t, events: [...head, ...Array.from({ length: ms / 50 }, () => [{ delayMs: 50 }, ping]).flat(), ...tail] };
}

test('keep-alives do not reset idleTimeoutMs: pings during a stall after the first words, cut long before the stall ends', async () => {
  const started = Date.now();
  const got = await run('anthropic', 'raw', pingsFor(3000), { idleTimeoutMs: 300 });
  const took = Date.now() - started;
  assert.equal(got.text, 'Hello! I', 'the words after the stall never came');
  assert.equal(got.contingent, true);
  assert.deepEqual(got.counts, FAILURE);
  assert.ok(took < 2500, `cut after ${took} ms, before the 3 s stall ended`);
  assert.ok(took >= 300, `cut after ${took} ms, not before the limit`);
});

test('SSE comments do not reset idleTimeoutMs either (OpenRouter keep-alive)', async () => {
  const t = llm.openaiChatOpenRouterKeepAlive;
  const comment = t.events.find((e) => 'comment' in e);
  const text = t.events.filter((e) => e.data !== undefined);
  const stalled = { ...t, events: [...text.slice(0, 2), ...Array.from({ length: 60 }, () => [{ delayMs: 50 }, comment]).flat(), ...text.slice(2)] };
  const started = Date.now();
  const got = await run('chat', 'raw', stalled, { idleTimeoutMs: 300 });
  assert.ok(Date.now() - started < 2500, 'cut before the stall ended');
  assert.equal(got.text, '**');
  assert.equal(got.contingent, true);
  assert.deepEqual(got.counts, FAILURE);
});

test('idleTimeoutMs does not count before the first content: a model that thinks silently needs firstChunkTimeoutMs', async () => {
  const t = llm.anthropicText;
  const slowStart = { ...t, events: [...t.events.slice(0, 3), { delayMs: 400 }, ...t.events.slice(3)] };
  const got = await run('anthropic', 'raw', slowStart, { idleTimeoutMs: 200 });
  assert.equal(got.text, llm.ANTHROPIC_TEXT_DELTAS.join(''));
  assert.deepEqual(got.counts, SUCCESS);
  const timedOut = await run('anthropic', 'raw', slowStart, { firstChunkTimeoutMs: 200 });
  assert.ok(isTimeoutError(timedOut.rejected));
  assert.equal(timedOut.rejected.timeoutMs, 200);
  assert.deepEqual(timedOut.counts, FAILURE);
});

for (const how of ['raw', 'sdk']) {
  test(`totalTimeoutMs (${how}): before content it fails the attempt (retryable, counted); after it, a cut with the contingency that is the app's budget (not counted)`, async () => {
    const t = llm.anthropicText;
    // Stalled after message_start, pings only.
    provider.cue({ transcript: { ...t, events: t.events.slice(0, 3) }, stall: { pingMs: 50 } });
    const b = new CircuitBreaker(`total-${how}`, { failureThreshold: 10 });
    const started = Date.now();
    const e = await b.stream(PATHS.anthropic[how], { totalTimeoutMs: 300 }).catch((x) => x);
    assert.ok(isTimeoutError(e), String(e));
    assert.equal(e.timeoutMs, 300);
    assert.equal(classifyError(e).retryable, true);
    // After the first words, pings for ever: idle is not set, the total limit cuts.
    provider.cue({ transcript: { ...t, events: t.events.slice(0, 5) }, stall: { pingMs: 50 } });
    const got = await read(await b.stream(PATHS.anthropic[how], { totalTimeoutMs: 300, onInterrupted: () => contingency(how) }));
    assert.equal(got.text, 'Hello! I');
    assert.equal(got.contingent, true);
    assert.ok(Date.now() - started < 3000);
    // The answer was streaming when the app's own budget for it ran out: the upstream was fine.
    assert.deepEqual(counts(b), { successes: 0, failures: 1, ignored: 1 });
    // The provider saw both requests go away.
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(provider.requests.map((r) => r.aborted), [true, true]);
  });
}

test('the stall of an SDK stream is cut by idleTimeoutMs and its request stopped', async () => {
  const t = llm.anthropicText;
  provider.cue({ transcript: { ...t, events: t.events.slice(0, 5) }, stall: { pingMs: 50 } });
  const b = new CircuitBreaker('sdk-idle');
  // No signal handed to the SDK: the guard stops the request through the stream's own controller.
  const got = await read(await b.stream(() => anthropic.messages.create({ ...ASK, stream: true }), { idleTimeoutMs: 200, onInterrupted: () => contingency('sdk') }));
  assert.equal(got.text, 'Hello! I');
  assert.equal(got.contingent, true);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(provider.requests[0].aborted, true);
});

// ----- error statuses: the body is read -----

test("an error Response's body is read: OpenAI's insufficient_quota is not retried, Gemini's RetryInfo gives the wait", async () => {
  provider.cue({ transcript: llm.openaiInsufficientQuota429 }, { transcript: llm.openaiInsufficientQuota429 });
  const b = new CircuitBreaker('quota', { failureThreshold: 10 });
  const giveUps = [];
  const e = await withRetry(() => b.stream(PATHS.chat.raw), { baseDelayMs: 1, onGiveUp: (_, info) => giveUps.push(info.reason) }).catch((x) => x);
  assert.ok(e instanceof StreamError);
  assert.equal(e.status, 429);
  assert.equal(e.type, 'insufficient_quota');
  assert.equal(e.body, llm.openaiInsufficientQuota429.body);
  assert.equal(classifyError(e).class, 'quota-exhausted');
  assert.equal(provider.requests.length, 1, 'a spent quota is not asked again');
  assert.deepEqual(giveUps, ['not-retryable']);

  provider.reset();
  provider.cue({ transcript: llm.gemini429PerMinute });
  const g = await b.stream(PATHS.gemini.raw).catch((x) => x);
  assert.equal(g.status, 429);
  assert.equal(g.type, 'RESOURCE_EXHAUSTED');
  assert.equal(retryAfterMs(g), 34_400);
  assert.equal(g.error.error.status, 'RESOURCE_EXHAUSTED', 'the parsed body');
});

test("an error body is read up to 64 KiB and the rest let go, within firstChunkTimeoutMs", async () => {
  const http = await import('node:http');
  let closed;
  const gone = new Promise((r) => (closed = r));
  const server = http.createServer((req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.write(`{"error":{"type":"server_error","message":"${'x'.repeat(100_000)}"}}`);
    // Then never ends: only the limit, or the client letting go, ends it.
    res.on('close', closed);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const b = new CircuitBreaker('big-body');
    const url = `http://127.0.0.1:${server.address().port}/`;
    const e = await b.stream(({ signal }) => fetch(url, { signal }), { firstChunkTimeoutMs: 5000 }).catch((x) => x);
    assert.ok(e instanceof StreamError, String(e));
    assert.equal(e.status, 503);
    assert.ok(e.body.length <= 65_536 && e.body.length > 60_000, `${e.body.length} characters kept`);
    await gone; // the connection was released
    // A body that never comes: the first-chunk limit still runs.
    const stalled = http.createServer((req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.flushHeaders();
    });
    await new Promise((r) => stalled.listen(0, '127.0.0.1', r));
    const t = await b
      .stream(({ signal }) => fetch(`http://127.0.0.1:${stalled.address().port}/`, { signal }), { firstChunkTimeoutMs: 100 })
      .catch((x) => x);
    stalled.closeAllConnections();
    await new Promise((r) => stalled.close(r));
    assert.ok(isTimeoutError(t), String(t));
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

// ----- no timer outlives the call -----

/** Records every timer set while `fn` runs and whether it was cleared or ran; restores the globals. */
async function trackTimers(fn) {
  const live = new Map();
  const { setTimeout: set, clearTimeout: clear } = globalThis;
  globalThis.setTimeout = (cb, ms, ...args) => {
    const h = set(
      (...a) => {
        live.delete(h);
        cb(...a);
      },
      ms,
      ...args,
    );
    live.set(h, ms);
    return h;
  };
  globalThis.clearTimeout = (h) => {
    live.delete(h);
    clear(h);
  };
  try {
    await fn();
  } finally {
    globalThis.setTimeout = set;
    globalThis.clearTimeout = clear;
  }
  for (const h of live.keys()) clear(h);
  return [...live.values()];
}

test('every limit is cleared when the call settles: on abort before the first chunk, on the end, on a cut, on a cancel', async () => {
  const LIMITS = { firstChunkTimeoutMs: 61_000, idleTimeoutMs: 62_000, totalTimeoutMs: 63_000 };
  const ours = (ms) => ms > 60_000 && ms < 64_000;
  // Aborted while the request waits for its headers.
  const left = await trackTimers(async () => {
    provider.cue({ holdUntilAbort: true });
    const ctl = new AbortController();
    const b = new CircuitBreaker('timers-abort');
    const p = b.stream(PATHS.anthropic.raw, { ...LIMITS, signal: ctl.signal });
    while (provider.requests.length < 1) await new Promise((r) => setImmediate(r));
    ctl.abort(new Error('user stopped'));
    await assert.rejects(p, /user stopped/);
    assert.deepEqual(counts(b), IGNORED);
    // Aborted while streaming.
    provider.cue({ transcript: { ...llm.anthropicText, events: llm.anthropicText.events.slice(0, 5) }, stall: {} });
    const ctl2 = new AbortController();
    const s = await b.stream(PATHS.anthropic.raw, { ...LIMITS, signal: ctl2.signal });
    const reading = read(s);
    ctl2.abort(new Error('user stopped'));
    assert.match(String((await reading).error), /user stopped/);
    // Ended, cut, cancelled by the reader.
    for (const transcript of [llm.anthropicText, llm.anthropicOverloadedAfterText, llm.anthropicToolUseCutMidInput]) {
      provider.cue({ transcript });
      await read(await b.stream(PATHS.anthropic.raw, { ...LIMITS, onInterrupted: () => '' }));
    }
    provider.cue({ transcript: llm.anthropicText });
    await (await b.stream(PATHS.anthropic.sdk, LIMITS)).cancel('client went away');
    // Rejected: an error status, an error before content, an empty answer.
    for (const transcript of [llm.anthropicOverloaded529, llm.anthropicOverloadedBeforeText]) {
      provider.cue({ transcript });
      await assert.rejects(b.stream(PATHS.anthropic.raw, LIMITS));
    }
  });
  assert.deepEqual(left.filter(ours), [], 'no limit is left running');
});

test('aborting before the first chunk lets the process go at once (the first-chunk timer does not hold it)', async () => {
  const left = await trackTimers(async () => {
    provider.cue({ holdUntilAbort: true });
    const ctl = new AbortController();
    const p = new CircuitBreaker('timers-open').stream(PATHS.chat.sdk, { firstChunkTimeoutMs: 61_000, signal: ctl.signal });
    while (provider.requests.length < 1) await new Promise((r) => setImmediate(r));
    ctl.abort(new Error('tab closed'));
    await assert.rejects(p, /tab closed/);
  });
  assert.deepEqual(left.filter((ms) => ms === 61_000), []);
});

test('bad new options name the option and the value', async () => {
  const b = new CircuitBreaker('bad-options');
  await assert.rejects(b.stream(PATHS.anthropic.raw, { totalTimeoutMs: 0 }), /invalid option "totalTimeoutMs": 0/);
  await assert.rejects(b.stream(PATHS.anthropic.raw, { endingOf: 'stop' }), /invalid option "endingOf": "stop" \(expected a function\)/);
  await assert.rejects(b.stream(PATHS.anthropic.raw, { totalTimeout: 5 }), /did you mean "totalTimeoutMs"/);
  assert.equal(provider.requests.length, 0);
});

test('endingOf: an app reads its own stream`s ending', async () => {
  const b = new CircuitBreaker('own-ending');
  async function* refusal() {
    yield { kind: 'meta' };
    yield { kind: 'end', why: 'policy' };
  }
  const endingOf = (c) => (c.kind === 'end' ? (c.why === 'policy' ? 'declined' : 'complete') : undefined);
  const isContent = (c) => c.kind === 'text';
  const got = [];
  for await (const c of await b.stream(refusal, { isContent, endingOf })) got.push(c.kind);
  assert.deepEqual(got, ['meta', 'end']);
  assert.deepEqual(counts(b), IGNORED);
});

test("js/README's SDK stream example works as written: the text, and a refusal resolves uncounted", async () => {
  const fs = await import('node:fs/promises');
  const { transform } = await import('esbuild');
  const readme = await fs.readFile(new URL('../../js/README.md', import.meta.url), 'utf8');
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.startsWith("// An SDK's stream object, guarded"));
  assert.ok(block, 'the README has the example');
  const code = (await transform(block, { loader: 'ts', format: 'esm' })).code
    .replace("new Anthropic({ maxRetries: 0 })", `new Anthropic({ apiKey: 'test-key', baseURL: ${JSON.stringify(provider.url)}, maxRetries: 0 })`);
  // Written next to the tests, so that its imports resolve to the installed packages.
  const dir = await fs.mkdtemp(new URL('./.readme-sdk-', import.meta.url).pathname);
  await fs.writeFile(`${dir}/answer.mjs`, code);
  const { answer } = await import(`${dir}/answer.mjs`).finally(() => fs.rm(dir, { recursive: true, force: true }));
  provider.cue({ transcript: llm.anthropicOverloadedBeforeText }, { transcript: llm.anthropicText });
  await assert.rejects(answer('hi'), (e) => classifyError(e).class === 'overloaded');
  assert.equal(await answer('hi'), llm.ANTHROPIC_TEXT_DELTAS.join(''));
  provider.cue({ transcript: llm.anthropicRefusal });
  assert.equal(await answer('hi'), '');
});
