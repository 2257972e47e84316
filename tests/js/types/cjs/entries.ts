// Every subpath but breakwater/cloudflare, a value and a type from each, as a CommonJS module (this
// folder's package.json: "type": "commonjs"): under node16 each import is a require(), typed by the
// .d.cts declarations; under node10 the subpaths resolve by typesVersions. ../entries.ts is its ESM
// twin.
import { CircuitBreaker, isCircuitOpenError, type CircuitBreakerOptions } from 'breakwater';
import { SharedCircuitBreaker, type SharedBreakerOptions } from 'breakwater/shared';
import { MemoryStore, StoreCircuitBreaker, type StoreBreakerOptions } from 'breakwater/store';
import { breakerMiddleware, isModelAnswerError, type BreakerMiddleware } from 'breakwater/ai';
import { PrometheusMetrics, type MetricFamily } from 'breakwater/prometheus';
import { OpenTelemetryMetrics, type MetricsSource } from 'breakwater/otel';

const options: CircuitBreakerOptions = { failureThreshold: 3 };
const breaker = new CircuitBreaker('cjs', options);
const sharedOptions: SharedBreakerOptions = { transport: { exchange: async () => { throw new Error('down'); } } };
export const shared = new SharedCircuitBreaker('cjs-shared', sharedOptions);
const storeOptions: StoreBreakerOptions = { store: new MemoryStore() };
export const store = new StoreCircuitBreaker('cjs-store', storeOptions);
export const middleware: BreakerMiddleware = breakerMiddleware(breaker);
const source: MetricsSource = breaker;
export const families: MetricFamily[] = new PrometheusMetrics(source).collect();
export const otel: typeof OpenTelemetryMetrics = OpenTelemetryMetrics;
export const checks: boolean[] = [isCircuitOpenError(null), isModelAnswerError(null)];

// `require` form too.
import bw = require('breakwater');
export const again = new bw.CircuitBreaker('cjs-require');
