/**
 * `breakwater/prometheus`: the breakers' metrics in the Prometheus text format, with the series
 * of the Rust `BreakerMetrics` and of the Worker's `/metrics` route. No dependency; with
 * prom-client, `register(registry)` adds the series to a prom-client registry.
 *
 * ```ts
 * import { PrometheusMetrics } from 'breakwater/prometheus';
 * export const metrics = new PrometheusMetrics(breakers); // a BreakerRegistry or CircuitBreakers
 * await withRetry(fn, { metrics: metrics.retries('anthropic') });
 * // GET /metrics
 * return new Response(metrics.text(), { headers: { 'content-type': metrics.contentType } });
 * ```
 * @packageDocumentation
 */
import {
  Collector,
  DELAY_BUCKETS,
  HEDGE_RESULTS,
  INCIDENT_BUCKETS,
  RETRY_BUCKETS,
  type BreakerReading,
  type MetricsSource,
} from './collect.js';

export type { MetricsSource } from './collect.js';

/** One sample, in prom-client's shape (`metricName` for a histogram's `_bucket`/`_sum`/`_count`). */
export interface Sample {
  /** The series' name when it is not the family's: a histogram's `<name>_bucket`, `<name>_sum` or `<name>_count`. */
  metricName?: string | undefined;
  /** The labels: `breaker`, and `state`, `result` or `le` where the family has them. */
  labels: Record<string, string>;
  /** The value. */
  value: number;
}

/** One metric family, in prom-client's shape (what its `metric.get()` returns). */
export interface MetricFamily {
  /** The family's name, e.g. `breakwater_calls_total`. */
  name: string;
  /** What it measures (the `# HELP` line). */
  help: string;
  /** `'gauge'`, `'counter'` or `'histogram'`. */
  type: 'gauge' | 'counter' | 'histogram';
  /** Its samples. */
  values: Sample[];
  /** How prom-client aggregates it across cluster workers: always `'sum'`. */
  aggregator: 'sum';
}

/** A prom-client `Registry` (only `registerMetric` is used). */
export interface PromClientRegistry {
  /** Adds a metric (`name`, `help`, `type`, `aggregator` and `get()`, read at each scrape). */
  registerMetric(metric: unknown): void;
}

/** The families, in order: name, type, help. */
const FAMILIES = [
  ['breakwater_state', 'gauge', '1 for the state the breaker is in (closed, open, half_open).'],
  ['breakwater_opened_total', 'counter', 'Times the breaker opened.'],
  ['breakwater_incident_seconds', 'histogram', 'Incidents: from opening to closing again, seconds.'],
  ['breakwater_calls_total', 'counter', 'Calls by result: success, failure, ignored (not counted against the upstream), rejected (by the breaker\'s state), throttled (shed by adaptiveThrottle), full (refused by the concurrency limit).'],
  ['breakwater_fallbacks_total', 'counter', 'Calls answered by a fallback (alert above 5 % of calls).'],
  ['breakwater_retries', 'histogram', 'Retries per call (a p50 above 0: the provider is degraded).'],
  ['breakwater_retry_delay_seconds', 'histogram', 'Backoff that retries added to a call, seconds.'],
  ['breakwater_hedges_total', 'counter', 'Hedges by result: started (a second tier asked), won (it answered first), lost (aborted), refused (the budget was spent), held (a tier not closed or shedding).'],
  ['breakwater_hedge_extra_input_tokens_total', 'counter', 'Estimated input tokens of the requests that lost a hedged race (their likely extra cost).'],
] as const;

type FamilyName = (typeof FAMILIES)[number][0];

const STATES = [
  ['CLOSED', 'closed'],
  ['OPEN', 'open'],
  ['HALF_OPEN', 'half_open'],
] as const;

class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }
  observe(v: number): void {
    for (let i = 0; i < this.bounds.length; i++) if (v <= this.bounds[i]!) this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
  samples(name: string, breaker: string, out: Sample[]): void {
    this.bounds.forEach((le, i) => out.push({ metricName: `${name}_bucket`, labels: { breaker, le: String(le) }, value: this.counts[i]! }));
    out.push({ metricName: `${name}_bucket`, labels: { breaker, le: '+Inf' }, value: this.count });
    out.push({ metricName: `${name}_sum`, labels: { breaker }, value: this.sum });
    out.push({ metricName: `${name}_count`, labels: { breaker }, value: this.count });
  }
}

function histogram(map: Map<string, Histogram>, name: string, bounds: readonly number[]): Histogram {
  let h = map.get(name);
  if (h === undefined) map.set(name, (h = new Histogram(bounds)));
  return h;
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const formatValue = (v: number) => (v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v));

/**
 * Keeps the breakers' metrics and renders them: `text()` for a `/metrics` route, `register()` for
 * a prom-client registry. Construct it once, next to the breakers (incident lengths are measured
 * from the state changes it sees).
 */
export class PrometheusMetrics extends Collector {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'PrometheusMetrics';
  /** The Content-Type of `text()`. */
  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8';
  #incidents = new Map<string, Histogram>();
  #retries = new Map<string, Histogram>();
  #delays = new Map<string, Histogram>();

  constructor(...sources: MetricsSource[]) {
    super();
    for (const s of sources) this.add(s);
  }

  /** Observes an incident of `breaker` (from opening to closing again, seconds) in `breakwater_incident_seconds`. */
  protected incident(breaker: string, seconds: number): void {
    histogram(this.#incidents, breaker, INCIDENT_BUCKETS).observe(seconds);
  }

  /** Observes one `withRetry` call's retries and backoff (seconds) in `breakwater_retries` and `breakwater_retry_delay_seconds`. */
  protected retried(name: string, retries: number, delaySeconds: number): void {
    histogram(this.#retries, name, RETRY_BUCKETS).observe(retries);
    histogram(this.#delays, name, DELAY_BUCKETS).observe(delaySeconds);
  }

  /** Every family with its samples now, in prom-client's shape. */
  collect(): MetricFamily[] {
    const breakers = this.readings();
    return FAMILIES.map(([name]) => this.#family(name, breakers));
  }

  #family(name: FamilyName, breakers: BreakerReading[]): MetricFamily {
    const [, type, help] = FAMILIES.find((f) => f[0] === name)!;
    const values: Sample[] = [];
    const each = (f: (b: BreakerReading) => void) => breakers.forEach(f);
    // Histograms: one per breaker (empty if nothing was observed) and one per other name seen.
    const hist = (map: Map<string, Histogram>, bounds: readonly number[]) => {
      const names = new Set([...breakers.map((b) => b.name), ...map.keys()]);
      for (const n of names) (map.get(n) ?? new Histogram(bounds)).samples(name, n, values);
    };
    switch (name) {
      case 'breakwater_state':
        each((b) => STATES.forEach(([s, state]) => values.push({ labels: { breaker: b.name, state }, value: b.state === s ? 1 : 0 })));
        break;
      case 'breakwater_opened_total':
        each((b) => values.push({ labels: { breaker: b.name }, value: b.stats.opened }));
        break;
      case 'breakwater_calls_total':
        each((b) => {
          const s = b.stats;
          for (const [result, value] of [
            ['success', s.successes],
            ['failure', s.failures],
            ['ignored', s.ignored],
            ['rejected', s.rejected - (s.throttled ?? 0)],
            ['throttled', s.throttled ?? 0],
            ['full', s.full ?? 0],
          ] as const) {
            values.push({ labels: { breaker: b.name, result }, value });
          }
        });
        break;
      case 'breakwater_fallbacks_total':
        each((b) => values.push({ labels: { breaker: b.name }, value: b.stats.fallbacks ?? 0 }));
        break;
      case 'breakwater_incident_seconds':
        hist(this.#incidents, INCIDENT_BUCKETS);
        break;
      case 'breakwater_retries':
        hist(this.#retries, RETRY_BUCKETS);
        break;
      case 'breakwater_retry_delay_seconds':
        hist(this.#delays, DELAY_BUCKETS);
        break;
      case 'breakwater_hedges_total':
        for (const { chain, stats } of this.hedgeReadings()) {
          for (const result of HEDGE_RESULTS) values.push({ labels: { chain, result }, value: stats[result] });
        }
        break;
      case 'breakwater_hedge_extra_input_tokens_total':
        for (const { chain, stats } of this.hedgeReadings()) values.push({ labels: { chain }, value: stats.extraInputTokens });
        break;
    }
    return { name, help, type, values, aggregator: 'sum' };
  }

  /** Every series in the Prometheus text exposition format (version 0.0.4). */
  text(): string {
    let out = '';
    for (const f of this.collect()) {
      if (f.values.length === 0) continue;
      out += `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n`;
      for (const v of f.values) {
        const labels = Object.entries(v.labels)
          .map(([k, l]) => `${k}="${escapeLabel(l)}"`)
          .join(',');
        out += `${v.metricName ?? f.name}${labels ? `{${labels}}` : ''} ${formatValue(v.value)}\n`;
      }
    }
    return out;
  }

  /**
   * Adds the series to a prom-client registry (`client.register` or a `new Registry()`), read at
   * each scrape: `await registry.metrics()` then includes them. prom-client is not imported.
   */
  register(registry: PromClientRegistry): this {
    if (typeof registry?.registerMetric !== 'function') {
      throw new TypeError('breakwater: register() takes a prom-client Registry');
    }
    for (const [name, type, help] of FAMILIES) {
      registry.registerMetric({
        name,
        help,
        type,
        aggregator: 'sum',
        get: async () => this.#family(name, this.readings()),
        reset: () => {},
      });
    }
    return this;
  }
}
