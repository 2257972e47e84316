// The shared modules' JSON against texts serde_json wrote (tests/conformance/wire.json): records
// and settings outlive deploys, so the packaged wasm (whose floats go through the JavaScript
// host's String() and Number()) must read each and write it back byte for byte: floats such as
// 0.1, 2.0, 33.333333333333336, 1e-7, 0.00001 and 1e+21, and integers past 2^53 (the jitter
// seed, the generator's state).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
// The core's functions from the hidden subpath breakwater/coordinator, which loads the coordinator's
// module (the lease client's, breakwater/shared's, reads and writes the same JSON with the same
// code, src/shared/json.rs).
import { coordinatorGlue } from 'breakwater/coordinator';
// The lease client's module, loaded by breakwater/shared, writes the settings its clients send.
import 'breakwater/shared';
import { settingsJson } from 'breakwater/shared/internal';

const file = JSON.parse(fs.readFileSync(new URL('../conformance/wire.json', import.meta.url), 'utf8'));

test('settings come back as serde_json wrote them', () => {
  const g = coordinatorGlue();
  for (const text of file.specs) {
    assert.equal(g.check_spec(text), '', text);
    assert.equal(g.breakers(`{"a":${text}}`, 'a'), text);
  }
});

test('records come back as serde_json wrote them, and so do the settings they hold', () => {
  const g = coordinatorGlue();
  for (const { spec, record } of file.records) {
    assert.equal(g.stored_spec(record), spec);
    const co = g.WasmCoordinator.create('upstream', spec, record, false);
    assert.ok(co);
    assert.equal(co.record(), record);
    assert.equal(JSON.parse(co.view(Date.now())).restore_error, null);
    co.free();
  }
});

test('floats are written as serde_json writes them, and read back to the same number', () => {
  const g = coordinatorGlue();
  const cases = [
    [0.1, '0.1'],
    [0.5, '0.5'],
    [1, '1.0'],
    [2.5, '2.5'],
    [1e-7, '1e-7'],
    [0.00001, '0.00001'],
    [0.3333333333333333, '0.3333333333333333'],
    [123456789012345680000, '1.2345678901234568e+20'],
    [1e21, '1e+21'],
    [1e16, '1e+16'],
    [1e15, '1000000000000000.0'],
    [5e-324, '5e-324'],
  ];
  for (const [x, written] of cases) {
    // Any fraction in [0, 1) is a valid jitter, any number from 1 up a valid backoff factor.
    const field = x < 1 ? 'open_jitter' : 'open_backoff_factor';
    const back = g.breakers(`{"a":{"breaker":{"${field}":${written}}}}`, 'a');
    assert.ok(back.includes(`"${field}":${written},`), `${x}: ${back}`);
    assert.equal(JSON.parse(back).breaker[field], x);
    // The same number as JavaScript writes it reads back the same.
    assert.equal(g.breakers(`{"a":{"breaker":{"${field}":${x}}}}`, 'a'), back);
  }
});

test("the settings the lease client's module writes, the coordinator's module reads back byte for byte", () => {
  const g = coordinatorGlue();
  for (const [breaker, leaseMs] of [
    [{ failureThreshold: 5, resetTimeout: 30_000 }, 1000],
    [{ failureThreshold: 3, monitoringWindow: 60_000, openJitter: 0.1, openBackoffFactor: 2.5, maxResetTimeoutMs: 600_000 }, 2500],
    [{ failureRate: { threshold: 33.333333333333336, minimumCalls: 7, windowMs: 10_000 }, halfOpenMaxProbes: 3 }, 1000],
    [{ failureRate: { threshold: 0.5, windowCalls: 50 }, openJitter: 1e-7, resetTimeout: 1500 }, 1000],
  ]) {
    const text = settingsJson(breaker, leaseMs, 'test');
    assert.equal(g.check_spec(text), '', text);
    assert.equal(g.breakers(`{"a":${text}}`, 'a'), text);
    assert.equal(JSON.parse(text).lease_ms, leaseMs);
  }
});
