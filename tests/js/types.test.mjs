// The published .d.ts: an app's TypeScript (NodeNext and bundler resolution) type-checks against
// the installed package, and an option name with a typo is a type error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const project = path.join(here, 'types/tsconfig.json');

for (const [name, flags] of [
  ['NodeNext', []],
  ['bundler', ['--module', 'esnext', '--moduleResolution', 'bundler']],
]) {
  test(`the declarations type-check an app (${name} resolution)`, () => {
    try {
      execFileSync(process.execPath, [tsc, '-p', project, ...flags], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
    }
  });
}
