// The shared breaker under real `wrangler dev` (tests/worker's pinned wrangler, local mode), set
// up as a user sets it up: wrangler.toml files written into temporary directories, wrangler
// bundling the Workers' TypeScript sources and node_modules/breakwater itself (workerd condition,
// the .wasm imports by wrangler's default CompiledWasm rule: no `rules` needed).
//
//   1. One process: the user's Worker (apps/user-worker.ts) hosts BreakerObject itself; a second
//      process runs the same Worker as a client of the first one's object (`script_name`).
//   2. Two processes: a tiny Worker that only exports BreakerObject, and the user's Worker bound
//      to it with `script_name`. wrangler's dev registry addresses the object by
//      `id.toString()`, so the object's `ctx.id.name` is undefined: the object takes the name
//      from the clients' `?breaker=`.
//   3. Two processes with the Rust object: breakwater's Rust Worker (build/index.js, as built,
//      without a [build] step) hosts BreakerObject, apps/js-app.ts is the client. Before the
//      object read `?breaker=` it answered this set-up `object has no name` and every client
//      decided on its local breaker. RUST_WORKER_SCRIPT=<path to index.js> runs it against
//      another build (e.g. one of an earlier commit).
//
// Each drives the app over HTTP against a fake upstream on 127.0.0.1: an outage opens the shared
// breaker (the apps' /app/stats say OPEN with `fallback: false`: the object answered, not a
// local fallback), an app that saw no failure is refused without calling the upstream, the
// object's own view says OPEN, and the breaker closes again after the upstream recovers.
// Every process listens on 127.0.0.1 and is stopped by process group when its test ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { answer, startUpstream, tmpDir, sleep, COMPAT_DATE, ADMIN_TOKEN } from './harness.mjs';
import { WORKER_SCRIPT } from './workerd.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WRANGLER = path.join(HERE, 'node_modules/.bin/wrangler');
const USER_WORKER = path.join(HERE, 'apps/user-worker.ts');
const JS_APP = path.join(HERE, 'apps/js-app.ts');
const RUST_WORKER = path.resolve(process.env.RUST_WORKER_SCRIPT || WORKER_SCRIPT);

const THRESHOLD = 3;
const OPEN_MS = 2000;
const LEASE_MS = 1000;
/** The `breaker` option of the JavaScript clients (breakwater/shared). */
const SETTINGS = { failureThreshold: THRESHOLD, resetTimeout: OPEN_MS };
/** The same breaker in the Rust Worker's BREAKERS format. */
const rustBreakers = (name) => ({
  [name]: { lease_ms: LEASE_MS, breaker: { trip: { kind: 'consecutive_failures', threshold: THRESHOLD }, open_duration_ms: OPEN_MS } },
});

// One registry and one temporary directory for every process of this file: the dev registry
// (where `script_name` finds the other process) lives under XDG_CONFIG_HOME.
const base = tmpDir('wrangler-dev-');
const xdg = path.join(base, 'xdg');
const tmp = path.join(base, 'tmp');
fs.mkdirSync(xdg, { recursive: true });
fs.mkdirSync(tmp, { recursive: true });
const WRANGLER_ENV = {
  ...process.env,
  XDG_CONFIG_HOME: xdg,
  // Explicitly the same place (a legacy ~/.wrangler would otherwise win over XDG_CONFIG_HOME).
  WRANGLER_REGISTRY_PATH: path.join(xdg, '.wrangler/registry'),
  TMPDIR: tmp,
  WRANGLER_SEND_METRICS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
};

const timings = [];
let upstream;
after(async () => {
  await upstream?.close();
  for (const t of timings) console.log(`# wrangler dev: ${t}`);
});

/** A port free on 127.0.0.1 right now (listen on 0, close). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** TOML for a string (a JSON string is a TOML basic string). */
const str = (s) => JSON.stringify(String(s));

/** A wrangler.toml: `vars` as strings; `object` hosts BreakerObject here, `scriptName` binds another's. */
function wranglerToml({ name, main, vars = {}, object = false, scriptName }) {
  const lines = [`name = ${str(name)}`, `main = ${str(main)}`, `compatibility_date = ${str(COMPAT_DATE)}`, ''];
  lines.push('[[durable_objects.bindings]]', 'name = "BREAKER"', 'class_name = "BreakerObject"');
  if (scriptName) lines.push(`script_name = ${str(scriptName)}`);
  lines.push('');
  if (object) lines.push('[[migrations]]', 'tag = "v1"', 'new_sqlite_classes = ["BreakerObject"]', '');
  if (Object.keys(vars).length > 0) {
    lines.push('[vars]');
    for (const [k, v] of Object.entries(vars)) lines.push(`${k} = ${str(typeof v === 'string' ? v : JSON.stringify(v))}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Starts `wrangler dev` for `config` in a directory of its own (under tests/worker/.tmp, so that
 * `breakwater` resolves from tests/worker/node_modules as in a user's project), registers its
 * stop with `t.after`, and resolves once it answers HTTP.
 */
async function wranglerDev(t, config, { files = {}, deadlineMs = 60_000 } = {}) {
  const dir = path.join(base, config.name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'wrangler.toml'), wranglerToml(config));
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), text);
  const port = await freePort();
  const inspector = await freePort();
  const t0 = performance.now();
  const child = spawn(
    WRANGLER,
    ['dev', '--local', '--ip', '127.0.0.1', '--port', String(port), '--inspector-ip', '127.0.0.1', '--inspector-port', String(inspector), '--show-interactive-dev-session=false'],
    { cwd: dir, env: WRANGLER_ENV, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const group = (sig) => {
      try {
        process.kill(-child.pid, sig);
      } catch {}
    };
    group('SIGTERM');
    const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
    // wrangler's own children (workerd, esbuild) are in its group: make sure none stays.
    group('SIGKILL');
    if (!done) await Promise.race([exited, sleep(2000)]);
  };
  t.after(stop);
  const url = `http://127.0.0.1:${port}`;
  const proc = { name: config.name, url, port, dir, log: () => log, stop };
  let gone = null;
  exited.then((e) => (gone = e));
  while (true) {
    if (gone) throw new Error(`wrangler dev ${config.name} exited (${JSON.stringify(gone)}):\n${log}`);
    if (performance.now() - t0 > deadlineMs) throw new Error(`wrangler dev ${config.name} not up within ${deadlineMs} ms:\n${log}`);
    if (/Ready on http/.test(log)) {
      try {
        await (await fetch(`${url}/`, { signal: AbortSignal.timeout(2000) })).arrayBuffer();
        break;
      } catch {}
    }
    await sleep(100);
  }
  proc.readyMs = performance.now() - t0;
  timings.push(`${config.name} ready in ${(proc.readyMs / 1000).toFixed(1)} s`);
  return proc;
}

/** A request to a process; the body parsed as JSON when it is JSON. */
async function req(proc, route, { method = 'GET', headers = {} } = {}) {
  return answer(await fetch(`${proc.url}${route}`, { method, headers, signal: AbortSignal.timeout(10_000) }));
}

const call = (app) => req(app, '/app/call', { method: 'POST' });
const stats = async (app) => (await req(app, '/app/stats')).body;

/**
 * Waits until `app` reaches the object (through the dev registry when it is in another process):
 * an operation the objects do not know is answered by the object itself (404 `unknown
 * operation`) and touches no breaker.
 */
async function untilObjectAnswers(app, deadlineMs = 30_000) {
  const t0 = performance.now();
  let last;
  while (performance.now() - t0 < deadlineMs) {
    try {
      last = await req(app, '/raw?op=not-an-operation', { method: 'POST' });
      if (last.status === 404 && last.body?.message === 'unknown operation') {
        const ms = performance.now() - t0;
        timings.push(`${app.name} reached the object in ${(ms / 1000).toFixed(1)} s`);
        return;
      }
    } catch (e) {
      last = String(e);
    }
    await sleep(200);
  }
  throw new Error(`${app.name} never reached the object: ${JSON.stringify(last)}\n${app.log()}`);
}

function assertShared(r, what) {
  assert.equal(r.body.fallback, false, `${what}: decided on the local breaker, not the object: ${JSON.stringify(r.body)}`);
}

/**
 * The scenario every set-up runs: `apps[0]` meets the outage; the others, which saw no failure,
 * are refused as soon as their lease ends; `objectView()` (the object's own view) says OPEN; the
 * upstream recovers and every app closes.
 */
async function outageAndRecovery(apps, objectView) {
  upstream.state.mode = 'up';
  for (const app of apps) {
    const r = await call(app);
    assert.equal(r.status, 200, `${app.name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.result, 'ok', `${app.name}: ${JSON.stringify(r.body)}`);
    assertShared(r, app.name);
  }
  const healthyAt = performance.now();

  // The outage: the first app's failures open the shared breaker. A failure is reported at once
  // but after the answer (waitUntil), and calls admitted under the CLOSED lease meanwhile reach
  // the upstream too; /app/flush after each failure waits for its report, so that exactly
  // THRESHOLD failures open it whatever the registry's latency.
  upstream.state.mode = 'down';
  const [first, ...others] = apps;
  let failed = 0;
  let r;
  for (let i = 0; i < THRESHOLD + 2; i++) {
    r = await call(first);
    assertShared(r, `${first.name} during the outage`);
    if (r.body.result === 'rejected') break;
    assert.equal(r.body.result, 'failed', JSON.stringify(r.body));
    failed += 1;
    assertShared({ body: (await req(first, '/app/flush', { method: 'POST' })).body }, `${first.name} flushing`);
  }
  assert.equal(r.body.result, 'rejected', `${first.name} never refused: ${JSON.stringify(r.body)}`);
  assert.equal(failed, THRESHOLD, `${failed} failures before the first refusal`);
  let s = await stats(first);
  assert.equal(s.state, 'OPEN', JSON.stringify(s));
  assert.equal(s.fallback, false, JSON.stringify(s));

  // Shared: the others saw no failure, yet once their CLOSED lease ends they are refused without
  // calling the upstream.
  await sleep(Math.max(0, LEASE_MS + 200 - (performance.now() - healthyAt)));
  for (const app of others) {
    const before = upstream.state.count;
    r = await call(app);
    assertShared(r, app.name);
    assert.equal(r.body.result, 'rejected', `${app.name}: ${JSON.stringify(r.body)}`);
    assert.equal(upstream.state.count, before, `${app.name} called the upstream while the shared breaker was OPEN`);
    s = await stats(app);
    assert.equal(s.state, 'OPEN', JSON.stringify(s));
    assert.equal(s.fallback, false, JSON.stringify(s));
  }
  const view = await objectView();
  assert.equal(view.lease.state, 'OPEN', JSON.stringify(view));
  assert.ok(view.stats.failures >= THRESHOLD, JSON.stringify(view.stats));

  // Recovery: after the open period one probe succeeds and the breaker closes for everyone.
  upstream.state.mode = 'up';
  for (const app of apps) {
    const t0 = performance.now();
    while (true) {
      r = await call(app);
      assertShared(r, `${app.name} during recovery`);
      if (r.body.result === 'ok' && r.body.state === 'CLOSED') break;
      assert.ok(performance.now() - t0 < OPEN_MS + 10_000, `${app.name} did not close: ${JSON.stringify(r.body)}`);
      await sleep(100);
    }
    s = await stats(app);
    assert.equal(s.state, 'CLOSED', JSON.stringify(s));
    assert.equal(s.fallback, false, JSON.stringify(s));
  }
  assert.equal((await objectView()).lease.state, 'CLOSED');
}

/** Runs `fn`; a failure carries the end of each process's log (the objects' and clients' own words). */
async function withLogs(procs, fn) {
  try {
    return await fn();
  } catch (e) {
    const tails = procs.map((p) => `--- ${p.name} (wrangler dev) ---\n${p.log().split('\n').slice(-25).join('\n')}`);
    throw new Error(`${e.message}\n${tails.join('\n')}`, { cause: e });
  }
}

const userVars = (name) => ({ UPSTREAM: upstream.url, BREAKER_NAME: name, SETTINGS, LEASE_MS: String(LEASE_MS) });

test('one wrangler dev: the user Worker exports BreakerObject itself and shares it with a second process', async (t) => {
  upstream ??= await startUpstream();
  const name = 'anthropic';
  const host = await wranglerDev(t, { name: 'user-app', main: USER_WORKER, object: true, vars: userVars(name) });
  const peer = await wranglerDev(t, { name: 'user-app-peer', main: USER_WORKER, scriptName: 'user-app', vars: userVars(name) });
  // wrangler bundled the package itself, by the workerd condition, with two .wasm modules: the
  // main one and the coordinator's, which serves the object and the app's SharedCircuitBreaker
  // (from breakwater/cloudflare); not the lease client's own.
  const bundle = fs.readdirSync(path.join(host.dir, '.wrangler/tmp'), { recursive: true }).map(String);
  assert.ok(!bundle.some((f) => f.endsWith('breakwater_shared_bg.wasm')), bundle.join(' '));
  assert.ok(bundle.some((f) => f.endsWith('breakwater_coordinator_bg.wasm')), bundle.join(' '));
  assert.ok(bundle.some((f) => f.endsWith('breakwater_bg.wasm')), bundle.join(' '));
  const js = bundle.find((f) => f.endsWith('user-worker.js'));
  assert.ok(js, bundle.join(' '));
  const source = fs.readFileSync(path.join(host.dir, '.wrangler/tmp', js), 'utf8');
  assert.match(source, /node_modules\/breakwater\/dist\/coordinator-workerd\.mjs/);
  assert.doesNotMatch(source, /node_modules\/breakwater\/dist\/shared-workerd\.mjs/);

  await untilObjectAnswers(host);
  await untilObjectAnswers(peer);
  // In its own process the object's id carries the name: a request without ?breaker= is served.
  const own = await req(host, '/raw?op=state');
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal(own.body.name, name);

  await withLogs([host, peer], () => outageAndRecovery([host, peer], async () => (await req(host, '/raw?op=state')).body));
});

test('two wrangler dev: an object-only Worker exporting BreakerObject, the app bound with script_name (ctx.id.name undefined)', async (t) => {
  upstream ??= await startUpstream();
  const name = 'anthropic';
  const files = {
    'index.js': "export { BreakerObject } from 'breakwater/cloudflare';\nexport default { fetch() { return new Response('object host'); } };\n",
  };
  const hostConfig = { name: 'breaker-host', main: 'index.js', object: true };
  const [host, app] = await Promise.all([
    wranglerDev(t, hostConfig, { files }),
    // BREAKERS here only lists the names the app's admin routes serve: the object, in the other
    // process, does not see it and runs the settings the clients send.
    wranglerDev(t, {
      name: 'breaker-app',
      main: USER_WORKER,
      scriptName: 'breaker-host',
      vars: { ...userVars(name), ADMIN_TOKEN, BREAKERS: { [name]: {} } },
    }),
  ]);
  assert.equal(await (await fetch(`${host.url}/`)).text(), 'object host');
  await untilObjectAnswers(app);

  // The condition this set-up exists for: the object's id, reached through the dev registry,
  // has no name; a request that does not name its breaker cannot be served.
  const unnamed = await req(app, '/raw?op=state');
  assert.equal(unnamed.status, 404, JSON.stringify(unnamed.body));
  assert.match(unnamed.body.message, /^object has no name/);
  // Named, the same object answers.
  const named = await req(app, `/raw?op=state&query=${encodeURIComponent(`?breaker=${name}`)}`);
  assert.equal(named.status, 200, JSON.stringify(named.body));
  assert.equal(named.body.name, name);

  const admin = async () => {
    const r = await req(app, `/breakwater/admin/breakers/${name}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  await withLogs([host, app], () => outageAndRecovery([app], admin));
  // The clients' settings reached the object: 3 failures opened it.
  const view = await admin();
  assert.equal(view.stats.opened, 1);

  // The object's Worker restarts (its storage kept in .wrangler/state): the object is cold when
  // the admin route's reset, which carries no settings, reaches it. It keeps the settings its
  // record runs (the clients'), not the defaults.
  await host.stop();
  const again = await wranglerDev(t, hostConfig, { files });
  await untilObjectAnswers(app);
  const reset = await req(app, `/breakwater/admin/breakers/${name}/reset`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(reset.status, 200, JSON.stringify(reset.body));
  assert.equal(reset.body.options, view.options, `a cold reset changed the settings: ${JSON.stringify(reset.body)}\n${again.log()}`);
  assert.equal(reset.body.options_mismatch, null, JSON.stringify(reset.body));
  assert.equal(reset.body.stats.opened, 1, 'the record was not restored');
});

test('two wrangler dev: the Rust Worker (build/index.js) hosts BreakerObject, a JavaScript app is bound with script_name', async (t) => {
  upstream ??= await startUpstream();
  assert.ok(fs.existsSync(RUST_WORKER), `${RUST_WORKER} is missing: scripts/build-worker.sh --features worker,demo`);
  const name = 'llm';
  const [host, app] = await Promise.all([
    // The Worker as built (no [build] step: `main` is the built script).
    wranglerDev(t, { name: 'breakwater-rust', main: RUST_WORKER, object: true, vars: { BREAKERS: rustBreakers(name), ADMIN_TOKEN } }),
    wranglerDev(t, { name: 'rust-client-app', main: JS_APP, scriptName: 'breakwater-rust', vars: { UPSTREAM: upstream.url, BREAKER_NAME: name, MODE: 'shared' } }),
  ]);
  await untilObjectAnswers(app);

  // js-app's /raw does not name the breaker: the Rust object says its id has no name, which is
  // all an object that read only ctx.id.name could ever answer in this set-up.
  const unnamed = await req(app, '/raw?op=state');
  assert.equal(unnamed.status, 404, JSON.stringify(unnamed.body));
  assert.match(unnamed.body.message, /^object has no name/);

  const admin = async () => {
    const r = await req(host, `/admin/breakers/${name}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  await withLogs([host, app], () => outageAndRecovery([app], admin));
  const s = await stats(app);
  assert.ok(!s.events.includes('local'), JSON.stringify(s.events));
});
