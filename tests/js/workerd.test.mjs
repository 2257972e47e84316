// workerd through Miniflare: the package's `workerd` entry statically imports the .wasm (a
// CompiledWasm module). The worker is bundled with esbuild under the workerd conditions, as
// wrangler does, and the .wasm travels next to it as its own module.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { checkAdaptive } from './adaptive-case.mjs';
import { checkSeed000, checkSeed000Local } from './seed000-case.mjs';
import http from 'node:http';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { anthropic } from '../../js/src/cli/formats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
let upstream;
let hits = 0;
let mf;
before(async () => {
  upstream = http.createServer((req, res) => {
    hits++;
    res.writeHead(529, { 'content-type': 'application/json' });
    res.end(JSON.stringify(anthropic.error(529))); // an overloaded_error, as js/src/cli/formats.mjs spells it
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
});
after(async () => {
  await mf?.dispose();
  await new Promise((r) => { upstream.closeAllConnections?.(); upstream.close(r); });
});

test('the workerd entry runs in a Worker under workerd', async () => {
  // Each .wasm the bundle imports (the main module, breakwater/adaptive's) travels as a module of
  // its own, by its file name.
  const wasmFiles = new Map();
  const out = await build({
    entryPoints: [path.join(here, 'workerd/worker.mjs')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    logLevel: 'silent',
    external: ['cloudflare:workers'],
    plugins: [
      {
        name: 'wasm-modules',
        setup(b) {
          b.onResolve({ filter: /\.wasm$/ }, (args) => {
            const name = path.basename(args.path);
            wasmFiles.set(name, path.join(args.resolveDir, args.path));
            return { path: `./${name}`, external: true };
          });
        },
      },
    ],
  });
  assert.deepEqual(
    [...wasmFiles.keys()].sort(),
    ['breakwater_adaptive_bg.wasm', 'breakwater_bg.wasm', 'breakwater_coordinator_bg.wasm'],
    'the workerd entries import their .wasm statically',
  );
  mf = new Miniflare({
    host: '127.0.0.1',
    port: 0,
    compatibilityDate: '2026-04-01',
    modules: [
      { type: 'ESModule', path: 'worker.mjs', contents: out.outputFiles[0].text },
      ...(await Promise.all([...wasmFiles].map(async ([name, file]) => ({ type: 'CompiledWasm', path: name, contents: await fs.readFile(file) })))),
    ],
    bindings: { UPSTREAM: `http://127.0.0.1:${upstream.address().port}/v1/messages` },
    durableObjects: { BREAKER: { className: 'BreakerObject', useSQLite: true } },
  });
  const answers = [];
  for (let i = 0; i < 3; i++) {
    const res = await mf.dispatchFetch('http://worker.test/chat?provider=anthropic');
    answers.push([res.status, await res.json()]);
  }
  assert.deepEqual(answers[0], [200, { state: 'CLOSED', upstreamStatus: 529 }]);
  assert.deepEqual(answers[1], [200, { state: 'OPEN', upstreamStatus: 529 }]);
  assert.deepEqual(answers[2], [503, { state: 'OPEN', fallback: true }]);
  assert.equal(hits, 2);
  const other = await mf.dispatchFetch('http://worker.test/chat?provider=openai');
  assert.equal((await other.json()).state, 'CLOSED', 'one breaker per name');
  const snap = await (await mf.dispatchFetch('http://worker.test/snapshot')).json();
  assert.deepEqual(Object.keys(snap).sort(), ['anthropic', 'openai']);
  assert.equal(snap.anthropic.state, 'OPEN');
});

test('breaker.stream under workerd: a whole answer is a success, a cut one ends with the contingency and fails', async () => {
  assert.ok(mf, 'the worker of the first test is running');
  const get = async (p) => (await mf.dispatchFetch(`http://worker.test${p}`)).json();
  assert.deepEqual(await get('/stream'), { text: 'Hello', successes: 1, failures: 0 });
  // A success that brings a count window to its minimum opens the breaker for the whole period.
  assert.deepEqual(await get('/count-trip'), { state: 'OPEN', openFor: 30_000, refused: true, failuresToOpen: 5, successes: 100, failures: 5 });
  // breakwater/adaptive: its module loaded by a static .wasm import, beside the main one.
  checkAdaptive(await get('/adaptive'), assert);
  // Seed 000's synchronous pattern on a shared breaker held by a Durable Object, in workerd.
  checkSeed000(await get('/seed000'), assert);
  checkSeed000Local(await get('/seed000-local'), assert);
  assert.deepEqual(await get('/stream?cut'), { text: 'Hello [interrupted]', successes: 1, failures: 1 });
  const before = hits;
  assert.deepEqual(await get('/stream-upstream'), { name: 'StreamError', status: 529, failures: 2 });
  assert.equal(hits, before + 1);
});
