// End to end: Next.js 16's proxy.ts gates /api/summarize on the same breaker the routes use
// (globalBreakers(): the proxy and the routes are bundled apart, the registry is one per process).
// While the breaker is OPEN the proxy answers 503 + Retry-After and the route never runs; when the
// period ends the proxy lets requests through and the route's execute sends exactly one probe.
// Every upstream count is taken at the provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAppWithProvider } from './json-provider.mjs';

const RESET_MS = 2_000;
let provider;
let server;
let app;

before(async () => {
  app = await startAppWithProvider(RESET_MS);
  ({ provider, server } = app);
}, { timeout: 180_000 });

after(async () => {
  await app?.stop();
});

async function post(route, body = {}) {
  const res = await fetch(`${server.base}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'summarize this', ...body }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function anthropic() {
  const json = await (await fetch(`${server.base}/api/breaker`)).json();
  return json.breakers.anthropic;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('proxy.ts answers 503 + Retry-After while the routes\' breaker is OPEN; the route never runs, the provider sees nothing', { timeout: 180_000 }, async () => {
  // Healthy: the proxy lets the request through; the route answers.
  provider.state.status = 200;
  const ok = await post('/api/summarize');
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
  assert.equal(provider.state.calls, 1);

  // Down: three requests through the route (two attempts each) open the breaker.
  provider.state.status = 529;
  for (let i = 0; i < 3; i++) assert.equal((await post('/api/summarize')).status, 502);
  assert.equal(provider.state.calls, 1 + 3 * 2);
  let b = await anthropic();
  assert.equal(b.state, 'OPEN');
  const rejectedBefore = b.stats.rejected;

  // OPEN: the proxy answers, before any handler.
  for (let i = 0; i < 10; i++) {
    const r = await post('/api/summarize');
    assert.equal(r.status, 503);
    assert.equal(r.json.from, 'proxy');
    assert.equal(r.json.state, 'OPEN');
    const retryAfter = Number(r.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= Math.ceil(RESET_MS / 1000), `retry-after ${retryAfter}`);
  }
  assert.equal(provider.state.calls, 7, 'nothing reached the provider');
  b = await anthropic();
  assert.equal(b.stats.rejected, rejectedBefore, 'the route\'s execute never ran (isOpen() counts nothing)');

  // /api/chat is not behind the proxy: its route answers with its fallback, from the same breaker.
  const chat = await post('/api/chat', { fallback: true });
  assert.equal(chat.status, 200);
  assert.match(chat.json.text, /cached answer/);
  assert.equal((await anthropic()).stats.rejected, rejectedBefore + 1);

  // The period ends: the proxy lets requests through, the route's execute sends one probe; the
  // requests arriving while it is out are turned away (by the proxy, or by the route if they
  // passed the proxy just before the probe left).
  await sleep(RESET_MS + 200);
  provider.state.status = 200;
  provider.state.delayMs = 400;
  const burst = await Promise.all(Array.from({ length: 10 }, () => post('/api/summarize')));
  const statuses = burst.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, 1, `one probe: ${statuses}`);
  assert.equal(statuses.filter((s) => s === 503).length, 9, `${statuses}`);
  assert.equal(provider.state.calls, 8, 'exactly one probe reached the provider');
  b = await anthropic();
  assert.equal(b.state, 'HALF_OPEN', 'the example needs two successful probes');

  // The second probe closes it; the proxy stays out of the way.
  provider.state.delayMs = 0;
  const second = await post('/api/summarize');
  assert.equal(second.status, 200);
  assert.equal((await anthropic()).state, 'CLOSED');
  assert.equal(provider.state.calls, 9);
});
