// Vercel's edge runtime (the `edge-runtime` npm package): code generation from bytes is refused,
// as on Vercel Edge, so the package's `edge-light` entry must import the .wasm as a module. The
// route is bundled with esbuild under the edge conditions; the `?module` import becomes a
// WebAssembly.Module compiled outside the sandbox (another realm), as Next.js does.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { checkAdaptive } from './adaptive-case.mjs';
import { checkSeed000, checkSeed000Local } from './seed000-case.mjs';
import http from 'node:http';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { EdgeRuntime } from 'edge-runtime';

const here = path.dirname(fileURLToPath(import.meta.url));
let upstream;
let hits = 0;
before(async () => {
  upstream = http.createServer((req, res) => {
    hits++;
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('overloaded');
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
});
after(() => new Promise((r) => { upstream.closeAllConnections?.(); upstream.close(r); }));

async function bundle() {
  const wasmAsModule = {
    name: 'wasm-as-module',
    setup(b) {
      b.onResolve({ filter: /\.wasm\?module$/ }, (args) => ({
        path: path.join(args.resolveDir, args.path.replace(/\?module$/, '')),
        namespace: 'wasm-module',
      }));
      // Each .wasm (the main module, breakwater/adaptive's) as the module the sandbox was given.
      b.onLoad({ filter: /.*/, namespace: 'wasm-module' }, (args) => ({
        contents: `export default globalThis.__wasm_breakwater[${JSON.stringify(path.basename(args.path))}];`,
        loader: 'js',
      }));
    },
  };
  const out = await build({
    entryPoints: [path.join(here, 'edge/route.mjs')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'neutral',
    conditions: ['edge-light', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    logLevel: 'silent',
    plugins: [wasmAsModule],
  });
  const code = out.outputFiles[0].text;
  assert.match(code, /edge-light/, 'the edge-light entry was chosen');
  return code;
}

test('the edge-light entry runs a route handler in the edge runtime', async () => {
  const code = await bundle();
  const require = createRequire(import.meta.url);
  const root = path.dirname(require.resolve('breakwater/package.json'));
  const compiled = async (file) => new WebAssembly.Module(await fs.readFile(path.join(root, file)));
  const modules = {
    'breakwater_bg.wasm': await compiled('web/breakwater_bg.wasm'),
    'breakwater_adaptive_bg.wasm': await compiled('web-adaptive/breakwater_adaptive_bg.wasm'),
    'breakwater_coordinator_bg.wasm': await compiled('web-coordinator/breakwater_coordinator_bg.wasm'),
    'breakwater_shared_bg.wasm': await compiled('web-shared/breakwater_shared_bg.wasm'),
  };
  const runtime = new EdgeRuntime({
    codeGeneration: { strings: false, wasm: false },
    extend: (context) => Object.assign(context, { __wasm_breakwater: modules }),
  });
  // Like Vercel Edge: no compiling wasm from bytes inside the sandbox.
  await assert.rejects(runtime.evaluate('WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))'), /disallowed/);
  runtime.evaluate(code);
  const url = `http://edge.test/api/chat?upstream=${encodeURIComponent(`http://127.0.0.1:${upstream.address().port}/v1`)}`;
  const answers = [];
  for (let i = 0; i < 3; i++) {
    const res = await runtime.dispatchFetch(url);
    answers.push([res.status, await res.json()]);
  }
  assert.deepEqual(answers[0], [200, { state: 'CLOSED', upstreamStatus: 503 }]);
  assert.deepEqual(answers[1], [200, { state: 'OPEN', upstreamStatus: 503 }]);
  assert.equal(answers[2][0], 503);
  assert.equal(answers[2][1].fallback, true);
  assert.ok(answers[2][1].retryAfterMs > 0 && answers[2][1].retryAfterMs <= 60_000);
  assert.equal(hits, 4, 'two requests × two attempts reached the upstream; the third request none');
  const streamed = async (q) => (await runtime.dispatchFetch(`http://edge.test/api/stream${q}`)).json();
  assert.deepEqual(await streamed(''), { text: 'Hello', successes: 1, failures: 0 });
  assert.deepEqual(await streamed('?cut'), { text: 'Hello [interrupted]', successes: 1, failures: 1 });
  const trip = await (await runtime.dispatchFetch('http://edge.test/api/count-trip')).json();
  assert.deepEqual(trip, { state: 'OPEN', openFor: 30_000, refused: true, failuresToOpen: 5, successes: 100, failures: 5 });
  // breakwater/adaptive: its module imported with `?module`, beside the main one.
  checkAdaptive(await (await runtime.dispatchFetch('http://edge.test/api/adaptive')).json(), assert);
  // Seed 000's synchronous pattern on a store-backed shared breaker, in the edge runtime.
  checkSeed000(await (await runtime.dispatchFetch('http://edge.test/api/seed000')).json(), assert);
  // And on a local breaker, and a service-backed shared one.
  const others = await (await runtime.dispatchFetch('http://edge.test/api/seed000-others')).json();
  checkSeed000Local(others.local, assert);
  checkSeed000(others.service, assert);
});
