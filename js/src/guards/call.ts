// One guarded call: the caller's `signal` and a `timeoutMs`, for every breaker of the package
// (`CircuitBreaker.execute`, the shared and store breakers' `execute`), between the breaker's own
// admission and its own report. A cancel is ignored; a time-out (this one, or an abort whose
// reason is a time-out) is an upstream failure.
import { TimeoutError } from '../helpers/errors.js';
import { fail, num } from '../helpers/options.js';
import { FAILURE } from '../classify.js';

/** How the guard reports the call's one outcome to its breaker (the error, when it failed). */
export type SettleCall = (outcome: number, error: unknown) => void;
/** How a breaker counts how a call ended (`outcomeCode` with its own rules). */
export type ClassifyCall = (result: unknown, resolved: boolean, signal: AbortSignal | undefined) => number;

/** Checks `signal` and `timeoutMs`, naming the option and the value. */
export function checkCallOptions<O extends { signal?: AbortSignal | undefined; timeoutMs?: number | undefined }>(options: O): O {
  const { signal, timeoutMs } = options;
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function')) {
    fail('signal', signal, 'an AbortSignal');
  }
  if (timeoutMs !== undefined) num('timeoutMs', timeoutMs, 0, 0);
  return options;
}

/**
 * Runs `fn` (already admitted) with an inner signal that aborts when `signal` does or the time
 * runs out; settles exactly once.
 */
export function guardCall<T>(
  fn: (context: { signal: AbortSignal }) => T | Promise<T>,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  settle: SettleCall,
  classify: ClassifyCall,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const inner = new AbortController();
    let done = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (outcome: number, ok: boolean, value: unknown) => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle(outcome, ok ? undefined : value);
      if (ok) resolve(value as T);
      else reject(value);
    };
    const onAbort = () => {
      // A cancel is ignored; an abort for a time-out (AbortSignal.timeout, an SDK's) fails.
      inner.abort(signal!.reason);
      finish(classify(signal!.reason, false, signal), false, signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        const e = new TimeoutError(timeoutMs);
        inner.abort(e);
        finish(FAILURE, false, e);
      }, timeoutMs);
    }
    let p: T | Promise<T>;
    try {
      p = fn({ signal: inner.signal });
    } catch (e) {
      finish(classify(e, false, undefined), false, e);
      return;
    }
    Promise.resolve(p).then(
      (v) => finish(classify(v, true, undefined), true, v),
      (e) => finish(classify(e, false, signal), false, e),
    );
  });
}
