// The bundles are minified, yet every exported class keeps its name (`Cls.name`, so
// `err.constructor.name` in logs and error trackers) and every error its `.name`, through the ESM
// and the CommonJS builds of each entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import './workerd-module.mjs';

const require = createRequire(import.meta.url);

/** The exported classes of each entry. */
const CLASSES = {
  breakwater: ['CircuitBreaker', 'BreakerRegistry', 'FallbackChain', 'RetryBudget', 'CircuitOpenError', 'TimeoutError', 'StreamError'],
  'breakwater/shared': ['SharedCircuitBreaker'],
  'breakwater/store': ['StoreCircuitBreaker', 'RedisStore', 'MemoryStore'],
  'breakwater/ai': ['ModelAnswerError'],
  'breakwater/prometheus': ['PrometheusMetrics'],
  'breakwater/otel': ['OpenTelemetryMetrics'],
  'breakwater/cloudflare': ['BreakerObject'],
};

/** One instance of each error class, as the package throws it. */
const ERRORS = {
  CircuitOpenError: (C) => new C('anthropic', 'OPEN', 'open', 1000),
  TimeoutError: (C) => new C(5000),
  StreamError: (C) => new C('empty', 'the stream ended before any content'),
  ModelAnswerError: (C) => new C('empty', 'the model answered nothing', { isRetryable: true }),
};

for (const [format, load] of [
  ['ESM', (entry) => import(entry)],
  ['CommonJS', async (entry) => require(entry)],
]) {
  for (const [entry, names] of Object.entries(CLASSES)) {
    // breakwater/cloudflare is ESM only: it imports the runtime's 'cloudflare:workers'.
    if (format === 'CommonJS' && entry === 'breakwater/cloudflare') continue;
    test(`${entry} (${format}): every exported class keeps its name`, async () => {
      const mod = await load(entry);
      for (const name of names) {
        assert.equal(typeof mod[name], 'function', `${name} is exported`);
        assert.equal(mod[name].name, name, `${name}.name`);
        const make = ERRORS[name];
        if (make) {
          const err = make(mod[name]);
          assert.ok(err instanceof Error);
          assert.equal(err.constructor.name, name, `new ${name}().constructor.name`);
          assert.equal(err.name, name, `new ${name}().name`);
          assert.match(String(err), new RegExp(`^${name}: `));
        }
      }
    });
  }
}

test('a shared breaker refuses with the main entry\'s error, under its name: no alias of it', async () => {
  const { CircuitOpenError } = await import('breakwater');
  const shared = await import('breakwater/shared');
  const store = await import('breakwater/store');
  assert.equal(shared.SharedCircuitOpenError, undefined);
  assert.equal(store.SharedCircuitOpenError, undefined);
  const { MemoryStore, StoreCircuitBreaker } = store;
  const b = new StoreCircuitBreaker('names', { store: new MemoryStore() });
  await b.isolate();
  await b.flush();
  const e = await b.execute(() => 1).catch((x) => x);
  assert.ok(e instanceof CircuitOpenError, String(e));
  assert.equal(e.constructor.name, 'CircuitOpenError');
});

test('the errors the breakers throw name their class', async () => {
  const { CircuitBreaker } = await import('breakwater');
  const b = new CircuitBreaker('names');
  b.isolate();
  const open = await b.execute(() => 1).catch((e) => e);
  assert.equal(open.constructor.name, 'CircuitOpenError');
  assert.equal(open.name, 'CircuitOpenError');
  const late = await new CircuitBreaker('late').execute(() => new Promise(() => {}), { timeoutMs: 1 }).catch((e) => e);
  assert.equal(late.constructor.name, 'TimeoutError');
  assert.equal(late.name, 'TimeoutError');
});
