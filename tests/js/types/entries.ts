// Every subpath but breakwater/cloudflare (worker.ts), a value and a type from each, as an ES module
// (this folder's package.json: "type": "module"). cjs/entries.ts is its CommonJS twin.
import { CircuitBreaker, isCircuitOpenError, type CircuitBreakerOptions } from 'breakwater';
import { SharedCircuitBreaker, type SharedBreakerOptions } from 'breakwater/shared';
import { MemoryStore, StoreCircuitBreaker, type StoreBreakerOptions } from 'breakwater/store';
import { breakerMiddleware, isModelAnswerError, type BreakerMiddleware } from 'breakwater/ai';
import { PrometheusMetrics, type MetricFamily } from 'breakwater/prometheus';
import { OpenTelemetryMetrics, type MetricsSource } from 'breakwater/otel';

const options: CircuitBreakerOptions = { failureThreshold: 3 };
const breaker = new CircuitBreaker('esm', options);
const sharedOptions: SharedBreakerOptions = { transport: { exchange: async () => { throw new Error('down'); } } };
export const shared = new SharedCircuitBreaker('esm-shared', sharedOptions);
const storeOptions: StoreBreakerOptions = { store: new MemoryStore() };
export const store = new StoreCircuitBreaker('esm-store', storeOptions);
export const middleware: BreakerMiddleware = breakerMiddleware(breaker);
const source: MetricsSource = breaker;
export const families: MetricFamily[] = new PrometheusMetrics(source).collect();
export const otel: typeof OpenTelemetryMetrics = OpenTelemetryMetrics;
export const checks: boolean[] = [isCircuitOpenError(null), isModelAnswerError(null)];
