// Scaffolding of the Redis store tests: a redis-server of our own on 127.0.0.1 (for the tests
// that kill it), a fake upstream, and child Node processes (worker.mjs) driven over IPC.
import { spawn, fork } from 'node:child_process';
import { before, after } from 'node:test';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function freePort() {
  const s = net.createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Polls `check` until it returns a truthy value, for at most `timeoutMs`: then it fails, naming
 * `what` (a string, or a function saying what it saw), where a test timing out would say nothing.
 */
export async function until(check, what, everyMs = 20, timeoutMs = 60_000) {
  const describe = () => (typeof what === 'function' ? what() : what ?? 'a condition');
  const deadline = Date.now() + timeoutMs;
  for (let n = 0; ; n++) {
    if (process.env.BW_DEBUG && n % 100 === 99) console.error('[until] still waiting', describe());
    const v = await check();
    if (v) return v;
    // A test that waits forever says nothing: fail with what was awaited, and what was seen.
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${describe()}`);
    await sleep(everyMs);
  }
}

/** The port the test command's redis-server listens on (scripts/test-redis.sh sets REDIS_PORT). */
export function redisUrl() {
  const port = process.env.REDIS_PORT;
  if (!port) throw new Error('REDIS_PORT is not set: run scripts/test-redis.sh');
  return `redis://127.0.0.1:${port}`;
}

/**
 * A redis-server of the test's own, on 127.0.0.1. With `aof`, every write is on disk before it is
 * acknowledged (appendfsync always), so a SIGKILL loses nothing acknowledged.
 */
export async function startRedis({ port, dir, aof = false } = {}) {
  port ??= await freePort();
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'bw-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--daemonize', 'no'];
  if (aof) args.push('--appendonly', 'yes', '--appendfsync', 'always');
  const proc = spawn(process.env.REDIS_SERVER ?? 'redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`redis-server exited: ${out}`);
    return /Ready to accept connections/.test(out);
  }, 'redis-server ready');
  return {
    port,
    dir,
    url: `redis://127.0.0.1:${port}`,
    proc,
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill(signal);
      await once(proc, 'exit');
    },
  };
}

/**
 * A fake upstream on 127.0.0.1. `mode`: 'up' (200), 'down' (503), 'hold' (200, but each answer
 * waits for `release()`), 'degraded' (529 to four requests in five, in turn). Counts every
 * request it receives.
 */
export async function startUpstream() {
  const u = {
    mode: 'up',
    requests: 0,
    held: [],
    release() {
      const h = u.held;
      u.held = [];
      for (const res of h) res.end('ok');
    },
  };
  const server = http.createServer((req, res) => {
    u.requests += 1;
    if (u.mode === 'down') {
      res.statusCode = 503;
      res.end('down');
    } else if (u.mode === 'degraded' && u.requests % 5 !== 0) {
      res.statusCode = 529;
      res.end('overloaded');
    } else if (u.mode === 'hold') {
      u.held.push(res);
    } else {
      res.end('ok');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  u.url = `http://127.0.0.1:${server.address().port}/`;
  u.close = async () => {
    u.release();
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  };
  return u;
}

/**
 * `n` child processes running worker.mjs; `ask(i, msg)` sends a command and awaits its answer.
 * `init` is the init command's fields, or a function of the process's index giving them.
 */
export async function startWorkers(n, init) {
  const procs = [];
  const pending = new Map();
  const events = [];
  let nextId = 1;
  for (let i = 0; i < n; i++) {
    const child = fork(path.join(here, 'worker.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (m) => {
      if (m.event) {
        events.push({ worker: i, ...m.event });
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(`worker ${i}: ${m.error}`));
      else p.resolve(m.result);
    });
    // A process that dies fails what was asked of it, rather than leave the test waiting.
    child.on('exit', (code, signal) => {
      for (const [id, p] of pending) {
        if (p.worker !== i) continue;
        pending.delete(id);
        p.reject(new Error(`worker ${i} exited (${signal ?? code}) before answering ${p.cmd}`));
      }
    });
    procs.push(child);
  }
  // Every command answers within ASK_MS, or fails naming the process and the command.
  const ASK_MS = 30_000;
  const ask = (i, msg) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`worker ${i} did not answer ${msg.cmd} within ${ASK_MS} ms`));
      }, ASK_MS);
      const done = (f) => (v) => {
        clearTimeout(timer);
        f(v);
      };
      pending.set(id, { worker: i, cmd: msg.cmd, resolve: done(resolve), reject: done(reject) });
      if (procs[i].exitCode !== null || procs[i].signalCode !== null) {
        pending.delete(id);
        done(reject)(new Error(`worker ${i} has exited; cannot ask ${msg.cmd}`));
        return;
      }
      procs[i].send({ ...msg, id });
    });
  const all = (msg) => Promise.all(procs.map((_, i) => ask(i, typeof msg === 'function' ? msg(i) : msg)));
  await all((i) => ({ cmd: 'init', ...(typeof init === 'function' ? init(i) : init), clientId: `w${i}` }));
  return {
    procs,
    events,
    ask,
    all,
    async stop() {
      await Promise.all(
        procs.map(async (c) => {
          if (c.exitCode !== null || c.signalCode !== null) return;
          c.kill('SIGKILL');
          await once(c, 'exit');
        }),
      );
    },
  };
}

/** A node-redis client connected to the test command's redis-server (errors are the tests' to see). */
export async function connectRedis() {
  const { createClient } = await import('redis');
  const client = createClient({ url: redisUrl() });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/**
 * Connects to the test command's redis-server before the file's tests and closes after them;
 * `set` receives the client.
 */
export function useRedis(set) {
  let client;
  before(async () => {
    client = await connectRedis();
    set(client);
  });
  after(async () => {
    await client?.close?.();
  });
}

/** A call that succeeds. */
export const ok = () => 'ok';

/** A call that fails as an upstream answering `status` does. */
export const failsWith = (status) => () => {
  throw Object.assign(new Error(`upstream ${status}`), { status });
};

/** Breaker names unique to this process and call: `what-<pid>-<n>`. */
export function namer() {
  let n = 0;
  return (what) => `${what}-${process.pid}-${++n}`;
}
