// The one time-out race of the package: a request to a coordinator (the shared breaker's
// transports) or to a store is given up after a bound. A leaf: it imports nothing.

/**
 * Runs `run` with a signal that aborts after `ms`, and rejects with
 * `Error("<what>no answer within <ms> ms")` then, whether or not `run` heeds the signal. The
 * timer is cleared as soon as `run` settles.
 */
export function withTimeout<T>(ms: number, run: (signal: AbortSignal) => Promise<T>, what = ''): Promise<T> {
  const ctl = new AbortController();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      ctl.abort();
      reject(new Error(`${what}no answer within ${ms} ms`));
    }, ms);
    let p: Promise<T>;
    try {
      p = run(ctl.signal);
    } catch (e) {
      clearTimeout(timer);
      reject(e);
      return;
    }
    p.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}
