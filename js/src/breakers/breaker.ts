import { create, memory, read, readAt, wasm, type Exports } from '../glue.js';
import { Cfg, Control, Fast, Info, Limit, Permit, Queue, Reject, Sentinel, Transition, Trip, WindowKind } from '../codes/layout.js';
import type { Slots } from './slots.js';
import { CircuitOpenError, isTimeoutError } from '../helpers/errors.js';
import { Emitter, type Unsubscribe } from '../helpers/events.js';
import { checkKeys, fail, fn, num, obj, within } from '../helpers/options.js';
import { FAILURE, IGNORED, SUCCESS, outcomeCode } from '../classify.js';
import type { StreamOptions, StreamSource } from '../guards/stream.js';
import { guardStream } from '../guards/load-guard.js';
import { checkCallOptions, guardCall } from '../guards/call.js';
import { streamWithRetry, type StreamRetryOptions } from './retry.js';
import { MODES, REASONS, STATES, type BreakerMode, type BreakerState, type RejectReason } from '../codes/names.js';

export type { BreakerMode, BreakerState };

/**
 * A share-of-calls trip rule (failures, or slow calls). Give `windowCalls` or `windowMs`.
 * @inline
 */
export interface RateRule {
  /** Percentage in (0, 100] that opens the breaker. */
  threshold: number;
  /** Calls the window must hold before the rate counts. Default 10. */
  minimumCalls?: number | undefined;
  /** Count-based window: the last N calls. Default 100 (when `windowMs` is not given). */
  windowCalls?: number | undefined;
  /** Time-based window in ms (10 buckets). */
  windowMs?: number | undefined;
}

/**
 * The slow-call trip rule: a `RateRule` over the share of slow calls.
 * @inline
 */
export interface SlowCallRule extends RateRule {
  /** A call slower than this (ms) is slow. */
  slowCallMs: number;
}

/** Only `breakwater/adaptive` makes the values of `adaptiveThrottle` and `concurrency`. */
declare const fromAdaptive: unique symbol;

/** `throttle()` of `breakwater/adaptive`: the value of the `adaptiveThrottle` option. */
export interface ThrottleOption {
  /** Always `'throttle'`: the option the value is for. */
  readonly kind: 'throttle';
  /** The mark of a value `breakwater/adaptive` made (no other code can make one). */
  readonly [fromAdaptive]: true;
}

/** `limit()` of `breakwater/adaptive`: the value of the `concurrency` option. */
export interface LimitOption {
  /** Always `'limit'`: the option the value is for. */
  readonly kind: 'limit';
  /** The mark of a value `breakwater/adaptive` made (no other code can make one). */
  readonly [fromAdaptive]: true;
}

/** What a `hedge()` value has done since it was made (`HedgeOption.stats`). */
export interface HedgeStats {
  /** Calls made through the chains that use it (each refilled the budget). */
  calls: number;
  /** Hedges started: the next tier asked while the current one was still running. */
  started: number;
  /** Hedges that answered first (the tier asked first was aborted). */
  won: number;
  /** Hedges that lost the race (aborted: the tier asked first answered first). */
  lost: number;
  /** Hedges the budget refused. */
  refused: number;
  /** Hedges held back because a tier was HALF_OPEN, OPEN or shedding. */
  held: number;
  /** The aborted losers' estimated input tokens (`inputTokens` of the calls): the races' extra cost. */
  extraInputTokens: number;
  /** Tokens in the budget now: hedges it would allow in a row (at most 10). */
  tokens: number;
}

/** `hedge()` of `breakwater/adaptive`: the value of `FallbackChain`'s and `fallbackModel`'s `hedge` option. */
export interface HedgeOption {
  /** Always `'hedge'`: the option the value is for. */
  readonly kind: 'hedge';
  /** What it has done: hedges started, won, lost, refused, the estimated extra input. */
  readonly stats: HedgeStats;
  /** The mark of a value `breakwater/adaptive` made (no other code can make one). */
  readonly [fromAdaptive]: true;
}

/**
 * The options every trip rule shares.
 * @inline
 */
export interface BreakerSettings {
  /**
   * Defaults for every `stream()` call of this breaker (one breaker per model: a reasoning
   * model's limits set once), each overridden by the call's own: the time limits, `retry`,
   * `measure`. Default: none.
   */
  stream?: StreamDefaults | undefined;
  /**
   * Shed a degraded upstream's excess smoothly while CLOSED, on top of the trip rule (which still
   * opens the breaker on a hard outage): `throttle()` or `throttle({ … })` from
   * `breakwater/adaptive`, whose module it brings. Default: off.
   */
  adaptiveThrottle?: ThrottleOption | undefined;
  /**
   * A concurrency limit: `limit({ maxConcurrent, maxQueued, queueTimeoutMs })` from
   * `breakwater/adaptive`, whose module it brings. Default: no limit.
   */
  concurrency?: LimitOption | undefined;
  /** ms OPEN before a probe is let through. Default 30 000. */
  resetTimeout?: number | undefined;
  /** Successful probes needed to close. Default 1. */
  halfOpenSuccessThreshold?: number | undefined;
  /** Probes in flight at once while HALF_OPEN (1–1024). Default 1. */
  halfOpenMaxProbes?: number | undefined;
  /** A probe that never reports frees its slot after this many ms. Default 30 000. */
  probeTimeoutMs?: number | undefined;
  /** Spread of each open period, a fraction in [0, 1): ±openJitter × resetTimeout. Default 0. */
  openJitter?: number | undefined;
  /** Each failed half-open round multiplies the next open period by this (≥ 1). Default 1. */
  openBackoffFactor?: number | undefined;
  /** Cap of the grown open period, ms. Default max(300 000, resetTimeout). */
  maxResetTimeoutMs?: number | undefined;
  /** Decide yourself: true = upstream failure, false = ignore, undefined = default rules. */
  isFailure?: ((error: unknown) => boolean | undefined) | undefined;
  /** Milliseconds since the epoch. Default `Date.now`. */
  clock?: (() => number) | undefined;
  /** Uniform in [0, 1), for the open jitter's seed. Default `Math.random`. */
  random?: (() => number) | undefined;
}

/**
 * The default trip rule: failures in a row, or within `monitoringWindow`.
 * @inline
 */
export interface ConsecutiveTrip {
  /** Failures that open the breaker: in a row, or within `monitoringWindow` if given. Default 5. */
  failureThreshold?: number | undefined;
  /** Count failures within this many ms (a sliding window) instead of in a row. */
  monitoringWindow?: number | undefined;
  /** Another trip rule's option: not with this one. */
  failureRate?: undefined;
  /** Another trip rule's option: not with this one. */
  slowCallRate?: undefined;
}

/**
 * Open when a share of the window's calls failed.
 * @inline
 */
export interface FailureRateTrip {
  /** Open when this share of the window's calls failed. */
  failureRate: RateRule;
  /** Another trip rule's option: not with this one. */
  failureThreshold?: undefined;
  /** Another trip rule's option: not with this one. */
  monitoringWindow?: undefined;
  /** Another trip rule's option: not with this one. */
  slowCallRate?: undefined;
}

/**
 * Open when a share of the window's calls was slow.
 * @inline
 */
export interface SlowCallRateTrip {
  /** Open when this share of the window's calls was slow. */
  slowCallRate: SlowCallRule;
  /** Another trip rule's option: not with this one. */
  failureThreshold?: undefined;
  /** Another trip rule's option: not with this one. */
  monitoringWindow?: undefined;
  /** Another trip rule's option: not with this one. */
  failureRate?: undefined;
}

/**
 * One trip rule, chosen by its options: `failureThreshold` (+ `monitoringWindow`), `failureRate`
 * or `slowCallRate`. Giving two is a type error (and a `TypeError` at run time).
 * @inline
 */
export type TripRule = ConsecutiveTrip | FailureRateTrip | SlowCallRateTrip;

/** A breaker's options: the shared settings and one trip rule. */
export type CircuitBreakerOptions = BreakerSettings & TripRule;


const KEYS = [
  'failureThreshold',
  'monitoringWindow',
  'failureRate',
  'slowCallRate',
  'resetTimeout',
  'halfOpenSuccessThreshold',
  'halfOpenMaxProbes',
  'probeTimeoutMs',
  'openJitter',
  'openBackoffFactor',
  'maxResetTimeoutMs',
  'isFailure',
  'clock',
  'random',
  'adaptiveThrottle',
  'concurrency',
  'stream',
] as const;

/** @internal */
export const EXECUTE_KEYS = ['fallback', 'signal', 'timeoutMs'];

/**
 * Why `execute`'s `fallback` answered: the breaker refused the call (a `RejectReason`: `error` is
 * the `CircuitOpenError`), the call failed with an upstream failure after whatever retries it
 * made itself (`'failure'`: `error` is its error, or the failing `Response`), or it ran out of
 * `timeoutMs` (`'timeout'`: a `TimeoutError`).
 */
export type FallbackReason = RejectReason | 'failure' | 'timeout';

/** `execute`'s options: a fallback, an abort signal and a time limit, each optional. */
export interface ExecuteOptions<T> {
  /**
   * Answers instead of the upstream when the breaker refuses the call (`CircuitOpenError`) or
   * the call fails with an upstream failure (429, 5xx, 529, a network error, `timeoutMs`); the
   * second argument says which. A client error or an abort is still thrown.
   */
  fallback?: ((error: unknown, reason: FallbackReason) => T | Promise<T>) | undefined;
  /** Aborting rejects at once with the signal's reason; not counted as an upstream failure. */
  signal?: AbortSignal | undefined;
  /** Fail the call with `TimeoutError` (an upstream failure) after this many ms. */
  timeoutMs?: number | undefined;
}

/** What `execute` hands the call. */
export interface CallContext {
  /** Aborted when the caller's signal aborts or the timeout fires (only with those options). */
  signal?: AbortSignal | undefined;
}

/** The `stream` option of a breaker: its `stream()` calls' defaults. */
export type StreamDefaults = Pick<
  BreakerStreamOptions<unknown>,
  'firstChunkTimeoutMs' | 'idleTimeoutMs' | 'totalTimeoutMs' | 'firstOutputTimeoutMs' | 'maxThinkingMs' | 'retry' | 'measure'
>;

const STREAM_DEFAULTS = ['firstChunkTimeoutMs', 'idleTimeoutMs', 'totalTimeoutMs', 'firstOutputTimeoutMs', 'maxThinkingMs', 'retry', 'measure'];

/** Checks a breaker's `stream` option (the limits by name now, the rest when a stream runs). */
export function checkStreamDefaults(v: unknown): StreamDefaults | undefined {
  const o = obj('stream', v);
  if (o === undefined) return undefined;
  checkKeys('stream', o, STREAM_DEFAULTS);
  for (const k of STREAM_DEFAULTS.slice(0, 5)) num(k, o[k], 0, 1);
  return o as StreamDefaults;
}

/** A stream call's options over its breaker's defaults (an option left undefined keeps the default). */
export function withDefaults<O extends object>(defaults: StreamDefaults | undefined, options: O | undefined): O | undefined {
  if (defaults === undefined) return options;
  const o: Record<string, unknown> = { ...defaults };
  for (const [k, v] of Object.entries(options ?? {})) if (v !== undefined) o[k] = v;
  return o as O;
}

/** `stream`'s options: the guard's (`StreamOptions`), and `retry`. */
export interface BreakerStreamOptions<T> extends StreamOptions<T> {
  /**
   * Retry before the first word: an attempt that fails before any content reached the reader
   * (the upstream's error status, an error event in a 200 stream, a reset, a malformed frame, no
   * sign of the model in time) is tried again on the same upstream by these rules (`withRetry`'s
   * options: attempts, backoff, jitter, Retry-After, a budget), invisible to the reader; each
   * attempt is admitted and counted by the breaker. Once content reached the reader nothing is
   * retried. `true`: the defaults.
   */
  retry?: StreamRetryOptions | boolean | undefined;
}

/** What `stream` hands the call: a signal that aborts when the stream is given up (always there). */
export interface StreamContext extends CallContext {
  signal: AbortSignal;
}

/** A permit from `tryAcquire()`: settle it exactly once (later calls do nothing). */
export interface BreakerPermit {
  /** The call succeeded. */
  success(): void;
  /**
   * The call failed; `error` is classified as `execute` would (no error: an upstream failure).
   * With the call's `signal`, the caller's own abort is ignored rather than counted.
   */
  failure(error?: unknown, signal?: AbortSignal): void;
  /** The call says nothing about the upstream, or was never made: frees the permit. */
  ignore(): void;
}

/** A state change, as `onStateChange` listeners get it. */
export interface StateChangeEvent {
  /** The breaker's name. */
  breaker: string;
  /** The state before. */
  from: BreakerState;
  /** The state now. */
  to: BreakerState;
  /** When it changed, ms since the epoch (the breaker's `clock`). */
  at: number;
}
/** A refused call, as `onReject` listeners get it. */
export interface RejectEvent {
  /** The breaker's name. */
  breaker: string;
  /** Why the call was refused. */
  reason: RejectReason;
  /** Milliseconds until a call may be admitted. */
  retryAfterMs: number;
}
/** A call counted as a success or an upstream failure, as `onSuccess` and `onFailure` listeners get it. */
export interface OutcomeEvent {
  /** The breaker's name. */
  breaker: string;
  /** `onFailure` only: the error the call failed with, when the breaker has one (not for a failing `Response`). */
  error?: unknown;
}

/** A breaker's running totals (`stats`). */
export interface BreakerStats {
  /** Calls admitted. */
  admitted: number;
  /** Calls refused by the breaker (OPEN, isolated, every probe slot taken, or shed by `adaptiveThrottle`). */
  rejected: number;
  /** Successes reported. */
  successes: number;
  /** Upstream failures reported. */
  failures: number;
  /** Outcomes that say nothing about the upstream (a client error, a cancelled call, `isFailure` answering false). */
  ignored: number;
  /** Outcomes reported with a permit from an earlier generation (before a state change): not counted. */
  stale: number;
  /** Slow calls reported (only under a `slowCallRate` rule). */
  slow: number;
  /** Times the breaker opened (from CLOSED or HALF_OPEN, or by `isolate()`). */
  opened: number;
  /** Of the rejected calls, those `adaptiveThrottle` shed. */
  throttled: number;
  /** Calls `maxConcurrent` refused, at once or after waiting `queueTimeoutMs` (not in `rejected`). */
  full: number;
  /** Calls answered by `execute`'s `fallback`, refused or failed (kept in this process, not in snapshots). */
  fallbacks: number;
}

/** What `toJSON()` returns and `restore()` / `CircuitBreaker.fromJSON()` take. */
export interface BreakerSnapshot {
  /** The snapshot format's version: 1. */
  breakwater: 1;
  /** The breaker's name. */
  name: string;
  /** The breaker's state when the snapshot was taken. */
  state: BreakerState;
  /** The core's state as numbers, to hand back to `restore()` as it is. */
  data: number[];
}

/**
 * Validates the options (naming the option, the value and `where` they were given: the
 * constructor or method that took them) and lays them out for the core: the configuration array
 * the wasm boundaries read (`breaker_config` in src/wasm/mod.rs). Also used by `BreakerRegistry`,
 * `breakwater/shared`, `breakwater/store` and `breakwater/ai` (as `breakerConfig`, from
 * `breakwater/internal`).
 */
export function build(options: CircuitBreakerOptions, where = 'CircuitBreaker options'): Float64Array {
  const o = obj(where, options) ?? {};
  return within(where, () => config(o, where));
}

/**
 * What the values of `adaptiveThrottle` and `concurrency` carry at run time: the adaptive module
 * they live in (`x`), the writer of their settings into the configuration array, and the
 * concurrency limit's JavaScript (js/src/adaptive/options.ts makes them).
 */
export interface HedgeValue extends HedgeOption {
  /** A call begins (the budget refills). */
  call(): void;
  /** How long a call to tier `i` may show no progress before it is hedged, ms. */
  after(i: number): number;
  /** Whether a hedge starts now (`calm`: both tiers CLOSED and not shedding); spends a token. */
  start(calm: boolean): boolean;
  /** Tier `i` showed progress `ms` after it was asked (or was aborted then, losing). */
  progress(i: number, ms: number): void;
  /** A hedged call ended: the hedge answered first (`won`) or not; the loser's input tokens. */
  finish(won: boolean, inputTokens: number): void;
}

export interface AdaptiveValue {
  readonly kind: 'throttle' | 'limit';
  readonly x: Exports;
  write(cfg: Float64Array): void;
  slots?(x: Exports, h: () => number, now: () => number): Slots;
}

/** Writes option `key`'s value, made by `breakwater/adaptive`'s `throttle()` or `limit()`, or refuses it naming the import. */
function adaptiveValue(o: Record<string, unknown>, key: string, kind: AdaptiveValue['kind'], cfg: Float64Array): void {
  const v = o[key] as AdaptiveValue | undefined;
  if (v === undefined) return;
  if (v?.kind !== kind || typeof v.write !== 'function') fail(key, v, `${kind}() from 'breakwater/adaptive'`, true);
  v.write(cfg);
}

function config(o: Record<string, unknown>, where: string): Float64Array {
  checkKeys(where, o, KEYS);
  const cfg = new Float64Array(Cfg.Len);
  const rules = ['failureRate', 'slowCallRate'].filter((k) => o[k] !== undefined);
  if (rules.length > 1 || (rules.length === 1 && (o.failureThreshold !== undefined || o.monitoringWindow !== undefined))) {
    throw new TypeError(
      `breakwater: choose one trip rule in ${where}: failureThreshold (+ monitoringWindow), failureRate or slowCallRate`,
    );
  }
  const rate = (o.failureRate ?? o.slowCallRate) as SlowCallRule | undefined;
  if (rate !== undefined) {
    const slow = o.slowCallRate !== undefined;
    const key = slow ? 'slowCallRate' : 'failureRate';
    const r = obj(key, rate) as unknown as Record<string, unknown>;
    checkKeys(`${key} of ${where}`, r, slow ? ['threshold', 'minimumCalls', 'windowCalls', 'windowMs', 'slowCallMs'] : ['threshold', 'minimumCalls', 'windowCalls', 'windowMs']);
    if (r.threshold === undefined) fail(`${key}.threshold`, undefined, 'a percentage in (0, 100]');
    const threshold = num(`${key}.threshold`, r.threshold, 50, 0, 100, false, '(');
    if (r.windowCalls !== undefined && r.windowMs !== undefined) {
      throw new TypeError(`breakwater: give ${key}.windowCalls or ${key}.windowMs, not both (in ${where})`);
    }
    cfg[Cfg.Trip] = slow ? Trip.SlowCallRate : Trip.FailureRate;
    cfg[Cfg.Threshold] = threshold;
    if (slow) {
      if (r.slowCallMs === undefined) fail(`${key}.slowCallMs`, undefined, 'an integer >= 1');
      cfg[Cfg.WindowMs] = num(`${key}.slowCallMs`, r.slowCallMs, 0, 1);
    }
    cfg[Cfg.MinimumCalls] = num(`${key}.minimumCalls`, r.minimumCalls, 10, 1, Limit.MaxCount);
    if (r.windowMs !== undefined) {
      cfg[Cfg.WindowKind] = WindowKind.Millis;
      cfg[Cfg.WindowSize] = num(`${key}.windowMs`, r.windowMs, 0, 1);
    } else {
      cfg[Cfg.WindowSize] = num(`${key}.windowCalls`, r.windowCalls, 100, 1, Limit.MaxWindowCalls);
    }
  } else if (o.monitoringWindow !== undefined) {
    cfg[Cfg.Trip] = Trip.FailuresInWindow;
    cfg[Cfg.Threshold] = num('failureThreshold', o.failureThreshold, 5, 1, Limit.MaxWindowCalls);
    cfg[Cfg.WindowMs] = num('monitoringWindow', o.monitoringWindow, 0, 1);
  } else {
    cfg[Cfg.Threshold] = num('failureThreshold', o.failureThreshold, 5, 1, Limit.MaxCount);
  }
  fn('clock', o.clock);
  fn('isFailure', o.isFailure);
  const reset = num('resetTimeout', o.resetTimeout, 30_000, 0);
  cfg[Cfg.OpenDuration] = reset;
  cfg[Cfg.OpenJitter] = num('openJitter', o.openJitter, 0, 0, 1, false, ')');
  cfg[Cfg.OpenBackoff] = num('openBackoffFactor', o.openBackoffFactor, 1, 1, Infinity, false, ')');
  cfg[Cfg.MaxOpenDuration] = num('maxResetTimeoutMs', o.maxResetTimeoutMs, Math.max(300_000, reset), reset);
  cfg[Cfg.Probes] = num('halfOpenMaxProbes', o.halfOpenMaxProbes, 1, 1, Limit.MaxHalfOpenProbes);
  cfg[Cfg.ProbeSuccesses] = num('halfOpenSuccessThreshold', o.halfOpenSuccessThreshold, 1, 1, Limit.MaxHalfOpenSuccesses);
  cfg[Cfg.ProbeTimeout] = num('probeTimeoutMs', o.probeTimeoutMs, 30_000, 1);
  // breakwater/adaptive's options: values that bring their own code and module.
  adaptiveValue(o, 'adaptiveThrottle', 'throttle', cfg);
  adaptiveValue(o, 'concurrency', 'limit', cfg);
  const random = fn<() => number>('random', o.random) ?? Math.random;
  cfg[Cfg.Seed] = Math.floor(Math.min(Math.max(Number(random()) || 0, 0), 1) * 2 ** 53) % 2 ** 53;
  return cfg;
}

const NO_CONTEXT: CallContext = Object.freeze({});

/** Frees a collected object's state (a breaker, a hedging policy) in the module that holds it. */
export const finalizer =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<[Exports, number]>(([x, h]) => x.release(h)) : undefined;

/**
 * A circuit breaker: CLOSED → OPEN after the trip rule fires, HALF_OPEN after `resetTimeout`
 * (a limited number of probes reach the upstream), CLOSED again after enough successful probes.
 * A plain object, safe as a module-level singleton. The state machine is the Rust core, in wasm.
 */
export class CircuitBreaker {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'CircuitBreaker';
  /** The breaker's name, given to the constructor (in events, errors and metrics). */
  readonly name: string;
  /** The core's exports, and this breaker's handle there. */
  #x: Exports;
  #h: number;
  // The CLOSED fast path, as far as the core allows (`#fast`: its `FastPath` bits for this
  // configuration, read once; `#room`/`#until`/`#slowMs`: its `Breaker::quiet` answer, read
  // after every call into it). While CLOSED (automatic mode), admitting a call changes nothing
  // in the core but a counter (`Fast.Admit`; not under `adaptiveThrottle`, which decides every
  // call): `#closed` caches the permit handle of the current CLOSED generation (-1 when
  // unknown). The next `#room` successes reported before `#until` (and, under the slow-call
  // rule, no longer than `#slowMs`) change nothing but counts either. `#admitted` / `#succeeded`
  // count what the core has not seen yet, handed over (`#flush`) before anything else reaches
  // the core or a count is read. Every transition, control and restore drops the cache.
  #closed = -1;
  #room = 0;
  #until = 0;
  #slowMs = 0;
  /**
   * Every success is quiet, whenever it ends (the core's `Quiet::FREE`), and none is listened
   * to: nothing to count down, compare or emit.
   */
  #free = false;
  #fast: number;
  /** `maxConcurrent`: every call takes a slot of the core's limit first. */
  #slots: Slots | undefined;
  #admitted = 0;
  #succeeded = 0;
  #fallbacks = 0;
  #cfg: Float64Array;
  #clock: () => number;
  #isFailure: ((error: unknown) => boolean | undefined) | undefined;
  /** The `stream` option: its `stream()` calls' defaults. */
  readonly #streamDefaults: StreamDefaults | undefined;
  #stateChange = new Emitter<StateChangeEvent>();
  #reject = new Emitter<RejectEvent>();
  #success = new Emitter<OutcomeEvent>();
  #failure = new Emitter<OutcomeEvent>();

  constructor(name: string, options: CircuitBreakerOptions = {}) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new TypeError(`breakwater: a breaker needs a non-empty name, got ${JSON.stringify(name) ?? String(name)}`);
    }
    this.name = name;
    this.#cfg = build(options);
    this.#clock = options.clock ?? Date.now;
    this.#isFailure = options.isFailure;
    this.#streamDefaults = checkStreamDefaults(options.stream);
    // breakwater/adaptive's values bring the module the breaker then lives in (checked by `build`).
    const adaptive = (options.concurrency ?? options.adaptiveThrottle) as AdaptiveValue | undefined;
    this.#x = adaptive?.x ?? wasm();
    this.#h = create(this.#x.breaker, this.#cfg, this.#x);
    finalizer?.register(this, [this.#x, this.#h], this);
    this.#slots = (options.concurrency as AdaptiveValue | undefined)?.slots?.(this.#x, () => this.#h, () => this.#now());
    this.#fast = this.#info(Info.Fast);
  }

  /** Rebuilds a breaker from `toJSON()` output, under (possibly new) options. */
  static fromJSON(snapshot: BreakerSnapshot, options: CircuitBreakerOptions = {}): CircuitBreaker {
    const b = new CircuitBreaker(snapshot?.name, options);
    b.restore(snapshot);
    return b;
  }

  #now(): number {
    const t = this.#clock();
    return typeof t === 'number' && t === t ? t : Date.now();
  }

  /** One number of the core's `Info` (at `now`: only the state depends on it). */
  #info(i: Info, now = 0): number {
    return readAt(this.#x.info(this.#h, now), i, this.#x);
  }

  /** The state a call would find now: an OPEN breaker whose period has elapsed reads HALF_OPEN. */
  get state(): BreakerState {
    return STATES[this.#info(Info.State, this.#now())]!;
  }

  /** `'automatic'`, `'isolated'` (after `isolate()`) or `'disabled'` (after `disable()`). */
  get mode(): BreakerMode {
    return MODES[this.#info(Info.Mode)]!;
  }

  /** When the open period ends (ms since the epoch), or undefined when not OPEN (or isolated). */
  get openUntil(): number | undefined {
    const t = this.#info(Info.OpenUntil);
    return t < 0 ? undefined : t;
  }

  /** The share of calls `adaptiveThrottle` refuses now, in [0, 1] (0 without it, or when not CLOSED). */
  get throttleProbability(): number {
    return this.#info(Info.Throttle, this.#now());
  }

  /** Calls holding a slot of `maxConcurrent` (0 without it). */
  get inFlight(): number {
    return this.#info(Info.InFlight);
  }

  /** Calls waiting for a slot of `maxConcurrent`. */
  get queued(): number {
    return this.#info(Info.Queued);
  }

  /** Half-open probes currently holding a slot. */
  get probesInFlight(): number {
    return this.#info(Info.Probes);
  }

  /** Running totals since the breaker was built (or restored). */
  get stats(): BreakerStats {
    this.#flush(this.#now(), true);
    const s = read(this.#x.info(this.#h, 0), Info.Len, this.#x);
    return {
      admitted: s[Info.Admitted]!,
      rejected: s[Info.Rejected]!,
      successes: s[Info.Successes]!,
      failures: s[Info.Failures]!,
      ignored: s[Info.Ignored]!,
      stale: s[Info.Stale]!,
      slow: s[Info.Slow]!,
      opened: s[Info.Opened]!,
      throttled: s[Info.Throttled]!,
      full: s[Info.Full]!,
      fallbacks: this.#fallbacks,
    };
  }

  /**
   * Whether a call would be refused now (OPEN, isolated, or HALF_OPEN with every probe slot
   * taken). Takes nothing and counts nothing: for gatekeeping in front of the calls (a Next.js
   * `proxy.ts` answering 503) while the calls themselves go through `execute` on the same
   * breaker (see `globalBreakers()`). An OPEN breaker whose period has elapsed reads `false`:
   * the next call becomes the probe.
   */
  isOpen(): boolean {
    return this.#closed < 0 && this.#x.peek(this.#h, this.#now()) < 0;
  }

  /** Milliseconds until a call may be admitted (a Retry-After); 0 when one would be now. */
  get retryAfterMs(): number {
    return this.#closed < 0 ? this.#rejectEvent(-this.#x.peek(this.#h, this.#now())).retryAfterMs : 0;
  }

  /**
   * Asks to run one call you make yourself (when it cannot be wrapped in `execute`): a permit to
   * settle exactly once with `success()`, `failure(error)` or `ignore()`, or `undefined` when
   * the breaker refuses (see `retryAfterMs`). In HALF_OPEN a permit holds a probe slot until it
   * is settled (or `probeTimeoutMs` passes), so settle it on every path, `ignore()` included when
   * the call was never made. Settling again does nothing. With `maxConcurrent` a permit also
   * holds a slot (never a place in line: `tryAcquire` does not wait).
   */
  tryAcquire(): BreakerPermit | undefined {
    const now = this.#now();
    // No waiting here: a slot now, or refused as full.
    const slot = this.#slots ? this.#slots.take() : -1;
    const h = slot < -1 ? slot : this.#acquire(now);
    if (h < 0) {
      this.#slots?.leave(slot);
      if (this.#reject.size) this.#reject.emit(this.#rejectEvent(-h));
      return undefined;
    }
    let settled = false;
    const settle = (outcome: number, error?: unknown) => {
      if (settled) return;
      settled = true;
      this.#settle(now, h, outcome, error, slot);
    };
    return {
      success: () => settle(SUCCESS),
      failure: (error?: unknown, signal?: AbortSignal) =>
        settle(this.#failed(error, signal), error),
      ignore: () => settle(IGNORED),
    };
  }

  /**
   * The synchronous check: may a call go ahead now? In HALF_OPEN a `true` takes one of the probe
   * slots (so that 50 concurrent callers send exactly one probe): report every `true` with
   * `recordSuccess()`, `recordFailure(error)` or `recordIgnored()`. To look without taking a
   * slot use `isOpen()`; to hold a permit of your own, `tryAcquire()`.
   */
  isHealthy(): boolean {
    if (this.#closed >= 0) {
      this.#admitted++;
      return true;
    }
    return this.#acquire(0) >= 0;
  }

  /** Reports a success of a call let through by `isHealthy()`. */
  recordSuccess(): void {
    if (this.#free) this.#succeeded++;
    else this.#settle(0, Sentinel.None, SUCCESS, undefined);
  }

  /**
   * Reports how a call let through by `isHealthy()` failed. The error is classified as
   * `execute` would: a client error (400, 401, 404, 422…) or what `isFailure` rejects does not
   * count against the upstream (it frees a probe slot like `recordIgnored()`); with no error it
   * counts as an upstream failure. Pass the call's `signal` so that the caller's own abort is not
   * counted, as `execute({ signal })` does (an `AbortError` with no aborted signal behind it, such
   * as a hand-made time-out's `controller.abort()`, counts as a failure).
   */
  recordFailure(error?: unknown, signal?: AbortSignal): void {
    this.#settle(0, Sentinel.None, this.#failed(error, signal), error);
  }

  /** Reports a call let through by `isHealthy()` that says nothing about the upstream (or was never made): frees its probe slot. */
  recordIgnored(): void {
    this.#settle(0, Sentinel.None, IGNORED, undefined);
  }

  /** A permit handle, or a refusal `-(retryAfterMs × Reject.Scale + reason)`. */
  #acquire(now: number): number {
    if (this.#closed >= 0) {
      this.#admitted++;
      return this.#closed;
    }
    now ||= this.#now();
    this.#flush(now);
    const h = this.#x.acquire(this.#h, now);
    if (h >= 0) {
      const kind = h % Permit.Kind;
      if (kind === Permit.Normal) {
        if (this.#fast & Fast.Admit) {
          this.#closed = h;
          this.#quiet();
        }
      }
      else if (kind >= Permit.Probe) this.#emitTransition(this.#info(Info.Transition));
    }
    return h;
  }

  /**
   * Runs `fn` if the breaker admits it and counts how it ended. Errors are classified (a 400 or
   * an abort does not count against the upstream; 429, 5xx, 529, timeouts and network errors do).
   * A resolved fetch `Response` with a failing status counts as a failure but is returned (or
   * answered by `fallback`, when given: it answers refused calls and upstream failures alike).
   */
  execute<T>(fn: (context: CallContext) => T | Promise<T>, options?: ExecuteOptions<T>): Promise<T> {
    // A misspelt `timeoutMs` would otherwise mean no time limit at all.
    if (options !== undefined) checkKeys('execute options', options, EXECUTE_KEYS);
    if (options === undefined || (options.signal === undefined && options.timeoutMs === undefined)) {
      const fallback = options?.fallback;
      return this.#slots ? this.#slots.run(undefined, (c) => this.#rejected(c, fallback), (slot) => this.#run(fn, fallback, slot)) : this.#run(fn, fallback);
    }
    return this.#runGuarded(fn, options);
  }

  /**
   * `slot`: the one of `maxConcurrent` the call holds until it settles (-1: none). A `then` on
   * the call's promise, not an `async` function: one promise fewer per call.
   */
  #run<T>(fn: (context: CallContext) => T | Promise<T>, fallback: ExecuteOptions<T>['fallback'], slot = -1): Promise<T> {
    // Read the clock only when the core needs the start (slow-call rule, or not CLOSED); the
    // report reads it again only when it goes to the core.
    const now = this.#closed >= 0 && !(this.#fast & Fast.Timed) ? 0 : this.#now();
    const h = this.#acquire(now);
    if (h < 0) return this.#rejected(-h, fallback, slot);
    let p: T | Promise<T>;
    try {
      p = fn(NO_CONTEXT);
    } catch (e) {
      p = Promise.reject(e);
    }
    return Promise.resolve(p).then(
      (v) => this.#ended(now, h, slot, fallback, v, true),
      (e) => this.#ended(now, h, slot, fallback, e, false),
    );
  }

  /** Counts how a call of `#run` ended (`v`: its value, or its error) and answers it. */
  #ended<T>(now: number, h: number, slot: number, fallback: ExecuteOptions<T>['fallback'], v: unknown, resolved: boolean): T | Promise<T> {
    const outcome = this.#outcome(v, resolved);
    this.#settle(now, h, outcome, resolved ? undefined : v, slot);
    return this.#answer(outcome, fallback, v, !resolved);
  }

  /**
   * A settled call's answer: its value (or its error, thrown), or `fallback`'s when it failed
   * against the upstream (`v`: its error, or the failing `Response`).
   */
  #answer<T>(outcome: number, fallback: ExecuteOptions<T>['fallback'], v: unknown, threw: boolean): T | Promise<T> {
    if (fallback && outcome === FAILURE) {
      this.#fallbacks++;
      return fallback(v, isTimeoutError(v) ? 'timeout' : 'failure');
    }
    if (threw) throw v;
    return v as T;
  }

  #runGuarded<T>(fn: (context: CallContext) => T | Promise<T>, options: ExecuteOptions<T>): Promise<T> {
    const { signal, timeoutMs, fallback } = checkCallOptions(options);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#slots) {
      return this.#slots.run(signal, (c) => this.#rejected(c, fallback), (slot) => this.#guarded(fn, signal, timeoutMs, fallback, slot));
    }
    return this.#guarded(fn, signal, timeoutMs, fallback);
  }

  #guarded<T>(
    fn: (context: CallContext) => T | Promise<T>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    fallback: ExecuteOptions<T>['fallback'],
    slot = -1,
  ): Promise<T> {
    const now = this.#now();
    const h = this.#acquire(now);
    if (h < 0) return this.#rejected(-h, fallback, slot);
    let settled = SUCCESS;
    return guardCall(
      fn,
      signal,
      timeoutMs,
      (outcome, error) => {
        settled = outcome;
        this.#settle(now, h, outcome, error, slot);
      },
      (result, resolved, s) => this.#outcome(result, resolved, s),
    ).then(
      (v) => this.#answer(settled, fallback, v, false),
      (e) => this.#answer(settled, fallback, e, true),
    );
  }

  /**
   * Runs a streaming call (an LLM answer over SSE, say) if the breaker admits it, and counts the
   * whole stream as one call, settled when it ends: completed → success; cut, an error event in
   * the stream, `idleTimeoutMs` between chunks, `firstChunkTimeoutMs` before the first content, or
   * no content at all → failure; the reader cancelling or `signal` aborting → ignored.
   * Resolves once the first content chunk arrived; before that it rejects (with
   * `CircuitOpenError`, the upstream's error, a `TimeoutError` or a `StreamError`), so
   * `withRetry` and fallbacks apply. After it nothing is retried: a failure ends the stream with
   * what was sent plus what `onInterrupted(error)` returns. The slow-call rule sees the time to
   * first content (or the whole stream with `measure: 'total'`).
   */
  stream(
    fn: (context: StreamContext) => Response | Promise<Response>,
    options?: BreakerStreamOptions<Uint8Array>,
  ): Promise<ReadableStream<Uint8Array>>;
  stream<T>(
    fn: (context: StreamContext) => ReadableStream<T> | AsyncIterable<T> | Promise<ReadableStream<T> | AsyncIterable<T>>,
    options?: BreakerStreamOptions<T>,
  ): Promise<ReadableStream<T>>;
  stream<T>(
    fn: (context: StreamContext) => StreamSource<T> | Promise<StreamSource<T>>,
    options?: BreakerStreamOptions<T>,
  ): Promise<ReadableStream<T>> {
    if (options?.signal?.aborted) return Promise.reject(options.signal.reason);
    const { retry, ...o } = withDefaults(this.#streamDefaults, options) ?? {};
    if (retry !== undefined && retry !== false) {
      return streamWithRetry(retry, o.signal, (signal) => this.#attempt(fn, { ...o, signal }));
    }
    return this.#attempt(fn, o);
  }

  /** One attempt of `stream`. */
  #attempt<T>(
    fn: (context: StreamContext) => StreamSource<T> | Promise<StreamSource<T>>,
    options: StreamOptions<T> | undefined,
  ): Promise<ReadableStream<T>> {
    if (this.#slots) return this.#slots.run(options?.signal, (c) => this.#rejected(c), (slot) => this.#stream(fn, options, slot));
    return this.#stream(fn, options);
  }

  /** The stream holds its `slot` (-1: none) until it settles, however it ends. */
  #stream<T>(
    fn: (context: StreamContext) => StreamSource<T> | Promise<StreamSource<T>>,
    options: StreamOptions<T> | undefined,
    slot = -1,
  ): Promise<ReadableStream<T>> {
    const h = this.#acquire(this.#now());
    if (h < 0) return this.#rejected(-h, undefined, slot);
    return guardStream(
      fn,
      options,
      () => this.#now(),
      (outcome, error, durationMs) => this.#settle(Math.max(1, this.#now() - durationMs), h, outcome, error, slot),
      (e, signal) => this.#outcome(e, false, signal),
    );
  }

  /** `code` is `retryAfterMs × Reject.Scale + reason`; `slot` (of `maxConcurrent`) is given back. */
  #rejected<T>(code: number, fallback?: ExecuteOptions<T>['fallback'], slot = -1): Promise<T> {
    this.#slots?.leave(slot);
    const event = this.#rejectEvent(code);
    if (this.#reject.size) this.#reject.emit(event);
    const err = new CircuitOpenError(this.name, this.state, event.reason, event.retryAfterMs);
    if (fallback !== undefined) {
      this.#fallbacks++;
      return (async () => fallback(err, event.reason))();
    }
    return Promise.reject(err);
  }

  /** The one decoding of a refusal code (`Reject`; 0, admitted, reads a wait of 0). */
  #rejectEvent(code: number): RejectEvent {
    const reason = code % Reject.Scale;
    return { breaker: this.name, reason: REASONS[reason]!, retryAfterMs: (code - reason) / Reject.Scale };
  }

  /** How a call reported failed counts: no error is an upstream failure; an error as `execute` classifies it. */
  #failed(error: unknown, signal: AbortSignal | undefined): number {
    return error === undefined ? FAILURE : this.#outcome(error, false, signal);
  }

  #outcome(e: unknown, resolved = false, signal?: AbortSignal): number {
    return outcomeCode(e, resolved, signal, this.#isFailure);
  }


  /**
   * Reports a call's outcome (`h`: its permit, or `Sentinel.None` for one without, the
   * `recordSuccess()` pattern; `issuedAt`: when it was admitted, 0 when not read), and gives
   * its `slot` of `maxConcurrent` back (-1: none). A quiet success (`#room`) is counted here.
   */
  #settle(issuedAt: number, h: number, outcome: number, error: unknown, slot = -1): void {
    let now = 0;
    if (outcome === SUCCESS && (h === this.#closed || h === Sentinel.None) && this.#room > 0 &&
      (this.#free || ((now = this.#now()) < this.#until && now - (issuedAt || now) <= this.#slowMs && this.#room--))) {
      this.#succeeded++;
    } else {
      // Every report the core sees carries the time: it may open the breaker (a failure, or
      // the success that brings a rate rule's window to its minimum), and the open period
      // must start then.
      now ||= this.#now();
      this.#flush(now);
      const t = this.#x.report(this.#h, now, issuedAt || now, h, outcome);
      if (t !== Transition.None) this.#transition(t);
      // A free answer holds until a transition (the core's `Quiet`).
      else if (this.#closed >= 0 && !this.#free) this.#quiet();
    }
    this.#slots?.leave(slot);
    if (outcome === SUCCESS) {
      if (this.#success.size) this.#success.emit({ breaker: this.name });
    } else if (outcome === FAILURE && this.#failure.size) {
      this.#failure.emit({ breaker: this.name, error });
    }
  }

  /** Reads the core's `quiet` answer (after every call into the core while CLOSED). */
  #quiet(): void {
    const m = memory(this.#x);
    const at = this.#x.info(this.#h, 0) / 8;
    // At most 2^30, a small integer to the engine; counted down again after a hand-over.
    this.#room = Math.min(m[at + Info.Quiet]!, 2 ** 30);
    this.#until = m[at + Info.QuietUntil]!;
    this.#slowMs = m[at + Info.QuietSlow]!;
    this.#free = this.#room === 2 ** 30 && this.#until >= 2 ** 64 && this.#slowMs >= 2 ** 64 && !this.#success.size;
  }

  /**
   * Hands over to the core the successes counted without it (and, with `all` for a read, the
   * admissions) at `now`. The next call into the core reads its answer again.
   */
  #flush(now: number, all = false): void {
    if (this.#succeeded === 0 && !(all && this.#admitted)) return;
    const t = this.#x.record_quiet(this.#h, now, this.#admitted, this.#succeeded);
    this.#admitted = this.#succeeded = 0;
    if (t !== Transition.None) this.#transition(t);
  }

  /** The core moved to another state: the cache is dropped, listeners hear of it. */
  #transition(t: number): void {
    this.#closed = -1;
    this.#room = 0;
    this.#free = false;
    this.#emitTransition(t);
  }

  #emitTransition(code: number): void {
    if (code === Transition.None || this.#stateChange.size === 0) return;
    const c = code - Transition.First;
    this.#stateChange.emit({
      breaker: this.name,
      from: STATES[Math.floor(c / Transition.Stride)]!,
      to: STATES[c % Transition.Stride]!,
      at: this.#now(),
    });
  }

  /** Forces OPEN until `reset()`: every call is rejected. */
  isolate(): void {
    this.#control(Control.Isolate);
  }

  /** Back to CLOSED with empty counters; ends isolation and disabling. */
  reset(): void {
    this.#control(Control.Reset);
  }

  /** Lets every call through (still counted in `stats`); the state stops changing. */
  disable(): void {
    this.#control(Control.Disable);
  }

  /** Undoes `disable()`. */
  enable(): void {
    this.#control(Control.Enable);
  }

  #control(op: Control): void {
    const now = this.#now();
    this.#flush(now);
    this.#transition(this.#x.control(this.#h, now, op));
  }

  /** Calls `listener` on every state change. */
  onStateChange(listener: (event: StateChangeEvent) => void): Unsubscribe {
    return this.#stateChange.subscribe(listener);
  }
  /** Calls `listener` for every call `execute`, `stream` or `tryAcquire` refuses. */
  onReject(listener: (event: RejectEvent) => void): Unsubscribe {
    return this.#reject.subscribe(listener);
  }
  /** Calls `listener` for every call counted as a success. */
  onSuccess(listener: (event: OutcomeEvent) => void): Unsubscribe {
    // `recordSuccess()`'s shortest path emits nothing: off while anyone listens.
    this.#free = false;
    return this.#success.subscribe(listener);
  }
  /** Calls `listener` for every call counted as an upstream failure. */
  onFailure(listener: (event: OutcomeEvent) => void): Unsubscribe {
    return this.#failure.subscribe(listener);
  }

  /** The whole state as plain JSON data (for KV, Redis, a Durable Object...). */
  toJSON(): BreakerSnapshot {
    return {
      breakwater: 1,
      name: this.name,
      state: this.state,
      data: this.#data(),
    };
  }

  #data(): number[] {
    this.#flush(this.#now(), true);
    const n = this.#x.snapshot(this.#h);
    return Array.from(read(this.#x.io(n), n, this.#x));
  }

  /** Replaces this breaker's state with a snapshot taken by `toJSON()` (of any breaker). */
  restore(snapshot: BreakerSnapshot): void {
    const s = obj('snapshot', snapshot);
    if (s?.breakwater !== 1 || !Array.isArray(s.data) || !s.data.length || !s.data.every((n) => typeof n === 'number')) {
      throw new TypeError('breakwater: not a breaker snapshot (expected the output of toJSON())');
    }
    const data = s.data as number[];
    const input = new Float64Array(Cfg.Len + data.length);
    input.set(this.#cfg);
    input.set(data, Cfg.Len);
    const h = create(this.#x.breaker, input, this.#x);
    const old = this.#h;
    // Calls in flight keep their slots, and waiters their place in line.
    if (this.#slots) this.#x.queue(h, 0, Queue.Adopt, old);
    this.#h = h;
    finalizer?.unregister(this);
    finalizer?.register(this, [this.#x, h], this);
    this.#x.release(old);
    this.#closed = -1;
    this.#room = 0;
    this.#free = false;
    this.#admitted = this.#succeeded = this.#fallbacks = 0;
  }
}
