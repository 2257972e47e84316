/**
 * `breakwater/otel`: the breakers' metrics through the OpenTelemetry API, a state-change event
 * through its Logs API, and the GenAI time to first chunk. It takes the `Meter` (and the
 * `Logger`) you give it (`metrics.getMeter('breakwater')`, `logs.getLogger('breakwater')` from
 * `@opentelemetry/api`, an optional peer dependency) and imports nothing at run time: without
 * it, nothing is loaded.
 *
 * ```ts
 * import { logs, metrics } from '@opentelemetry/api';
 * import { OpenTelemetryMetrics } from 'breakwater/otel';
 * const otel = new OpenTelemetryMetrics(metrics.getMeter('breakwater'), breakers, { logger: logs.getLogger('breakwater') });
 * await withRetry(fn, { metrics: otel.retries('anthropic') });
 * ```
 *
 * OpenTelemetry has no resilience conventions yet. The attributes follow the open proposal,
 * open-telemetry/semantic-conventions issue #2355: `circuitbreaker.name`, `circuitbreaker.state`,
 * `retry.name`; it names no instrument, so the instruments keep breakwater's names (whose
 * Prometheus names, through OpenTelemetry's Prometheus exporter, are those of
 * `breakwater/prometheus`): `breakwater.state` (observable gauge, `circuitbreaker.name`,
 * `circuitbreaker.state`), `breakwater.opened`, `breakwater.calls` (`result`),
 * `breakwater.fallbacks` (observable counters), `breakwater.incident` (histogram, s),
 * `breakwater.retries` (histogram, `retry.name`), `breakwater.retry_delay` (histogram, s); with
 * `hedges(chain, policy)`, `breakwater.hedges` (`chain`, `result`) and
 * `breakwater.hedge.extra_input` (observable counters). With a `logger`, each state change is an
 * event, `circuitbreaker.state_change`. With `timeToFirstChunk`, the GenAI conventions' histogram
 * `gen_ai.client.operation.time_to_first_chunk` (open-telemetry/semantic-conventions-genai,
 * model/gen-ai/metrics.yaml).
 * @packageDocumentation
 */
import type { BatchObservableResult, Histogram, Meter, Observable } from '@opentelemetry/api';
import type { StateChangeEvent } from '../breakers/breaker.js';
import { checkKeys } from '../helpers/options.js';
import { Collector, DELAY_BUCKETS, HEDGE_RESULTS, INCIDENT_BUCKETS, RETRY_BUCKETS, type MetricsSource } from './collect.js';

export type { MetricsSource } from './collect.js';

/** A breaker state as `circuitbreaker.state` spells it (issue #2355 gives no values: OpenTelemetry's lowercase snake_case). */
const label = (s: string): string => s.toLowerCase();
const STATES = ['CLOSED', 'OPEN', 'HALF_OPEN'] as const;

/** `gen_ai.client.operation.time_to_first_chunk`'s bucket advice in the GenAI conventions (s). */
const CHUNK_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** A monotonic time in ms (a wall clock stepped back or forward would skew a duration). */
const now = (): number => (typeof performance === 'object' ? performance.now() : Date.now());

/**
 * The log record `OpenTelemetryMetrics` emits for a state change (an event: it has an `eventName`).
 * @inline
 */
export interface StateChangeRecord {
  /** `circuitbreaker.state_change`. */
  eventName: string;
  /** When the state changed (the breaker's clock). */
  timestamp: Date;
  /** 13 (WARN) when the breaker opened, 9 (INFO) otherwise. */
  severityNumber: number;
  /** `circuitbreaker.name`, `circuitbreaker.state` (the state now), `circuitbreaker.previous_state`. */
  attributes: Record<string, string>;
}

/**
 * What the `logger` option needs of an OpenTelemetry `Logger`: `logs.getLogger(...)` of
 * `@opentelemetry/api` (1.10 and later) or of `@opentelemetry/api-logs`.
 */
export interface EventLogger {
  /** Emits a log record. */
  emit(record: StateChangeRecord): void;
}

/** The options of `OpenTelemetryMetrics`, after its sources. */
export interface OpenTelemetryOptions {
  /** Emits a `circuitbreaker.state_change` event through this `Logger` on each state change of a watched breaker. */
  logger?: EventLogger | undefined;
}

/**
 * A GenAI call as the GenAI semantic conventions' metrics describe it (its required attributes,
 * and the model when known).
 */
export interface GenAiCall {
  /** `gen_ai.operation.name`: `chat`, `generate_content`, `text_completion`... */
  operation: string;
  /** `gen_ai.provider.name`: `anthropic`, `openai`, `gcp.gemini`, `aws.bedrock`... */
  provider: string;
  /** `gen_ai.request.model`: the model asked for, as the request named it. */
  model?: string | undefined;
}

/**
 * Times a call that resolves at its answer's first chunk (`breaker.stream(...)`): resolved, the
 * time since `start` was called is recorded; rejected, nothing is.
 */
export type FirstChunkTimer = <T>(start: () => Promise<T>) => Promise<T>;

const nonEmpty = (option: string, v: unknown): string => {
  if (typeof v === 'string' && v.length > 0) return v;
  throw new TypeError(`breakwater: timeToFirstChunk needs "${option}" as a non-empty string`);
};

/**
 * Records the breakers' metrics through an OpenTelemetry `Meter`: counters and the state are
 * observed at each collection (from `breaker.stats`, nothing on the hot path); incidents and
 * retries are recorded in histograms when they end; with a `logger`, each state change is an event.
 */
export class OpenTelemetryMetrics extends Collector {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'OpenTelemetryMetrics';
  #incident: Histogram;
  #retries: Histogram;
  #delay: Histogram;
  #chunk: Histogram | undefined;
  #observables: Observable[];
  #meter: Meter;
  #logger: EventLogger | undefined;
  #observe = (r: BatchObservableResult) => {
    const [state, opened, calls, fallbacks, hedges, extra] = this.#observables as [Observable, Observable, Observable, Observable, Observable, Observable];
    for (const { chain, stats } of this.hedgeReadings()) {
      for (const result of HEDGE_RESULTS) r.observe(hedges, stats[result], { chain, result });
      r.observe(extra, stats.extraInputTokens, { chain });
    }
    for (const b of this.readings()) {
      const name = { 'circuitbreaker.name': b.name };
      for (const s of STATES) r.observe(state, b.state === s ? 1 : 0, { ...name, 'circuitbreaker.state': label(s) });
      const st = b.stats;
      r.observe(opened, st.opened, name);
      r.observe(calls, st.successes, { ...name, result: 'success' });
      r.observe(calls, st.failures, { ...name, result: 'failure' });
      r.observe(calls, st.ignored, { ...name, result: 'ignored' });
      r.observe(calls, st.rejected - (st.throttled ?? 0), { ...name, result: 'rejected' });
      r.observe(calls, st.throttled ?? 0, { ...name, result: 'throttled' });
      r.observe(calls, st.full ?? 0, { ...name, result: 'full' });
      r.observe(fallbacks, st.fallbacks ?? 0, name);
    }
  };

  /**
   * Watches `sources` (breakers, registries) through `meter`; an options object may follow them
   * (`{ logger }`: unknown keys throw a `TypeError` naming them).
   */
  constructor(meter: Meter, ...sources: MetricsSource[]);
  constructor(meter: Meter, ...args: [...sources: MetricsSource[], options: OpenTelemetryOptions]);
  constructor(meter: Meter, ...args: Array<MetricsSource | OpenTelemetryOptions>) {
    super();
    if (typeof meter?.createHistogram !== 'function') {
      throw new TypeError('breakwater: OpenTelemetryMetrics takes a Meter (metrics.getMeter(...) from @opentelemetry/api)');
    }
    const last = args.at(-1) as (OpenTelemetryOptions & { onStateChange?: unknown }) | undefined;
    if (typeof last === 'object' && last !== null && typeof last.onStateChange !== 'function') {
      args.pop();
      checkKeys('OpenTelemetryMetrics options', last, ['logger']);
      const logger = last.logger;
      if (logger !== undefined && typeof logger?.emit !== 'function') {
        throw new TypeError('breakwater: invalid option "logger" in OpenTelemetryMetrics options (expected a Logger: logs.getLogger(...) from @opentelemetry/api)');
      }
      this.#logger = logger;
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
    for (const s of args as MetricsSource[]) this.add(s);
  }

  /**
   * A timer for `gen_ai.client.operation.time_to_first_chunk` (histogram, s, the GenAI
   * conventions' buckets), with `gen_ai.operation.name`, `gen_ai.provider.name` and
   * `gen_ai.request.model` from `call`. Wrap a streamed call that resolves at its first chunk:
   * `breaker.stream` (and the shared breakers' `stream`) resolves once the first content chunk
   * arrived, so the time recorded is the user's wait for it, retries and the breaker's queue
   * included. The spec asks it of streamed calls only: wrap nothing else.
   */
  timeToFirstChunk(call: GenAiCall): FirstChunkTimer {
    const c = Object(call) as Partial<GenAiCall>;
    checkKeys('timeToFirstChunk', c, ['operation', 'provider', 'model']);
    const attributes: Record<string, string> = {
      'gen_ai.operation.name': nonEmpty('operation', c.operation),
      'gen_ai.provider.name': nonEmpty('provider', c.provider),
    };
    if (c.model !== undefined) attributes['gen_ai.request.model'] = nonEmpty('model', c.model);
    const h = (this.#chunk ??= this.#meter.createHistogram('gen_ai.client.operation.time_to_first_chunk', {
      description: 'Time from the request to the first chunk of its streamed answer.',
      unit: 's',
      advice: { explicitBucketBoundaries: CHUNK_BUCKETS },
    }));
    return async (start) => {
      const t = now();
      const v = await start();
      h.record((now() - t) / 1000, attributes);
      return v;
    };
  }

  /** Records an incident of `breaker` (from opening to closing again, seconds) in `breakwater.incident`. */
  protected incident(breaker: string, seconds: number): void {
    this.#incident.record(seconds, { 'circuitbreaker.name': breaker });
  }

  /** Records one `withRetry` call's retries and backoff (seconds) in `breakwater.retries` and `breakwater.retry_delay`. */
  protected retried(name: string, retries: number, delaySeconds: number): void {
    this.#retries.record(retries, { 'retry.name': name });
    this.#delay.record(delaySeconds, { 'retry.name': name });
  }

  /** Emits `circuitbreaker.state_change` through the `logger` option, if any. */
  protected override changed(e: StateChangeEvent): void {
    this.#logger?.emit({
      eventName: 'circuitbreaker.state_change',
      timestamp: new Date(e.at),
      severityNumber: e.to === 'OPEN' ? 13 : 9,
      attributes: { 'circuitbreaker.name': e.breaker, 'circuitbreaker.state': label(e.to), 'circuitbreaker.previous_state': label(e.from) },
    });
  }

  /** Stops watching and removes the observable callback. */
  override dispose(): void {
    super.dispose();
    this.#meter.removeBatchObservableCallback(this.#observe, this.#observables);
  }
}
