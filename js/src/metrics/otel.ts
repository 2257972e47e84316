/**
 * `breakwater/otel`: the breakers' metrics through the OpenTelemetry API. It takes the `Meter`
 * you give it (`metrics.getMeter('breakwater')` from `@opentelemetry/api`, an optional peer
 * dependency) and imports nothing at run time: without it, nothing is loaded.
 *
 * ```ts
 * import { metrics } from '@opentelemetry/api';
 * import { OpenTelemetryMetrics } from 'breakwater/otel';
 * const otel = new OpenTelemetryMetrics(metrics.getMeter('breakwater'), breakers);
 * await withRetry(fn, { metrics: otel.retries('anthropic') });
 * ```
 *
 * Instruments (their Prometheus names, through OpenTelemetry's Prometheus exporter, are those of
 * `breakwater/prometheus`): `breakwater.state` (observable gauge, `breaker`, `state`),
 * `breakwater.opened`, `breakwater.calls` (`result`), `breakwater.fallbacks` (observable
 * counters), `breakwater.incident` (histogram, s), `breakwater.retries` (histogram),
 * `breakwater.retry_delay` (histogram, s); with `hedges(chain, policy)`, `breakwater.hedges`
 * (`chain`, `result`) and `breakwater.hedge.extra_input` (observable counters).
 * @packageDocumentation
 */
import type { BatchObservableResult, Histogram, Meter, Observable } from '@opentelemetry/api';
import { Collector, DELAY_BUCKETS, HEDGE_RESULTS, INCIDENT_BUCKETS, RETRY_BUCKETS, type MetricsSource } from './collect.js';

export type { MetricsSource } from './collect.js';

const STATES = [
  ['CLOSED', 'closed'],
  ['OPEN', 'open'],
  ['HALF_OPEN', 'half_open'],
] as const;

/**
 * Records the breakers' metrics through an OpenTelemetry `Meter`: counters and the state are
 * observed at each collection (from `breaker.stats`, nothing on the hot path); incidents and
 * retries are recorded in histograms when they end.
 */
export class OpenTelemetryMetrics extends Collector {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'OpenTelemetryMetrics';
  #incident: Histogram;
  #retries: Histogram;
  #delay: Histogram;
  #observables: Observable[];
  #meter: Meter;
  #observe = (r: BatchObservableResult) => {
    const [state, opened, calls, fallbacks, hedges, extra] = this.#observables as [Observable, Observable, Observable, Observable, Observable, Observable];
    for (const { chain, stats } of this.hedgeReadings()) {
      for (const result of HEDGE_RESULTS) r.observe(hedges, stats[result], { chain, result });
      r.observe(extra, stats.extraInputTokens, { chain });
    }
    for (const b of this.readings()) {
      const breaker = b.name;
      for (const [s, label] of STATES) r.observe(state, b.state === s ? 1 : 0, { breaker, state: label });
      const st = b.stats;
      r.observe(opened, st.opened, { breaker });
      r.observe(calls, st.successes, { breaker, result: 'success' });
      r.observe(calls, st.failures, { breaker, result: 'failure' });
      r.observe(calls, st.ignored, { breaker, result: 'ignored' });
      r.observe(calls, st.rejected - (st.throttled ?? 0), { breaker, result: 'rejected' });
      r.observe(calls, st.throttled ?? 0, { breaker, result: 'throttled' });
      r.observe(calls, st.full ?? 0, { breaker, result: 'full' });
      r.observe(fallbacks, st.fallbacks ?? 0, { breaker });
    }
  };

  constructor(meter: Meter, ...sources: MetricsSource[]) {
    super();
    if (typeof meter?.createHistogram !== 'function') {
      throw new TypeError('breakwater: OpenTelemetryMetrics takes a Meter (metrics.getMeter(...) from @opentelemetry/api)');
    }
    this.#meter = meter;
    this.#observables = [
      meter.createObservableGauge('breakwater.state', { description: '1 for the state the breaker is in (closed, open, half_open).' }),
      meter.createObservableCounter('breakwater.opened', { description: 'Times the breaker opened.' }),
      meter.createObservableCounter('breakwater.calls', { description: 'Calls by result: success, failure, ignored, rejected, throttled, full.' }),
      meter.createObservableCounter('breakwater.fallbacks', { description: 'Calls answered by a fallback (alert above 5 % of calls).' }),
      meter.createObservableCounter('breakwater.hedges', { description: 'Hedges by result: started, won, lost, refused (budget), held (a tier not closed or shedding).' }),
      meter.createObservableCounter('breakwater.hedge.extra_input', {
        description: 'Estimated input tokens of the requests that lost a hedged race.',
        unit: '{token}',
      }),
    ];
    this.#incident = meter.createHistogram('breakwater.incident', {
      description: 'Incidents: from opening to closing again.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...INCIDENT_BUCKETS] },
    });
    this.#retries = meter.createHistogram('breakwater.retries', {
      description: 'Retries per call (a p50 above 0: the provider is degraded).',
      unit: '{retry}',
      advice: { explicitBucketBoundaries: [...RETRY_BUCKETS] },
    });
    this.#delay = meter.createHistogram('breakwater.retry_delay', {
      description: 'Backoff that retries added to a call.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...DELAY_BUCKETS] },
    });
    meter.addBatchObservableCallback(this.#observe, this.#observables);
    for (const s of sources) this.add(s);
  }

  /** Records an incident of `breaker` (from opening to closing again, seconds) in `breakwater.incident`. */
  protected incident(breaker: string, seconds: number): void {
    this.#incident.record(seconds, { breaker });
  }

  /** Records one `withRetry` call's retries and backoff (seconds) in `breakwater.retries` and `breakwater.retry_delay`. */
  protected retried(name: string, retries: number, delaySeconds: number): void {
    this.#retries.record(retries, { breaker: name });
    this.#delay.record(delaySeconds, { breaker: name });
  }

  /** Stops watching and removes the observable callback. */
  override dispose(): void {
    super.dispose();
    this.#meter.removeBatchObservableCallback(this.#observe, this.#observables);
  }
}
