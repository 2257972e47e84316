// A page in headless Chromium (playwright-core driving the system's /usr/bin/chromium) loads the
// installed package's browser entry, which fetches and compiles the .wasm itself.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

let server;
let base;
let flaky = 0;
before(async () => {
  server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/favicon.ico') return res.writeHead(204).end();
    if (url.pathname === '/flaky') {
      flaky++;
      if (flaky % 2 === 1) {
        res.writeHead(503, { 'retry-after-ms': '250' });
        return res.end('busy');
      }
      return res.end('ok');
    }
    // The page, the installed package, and the case it shares with the other runtimes.
    const rel =
      url.pathname === '/' ? 'browser/index.html'
      : url.pathname.startsWith('/node_modules/') || url.pathname === '/adaptive-case.mjs' ? url.pathname.slice(1)
      : `browser${url.pathname}`;
    const file = path.join(here, rel);
    if (!file.startsWith(here)) return res.writeHead(403).end();
    try {
      const body = await fs.readFile(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }));

test('the package works in a Chromium page', { skip: !existsSync(CHROMIUM) && `no browser at ${CHROMIUM}` }, async () => {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`${base}/`);
    await page.waitForFunction(() => window.__results !== undefined, null, { timeout: 30_000 });
    const results = await page.evaluate(() => window.__results);
    assert.deepEqual(errors.filter((e) => !e.includes('503')), []);
    assert.ok(results.length >= 8, JSON.stringify(results));
    for (const r of results) assert.ok(r.ok, `${r.name}: ${r.detail}`);
  } finally {
    await browser.close();
  }
});
