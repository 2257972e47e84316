// End to end, in Chromium: the example app's streaming chat (/chat posting to /api/chat-stream,
// or to /api/chat-ai through the Vercel AI SDK), built with `next build` and served by
// `next start` on 127.0.0.1, in front of a fake Anthropic provider that streams server-sent
// events and serves two models, each with cues of its own.
// Every count of upstream requests is taken at the provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, nextStart } from './next-start.mjs';
import { startProvider, PRIMARY, BACKUP } from './anthropic-provider.mjs';

const THRESHOLD = 3;
const ADMIN_TOKEN = 'nextjs-admin-token-0123456789';
const INTERRUPTED = '\n\n[The answer was interrupted. Please try again.]';
const UNAVAILABLE = 'Every model is unavailable right now. Please try again later.';

let provider;
let next;
let base;
let browser;

before(async () => {
  provider = await startProvider();
  next = await nextStart({
    PROVIDER_URL: provider.url,
    ANTHROPIC_API_KEY: 'test-key',
    BREAKER_FAILURE_THRESHOLD: String(THRESHOLD),
    BREAKER_RESET_MS: '600000',
    BREAKER_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  base = next.base;
  browser = await launchChromium();
}, { timeout: 90_000 });

after(async () => {
  await browser?.close();
  await next?.stop();
  await provider?.close();
});

async function breakers() {
  const res = await fetch(`${base}/api/breaker`);
  assert.equal(res.status, 200);
  return (await res.json()).breakers;
}

async function control(name, action) {
  const res = await fetch(`${base}/api/breaker`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ name, action }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

/**
 * Opens /chat, asks `prompt` through `route` (/api/chat-stream: over fetch; /api/chat-ai: the AI
 * SDK); `whileStreaming(page)` runs once the question is sent.
 */
async function ask(prompt, { route = '/api/chat-stream', whileStreaming } = {}) {
  const page = await browser.newPage();
  try {
    await page.goto(`${base}/chat`);
    await page.waitForSelector('button[type="submit"]:enabled'); // hydrated
    await page.selectOption('select[name="route"]', route);
    await page.fill('input[name="prompt"]', prompt);
    await page.click('button[type="submit"]');
    if (whileStreaming) await whileStreaming(page);
    await page.waitForSelector('#answer[data-status="done"], #answer[data-status="failed"]', { state: 'attached', timeout: 20_000 });
    const text = async (selector) => (await page.$(selector))?.textContent() ?? '';
    return {
      status: await page.getAttribute('#answer', 'data-status'),
      answer: await text('#answer'),
      model: await text('#model'),
      error: await text('#error'),
    };
  } finally {
    await page.close();
  }
}

test('a healthy answer renders word by word, then in full, from the primary model', async () => {
  let resume;
  const resumed = new Promise((r) => (resume = r));
  provider.cue(PRIMARY, { deltas: ['The ', 'breaker ', 'is ', 'closed.'], pauseAfter: 2, resume: resumed });
  const r = await ask('healthy', {
    whileStreaming: async (page) => {
      // The first two words are on the page while the provider still holds the rest.
      await page.waitForFunction(() => document.querySelector('#answer')?.textContent === 'The breaker ', null, { timeout: 10_000 });
      resume();
    },
  });
  assert.equal(r.status, 'done');
  assert.equal(r.answer, 'The breaker is closed.');
  assert.equal(r.model, `Answered by ${PRIMARY}`);
  assert.deepEqual(provider.countsFor('healthy'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const b = await breakers();
  assert.equal(b[PRIMARY].stats.successes, 1);
  assert.equal(b[PRIMARY].stats.failures, 0);
  assert.equal(b[BACKUP].stats.admitted, 0);
});

test('a cut mid-answer shows the partial text once, then the contingency; one failure, no retry', async () => {
  const before = (await breakers())[PRIMARY].stats;
  provider.cue(PRIMARY, { deltas: ['The ', 'answer ', 'was ', 'cut.'], cutAfter: 2 });
  const r = await ask('cut');
  assert.equal(r.status, 'done');
  assert.equal(r.answer, `The answer ${INTERRUPTED}`);
  assert.equal(r.model, `Answered by ${PRIMARY}`);
  // Exactly one request for this prompt: the answer had begun, so nothing was retried or sent to the backup.
  assert.deepEqual(provider.countsFor('cut'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const after = (await breakers())[PRIMARY];
  assert.equal(after.stats.failures - before.failures, 1);
  assert.equal(after.stats.successes - before.successes, 0);
  assert.equal(after.state, 'CLOSED');
});

test('the primary failing before its first word falls to the backup; once OPEN it gets no request at all', async () => {
  const { failures } = (await breakers())[PRIMARY].stats;
  assert.equal(failures, 1, 'one failure so far: the cut');
  // The primary answers 529 until its breaker opens; each of these answers comes from the backup.
  for (let i = failures + 1; i <= THRESHOLD; i++) {
    provider.cue(PRIMARY, { status: 529 });
    const res = await fetch(`${base}/api/chat-stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: `overloaded ${i}` }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-model'), BACKUP);
    assert.equal(await res.text(), `Hello from ${BACKUP}.`);
    assert.deepEqual(provider.countsFor(`overloaded ${i}`), { [PRIMARY]: 1, [BACKUP]: 1 });
  }
  let b = await breakers();
  assert.equal(b[PRIMARY].state, 'OPEN');
  assert.equal(b[PRIMARY].stats.failures, THRESHOLD);
  const rejected = b[PRIMARY].stats.rejected;

  const r = await ask('open');
  assert.equal(r.status, 'done');
  assert.equal(r.answer, `Hello from ${BACKUP}.`);
  assert.equal(r.model, `Answered by ${BACKUP}`);
  assert.deepEqual(provider.countsFor('open'), { [PRIMARY]: 0, [BACKUP]: 1 });
  b = await breakers();
  assert.equal(b[PRIMARY].stats.rejected - rejected, 1);
  assert.equal(b[BACKUP].stats.failures, 0);

  // Both OPEN: the page says so, and neither model is asked.
  await control(BACKUP, 'isolate');
  const none = await ask('nobody');
  assert.equal(none.status, 'failed');
  assert.equal(none.error, UNAVAILABLE);
  assert.deepEqual(provider.countsFor('nobody'), { [PRIMARY]: 0, [BACKUP]: 0 });
  await control(BACKUP, 'reset');
  await control(PRIMARY, 'reset');
  b = await breakers();
  assert.equal(b[PRIMARY].state, 'CLOSED');
  assert.equal(b[BACKUP].state, 'CLOSED');
});

test('the breaker switch needs the admin token', async () => {
  const res = await fetch(`${base}/api/breaker`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
    body: JSON.stringify({ name: PRIMARY, action: 'isolate' }),
  });
  assert.equal(res.status, 403);
  assert.equal((await breakers())[PRIMARY].state, 'CLOSED');
});

// The same chat through the Vercel AI SDK (streamText over fallbackModel, the same breakers).
const AI = { route: '/api/chat-ai' };

test('AI SDK route: a healthy answer comes from the primary model', async () => {
  const before = await breakers();
  const r = await ask('ai healthy', AI);
  assert.equal(r.status, 'done');
  assert.equal(r.answer, `Hello from ${PRIMARY}.`);
  assert.deepEqual(provider.countsFor('ai healthy'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const b = await breakers();
  assert.equal(b[PRIMARY].stats.successes - before[PRIMARY].stats.successes, 1);
  assert.equal(b[PRIMARY].stats.failures - before[PRIMARY].stats.failures, 0);
});

test('AI SDK route: with the primary OPEN the backup answers and the primary gets no request', async () => {
  await control(PRIMARY, 'isolate');
  try {
    const before = await breakers();
    assert.equal(before[PRIMARY].state, 'OPEN');
    const r = await ask('ai open', AI);
    assert.equal(r.status, 'done');
    assert.equal(r.answer, `Hello from ${BACKUP}.`);
    assert.deepEqual(provider.countsFor('ai open'), { [PRIMARY]: 0, [BACKUP]: 1 });
    const b = await breakers();
    assert.equal(b[PRIMARY].stats.rejected - before[PRIMARY].stats.rejected, 1);
    assert.equal(b[BACKUP].stats.successes - before[BACKUP].stats.successes, 1);
  } finally {
    await control(PRIMARY, 'reset');
  }
});

test('AI SDK route: a cut mid-answer shows the partial text once, then the contingency; one failure, no retry', async () => {
  const before = (await breakers())[PRIMARY].stats;
  provider.cue(PRIMARY, { deltas: ['The ', 'answer ', 'was ', 'cut.'], cutAfter: 2 });
  const r = await ask('ai cut', AI);
  assert.equal(r.status, 'done');
  assert.equal(r.answer, `The answer ${INTERRUPTED}`);
  assert.deepEqual(provider.countsFor('ai cut'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const after = (await breakers())[PRIMARY];
  assert.equal(after.stats.failures - before.failures, 1);
  assert.equal(after.stats.successes - before.successes, 0);
  assert.equal(after.state, 'CLOSED');
});

test('AI SDK route: with every model OPEN the page says so and no request reaches the provider', async () => {
  await control(PRIMARY, 'isolate');
  await control(BACKUP, 'isolate');
  try {
    const r = await ask('ai nobody', AI);
    assert.equal(r.status, 'failed');
    assert.equal(r.error, UNAVAILABLE);
    assert.equal(r.answer, '');
    assert.deepEqual(provider.countsFor('ai nobody'), { [PRIMARY]: 0, [BACKUP]: 0 });
  } finally {
    await control(PRIMARY, 'reset');
    await control(BACKUP, 'reset');
  }
});

test('AI SDK routes (text and UI message streams): with every model OPEN, 503 with Retry-After, not a 200 "An error occurred."', async () => {
  await control(PRIMARY, 'isolate');
  await control(BACKUP, 'isolate');
  try {
    const post = (route, body) => fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await post('/api/chat-ai', { prompt: 'ai down text' });
    const ui = await post('/api/chat-ui', { messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'ai down ui' }] }] });
    for (const res of [text, ui]) {
      assert.equal(res.status, 503);
      // Both breakers are isolated with BREAKER_RESET_MS 600000: the soonest retryAfterMs is 600 s.
      assert.equal(res.headers.get('retry-after'), '600');
      assert.equal(await res.text(), UNAVAILABLE);
    }
    assert.deepEqual(provider.countsFor('ai down text'), { [PRIMARY]: 0, [BACKUP]: 0 });
    assert.deepEqual(provider.countsFor('ai down ui'), { [PRIMARY]: 0, [BACKUP]: 0 });
  } finally {
    await control(PRIMARY, 'reset');
    await control(BACKUP, 'reset');
  }
});

test('AI SDK routes: with every model failing before its first word, 503 (no answer began), not 200', async () => {
  // Each model answers 529 on every request the SDK's retries make (the default maxRetries 2).
  for (let i = 0; i < 3; i++) provider.cue(PRIMARY, { status: 529 }), provider.cue(BACKUP, { status: 529 });
  const before = await breakers();
  try {
    const res = await fetch(`${base}/api/chat-ai`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'ai failing' }) });
    assert.equal(res.status, 503);
    assert.equal(await res.text(), UNAVAILABLE);
    const counts = provider.countsFor('ai failing');
    assert.ok(counts[PRIMARY] >= 1 && counts[BACKUP] >= 1, JSON.stringify(counts));
  } finally {
    const b = await breakers();
    assert.ok(b[PRIMARY].stats.failures > before[PRIMARY].stats.failures);
    await control(PRIMARY, 'reset');
    await control(BACKUP, 'reset');
  }
});
