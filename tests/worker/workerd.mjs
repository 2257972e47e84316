// The Worker built into build/ (scripts/build-worker.sh), run locally in workerd through Miniflare:
// its worker definitions (the object's host and the Rust demo app guarding an upstream), the
// compatibility date of wrangler.toml, and the loopback server the fake upstreams listen on.
// Used by the Worker tests (harness.mjs) and the live demo (demo/live.mjs, demo/provider.mjs).
// Callers pass the breakers' settings (the BREAKERS var) as objects; this module serialises them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const WORKER_SCRIPT = path.join(ROOT, 'build/index.js');

// The local runs use the date the Worker is deployed with.
const wrangler = fs.readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
export const COMPAT_DATE = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(wrangler)?.[1];
if (!COMPAT_DATE) throw new Error('wrangler.toml has no compatibility_date');

/** Miniflare, from tests/worker's npm packages (installed by scripts/setup.sh worker). */
export async function loadMiniflare() {
  try {
    return (await import('miniflare')).Miniflare;
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new Error('miniflare is missing: run scripts/setup.sh worker (npm ci in tests/worker)');
  }
}

/**
 * An ES-module Worker from `scriptPath`, its .wasm imports compiled as modules, at COMPAT_DATE;
 * `rest` adds bindings, Durable Objects and the like.
 */
export function moduleWorker(name, scriptPath, rest = {}) {
  return {
    name,
    modules: true,
    scriptPath,
    modulesRoot: path.dirname(scriptPath),
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
    compatibilityDate: COMPAT_DATE,
    ...rest,
  };
}

/**
 * The Worker that hosts BreakerObject (named `breakwater`, as app Workers' bindings expect), with
 * `breakers` as its BREAKERS var and ADMIN_TOKEN unless `adminToken` is null.
 */
export function objectWorker({ breakers, adminToken }) {
  const bindings = { BREAKERS: JSON.stringify(breakers) };
  if (adminToken) bindings.ADMIN_TOKEN = adminToken;
  return moduleWorker('breakwater', WORKER_SCRIPT, {
    bindings,
    durableObjects: { BREAKER: { className: 'BreakerObject', useSQLite: true } },
  });
}

let demoChecked = false;
/** Fails fast unless build/ holds the Worker built with the demo app (/app/*, feature `demo`). */
export function requireDemoBuild() {
  if (demoChecked) return;
  const build = 'scripts/build-worker.sh --features worker,demo';
  const wasm = path.join(path.dirname(WORKER_SCRIPT), 'index_bg.wasm');
  if (!fs.existsSync(WORKER_SCRIPT) || !fs.existsSync(wasm)) throw new Error(`${WORKER_SCRIPT} is missing: ${build}`);
  if (!fs.readFileSync(wasm).includes('DEMO_UPSTREAM')) {
    throw new Error(`${WORKER_SCRIPT} was built without the demo app (/app/*): ${build}`);
  }
  demoChecked = true;
}

/**
 * A Rust app Worker: the Worker's demo app (/app/*) guarding calls to `upstream` with the breaker
 * named `breaker` (`mode` shared: through the object of `scriptName`; local: one per isolate).
 * With `backup` and `deadlineMs`, each call has that deadline and falls back to the backup.
 */
export function rustApp(name, { upstream, breaker, breakers, mode = 'shared', failClosed = false, backup, deadlineMs, scriptName = 'breakwater' }) {
  requireDemoBuild();
  const bindings = {
    BREAKERS: JSON.stringify(breakers),
    DEMO_UPSTREAM: upstream,
    DEMO_BREAKER: breaker,
    DEMO_MODE: mode,
    DEMO_FAIL_CLOSED: String(failClosed),
  };
  if (backup !== undefined) bindings.DEMO_BACKUP = backup;
  if (deadlineMs !== undefined) bindings.DEMO_DEADLINE_MS = String(deadlineMs);
  return moduleWorker(name, WORKER_SCRIPT, {
    bindings,
    durableObjects: { BREAKER: { className: 'BreakerObject', scriptName } },
  });
}

/**
 * Serves `server` (a node:http server) on a free port of 127.0.0.1 and returns `{ port, close }`.
 * `close()` also ends open connections, so a request held open (a stalled upstream) does not keep
 * the server from closing.
 */
export async function listenLocal(server) {
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: server.address().port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(() => r()));
    },
  };
}
