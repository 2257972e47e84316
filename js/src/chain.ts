// A fallback chain: tiers tried in order, each behind its own breaker. A tier whose breaker is
// OPEN refuses at once (no call, no latency) and the next one is asked; an upstream failure moves
// on too; a client error stops the chain (it would fail on every tier). The breakers decide; the
// chain only walks.
import { CircuitOpenError, isCircuitOpenError, isTimeoutError } from './helpers/errors.js';
import { Emitter, type Unsubscribe } from './helpers/events.js';
import { checkKeys, fail, fn as optFn, obj } from './helpers/options.js';
import { classifyError, isResponse, statusOf } from './classify.js';
import { EXECUTE_KEYS, type BreakerStreamOptions, type CallContext, type ExecuteOptions, type FallbackReason } from './breakers/breaker.js';
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
  /** `answered`: this tier's value is returned; `skipped`: its breaker refused; `failed`: it was called and failed. */
  outcome: 'answered' | 'skipped' | 'failed';
  /** `skipped`: the breaker's `CircuitOpenError`; `failed`: the error the tier failed with. Absent for `answered`. */
  error?: unknown;
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
  #events = new Emitter<TierEvent>();

  constructor(tiers: ReadonlyArray<Tier<T>>, options: FallbackChainOptions = {}) {
    if (!Array.isArray(tiers) || tiers.length === 0) fail('tiers', tiers, 'a non-empty array of { breaker, call }', true);
    const o = obj('FallbackChain options', options) ?? {};
    checkKeys('FallbackChain options', o, ['name', 'fallThrough']);
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
  async execute(options?: ExecuteOptions<T>): Promise<ChainResult<T>> {
    if (options !== undefined) checkKeys('FallbackChain execute options', obj('FallbackChain execute options', options) ?? {}, EXECUTE_KEYS);
    const { fallback, ...tierOptions } = options ?? {};
    if (fallback !== undefined && typeof fallback !== 'function') fail('fallback', fallback, 'a function');
    return this.#walk(
      options?.signal,
      (t) => (t.breaker.execute as (fn: Tier<T>['call'], o?: ExecuteOptions<T>) => Promise<T>)(t.call, options === undefined ? undefined : tierOptions),
      fallback,
    );
  }

  /**
   * Streams from the first tier whose stream begins: a tier falls through only before its first
   * content chunk (see `CircuitBreaker.stream`); once one begins, it is the answer. With
   * `retry`, each tier is retried before the first word before the next one is asked.
   */
  stream<U = Uint8Array>(options?: BreakerStreamOptions<U>): Promise<ChainResult<ReadableStream<U>>> {
    return this.#walk(options?.signal, (t) =>
      (
        t.breaker.stream as (
          fn: (c: CallContext) => StreamSource<U> | Promise<StreamSource<U>>,
          o?: BreakerStreamOptions<U>,
        ) => Promise<ReadableStream<U>>
      )(t.call as unknown as (c: CallContext) => StreamSource<U>, options),
    );
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
    let soonest = Infinity;
    let last: unknown;
    let failed = false;
    for (let i = 0; i < this.#tiers.length; i++) {
      const t = this.#tiers[i]!;
      let error: unknown;
      try {
        const value = await attempt(t);
        if (!isResponse(value) || value.status < 400) {
          this.#emit(i, t.name, 'answered');
          return { value, tier: i, name: t.name };
        }
        // A failing Response the breaker resolved with (and counted): the next tier may do better.
        void (value as unknown as Response).body?.cancel().catch(() => {});
        error = new FailedResponse(value.status, value.headers);
      } catch (e) {
        error = e;
      }
      if (signal?.aborted) throw error;
      if (isCircuitOpenError(error)) {
        soonest = Math.min(soonest, error.retryAfterMs);
        this.#emit(i, t.name, 'skipped', error);
        continue;
      }
      if (!this.#moveOn(error)) throw error;
      this.#emit(i, t.name, 'failed', error);
      last = error;
      failed = true;
    }
    const error = failed ? last : new CircuitOpenError(this.name, 'OPEN', 'open', soonest);
    if (fallback === undefined) throw error;
    const reason = failed ? (isTimeoutError(last) ? 'timeout' : 'failure') : 'open';
    return { value: await fallback(error, reason), tier: -1, name: 'fallback' };
  }

  #moveOn(error: unknown): boolean {
    if (this.#fallThrough !== undefined) return this.#fallThrough(error) === true;
    const v = classifyError(error);
    if (v.class === 'cancelled') return false;
    const s = statusOf(error);
    return s === undefined || !STOP.includes(s);
  }

  #emit(tier: number, name: string, outcome: TierEvent['outcome'], error?: unknown): void {
    if (this.#events.size) this.#events.emit({ chain: this.name, tier, name, outcome, ...(error === undefined ? {} : { error }) });
  }
}
