// `next start` of the example app on a free port of 127.0.0.1, for the e2e suites: waits until
// it answers, keeps its log, and stops its whole process group. With NEXT_E2E_MODE=dev it runs
// `next dev` (Turbopack, compiling each route on its first request) instead.
import path from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { freePort, until } from '../redis/helpers.mjs';

const app = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/nextjs');

/** Starts the built example with `env` added to this process's environment. */
export async function nextStart(env) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let log = '';
  const command = process.env.NEXT_E2E_MODE === 'dev' ? 'dev' : 'start';
  const proc = spawn(process.execPath, [path.join(app, 'node_modules/next/dist/bin/next'), command, '-H', '127.0.0.1', '-p', String(port)], {
    cwd: app,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...env },
  });
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));
  await until(async () => {
    if (proc.exitCode !== null) throw new Error(`next ${command} exited:\n${log}`);
    try {
      return (await fetch(`${base}/api/breaker`)).ok;
    } catch {
      return false;
    }
  });
  return {
    base,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      try {
        process.kill(-proc.pid, 'SIGTERM');
      } catch {}
      const t = setTimeout(() => {
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {}
      }, 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Headless Chromium (the system's, driven by the root's playwright-core), for the page tests. */
export async function launchChromium() {
  const { chromium } = createRequire(path.join(app, '../../package.json'))('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
}
