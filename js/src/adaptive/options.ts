// breakwater/adaptive's option values, `throttle()` and `limit()`: each validates its settings
// (naming the option and the value of what it refuses), writes them into the core's configuration
// array when a breaker is built, and brings the adaptive module the breaker then lives in (and,
// for the limit, its JavaScript). Not in the main entry, which only reads these values.
import { checkKeys, fail, num, obj, type AdaptiveValue, type Exports } from 'breakwater/internal';
import type { AdaptiveThrottle, ConcurrencyLimit, LimitOption, ThrottleOption } from 'breakwater';
import { Cfg } from '../codes/layout.js';
import { Slots } from '../breakers/slots.js';

/** The adaptive module, set by this entry's runtime loader before anything else runs. */
let module: Exports | undefined;

/** Called once by breakwater/adaptive's runtime entries (js/entry/adaptive-*) with the loaded module. */
export function setAdaptiveModule(exports: Exports): void {
  module ??= exports;
}

function loaded(): Exports {
  if (module === undefined) throw new Error('breakwater/adaptive: its WebAssembly module is not loaded (import the package entry, not a file inside it)');
  return module;
}

/**
 * Adaptive throttling while CLOSED (Google SRE's client-side throttling), for a breaker's
 * `adaptiveThrottle` option: over the last `windowMs`, each call is refused locally
 * (`CircuitOpenError`, `reason: 'throttled'`) with probability
 * `max(0, (requests − multiplier × accepts) / (requests + 1))`, at most
 * `maxRejectionProbability`. A shared breaker sheds its share of the fleet's probability.
 */
export function throttle(options: AdaptiveThrottle = {}): ThrottleOption {
  const t = obj('throttle options', options) ?? {};
  checkKeys('throttle options', t, ['multiplier', 'windowMs', 'minimumRequests', 'maxRejectionProbability']);
  const multiplier = num('adaptiveThrottle.multiplier', t.multiplier, 2, 1, 1e6, false);
  const windowMs = num('adaptiveThrottle.windowMs', t.windowMs, 120_000, 1);
  const minimum = num('adaptiveThrottle.minimumRequests', t.minimumRequests, 20, 1, 2 ** 32 - 1);
  const max = num('adaptiveThrottle.maxRejectionProbability', t.maxRejectionProbability, 0.8, 0, 1, false);
  if (max === 0) fail('adaptiveThrottle.maxRejectionProbability', 0, 'a probability in (0, 1]');
  const value: AdaptiveValue = {
    kind: 'throttle',
    x: loaded(),
    write(cfg) {
      cfg[Cfg.ThrottleMultiplier] = multiplier;
      cfg[Cfg.ThrottleWindow] = windowMs;
      cfg[Cfg.ThrottleMinimum] = minimum;
      cfg[Cfg.ThrottleMax] = max;
    },
  };
  return Object.freeze(value) as unknown as ThrottleOption;
}

/**
 * A concurrency limit with a bounded line, for a `CircuitBreaker`'s `concurrency` option: over
 * `maxConcurrent` calls in flight a call waits in line (at most `maxQueued`, for at most
 * `queueTimeoutMs`) or is refused (`CircuitOpenError`, `reason: 'full'`).
 */
export function limit(options: ConcurrencyLimit): LimitOption {
  const l = obj('limit options', options) ?? fail('limit options', options, 'an object { maxConcurrent, maxQueued?, queueTimeoutMs? }');
  checkKeys('limit options', l, ['maxConcurrent', 'maxQueued', 'queueTimeoutMs']);
  if (l.maxConcurrent === undefined) fail('concurrency.maxConcurrent', undefined, 'an integer in [1, 100000]');
  const maxConcurrent = num('concurrency.maxConcurrent', l.maxConcurrent, 0, 1, 100_000);
  const maxQueued = num('concurrency.maxQueued', l.maxQueued, 0, 0, 100_000);
  if (l.queueTimeoutMs !== undefined && maxQueued === 0) {
    throw new TypeError('breakwater: option "concurrency.queueTimeoutMs" needs "concurrency.maxQueued" (nothing waits without it)');
  }
  const queueTimeoutMs = num('concurrency.queueTimeoutMs', l.queueTimeoutMs, 1_000, 1);
  const value: AdaptiveValue = {
    kind: 'limit',
    x: loaded(),
    write(cfg) {
      cfg[Cfg.MaxConcurrent] = maxConcurrent;
      cfg[Cfg.MaxQueued] = maxQueued;
      cfg[Cfg.QueueTimeout] = queueTimeoutMs;
    },
    slots: (x, h, now) => new Slots(x, h, now),
  };
  return Object.freeze(value) as unknown as LimitOption;
}
