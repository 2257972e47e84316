import { create, wasm } from '../glue.js';
import { Budget, BudgetOp, GiveUp, Jitter as JitterCode, Limit, Retry } from '../codes/layout.js';
import { checkKeys, fail, fn as optFn, num, obj } from '../helpers/options.js';
import { classifyWith, isAbort, isResponse, retryAfterOf, type Verdict } from '../classify.js';
import { guardCall } from '../guards/call.js';

/**
 * How a retry's wait is drawn from its exponential delay d: `'full'` (the default), uniform in
 * [0, d]; `'equal'`, in [d/2, d]; `'decorrelated'`, in [base, 3 × the previous wait] (ignores
 * `factor`); `'none'`, d exactly; a proportion p in [0, 1], in d × (1 ± p). Never above `maxDelayMs`.
 * @inline
 */
export type Jitter = 'full' | 'equal' | 'decorrelated' | 'none' | number;
/**
 * Why `withRetry` stopped: `'not-retryable'` (the error is not worth retrying: a 400, an exhausted
 * quota…), `'attempts-exhausted'` (`maxAttempts` were made), `'deadline'` (the next attempt would
 * start after `deadlineMs`), `'retry-after-too-long'` (the server asked for a longer wait than
 * `maxRetryAfterMs`) or `'budget-exhausted'` (the `budget` is spent).
 */
export type GiveUpReason =
  | 'not-retryable'
  | 'attempts-exhausted'
  | 'deadline'
  | 'retry-after-too-long'
  | 'budget-exhausted';

/** Indexed by `GiveUp`'s codes less `GiveUp.NotRetryable`. */
const REASONS: readonly GiveUpReason[] = [
  'not-retryable',
  'attempts-exhausted',
  'deadline',
  'retry-after-too-long',
  'budget-exhausted',
];

/** A retry about to wait, as `onRetry` gets it. */
export interface RetryEvent {
  /** The attempt that failed (1 = the first). */
  attempt: number;
  /** How long until the next attempt. */
  delayMs: number;
  /** The attempt's error, or the failing `Response` it resolved with. */
  error: unknown;
  /** The server's Retry-After, if it sent one. */
  retryAfterMs: number | undefined;
  /** How the error was classified. */
  verdict: Verdict;
}

/** The end of retries that failed, as `onGiveUp` gets it. */
export interface GiveUpEvent {
  /** Attempts made, the first included. */
  attempts: number;
  /** Why no further attempt is made. */
  reason: GiveUpReason;
  /** The Retry-After of the last attempt's answer in ms, if the server sent one. */
  retryAfterMs: number | undefined;
  /** How the last error was classified. */
  verdict: Verdict;
}

/**
 * What `withRetry` hands each attempt.
 * @inline
 */
export interface AttemptContext {
  /** 1 for the first attempt. */
  attempt: number;
  /**
   * The signal to pass on to fetch or an SDK: the caller's, or with `attemptTimeoutMs` this
   * attempt's own, which also aborts (with a `TimeoutError`) when the attempt runs out of time.
   */
  signal?: AbortSignal | undefined;
}

/** What `withRetry`'s `metrics` option takes (the metrics adapters' `retries(name)`). */
export interface RetryObserver {
  /** Called once per `withRetry` call, when it settles: the retries it made, and the backoff they waited in all. */
  observeRetries(retries: number, delayMs: number): void;
}

/**
 * What `withRetry`'s `breaker` option takes: a breaker's `execute` (a `CircuitBreaker`, a shared
 * or store breaker).
 */
export interface RetryBreaker {
  /** Runs one attempt if the breaker admits it, and counts its outcome. */
  execute<T>(
    fn: (context: { signal?: AbortSignal | undefined }) => T | Promise<T>,
    options?: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined },
  ): Promise<T>;
}

/** `withRetry`'s options, each optional. */
export interface RetryOptions {
  /** Attempts in all, the first included (1–10 000). Default 4. */
  maxAttempts?: number | undefined;
  /** Delay before the first retry, before jitter. Default 1000 ms. */
  baseDelayMs?: number | undefined;
  /** No backoff delay exceeds this. Default 16 000 ms. */
  maxDelayMs?: number | undefined;
  /** Growth per retry (≥ 1). Default 2. */
  factor?: number | undefined;
  /** 'full' (default), 'equal', 'decorrelated', 'none', or a proportion p for ±p (0.3: ±30 %). */
  jitter?: Jitter | undefined;
  /** Statuses worth retrying. Default 408, 409, 429, 500, 502, 503, 504, 529. */
  retryableStatuses?: readonly number[] | undefined;
  /** Give up rather than start an attempt later than this many ms after the first. */
  deadlineMs?: number | undefined;
  /**
   * Each attempt's own time limit (integer ms ≥ 1): its signal aborts and the attempt fails with a
   * `TimeoutError`, an upstream failure that is retried (and counted by `breaker`). Unlike
   * `execute`'s `timeoutMs`, which bounds one call, this bounds every attempt anew.
   */
  attemptTimeoutMs?: number | undefined;
  /** Honour Retry-After up to this long; a longer one gives up at once. Default 60 000 ms. */
  maxRetryAfterMs?: number | undefined;
  /** Caps retries across all calls sharing it. */
  budget?: RetryBudget | undefined;
  /** Runs each attempt through this breaker (its rejections are waited out like a Retry-After). */
  breaker?: RetryBreaker | undefined;
  /** Told each call's retries and backoff waiting (see `breakwater/prometheus`, `breakwater/otel`). */
  metrics?: RetryObserver | undefined;
  /** Override: true = retry, false = do not, undefined = default rules. */
  shouldRetry?: ((error: unknown, attempt: number) => boolean | undefined) | undefined;
  /** Called before each wait. */
  onRetry?: ((event: RetryEvent) => void) | undefined;
  /** Called once when the retries end in failure (a dead-letter hook). */
  onGiveUp?: ((error: unknown, event: GiveUpEvent) => void) | undefined;
  /** Waits; default setTimeout. Injected for tests. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** Uniform in [0, 1), for the jitter. Default Math.random. */
  random?: (() => number) | undefined;
  /** Milliseconds since the epoch. Default Date.now. */
  clock?: (() => number) | undefined;
  /** Aborting stops the attempts and the waits at once; rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

const KEYS = [
  'maxAttempts',
  'baseDelayMs',
  'maxDelayMs',
  'factor',
  'jitter',
  'retryableStatuses',
  'deadlineMs',
  'attemptTimeoutMs',
  'maxRetryAfterMs',
  'budget',
  'breaker',
  'metrics',
  'shouldRetry',
  'onRetry',
  'onGiveUp',
  'sleep',
  'random',
  'clock',
  'signal',
] as const;

/** Indexed by `Jitter`'s codes. */
const JITTERS = ['none', 'full', 'equal', 'decorrelated'];

/** The retry policy's configuration laid out as `Retry`, the retryable statuses after it. */
function policy(o: RetryOptions): Float64Array {
  const s = o.retryableStatuses;
  if (s !== undefined && !Array.isArray(s)) fail('retryableStatuses', s, 'an array of HTTP status codes');
  const cfg = new Float64Array(Retry.Len + (s?.length ?? 0));
  cfg[Retry.MaxAttempts] = num('maxAttempts', o.maxAttempts, 4, 1, Limit.MaxAttempts);
  const base = (cfg[Retry.BaseDelay] = num('baseDelayMs', o.baseDelayMs, 1000, 0));
  cfg[Retry.Factor] = num('factor', o.factor, 2, 1, Infinity, false, ')');
  cfg[Retry.MaxDelay] = num('maxDelayMs', o.maxDelayMs, Math.max(16_000, base), base);
  cfg[Retry.Deadline] = o.deadlineMs === undefined ? -1 : num('deadlineMs', o.deadlineMs, 0, 0);
  const j = o.jitter ?? 'full';
  if (typeof j === 'number') {
    cfg[Retry.Jitter] = JitterCode.Proportional;
    cfg[Retry.Proportion] = num('jitter', j, 0, 0, 1, false);
  } else {
    const k = JITTERS.indexOf(j as string);
    if (k < 0) fail('jitter', j, "'full', 'equal', 'decorrelated', 'none' or a proportion in [0, 1]");
    cfg[Retry.Jitter] = k;
  }
  cfg[Retry.MaxRetryAfter] = num('maxRetryAfterMs', o.maxRetryAfterMs, 60_000, 0);
  if (s !== undefined) {
    cfg[Retry.UseRetryable] = 1;
    s.forEach((code: unknown, i) => (cfg[Retry.Len + i] = num('retryableStatuses', code, 0, 100, 639)));
  }
  return cfg;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Without a breaker, the attempt guard's outcome goes nowhere (withRetry classifies it itself). */
const uncounted = () => 0;

/** Settles like `p`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Throws naming the first of `withRetry`'s object options that is not what it should be. */
function checkObjects(
  metrics: RetryObserver | undefined,
  budget: RetryBudget | undefined,
  breaker: RetryBreaker | undefined,
  signal: AbortSignal | undefined,
): void {
  if (metrics !== undefined && typeof metrics.observeRetries !== 'function') fail('metrics', metrics, 'a RetryObserver');
  // Not `instanceof`: a budget may come from another bundled copy of the package.
  if (budget !== undefined && typeof (budget as Partial<RetryBudget> | null)?.withdraw !== 'function') {
    fail('budget', budget, 'a RetryBudget');
  }
  if (breaker !== undefined && (typeof breaker !== 'object' || typeof breaker.execute !== 'function')) {
    fail('breaker', breaker, 'a CircuitBreaker');
  }
  if (signal !== undefined && (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
    fail('signal', signal, 'an AbortSignal');
  }
}

/**
 * Starts attempt number `attempt` of `fn`, through `breaker` if given. With `attemptTimeoutMs` it
 * runs under execute's guard (the breaker's, or the same guard alone): its own signal, aborted by
 * the caller's or with a TimeoutError; else with the caller's signal.
 */
function startAttempt<T>(
  fn: (context: AttemptContext) => T | Promise<T>,
  attempt: number,
  signal: AbortSignal | undefined,
  breaker: RetryBreaker | undefined,
  attemptTimeoutMs: number | undefined,
): Promise<T> {
  const call = (c: { signal?: AbortSignal | undefined }) => fn(c.signal ? { attempt, signal: c.signal } : { attempt });
  const guarded = signal !== undefined || attemptTimeoutMs !== undefined;
  if (breaker) return breaker.execute(call, guarded ? { signal, timeoutMs: attemptTimeoutMs } : undefined);
  if (attemptTimeoutMs !== undefined) return guardCall(call, signal, attemptTimeoutMs, uncounted, uncounted);
  return Promise.resolve().then(() => call({ signal }));
}

/**
 * Calls `fn` until it succeeds, retrying transient failures (429, 5xx, 529, network errors) with
 * exponential backoff and jitter, honouring Retry-After. Its options are the usual ones (`maxAttempts`, `baseDelayMs`, `maxDelayMs`, `jitter`...).
 * Non-retryable errors (400, 401, an exhausted quota...) are thrown at once; after the last
 * attempt the last error is thrown. A resolved fetch `Response` with a retryable status is
 * retried too, and returned as is if the retries run out.
 */
export async function withRetry<T>(
  fn: (context: AttemptContext) => T | Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  if (typeof fn !== 'function') fail('fn', fn, 'a function');
  const opts: RetryOptions = obj('options', options) ?? {};
  checkKeys('withRetry options', opts, KEYS);
  const sleep = optFn<NonNullable<RetryOptions['sleep']>>('sleep', opts.sleep) ?? defaultSleep;
  const random = optFn<() => number>('random', opts.random) ?? Math.random;
  const clock = optFn<() => number>('clock', opts.clock) ?? Date.now;
  const shouldRetry = optFn<RetryOptions['shouldRetry']>('shouldRetry', opts.shouldRetry);
  const onRetry = optFn<RetryOptions['onRetry']>('onRetry', opts.onRetry);
  const onGiveUp = optFn<RetryOptions['onGiveUp']>('onGiveUp', opts.onGiveUp);
  const { signal, budget, breaker, metrics } = opts;
  checkObjects(metrics, budget, breaker, signal);
  const attemptTimeoutMs =
    opts.attemptTimeoutMs === undefined ? undefined : num('attemptTimeoutMs', opts.attemptTimeoutMs, 0, 1);
  // Validate everything now (cheap); build the core's policy only when a first attempt fails.
  const cfg = policy(opts);
  const x = wasm();
  let p = 0;
  const startedAt = clock();
  budget?.deposit(startedAt);
  let previousDelay = 0;
  let retries = 0;
  let waited = 0;
  try {
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw signal.reason;
      let error: unknown;
      let resolved = false;
      try {
        const v = await raceAbort(startAttempt(fn, attempt, signal, breaker, attemptTimeoutMs), signal);
        if (!isResponse(v) || v.status < 400) return v;
        error = v;
        resolved = true;
      } catch (e) {
        if (isAbort(e, signal) || signal?.aborted) throw signal?.aborted ? signal.reason : e;
        error = e;
      }
      if (p === 0) p = create(x.retry, cfg);
      // A failing Response is classified by what its body says too (a 429 whose code says the
      // quota is spent, Gemini's RetryInfo); the body is read from a copy, so it is still there
      // for the caller if this is the last attempt.
      const seen = resolved ? await import('../guards/body.js').then((b) => b.readErrorBody(error as Response, true)) : error;
      const now = clock();
      const verdict = classifyWith(p, seen, signal);
      let retryable = verdict.retryable;
      const override = shouldRetry?.(error, attempt);
      if (override !== undefined) retryable = override;
      const ra = retryAfterOf(seen, now);
      let d = x.decide(p, now, startedAt, attempt, previousDelay, retryable ? 1 : 0, ra, random());
      if (d >= 0 && budget !== undefined && !budget.withdraw(now)) d = -GiveUp.BudgetExhausted;
      const retryAfterMs = ra >= 0 ? ra : undefined;
      if (d < 0) {
        onGiveUp?.(error, {
          attempts: attempt,
          reason: REASONS[-d - GiveUp.NotRetryable] ?? 'not-retryable',
          retryAfterMs,
          verdict,
        });
        if (resolved) return error as T;
        throw error;
      }
      // Released, or undici keeps the socket of a body nobody reads.
      if (resolved) void (error as Response).body?.cancel().catch(() => {});
      onRetry?.({ attempt, delayMs: d, error, retryAfterMs, verdict });
      await raceAbort(Promise.resolve(sleep(d, signal)), signal);
      previousDelay = d;
      retries++;
      waited += d;
    }
  } finally {
    if (p !== 0) x.release(p);
    metrics?.observeRetries(retries, waited);
  }
}

/**
 * `stream`'s `retry`: `withRetry`'s options, but not `breaker` (the stream's own breaker runs
 * each attempt), `signal` (the stream's) or `attemptTimeoutMs` (the stream's limits bound an
 * attempt: `firstChunkTimeoutMs`).
 */
export type StreamRetryOptions = Omit<RetryOptions, 'breaker' | 'signal' | 'attemptTimeoutMs'>;

/**
 * Runs `attempt` (one guarded stream) under `stream`'s `retry`: `true` for the defaults. An
 * attempt rejects only before the first word reached the reader, so only then is it retried.
 */
export async function streamWithRetry<S>(
  retry: StreamRetryOptions | true,
  signal: AbortSignal | undefined,
  attempt: (signal: AbortSignal | undefined) => Promise<S>,
): Promise<S> {
  const o = retry === true ? {} : obj('retry', retry) ?? {};
  for (const key of ['breaker', 'signal', 'attemptTimeoutMs'] as const) {
    const why = key === 'attemptTimeoutMs' ? "unset: the stream's firstChunkTimeoutMs bounds an attempt" : `unset: the stream's own ${key} is used`;
    if (key in o) fail(`retry.${key}`, (o as Record<string, unknown>)[key], why, true);
  }
  return withRetry((c) => attempt(c.signal), { ...o, signal });
}

/**
 * `RetryBudget`'s options, each optional.
 * @inline
 */
export interface RetryBudgetOptions {
  /** The window retries are measured over, 1 000–60 000 ms. Default 10 000. */
  ttlMs?: number | undefined;
  /** Retries per second always allowed. Default 10. */
  minPerSec?: number | undefined;
  /** Retries allowed as a percentage of calls in the window (0–1000). Default 20. */
  retryPercent?: number | undefined;
}

/** Frees a collected budget's state in the core. */
const finalizer =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<number>((h) => wasm().release(h)) : undefined;

/**
 * Retries limited to a share of recent calls (as in Finagle and tower), shared by every
 * `withRetry` call that is given it: in a 429 storm the fleet stops multiplying its load.
 */
export class RetryBudget {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'RetryBudget';
  #h: number;
  #clock: () => number;

  constructor(options: RetryBudgetOptions & { clock?: () => number } = {}) {
    const o = obj('options', options) ?? {};
    checkKeys('RetryBudget options', o, ['ttlMs', 'minPerSec', 'retryPercent', 'clock']);
    const ttl = num('ttlMs', o.ttlMs, 10_000, Limit.MinBudgetTtlMs, Limit.MaxBudgetTtlMs);
    const min = num('minPerSec', o.minPerSec, 10, 0, Limit.MaxCount);
    const pct = num('retryPercent', o.retryPercent, 20, 0, Limit.MaxRetryPercent, false);
    this.#clock = optFn<() => number>('clock', o.clock) ?? Date.now;
    const cfg = new Float64Array(Budget.Len);
    cfg[Budget.Ttl] = ttl;
    cfg[Budget.MinPerSec] = min;
    cfg[Budget.RetryPercent] = pct;
    this.#h = create(wasm().budget_new, cfg);
    finalizer?.register(this, this.#h);
  }

  /** Retries available now (may be fractional). */
  get available(): number {
    return wasm().budget_op(this.#h, this.#clock(), BudgetOp.Available);
  }

  /** @internal Records a first attempt. */
  deposit(now = this.#clock()): void {
    wasm().budget_op(this.#h, now, BudgetOp.Deposit);
  }

  /** @internal Takes one retry; false when the budget is spent. */
  withdraw(now = this.#clock()): boolean {
    return wasm().budget_op(this.#h, now, BudgetOp.Withdraw) === 1;
  }
}
