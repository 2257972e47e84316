// `statusPage` of breakwater/store (the packed package, in Node) over a MemoryStore: the core's
// page for the breakers in the store, behind the admin token as the core checks it, and its
// options checked by name. The page in Chromium, through an outage, is tests/worker's
// status-page.test.mjs; over Redis under `next start`, tests/nextjs/shared.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StoreCircuitBreaker, MemoryStore, statusPage } from 'breakwater/store';

const TOKEN = 'status-admin-token-0123456789';
const get = (headers = { authorization: `Bearer ${TOKEN}` }, method = 'GET') => new Request('http://app/admin/breakers', { method, headers });

test('the page shows each breaker in the store: OPEN after its failures, with the settings in words', async () => {
  let now = Date.UTC(2026, 11, 4, 10, 0, 0);
  const store = new MemoryStore(() => now);
  const a = new StoreCircuitBreaker('anthropic', { store, breaker: { failureThreshold: 2, resetTimeout: 30_000 } });
  const b = new StoreCircuitBreaker('openai:gpt-5/chat', { store });
  assert.equal(await a.execute(async () => 'ok'), 'ok');
  for (let i = 0; i < 2; i++) await assert.rejects(a.execute(async () => Promise.reject(new Error('529'))));
  await a.flush();
  now += 5_000;
  const r = await statusPage(get(), [a, b], { adminToken: TOKEN });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(r.headers.get('content-security-policy'), /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+='; /);
  assert.equal(r.headers.get('cache-control'), 'no-store');
  const html = await r.text();
  assert.match(html, /<title>NOT CLOSED · breakwater<\/title>/);
  assert.match(html, /<section class="b OPEN"><h2><span class="s">OPEN<\/span>anthropic<\/h2>/);
  assert.match(html, /<dt>since<\/dt><dd>10:00:00 UTC \(5 s ago\)<\/dd>/);
  assert.match(html, /the first in 25 s \(at 10:00:30 UTC\)/);
  assert.match(html, /<li>CLOSED → OPEN at 10:00:00 \(5 s ago\)<\/li>/);
  assert.match(html, /<td>10:00 \(now\)<\/td><td>3<\/td><td>2<\/td>/);
  assert.match(html, /opens after 2 consecutive failures; stays open 30 s/);
  assert.match(html, /<section class="b CLOSED"><h2><span class="s">CLOSED<\/span>openai:gpt-5\/chat<\/h2>/);
  assert.doesNotMatch(html, /<script|style="/);
  const view = await a.inspect();
  assert.match(view.settings, /^opens after 2 consecutive failures; stays open 30 s; then 1 probe at a time/);
  assert.ok(html.includes(`fingerprint ${view.options}`));
});

test('behind the admin token; off without one; GET only', async () => {
  const b = new StoreCircuitBreaker('anthropic', { store: new MemoryStore() });
  const none = await statusPage(get({}), [b], { adminToken: TOKEN });
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer');
  assert.equal((await none.json()).error, 'unauthorized');
  assert.equal((await statusPage(get({ authorization: 'Bearer wrong' }), [b], { adminToken: TOKEN })).status, 401);
  assert.equal((await statusPage(get({ authorization: `Basic ${TOKEN}` }), [b], { adminToken: TOKEN })).status, 401);
  assert.equal((await statusPage(get(), [b], { adminToken: undefined })).status, 404);
  assert.equal((await statusPage(get(), [b], { adminToken: '' })).status, 404);
  assert.equal((await statusPage(get(undefined, 'POST'), [b], { adminToken: TOKEN })).status, 405);
  const empty = await statusPage(get(), [], { adminToken: TOKEN });
  assert.match(await empty.text(), /No breaker is served here/);
});

test('its options and arguments are checked by name', async () => {
  const b = new StoreCircuitBreaker('anthropic', { store: new MemoryStore() });
  await assert.rejects(statusPage(get(), [b], { adminToken: TOKEN, token: TOKEN }), /unknown option "token"/);
  await assert.rejects(statusPage(get(), [b], { adminToken: 42 }), /invalid option "adminToken".*number/);
  await assert.rejects(statusPage(get(), [{ name: 'x' }], { adminToken: TOKEN }), /`breakers` must be an array of StoreCircuitBreaker/);
});

test('instances that differ only in their throttle are told apart (the fingerprint covers the throttle)', async () => {
  const { throttle } = await import('breakwater/adaptive');
  const store = new MemoryStore();
  const plain = new StoreCircuitBreaker('anthropic', { store, breaker: { failureThreshold: 5 } });
  assert.equal(await plain.execute(async () => 'ok'), 'ok');
  await plain.flush();
  const shedding = new StoreCircuitBreaker('anthropic', { store, breaker: { failureThreshold: 5, adaptiveThrottle: throttle({ minimumRequests: 10 }) } });
  const seen = await shedding.inspect();
  assert.equal(seen.optionsMismatch?.resolution, 'adopted', 'a rolling deploy that adds a throttle is reported');
  assert.notEqual(seen.optionsMismatch.configured, seen.optionsMismatch.stored);
  assert.doesNotMatch(seen.settings, /sheds load/, 'the stored settings, without a throttle, still run');
  const after = await shedding.reset();
  assert.equal(after.optionsMismatch, undefined);
  assert.match(after.settings, /; sheds load when calls exceed 2 × successes over 2 min \(from 10 calls, at most 80 %\)$/);
});

// The core answers `undefined` for views it cannot read (src/wasm/coordinator.rs): the page and
// the Prometheus text are then a 502, never a page built from nothing.
test('views the core cannot read are a 502, not a page: the page and /metrics alike', async () => {
  const { coordinatorGlue, statusResponse } = await import('breakwater/coordinator');
  const g = coordinatorGlue();
  for (const views of ['not json', '{"a":1}', '[{"name":1}]']) {
    assert.equal(g.status_page(views, Date.now()), undefined, views);
    assert.equal(g.views_prometheus(views), undefined, views);
    assert.equal(statusResponse(views, Date.now()).status, 502, views);
  }
  // An empty fleet still has a page.
  assert.equal(statusResponse('[]', Date.now()).status, 200);
  assert.equal(typeof g.views_prometheus('[]'), 'string');
});
