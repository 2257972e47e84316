// Bun (installed from npm when available): resolves the package from node_modules with its
// "bun", then "node" and "import" conditions, which give the Node entry (it reads the .wasm from
// disk beside it). The checks are shared with Deno.
import { test } from 'bun:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { isCircuitOpenError } from 'breakwater';
import { cases, entryOf } from '../runtime-cases.mjs';

test('Bun loads the package through its "node" entry', () => {
  assert.equal(entryOf('breakwater'), 'node.mjs');
  assert.equal(entryOf('breakwater/shared'), 'shared-node.mjs');
  assert.equal(entryOf('breakwater/store'), 'store.mjs');
  assert.equal(entryOf('breakwater/coordinator'), 'coordinator-node.mjs');
});

for (const [name, fn] of cases) test(`${name} (Bun)`, fn);

test('require() gives the CommonJS build under Bun, and its errors are recognised by the ESM one', async () => {
  const require = createRequire(import.meta.url);
  assert.ok(require.resolve('breakwater').endsWith('/dist/node.cjs'));
  const cjs = require('breakwater');
  const b = new cjs.CircuitBreaker('bun-cjs', { failureThreshold: 1, resetTimeout: 60_000 });
  await b.execute(() => Promise.reject(Object.assign(new Error('down'), { status: 503 }))).catch(() => {});
  const err = await b.execute(() => 'never').catch((e) => e);
  assert.ok(isCircuitOpenError(err), String(err));
  assert.equal(typeof require('breakwater/shared').SharedCircuitBreaker, 'function');
  assert.equal(typeof require('breakwater/store').StoreCircuitBreaker, 'function');
});
