// The routes of docs/recipes.md, run as written: each block is extracted by its path comment,
// stripped of its types, and driven against the local fake provider (the Anthropic SDK and the
// recipes' own fetch read ANTHROPIC_BASE_URL). What is checked is what a client of the route gets:
// the status, Retry-After and the body, and which requests reached the provider.
// (The AI SDK recipe is run in tests/ai/suite.mjs, "the documented route ...".)
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform } from 'esbuild';
import { CircuitBreaker } from 'breakwater';
import { ModelAnswerError } from 'breakwater/ai';
import { startFakeProvider, errors, STREAM_TEXT } from './fake-provider.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const recipes = path.join(here, '../../docs/recipes.md');
let provider;
let dir;
const warn = console.warn;
before(async () => {
  provider = await startFakeProvider();
  process.env.ANTHROPIC_BASE_URL = provider.url;
  process.env.ANTHROPIC_API_KEY = 'test-key';
  dir = await fs.mkdtemp(path.join(here, '.recipes-'));
  console.warn = () => {}; // the recipes log what they met
});
after(async () => {
  console.warn = warn;
  await provider.close();
  await fs.rm(dir, { recursive: true, force: true });
});
beforeEach(() => provider.reset());

/** The recipe whose block begins with `// <file>`, as an ES module. */
async function load(file) {
  const text = await fs.readFile(recipes, 'utf8');
  const block = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.startsWith(`// ${file}\n`));
  assert.ok(block, `docs/recipes.md has a block starting with // ${file}`);
  const out = path.join(dir, `${file.replace(/[/.]/g, '-')}.mjs`);
  await fs.writeFile(out, (await transform(block, { loader: 'ts', format: 'esm' })).code);
  return import(pathToFileURL(out).href);
}

const post = (body, init = {}) =>
  new Request('http://app.test/api', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init });
const overloaded = (headers = {}) => ({ status: 529, body: errors.anthropic[529], headers });

test('recipe "refused by an open circuit": 503 with Retry-After from retryAfterMs once OPEN, and no request', async () => {
  const { POST, claude } = await load('app/api/ask/route.ts');
  const ok = await POST(post({ prompt: 'hi' }));
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { text: 'hello from the fake provider' });
  // Five failures open it (failureThreshold: 5); the route rethrows what is not a refusal.
  for (let i = 0; i < 5; i++) {
    provider.cue(overloaded());
    await assert.rejects(POST(post({ prompt: 'hi' })), (e) => e.status === 529);
  }
  assert.equal(claude.state, 'OPEN');
  const before = provider.requests.length;
  const busy = await POST(post({ prompt: 'hi' }));
  assert.equal(busy.status, 503);
  assert.equal(busy.headers.get('retry-after'), '30', 'resetTimeout 30 s');
  assert.deepEqual(await busy.json(), { error: 'The assistant is busy.' });
  assert.equal(provider.requests.length, before, 'refused: nothing reached the provider');
});

test('recipe "or answer something else": the fallback answers a failed call, then a refused one', async () => {
  let calls = 0;
  globalThis.callProvider = async () => {
    calls++;
    throw Object.assign(new Error('Overloaded'), { status: 529 });
  };
  try {
    const { POST } = await load('app/api/ask-or-cached/route.ts');
    for (let i = 0; i < 5; i++) {
      const res = await POST(post({ prompt: 'hi' }));
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { text: 'The assistant is resting (failure); showing saved results.', degraded: true });
    }
    const open = await POST(post({ prompt: 'hi' }));
    assert.deepEqual(await open.json(), { text: 'The assistant is resting (open); showing saved results.', degraded: true });
    assert.equal(open.headers.get('cache-control'), 'no-store');
    assert.equal(calls, 5, 'the refused call never reached the provider');
  } finally {
    delete globalThis.callProvider;
  }
});

test('recipe "failed after retries": 503 with the attempts, the last status and its Retry-After; a 400 is a 502 after one attempt', async () => {
  const { POST, claudeRetried } = await load('app/api/ask-retry/route.ts');
  provider.cue(overloaded({ 'retry-after-ms': '20' }), overloaded({ 'retry-after-ms': '20' }), overloaded({ 'retry-after-ms': '1500' }));
  const failed = await POST(post({ prompt: 'hi' }));
  assert.equal(failed.status, 503);
  assert.equal(failed.headers.get('retry-after'), '2', "the last answer's retry-after-ms 1500, rounded up to seconds");
  assert.deepEqual(await failed.json(), {
    error: 'The assistant is unavailable.',
    attempts: 3,
    reason: 'attempts-exhausted',
    kind: 'overloaded',
    status: 529,
  });
  assert.equal(provider.requests.length, 3);
  assert.equal(claudeRetried.stats.failures, 1, 'one call given up: one failure for the breaker');

  provider.cue({ status: 400, body: errors.anthropic[400] });
  const bad = await POST(post({ prompt: 'hi' }));
  assert.equal(bad.status, 502);
  assert.equal(bad.headers.get('retry-after'), null);
  assert.deepEqual(await bad.json(), { error: 'The request failed.', attempts: 1, reason: 'not-retryable', kind: 'client-error', status: 400 });
  assert.equal(provider.requests.length, 4, 'a request error is not retried');
});

test('recipe "every tier is down" (FallbackChain): the backup answers for a failing primary; both refused → 503 with the soonest Retry-After', async () => {
  const { POST, primary, backup } = await load('app/api/chat-chain/route.ts');
  const ok = await POST(post({ prompt: 'hi' }));
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('x-model'), 'claude-sonnet');
  assert.match(await ok.text(), /message_stop/);

  provider.cue(overloaded());
  const fell = await POST(post({ prompt: 'hi' }));
  assert.equal(fell.status, 200);
  assert.equal(fell.headers.get('x-model'), 'claude-haiku');
  await fell.text();

  primary.isolate();
  backup.isolate();
  const before = provider.requests.length;
  const down = await POST(post({ prompt: 'hi' }));
  assert.equal(down.status, 503);
  assert.equal(down.headers.get('retry-after'), '10', "the backup's 10 s, sooner than the primary's 30 s");
  assert.deepEqual(await down.json(), { error: 'Every model is unavailable right now.' });
  assert.equal(provider.requests.length, before);
});

test('recipe "a stream that failed mid-way": a 200 with the words so far and the interrupted event; one failure', async () => {
  const { POST, streaming } = await load('app/api/stream/route.ts');
  const whole = await POST(post({ prompt: 'hi' }));
  assert.equal(whole.status, 200);
  const text = await whole.text();
  assert.match(text, /message_stop/);
  assert.doesNotMatch(text, /interrupted/);

  provider.cue({ cutAfter: 2 });
  const cut = await POST(post({ prompt: 'hi' }));
  assert.equal(cut.status, 200, 'the first words were sent: the status stays 200');
  const body = await cut.text();
  const words = STREAM_TEXT.split(/(?<= )/).slice(0, 2);
  for (const w of words) assert.ok(body.includes(JSON.stringify(w)), `the stream has ${JSON.stringify(w)}`);
  assert.ok(body.endsWith('data: {"type":"error","error":{"type":"interrupted","message":"The answer was cut off."}}\n\n'));
  assert.equal(streaming.stats.failures, 1);
  assert.equal(streaming.stats.successes, 1);

  provider.cue(overloaded({ 'retry-after': '4' }));
  const before = await POST(post({ prompt: 'hi' }));
  assert.equal(before.status, 503, 'a failure before the first word: the route still chooses');
  assert.equal(before.headers.get('retry-after'), '4');
});

test('recipe "telling them apart": each error, from a real call, gets its own answer', async () => {
  const { toResponse } = await load('lib/error-response.ts');
  const caught = (p) => p.then(() => assert.fail('expected a rejection'), (e) => e);
  const b = new CircuitBreaker('apart', { resetTimeout: 12_000 });

  b.isolate();
  const refused = toResponse(await caught(b.execute(async () => 'x')));
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get('retry-after'), '12');
  assert.deepEqual(await refused.json(), { error: 'busy', reason: 'isolated' });
  b.reset();

  const timedOut = toResponse(await caught(b.execute(() => new Promise(() => {}), { timeoutMs: 5 })));
  assert.equal(timedOut.status, 504);
  assert.deepEqual(await timedOut.json(), { error: 'timeout', afterMs: 5 });

  provider.cue(overloaded({ 'retry-after': '3' }));
  const streamErr = await caught(
    b.stream(({ signal }) => fetch(`${provider.url}/v1/messages`, { method: 'POST', body: JSON.stringify({ stream: true }), signal })),
  );
  const failedStream = toResponse(streamErr);
  assert.equal(failedStream.status, 503);
  assert.equal(failedStream.headers.get('retry-after'), '3');
  assert.deepEqual(await failedStream.json(), { error: 'status', type: 'overloaded_error' });

  const empty = toResponse(new ModelAnswerError('empty', 'the model answered with no content', { isRetryable: true }));
  assert.equal(empty.status, 503);
  assert.deepEqual(await empty.json(), { error: 'empty' });

  provider.cue({ status: 400, body: errors.anthropic[400] });
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  const client = new Anthropic({ maxRetries: 0 });
  const badRequest = toResponse(await caught(client.messages.create({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] })));
  assert.equal(badRequest.status, 502);
  assert.deepEqual(await badRequest.json(), { error: 'client-error', status: 400 });

  const ctl = new AbortController();
  ctl.abort();
  const gone = toResponse(await caught(b.execute(async () => 'x', { signal: ctl.signal })), ctl.signal);
  assert.equal(gone.status, 499);
});
