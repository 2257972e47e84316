// The part of the metrics adapters (`breakwater/prometheus`, `breakwater/otel`) they share: the
// sources (breakers, registries), the incidents measured from their state changes, the retry
// observers. Bundled into each adapter's entry; it imports nothing at run time from the main
// entry (types only), so an adapter adds no second copy of the wasm or of the breaker.
import type { BreakerStats, CircuitBreaker, HedgeOption, HedgeStats, StateChangeEvent } from '../breakers/breaker.js';
import type { BreakerRegistry } from '../breakers/registry.js';
import type { RetryObserver } from '../breakers/retry.js';
import type { Unsubscribe } from '../helpers/events.js';

/** What a metrics adapter watches: a breaker, or a registry (its present and future breakers). */
export type MetricsSource = CircuitBreaker | BreakerRegistry;

/** The results of `breakwater_hedges_total` / `breakwater.hedges`, each a field of `HedgeStats`. */
export const HEDGE_RESULTS = ['started', 'won', 'lost', 'refused', 'held'] as const;

/** Upper bounds of `breakwater_incident_seconds` (as in the Rust `BreakerMetrics`). */
export const INCIDENT_BUCKETS: readonly number[] = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Upper bounds of `breakwater_retries`. */
export const RETRY_BUCKETS: readonly number[] = [0, 1, 2, 3, 5, 8];
/** Upper bounds of `breakwater_retry_delay_seconds`. */
export const DELAY_BUCKETS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * One breaker as the adapters read it at collection time.
 * @inline
 */
export interface BreakerReading {
  /** The breaker's name (in a registry, the name it is held under). */
  name: string;
  /** Its state. */
  state: CircuitBreaker['state'];
  /** Its running totals. */
  stats: BreakerStats;
}

/**
 * One `hedge()` policy as the adapters read it at collection time.
 * @inline
 */
export interface HedgeReading {
  /** The name it was watched under (`hedges(chain, policy)`). */
  chain: string;
  /** Its running totals. */
  stats: HedgeStats;
}

interface Watchable {
  onStateChange(listener: (event: StateChangeEvent) => void): Unsubscribe;
}

const isRegistry = (s: MetricsSource): s is BreakerRegistry => typeof (s as BreakerRegistry).names === 'function';

/** The shared base of `PrometheusMetrics` and `OpenTelemetryMetrics`: the sources, incidents, retry observers. */
export abstract class Collector {
  #sources = new Set<MetricsSource>();
  #off: Unsubscribe[] = [];
  #since = new Map<string, number>();
  #hedges = new Map<string, HedgeOption>();

  /** Watches one more breaker or registry (incidents are measured from now on). */
  add(source: MetricsSource): this {
    const s = source as Partial<Watchable> & object;
    if (typeof s !== 'object' || s === null || typeof s.onStateChange !== 'function') {
      throw new TypeError('breakwater: a metrics source is a CircuitBreaker or a BreakerRegistry');
    }
    if (!this.#sources.has(source)) {
      this.#sources.add(source);
      this.#off.push(s.onStateChange((e) => this.#transition(e)));
    }
    return this;
  }

  /**
   * A `RetryObserver` for `withRetry`'s `metrics` option: each call's retries and backoff go to
   * `breakwater_retries` / `breakwater_retry_delay_seconds` labelled `breaker="<name>"` (use the
   * name of the breaker the calls go through, if any); in OpenTelemetry, to `breakwater.retries` /
   * `breakwater.retry_delay` with the attribute `retry.name`.
   */
  retries(name: string): RetryObserver {
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('breakwater: retries(name) needs a non-empty name');
    return { observeRetries: (retries, delayMs) => this.retried(name, retries, delayMs / 1000) };
  }

  /**
   * Watches a `hedge()` policy of `breakwater/adaptive` under the name of the chain (or model)
   * that uses it: `breakwater_hedges_total{chain, result}` (started, won, lost, refused, held)
   * and `breakwater_hedge_extra_input_tokens_total{chain}`, read from its `stats` at collection.
   */
  hedges(chain: string, policy: HedgeOption): this {
    if (typeof chain !== 'string' || chain.length === 0) throw new TypeError('breakwater: hedges(chain, policy) needs a non-empty chain name');
    if (policy?.kind !== 'hedge' || typeof policy.stats !== 'object') {
      throw new TypeError("breakwater: hedges(chain, policy) takes a value of hedge() from 'breakwater/adaptive'");
    }
    this.#hedges.set(chain, policy);
    return this;
  }

  /** Stops watching (state-change subscriptions are dropped). */
  dispose(): void {
    for (const off of this.#off) off();
    this.#off = [];
    this.#sources.clear();
    this.#hedges.clear();
  }

  /** Every hedging policy watched, with its stats now. */
  protected hedgeReadings(): HedgeReading[] {
    return [...this.#hedges].map(([chain, p]) => ({ chain, stats: p.stats }));
  }

  /** Every breaker watched now, each name once (the first source holding it wins). */
  protected readings(): BreakerReading[] {
    const seen = new Map<string, BreakerReading>();
    const read = (name: string, b: CircuitBreaker) => {
      if (!seen.has(name)) seen.set(name, { name, state: b.state, stats: b.stats });
    };
    for (const s of this.#sources) {
      if (isRegistry(s)) for (const [name, b] of s) read(name, b);
      else read(s.name, s);
    }
    return [...seen.values()];
  }

  /** Records an incident of `breaker`: from its first opening to closing again, seconds. */
  protected abstract incident(breaker: string, seconds: number): void;
  /** Records one `withRetry` call's retries and backoff (seconds), labelled with `name`. */
  protected abstract retried(name: string, retries: number, delaySeconds: number): void;
  /** Told of each state change of a watched breaker, after the incident is measured (the OTel adapter's event). */
  protected changed?(event: StateChangeEvent): void;

  // An incident: from the first opening to the next close, however many probe rounds failed.
  #transition(e: StateChangeEvent): void {
    if (e.to === 'OPEN') {
      if (!this.#since.has(e.breaker)) this.#since.set(e.breaker, e.at);
    } else if (e.to === 'CLOSED') {
      const start = this.#since.get(e.breaker);
      if (start !== undefined) {
        this.#since.delete(e.breaker);
        this.incident(e.breaker, Math.max(0, e.at - start) / 1000);
      }
    }
    this.changed?.(e);
  }
}
