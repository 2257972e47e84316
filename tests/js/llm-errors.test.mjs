// How the providers' real error answers (tests/fixtures/llm, each with its source) are classified
// when they reach breakwater through the official SDKs (@anthropic-ai/sdk, openai, @google/genai,
// their own retries off) or through fetch: which are retried, which count against the breaker,
// which are the caller's cancel. Requests are counted at the fake provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, FallbackChain, withRetry, classifyError, endingOf, retryAfterMs, isCircuitOpenError } from 'breakwater';
import * as llm from '../fixtures/llm/index.mjs';
import { useSdkClients } from './sdk-clients.mjs';

let provider, anthropic, openai, gemini;
useSdkClients((c) => ({ provider, anthropic, openai, gemini } = c));

const ask = (options) =>
  anthropic.messages.create({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, options);
const chat = (options) => openai.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, options);
const generate = () => gemini.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
const noSleep = { sleep: async () => {} };

/** The error the SDK throws for `transcript`. */
async function thrown(call, transcript) {
  provider.reset();
  provider.cue({ transcript });
  const err = await call().then(
    () => assert.fail('the SDK resolved an error answer'),
    (e) => e,
  );
  return err;
}

// [transcript, the SDK call, class, retried, counted]
const CASES = [
  ['anthropicRateLimit429', ask, 'rate-limited', true, true],
  ['anthropicOverloaded529', ask, 'overloaded', true, true],
  ['anthropicConflict409', ask, 'transient', true, true],
  ['anthropicSpendCap429', ask, 'quota-exhausted', false, true],
  ['anthropicSpendLimit400', ask, 'quota-exhausted', false, true],
  ['anthropicCreditBalance400', ask, 'quota-exhausted', false, true],
  ['anthropicBilling402', ask, 'quota-exhausted', false, true],
  ['anthropicPromptTooLong400', ask, 'client-error', false, false],
  ['anthropicPrefillRefused400', ask, 'client-error', false, false],
  ['openaiRateLimit429', chat, 'rate-limited', true, true],
  ['openaiConflict409', chat, 'transient', true, true],
  ['openaiInsufficientQuota429', chat, 'quota-exhausted', false, true],
  ['openaiCreditBalanceExhausted429', chat, 'quota-exhausted', false, true],
  ['openaiProjectSpendLimit429', chat, 'quota-exhausted', false, true],
  ['openaiOrganizationSpendLimit429', chat, 'quota-exhausted', false, true],
  ['openaiBillingNotActive429', chat, 'quota-exhausted', false, true],
  ['openaiBillingHardLimit400', chat, 'quota-exhausted', false, true],
  ['openaiContextLengthExceeded400', chat, 'client-error', false, false],
  ['openaiInvalidPrompt400', chat, 'declined', false, false],
  ['openaiContentPolicyViolation400', chat, 'declined', false, false],
  ['gemini429PerMinute', generate, 'rate-limited', true, true],
  ['gemini429PerDay', generate, 'quota-exhausted', false, true],
];

for (const [name, call, cls, retried, counted] of CASES) {
  test(`${name} through the official SDK: ${cls}, ${retried ? '' : 'not '}retried, ${counted ? '' : 'not '}counted`, async () => {
    const t = llm[name];
    assert.ok(t, `tests/fixtures/llm has ${name}`);
    const err = await thrown(call, t);
    const v = classifyError(err);
    assert.deepEqual({ class: v.class, retryable: v.retryable, failure: v.failure }, { class: cls, retryable: retried, failure: counted });

    // withRetry makes one request for what is not retried, and more for what is.
    provider.reset();
    provider.cue({ transcript: t }, { transcript: t }, { transcript: t });
    await withRetry(() => call(), { ...noSleep, maxAttempts: 3 }).catch(() => {});
    assert.equal(provider.requests.length, retried ? 3 : 1, 'requests made');

    // The breaker counts what is counted: two of them open it, or leave it closed.
    const breaker = new CircuitBreaker(name, { failureThreshold: 2 });
    provider.reset();
    provider.cue({ transcript: t }, { transcript: t });
    for (let i = 0; i < 2; i++) await breaker.execute(() => call()).catch(() => {});
    assert.equal(breaker.state, counted ? 'OPEN' : 'CLOSED');
  });
}

test("Gemini's RetryInfo is the wait for a per-minute quota; a per-day quota is not waited for", async () => {
  const minute = await thrown(generate, llm.gemini429PerMinute);
  assert.equal(retryAfterMs(minute), 34_400);
  // Before, the per-day answer's 38 s retryDelay was honoured and withRetry made every attempt.
  const slept = [];
  provider.reset();
  provider.cue({ transcript: llm.gemini429PerDay }, { transcript: llm.gemini429PerDay });
  await withRetry(() => generate(), { sleep: async (ms) => void slept.push(ms), maxAttempts: 2, maxRetryAfterMs: 60_000 }).catch(() => {});
  assert.deepEqual([provider.requests.length, slept], [1, []]);
});

test('a failing fetch Response is classified by its body: a spent quota is not retried, and the body is still there', async () => {
  const url = `${provider.url}/v1/chat/completions`;
  const post = () => fetch(url, { method: 'POST', body: '{}' });
  provider.cue({ transcript: llm.openaiInsufficientQuota429 }, { transcript: llm.openaiInsufficientQuota429 });
  const res = await withRetry(() => post(), { ...noSleep, maxAttempts: 3 });
  assert.equal(provider.requests.length, 1, 'a spent quota is asked once');
  assert.equal(res.status, 429);
  const body = await res.json();
  assert.equal(body.error.code, 'insufficient_quota', 'the caller still reads the body');

  // A plain rate limit is retried; each retried Response's body is released.
  provider.reset();
  provider.cue({ transcript: llm.openaiRateLimit429 }, { transcript: llm.openaiRateLimit429 });
  const answers = [];
  const res2 = await withRetry(async () => (answers.push(await post()), answers.at(-1)), { ...noSleep, maxAttempts: 2 });
  assert.equal(provider.requests.length, 2);
  assert.equal(res2, answers[1], 'the last answer is returned');
  // Before, the first body was left unread (undici keeps its socket until it is collected).
  assert.deepEqual(
    answers.map((r) => r.bodyUsed),
    [true, false],
    "the first attempt's body was cancelled, the last one's kept",
  );
  await res2.body.cancel();
});

for (const [label, call] of [
  ['@anthropic-ai/sdk', ask],
  ['openai', chat],
]) {
  test(`${label}: requests the user cancelled (its APIUserAbortError) never open the breaker`, async () => {
    const breaker = new CircuitBreaker(`cancel-${label}`, { failureThreshold: 2 });
    for (let i = 0; i < 4; i++) {
      provider.cue({ holdUntilAbort: true });
      const user = new AbortController();
      // The SDK docs' pattern: the route's signal goes to the SDK, not to execute.
      const p = breaker.execute(() => call({ signal: user.signal }));
      setTimeout(() => user.abort(), 20);
      const err = await p.catch((e) => e);
      assert.equal(err.constructor.name, 'APIUserAbortError');
      assert.equal(classifyError(err).class, 'cancelled');
    }
    assert.equal(breaker.state, 'CLOSED');
    assert.equal(breaker.stats.failures, 0);

    // recordFailure and a permit, with the signal and without it.
    provider.cue({ holdUntilAbort: true });
    const user = new AbortController();
    const p = call({ signal: user.signal });
    setTimeout(() => user.abort(), 20);
    const err = await p.catch((e) => e);
    breaker.recordFailure(err, user.signal);
    breaker.recordFailure(err);
    breaker.tryAcquire().failure(err, user.signal);
    assert.equal(breaker.state, 'CLOSED');
    assert.equal(breaker.stats.failures, 0);

    // withRetry does not retry a cancel.
    provider.reset();
    provider.cue({ holdUntilAbort: true }, { holdUntilAbort: true });
    const again = new AbortController();
    const r = withRetry(() => call({ signal: again.signal }), noSleep);
    setTimeout(() => again.abort(), 20);
    await r.catch(() => {});
    assert.equal(provider.requests.length, 1);
  });
}

test('FallbackChain.execute: the fallback answers only when every tier refused', async () => {
  const primary = new CircuitBreaker('chain-primary', { failureThreshold: 1 });
  const backup = new CircuitBreaker('chain-backup', { failureThreshold: 1 });
  primary.isolate();
  const chain = new FallbackChain([
    { breaker: primary, call: async () => 'primary' },
    { breaker: backup, call: async () => 'backup' },
  ]);
  // Before, the OPEN primary answered with the fallback and the backup was never asked.
  const r = await chain.execute({ fallback: () => 'cached' });
  assert.deepEqual([r.value, r.tier, r.name], ['backup', 1, 'chain-backup']);
  backup.isolate();
  const f = await chain.execute({ fallback: (e) => (assert.ok(isCircuitOpenError(e)), 'cached') });
  assert.deepEqual([f.value, f.tier, f.name], ['cached', -1, 'fallback']);
  await assert.rejects(chain.execute(), (e) => isCircuitOpenError(e) && e.breaker === 'fallback-chain');
  await assert.rejects(chain.execute({ fallback: 'cached' }), /fallback/);
});

test('FallbackChain.execute: the fallback also answers when the tiers called failed, with the reason; a client error is thrown', async () => {
  const overloaded = () => Promise.reject(Object.assign(new Error('Overloaded'), { status: 529 }));
  const chain = new FallbackChain([
    { breaker: new CircuitBreaker('fc-primary', { failureThreshold: 5 }), call: overloaded },
    { breaker: new CircuitBreaker('fc-backup', { failureThreshold: 5 }), call: overloaded },
  ]);
  const f = await chain.execute({ fallback: (e, reason) => `${reason} ${e.status}` });
  assert.deepEqual([f.value, f.tier, f.name], ['failure 529', -1, 'fallback']);
  await assert.rejects(chain.execute(), (e) => e.status === 529);
  const bad = new FallbackChain([
    { breaker: new CircuitBreaker('fc-bad', { failureThreshold: 5 }), call: () => Promise.reject(Object.assign(new Error('bad'), { status: 400 })) },
  ]);
  await assert.rejects(bad.execute({ fallback: () => 'no' }), (e) => e.status === 400);
});

test("endingOf reads the AI SDK's { unified, raw } as well as a provider's string, and nothing else", () => {
  assert.equal(endingOf('end_turn'), 'complete');
  assert.equal(endingOf({ unified: 'content-filter', raw: 'refusal' }), 'declined');
  // `other` says little: the provider's raw reason decides.
  assert.equal(endingOf({ unified: 'other', raw: 'max_tokens' }), 'truncated');
  assert.equal(endingOf({ unified: 'other' }), 'unknown');
  const cyclic = { unified: undefined, raw: undefined };
  cyclic.unified = cyclic;
  cyclic.raw = cyclic;
  assert.equal(endingOf(cyclic), 'unknown');
  for (const v of [undefined, null, 42, [], 'x'.repeat(10_000), 'réfusal']) assert.equal(endingOf(v), 'unknown');
});

test('after a spent quota opened the breaker, it recovers by itself once the quota is back', async () => {
  // Safety: spent-quota answers are not retried and open the breaker. Liveness: when the
  // provider answers again (the quota refilled), the probe after the open period closes it.
  const breaker = new CircuitBreaker('quota-recovers', { failureThreshold: 2, resetTimeout: 50 });
  provider.cue({ transcript: llm.openaiInsufficientQuota429 }, { transcript: llm.openaiInsufficientQuota429 });
  for (let i = 0; i < 2; i++) await breaker.execute(() => chat()).catch(() => {});
  assert.equal(breaker.state, 'OPEN');
  await assert.rejects(breaker.execute(() => chat()), (e) => isCircuitOpenError(e));
  assert.equal(provider.requests.length, 2, 'refused without a request while OPEN');
  await new Promise((r) => setTimeout(r, 80));
  const answer = await breaker.execute(() => chat());
  assert.equal(answer.choices[0].message.content, 'hello from the fake provider');
  assert.equal(breaker.state, 'CLOSED');
});
