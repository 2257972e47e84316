// End to end, in Chromium: the example app's useChat page (/chat-ui, posting to /api/chat-ui:
// `streamText(...).toUIMessageStreamResponse()` over `fallbackModel` with `onInterrupted`),
// built with `next build` and served by `next start` on 127.0.0.1, in front of the fake
// Anthropic provider of ./anthropic-provider.mjs. What the page shows is what `useChat` holds:
// the messages' text and its `status`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, nextStart } from './next-start.mjs';
import { startProvider, PRIMARY, BACKUP } from './anthropic-provider.mjs';

const INTERRUPTED = '\n\n[The answer was interrupted. Please try again.]';
const UNAVAILABLE = 'Every model is unavailable right now. Please try again later.';
const ADMIN_TOKEN = 'usechat-admin-token-0123456789';

let provider;
let next;
let browser;

before(async () => {
  provider = await startProvider();
  next = await nextStart({
    PROVIDER_URL: provider.url,
    ANTHROPIC_API_KEY: 'test-key',
    BREAKER_FAILURE_THRESHOLD: '5',
    BREAKER_RESET_MS: '600000',
    BREAKER_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  browser = await launchChromium();
}, { timeout: 90_000 });

after(async () => {
  await browser?.close();
  await next?.stop();
  await provider?.close();
});

async function stats(model) {
  const res = await fetch(`${next.base}/api/breaker`);
  assert.equal(res.status, 200);
  return (await res.json()).breakers[model]?.stats ?? { successes: 0, failures: 0, ignored: 0, admitted: 0 };
}

/** Opens /chat-ui and sends `prompt`; `whileStreaming(page)` runs once it is sent. */
async function chat(prompt, whileStreaming) {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  try {
    await page.goto(`${next.base}/chat-ui`);
    await page.waitForSelector('button[type="submit"]:enabled'); // hydrated
    await page.fill('input[name="prompt"]', prompt);
    await page.click('button[type="submit"]');
    // Sent: the status leaves `ready`, or (a short answer) an answer is already there.
    await page.waitForFunction(
      () => document.querySelector('#status')?.getAttribute('data-status') !== 'ready' || document.querySelector('.message[data-role="assistant"]') !== null,
      null,
      { timeout: 10_000 },
    );
    if (whileStreaming) await whileStreaming(page);
    await page.waitForSelector('#status[data-status="ready"], #status[data-status="error"]', { state: 'attached', timeout: 20_000 });
    const answers = await page.$$eval('.message[data-role="assistant"] .text', (els) => els.map((e) => e.textContent));
    return {
      status: await page.getAttribute('#status', 'data-status'),
      answer: answers.join('|'),
      error: (await (await page.$('#error'))?.textContent()) ?? '',
      pageErrors,
    };
  } finally {
    await page.close();
  }
}

test('useChat: a healthy answer streams in and ends ready; one success', async () => {
  const before = await stats(PRIMARY);
  let resume;
  const resumed = new Promise((r) => (resume = r));
  provider.cue(PRIMARY, { deltas: ['The ', 'breaker ', 'is ', 'closed.'], pauseAfter: 2, resume: resumed });
  const r = await chat('healthy', async (page) => {
    // The first words are on the page while the provider holds the rest.
    await page.waitForFunction(() => document.querySelector('.message[data-role="assistant"] .text')?.textContent === 'The breaker ', null, {
      timeout: 10_000,
    });
    resume();
  });
  assert.deepEqual(r, { status: 'ready', answer: 'The breaker is closed.', error: '', pageErrors: [] });
  assert.deepEqual(provider.countsFor('healthy'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const after = await stats(PRIMARY);
  assert.equal(after.successes - before.successes, 1);
});

test('useChat: a cut after some words shows them and the contingency, status ready; one failure, no retry', async () => {
  const before = await stats(PRIMARY);
  provider.cue(PRIMARY, { deltas: ['The ', 'answer ', 'was ', 'cut.'], cutAfter: 2 });
  const r = await chat('cut');
  assert.deepEqual(r, { status: 'ready', answer: `The answer ${INTERRUPTED}`, error: '', pageErrors: [] });
  assert.deepEqual(provider.countsFor('cut'), { [PRIMARY]: 1, [BACKUP]: 0 });
  const after = await stats(PRIMARY);
  assert.equal(after.failures - before.failures, 1);
  assert.equal(after.successes - before.successes, 0);
});

test("useChat: the user's Stop keeps the words so far, ends ready, and is not counted", async () => {
  const before = await stats(PRIMARY);
  let resume;
  const resumed = new Promise((r) => (resume = r));
  provider.cue(PRIMARY, { deltas: ['Stopped ', 'by ', 'the ', 'user.'], pauseAfter: 2, resume: resumed });
  const r = await chat('stop', async (page) => {
    await page.waitForFunction(() => document.querySelector('.message[data-role="assistant"] .text')?.textContent === 'Stopped by ', null, {
      timeout: 10_000,
    });
    await page.click('button[name="stop"]');
  });
  resume();
  assert.deepEqual(r, { status: 'ready', answer: 'Stopped by ', error: '', pageErrors: [] });
  assert.deepEqual(provider.countsFor('stop'), { [PRIMARY]: 1, [BACKUP]: 0 });
  // The server learns of the Stop when the request's signal aborts: wait for the breaker to settle.
  for (let i = 0; i < 100; i++) {
    const s = await stats(PRIMARY);
    if (s.ignored > before.ignored) break;
    await new Promise((res) => setTimeout(res, 50));
  }
  const after = await stats(PRIMARY);
  assert.equal(after.ignored - before.ignored, 1);
  assert.equal(after.failures - before.failures, 0);
});

async function control(name, action) {
  const res = await fetch(`${next.base}/api/breaker`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ name, action }),
  });
  assert.equal(res.status, 200, await res.clone().text());
}

test('useChat: with every model OPEN the route answers 503 and useChat shows the message as its error', async () => {
  await control(PRIMARY, 'isolate');
  await control(BACKUP, 'isolate');
  try {
    const r = await chat('nobody');
    assert.equal(r.status, 'error');
    assert.equal(r.error, UNAVAILABLE);
    assert.equal(r.answer, '', 'no assistant message: not a 200 whose stream says "An error occurred."');
    assert.deepEqual(r.pageErrors, []);
    assert.deepEqual(provider.countsFor('nobody'), { [PRIMARY]: 0, [BACKUP]: 0 });
  } finally {
    await control(PRIMARY, 'reset');
    await control(BACKUP, 'reset');
  }
});
