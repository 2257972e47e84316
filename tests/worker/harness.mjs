// Shared pieces of the Worker tests: a fake upstream on 127.0.0.1, the Miniflare set-ups
// (the Rust Worker hosting BreakerObject, Rust and JS app Workers), and small drivers.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const WORKER_SCRIPT = path.join(ROOT, 'build/index.js');
export const JS_APP = path.join(HERE, '.build/js-app.mjs');
export const BROKEN_OBJECT = path.join(HERE, 'apps/broken-object.mjs');
export const COMPAT_DATE = '2026-04-26';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A fake LLM upstream: `mode` up (200) or down (503), optional delay; counts every request. */
export async function startUpstream() {
  const state = { mode: 'up', delayMs: 0, count: 0, arrivals: [] };
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    state.count += 1;
    const rec = { at: performance.now(), mode: state.mode, done: null };
    state.arrivals.push(rec);
    const finish = () => {
      rec.done = performance.now();
      res.writeHead(rec.mode === 'up' ? 200 : 503, { 'content-type': 'application/json' });
      res.end(rec.mode === 'up' ? '{"ok":true}' : '{"error":"overloaded"}');
    };
    req.resume();
    if (state.delayMs > 0) setTimeout(finish, state.delayMs);
    else finish();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1/messages`,
    state,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const wasmRules = [{ type: 'CompiledWasm', include: ['**/*.wasm'] }];

export function objectWorker({ breakers, adminToken = ADMIN_TOKEN } = {}) {
  const bindings = { BREAKERS: JSON.stringify(breakers) };
  if (adminToken) bindings.ADMIN_TOKEN = adminToken;
  return {
    name: 'breakwater',
    modules: true,
    scriptPath: WORKER_SCRIPT,
    modulesRoot: path.dirname(WORKER_SCRIPT),
    modulesRules: wasmRules,
    compatibilityDate: COMPAT_DATE,
    bindings,
    durableObjects: { BREAKER: { className: 'BreakerObject', useSQLite: true } },
  };
}

/** Fails fast unless build/ holds the Worker built with the demo app (/app/*, feature `demo`). */
let demoChecked = false;
export function requireDemoBuild() {
  if (demoChecked) return;
  const wasm = fs.readFileSync(path.join(path.dirname(WORKER_SCRIPT), 'index_bg.wasm'));
  if (!wasm.includes('DEMO_UPSTREAM')) {
    throw new Error(`${WORKER_SCRIPT} was built without the demo app (/app/*): scripts/build-worker.sh --features worker,demo`);
  }
  demoChecked = true;
}

/** A Rust app Worker: the Worker's demo app (/app/*) guarding calls to `upstream`. */
export function rustApp(name, { upstream, breaker, breakers, mode = 'shared', failClosed = false, scriptName = 'breakwater' }) {
  requireDemoBuild();
  return {
    name,
    modules: true,
    scriptPath: WORKER_SCRIPT,
    modulesRoot: path.dirname(WORKER_SCRIPT),
    modulesRules: wasmRules,
    compatibilityDate: COMPAT_DATE,
    bindings: {
      BREAKERS: JSON.stringify(breakers),
      DEMO_UPSTREAM: upstream,
      DEMO_BREAKER: breaker,
      DEMO_MODE: mode,
      DEMO_FAIL_CLOSED: String(failClosed),
    },
    durableObjects: { BREAKER: { className: 'BreakerObject', scriptName } },
  };
}

export function jsApp(name, { upstream, breaker, mode = 'shared', failClosed = false, localThreshold = 5, localOpenMs = 30000, scriptName = 'breakwater' }) {
  return {
    name,
    modules: true,
    scriptPath: JS_APP,
    modulesRoot: path.dirname(JS_APP),
    modulesRules: wasmRules,
    compatibilityDate: COMPAT_DATE,
    bindings: {
      UPSTREAM: upstream,
      BREAKER_NAME: breaker,
      MODE: mode,
      FAIL_CLOSED: String(failClosed),
      LOCAL_THRESHOLD: String(localThreshold),
      LOCAL_OPEN_MS: String(localOpenMs),
    },
    durableObjects: { BREAKER: { className: 'BreakerObject', scriptName } },
  };
}

export function tmpDir(prefix) {
  const base = path.join(HERE, '.tmp');
  fs.mkdirSync(base, { recursive: true });
  return fs.mkdtempSync(path.join(base, prefix));
}

/** A Miniflare with the given workers; the first one is the object's host. */
export async function start(workers, extra = {}) {
  const mf = new Miniflare({ host: '127.0.0.1', port: 0, workers, ...extra });
  await mf.ready;
  const fetchers = new Map();
  const app = async (name) => {
    if (!fetchers.has(name)) fetchers.set(name, await mf.getWorker(name));
    return fetchers.get(name);
  };
  return { mf, app };
}

/** POSTs to an app Worker's route and returns the parsed JSON. */
export async function call(fetcher, route = '/app/call', init = { method: 'POST' }) {
  const resp = await fetcher.fetch(`http://app${route}`, init);
  const text = await resp.text();
  try {
    return { status: resp.status, body: JSON.parse(text) };
  } catch {
    return { status: resp.status, body: text };
  }
}

/** The admin route of the object's Worker. */
export async function admin(mf, route, { method = 'GET', token = ADMIN_TOKEN } = {}) {
  const headers = token === null ? {} : { authorization: `Bearer ${token}` };
  const resp = await mf.dispatchFetch(`http://breakwater${route}`, { method, headers });
  const text = await resp.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: resp.status, body };
}

/**
 * Drives every app with `concurrency` loops of `/app/call` until `stopApp(name, tally)` says that
 * app is done (or `deadline` ms pass). Returns each app's tally.
 */
export async function drive(apps, { concurrency = 2, stopApp = () => false, deadlineMs = 20000, stopAll = () => false }) {
  const t0 = Date.now();
  const tallies = new Map(apps.map(([name]) => [name, { ok: 0, failed: 0, rejected: 0, fallback: 0, last: null }]));
  await Promise.all(
    apps.flatMap(([name, fetcher]) =>
      Array.from({ length: concurrency }, async () => {
        const t = tallies.get(name);
        while (!stopApp(name, t) && !stopAll() && Date.now() - t0 < deadlineMs) {
          const { body } = await call(fetcher);
          t[body.result] = (t[body.result] ?? 0) + 1;
          if (body.fallback) t.fallback += 1;
          t.last = body;
        }
      }),
    ),
  );
  return tallies;
}
