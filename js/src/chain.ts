// A fallback chain: tiers tried in order, each behind its own breaker. A tier whose breaker is
// OPEN refuses at once (no call, no latency) and the next one is asked; an upstream failure moves
// on too; a client error stops the chain (it would fail on every tier). The breakers decide; the
// chain only walks.
import { CircuitOpenError, isCircuitOpenError, isTimeoutError } from './helpers/errors.js';
import { Emitter, type Unsubscribe } from './helpers/events.js';
import { checkKeys, fail, fn as optFn, num, obj } from './helpers/options.js';
import { classifyError, isResponse, statusOf } from './classify.js';
import {
  EXECUTE_KEYS,
  type BreakerState,
  type BreakerStreamOptions,
  type CallContext,
  type ExecuteOptions,
  type FallbackReason,
  type HedgeOption,
  type HedgeValue,
} from './breakers/breaker.js';
import type { StreamSource } from './guards/stream.js';

/**
 * What a tier's breaker must offer: `CircuitBreaker`, `SharedCircuitBreaker` and `StoreCircuitBreaker` do.
 * @inline
 */
export interface ChainBreaker {
  /** The breaker's name: the tier's name unless the tier gives one. */
  readonly name: string;
  /** Runs a call if the breaker admits it (`CircuitBreaker.execute`). */
  execute(fn: () => Promise<never>, options?: never): Promise<unknown>;
  /** Runs a streaming call if the breaker admits it (`CircuitBreaker.stream`). */
  stream(fn: () => Promise<never>, options?: never): Promise<ReadableStream<unknown>>;
  /** Its state: `hedge` asks a tier only while it and the tier before it are CLOSED. */
  readonly state?: BreakerState | undefined;
  /** Its throttle's refusal probability: `hedge` asks no tier that sheds, nor past one. */
  readonly throttleProbability?: number | undefined;
}

/** One tier of a `FallbackChain`: a call and the breaker in front of it. */
export interface Tier<T> {
  /** The breaker that guards this tier's upstream. */
  breaker: ChainBreaker;
  /** The call: its value for `execute()`; a stream source (a `Response`, a `ReadableStream`, an async iterable) for `stream()`. */
  call: (context: CallContext) => T | Promise<T>;
  /** Named in results and events. Default: the breaker's name. */
  name?: string | undefined;
}

/** `FallbackChain`'s options, each optional. */
export interface FallbackChainOptions {
  /** Named in the `CircuitOpenError` thrown when every tier refused. Default `"fallback-chain"`. */
  name?: string | undefined;
  /**
   * Whether an error moves on to the next tier. Default: yes for upstream failures, refusals and
   * provider-specific client errors (401, 403, 404: another provider's key and model may work);
   * no for a request error that would fail everywhere (400, 413, 422) and for a cancelled call.
   */
  fallThrough?: ((error: unknown) => boolean) | undefined;
  /**
   * Hedged calls, `hedge()` from `breakwater/adaptive`: when the tier asked has shown no
   * progress (`execute`: no answer; `stream`: no first content) after the policy's delay, the
   * next tier is asked as well, and the first to answer wins. The other is aborted (its call's
   * `signal` fires: pass it to `fetch`, so that the connection closes), is not counted by its
   * breaker, and is reported as `lost` (`onTier`) with the call's `inputTokens`. At most one
   * hedge per call, within the policy's budget, and none while either tier is not CLOSED or
   * its throttle sheds. Its state is per tier index: give each chain its own value.
   */
  hedge?: HedgeOption | undefined;
}

/** `FallbackChain.execute`'s options: `execute`'s, and the call's size for `hedge`'s reports. */
export interface ChainCallOptions<T> extends ExecuteOptions<T> {
  /** The call's input tokens (or an estimate): what a tier aborted by a hedge likely cost. */
  inputTokens?: number | undefined;
}

/** `FallbackChain.stream`'s options: `stream`'s, and the call's size for `hedge`'s reports. */
export interface ChainStreamOptions<U> extends BreakerStreamOptions<U> {
  /** The call's input tokens (or an estimate): what a tier aborted by a hedge likely cost. */
  inputTokens?: number | undefined;
}

/** What `FallbackChain.execute` and `FallbackChain.stream` answer: the value and the tier that gave it. */
export interface ChainResult<T> {
  /** The answering tier's value (for `stream()`, its stream), or what `fallback` returned. */
  value: T;
  /** The index of the tier that answered; -1 for `execute`'s `fallback` (no tier answered). */
  tier: number;
  /** The tier's name; `"fallback"` for `execute`'s `fallback`. */
  name: string;
}

/** One tier tried, as `onTier` listeners get it. */
export interface TierEvent {
  /** The chain's name. */
  chain: string;
  /** The tier's index (0 for the first). */
  tier: number;
  /** The tier's name. */
  name: string;
  /**
   * `answered`: this tier's value is returned; `skipped`: its breaker refused; `failed`: it was
   * called and failed; `hedged`: it was asked as a hedge, the tier before it still running
   * (`hedge`); `lost`: it was running when another tier answered, and was aborted;
   * `continued` (`fallbackModel`'s `continueOnBackup`): it continues an answer cut on a tier
   * before it (`error`: the cut).
   */
  outcome: 'answered' | 'skipped' | 'failed' | 'hedged' | 'lost' | 'continued';
  /** `skipped`: the breaker's `CircuitOpenError`; `failed`: the error the tier failed with. Absent otherwise. */
  error?: unknown;
  /** `hedged`: how long the tier before it had run without progress, ms. */
  afterMs?: number;
  /**
   * `lost`: the call's `inputTokens`, what the aborted call likely cost (0 when not given);
   * `continued`: the continuation's estimated input (its prompt, with the answer so far).
   */
  inputTokens?: number;
}

const LOST = 'lost a hedged race';
/** The abort reason a losing tier's call sees. */
const lost = (): unknown => (typeof DOMException === 'function' ? new DOMException(LOST, 'AbortError') : Object.assign(new Error(LOST), { name: 'AbortError' }));

/**
 * A monotonic time in ms for the race's delays and first-progress times: a wall clock stepped
 * back or forward would hedge late or early and feed the policy wrong times.
 */
const elapsed = (): number => (typeof performance === 'object' ? performance.now() : Date.now());

/** Cancels what a loser answered after all (a stream, a `Response`'s body). */
function discard(value: unknown): void {
  const v = value as { cancel?: unknown; body?: { cancel?: unknown } | null } | null;
  if (typeof ReadableStream === 'function' && value instanceof ReadableStream) void value.cancel().catch(() => {});
  else if (isResponse(v)) void (v as unknown as Response).body?.cancel().catch(() => {});
}

/** What a walk has seen of the tiers that did not answer. */
interface Misses {
  /** The soonest `retryAfterMs` of the refusals. */
  soonest: number;
  /** The last upstream failure. */
  last: unknown;
  /** Whether a tier was called and failed (else every tier refused). */
  failed: boolean;
}

/** What stops a walk (the caller's abort, a request error), thrown by `#judge`: `error` is rethrown. */
class Stop {
  constructor(readonly error: unknown) {}
}

/** `judge()`'s answer; what stops the walk is thrown as itself, after `stop(error)`. */
function judged<A>(judge: () => A, stop?: (error: unknown) => void): A {
  try {
    return judge();
  } catch (e) {
    const error = e instanceof Stop ? e.error : e;
    stop?.(error);
    throw error;
  }
}

/** One tier asked by a hedged call. */
interface Run<V> {
  i: number;
  ctl: AbortController;
  at: number;
  hedge: boolean;
  settled: Promise<{ run: Run<V>; ok: boolean; v: unknown }>;
}

const STOP = [400, 413, 422];

/** A failing fetch `Response` a breaker resolved with (it counted it), as an error for the chain. */
class FailedResponse extends Error {
  constructor(readonly status: number, readonly headers: unknown) {
    super(`the upstream answered ${status}`);
    this.name = 'FailedResponse';
  }
}

/**
 * Tries tiers in order (a primary model, then a backup...), each behind its breaker, and answers
 * with the first that succeeds. Keep one per route at module scope, like the breakers.
 */
export class FallbackChain<T = unknown> {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'FallbackChain';
  /** The chain's name (the `name` option, default `"fallback-chain"`): in its `CircuitOpenError` and its `TierEvent`s. */
  readonly name: string;
  #tiers: Array<{ breaker: ChainBreaker; call: Tier<T>['call']; name: string }>;
  #fallThrough: ((error: unknown) => boolean) | undefined;
  #hedge: HedgeValue | undefined;
  #events = new Emitter<TierEvent>();

  constructor(tiers: ReadonlyArray<Tier<T>>, options: FallbackChainOptions = {}) {
    if (!Array.isArray(tiers) || tiers.length === 0) fail('tiers', tiers, 'a non-empty array of { breaker, call }', true);
    const o = obj('FallbackChain options', options) ?? {};
    checkKeys('FallbackChain options', o, ['name', 'fallThrough', 'hedge']);
    const h = o.hedge as HedgeValue | undefined;
    if (h !== undefined && (h?.kind !== 'hedge' || typeof h.start !== 'function')) {
      fail('hedge', h, "hedge() from 'breakwater/adaptive', e.g. hedge({ afterMs: 'auto', budget: 0.1 })", true);
    }
    this.#hedge = h;
    if (o.name !== undefined && (typeof o.name !== 'string' || o.name === '')) fail('name', o.name, 'a non-empty string', true);
    this.name = (o.name as string | undefined) ?? 'fallback-chain';
    this.#fallThrough = optFn('fallThrough', o.fallThrough);
    this.#tiers = tiers.map((t, i) => {
      const tier = obj(`tiers[${i}]`, t) ?? fail(`tiers[${i}]`, t, 'an object { breaker, call }', true);
      checkKeys(`tiers[${i}]`, tier, ['breaker', 'call', 'name']);
      const b = tier.breaker as ChainBreaker | undefined;
      if (typeof b?.execute !== 'function' || typeof b.stream !== 'function') {
        fail(`tiers[${i}].breaker`, b, 'a breaker (CircuitBreaker, SharedCircuitBreaker or StoreCircuitBreaker)', true);
      }
      if (typeof tier.call !== 'function') fail(`tiers[${i}].call`, tier.call, 'a function', true);
      if (tier.name !== undefined && typeof tier.name !== 'string') fail(`tiers[${i}].name`, tier.name, 'a string', true);
      return { breaker: b, call: tier.call as Tier<T>['call'], name: (tier.name as string | undefined) ?? b.name };
    });
  }

  /**
   * Answers from the first tier that admits the call and succeeds. `fallback` answers when no
   * tier could: every tier refused (its reason is the refusal's, `'open'`, with the soonest
   * `retryAfterMs` on the `CircuitOpenError`), or the tiers that were called failed with upstream
   * failures (`'failure'` or `'timeout'`, with the last error). The tiers never see it, so an OPEN
   * primary does not answer with it while the backup is up. A client error stops the walk and is
   * thrown, fallback or not.
   */
  async execute(options?: ChainCallOptions<T>): Promise<ChainResult<T>> {
    if (options !== undefined) checkKeys('FallbackChain execute options', obj('FallbackChain execute options', options) ?? {}, [...EXECUTE_KEYS, 'inputTokens']);
    const { fallback, inputTokens, ...tierOptions } = options ?? {};
    if (fallback !== undefined && typeof fallback !== 'function') fail('fallback', fallback, 'a function');
    const run = (t: { breaker: ChainBreaker; call: Tier<T>['call'] }, signal?: AbortSignal) =>
      (t.breaker.execute as (fn: Tier<T>['call'], o?: ExecuteOptions<T>) => Promise<T>)(
        t.call,
        signal !== undefined ? { ...tierOptions, signal } : options === undefined ? undefined : tierOptions,
      );
    if (this.#hedge !== undefined) return this.#race(options?.signal, run, tokens(inputTokens), fallback);
    return this.#walk(options?.signal, run, fallback);
  }

  /**
   * Streams from the first tier whose stream begins: a tier falls through only before its first
   * content chunk (see `CircuitBreaker.stream`); once one begins, it is the answer. With
   * `retry`, each tier is retried before the first word before the next one is asked.
   */
  stream<U = Uint8Array>(options?: ChainStreamOptions<U>): Promise<ChainResult<ReadableStream<U>>> {
    const { inputTokens, ...o } = options ?? {};
    const run = (t: { breaker: ChainBreaker; call: Tier<T>['call'] }, signal?: AbortSignal) =>
      (
        t.breaker.stream as (
          fn: (c: CallContext) => StreamSource<U> | Promise<StreamSource<U>>,
          o?: BreakerStreamOptions<U>,
        ) => Promise<ReadableStream<U>>
      )(t.call as unknown as (c: CallContext) => StreamSource<U>, signal !== undefined ? { ...o, signal } : options === undefined ? undefined : o);
    if (this.#hedge !== undefined) return this.#race(options?.signal, run, tokens(inputTokens));
    return this.#walk(options?.signal, run);
  }

  /** Tells which tier answered, was skipped (its breaker refused) or failed. */
  onTier(listener: (event: TierEvent) => void): Unsubscribe {
    return this.#events.subscribe(listener);
  }

  async #walk<V>(
    signal: AbortSignal | undefined,
    attempt: (tier: { breaker: ChainBreaker; call: Tier<T>['call'] }) => Promise<V>,
    fallback?: (error: unknown, reason: FallbackReason) => V | Promise<V>,
  ): Promise<ChainResult<V>> {
    const misses: Misses = { soonest: Infinity, last: undefined, failed: false };
    for (let i = 0; i < this.#tiers.length; i++) {
      let ok = true;
      let v: unknown;
      try {
        v = await attempt(this.#tiers[i]!);
      } catch (e) {
        ok = false;
        v = e;
      }
      const answer = judged(() => this.#judge<V>(i, ok, v, signal, misses));
      if (answer !== undefined) return this.#answered(i, answer.value);
    }
    return this.#none(misses, fallback);
  }

  /**
   * One tier's settled attempt (`ok`: it resolved with `v`; else it threw `v`): its answer, a
   * value or a `Response` under 400; or, recorded in `misses`, a refusal (its wait) or an upstream
   * failure, and undefined. What stops the chain (the caller's abort, a request error) is thrown
   * as a `Stop`.
   */
  #judge<V>(i: number, ok: boolean, v: unknown, signal: AbortSignal | undefined, misses: Misses): { value: V } | undefined {
    let error = v;
    if (ok) {
      if (!isResponse(v) || v.status < 400) return { value: v as V };
      // A failing Response the breaker resolved with (and counted): the next tier may do better.
      discard(v);
      error = new FailedResponse(v.status, v.headers);
    }
    const name = this.#tiers[i]!.name;
    if (signal?.aborted) throw new Stop(error);
    if (isCircuitOpenError(error)) {
      misses.soonest = Math.min(misses.soonest, error.retryAfterMs);
      this.#emit(i, name, 'skipped', error);
      return undefined;
    }
    if (!this.#moveOn(error)) throw new Stop(error);
    this.#emit(i, name, 'failed', error);
    misses.last = error;
    misses.failed = true;
    return undefined;
  }

  #answered<V>(i: number, value: V): ChainResult<V> {
    const name = this.#tiers[i]!.name;
    this.#emit(i, name, 'answered');
    return { value, tier: i, name };
  }

  /** No tier answered: `fallback`'s answer, or the last failure, or a refusal with the soonest wait. */
  async #none<V>({ failed, last, soonest }: Misses, fallback?: (error: unknown, reason: FallbackReason) => V | Promise<V>): Promise<ChainResult<V>> {
    const error = failed ? last : new CircuitOpenError(this.name, 'OPEN', 'open', soonest);
    if (fallback === undefined) throw error;
    const reason = failed ? (isTimeoutError(last) ? 'timeout' : 'failure') : 'open';
    return { value: await fallback(error, reason), tier: -1, name: 'fallback' };
  }

  /** Whether tier `i` may take part in a hedge: CLOSED (or stateless) and not shedding. */
  #calm(i: number): boolean {
    const b = this.#tiers[i]?.breaker;
    return b !== undefined && (b.state === undefined || b.state === 'CLOSED') && !((b.throttleProbability ?? 0) > 0);
  }

  /**
   * `#walk` with `hedge`: each tier asked gets a signal of its own; while one tier runs without
   * progress past the policy's delay, the next is asked too (once per call, if the policy
   * allows); the first answer wins and the others are aborted. A failure moves on as in `#walk`.
   */
  async #race<V>(
    signal: AbortSignal | undefined,
    attempt: (tier: { breaker: ChainBreaker; call: Tier<T>['call'] }, signal: AbortSignal) => Promise<V>,
    inputTokens: number,
    fallback?: (error: unknown, reason: FallbackReason) => V | Promise<V>,
  ): Promise<ChainResult<V>> {
    const h = this.#hedge!;
    h.call();
    const running = new Set<Run<V>>();
    const start = (i: number, hedge: boolean): void => {
      const ctl = new AbortController();
      const run = { i, ctl, at: elapsed(), hedge } as Run<V>;
      let p: Promise<V>;
      try {
        p = attempt(this.#tiers[i]!, ctl.signal);
      } catch (e) {
        p = Promise.reject(e);
      }
      run.settled = p.then((v) => ({ run, ok: true, v }), (v: unknown) => ({ run, ok: false, v }));
      running.add(run);
    };
    const stop = (reason: unknown): void => {
      for (const r of running) {
        r.ctl.abort(reason);
        void r.settled.then((e) => e.ok && discard(e.v));
      }
    };
    const onAbort = (): void => stop(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const misses: Misses = { soonest: Infinity, last: undefined, failed: false };
    let next = 0;
    let asked = false;
    let hedged = false;
    try {
      for (;;) {
        if (running.size === 0) {
          if (next >= this.#tiers.length) break;
          start(next++, false);
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        const waits: Array<Promise<{ run: Run<V>; ok: boolean; v: unknown } | undefined>> = [...running].map((r) => r.settled);
        const only = running.size === 1 ? [...running][0]! : undefined;
        if (!asked && only !== undefined && next < this.#tiers.length) {
          const wait = Math.max(0, h.after(only.i) - (elapsed() - only.at));
          waits.push(new Promise((resolve) => (timer = setTimeout(resolve, wait, undefined))));
        }
        const e = await Promise.race(waits);
        if (timer !== undefined) clearTimeout(timer);
        if (e === undefined) {
          // The one tier running has shown no progress in time: ask the next as well, once.
          asked = true;
          if (h.start(this.#calm(only!.i) && this.#calm(next))) {
            hedged = true;
            this.#emit(next, this.#tiers[next]!.name, 'hedged', undefined, { afterMs: elapsed() - only!.at });
            start(next++, true);
          }
          continue;
        }
        const { run } = e;
        running.delete(run);
        const answer = judged(() => this.#judge<V>(run.i, e.ok, e.v, signal, misses), stop);
        if (answer === undefined) continue;
        const now = elapsed();
        h.progress(run.i, now - run.at);
        const losers = [...running];
        stop(lost());
        for (const r of losers) {
          h.progress(r.i, now - r.at);
          this.#emit(r.i, this.#tiers[r.i]!.name, 'lost', undefined, { inputTokens });
        }
        if (hedged) h.finish(run.hedge, losers.length > 0 ? inputTokens : 0);
        return this.#answered(run.i, answer.value);
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return this.#none(misses, fallback);
  }

  #moveOn(error: unknown): boolean {
    if (this.#fallThrough !== undefined) return this.#fallThrough(error) === true;
    const v = classifyError(error);
    if (v.class === 'cancelled') return false;
    const s = statusOf(error);
    return s === undefined || !STOP.includes(s);
  }

  #emit(tier: number, name: string, outcome: TierEvent['outcome'], error?: unknown, more?: Pick<TierEvent, 'afterMs' | 'inputTokens'>): void {
    if (this.#events.size) this.#events.emit({ chain: this.name, tier, name, outcome, ...(error === undefined ? {} : { error }), ...more });
  }
}

/** `inputTokens`, checked: a non-negative number, 0 when not given. */
const tokens = (n: unknown): number => Math.round(num('inputTokens', n, 0, 0, 2 ** 52, false));
