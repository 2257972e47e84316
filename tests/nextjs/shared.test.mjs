// Two `next start` instances of the example app (built by scripts/test-nextjs.sh) sharing one
// breaker (/api/chat-shared): through Redis (a redis-server of the test's own on 127.0.0.1), and
// through the Cloudflare Worker's breaker service (real workerd via Miniflare, when the Worker is
// built and tests/worker's dependencies are installed). A trip seen by one is seen by the other.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startRedis, until } from '../redis/helpers.mjs';
import { nextStart } from './next-start.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const app = path.join(root, 'examples/nextjs');
const RESET_MS = 1_500;
const THRESHOLD = 3;
const SERVICE_TOKEN = 'nextjs-service-token-0123456789';
const ADMIN_TOKEN = 'nextjs-admin-token-0123456789';

function startProvider() {
  const state = { status: 200, calls: 0 };
  const server = http.createServer(async (req, res) => {
    for await (const _ of req);
    state.calls += 1;
    res.writeHead(state.status, { 'content-type': 'application/json' });
    res.end(
      state.status === 200
        ? JSON.stringify({ type: 'message', content: [{ type: 'text', text: 'hello from the provider' }] })
        : JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ state, url: `http://127.0.0.1:${server.address().port}`, server })),
  );
}

let provider;
let redis;
let worker = null;
let whyNoService = '';
const instances = [];

before(async () => {
  provider = await startProvider();
  redis = await startRedis();
  // The breaker service: the Worker in workerd, when it is built and Miniflare is installed.
  const harness = path.join(root, 'tests/worker/harness.mjs');
  if (!fs.existsSync(path.join(root, 'build/index.js'))) whyNoService = 'build/index.js missing (scripts/build-worker.sh)';
  else if (!fs.existsSync(path.join(root, 'tests/worker/node_modules/miniflare'))) whyNoService = 'miniflare not installed in tests/worker';
  else {
    const { objectWorker, start } = await import(pathToFileURL(harness).href);
    const w = objectWorker({
      breakers: {
        anthropic: { lease_ms: 1000, breaker: { trip: { kind: 'consecutive_failures', threshold: THRESHOLD }, open_duration_ms: RESET_MS } },
      },
    });
    w.bindings.SERVICE_TOKEN = SERVICE_TOKEN;
    const { mf } = await start([w]);
    worker = { mf, url: (await mf.ready).href.replace(/\/$/, '') };
  }
  const env = {
    PROVIDER_URL: provider.url,
    REDIS_URL: redis.url,
    BREAKER_FAILURE_THRESHOLD: String(THRESHOLD),
    BREAKER_RESET_MS: String(RESET_MS),
    RETRY_MAX_ATTEMPTS: '1',
    ADMIN_TOKEN,
    ...(worker ? { BREAKWATER_SERVICE_URL: worker.url, BREAKWATER_SERVICE_TOKEN: SERVICE_TOKEN } : {}),
  };
  instances.push(await nextStart(env), await nextStart(env));
});

after(async () => {
  await Promise.all(instances.map((i) => i.stop()));
  await worker?.mf.dispose();
  await redis?.kill('SIGTERM');
  await new Promise((r) => provider?.server.close(r));
});

/** The status page (app/admin/breakers/route.ts, `statusPage` of breakwater/store). */
async function statusOf(instance, token = ADMIN_TOKEN) {
  const res = await fetch(`${instance.base}/admin/breakers`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, headers: res.headers, html: await res.text() };
}

async function chat(instance, via) {
  const res = await fetch(`${instance.base}/api/chat-shared?via=${via}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'hi' }),
  });
  return { status: res.status, json: await res.json() };
}

for (const via of ['redis', 'service']) {
  test(`two next start instances share one breaker through ${via}: a trip seen by one is seen by the other`, async (t) => {
    if (via === 'service' && !worker) return t.skip(whyNoService);
    const [a, b] = instances;
    provider.state.status = 200;
    assert.equal((await chat(a, via)).status, 200);
    assert.equal((await chat(b, via)).status, 200);

    // The provider goes down: instance A alone makes the failing calls that trip the breaker.
    provider.state.status = 529;
    const before = provider.state.calls;
    for (let i = 0; i < THRESHOLD; i++) {
      const r = await chat(a, via);
      assert.equal(r.status, 502);
      assert.equal(r.json.providerStatus, 529);
    }
    assert.equal(provider.state.calls - before, THRESHOLD);
    assert.equal((await chat(a, via)).status, 503);
    // Instance B saw none of those failures. Its CLOSED lease (1 s) may still admit one call,
    // whose failure report brings back the OPEN state; or the lease has run out and it asks first.
    // Either way it stops after at most that one call, and the provider sees nothing more.
    const first = await chat(b, via);
    if (first.status === 502) assert.equal(first.json.state, 'OPEN', JSON.stringify(first.json));
    else assert.equal(first.status, 503, JSON.stringify(first.json));
    const refused = await chat(b, via);
    assert.equal(refused.status, 503, JSON.stringify(refused.json));
    assert.equal(refused.json.reason, 'open');
    const spentByB = provider.state.calls - before - THRESHOLD;
    assert.ok(spentByB <= 1, `instance B made ${spentByB} provider calls after the trip`);
    if (via === 'redis') {
      // Either instance's status page shows the shared breaker OPEN, with how it got there.
      const page = await statusOf(b);
      assert.equal(page.status, 200, page.html);
      assert.match(page.headers.get('content-security-policy'), /^default-src 'none'; style-src 'sha256-/);
      assert.match(page.html, /<section class="b OPEN"><h2><span class="s">OPEN<\/span>anthropic<\/h2>/);
      assert.match(page.html, /<li>CLOSED → OPEN at \d\d:\d\d:\d\d/);
      assert.match(page.html, new RegExp(`opens after ${THRESHOLD} consecutive failures; stays open 1\\.5 s`));
      assert.equal((await statusOf(b, null)).status, 401);
      assert.equal((await statusOf(b, 'wrong')).status, 401);
    }
    t.diagnostic(`${via}: instance B made ${spentByB} provider call(s) after A tripped the breaker (${first.status === 502 ? 'admitted on its lease' : 'its lease had run out'})`);

    // Recovery: after the open period one probe closes it for both.
    provider.state.status = 200;
    await until(async () => (await chat(b, via)).status === 200);
    const closed = await chat(a, via);
    assert.equal(closed.status, 200);
    assert.equal(closed.json.state, 'CLOSED');
    for (const i of instances) {
      const s = await (await fetch(`${i.base}/api/chat-shared?via=${via}`)).json();
      assert.equal(s.decidingLocally, false);
    }
    if (via === 'redis') {
      const page = await statusOf(a);
      assert.match(page.html, /<section class="b CLOSED">/);
      assert.match(page.html, /HALF_OPEN → CLOSED at .*OPEN → HALF_OPEN at .*CLOSED → OPEN at/);
    }
  });
}
