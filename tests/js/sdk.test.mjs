// The official @anthropic-ai/sdk and openai clients (their own retries off) against a local fake
// provider: breakwater understands their error classes as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, withRetry, isCircuitOpenError, classifyError, retryAfterMs } from 'breakwater';
import { errors } from './fake-provider.mjs';
import { useSdkClients } from './sdk-clients.mjs';

let provider, anthropic, openai;
useSdkClients((c) => ({ provider, anthropic, openai } = c));

const ask = (options) =>
  anthropic.messages.create(
    { model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    options,
  );
const chat = (options) =>
  openai.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, options);
const noSleep = { sleep: async () => {} };

test('anthropic OverloadedError (529) is retried and counts against the breaker', async () => {
  provider.cue({ status: 529, body: errors.anthropic[529] });
  const err = await ask().catch((e) => e);
  assert.equal(err.constructor.name, 'OverloadedError');
  assert.equal(err.status, 529);
  const v = classifyError(err);
  assert.deepEqual([v.class, v.retryable, v.failure], ['overloaded', true, true]);

  provider.reset();
  provider.cue({ status: 529, body: errors.anthropic[529] }, { status: 529, body: errors.anthropic[529] });
  const msg = await withRetry(() => ask(), noSleep);
  assert.equal(msg.content[0].text, 'hello from the fake provider');
  assert.equal(provider.requests.length, 3);

  provider.reset();
  const breaker = new CircuitBreaker('anthropic', { failureThreshold: 2 });
  provider.cue({ status: 529, body: errors.anthropic[529] }, { status: 529, body: errors.anthropic[529] });
  await assert.rejects(breaker.execute(() => ask()));
  await assert.rejects(breaker.execute(() => ask()));
  assert.equal(breaker.state, 'OPEN');
  await assert.rejects(breaker.execute(() => ask()), (e) => isCircuitOpenError(e));
  assert.equal(provider.requests.length, 2, 'the open breaker kept the third call from the provider');
});

test('anthropic 429 with retry-after: waits what the server asked', async () => {
  provider.cue({ status: 429, headers: { 'retry-after': '3' }, body: errors.anthropic[429] });
  const sleeps = [];
  const msg = await withRetry(() => ask(), { jitter: 'none', baseDelayMs: 100, sleep: async (ms) => sleeps.push(ms) });
  assert.equal(msg.type, 'message');
  assert.deepEqual(sleeps, [3000]);
  provider.cue({ status: 429, headers: { 'retry-after': '2' }, body: errors.anthropic[429] });
  const err = await ask().catch((e) => e);
  assert.equal(err.constructor.name, 'RateLimitError');
  assert.equal(retryAfterMs(err), 2000, 'read from the SDK error`s fetch Headers');
});

test('anthropic 503 is retried; 400 and 401 are neither retried nor counted', async () => {
  provider.cue({ status: 503, body: errors.anthropic[503] });
  await withRetry(() => ask(), noSleep);
  assert.equal(provider.requests.length, 2);
  const breaker = new CircuitBreaker('anthropic', { failureThreshold: 1 });
  for (const status of [400, 401]) {
    provider.reset();
    provider.cue({ status, body: errors.anthropic[status] });
    await assert.rejects(withRetry(() => breaker.execute(() => ask()), noSleep), (e) => e.status === status);
    assert.equal(provider.requests.length, 1, `${status} is not retried`);
  }
  assert.equal(breaker.state, 'CLOSED', 'bad requests do not open the circuit');
  assert.equal(breaker.stats.ignored, 2);
});

test('openai RateLimitError with insufficient_quota: not retried, but counted', async () => {
  provider.cue({ status: 429, body: errors.openai.quota });
  const breaker = new CircuitBreaker('openai', { failureThreshold: 1 });
  const giveUps = [];
  const err = await withRetry(() => breaker.execute(() => chat()), {
    ...noSleep,
    onGiveUp: (_, info) => giveUps.push(info.reason),
  }).catch((e) => e);
  assert.equal(err.constructor.name, 'RateLimitError');
  assert.equal(err.code, 'insufficient_quota');
  assert.equal(provider.requests.length, 1);
  assert.deepEqual(giveUps, ['not-retryable']);
  assert.equal(breaker.state, 'OPEN');
});

test('openai 429 with retry-after-ms, 503, 400 and 401', async () => {
  provider.cue({ status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '9' }, body: errors.openai[429] });
  const sleeps = [];
  const r = await withRetry(() => chat(), { jitter: 'none', baseDelayMs: 10, sleep: async (ms) => sleeps.push(ms) });
  assert.equal(r.choices[0].message.content, 'hello from the fake provider');
  assert.deepEqual(sleeps, [1500]);
  provider.reset();
  provider.cue({ status: 503, body: errors.openai[503] }, { status: 503, body: errors.openai[503] });
  await withRetry(() => chat(), noSleep);
  assert.equal(provider.requests.length, 3);
  for (const status of [400, 401]) {
    provider.reset();
    provider.cue({ status, body: errors.openai[status] });
    await assert.rejects(withRetry(() => chat(), noSleep), (e) => e.status === status);
    assert.equal(provider.requests.length, 1);
  }
});

test('50 concurrent SDK calls when the reset timeout expires: exactly 1 reaches the provider', async () => {
  let t = 1_700_000_000_000;
  const breaker = new CircuitBreaker('anthropic', { failureThreshold: 1, resetTimeout: 30_000, clock: () => t });
  provider.cue({ status: 529, body: errors.anthropic[529] });
  await assert.rejects(breaker.execute(() => ask()));
  provider.reset();
  t += 30_000;
  const release = provider.holdResponses();
  const calls = Promise.allSettled(Array.from({ length: 50 }, () => breaker.execute(() => ask())));
  while (provider.requests.length < 1) await new Promise((r) => setTimeout(r, 1));
  release();
  const results = await calls;
  assert.equal(provider.requests.length, 1);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  assert.equal(breaker.state, 'CLOSED');
});

test('aborting an SDK call through execute and withRetry: no failure counted, no more retries', async () => {
  const breaker = new CircuitBreaker('anthropic', { failureThreshold: 1 });
  const release = provider.holdResponses();
  const ac = new AbortController();
  const p = withRetry(({ signal }) => breaker.execute(() => ask({ signal }), { signal }), { signal: ac.signal });
  while (provider.requests.length < 1) await new Promise((r) => setTimeout(r, 1));
  ac.abort(new Error('the user closed the tab'));
  await assert.rejects(p, /closed the tab/);
  release();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(provider.requests.length, 1);
  assert.equal(breaker.state, 'CLOSED');
  assert.equal(breaker.stats.failures, 0);
});
