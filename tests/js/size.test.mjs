// What an app downloads for `import { CircuitBreaker, withRetry } from 'breakwater'`, gzipped
// (-9): the app is bundled with esbuild (minified, code splitting on) under each runtime's
// resolve conditions, and the JavaScript it loads at start (the entry and its static imports:
// the package's layer and the wasm-bindgen glue) is added to the .wasm it instantiates. The lazy
// chunk of the stream guard, fetched on the first `stream()` call, is reported apart.
//
// Each ceiling is the size reached when it was set plus 10 %: a regression fails, noise does not.
// Sizes at the time (KB): browser 20.7, workerd 20.4, edge-light 20.5 (wasm 12.4, JS 8.0–8.3);
// with the providers' codes and finish reasons read by the core, browser 21.4, workerd and
// edge-light 21.1 (wasm 12.7, JS 8.4–8.7); stream() +3.6 (its guard 3.3, the error-body reader
// 0.3); the Node entries 29.6 (ESM) and 29.9 (CJS); on top of the main entry, breakwater/shared
// 153.3 (node) and 116.7 (workerd), /store 2.0, /ai 2.6 (with the endings and the contingency
// block), /prometheus 1.9, /otel 1.3. With BreakerObject's needs in the shared module (BREAKERS read
// by the core's parser, the admin routes' addressing, the objects' Prometheus text: 8.6 KB of its
// wasm), breakwater/shared 163.4 (node) and 124.9 (workerd), their ceilings +5 % as before;
// /cloudflare (the object and the routes, on top of /shared) 2.9. With the protocol's JSON read
// and written by the core (src/shared/json.rs: no serde, no serde_json; floats converted by the
// JavaScript host) and the shared module built with LTO, breakwater/shared 73.7 (node) and 58.0
// (workerd: wasm 52.0, JS 6.0), their ceilings +5 %.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { build } from 'esbuild';

const require = createRequire(import.meta.url);
const root = path.dirname(require.resolve('breakwater/package.json'));
const gzip = (bytes) => zlib.gzipSync(bytes, { level: 9 }).length;
const gz = (files) => files.reduce((sum, f) => sum + gzip(fs.readFileSync(path.join(root, f))), 0);
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

/**
 * Bundles an app importing `names` from `specifier` under `conditions`: the gzip of the JavaScript
 * loaded at start and of the lazy chunks. The .wasm stays external (each runtime loads it its own
 * way); a second import of the package (the sub-entries import `breakwater`) is external too.
 */
async function app(specifier, names, conditions, external = []) {
  const dir = fs.mkdtempSync(path.join(root, '..', '.size-'));
  try {
    const entry = path.join(dir, 'app.mjs');
    fs.writeFileSync(entry, `import { ${names.join(', ')} } from '${specifier}';\nglobalThis.used = [${names.join(', ')}];\n`);
    const out = await build({
      absWorkingDir: dir,
      entryPoints: [entry],
      bundle: true,
      minify: true,
      splitting: true,
      format: 'esm',
      target: 'es2022',
      platform: conditions.includes('node') ? 'node' : 'neutral',
      conditions,
      mainFields: ['module', 'main'],
      external: ['*.wasm', '*.wasm?module'],
      // esbuild's `external` would take every subpath of a package along: exact names only.
      plugins: [
        {
          name: 'exact-externals',
          setup(b) {
            b.onResolve({ filter: /.*/ }, (args) => (external.includes(args.path) ? { path: args.path, external: true } : undefined));
          },
        },
      ],
      outdir: path.join(dir, 'out'),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const bytes = Object.fromEntries(out.outputFiles.map((f) => [path.relative(dir, f.path), f.contents]));
    const start = new Set();
    const visit = (file) => {
      if (start.has(file)) return;
      start.add(file);
      for (const i of out.metafile.outputs[file].imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
    };
    visit('out/app.js');
    let atStart = 0;
    let lazy = 0;
    for (const [file, b] of Object.entries(bytes)) {
      if (file.endsWith('.js')) start.has(file) ? (atStart += gzip(b)) : (lazy += gzip(b));
    }
    assert.ok(atStart > 200, `${specifier}: only ${atStart} bytes: was the entry bundled at all?`);
    return { atStart, lazy, source: Object.values(bytes).map((b) => Buffer.from(b).toString()).join('\n') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const MAIN = ['CircuitBreaker', 'withRetry'];
const WASM = gz(['web/breakwater_bg.wasm']);
const CEILING = 22.8 * 1024;
const STREAM_CEILING = 3.9 * 1024;

for (const [name, conditions] of Object.entries({
  browser: ['browser', 'import'],
  workerd: ['workerd', 'worker', 'import'],
  'edge-light (Vercel Edge)': ['edge-light', 'import'],
})) {
  test(`${name}: what the main entry loads stays under ${kb(CEILING)} gzip; stream() adds its guard lazily`, async (t) => {
    const { atStart, lazy, source } = await app('breakwater', MAIN, conditions);
    assert.match(source, /guard/, 'the stream guard is a chunk of its own');
    const total = atStart + WASM;
    t.diagnostic(`${name}: ${kb(total)} gzip (wasm ${kb(WASM)}, JS ${kb(atStart)}); stream() loads ${kb(lazy)} more`);
    assert.ok(total <= CEILING, `${total} bytes > ${CEILING}`);
    assert.ok(lazy > 0 && lazy <= STREAM_CEILING, `stream guard: ${lazy} bytes`);
  });
}

// The Node/Bun entries carry the .wasm inlined as base64, in a CommonJS module of its own that the
// ESM and the CommonJS entry both import (NAME-wasm.cjs; what lets Next.js bundle them without
// serverExternalPackages); base64 costs a third more than the .wasm, gzipped. They must read no
// file at run time. What an entry loads: the files of the package it imports, statically or with
// import(), up to the package's other subpaths.
const NODE_CEILING = 31.7 * 1024;
async function loads(file) {
  const out = await build({
    absWorkingDir: root,
    entryPoints: [path.join(root, file)],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: file.endsWith('.cjs') ? 'cjs' : 'esm',
    outdir: path.join(root, '.size-out'),
    external: ['breakwater'],
    logLevel: 'silent',
  });
  return Object.keys(out.metafile.inputs);
}
for (const file of ['dist/node.mjs', 'dist/node.cjs', 'dist/shared-node.mjs', 'dist/shared-node.cjs']) {
  test(`${file} reads no file at run time (bundlers that follow only imports carry everything)`, async () => {
    const files = await loads(file);
    assert.ok(files.some((f) => f.endsWith('-wasm.cjs')), `${file} loads its wasm module: ${files}`);
    for (const f of files) {
      const source = fs.readFileSync(path.join(root, f), 'utf8');
      assert.doesNotMatch(source, /readFileSync|__dirname|import\.meta\.url|\.wasm['"]/, f);
    }
  });
}
for (const file of ['dist/node.mjs', 'dist/node.cjs']) {
  test(`gzip size of ${file} (glue, JS, stream guard and inlined wasm) stays under ${kb(NODE_CEILING)}`, async (t) => {
    const total = gz(await loads(file));
    t.diagnostic(`${file}: ${kb(total)} gzip`);
    assert.ok(total <= NODE_CEILING, `${total} bytes > ${NODE_CEILING}`);
  });
}

// The sub-entries, measured as what each adds on top of the main entry they import.
// The main entry and breakwater/shared stay external, with their code subpaths (breakwater/internal,
// breakwater/shared/internal: the code the entries load, which the sub-entries import too).
const MAIN_ENTRY = ['breakwater', 'breakwater/internal'];
const SHARED_ENTRY = [...MAIN_ENTRY, 'breakwater/shared', 'breakwater/shared/internal'];
const SUBPATHS = {
  'breakwater/shared (node, wasm inlined as base64)': { size: async () => gz(await loads('dist/shared-node.mjs')), ceiling: 77.4 * 1024 },
  'breakwater/shared (workerd)': {
    size: async () =>
      (await app('breakwater/shared', ['SharedCircuitBreaker'], ['workerd', 'worker', 'import'], MAIN_ENTRY)).atStart +
      gz(['web-shared/breakwater_shared_bg.wasm']),
    ceiling: 60.9 * 1024,
  },
  'breakwater/cloudflare': {
    size: async () => (await app('breakwater/cloudflare', ['BreakerObject', 'breakerRoutes'], ['workerd', 'worker', 'import'], [...SHARED_ENTRY, 'cloudflare:workers'])).atStart,
    ceiling: 3.2 * 1024,
  },
  'breakwater/store': { size: async () => (await app('breakwater/store', ['StoreCircuitBreaker'], ['import'], SHARED_ENTRY)).atStart, ceiling: 2.2 * 1024 },
  'breakwater/ai': { size: async () => (await app('breakwater/ai', ['breakerMiddleware'], ['import'], MAIN_ENTRY)).atStart, ceiling: 2.9 * 1024 },
  'breakwater/prometheus': { size: async () => (await app('breakwater/prometheus', ['PrometheusMetrics'], ['import'])).atStart, ceiling: 2.1 * 1024 },
  'breakwater/otel': { size: async () => (await app('breakwater/otel', ['OpenTelemetryMetrics'], ['import'], ['@opentelemetry/api'])).atStart, ceiling: 1.45 * 1024 },
};
for (const [name, { size, ceiling }] of Object.entries(SUBPATHS)) {
  test(`gzip size of what ${name} adds stays under ${kb(ceiling)}`, async (t) => {
    const total = await size();
    t.diagnostic(`${name}: ${kb(total)} gzip`);
    assert.ok(total <= ceiling, `${total} bytes > ${ceiling}`);
  });
}

test('breakwater/ai brings no wasm of its own: its runtime is the main entry', () => {
  const source = fs.readFileSync(path.join(root, 'dist/ai.mjs'), 'utf8');
  assert.match(source, /from"breakwater"/, 'the runtime comes from the main entry');
  assert.doesNotMatch(source, /WebAssembly|\.wasm/, 'no second copy of the core');
});
