// breakwater/adaptive's option values, `throttle()` and `limit()`: each validates its settings
// (naming the option and the value of what it refuses), writes them into the core's configuration
// array when a breaker is built, and brings the adaptive module the breaker then lives in (and,
// for the limit, its JavaScript). Not in the main entry, which only reads these values.
import { checkKeys, create, fail, finalizer, memory, num, obj, type AdaptiveValue, type Exports, type HedgeValue } from 'breakwater/internal';
import type { HedgeOption, HedgeStats, LimitOption, ThrottleOption } from 'breakwater';
import { Cfg, Hedge, HedgeOp, HedgeStats as Stat, Limit } from '../codes/layout.js';
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
  const multiplier = num('adaptiveThrottle.multiplier', t.multiplier, 2, 1, Infinity, false, ')');
  const windowMs = num('adaptiveThrottle.windowMs', t.windowMs, 120_000, 1);
  const minimum = num('adaptiveThrottle.minimumRequests', t.minimumRequests, 20, 1, Limit.MaxCount);
  const max = num('adaptiveThrottle.maxRejectionProbability', t.maxRejectionProbability, 0.8, 0, 1, false, '(');
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
  if (l.maxConcurrent === undefined) fail('concurrency.maxConcurrent', undefined, `an integer in [1, ${Limit.MaxBulkhead}]`);
  const maxConcurrent = num('concurrency.maxConcurrent', l.maxConcurrent, 0, 1, Limit.MaxBulkhead);
  const maxQueued = num('concurrency.maxQueued', l.maxQueued, 0, 0, Limit.MaxBulkhead);
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

/** `hedge()`'s options, each optional. */
export interface HedgeSettings {
  /**
   * How long the tier asked may show no progress before the next one is asked too, ms; or
   * `'auto'`: the `quantile` of that tier's recent times to first progress (the last 128 to 256
   * calls), clamped to `[minAfterMs, maxAfterMs]`, and `maxAfterMs` until it has seen 20 calls.
   * Default `'auto'`.
   */
  afterMs?: number | 'auto' | undefined;
  /**
   * The share of calls that may be hedged, in (0, 1]: a token bucket that starts empty, gains
   * `budget` of a token per call and holds at most 10, so that hedges never outnumber
   * `budget` × calls, even when a partial outage makes every call slow. Default 0.1.
   */
  budget?: number | undefined;
  /** `'auto'`: the quantile of recent first-progress times, in [0.5, 0.999]. Default 0.95. */
  quantile?: number | undefined;
  /** `'auto'`: the shortest delay, ms. Default 100. */
  minAfterMs?: number | undefined;
  /** `'auto'`: the longest delay, and the delay until a tier has 20 samples, ms. Default 10 000. */
  maxAfterMs?: number | undefined;
}

/**
 * A hedging policy for `FallbackChain`'s and `fallbackModel`'s `hedge` option: when the tier
 * asked has shown no progress after `afterMs`, the next tier is asked too and the first to
 * answer wins (the other is aborted, not counted as failed), for at most a `budget` share of the
 * calls. The core decides the delay and spends the budget. Give each chain its own value; read
 * `stats` for what it did.
 */
export function hedge(options: HedgeSettings = {}): HedgeOption {
  const o = obj('hedge options', options) ?? {};
  checkKeys('hedge options', o, ['afterMs', 'budget', 'quantile', 'minAfterMs', 'maxAfterMs']);
  const auto = o.afterMs === undefined || o.afterMs === 'auto';
  const input = new Float64Array(Hedge.Len);
  input[Hedge.After] = auto ? 0 : num('hedge.afterMs', o.afterMs, 0, 1);
  const budget = num('hedge.budget', o.budget, 0.1, 0, 1, false);
  if (budget === 0) fail('hedge.budget', 0, 'a share in (0, 1]');
  input[Hedge.Budget] = budget;
  input[Hedge.Quantile] = num('hedge.quantile', o.quantile, 0.95, 0.5, 0.999, false);
  const min = num('hedge.minAfterMs', o.minAfterMs, 100, 1);
  input[Hedge.MinAfter] = min;
  input[Hedge.MaxAfter] = num('hedge.maxAfterMs', o.maxAfterMs, Math.max(10_000, min), min);
  if (!auto && (o.quantile !== undefined || o.minAfterMs !== undefined || o.maxAfterMs !== undefined)) {
    throw new TypeError('breakwater: hedge options quantile, minAfterMs and maxAfterMs are for afterMs: \'auto\' (a fixed afterMs uses none of them)');
  }
  const x = loaded();
  const h = create(x.hedge_new!, input, x);
  const op = (o: HedgeOp, tier = 0, value = 0): number => x.hedge_op!(h, o, tier, value);
  const value: HedgeValue = {
    kind: 'hedge',
    call: () => void op(HedgeOp.Call),
    after: (i) => op(HedgeOp.After, i),
    start: (calm) => op(HedgeOp.Start, 0, calm ? 1 : 0) === 1,
    progress: (i, ms) => void op(HedgeOp.Progress, i, Math.max(0, Math.round(ms))),
    finish: (won, tokens) => void op(won ? HedgeOp.Won : HedgeOp.Lost, 0, tokens),
    get stats(): HedgeStats {
      const at = op(HedgeOp.Stats) / 8;
      const m = memory(x);
      return {
        calls: m[at + Stat.Calls]!,
        started: m[at + Stat.Started]!,
        won: m[at + Stat.Won]!,
        lost: m[at + Stat.Lost]!,
        refused: m[at + Stat.Refused]!,
        held: m[at + Stat.Held]!,
        extraInputTokens: m[at + Stat.ExtraInput]!,
        tokens: m[at + Stat.Tokens]!,
      };
    },
  } as HedgeValue;
  finalizer?.register(value, [x, h]);
  return Object.freeze(value);
}
