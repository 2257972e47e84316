// The published .d.ts: an app's TypeScript (NodeNext and bundler resolution) type-checks against
// the installed package, and an option name with a typo is a type error; under
// exactOptionalPropertyTypes too, where two trip rules at once are a type error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

for (const [name, flags, project] of [
  ['NodeNext', [], 'tsconfig.json'],
  ['bundler', ['--module', 'esnext', '--moduleResolution', 'bundler'], 'tsconfig.json'],
  // strict + exactOptionalPropertyTypes (types/options.ts: undefined options, one trip rule).
  ['NodeNext, exactOptionalPropertyTypes', [], 'tsconfig.exact.json'],
  ['bundler, exactOptionalPropertyTypes', ['--module', 'esnext', '--moduleResolution', 'bundler'], 'tsconfig.exact.json'],
]) {
  test(`the declarations type-check an app (${name} resolution)`, () => {
    try {
      execFileSync(process.execPath, [tsc, '-p', path.join(here, 'types', project), ...flags], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
    }
  });
}
