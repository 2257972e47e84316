// Shared pieces of the Worker tests: a fake upstream on 127.0.0.1, the Miniflare set-ups
// (the Rust Worker hosting BreakerObject, Rust and JS app Workers; workerd.mjs defines the Rust
// ones, with the live demo), and small drivers.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Miniflare } from 'miniflare';
import { COMPAT_DATE, listenLocal, moduleWorker, objectWorker as objectHost, rustApp } from './workerd.mjs';

export { COMPAT_DATE, rustApp };

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const JS_APP = path.join(HERE, '.build/js-app.mjs');
export const BROKEN_OBJECT = path.join(HERE, 'apps/broken-object.mjs');
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A fake LLM upstream: `mode` up (200) or down (503), optional delay; counts every request. */
export async function startUpstream() {
  const state = { mode: 'up', delayMs: 0, count: 0, arrivals: [] };
  const server = http.createServer((req, res) => {
    state.count += 1;
    const rec = { at: performance.now(), mode: state.mode, done: null };
    state.arrivals.push(rec);
    // 'degraded': four requests in five fail, in turn.
    const up = rec.mode === 'up' || (rec.mode === 'degraded' && state.count % 5 === 0);
    const finish = () => {
      rec.done = performance.now();
      res.writeHead(up ? 200 : 503, { 'content-type': 'application/json' });
      res.end(up ? '{"ok":true}' : '{"error":"overloaded"}');
    };
    req.resume();
    if (state.delayMs > 0) setTimeout(finish, state.delayMs);
    else finish();
  });
  const { port, close } = await listenLocal(server);
  return { url: `http://127.0.0.1:${port}/v1/messages`, state, close };
}

/** The Worker hosting BreakerObject with `breakers` as BREAKERS, and the tests' ADMIN_TOKEN by default. */
export function objectWorker({ breakers, adminToken = ADMIN_TOKEN } = {}) {
  return objectHost({ breakers, adminToken });
}

/** A JavaScript app Worker (apps/js-app.ts, bundled by scripts/test-worker.sh) guarding calls to `upstream`. */
export function jsApp(name, { upstream, breaker, mode = 'shared', failClosed = false, localThreshold = 5, localOpenMs = 30000, scriptName = 'breakwater' }) {
  return moduleWorker(name, JS_APP, {
    bindings: {
      UPSTREAM: upstream,
      BREAKER_NAME: breaker,
      MODE: mode,
      FAIL_CLOSED: String(failClosed),
      LOCAL_THRESHOLD: String(localThreshold),
      LOCAL_OPEN_MS: String(localOpenMs),
    },
    durableObjects: { BREAKER: { className: 'BreakerObject', scriptName } },
  });
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
/** The isolates of a fleet: four Rust app Workers and four JavaScript ones. */
export const FLEET = ['rust-1', 'rust-2', 'rust-3', 'rust-4', 'js-1', 'js-2', 'js-3', 'js-4'];

/**
 * A fake upstream, the object Worker holding `breakers` (its BREAKERS), and the FLEET's app
 * isolates sharing breaker `name`: `apps` ([name, fetcher] pairs), `state()` (the object's view
 * of the breaker), `flushAll()` (every app's batch sent) and `close()`.
 */
export async function startFleet(breakers, name = 'upstream') {
  const upstream = await startUpstream();
  const opts = { upstream: upstream.url, breaker: name, breakers };
  const env = await start([
    objectWorker({ breakers }),
    ...FLEET.map((n) => (n.startsWith('rust') ? rustApp(n, opts) : jsApp(n, opts))),
  ]);
  const apps = await Promise.all(FLEET.map(async (n) => [n, await env.app(n)]));
  return {
    upstream,
    env,
    apps,
    state: async () => (await admin(env.mf, `/admin/breakers/${name}`)).body,
    flushAll: () => Promise.all(apps.map(([, f]) => call(f, '/app/flush'))),
    close: async () => {
      await env.mf.dispose();
      await upstream.close();
    },
  };
}

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
  return answer(await mf.dispatchFetch(`http://breakwater${route}`, { method, headers }));
}

/** A response's status and body, parsed as JSON when it is JSON. */
export async function answer(resp) {
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

export const USER_WORKER = path.join(HERE, '.build/user-worker.mjs');
/** The same Worker with its SharedCircuitBreaker from breakwater/shared (apps/user-worker-shared.ts). */
export const USER_WORKER_SHARED = path.join(HERE, '.build/user-worker-shared.mjs');

/**
 * The Worker a JavaScript developer writes (apps/user-worker.ts, bundled by
 * scripts/test-worker.sh): BreakerObject from `breakwater/cloudflare` exported by the Worker
 * itself, a module-level SharedCircuitBreaker named `breaker` with `settings` (its `breaker`
 * option) and `leaseMs`, the routes under /breakwater. The Worker named `host` holds the
 * objects; the others bind to its class (`scriptName`). `bindings` adds vars and secrets
 * (ADMIN_TOKEN, SERVICE_TOKEN, BREAKERS, NAMES). `script`: the bundle (USER_WORKER_SHARED for
 * the clients from breakwater/shared).
 */
export function userWorker(name, { upstream = 'http://127.0.0.1:9/unused', breaker = 'anthropic', settings, leaseMs, host = 'host', bindings = {}, script = USER_WORKER } = {}) {
  const vars = { UPSTREAM: upstream, BREAKER_NAME: breaker, ...bindings };
  if (settings !== undefined) vars.SETTINGS = JSON.stringify(settings);
  if (leaseMs !== undefined) vars.LEASE_MS = String(leaseMs);
  const BREAKER = name === host ? { className: 'BreakerObject', useSQLite: true } : { className: 'BreakerObject', scriptName: host };
  return moduleWorker(name, script, { bindings: vars, durableObjects: { BREAKER } });
}

/** Calls `fn` every `everyMs` until it returns a truthy value (returned) or `deadlineMs` pass (then the last value). */
export async function until(fn, { deadlineMs = 5000, everyMs = 25 } = {}) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v || Date.now() - t0 > deadlineMs) return v;
    await sleep(everyMs);
  }
}

/**
 * Collects what the Workers print (console.log and console.error of every isolate and object):
 * pass `options` to `start` as its extra Miniflare options; `lines` fills as they come.
 */
export function captureLogs() {
  const lines = [];
  const collect = (stream) => {
    let rest = '';
    stream.on('data', (chunk) => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop();
      lines.push(...parts);
    });
  };
  return { lines, options: { handleRuntimeStdio: (stdout, stderr) => (collect(stdout), collect(stderr)) } };
}
