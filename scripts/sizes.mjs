#!/usr/bin/env node
// What each public entry of the npm package adds to an app, and what wrangler uploads for the two
// Workers, measured the way users see them; the one place those sizes are measured: docs/sizes.md
// is generated from here, and tests/js/size.test.mjs (the ceilings) measures with the same
// functions (`measurer`, below).
//
//   the entries    an app importing the entry's main names, bundled with esbuild (minified, ESM,
//                  code splitting) under the workerd condition set wrangler resolves the exports
//                  map with (workerd, worker, import); what it loads at start, gzip -9, plus the
//                  .wasm modules it imports (each gzip -9: wrangler uploads them beside the
//                  JavaScript). A sub-entry that imports the main entry is measured on top of it
//                  (the main entry kept out of its bundle). "Node": the package's files the entry
//                  loads under the node condition (the .wasm inlined as base64), each gzip -9,
//                  given where that differs (the entries with a wasm module of their own).
//   the Workers    `wrangler deploy --dry-run --outdir` and the "Total Upload: X KiB / gzip: Y KiB"
//                  it prints, for (a) the Workers guide's JavaScript Worker (docs/cloudflare.md, its "Cloudflare Workers"
//                  example and wrangler.toml snippet, as they are written there) with the package
//                  installed in tests/worker, and (b) the Rust Worker (wrangler.toml at the root;
//                  this runs its [build], scripts/build-worker.sh, which rewrites build/ without
//                  the demo app, as scripts/test-deploy.sh does).
//
// Usage: node scripts/sizes.mjs [--write | --check] [--only package|workers]
//   (no flag: print the measured block)  --write: rewrite docs/sizes.md between its markers
//   --check: exit 1, naming each row, when docs/sizes.md differs from the measurement
//   --only: measure one part, keep the other as committed
// Needs: the package installed in tests/js (scripts/install-pkg.sh tests/js) for the entries;
// tests/worker's wrangler, the package installed there and worker-build (scripts/setup.sh worker,
// scripts/install-pkg.sh tests/worker) for the Workers.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** gzip -9 of `bytes`, in bytes. */
export const gzip = (bytes) => zlib.gzipSync(bytes, { level: 9 }).length;
/** `n` bytes in KiB, one decimal (what docs/sizes.md and the tests print). */
export const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
/** The conditions wrangler (and the tests) resolve the exports map with for workerd. */
export const WORKERD = ['workerd', 'worker', 'import'];

/**
 * The measuring functions over the package installed at `root` (its folder in a node_modules, so
 * that an app written next to it resolves `breakwater` through the exports map).
 */
export function measurer(root) {
  /** The sum of the gzip -9 sizes of the package's `files` (paths relative to `root`). */
  const gz = (files) => files.reduce((sum, f) => sum + gzip(fs.readFileSync(path.join(root, f))), 0);

  /**
   * Bundles an app importing `names` from `specifier` (or, for an object, the names of each of its
   * specifiers) under `conditions`: the gzip of the JavaScript loaded at start and of the lazy
   * chunks, and the .wasm modules it imports (their file names in the package). The .wasm stays
   * external (each runtime loads it its own way); so do the exact specifiers in `external`.
   */
  async function app(specifier, names, conditions, external = []) {
    const dir = fs.mkdtempSync(path.join(root, '..', '.size-'));
    const wasmFiles = new Set();
    const imports = typeof specifier === 'string' ? { [specifier]: names } : specifier;
    const all = Object.values(imports).flat();
    try {
      const entry = path.join(dir, 'app.mjs');
      const lines = Object.entries(imports).map(([from, n]) => `import { ${n.join(', ')} } from '${from}';\n`);
      fs.writeFileSync(entry, `${lines.join('')}globalThis.used = [${all.join(', ')}];\n`);
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
        // esbuild's `external` would take every subpath of a package along: exact names only.
        plugins: [
          {
            name: 'exact-externals',
            setup(b) {
              b.onResolve({ filter: /.*/ }, (args) => {
                if (external.includes(args.path)) return { path: args.path, external: true };
                const wasm = /^(.*\.wasm)(\?module)?$/.exec(args.path);
                if (!wasm) return undefined;
                wasmFiles.add(path.relative(root, path.resolve(args.resolveDir, wasm[1])));
                return { path: args.path, external: true };
              });
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
      assert.ok(atStart > 200, `${Object.keys(imports)}: only ${atStart} bytes: was the entry bundled at all?`);
      // The package's files it bundled (its JavaScript; the .wasm files are `wasm`).
      const inputs = Object.keys(out.metafile.inputs).map((f) => path.relative(root, path.resolve(dir, f))).filter((f) => !f.startsWith('..'));
      return { atStart, lazy, wasm: [...wasmFiles].sort(), inputs, source: Object.values(bytes).map((b) => Buffer.from(b).toString()).join('\n') };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * The files of the package that `file` (in the package) loads under Node, statically or with
   * import(), up to the package's other subpaths (kept external).
   */
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

  /**
   * An edge app's whole bundle of `source` (esbuild, minified, one file: lazy chunks included)
   * under `conditions`: the gzip of its JavaScript, and the .wasm specifiers it imports.
   */
  async function whole(source, conditions) {
    const dir = fs.mkdtempSync(path.join(root, '..', '.size-'));
    try {
      fs.writeFileSync(path.join(dir, 'app.mjs'), source);
      const wasm = [];
      const out = await build({
        absWorkingDir: dir,
        entryPoints: ['app.mjs'],
        bundle: true,
        minify: true,
        format: 'esm',
        write: false,
        platform: 'neutral',
        conditions,
        mainFields: ['module', 'main'],
        logLevel: 'silent',
        plugins: [
          {
            name: 'wasm',
            setup(b) {
              b.onResolve({ filter: /\.wasm(\?module)?$/ }, (a) => (wasm.push(a.path), { path: a.path, external: true }));
            },
          },
        ],
      });
      return { js: gzip(Buffer.from(out.outputFiles[0].text)), wasm };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  return { root, gz, app, loads, whole };
}

// ----- the table -----

/**
 * The public entries, in the table's order: what an app imports from each (its main names) and
 * what it is for. Every public subpath of js/build.mjs's SUBPATHS must have a row (checked).
 */
const ENTRIES = [
  { entry: 'breakwater', names: ['CircuitBreaker', 'withRetry'], use: 'the breaker and retries; `stream()`, `FallbackChain`, errors and their guards' },
  { entry: 'breakwater/adaptive', names: ['throttle', 'limit'], use: 'adaptive throttling, a concurrency limit and the hedging policy (`throttle()`, `limit()`, `hedge()`)' },
  { entry: 'breakwater/shared', names: ['SharedCircuitBreaker'], use: 'one breaker for every isolate or instance: the lease client (to a Durable Object, the breaker service or a store)' },
  { entry: 'breakwater/store', names: ['StoreCircuitBreaker', 'RedisStore'], use: 'the shared breaker with its coordinator in Redis (or any store with a compare-and-set)' },
  { entry: 'breakwater/cloudflare', names: ['BreakerObject', 'breakerRoutes', 'SharedCircuitBreaker'], use: 'the Durable Object, its routes and its clients in your own Worker' },
  { entry: 'breakwater/ai', names: ['breakerMiddleware'], use: 'Vercel AI SDK middleware and `fallbackModel`' },
  { entry: 'breakwater/prometheus', names: ['PrometheusMetrics'], use: 'the metrics as Prometheus text' },
  { entry: 'breakwater/otel', names: ['OpenTelemetryMetrics'], use: 'the metrics on an OpenTelemetry `Meter`' },
];
/** Imports that are the app's or the runtime's, never the package's to count. */
const NOT_OURS = ['@opentelemetry/api', 'cloudflare:workers'];
/** The main entry and its code subpath: kept out of a sub-entry's bundle. */
const MAIN_ENTRY = ['breakwater', 'breakwater/internal'];
const ALL_RUNTIMES = 'Node (ESM, CJS), Bun, Deno, browsers, Vercel Edge, workerd';

/** The public subpaths js/build.mjs builds (its SUBPATHS rows without `hidden`), as specifiers. */
function publicEntries() {
  const source = fs.readFileSync(path.join(ROOT, 'js/build.mjs'), 'utf8');
  const rows = [...source.matchAll(/^\s*\{ path: '([^']+)'[^\n]*\},?$/gm)];
  assert.ok(rows.length > 0, 'js/build.mjs: no SUBPATHS rows found');
  return rows.filter((r) => !/hidden: true/.test(r[0])).map((r) => (r[1] === '.' ? 'breakwater' : `breakwater/${r[1].slice(2)}`));
}

const version = (file) => JSON.parse(fs.readFileSync(file, 'utf8')).version;
const cmdVersion = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'missing';
  }
};

/** The package's rows: measured from tests/js's installed copy. */
async function packagePart() {
  const installed = path.join(ROOT, 'tests/js/node_modules/breakwater');
  if (!fs.existsSync(path.join(installed, 'package.json'))) throw new Error('the package is not installed in tests/js: bash scripts/install-pkg.sh tests/js');
  const m = measurer(installed);
  const missing = publicEntries().filter((e) => !ENTRIES.some((r) => r.entry === e));
  const extra = ENTRIES.filter((r) => !publicEntries().includes(r.entry)).map((r) => r.entry);
  if (missing.length || extra.length) throw new Error(`the table's entries differ from js/build.mjs's public subpaths: missing ${missing}, not public ${extra}`);
  const rows = [];
  for (const { entry, names, use } of ENTRIES) {
    const external = entry === 'breakwater' ? NOT_OURS : [...MAIN_ENTRY, ...NOT_OURS];
    const a = await m.app(entry, names, WORKERD, external);
    const adds = a.atStart + m.gz(a.wasm);
    const onMain = entry !== 'breakwater' && /from\s*"breakwater(\/internal)?"/.test(a.source);
    const workerdOnly = /from\s*"cloudflare:workers"/.test(a.source);
    let node = null;
    if (!workerdOnly) {
      const n = await m.app(entry, names, ['node', 'import'], external);
      // Where the Node build differs: the .wasm inlined as base64 (NAME-wasm.cjs).
      if (n.inputs.some((f) => f.endsWith('-wasm.cjs'))) node = m.gz(n.inputs);
    }
    let cell = kib(adds);
    if (onMain) cell += ' on top of `breakwater`';
    if (a.wasm.length) cell += `, ${kib(m.gz(a.wasm))} of it .wasm`;
    if (a.lazy) cell += `; ${kib(a.lazy)} more ${entry === 'breakwater' ? 'on the first \`stream()\`' : 'loaded lazily'}`;
    if (node !== null) cell += `; Node ${kib(node)}`;
    const runs = workerdOnly ? 'workerd (Cloudflare Workers) only: imports `cloudflare:workers`' : ALL_RUNTIMES;
    rows.push(`| \`${entry}\` | \`import { ${names.join(', ')} } from '${entry}'\` | ${runs} | ${use} | ${cell} |`);
  }
  const wasmOpt = version(path.join(ROOT, 'node_modules/binaryen/package.json'));
  return [
    `Entries: esbuild ${esbuildVersion}, ${cmdVersion('rustc', ['--version']).split(' ').slice(0, 2).join(' ')}, ${cmdVersion('wasm-bindgen', ['--version'])}, binaryen (wasm-opt) ${wasmOpt}; gzip -9 by Node's zlib; 1 KiB = 1024 B.`,
    '',
    '| entry | import | runs in | what it is for | adds (gzip) |',
    '|---|---|---|---|---|',
    ...rows,
  ];
}

const WORKER_DIR = path.join(ROOT, 'tests/worker');
const WRANGLER = path.join(WORKER_DIR, 'node_modules/.bin/wrangler');

/**
 * `wrangler deploy --dry-run` in `cwd` (tests/worker's wrangler, no account, its configuration
 * and temporary files in a folder of their own): wrangler's own figures. The bundle goes to
 * `outdir` when given (kept, for a caller that reads its modules), else to a folder removed after.
 */
export async function wranglerDryRun(cwd, { outdir } = {}) {
  const scratch = fs.mkdtempSync(path.join(WORKER_DIR, '.tmp-sizes-'));
  try {
    const env = { ...process.env, XDG_CONFIG_HOME: path.join(scratch, 'xdg'), TMPDIR: path.join(scratch, 'tmp'), WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1', FORCE_COLOR: '0' };
    for (const k of Object.keys(env)) if (/^(CLOUDFLARE|CF)_/.test(k)) delete env[k];
    fs.mkdirSync(env.TMPDIR, { recursive: true });
    const out = await new Promise((resolve, reject) =>
      execFile(WRANGLER, ['deploy', '--dry-run', '--outdir', outdir ?? path.join(scratch, 'out')], { cwd, env, timeout: 600_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
        err ? reject(new Error(`wrangler deploy --dry-run in ${cwd}: ${err.message}\n${stdout}\n${stderr}`)) : resolve(`${stdout}${stderr}`),
      ),
    );
    const m = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
    if (!m) throw new Error(`wrangler printed no "Total Upload" line:\n${out}`);
    return { kib: m[1], gzipKib: m[2] };
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** The Workers guide's first section (docs/cloudflare.md): its Worker (the ```ts block) and wrangler.toml lines. */
function readmeWorker() {
  const readme = fs.readFileSync(path.join(ROOT, 'docs/cloudflare.md'), 'utf8');
  const section = /^## Cloudflare Workers[^\n]*\n([\s\S]*?)^## /m.exec(readme)?.[1];
  assert.ok(section, 'docs/cloudflare.md has no "## Cloudflare Workers" section');
  const toml = /```toml\n([\s\S]*?)```/.exec(section)?.[1];
  const ts = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(toml && ts, 'docs/cloudflare.md\'s "Cloudflare Workers" section lacks its ```toml or ```ts block');
  // The toml block is indented under its list item.
  return { toml: toml.replace(/^ {3}/gm, ''), ts };
}

/** The Workers' rows: wrangler's figures. */
async function workersPart() {
  if (!fs.existsSync(WRANGLER)) throw new Error('wrangler is missing: bash scripts/setup.sh worker');
  if (!fs.existsSync(path.join(WORKER_DIR, 'node_modules/breakwater/package.json'))) throw new Error('the package is not installed in tests/worker: bash scripts/install-pkg.sh tests/worker');
  const compat = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(fs.readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8'))?.[1];
  const { toml, ts } = readmeWorker();
  // Inside tests/worker, so that `breakwater` resolves to the package installed there.
  const dir = fs.mkdtempSync(path.join(WORKER_DIR, '.tmp-sizes-js-'));
  let js;
  try {
    fs.mkdirSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src/index.ts'), ts);
    fs.writeFileSync(path.join(dir, 'wrangler.toml'), `name = "sizes-readme-worker"\nmain = "src/index.ts"\ncompatibility_date = "${compat}"\n\n${toml}`);
    js = await wranglerDryRun(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rust = await wranglerDryRun(ROOT);
  return [
    `Workers: wrangler ${version(path.join(WORKER_DIR, 'node_modules/wrangler/package.json'))}, worker-build ${cmdVersion('worker-build', ['--version']).replace(/^worker-build\s*/, '')}; the figures wrangler prints ("Total Upload: X KiB / gzip: Y KiB").`,
    '',
    '| Worker | what it is | Total Upload | gzip |',
    '|---|---|---|---|',
    `| JavaScript | the Workers guide's example (docs/cloudflare.md): \`BreakerObject\`, \`SharedCircuitBreaker\` and \`breakerRoutes\` from \`breakwater/cloudflare\` | ${js.kib} KiB | ${js.gzipKib} KiB |`,
    `| Rust | worker/, wrangler.toml at the root (\`BreakerObject\`, the routes, the breaker service; no demo app) | ${rust.kib} KiB | ${rust.gzipKib} KiB |`,
  ];
}

// ----- docs/sizes.md -----

const DOC = path.join(ROOT, 'docs/sizes.md');
const BEGIN = '<!-- sizes:begin -->';
const END = '<!-- sizes:end -->';
const PARTS = { package: packagePart, workers: workersPart };
/**
 * How far a measured figure may be from the committed one before --check fails, per part: for
 * each figure of a row (in order), a fraction of it. The wasm modules, esbuild's bundles and
 * wrangler's "Total Upload" are the same bytes on every build from the same sources (the four
 * modules built twice from scratch, compared byte for byte): no margin. wrangler's gzip figure is
 * the gzip of its modules concatenated in the order it collected them, and that order varies from
 * run to run for a Worker with two .wasm modules (the guide's: 118.88 or 119.80 KiB for the same
 * files, about one run in ten): 1 % on that figure, the last of a Worker's row.
 */
const MARGIN = {
  package: () => 0,
  workers: (i, count) => (i === count - 1 ? 0.01 : 0),
};

/** The generated block's parts, each between `<!-- sizes:NAME -->` lines. */
function parse(block) {
  const parts = {};
  let current = null;
  for (const line of block.split('\n')) {
    const m = /^<!-- sizes:(\w+) -->$/.exec(line);
    if (m && m[1] in PARTS) parts[(current = m[1])] = [];
    else if (current) parts[current].push(line);
  }
  for (const p of Object.keys(parts)) while (parts[p].length && parts[p].at(-1) === '') parts[p].pop();
  return parts;
}
const render = (parts) => Object.keys(PARTS).flatMap((p) => [`<!-- sizes:${p} -->`, ...(parts[p] ?? []), '']).join('\n');

function committed() {
  const text = fs.readFileSync(DOC, 'utf8');
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${path.relative(ROOT, DOC)}: no ${BEGIN} … ${END} block`);
  return { text, begin: begin + BEGIN.length, end, parts: parse(text.slice(begin + BEGIN.length, end)) };
}

/** The row a line belongs to: its first cell, or the line itself. */
const rowName = (line) => /^\| ([^|]+) \|/.exec(line)?.[1] ?? line;
/** Two lines of `part` that differ only in figures within its MARGIN. */
function within(part, a, b) {
  const num = /\d+(?:\.\d+)?(?= KiB)/g;
  if (a.replace(num, '#') !== b.replace(num, '#')) return false;
  const x = (a.match(num) ?? []).map(Number);
  const y = (b.match(num) ?? []).map(Number);
  return x.every((v, i) => Math.abs(v - y[i]) <= MARGIN[part](i, x.length) * Math.max(v, y[i]));
}

/** The differences between the committed part and the measured one, row by row. */
export function diff(name, was, now) {
  const out = [];
  for (let i = 0; i < Math.max(was.length, now.length); i++) {
    const a = was[i];
    const b = now[i];
    if (a === b || (a !== undefined && b !== undefined && within(name, a, b))) continue;
    out.push(`${name}: row ${JSON.stringify(rowName(b ?? a))}\n  - docs/sizes.md: ${a ?? '(none)'}\n  + measured:      ${b ?? '(none)'}`);
  }
  return out;
}

async function main(argv) {
  const write = argv.includes('--write');
  const check = argv.includes('--check');
  const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : null;
  if (only && !(only in PARTS)) throw new Error(`--only ${only}: one of ${Object.keys(PARTS).join(', ')}`);
  const started = Date.now();
  const measured = {};
  for (const [name, part] of Object.entries(PARTS)) if (!only || only === name) measured[name] = await part();
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (!write && !check) {
    console.log(render(measured));
    console.error(`[sizes] measured in ${seconds} s`);
    return 0;
  }
  const doc = committed();
  if (check) {
    const problems = Object.entries(measured).flatMap(([name, lines]) => diff(name, doc.parts[name] ?? [], lines));
    if (problems.length) {
      console.error(`docs/sizes.md differs from the measurement (node scripts/sizes.mjs --write${only ? ` --only ${only}` : ''} rewrites it):\n${problems.join('\n')}`);
      return 1;
    }
    console.error(`[sizes] docs/sizes.md matches the measurement (${Object.keys(measured).join(', ')}; ${seconds} s)`);
    return 0;
  }
  const block = `\n${render({ ...doc.parts, ...measured })}`;
  fs.writeFileSync(DOC, doc.text.slice(0, doc.begin) + block + doc.text.slice(doc.end));
  console.error(`[sizes] docs/sizes.md rewritten (${Object.keys(measured).join(', ')}; ${seconds} s)`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (status) => process.exit(status),
    (err) => {
      console.error(`[sizes] ${err.stack ?? err}`);
      process.exit(2);
    },
  );
}
