// The stream guard as the app's reader meets it: a reader slower than the model is not a stalled
// model (the guard reads ahead into a bounded buffer, and the model's limits stand still while
// the buffer is full), a reader that never reads holds the upstream back rather than the memory
// growing, and before the first word an in-band error, a reset or a broken frame is retried
// invisibly with `retry` (after it, never). Against a local upstream on 127.0.0.1.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { CircuitBreaker } from 'breakwater';
import { StoreCircuitBreaker, MemoryStore } from 'breakwater/store';
import { startFakeProvider } from './fake-provider.mjs';
import {
  anthropicText,
  anthropicOverloadedBeforeText,
  anthropicOverloadedAfterText,
  anthropicResetBeforeContent,
  anthropicMalformedBeforeContent,
  anthropicThinkingForever,
  responsesReasoningSummaryPauses,
  ANTHROPIC_TEXT_DELTAS,
} from '../fixtures/llm/index.mjs';
import { openai } from '../../js/src/cli/formats.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// OpenAI Chat Completions chunks, in the shapes of `breakwater fake-llm` (js/src/cli/formats.mjs):
// a delta per piece of text, and the tail (the finish_reason chunk, then `data: [DONE]`).
const chat = openai.stream({ id: 'chatcmpl-test', created: 1_700_000_000, model: 'gpt-test' });
const delta = chat.delta;

/** An upstream on 127.0.0.1 whose handler is set per test; counts the bytes it wrote. */
let server, url, handler, written;
before(async () => {
  server = http.createServer((req, res) => handler(req, res));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
beforeEach(() => (written = 0));

test('a reader 10x slower than the model is not a stalled model', async () => {
  // The model sends 30 deltas 20 ms apart (600 ms); the reader takes 200 ms over each chunk.
  // With idleTimeoutMs 100 the old guard, which read only when asked, cut the answer at the
  // first slow read and counted a failure.
  handler = async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (let i = 0; i < 30; i++) {
      res.write(delta(`w${i} `));
      await sleep(20);
    }
    res.end(chat.tail());
  };
  const breaker = new CircuitBreaker('slow-reader');
  const stream = await breaker.stream(({ signal }) => fetch(url, { signal }), { idleTimeoutMs: 100 });
  const reader = stream.getReader();
  let text = '';
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    await sleep(200);
  }
  const words = [...text.matchAll(/"content":"(w\d+) "/g)].map((m) => m[1]);
  assert.deepEqual(words, Array.from({ length: 30 }, (_, i) => `w${i}`), 'the whole answer, in order');
  assert.deepEqual([breaker.stats.successes, breaker.stats.failures], [1, 0]);
});

test('a model silent for longer than idleTimeoutMs is still cut while the reader keeps up', async () => {
  handler = async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(delta('Hello'));
    await sleep(1_000);
    if (!res.destroyed) res.end(delta(' late'));
  };
  const breaker = new CircuitBreaker('silent-model');
  const stream = await breaker.stream(({ signal }) => fetch(url, { signal }), { idleTimeoutMs: 150, onInterrupted: () => '[cut]' });
  const text = await new Response(stream).text();
  assert.match(text, /Hello/);
  assert.match(text, /\[cut\]$/);
  assert.equal(breaker.stats.failures, 1);
});

test('a reader that never reads holds the upstream back: memory stays bounded', async () => {
  // The upstream writes 64 MiB as fast as the socket takes it. The reader reads nothing after
  // the first chunk: the guard stops at its read-ahead bound (1 MiB), fetch's and the socket's
  // buffers fill, and the upstream's writes block.
  const chunk = delta('x'.repeat(16_000));
  let blocked = false;
  handler = async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    while (written < 64 << 20 && !res.destroyed) {
      written += chunk.length;
      if (!res.write(chunk)) {
        blocked = true;
        await new Promise((r) => (res.once('drain', r), res.once('close', r)));
      }
    }
    res.end();
  };
  const breaker = new CircuitBreaker('never-reads');
  const before = process.memoryUsage().arrayBuffers;
  const stream = await breaker.stream(({ signal }) => fetch(url, { signal }), { idleTimeoutMs: 200 });
  await sleep(1_500);
  const grew = process.memoryUsage().arrayBuffers - before;
  assert.ok(blocked, 'the upstream was held back');
  assert.ok(written < 24 << 20, `the upstream wrote ${(written / 2 ** 20).toFixed(1)} MiB of 64`);
  assert.ok(grew < 24 << 20, `array buffers grew by ${(grew / 2 ** 20).toFixed(1)} MiB`);
  // Not a stalled model: the reader was behind the whole time.
  assert.deepEqual([breaker.stats.failures, breaker.stats.successes], [0, 0]);
  await stream.cancel();
  assert.equal(breaker.stats.ignored, 1, 'the reader gave up: says nothing of the upstream');
});

// ----- retries before the first word, through the fake provider's transcripts -----

let provider;
before(async () => (provider = await startFakeProvider()));
after(() => provider.close());
beforeEach(() => provider.reset());

const call = ({ signal }) => fetch(`${provider.url}/v1/messages`, { method: 'POST', body: '{}', signal });
const RETRY = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 };
const textOf = (body) => [...body.matchAll(/"text_delta","text":"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`)).join('');
const WHOLE = ANTHROPIC_TEXT_DELTAS.join('');

for (const [what, first] of [
  ['an overloaded_error event in a 200 answer', anthropicOverloadedBeforeText],
  ['a reset', anthropicResetBeforeContent],
  ['a malformed frame', anthropicMalformedBeforeContent],
]) {
  test(`before the first word, ${what} is retried with retry, invisible to the reader`, async () => {
    provider.cue({ transcript: first }, { transcript: anthropicText });
    const breaker = new CircuitBreaker('retry-first-word');
    const body = await new Response(await breaker.stream(call, { retry: RETRY })).text();
    assert.equal(textOf(body), WHOLE, 'the reader got the second answer only');
    assert.equal(provider.requests.length, 2);
    assert.deepEqual([breaker.stats.failures, breaker.stats.successes], [1, 1], 'each attempt counted once');
  });
}

test('a store breaker retries before the first word the same way, each attempt counted by the fleet', async () => {
  provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
  const breaker = new StoreCircuitBreaker('retry-store', { store: new MemoryStore(), breaker: { stream: { retry: RETRY } } });
  const body = await new Response(await breaker.stream(call)).text();
  assert.equal(textOf(body), WHOLE);
  assert.equal(provider.requests.length, 2);
  await breaker.flush();
  const { counters } = await breaker.inspect();
  assert.deepEqual([counters.failures, counters.successes], [1, 1]);
});

test('without retry the first attempt fails: the caller decides', async () => {
  provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
  const breaker = new CircuitBreaker('no-retry');
  await assert.rejects(breaker.stream(call), (e) => e.status === 529 && e.type === 'overloaded_error');
  assert.equal(provider.requests.length, 1);
});

test('after the first word nothing is retried: the typed end with the partial answer', async () => {
  provider.cue({ transcript: anthropicOverloadedAfterText }, { transcript: anthropicText });
  const breaker = new CircuitBreaker('after-first-word');
  const stream = await breaker.stream(call, { retry: RETRY, onInterrupted: () => '[interrupted]' });
  const body = await new Response(stream).text();
  assert.ok(textOf(body).length > 0 && textOf(body) !== WHOLE, 'the partial answer');
  assert.match(body, /\[interrupted\]$/);
  assert.equal(provider.requests.length, 1, 'not retried');
  assert.equal(breaker.stats.failures, 1);
});

test('retry gives up by its rules: the last failure rejects, every attempt counted', async () => {
  provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
  const breaker = new CircuitBreaker('gives-up');
  await assert.rejects(breaker.stream(call, { retry: { maxAttempts: 2, baseDelayMs: 1 } }), (e) => e.status === 529);
  assert.equal(provider.requests.length, 2);
  assert.equal(breaker.stats.failures, 2);
});

test('retry refuses the options a stream sets itself, by name', async () => {
  const breaker = new CircuitBreaker('refuses');
  for (const key of ['breaker', 'signal', 'attemptTimeoutMs']) {
    await assert.rejects(
      breaker.stream(call, { retry: { [key]: key === 'attemptTimeoutMs' ? 1000 : {} } }),
      (e) => e instanceof TypeError && e.message.includes(`retry.${key}`),
    );
  }
  await assert.rejects(breaker.stream(call, { retry: { maxAttempts: 0 } }), /maxAttempts/);
  assert.equal(provider.requests.length, 0);
});

// ----- thinking -----

test('maxThinkingMs cuts a model looping in its thoughts, counted', async () => {
  // 20 thinking deltas 100 ms apart and no output; a cap of 500 ms cuts it long before the end.
  provider.cue({ transcript: anthropicThinkingForever });
  const breaker = new CircuitBreaker('thinking-cap');
  const started = Date.now();
  const stream = await breaker.stream(call, { idleTimeoutMs: 1_000, maxThinkingMs: 500, onInterrupted: () => '[too long]' });
  const body = await new Response(stream).text();
  assert.match(body, /thinking_delta/);
  assert.match(body, /\[too long\]$/);
  assert.ok(Date.now() - started < 1_800, 'cut before the stream ended');
  assert.equal(breaker.stats.failures, 1);
});

test('thinking keeps the idle limit from running out; only firstOutputTimeoutMs asks for output', async () => {
  // Reasoning summary deltas with 300 ms pauses, then the answer: idleTimeoutMs 500 stands.
  provider.cue({ transcript: responsesReasoningSummaryPauses });
  const ok = new CircuitBreaker('thinking-idle');
  const body = await new Response(await ok.stream(({ signal }) => fetch(`${provider.url}/v1/responses`, { method: 'POST', body: '{}', signal }), { idleTimeoutMs: 500 })).text();
  assert.match(body, /response\.completed/);
  assert.deepEqual([ok.stats.successes, ok.stats.failures], [1, 0]);
  // The same stream with firstOutputTimeoutMs 400: thinking past it is cut.
  provider.cue({ transcript: responsesReasoningSummaryPauses });
  const strict = new CircuitBreaker('first-output');
  const cut = await strict.stream(({ signal }) => fetch(`${provider.url}/v1/responses`, { method: 'POST', body: '{}', signal }), {
    idleTimeoutMs: 500,
    firstOutputTimeoutMs: 400,
    onInterrupted: () => '[no answer yet]',
  });
  assert.match(await new Response(cut).text(), /\[no answer yet\]$/);
  assert.equal(strict.stats.failures, 1);
});

test('the new limits are checked by name', async () => {
  const breaker = new CircuitBreaker('limits');
  for (const key of ['firstOutputTimeoutMs', 'maxThinkingMs']) {
    await assert.rejects(breaker.stream(call, { [key]: 0 }), (e) => e instanceof RangeError && e.message.includes(key));
  }
});

// ----- a breaker's stream defaults -----

test("a breaker's stream option sets its streams' defaults once; a call's own options win", async () => {
  provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
  const breaker = new CircuitBreaker('reasoning-model', { stream: { retry: RETRY, maxThinkingMs: 60_000 } });
  const body = await new Response(await breaker.stream(call)).text();
  assert.equal(textOf(body), WHOLE, 'retried by the default');
  assert.equal(provider.requests.length, 2);
  provider.reset();
  provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
  await assert.rejects(breaker.stream(call, { retry: false }), (e) => e.status === 529);
  assert.equal(provider.requests.length, 1, 'the call turned retry off');
});

test("a breaker's stream option is checked by name when the breaker is made", () => {
  assert.throws(() => new CircuitBreaker('bad', { stream: { idleTimeoutMs: -5 } }), /idleTimeoutMs/);
  assert.throws(() => new CircuitBreaker('bad', { stream: { onInterrupted: () => '' } }), /onInterrupted/);
  assert.throws(() => new CircuitBreaker('bad', { stream: 5 }), /stream/);
});

// ----- js/README's example, run as written -----

test("js/README's reasoning-model example works as written: an overloaded_error before the first word is retried", async () => {
  const { transform } = await import('esbuild');
  const fs = await import('node:fs/promises');
  const path = await import('node:path');
  const { fileURLToPath, pathToFileURL } = await import('node:url');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const text = await fs.readFile(path.join(here, '../../js/README.md'), 'utf8');
  const block = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.startsWith('// lib/thinker.ts'));
  assert.ok(block, 'js/README has the block');
  const dir = await fs.mkdtemp(path.join(here, '.thinker-'));
  try {
    const file = path.join(dir, 'thinker.mjs');
    await fs.writeFile(file, (await transform(block, { loader: 'ts', format: 'esm' })).code);
    process.env.ANTHROPIC_BASE_URL = provider.url;
    process.env.ANTHROPIC_API_KEY = 'test-key';
    const { think, thinker } = await import(pathToFileURL(file).href);
    provider.cue({ transcript: anthropicOverloadedBeforeText }, { transcript: anthropicText });
    // The retry's backoff is the default (about a second at most, full jitter).
    const events = await think('hi');
    let answer = '';
    for await (const e of events) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') answer += e.delta.text;
    assert.equal(answer, WHOLE);
    assert.equal(provider.requests.length, 2);
    assert.deepEqual([thinker.stats.failures, thinker.stats.successes], [1, 1]);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});
