// The published declarations, as apps compile against the installed package (strict, every
// subpath): an ES module app (types/) and a CommonJS one (types/cjs/), each under node16 and
// bundler resolution, the CommonJS one under node10 too (typesVersions); breakwater/cloudflare,
// ESM only, in a Worker's TypeScript (types/tsconfig.worker.json). An option name with a typo is a
// type error; under exactOptionalPropertyTypes too, where two trip rules at once are a type error.
// And each public entry's declarations declare exactly the names it exports at run time, ESM and
// CommonJS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import './workerd-module.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const ts = require('typescript');

const BUNDLER = ['--module', 'esnext', '--moduleResolution', 'bundler'];
for (const [name, project, flags] of [
  ['ESM app, node16', 'types/tsconfig.json', []],
  ['ESM app, bundler', 'types/tsconfig.json', BUNDLER],
  // strict + exactOptionalPropertyTypes (types/options.ts: undefined options, one trip rule).
  ['ESM app, node16, exactOptionalPropertyTypes', 'types/tsconfig.exact.json', []],
  ['ESM app, bundler, exactOptionalPropertyTypes', 'types/tsconfig.exact.json', BUNDLER],
  ['CommonJS app, node16', 'types/cjs/tsconfig.json', []],
  ['CommonJS app, bundler', 'types/cjs/tsconfig.json', ['--module', 'preserve', '--moduleResolution', 'bundler']],
  ['CommonJS app, node10', 'types/cjs/tsconfig.json', ['--module', 'commonjs', '--moduleResolution', 'node10']],
  ['Worker importing breakwater/cloudflare, node16', 'types/tsconfig.worker.json', []],
  ['Worker importing breakwater/cloudflare, bundler', 'types/tsconfig.worker.json', BUNDLER],
]) {
  test(`the declarations type-check an app (${name})`, () => {
    try {
      execFileSync(process.execPath, [tsc, '-p', path.join(here, project), ...flags], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
    }
  });
}

// The public entries, and the hidden breakwater/coordinator (it loads a wasm module of its own and
// is imported by breakwater/store from CommonJS too).
const ENTRIES = ['breakwater', 'breakwater/shared', 'breakwater/store', 'breakwater/ai', 'breakwater/prometheus', 'breakwater/otel', 'breakwater/cloudflare', 'breakwater/coordinator'];
const ESM_ONLY = new Set(['breakwater/cloudflare']);

/** The value names `entry`'s declarations export, as TypeScript resolves them from a `kind` module. */
function declared(entry, kind) {
  const dir = fs.mkdtempSync(path.join(here, '.declared-'));
  try {
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: kind === 'esm' ? 'module' : 'commonjs' }));
    const file = path.join(dir, 'app.ts');
    fs.writeFileSync(file, `import * as m from '${entry}';\nexport { m };\n`);
    const program = ts.createProgram([file], {
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      target: ts.ScriptTarget.ES2022,
      noEmit: true,
      skipLibCheck: true,
      types: [],
    });
    const checker = program.getTypeChecker();
    const app = program.getSourceFile(file);
    const target = checker.getSymbolAtLocation(app.statements[0].moduleSpecifier);
    assert.ok(target, `${entry} resolves to declarations from ${kind}`);
    const resolved = program.getResolvedModule?.(app, entry, kind === 'esm' ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS)?.resolvedModule?.resolvedFileName;
    const names = checker
      .getExportsOfModule(target)
      .filter((s) => (ts.SymbolFlags.Value & (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s).flags : s.flags)) !== 0)
      .map((s) => s.name);
    return { names: names.sort(), resolved };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const entry of ENTRIES) {
  for (const kind of ESM_ONLY.has(entry) ? ['esm'] : ['esm', 'cjs']) {
    test(`${entry} (${kind === 'esm' ? 'ESM' : 'CommonJS'}): the declarations declare exactly what it exports at run time`, async () => {
      const mod = kind === 'esm' ? await import(entry) : require(entry);
      const runtime = Object.keys(mod).filter((k) => k !== 'default' && k !== '__esModule').sort();
      const { names, resolved } = declared(entry, kind);
      if (resolved) assert.match(resolved, kind === 'esm' ? /\.d\.ts$/ : /\.d\.cts$/, 'the declarations of its format');
      assert.deepEqual(runtime, names);
    });
  }
}
