// Runs in headless Chromium: the package's browser entry, loaded through an import map.
import { CircuitBreaker, withRetry, isCircuitOpenError, BreakerRegistry } from 'breakwater';

const results = [];
const check = (name, ok, detail = '') => results.push({ name, ok: Boolean(ok), detail: String(detail) });

try {
  let t = 1_700_000_000_000;
  const b = new CircuitBreaker('browser', { failureThreshold: 2, resetTimeout: 1_000, clock: () => t });
  const boom = async () => {
    throw Object.assign(new Error('overloaded'), { status: 529 });
  };
  await b.execute(boom).catch(() => {});
  await b.execute(boom).catch(() => {});
  check('opens after two 529s', b.state === 'OPEN', b.state);
  const err = await b.execute(async () => 1).catch((e) => e);
  check('rejects with CircuitOpenError', isCircuitOpenError(err), err);
  t += 1_000;
  let upstream = 0;
  const settled = await Promise.allSettled(
    Array.from({ length: 50 }, () => b.execute(async () => { upstream++; await new Promise((r) => setTimeout(r, 5)); })),
  );
  check('one probe out of 50', upstream === 1 && settled.filter((s) => s.status === 'fulfilled').length === 1, upstream);
  check('closed again', b.state === 'CLOSED', b.state);

  // A real fetch to the test server: 503 with retry-after-ms, then 200.
  const sleeps = [];
  const res = await withRetry(() => fetch('/flaky'), { sleep: async (ms) => { sleeps.push(ms); }, jitter: 'none', baseDelayMs: 10 });
  check('withRetry over fetch Responses', res.status === 200 && (await res.text()) === 'ok' && sleeps.join() === '250', sleeps);

  // A success that brings a count window to its minimum opens it then, for the whole period.
  const w = new CircuitBreaker('count-trip', { failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 }, resetTimeout: 30_000, clock: () => t });
  for (let i = 0; i < 3; i++) await w.execute(boom).catch(() => {});
  await w.execute(async () => 'ok');
  t += 1_000;
  const still = await w.execute(async () => 'probe?').catch((e) => e);
  check('a success that trips a count window opens it for the whole period', w.state === 'OPEN' && isCircuitOpenError(still), `${w.state} ${still}`);

  // breakwater/adaptive: its module fetched and compiled beside the main one.
  const { adaptiveCase, checkAdaptive } = await import('./adaptive-case.mjs');
  const fail = (m) => { throw new Error(m); };
  const shim = { equal: (a, b) => a === b || fail(`${a} !== ${b}`), ok: (v, m) => v || fail(m ?? 'not ok') };
  const adaptive = await adaptiveCase();
  let why = '';
  try { checkAdaptive(adaptive, shim); } catch (e) { why = e.message; }
  check('breakwater/adaptive sheds and limits', why === '', `${why} ${JSON.stringify(adaptive)}`);

  const reg = new BreakerRegistry({ failureThreshold: 1 });
  check('registry', reg.get('a') === reg.get('a'));
  const json = JSON.stringify(b);
  check('toJSON', JSON.parse(json).name === 'browser', json);
  let rangeError = false;
  try { new CircuitBreaker('x', { resetTimeout: -1 }); } catch (e) { rangeError = e instanceof RangeError; }
  check('RangeError for a negative option', rangeError);
} catch (e) {
  check('no exception', false, e?.stack ?? e);
}
window.__results = results;
