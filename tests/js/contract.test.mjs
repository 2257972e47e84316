// One contract: every option of a breaker, on every kind of breaker, is honoured or refused by
// name — never accepted and ignored. The options are read from the package's own declarations
// (BreakerSettings and the trip rules, SharedBreakerOptions, StoreBreakerOptions), so an option
// added to the types without a row here fails this test.
//
// "Honoured" is shown by what the option changes: on a local CircuitBreaker, its behaviour; on a
// shared breaker, the settings its coordinator runs (the core's settings JSON, which the
// coordinator's own tests take from there), or its behaviour where the client itself acts on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CircuitBreaker, isCircuitOpenError } from 'breakwater';
import { limit, throttle } from 'breakwater/adaptive';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { settingsJson } from 'breakwater/shared/internal';
import { StoreCircuitBreaker, MemoryStore } from 'breakwater/store';
import { coordinatorGlue } from 'breakwater/coordinator';
import { manualClock, httpError } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const ts = require('typescript');
const types = path.join(here, 'node_modules/breakwater/dist/types');

/** The property names of the named interfaces in a declaration file (those not typed `undefined` alone). */
function members(file, names) {
  const src = ts.createSourceFile(file, fs.readFileSync(path.join(types, file), 'utf8'), ts.ScriptTarget.Latest);
  const out = new Set();
  src.forEachChild((node) => {
    if (!ts.isInterfaceDeclaration(node) || !names.includes(node.name.text)) return;
    for (const m of node.members) {
      if (!ts.isPropertySignature(m) || !m.name || !ts.isIdentifier(m.name)) continue;
      if (m.type?.kind === ts.SyntaxKind.UndefinedKeyword) continue;
      out.add(m.name.text);
    }
  });
  return [...out].sort();
}

const BREAKER_OPTIONS = members('breakers/breaker.d.ts', ['BreakerSettings', 'ConsecutiveTrip', 'FailureRateTrip', 'SlowCallRateTrip']);
const SHARED_OPTIONS = members('shared/client.d.ts', ['SharedBreakerOptions']);
const STORE_OPTIONS = members('hosts/store.d.ts', ['StoreBreakerOptions']);

const T0 = 1_800_000_000_000;
const boom = () => Promise.reject(httpError(529));
const fail = (b, n) => Promise.all(Array.from({ length: n }, () => b.execute(boom).catch(() => {})));

/**
 * Per option of a breaker: a value, and how a local CircuitBreaker shows it honoured. `shared`:
 * 'settings' when the coordinator runs it (it changes the settings JSON), 'client' when the
 * client acts on it (checked by `sharedCheck`), or the words a refusal must contain.
 */
const ROWS = {
  failureThreshold: {
    value: 2,
    local: async (b) => (await fail(b, 2), assert.equal(b.state, 'OPEN')),
    shared: 'settings',
  },
  monitoringWindow: {
    value: 1_000,
    extra: { failureThreshold: 2 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(2_000);
      await fail(b, 1);
      assert.equal(b.state, 'CLOSED', 'the first failure left the window');
    },
    shared: 'settings',
  },
  failureRate: {
    value: { threshold: 50, minimumCalls: 2, windowCalls: 2 },
    local: async (b) => {
      await b.execute(() => 'ok');
      await fail(b, 1);
      assert.equal(b.state, 'OPEN');
    },
    shared: 'settings',
  },
  slowCallRate: {
    value: { threshold: 50, minimumCalls: 1, windowCalls: 1, slowCallMs: 10 },
    local: async (b, c) => {
      await b.execute(async () => c.advance(20));
      assert.equal(b.state, 'OPEN');
    },
    shared: /slow/,
  },
  resetTimeout: {
    value: 1_000,
    extra: { failureThreshold: 1 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(1_000);
      assert.equal(b.isOpen(), false);
    },
    shared: 'settings',
  },
  halfOpenSuccessThreshold: {
    value: 2,
    extra: { failureThreshold: 1, resetTimeout: 10 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(10);
      await b.execute(() => 'ok');
      assert.equal(b.state, 'HALF_OPEN');
    },
    shared: 'settings',
  },
  halfOpenMaxProbes: {
    value: 2,
    extra: { failureThreshold: 1, resetTimeout: 10 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(10);
      assert.ok(b.tryAcquire() && b.tryAcquire(), 'two probes at once');
    },
    shared: 'settings',
  },
  probeTimeoutMs: {
    value: 100,
    extra: { failureThreshold: 1, resetTimeout: 10 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(10);
      assert.ok(b.tryAcquire());
      assert.equal(b.tryAcquire(), undefined);
      c.advance(100);
      assert.ok(b.tryAcquire(), 'the lost probe freed its slot');
    },
    shared: 'settings',
  },
  openJitter: {
    value: 0.5,
    extra: { failureThreshold: 1, resetTimeout: 10_000 },
    localExtra: { random: () => 0.99 },
    local: async (b) => {
      await fail(b, 1);
      assert.notEqual(b.retryAfterMs, 10_000);
    },
    shared: 'settings',
  },
  openBackoffFactor: {
    value: 2,
    extra: { failureThreshold: 1, resetTimeout: 1_000 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(1_000);
      await fail(b, 1);
      assert.equal(b.retryAfterMs, 2_000);
    },
    shared: 'settings',
  },
  maxResetTimeoutMs: {
    value: 1_500,
    extra: { failureThreshold: 1, resetTimeout: 1_000, openBackoffFactor: 4 },
    local: async (b, c) => {
      await fail(b, 1);
      c.advance(1_000);
      await fail(b, 1);
      assert.equal(b.retryAfterMs, 1_500);
    },
    shared: 'settings',
  },
  isFailure: {
    value: (e) => (e?.status === 529 ? false : undefined),
    extra: { failureThreshold: 1 },
    local: async (b) => {
      await fail(b, 3);
      assert.equal(b.state, 'CLOSED');
      assert.equal(b.stats.ignored, 3);
    },
    shared: 'client',
  },
  clock: {
    value: () => T0 + 123,
    local: async (b) => {
      await fail(b, 5);
      assert.equal(b.openUntil, T0 + 123 + 30_000);
    },
    shared: /clock/,
  },
  random: {
    value: () => 0.99,
    extra: { failureThreshold: 1, resetTimeout: 10_000, openJitter: 0.5 },
    local: async (b, c) => {
      // Another source draws another open period.
      const other = new CircuitBreaker('other', { clock: c, failureThreshold: 1, resetTimeout: 10_000, openJitter: 0.5, random: () => 0.01 });
      await fail(b, 1);
      await fail(other, 1);
      assert.notEqual(b.retryAfterMs, other.retryAfterMs);
    },
    shared: /draws/,
  },
  adaptiveThrottle: {
    value: () => throttle({ minimumRequests: 5 }),
    extra: { failureThreshold: 1_000 },
    local: async (b) => {
      await fail(b, 20);
      assert.ok(b.throttleProbability > 0);
    },
    shared: 'settings',
  },
  stream: {
    // A stream that never sends a word: the breaker's default first-chunk limit fails it.
    value: { firstChunkTimeoutMs: 20 },
    local: async (b) => {
      await assert.rejects(b.stream(silent), (e) => e.name === 'TimeoutError' && /firstChunkTimeoutMs/.test(e.message));
    },
    shared: 'client',
  },
  concurrency: {
    value: () => limit({ maxConcurrent: 1 }),
    local: async (b) => {
      let release;
      const first = b.execute(() => new Promise((r) => (release = r)));
      const second = await b.execute(() => 'never').catch((e) => e);
      assert.ok(isCircuitOpenError(second) && second.reason === 'full');
      release();
      await first;
    },
    shared: /concurrency/,
  },
};

test('the rows cover every option of the declarations, and nothing else', () => {
  assert.deepEqual(Object.keys(ROWS).sort(), BREAKER_OPTIONS);
});

const valueOf = (row) => (typeof row.value === 'function' && ['adaptiveThrottle', 'concurrency'].includes(row.name) ? row.value() : row.value);

for (const [name, row] of Object.entries(ROWS)) {
  row.name = name;
  test(`${name}: honoured by a local CircuitBreaker`, async () => {
    const c = manualClock(T0);
    const options = { clock: c, ...row.extra, ...row.localExtra, [name]: valueOf(row) };
    await row.local(new CircuitBreaker(`local-${name}`, options), c);
  });

  const store = new MemoryStore(() => T0);
  const kinds = {
    SharedCircuitBreaker: (o) => new SharedCircuitBreaker('contract', { service: { url: 'https://x.example', token: 't' }, ...o }),
    StoreCircuitBreaker: (o) => new StoreCircuitBreaker('contract', { store, ...o }),
  };
  for (const [kind, make] of Object.entries(kinds)) {
    test(`${name}: ${typeof row.shared === 'string' ? 'honoured' : 'refused by name'} in a ${kind}'s breaker settings`, async () => {
      const settings = { ...row.extra, [name]: valueOf(row) };
      if (row.shared instanceof RegExp) {
        assert.throws(
          () => make({ breaker: settings }),
          (e) => e instanceof TypeError && e.message.includes(`"${name}"`) && row.shared.test(e.message),
        );
        return;
      }
      assert.ok(make({ breaker: settings }));
      if (row.shared === 'settings') {
        const { [name]: _, ...without } = settings;
        assert.notEqual(settingsJson(settings, 1000, 'x'), settingsJson(without, 1000, 'x'), 'the coordinator runs it');
      } else {
        await sharedCheck(name, kind, settings);
      }
    });
  }
}

/** A stream that never sends anything (until it is cancelled). */
const silent = () => new ReadableStream({});

/** What the client itself does with an option (`isFailure`, `stream`): it acts as the option says. */
async function sharedCheck(name, kind, settings) {
  assert.ok(name === 'isFailure' || name === 'stream', name);
  const now = T0;
  if (name === 'stream') {
    const co = coordinatorGlue().WasmCoordinator.create('contract', settingsJson({ failureThreshold: 5 }, 1000, 'x'), undefined, false);
    const fetch = async (url, init) => new Response(co.exchange(Date.now(), init.body, url.includes('/v1/acquire')), { status: 200 });
    const b =
      kind === 'SharedCircuitBreaker'
        ? new SharedCircuitBreaker('contract', { service: { url: 'https://x.example', token: 't', fetch }, breaker: settings })
        : new StoreCircuitBreaker('contract-stream', { store: new MemoryStore(), breaker: settings });
    await assert.rejects(b.stream(silent), (e) => e.name === 'TimeoutError' && /firstChunkTimeoutMs/.test(e.message), kind);
    return;
  }
  let view;
  if (kind === 'SharedCircuitBreaker') {
    const co = coordinatorGlue().WasmCoordinator.create('contract', settingsJson({ failureThreshold: 1 }, 1000, 'x'), undefined, false);
    const fetch = async (url, init) => new Response(co.exchange(now, init.body, url.includes('/v1/acquire')), { status: 200 });
    const b = new SharedCircuitBreaker('contract', { service: { url: 'https://x.example', token: 't', fetch }, breaker: settings, clock: () => now });
    await fail(b, 3);
    await b.flush();
    view = JSON.parse(co.view(now)).stats;
  } else {
    const b = new StoreCircuitBreaker('contract-isfailure', { store: new MemoryStore(() => now), breaker: settings, clock: () => now });
    await fail(b, 3);
    await b.flush();
    view = (await b.inspect()).counters;
  }
  assert.equal(view.failures, 0, `${kind}: ${JSON.stringify(view)}`);
  assert.ok(view.ignored >= 3, `${kind}: ${JSON.stringify(view)}`);
}

test('the top-level options of the shared breakers are the declared ones; anything else is refused by name', () => {
  const service = { url: 'https://x.example', token: 't' };
  const store = new MemoryStore();
  assert.deepEqual(SHARED_OPTIONS, [
    'breaker', 'classify', 'clientId', 'clock', 'failClosed', 'leaseMs', 'local', 'maxBatch', 'requestTimeoutMs',
    'retryUnreachableMs', 'service', 'shared', 'transport', 'waitUntil',
  ]);
  assert.deepEqual(STORE_OPTIONS, ['breaker', 'keyTtlMs', 'leaseMs', 'maxCasAttempts', 'prefix', 'store', 'storeTimeoutMs']);
  for (const [kind, make] of [
    ['SharedCircuitBreaker', (o) => new SharedCircuitBreaker('contract', { service, ...o })],
    ['StoreCircuitBreaker', (o) => new StoreCircuitBreaker('contract', { store, ...o })],
  ]) {
    for (const typo of ['leaseMS', 'failureThreshold', 'isFailure', 'onStateChange']) {
      assert.throws(() => make({ [typo]: 1 }), (e) => e instanceof TypeError && e.message.includes(`"${typo}"`), `${kind}: ${typo}`);
    }
    // The local breaker's options: its clock is the client's, its classification the client's.
    assert.throws(() => make({ local: { clock: Date.now } }), /"clock".*local.*not supported/);
    assert.throws(() => make({ local: { isFailure: () => true } }), /"isFailure".*local.*not supported/);
  }
  // A store breaker's own options are a store breaker's: the others are refused.
  assert.throws(() => new StoreCircuitBreaker('contract', { store, service }), /"service"/);
  assert.throws(() => new SharedCircuitBreaker('contract', { service, prefix: 'x:' }), /"prefix"/);
});

/** A breaker's public members: its own and its prototypes' (getters included), constructor aside. */
function membersOf(instance) {
  const out = new Set(Object.keys(instance));
  for (let p = Object.getPrototypeOf(instance); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const k of Object.getOwnPropertyNames(p)) if (k !== 'constructor') out.add(k);
  }
  return out;
}

/** CircuitBreaker's members a shared breaker does not have, and why (none may be missing silently). */
const NOT_ON_SHARED = {
  mode: "the fleet's mode is the coordinator's (its admin view)",
  openUntil: "the fleet's open period is the coordinator's; retryAfterMs says when to ask again",
  probesInFlight: "the fleet's probes are the coordinator's",
  inFlight: 'the concurrency limit is a CircuitBreaker option (refused by name on shared breakers)',
  queued: 'the concurrency limit is a CircuitBreaker option (refused by name on shared breakers)',
  disable: "an operator's action on the fleet: the admin route, or the store's record",
  enable: "an operator's action on the fleet: the admin route, or the store's record",
  isolate: "an operator's action on the fleet: the admin route (StoreCircuitBreaker has it: the store's record)",
  reset: "an operator's action on the fleet: the admin route (StoreCircuitBreaker has it: the store's record)",
  toJSON: 'the state lives with the coordinator, which persists it',
  restore: 'the state lives with the coordinator, which persists it',
};

test("a shared breaker has CircuitBreaker's members, with the same meaning, or a stated reason not to", async () => {
  const local = membersOf(new CircuitBreaker('members'));
  const shared = membersOf(new SharedCircuitBreaker('members', { service: { url: 'https://x.example', token: 't' } }));
  const stored = membersOf(new StoreCircuitBreaker('members', { store: new MemoryStore() }));
  const missing = [...local].filter((m) => !shared.has(m) && !(m in NOT_ON_SHARED)).sort();
  assert.deepEqual(missing, [], 'members of CircuitBreaker a shared breaker lacks without a reason');
  const stale = Object.keys(NOT_ON_SHARED).filter((m) => shared.has(m) || !local.has(m));
  assert.deepEqual(stale, [], 'reasons for members that are there after all, or not CircuitBreaker members');
  for (const m of ['isolate', 'reset']) assert.ok(stored.has(m), `StoreCircuitBreaker.${m}`);
});

test('the members work as on a CircuitBreaker: stats, tryAcquire, isOpen and retryAfterMs', async () => {
  let now = T0;
  const co = coordinatorGlue().WasmCoordinator.create('members', settingsJson({ failureThreshold: 2 }, 1000, 'x'), undefined, false);
  const fetch = async (url, init) => new Response(co.exchange(now, init.body, url.includes('/v1/acquire')), { status: 200 });
  const make = () => new SharedCircuitBreaker('members', { service: { url: 'https://x.example', token: 't', fetch }, breaker: { failureThreshold: 2 }, clock: () => now });
  for (const [kind, b] of [
    ['shared', make()],
    ['local', new CircuitBreaker('members', { failureThreshold: 2, clock: () => now })],
  ]) {
    const ok = b.tryAcquire();
    ok.success();
    ok.failure(); // settled once: nothing more
    await b.execute(() => 'ok');
    for (let i = 0; i < 2; i++) {
      const p = b.tryAcquire();
      p.failure(httpError(529));
    }
    assert.equal(b.tryAcquire(), undefined, `${kind}: refused once its own failures opened it`);
    assert.equal(b.isOpen(), true, kind);
    assert.ok(b.retryAfterMs > 0, kind);
    assert.equal(await b.execute(() => 'never', { fallback: (e, reason) => reason }), 'open', kind);
    const { admitted, rejected, successes, failures, fallbacks } = b.stats;
    assert.deepEqual({ admitted, rejected, successes, failures, fallbacks }, { admitted: 4, rejected: 2, successes: 2, failures: 2, fallbacks: 1 }, kind);
  }
});
