// Deno (installed from npm when available): resolves the package from node_modules with the
// "deno" condition, which fetches the .wasm from a file: URL. The checks are shared with Bun.
import assert from 'node:assert/strict';
import { cases, entryOf } from '../runtime-cases.mjs';

Deno.test('Deno loads the package through its "deno" entry', () => {
  assert.equal(entryOf('breakwater'), 'browser.mjs');
  assert.equal(entryOf('breakwater/shared'), 'shared-browser.mjs');
  assert.equal(entryOf('breakwater/store'), 'store.mjs');
  assert.equal(entryOf('breakwater/coordinator'), 'coordinator-browser.mjs');
});

for (const [name, fn] of cases) Deno.test(`${name} (Deno)`, fn);
