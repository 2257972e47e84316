// End to end: the example Next.js app, built with `next build` and served by `next start` on
// 127.0.0.1, guarding a fake LLM provider that fails on cue. Both runtimes (Node and Edge) are
// driven CLOSED → OPEN → HALF_OPEN → CLOSED, and every assertion about the upstream is counted
// at the provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAppWithProvider } from './json-provider.mjs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';
import { launchChromium } from './next-start.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const RESET_MS = 1_500;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let provider;
let running;
let base;

before(async () => {
  running = await startAppWithProvider(RESET_MS);
  ({ provider } = running);
  base = running.server.base;
});

after(async () => {
  await running?.stop();
});

async function chat(route, body = {}) {
  const res = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'hi', ...body }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function breakerOf(statusRoute) {
  const res = await fetch(`${base}${statusRoute}`);
  assert.equal(res.status, 200);
  const json = await res.json();
  return json.breakers.anthropic;
}

for (const [runtime, route, statusRoute] of [
  ['nodejs', '/api/chat', '/api/breaker'],
  ['edge', '/api/chat-edge', '/api/chat-edge'],
]) {
  test(`${runtime} route: the module-level breaker goes CLOSED → OPEN → HALF_OPEN → CLOSED`, async () => {
    provider.state.status = 200;
    provider.state.delayMs = 0;
    const start = provider.state.calls;

    // Healthy: one request, one provider call.
    const ok = await chat(route);
    assert.equal(ok.status, 200);
    assert.equal(ok.json.text, 'hello from the provider');
    assert.equal(ok.json.runtime, runtime);
    assert.equal(provider.state.calls - start, 1);

    // The provider goes down: each request makes 2 attempts, and the breaker counts one failure
    // per request. The count carries over from request to request: the singleton persists.
    provider.state.status = 529;
    for (let i = 1; i <= 3; i++) {
      const r = await chat(route);
      assert.equal(r.status, 502, `request ${i}`);
      assert.equal(r.json.providerStatus, 529);
      const b = await breakerOf(statusRoute);
      assert.equal(b.stats.failures, i, `failures after request ${i}`);
      assert.equal(b.state, i < 3 ? 'CLOSED' : 'OPEN');
    }
    assert.equal(provider.state.calls - start, 1 + 3 * 2);

    // Open: requests fail fast with 503 + Retry-After, or get the fallback; none reaches the provider.
    const before = provider.state.calls;
    for (let i = 0; i < 10; i++) {
      const r = await chat(route);
      assert.equal(r.status, 503);
      const retryAfter = Number(r.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= Math.ceil(RESET_MS / 1000), `retry-after ${retryAfter}`);
      const f = await chat(route, { fallback: true });
      assert.equal(f.status, 200);
      assert.match(f.json.text, /cached answer/);
    }
    assert.equal(provider.state.calls, before, 'rejected calls never reached the provider');
    assert.equal((await breakerOf(statusRoute)).stats.rejected, 20);

    // After the reset timeout the breaker reads HALF_OPEN; the provider is back but slow.
    await sleep(RESET_MS + 100);
    assert.equal((await breakerOf(statusRoute)).state, 'HALF_OPEN');
    provider.state.status = 200;
    provider.state.delayMs = 300;
    const burst = await Promise.all(Array.from({ length: 20 }, () => chat(route)));
    const statuses = burst.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 200).length, 1, `one probe: ${statuses}`);
    assert.equal(statuses.filter((s) => s === 503).length, 19);
    assert.equal(provider.state.calls, before + 1, 'exactly one probe reached the provider');
    assert.equal((await breakerOf(statusRoute)).state, 'HALF_OPEN', 'two successes are needed');

    // The second successful probe closes it.
    provider.state.delayMs = 0;
    const second = await chat(route);
    assert.equal(second.status, 200);
    assert.equal((await breakerOf(statusRoute)).state, 'CLOSED');
    assert.equal(provider.state.calls, before + 2);
  });
}

test('the page renders the breaker state (Chromium)', async () => {
  const browser = await launchChromium();
  try {
    // Under `next dev` the page compiles on its first request, which can outlast the open period.
    if (process.env.NEXT_E2E_MODE === 'dev') await fetch(base + '/');
    // Trip the Node runtime's breaker so the page has something to show.
    provider.state.status = 529;
    for (let i = 0; i < 3; i++) await chat('/api/chat');
    const expected = await breakerOf('/api/breaker');
    assert.equal(expected.state, 'OPEN');
    const page = await browser.newPage();
    await page.goto(base + '/');
    const state = await page.textContent('tr[data-breaker="anthropic"] .state');
    assert.equal(state, 'OPEN');
    const opened = await page.textContent('tr[data-breaker="anthropic"] td:nth-child(6)');
    assert.equal(Number(opened), expected.stats.opened);
    const out = path.join(root, 'out');
    fs.mkdirSync(out, { recursive: true });
    await page.screenshot({ path: path.join(out, 'nextjs-breakers.png') });
  } finally {
    await browser.close();
    provider.state.status = 200;
  }
});
