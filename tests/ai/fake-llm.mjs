// `breakwater fake-llm` (the packed package's bin, installed in tests/ai/v6 and v7) against the
// AI SDK's providers, pointed at it by their environment variables as the banner says:
// @ai-sdk/anthropic with ANTHROPIC_BASE_URL ending in /v1 (it calls `${base}/messages`), or
// without it (then `/messages`, which the fake answers too); @ai-sdk/openai with
// OPENAI_BASE_URL ending in /v1 (`openai.chat(model)` calls `${base}/chat/completions`).
// Called by each version's runner (../v6/ai.test.mjs, ../v7/ai.test.mjs) with its bin.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

const TEXT = 'Hello from the fake LLM. Nothing was sent to a real provider.';

/** Starts `bin fake-llm --port 0`; resolves once it listens: { url, out(), mode(m), state(), stop() }. */
async function startFake(bin) {
  const child = spawn(bin, ['fake-llm', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      const m = /a fake LLM provider on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearInterval(poll);
        resolve(m[1]);
      }
    }, 20);
    exited.then((code) => {
      clearInterval(poll);
      reject(new Error(`breakwater fake-llm exited (${code}) before listening: ${err}`));
    });
  });
  return {
    url,
    out: () => out,
    mode: async (mode) => assert.equal((await fetch(`${url}/_fake/mode`, { method: 'POST', body: JSON.stringify({ mode }) })).status, 200),
    state: async () => (await fetch(`${url}/_fake`)).json(),
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** `make()` with `env` set in process.env (the providers read their base URL variables when made, their keys when they call). */
function withEnv(env, make) {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return make();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** The error a promise rejects with; the SDK's APICallError under its RetryError, if any. */
async function failure(promise) {
  try {
    await promise;
  } catch (error) {
    return error?.lastError ?? error;
  }
  assert.fail('expected a rejection');
}

export function fakeLlmTests({ label, ai, createAnthropic, createOpenAI, bin }) {
  const { generateText, streamText } = ai;
  const fakes = [];
  after(() => Promise.all(fakes.map((f) => f.stop())));

  test(`${label}: breakwater fake-llm answers @ai-sdk/anthropic with ANTHROPIC_BASE_URL=<fake>/v1, then a 529 overloaded_error`, async () => {
    const fake = await startFake(bin);
    fakes.push(fake);
    assert.match(fake.out(), new RegExp(`@ai-sdk/anthropic +ANTHROPIC_BASE_URL=${fake.url.replaceAll('.', '\\.')}/v1 `));
    const anthropic = withEnv({ ANTHROPIC_BASE_URL: `${fake.url}/v1` }, () => createAnthropic({ apiKey: 'fake' }));
    const model = anthropic('claude-sonnet-4-5');

    const generated = await generateText({ model, prompt: 'hi', maxRetries: 0 });
    assert.equal(generated.text, TEXT);
    assert.equal(generated.finishReason, 'stop');
    const streamed = streamText({ model, prompt: 'hi', maxRetries: 0 });
    assert.equal(await streamed.text, TEXT);

    await fake.mode('529');
    const overloaded = await failure(generateText({ model, prompt: 'hi', maxRetries: 0 }));
    assert.equal(overloaded.name, 'AI_APICallError', String(overloaded));
    assert.equal(overloaded.statusCode, 529);
    assert.match(overloaded.responseBody, /overloaded_error/);
    assert.equal(overloaded.url, `${fake.url}/v1/messages`);

    // The same variable without /v1 (as @anthropic-ai/sdk reads it): the provider calls /messages.
    await fake.mode('ok');
    const bare = withEnv({ ANTHROPIC_BASE_URL: fake.url }, () => createAnthropic({ apiKey: 'fake' }));
    assert.equal((await generateText({ model: bare('claude-haiku-4-5'), prompt: 'hi', maxRetries: 0 })).text, TEXT);

    const { requests, statuses } = await fake.state();
    assert.deepEqual({ requests, statuses }, { requests: 4, statuses: { 200: 3, 529: 1 } });
    assert.match(fake.out(), /POST \/v1\/messages {2}mode 529 {2}529\n/);
    assert.match(fake.out(), /POST \/messages {2}mode ok {2}200\n/);
  });

  test(`${label}: breakwater fake-llm answers @ai-sdk/openai (openai.chat) with OPENAI_BASE_URL=<fake>/v1, then a 503`, async () => {
    const fake = await startFake(bin);
    fakes.push(fake);
    const openai = withEnv({ OPENAI_BASE_URL: `${fake.url}/v1` }, () => createOpenAI({ apiKey: 'fake' }));
    const model = openai.chat('gpt-4.1-nano');
    assert.equal((await generateText({ model, prompt: 'hi', maxRetries: 0 })).text, TEXT);
    assert.equal(await streamText({ model, prompt: 'hi', maxRetries: 0 }).text, TEXT);
    await fake.mode('529');
    const busy = await failure(generateText({ model, prompt: 'hi', maxRetries: 0 }));
    assert.equal(busy.statusCode, 503, String(busy));
    assert.equal(busy.url, `${fake.url}/v1/chat/completions`);
  });
}
