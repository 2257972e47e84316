// The status page, as an operator sees it: `breakerRoutes`' `GET /breakwater/admin/status` in a
// JavaScript developer's Worker (apps/user-worker.ts, the packed package) in real workerd, opened
// in headless Chromium (playwright-core driving the system's /usr/bin/chromium) at a phone's
// width through an outage and its recovery: OPEN with its retry time and the transition, then
// CLOSED. The page's strict CSP must let its own style sheet through and nothing else (Chromium
// enforces it: a wrong hash leaves the page unstyled, and any violation is reported; a control
// serves the same page under another hash and sees it unstyled). The
// screenshots are kept in $ARTIFACTS (default out/status-page/). Then the Rust Worker's route
// serves the same page.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startUpstream, userWorker, objectWorker, start, call, admin, sleep, until, ADMIN_TOKEN } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS ?? path.join(HERE, '../../out/status-page');
const OPEN_MS = 2500;
const LEASE_MS = 300;
const SETTINGS = { failureThreshold: 3, resetTimeout: OPEN_MS };
const PHONE = { width: 390, height: 844 };
const SERVICE_TOKEN = 'status-service-token-0123456789';

describe('the status page in Chromium, through an outage', { skip: !existsSync(CHROMIUM) && `no browser at ${CHROMIUM}` }, () => {
  let upstream;
  let env;
  let base;
  let browser;
  let page;
  const violations = [];

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    upstream = await startUpstream();
    env = await start(
      ['host', 'app'].map((n) =>
        userWorker(n, {
          upstream: upstream.url,
          breaker: 'svc',
          settings: SETTINGS,
          leaseMs: LEASE_MS,
          bindings: n === 'host' ? { ADMIN_TOKEN, SERVICE_TOKEN, NAMES: 'svc,quiet' } : {},
        }),
      ),
    );
    base = `${(await env.mf.ready).href.replace(/\/$/, '')}/breakwater`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: PHONE, extraHTTPHeaders: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    page.on('pageerror', (e) => violations.push(String(e)));
  });
  after(async () => {
    await browser?.close();
    await env?.mf.dispose();
    await upstream?.close();
  });

  /** The page as Chromium shows it: each breaker's state and text, and what CSS made of it. */
  async function look(name) {
    const resp = await page.goto(`${base}/admin/status`);
    assert.equal(resp.status(), 200);
    const headers = resp.headers();
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
    const shown = await page.evaluate(() =>
      [...document.querySelectorAll('section.b')].map((s) => ({
        name: s.querySelector('h2').lastChild.textContent,
        state: s.querySelector('.s').textContent,
        text: s.textContent,
        badge: getComputedStyle(s.querySelector('.s')).backgroundColor,
        border: getComputedStyle(s).borderLeftWidth,
      })),
    );
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    return { headers, shown, overflow, title: await page.title() };
  }

  test('OPEN during the outage, CLOSED after it, styled under the strict CSP, on a phone', async () => {
    const workers = [await env.app('host'), await env.app('app')];
    for (const f of workers) assert.equal((await call(f)).body.result, 'ok');

    upstream.state.mode = 'down';
    const opened = await until(
      async () => {
        for (const f of workers) await call(f);
        return (await admin(env.mf, '/breakwater/admin/breakers/svc')).body?.lease?.state === 'OPEN';
      },
      { deadlineMs: 10_000 },
    );
    assert.ok(opened, 'the breaker opened');

    const during = await look('1-open');
    assert.match(during.headers['content-security-policy'], /^default-src 'none'; style-src 'sha256-/);
    assert.equal(during.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(during.title, 'NOT CLOSED · breakwater');
    const svc = during.shown.find((b) => b.name === 'svc');
    assert.ok(svc, JSON.stringify(during.shown));
    assert.equal(svc.state, 'OPEN');
    assert.match(svc.text, /CLOSED → OPEN at \d\d:\d\d:\d\d/);
    assert.match(svc.text, /the first in [\d.]+ s/);
    assert.match(svc.text, /opens after 3 consecutive failures; stays open 2\.5 s/);
    assert.match(svc.text, /fingerprint \d+/);
    assert.match(svc.text, /sessions\d+ heard from/);
    // The style sheet applied: the hash in the CSP is right (else Chromium drops the sheet).
    assert.equal(svc.badge, 'rgb(207, 34, 46)');
    assert.ok(parseFloat(svc.border) >= 7, `the OPEN border is drawn (${svc.border})`);
    const quiet = during.shown.find((b) => b.name === 'quiet');
    assert.equal(quiet?.state, 'CLOSED', 'a breaker nobody called is shown too');
    assert.equal(quiet.badge, 'rgb(26, 127, 55)');
    assert.ok(during.overflow <= 0, `no sideways scrolling on a phone (${during.overflow} px too wide)`);

    upstream.state.mode = 'up';
    await sleep(OPEN_MS + 100);
    const closed = await until(
      async () => {
        for (const f of workers) await call(f);
        return (await admin(env.mf, '/breakwater/admin/breakers/svc')).body?.lease?.state === 'CLOSED';
      },
      { deadlineMs: 10_000 },
    );
    assert.ok(closed, 'the breaker closed again by itself');

    const after = await look('2-closed');
    assert.equal(after.title, 'all closed · breakwater');
    const healed = after.shown.find((b) => b.name === 'svc');
    assert.equal(healed.state, 'CLOSED');
    assert.match(healed.text, /HALF_OPEN → CLOSED at .*OPEN → HALF_OPEN at .*CLOSED → OPEN at/);
    assert.equal(healed.badge, 'rgb(26, 127, 55)');
    assert.deepEqual(violations, [], 'no CSP violation, no script error');
  });

  test('the control: the same page under a CSP with another hash is left unstyled, and Chromium says why', async () => {
    const resp = await fetch(`${base}/admin/status`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const html = await resp.text();
    const wrong = resp.headers.get('content-security-policy').replace(/sha256-[^']+/, `sha256-${'A'.repeat(43)}=`);
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': wrong });
      res.end(html);
    });
    await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const seen = [];
      const probe = await browser.newPage();
      probe.on('console', (m) => seen.push(m.text()));
      await probe.goto(`http://127.0.0.1:${server.address().port}/`);
      const badge = await probe.evaluate(() => getComputedStyle(document.querySelector('.s')).backgroundColor);
      assert.equal(badge, 'rgba(0, 0, 0, 0)', 'the style sheet must not apply under a wrong hash');
      assert.ok(seen.some((m) => /Content Security Policy/.test(m)), seen.join('\n'));
      await probe.close();
    } finally {
      server.close();
    }
  });

  test('the page needs the admin token, and only GET: a service token holder cannot see it', async () => {
    const service = await fetch(`${base}/admin/status`, { headers: { authorization: `Bearer ${SERVICE_TOKEN}` } });
    assert.equal(service.status, 401);
    assert.doesNotMatch(await service.text(), /<section/);
    const anon = await fetch(`${base}/admin/status`);
    assert.equal(anon.status, 401);
    assert.equal(anon.headers.get('www-authenticate'), 'Bearer');
    const wrong = await fetch(`${base}/admin/status`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrong.status, 401);
    const post = await fetch(`${base}/admin/status`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(post.status, 405);
  });
});

describe("the Rust Worker's status page", () => {
  let env;
  before(async () => {
    const w = objectWorker({ breakers: { llm: { lease_ms: 500, breaker: { trip: { kind: 'consecutive_failures', threshold: 4 } } } } });
    w.bindings.SERVICE_TOKEN = SERVICE_TOKEN;
    env = await start([w]);
  });
  after(async () => {
    await env?.mf.dispose();
  });

  test('serves the same page, with the same headers, behind the same token', async () => {
    const resp = await env.mf.dispatchFetch('http://breakwater/admin/status', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(resp.status, 200);
    assert.match(resp.headers.get('content-security-policy'), /^default-src 'none'; style-src 'sha256-/);
    assert.equal(resp.headers.get('content-type'), 'text/html; charset=utf-8');
    const html = await resp.text();
    assert.match(html, /<section class="b CLOSED"><h2><span class="s">CLOSED<\/span>llm<\/h2>/);
    assert.match(html, /opens after 4 consecutive failures; stays open 30 s/);
    const anon = await env.mf.dispatchFetch('http://breakwater/admin/status');
    assert.equal(anon.status, 401);
    const service = await env.mf.dispatchFetch('http://breakwater/admin/status', { headers: { authorization: `Bearer ${SERVICE_TOKEN}` } });
    assert.equal(service.status, 401, 'a service token holder cannot see the page');
    const view = await admin(env.mf, '/admin/breakers/llm');
    assert.match(view.body.settings, /^opens after 4 consecutive failures/, 'the admin view shows the settings in words');
    assert.equal(typeof view.body.options, 'number');
  });
});
