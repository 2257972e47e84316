// breakwater/store loads one shared wasm module: the coordinator's, which carries the lease client
// too, so its StoreCircuitBreakers (SharedCircuitBreakers, from the code-only
// breakwater/shared/internal) run in it and breakwater/shared's own module is never loaded. An app
// that imports breakwater/shared as well then has both: that module serves the clients made from
// then on, those made before go on in theirs, and all of them are one class and agree through the
// store. In its own process (node --test runs each file apart), so that nothing has loaded
// breakwater/shared before the first test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCircuitOpenError } from 'breakwater';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';
import { CircuitOpenError as SharedCircuitOpenError } from 'breakwater';
import { SharedCircuitBreaker, sharedGlue } from 'breakwater/shared/internal';
import { coordinatorGlue } from 'breakwater/coordinator';

const boom = () => Promise.reject(new Error('upstream down'));
const store = new MemoryStore();
const options = { store, breaker: { failureThreshold: 2, resetTimeout: 60_000 } };
let before;

test('breakwater/store: the lease client runs in the coordinator’s module, the only shared one loaded', async () => {
  assert.equal(sharedGlue(), coordinatorGlue(), 'the coordinator’s glue serves the lease client');
  assert.equal(typeof sharedGlue().WasmLeaseClient.create, 'function');
  before = new StoreCircuitBreaker('one-module', options);
  assert.ok(before instanceof SharedCircuitBreaker);
  assert.equal(await before.execute(() => 'ok'), 'ok');
  await before.execute(boom).catch(() => {});
  await before.execute(boom).catch(() => {});
  await before.flush();
  assert.equal((await before.inspect()).state, 'OPEN');
  const refused = await before.execute(() => 'never').catch((e) => e);
  assert.ok(refused instanceof SharedCircuitOpenError && isCircuitOpenError(refused));
});

test('with breakwater/shared loaded too: its module serves new clients, one class, and they agree', async () => {
  const shared = await import('breakwater/shared');
  assert.notEqual(sharedGlue(), coordinatorGlue(), 'breakwater/shared’s module now serves the lease client');
  assert.equal(shared.SharedCircuitBreaker, SharedCircuitBreaker, 'the same class whichever way it is imported');
  assert.ok(before instanceof shared.SharedCircuitBreaker);
  // Made in the lease client's module, stepped by the coordinator's: the store says OPEN.
  const after = new StoreCircuitBreaker('one-module', options);
  assert.ok(after instanceof shared.SharedCircuitBreaker);
  const refused = await after.execute(() => 'never').catch((e) => e);
  assert.ok(refused instanceof SharedCircuitOpenError, String(refused));
  assert.equal((await after.inspect()).state, 'OPEN');
  // The client made before goes on in the coordinator's module.
  assert.ok((await before.execute(() => 'never').catch((e) => e)) instanceof SharedCircuitOpenError);
  assert.equal((await before.inspect()).state, 'OPEN');
});
