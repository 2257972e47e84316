// breakwater/adaptive's option values, `throttle()` and `limit()`: each validates its settings
// (naming the option and the value of what it refuses), writes them into the core's configuration
// array when a breaker is built, and brings the adaptive module the breaker then lives in (and,
// for the limit, its JavaScript). Not in the main entry, which only reads these values.
import { checkKeys, fail, num, obj, type AdaptiveValue, type Exports } from 'breakwater/internal';
import type { LimitOption, ThrottleOption } from 'breakwater';
import { Cfg } from '../codes/layout.js';
import { Slots } from '../breakers/slots.js';

/**
 * Adaptive throttling while CLOSED (Google SRE's client-side throttling): over the last
 * `windowMs`, each call is refused locally (`CircuitOpenError`, `reason: 'throttled'`) with
 * probability `max(0, (requests − multiplier × accepts) / (requests + 1))`, at most
 * `maxRejectionProbability`. Requests are the calls that ended in a success or an upstream
 * failure, and the throttled ones; accepts are the successes. A healthy upstream is never
 * throttled; at the default multiplier shedding starts once fewer than half the calls succeed.
 */
export interface AdaptiveThrottle {
  /** Requests allowed per accepted one before calls are shed (≥ 1; lower sheds earlier). Default 2. */
  multiplier?: number | undefined;
  /** The window, ms (12 buckets). Default 120 000. */
  windowMs?: number | undefined;
  /** Requests the window must hold before anything is shed. Default 20. */
  minimumRequests?: number | undefined;
  /**
   * The most a call is refused with, in (0, 1]. Default 0.8 (as Envoy's admission control): the
   * calls still let through are what sees the upstream recover.
   */
  maxRejectionProbability?: number | undefined;
}

/** `limit()`'s options: a concurrency limit with a bounded line. */
export interface ConcurrencyLimit {
  /**
   * Calls in flight at once (1–100 000); over it a call waits in line (`maxQueued`) or is refused
   * (`CircuitOpenError`, `reason: 'full'`). A stream holds its slot until it settles; a slot whose
   * call never settles is freed after `probeTimeoutMs`.
   */
  maxConcurrent: number;
  /** Calls that may wait for a slot (0–100 000); 0 refuses at once. Default 0. */
  maxQueued?: number | undefined;
  /** How long a call may wait for a slot before it is refused, ms. Default 1 000. Needs `maxQueued`. */
  queueTimeoutMs?: number | undefined;
}

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
