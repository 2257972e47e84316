// What an app imports (the entry, the JS layer, the wasm-bindgen glue, the .wasm), gzipped: the
// goal is 8 KB; the ceiling here is generous so that only real regressions fail. `breaker.stream`
// (the stream guard and its event-stream reader) took the main entry from 23.3 to 26.8 KB; the
// manual API (isOpen, tryAcquire...), per-attempt time-outs, option labels and class names that
// survive minification to 28.4 KB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

const CEILING = 30 * 1024;
const require = createRequire(import.meta.url);
const root = path.dirname(require.resolve('breakwater/package.json'));
const gz = (files) =>
  files.reduce((sum, f) => sum + zlib.gzipSync(fs.readFileSync(path.join(root, f)), { level: 9 }).length, 0);

const chains = {
  'edge-light (Vercel Edge)': ['dist/edge-light.mjs', 'dist/instantiate.mjs', 'dist/api.mjs', 'web/breakwater_bg.js', 'web/breakwater_bg.wasm'],
  'workerd': ['dist/workerd.mjs', 'dist/instantiate.mjs', 'dist/api.mjs', 'web/breakwater_bg.js', 'web/breakwater_bg.wasm'],
  'browser': ['dist/browser.mjs', 'dist/compile.mjs', 'dist/instantiate.mjs', 'dist/api.mjs', 'web/breakwater_bg.js', 'web/breakwater_bg.wasm'],
};

for (const [name, files] of Object.entries(chains)) {
  test(`gzip size of what ${name} imports stays under ${CEILING / 1024} KB`, (t) => {
    const total = gz(files);
    const wasm = gz(files.filter((f) => f.endsWith('.wasm')));
    t.diagnostic(`${name}: ${(total / 1024).toFixed(1)} KB gzip (wasm ${(wasm / 1024).toFixed(1)} KB, JS ${((total - wasm) / 1024).toFixed(1)} KB)`);
    assert.ok(total <= CEILING, `${total} bytes > ${CEILING}`);
  });
}

// The Node/Bun entries are one file each, with the .wasm inlined as base64 (what lets Next.js bundle
// them without serverExternalPackages); base64 costs a third more than the .wasm, gzipped. Nothing
// is downloaded on a server, so they get a ceiling of their own; and they must read no file.
const NODE_CEILING = 36 * 1024;
for (const file of ['dist/node.mjs', 'dist/node.cjs', 'dist/shared-node.mjs', 'dist/shared-node.cjs']) {
  test(`${file} reads no file at run time (bundlers that follow only imports carry everything)`, () => {
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    assert.doesNotMatch(source, /readFileSync|__dirname|import\.meta\.url|\.wasm['"]/);
  });
}
for (const file of ['dist/node.mjs', 'dist/node.cjs']) {
  test(`gzip size of ${file} (glue, JS and inlined wasm) stays under ${NODE_CEILING / 1024} KB`, (t) => {
    const total = gz([file]);
    t.diagnostic(`${file}: ${(total / 1024).toFixed(1)} KB gzip`);
    assert.ok(total <= NODE_CEILING, `${total} bytes > ${NODE_CEILING}`);
  });
}

// The shared breaker's entries bring a second wasm module (the core's coordinator and lease
// client, with the protocol's JSON) on top of the main entry they import.
const SHARED_CEILING = 160 * 1024;
const sharedChains = {
  'breakwater/shared (node, wasm inlined as base64)': ['dist/shared-node.mjs'],
  'breakwater/shared (workerd)': ['dist/shared-workerd.mjs', 'dist/instantiate-shared.mjs', 'dist/shared-api.mjs', 'web-shared/breakwater_shared_bg.js', 'web-shared/breakwater_shared_bg.wasm'],
  'breakwater/store (on top of breakwater/shared)': ['dist/store.mjs'],
};
for (const [name, files] of Object.entries(sharedChains)) {
  test(`gzip size of what ${name} adds stays under ${SHARED_CEILING / 1024} KB`, (t) => {
    const total = gz(files);
    const wasm = gz(files.filter((f) => f.endsWith('.wasm')));
    t.diagnostic(`${name}: ${(total / 1024).toFixed(1)} KB gzip (wasm ${(wasm / 1024).toFixed(1)} KB, JS ${((total - wasm) / 1024).toFixed(1)} KB)`);
    assert.ok(total <= SHARED_CEILING, `${total} bytes > ${SHARED_CEILING}`);
  });
}

// breakwater/ai imports the main entry as `breakwater`: it adds its own JS and no wasm.
const AI_CEILING = 6 * 1024;
test(`gzip size of what breakwater/ai adds stays under ${AI_CEILING / 1024} KB, with no wasm of its own`, (t) => {
  const esm = gz(['dist/ai.mjs']);
  t.diagnostic(`breakwater/ai: ${(esm / 1024).toFixed(1)} KB gzip (ESM), ${(gz(['dist/ai.cjs']) / 1024).toFixed(1)} KB (CJS)`);
  assert.ok(esm <= AI_CEILING, `${esm} bytes > ${AI_CEILING}`);
  const source = fs.readFileSync(path.join(root, 'dist/ai.mjs'), 'utf8');
  assert.match(source, /from"breakwater"/, 'the runtime comes from the main entry');
  assert.doesNotMatch(source, /WebAssembly|\.wasm/, 'no second copy of the core');
});
