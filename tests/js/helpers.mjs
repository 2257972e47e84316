// Shared test helpers: a manual clock, deterministic randomness, HTTP-shaped errors.
export function manualClock(start = 1_700_000_000_000) {
  let t = start;
  const clock = () => t;
  clock.advance = (ms) => {
    t += ms;
  };
  clock.set = (v) => {
    t = v;
  };
  return clock;
}

export function httpError(status, headers = {}, extra = {}) {
  return Object.assign(new Error(`HTTP ${status}`), { status, headers, ...extra });
}

/** A promise and its resolvers. */
export function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export const tick = () => new Promise((r) => setImmediate(r));

/**
 * Runs `fn` and answers the errors thrown by the microtasks queued meanwhile (where the package's
 * events report a listener's error), caught instead of reaching the process as uncaught.
 */
export async function reportedErrors(fn) {
  const real = globalThis.queueMicrotask;
  const reported = [];
  globalThis.queueMicrotask = (task) =>
    real(() => {
      try {
        task();
      } catch (e) {
        reported.push(e);
      }
    });
  try {
    await fn();
    await tick();
  } finally {
    globalThis.queueMicrotask = real;
  }
  return reported;
}
