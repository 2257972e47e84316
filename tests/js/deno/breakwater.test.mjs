// Deno (installed from npm when available): resolves the package from node_modules with the
// "deno" condition, which fetches the .wasm from a file: URL.
import assert from 'node:assert/strict';
import { CircuitBreaker, withRetry, isCircuitOpenError } from 'breakwater';

Deno.test('a breaker opens, rejects and recovers under Deno', async () => {
  let t = 1_700_000_000_000;
  const b = new CircuitBreaker('deno', { failureThreshold: 2, resetTimeout: 1_000, clock: () => t });
  const boom = () => Promise.reject(Object.assign(new Error('overloaded'), { status: 529 }));
  await b.execute(boom).catch(() => {});
  await b.execute(boom).catch(() => {});
  assert.equal(b.state, 'OPEN');
  await assert.rejects(b.execute(() => Promise.resolve(1)), (e) => isCircuitOpenError(e));
  t += 1_000;
  assert.equal(await b.execute(() => Promise.resolve('back')), 'back');
  assert.equal(b.state, 'CLOSED');
});

Deno.test('withRetry honours retry-after under Deno', async () => {
  const sleeps = [];
  let n = 0;
  const v = await withRetry(
    () => {
      if (++n === 1) throw Object.assign(new Error('busy'), { status: 429, headers: new Headers({ 'retry-after': '2' }) });
      return Promise.resolve('ok');
    },
    { jitter: 'none', sleep: (ms) => { sleeps.push(ms); return Promise.resolve(); } },
  );
  assert.equal(v, 'ok');
  assert.deepEqual(sleeps, [2000]);
});
