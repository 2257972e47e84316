// breakwater/adaptive's options, `adaptiveThrottle` and `maxConcurrent` (+ `maxQueued`,
// `queueTimeoutMs`), read into the core's configuration array. Not in the main entry: its `build`
// takes this reader from breakwater/adaptive (for a CircuitBreaker) or from a shared breaker,
// whose module sheds too (the throttle is fleet-wide; the concurrency limit is refused there).
import { checkKeys, fail, num, obj } from 'breakwater/internal';
import { Cfg } from '../codes/layout.js';

/** Reads the options into `cfg`, naming the option and the value of what it refuses. */
export function adaptiveOptions(o: Record<string, unknown>, cfg: Float64Array, where: string): void {
  const throttle = o.adaptiveThrottle === true ? {} : o.adaptiveThrottle === false ? undefined : obj('adaptiveThrottle', o.adaptiveThrottle);
  if (throttle !== undefined) {
    checkKeys(`adaptiveThrottle of ${where}`, throttle, ['multiplier', 'windowMs', 'minimumRequests', 'maxRejectionProbability']);
    cfg[Cfg.ThrottleMultiplier] = num('adaptiveThrottle.multiplier', throttle.multiplier, 2, 1, 1e6, false);
    cfg[Cfg.ThrottleWindow] = num('adaptiveThrottle.windowMs', throttle.windowMs, 120_000, 1);
    cfg[Cfg.ThrottleMinimum] = num('adaptiveThrottle.minimumRequests', throttle.minimumRequests, 20, 1, 2 ** 32 - 1);
    const max = num('adaptiveThrottle.maxRejectionProbability', throttle.maxRejectionProbability, 0.8, 0, 1, false);
    if (max === 0) fail('adaptiveThrottle.maxRejectionProbability', 0, 'a probability in (0, 1]');
    cfg[Cfg.ThrottleMax] = max;
  }
  if (o.maxConcurrent === undefined) {
    for (const k of ['maxQueued', 'queueTimeoutMs'] as const) {
      if (o[k] !== undefined) throw new TypeError(`breakwater: option "${k}" in ${where} needs "maxConcurrent"`);
    }
  } else {
    cfg[Cfg.MaxConcurrent] = num('maxConcurrent', o.maxConcurrent, 0, 1, 100_000);
    cfg[Cfg.MaxQueued] = num('maxQueued', o.maxQueued, 0, 0, 100_000);
    if (o.queueTimeoutMs !== undefined && cfg[Cfg.MaxQueued] === 0) {
      throw new TypeError(`breakwater: option "queueTimeoutMs" in ${where} needs "maxQueued" (nothing waits without it)`);
    }
    cfg[Cfg.QueueTimeout] = num('queueTimeoutMs', o.queueTimeoutMs, 1_000, 1);
  }
}

/**
 * As `adaptiveOptions`, for the breakers whose state is the core's lease client or coordinator
 * (`breakwater/shared`, `breakwater/store`): the concurrency limit is a `CircuitBreaker`'s own
 * and is refused there, naming the option, rather than silently ignored.
 */
export function sharedOptions(o: Record<string, unknown>, cfg: Float64Array, where: string): void {
  for (const k of ['maxConcurrent', 'maxQueued', 'queueTimeoutMs'] as const) {
    if (o[k] !== undefined) {
      throw new TypeError(
        `breakwater: option "${k}" in ${where} is not supported here: the concurrency limit is a CircuitBreaker's (wrap the calls in one with maxConcurrent)`,
      );
    }
  }
  adaptiveOptions(o, cfg, where);
}
