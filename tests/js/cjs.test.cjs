// The CommonJS entry (`require('breakwater')`), and the ESM and CJS copies agreeing.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const bw = require('breakwater');

test('require("breakwater") gives the whole API', () => {
  for (const name of ['CircuitBreaker', 'CircuitOpenError', 'isCircuitOpenError', 'withRetry', 'BreakerRegistry', 'RetryBudget']) {
    assert.equal(typeof bw[name], 'function', name);
  }
});

test('a CommonJS breaker opens, rejects and recovers', async () => {
  let t = 1_000_000;
  const b = new bw.CircuitBreaker('cjs', { failureThreshold: 2, resetTimeout: 1_000, clock: () => t });
  const boom = async () => {
    throw Object.assign(new Error('overloaded'), { status: 529 });
  };
  await assert.rejects(b.execute(boom));
  await assert.rejects(b.execute(boom));
  assert.equal(b.state, 'OPEN');
  await assert.rejects(b.execute(async () => 1), (e) => bw.isCircuitOpenError(e));
  t += 1_000;
  assert.equal(await b.execute(async () => 'back'), 'back');
  assert.equal(b.state, 'CLOSED');
});

test('isCircuitOpenError works across the ESM and CJS copies of the package', async () => {
  const esm = await import('breakwater');
  assert.notEqual(esm.CircuitOpenError, bw.CircuitOpenError, 'two copies (the dual-package case)');
  const b = new esm.CircuitBreaker('esm', { failureThreshold: 1 });
  b.isolate();
  const err = await b.execute(async () => 1).catch((e) => e);
  // `instanceof` checks the package's mark, not the class: it holds across copies too.
  assert.notEqual(Object.getPrototypeOf(err), bw.CircuitOpenError.prototype);
  assert.equal(err instanceof bw.CircuitOpenError, true);
  assert.equal(bw.isCircuitOpenError(err), true);
  assert.equal(esm.isCircuitOpenError(new bw.CircuitOpenError('x', 'OPEN', 'open', 1)), true);
});

test('withRetry from CommonJS', async () => {
  let n = 0;
  const v = await bw.withRetry(
    async () => {
      if (++n < 3) throw Object.assign(new Error('busy'), { status: 503 });
      return n;
    },
    { sleep: async () => {} },
  );
  assert.equal(v, 3);
});
