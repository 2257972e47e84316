// Builds the npm package `breakwater` into pkg/ from one table of its subpaths (SUBPATHS): for each,
// its bundles (ESM, and CommonJS unless it is ESM only), its declarations (.d.ts and .d.cts) and its
// entry in the exports map. The wasm modules (WASM) are compiled by cargo, bound by wasm-bindgen
// (`bundler` target, loaded by our own entries: js/entry/) and optimised by binaryen's wasm-opt.
// The package's command (BINS: `npx breakwater`) is bundled apart from every subpath.
// pkg/package.json is written last: it is there only after a complete build.
// Usage: node js/build.mjs [--if-stale]   (scripts/build-pkg.sh installs the tools, then runs this)
//   --if-stale: do nothing when pkg/package.json is newer than every file the build reads
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

process.chdir(path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const OUT = 'pkg';
const DIST = `${OUT}/dist`;
/** The licence texts at the repository root, shipped as they are. */
const LICENSES = ['LICENSE-MIT', 'LICENSE-APACHE'];
/** What the build reads: a change to any of them makes pkg/ stale. */
const INPUTS = ['src', 'js', 'Cargo.toml', 'Cargo.lock', 'package-lock.json', 'scripts/build-pkg.sh', ...LICENSES];

/**
 * The wasm modules, one crate compiled with four feature sets: the core's numeric boundary; the
 * shared breaker's lease client (with the protocol's JSON), apart so that the main entry does not
 * carry it; its coordinator with the object's helpers, apart again, so that the clients (every
 * app that shares a breaker) do not carry what only a store or a Worker hosting the object runs;
 * and the breaker with the adaptive throttle and the concurrency limit (breakwater/adaptive).
 *   features   the crate's features it is compiled with (profile `wasm`, no_std), into `wasm`
 *   targetDir  cargo's target folder, when not the default (a second feature set, built apart)
 *   dir        where its .wasm and its wasm-bindgen glue go in the package (NAME_bg.wasm, NAME_bg.js)
 */
const WASM = {
  core: {
    name: 'breakwater',
    dir: 'web',
    features: 'wasm,terse',
    wasm: 'target/wasm32-unknown-unknown/wasm/breakwater.wasm',
    // "z": 0.1 KB gzip smaller than "s" here, for the module every app loads.
    env: { CARGO_PROFILE_WASM_OPT_LEVEL: 'z' },
  },
  shared: {
    name: 'breakwater_shared',
    dir: 'web-shared',
    features: 'wasm-shared',
    targetDir: 'target/wasm-shared',
    wasm: 'target/wasm-shared/wasm32-unknown-unknown/wasm/breakwater.wasm',
    // opt-level "z" here: "s" makes this module 8 % larger.
    env: { CARGO_PROFILE_WASM_OPT_LEVEL: 'z' },
  },
  coordinator: {
    name: 'breakwater_coordinator',
    dir: 'web-coordinator',
    features: 'wasm-coordinator',
    targetDir: 'target/wasm-coordinator',
    wasm: 'target/wasm-coordinator/wasm32-unknown-unknown/wasm/breakwater.wasm',
    // "z" here too: "s" makes this module 7 % larger (45.1 KB gzip, against 42.2).
    env: { CARGO_PROFILE_WASM_OPT_LEVEL: 'z' },
  },
  // breakwater/adaptive's: the breaker's exports with the throttle and the concurrency limit, and
  // nothing else; its breakers use the main module for the rest.
  adaptive: {
    name: 'breakwater_adaptive',
    dir: 'web-adaptive',
    features: 'wasm,terse,wasm-adaptive',
    env: { CARGO_PROFILE_WASM_OPT_LEVEL: 'z' },
    targetDir: 'target/wasm-adaptive',
    wasm: 'target/wasm-adaptive/wasm32-unknown-unknown/wasm/breakwater.wasm',
  },
};

/**
 * The package's subpaths. Everything below reads this table.
 *   path      the subpath, as in the exports map
 *   file      its files in dist/: FILE.mjs, FILE.cjs, FILE.d.ts, FILE.d.cts
 *   source    the TypeScript module it exports, bundled into FILE.mjs and FILE.cjs
 *   types     its declarations as tsc emits them (dist/types/TYPES.d.ts)
 *   wasm      the wasm module (WASM) its code needs loaded first. Such a subpath resolves, per
 *             runtime (RUNTIMES), to that runtime's entry, js/entry/ENTRIES<runtime>.mjs, which
 *             loads the module and re-exports FILE.mjs; FILE.mjs is then generated: the names
 *             SOURCE exports, re-exported from the code of the subpath `code` names. `entries`:
 *             the prefix of its entries' file names
 *   code      the hidden subpath holding that code: everything its source exports, public or not,
 *             bundled once. The entries hand it the wasm (`setGlue`) and the sub-entries import
 *             their helpers from it, so that no public entry exports a name that its declarations
 *             do not declare. A hidden subpath with a wasm module has none: FILE.mjs, bundled
 *             from its source, is its code, and its entries re-export all of it
 *   hidden    not documented: for the package's own entries and sub-entries
 *   esmOnly   no CommonJS build: it imports a module that only ESM runtimes have
 *   external  what it imports and does not bundle, beside the package's own subpaths
 */
const SUBPATHS = [
  { path: '.', file: 'index', source: 'js/src/index.ts', types: 'index', wasm: 'core', entries: '', code: './internal' },
  { path: './internal', file: 'api', source: 'js/src/internal.ts', types: 'internal', hidden: true },
  { path: './shared', file: 'shared', source: 'js/src/shared/index.ts', types: 'shared/index', wasm: 'shared', entries: 'shared-', code: './shared/internal' },
  { path: './shared/internal', file: 'shared-api', source: 'js/src/shared/internal.ts', types: 'shared/internal', hidden: true },
  // The coordinator's module, for breakwater/store and breakwater/cloudflare only.
  { path: './coordinator', file: 'coordinator', source: 'js/src/hosts/coordinator.ts', types: 'hosts/coordinator', wasm: 'coordinator', entries: 'coordinator-', hidden: true },
  // The throttle and the concurrency limit: the main entry's CircuitBreaker, with a module of
  // their own (the main one stays as small as it was without them).
  { path: './adaptive', file: 'adaptive', source: 'js/src/adaptive/index.ts', types: 'adaptive/index', wasm: 'adaptive', entries: 'adaptive-', code: './adaptive/internal' },
  { path: './adaptive/internal', file: 'adaptive-api', source: 'js/src/adaptive/internal.ts', types: 'adaptive/internal', hidden: true },
  { path: './store', file: 'store', source: 'js/src/hosts/store.ts', types: 'hosts/store' },
  { path: './ai', file: 'ai', source: 'js/src/ai.ts', types: 'ai' },
  // The metrics adapters import only types from the main entry: no wasm. The OTel one takes the
  // app's Meter and never imports @opentelemetry/api at run time.
  { path: './prometheus', file: 'prometheus', source: 'js/src/metrics/prometheus.ts', types: 'metrics/prometheus' },
  { path: './otel', file: 'otel', source: 'js/src/metrics/otel.ts', types: 'metrics/otel', external: ['@opentelemetry/api'] },
  // The Durable Object and routes for the user's own Worker: ESM only, it imports the runtime's
  // `cloudflare:workers`, which exists only in workerd.
  { path: './cloudflare', file: 'cloudflare', source: 'js/src/hosts/cloudflare.ts', types: 'hosts/cloudflare', esmOnly: true, external: ['cloudflare:workers'] },
];

/**
 * The package's commands (package.json's `bin`), for Node: each bundled from `source` into
 * dist/FILE.mjs, with the package's own subpaths left as imports, apart from every subpath (no
 * entry imports it, so no app loads it). `assets`: files it imports at run time by path, copied
 * into dist/ as they are (`breakwater try` runs dist/quickstart.mjs, the quick start's script).
 */
const BINS = [
  { name: 'breakwater', file: 'cli', source: 'js/src/cli/main.mjs', assets: ['js/src/cli/quickstart.mjs'] },
];

/**
 * For a subpath with a wasm module: which entry each runtime's resolve conditions pick, in this
 * order. The runtimes that refuse to compile wasm from bytes (workerd, Vercel Edge) and those
 * that fetch it come first, ESM whatever the importer; then Node and Bun (`node`: the .wasm
 * inlined as base64, ESM or CommonJS); then any other ESM importer; then CommonJS.
 */
const RUNTIMES = [
  ['workerd', 'workerd'], // Cloudflare Workers: a static import of the .wasm (CompiledWasm rule)
  ['edge-light', 'edge-light'], // Vercel Edge, Next.js edge: the .wasm imported with `?module`
  ['worker', 'workerd'], // wrangler's condition
  ['deno', 'browser'],
  ['browser', 'browser'], // fetch the .wasm next to the entry and compile it
];

const row = (subpath) => SUBPATHS.find((r) => r.path === subpath);
/** The public subpath whose code `r` holds (for a hidden code subpath), or `r` itself. */
const loaded = (r) => (r.wasm ? r : SUBPATHS.find((p) => p.code === r.path));

function exportsOf(r) {
  const esm = (file) => ({ types: `./dist/${r.file}.d.ts`, default: `./dist/${file}.mjs` });
  const cjs = (file) => ({ types: `./dist/${r.file}.d.cts`, default: `./dist/${file}.cjs` });
  if (r.esmOnly) return esm(r.file);
  const twin = loaded(r);
  if (!twin) return { import: esm(r.file), default: cjs(r.file) };
  // A code subpath resolves wherever its public twin does, to the code that twin's entry loads.
  const at = (entry) => (r === twin ? twin.entries + entry : r.file);
  return {
    ...Object.fromEntries(RUNTIMES.map(([condition, entry]) => [condition, esm(at(entry))])),
    node: { import: esm(at('node')), default: cjs(at('node')) },
    import: esm(at('browser')),
    default: cjs(at('node')),
  };
}

const log = (message) => console.error(`[build-pkg] ${message}`);
const run = (cmd, args, env) => execFileSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
const write = (file, text) => fs.writeFileSync(path.join(DIST, file), text);

/** The newest modification time under `p` (0 when it does not exist). */
function newest(p) {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((e) => newest(path.join(p, e))));
}

if (process.argv.includes('--if-stale')) {
  const built = fs.statSync(`${OUT}/package.json`, { throwIfNoEntry: false });
  if (built && Math.max(...INPUTS.map(newest)) < built.mtimeMs) {
    log(`${OUT}/ is up to date`);
    process.exit(0);
  }
}

fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(DIST, { recursive: true });

// ----- the wasm modules -----
for (const [key, w] of Object.entries(WASM)) {
  log(`compiling the wasm module ${w.name} (profile wasm, no_std, features ${w.features})`);
  run(
    'cargo',
    ['rustc', '--quiet', '--lib', '--crate-type', 'cdylib', '--profile', 'wasm', '--target', 'wasm32-unknown-unknown', '--no-default-features', '--features', w.features]
      .concat(w.targetDir ? ['--target-dir', w.targetDir] : []),
    w.env,
  );
  const dir = `${OUT}/${w.dir}`;
  run('wasm-bindgen', ['--remove-name-section', '--remove-producers-section', '--no-typescript', '--out-name', w.name, '--target', 'bundler', '--out-dir', dir, w.wasm]);
  // The bundler target's own entry relies on wasm ESM integration; our entries replace it.
  fs.rmSync(`${dir}/${w.name}.js`);
  const bg = `${dir}/${w.name}_bg.wasm`;
  // binaryen's wasm-opt (npm package binaryen@132; Debian's is too old for this output). -Os gzips
  // a little smaller than -Oz here; --converge and dropping the target_features section shave a
  // few hundred bytes more. --low-memory-unused (constant offsets folded into loads and stores,
  // 80 B gzip) holds for rustc's layout: the stack comes first, its 1 MiB grows down towards
  // address 0, and nothing here nears its bottom KB (no deep recursion; the protocol's JSON reader
  // stops at 128 levels).
  if (fs.existsSync('node_modules/.bin/wasm-opt')) {
    run('node_modules/.bin/wasm-opt', ['-Os', '--converge', '--low-memory-unused', '--strip-target-features', '--enable-bulk-memory',
      '--enable-nontrapping-float-to-int', '--enable-sign-ext', '--enable-mutable-globals', '--enable-reference-types',
      '--enable-multivalue', bg, '-o', bg]);
  } else {
    log(`node_modules/.bin/wasm-opt missing: shipping ${w.name} unoptimised`);
  }
  // Node and Bun: the bytes inlined as base64 in a CommonJS module of its own, which both the ESM
  // and the CommonJS entry import (one copy), so that bundlers that follow only JavaScript imports
  // (Next.js's Turbopack and webpack) carry the wasm along and nothing is read from disk at run
  // time; kept out of the code so that Node never prints it as an error's source line.
  const entries = SUBPATHS.find((r) => r.wasm === key).entries;
  await build({
    bundle: true, platform: 'node', target: 'es2022', format: 'cjs', minify: true, legalComments: 'none', logLevel: 'warning',
    stdin: { contents: `module.exports = require(${JSON.stringify(path.resolve(bg))});`, resolveDir: DIST },
    loader: { '.wasm': 'binary' }, outfile: `${DIST}/${entries}node-wasm.cjs`,
  });
}

// ----- the JavaScript -----
// Minified, in lines of at most 160 characters: Node prints the source line of an uncaught
// error's throw site, which must be a line of code, not a whole bundle on one line.
const COMMON = { bundle: true, target: 'es2022', minify: true, legalComments: 'none', logLevel: 'warning', lineLimit: 160 };
/** The package's own subpaths stay imports: one copy of each module, shared by the sub-entries. */
const SELF = ['breakwater'];

/** The names `source` exports at run time (types are erased). */
async function exportedNames(source) {
  const out = await build({ ...COMMON, platform: 'neutral', format: 'esm', entryPoints: [source], outfile: 'names.mjs', write: false, metafile: true, external: SELF });
  return out.metafile.outputs['names.mjs'].exports;
}

fs.cpSync('js/entry', DIST, { recursive: true });
for (const r of SUBPATHS) {
  const external = [...SELF, ...(r.external ?? [])];
  if (r.code) {
    // Its runtime entries re-export FILE.mjs: what its source exports, from its code module.
    const names = await exportedNames(r.source);
    log(`${r.path}: ${names.length} names from ${row(r.code).file}.mjs`);
    write(`${r.file}.mjs`, `export { ${names.join(', ')} } from './${row(r.code).file}.mjs';\n`);
    continue;
  }
  log(`bundling ${r.path} (${r.source})`);
  // ESM: a module imported with import() (the stream guard, js/src/guards/guard.ts) becomes a chunk of its
  // own, fetched on first use; the CommonJS build inlines it.
  await build({
    ...COMMON, platform: 'neutral', format: 'esm', entryPoints: { [r.file]: r.source }, external,
    splitting: true, outdir: DIST, outExtension: { '.js': '.mjs' }, chunkNames: '[name]-[hash]',
  });
  if (!r.esmOnly) await build({ ...COMMON, platform: 'neutral', format: 'cjs', entryPoints: [r.source], outfile: `${DIST}/${r.file}.cjs`, external });
}

// The CommonJS entries of Node and Bun: each runtime entry ENTRIESnode.mjs as one bundle, with the
// code module and the wasm module as the CommonJS files beside it (shared with breakwater/internal
// and the ESM entry).
const CODE_FILES = new Set(SUBPATHS.filter((r) => r.hidden).map((r) => `${r.file}.mjs`));
for (const r of SUBPATHS.filter((s) => s.wasm)) {
  log(`bundling ${r.path} for Node's require (${r.entries}node.cjs)`);
  await build({
    ...COMMON, platform: 'node', format: 'cjs', entryPoints: [`${DIST}/${r.entries}node.mjs`], outfile: `${DIST}/${r.entries}node.cjs`, external: SELF,
    plugins: [{
      name: 'commonjs-siblings',
      setup(b) {
        b.onResolve({ filter: /^\.\/[^/]+\.[mc]js$/ }, (args) => {
          const file = args.path.slice(2);
          if (CODE_FILES.has(file)) return { path: `./${file.replace(/\.mjs$/, '.cjs')}`, external: true };
          if (file.endsWith('.cjs')) return { path: args.path, external: true };
          return undefined;
        });
      },
    }],
  });
}

for (const b of BINS) {
  log(`bundling the command ${b.name} (${b.source})`);
  await build({ ...COMMON, platform: 'node', format: 'esm', entryPoints: [b.source], outfile: `${DIST}/${b.file}.mjs`, external: SELF });
  for (const asset of b.assets) fs.copyFileSync(asset, `${DIST}/${path.basename(asset)}`);
}

// ----- the declarations -----
// tsc emits one tree, dist/types/ (ES modules, as the package's "type" says); the same files under
// dist/types-cjs/, beside a package.json of "type": "commonjs", are the CommonJS declarations. Each
// subpath's FILE.d.ts and FILE.d.cts point into them.
log('emitting declarations');
run('node_modules/.bin/tsc', ['-p', 'js/tsconfig.json']);
const esmOnlyTypes = new Set(SUBPATHS.filter((r) => r.esmOnly).map((r) => path.normalize(`${r.types}.d.ts`)));
fs.cpSync(`${DIST}/types`, `${DIST}/types-cjs`, { recursive: true, filter: (src) => !esmOnlyTypes.has(path.relative(`${DIST}/types`, src)) });
write('types-cjs/package.json', '{ "type": "commonjs" }\n');
for (const r of SUBPATHS) {
  write(`${r.file}.d.ts`, `export * from './types/${r.types}.js';\n`);
  if (!r.esmOnly) write(`${r.file}.d.cts`, `export * from './types-cjs/${r.types}.js';\n`);
}

// ----- what else ships, and the manifest -----
fs.copyFileSync('js/README.md', `${OUT}/README.md`);
const licenses = LICENSES.filter((f) => fs.existsSync(f));
for (const f of licenses) fs.copyFileSync(f, `${OUT}/${f}`);
const missing = LICENSES.filter((f) => !licenses.includes(f));
if (missing.length) log(`WARNING: ${missing.join(' and ')} missing at the repository root: the package ships without them`);
// wasm-bindgen may leave a `.gitignore` with `*`, which would empty `npm pack`.
for (const w of Object.values(WASM)) fs.rmSync(`${OUT}/${w.dir}/.gitignore`, { force: true });

const version = /^version = "(.*)"/m.exec(fs.readFileSync('Cargo.toml', 'utf8'))[1];
// js/package.template.json holds what is written by hand (name, description, licence, repository,
// peer dependencies…); the build adds the version (Cargo.toml's) and, after `type`, what the
// tables give.
const template = JSON.parse(fs.readFileSync('js/package.template.json', 'utf8'));
const manifest = {};
for (const [key, value] of Object.entries({ ...template, version })) {
  manifest[key] = value;
  if (key !== 'type') continue;
  Object.assign(manifest, {
    // Resolvers that do not read `exports` (TypeScript's node10, older bundlers).
    main: `./dist/${row('.').entries}node.cjs`,
    module: `./dist/${row('.').entries}browser.mjs`,
    types: `./dist/${row('.').file}.d.cts`,
    typesVersions: {
      '*': Object.fromEntries(SUBPATHS.filter((r) => r.path !== '.').map((r) => [r.path.slice(2), [`./dist/${r.file}.${r.esmOnly ? 'd.ts' : 'd.cts'}`]])),
    },
    exports: { ...Object.fromEntries(SUBPATHS.map((r) => [r.path, exportsOf(r)])), './package.json': './package.json' },
    bin: Object.fromEntries(BINS.map((b) => [b.name, `dist/${b.file}.mjs`])),
    files: ['dist/', ...Object.values(WASM).map((w) => `${w.dir}/`), 'README.md', ...LICENSES],
    // What does something when loaded: the runtime entries, which instantiate their wasm module.
    // The rest only defines, and bundlers may leave out what an app does not use.
    sideEffects: SUBPATHS.filter((r) => r.wasm).flatMap((r) => [
      ...[...new Set([...RUNTIMES.map(([, entry]) => entry), 'node'])].map((entry) => `./dist/${r.entries}${entry}.mjs`),
      `./dist/${r.entries}node.cjs`,
    ]),
  });
}
fs.writeFileSync(`${OUT}/package.json`, `${JSON.stringify(manifest, null, 2)}\n`);
log(`done: ${OUT}/ (breakwater@${version})`);
