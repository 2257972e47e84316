// Type-checks the declarations of the breaker statistics and the metrics adapters
// (breakwater/prometheus, breakwater/otel) the way an app uses them.
import { metrics } from '@opentelemetry/api';
import { BreakerRegistry, CircuitBreaker, withRetry, type BreakerStats, type RetryObserver } from 'breakwater';
import { PrometheusMetrics, type MetricFamily } from 'breakwater/prometheus';
import { OpenTelemetryMetrics } from 'breakwater/otel';

const registry = new BreakerRegistry({ failureThreshold: 5 });
const single = new CircuitBreaker('tool');
export const prom = new PrometheusMetrics(registry, single);
export const otel = new OpenTelemetryMetrics(metrics.getMeter('breakwater'), registry);
const observer: RetryObserver = prom.retries('anthropic');
export const fallbacks: number = (single.stats satisfies BreakerStats).fallbacks;
export async function handler(): Promise<Response> {
  await withRetry(async () => 1, { metrics: observer });
  await withRetry(async () => 1, { metrics: otel.retries('anthropic') });
  const families: MetricFamily[] = prom.collect();
  return new Response(prom.text() + families.length, { headers: { 'content-type': prom.contentType } });
}
prom.register({ registerMetric: () => {} });
// @ts-expect-error: a RetryObserver needs observeRetries
withRetry(async () => 1, { metrics: {} });
otel.dispose();
