// The shared breaker's conformance file (tests/conformance/shared.json) against the installed
// package: the coordinator in the package's coordinator module (breakwater/coordinator) answers
// every exchange as the core does natively (tests/conformance.rs), and the package's lease client
// (breakwater/shared's module) speaks to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { SharedCircuitBreaker } from 'breakwater/shared';
// The core's coordinator in this process, from the package's hidden subpath (what breakwater/store
// and breakwater/cloudflare use), which loads its wasm module.
import { coordinatorGlue } from 'breakwater/coordinator';
import { isCircuitOpenError } from 'breakwater';

const file = JSON.parse(fs.readFileSync(new URL('../conformance/shared.json', import.meta.url), 'utf8'));

function matches(actual, expected, path) {
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    for (const [k, v] of Object.entries(expected)) matches(actual?.[k] ?? null, v, `${path}.${k}`);
    return;
  }
  assert.deepEqual(actual, expected, path);
}

test('the wasm coordinator answers every exchange of the conformance file', () => {
  const co = coordinatorGlue().WasmCoordinator.create(file.name, JSON.stringify(file.spec), undefined, false);
  assert.ok(co);
  for (const step of file.steps) {
    let text;
    if (step.op === 'acquire' || step.op === 'report') text = co.exchange(step.at, JSON.stringify(step.request), step.op === 'acquire');
    else {
      if (step.op === 'isolate') co.isolate(step.at);
      if (step.op === 'reset') co.reset(step.at);
      text = co.view(step.at);
    }
    try {
      matches(JSON.parse(text), step.expect, '');
    } catch (e) {
      e.message = `${step.what}: ${e.message}\nreply: ${text}`;
      throw e;
    }
  }
  co.free();
});

test('the lease client and the coordinator, both in the package, keep one breaker for two clients', async () => {
  let now = 1_800_000_000_000;
  const co = coordinatorGlue().WasmCoordinator.create(file.name, JSON.stringify(file.spec), undefined, false);
  const exchanges = [];
  const transport = {
    async exchange(op, body) {
      exchanges.push(op);
      return JSON.parse(co.exchange(now, JSON.stringify(body), op === 'acquire'));
    },
  };
  const a = new SharedCircuitBreaker(file.name, { transport, clock: () => now, clientId: 'a' });
  const b = new SharedCircuitBreaker(file.name, { transport, clock: () => now, clientId: 'b' });
  const fail = () => {
    throw Object.assign(new Error('overloaded'), { status: 529 });
  };
  assert.equal(await b.execute(() => 'ok'), 'ok');
  for (let i = 0; i < 3; i++) await assert.rejects(a.execute(fail), /overloaded/);
  assert.equal(a.state, 'OPEN');
  now += 500; // b's lease (500 ms) ran out: it learns OPEN at its next call
  await assert.rejects(b.execute(() => 'never'), (e) => isCircuitOpenError(e) && e.reason === 'open');
  now += 1_000;
  assert.equal(await b.execute(() => 'probe'), 'probe');
  assert.equal(b.state, 'CLOSED');
  assert.equal(await a.execute(() => 'again'), 'again');
  assert.ok(exchanges.length <= 10, `${exchanges.length} exchanges`);
  co.free();
});
