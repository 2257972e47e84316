// breakwater/otel against the official SDK: the metrics through @opentelemetry/sdk-metrics'
// InMemoryMetricExporter, the state-change events through @opentelemetry/sdk-logs'
// InMemoryLogRecordExporter. The names are those of the open resilience proposal
// (open-telemetry/semantic-conventions issue #2355: `circuitbreaker.name`,
// `circuitbreaker.state`, `retry.name`, an event on a state change) and of the GenAI conventions
// (`gen_ai.client.operation.time_to_first_chunk`, open-telemetry/semantic-conventions-genai
// model/gen-ai/metrics.yaml); js/README.md's OpenTelemetry section maps them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, BreakerRegistry, isCircuitOpenError, withRetry } from 'breakwater';
import { OpenTelemetryMetrics } from 'breakwater/otel';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { manualClock, httpError } from './helpers.mjs';

const T0 = 1_700_000_000_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hrTimeMs = ([s, ns]) => s * 1000 + ns / 1e6;

function sdk() {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const logExporter = new InMemoryLogRecordExporter();
  const loggerProvider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logExporter })] });
  return {
    meter: meterProvider.getMeter('breakwater'),
    logger: loggerProvider.getLogger('breakwater'),
    logExporter,
    /** The metrics of the last export, by instrument name. */
    async metrics() {
      await reader.forceFlush();
      const scopes = metricExporter.getMetrics().at(-1)?.scopeMetrics ?? [];
      return Object.fromEntries(scopes.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
    },
    async shutdown() {
      await meterProvider.shutdown();
      await loggerProvider.shutdown();
    },
  };
}

/** A streamed answer whose first chunk comes after `ms`. */
const streamed = (ms) =>
  async function* () {
    await sleep(ms);
    yield 'Hello';
    yield ' world';
  };

const drain = async (stream) => {
  let out = '';
  for await (const c of stream) out += c;
  return out;
};

test('an outage and its recovery: the proposal\'s names and values, the events in order, the time to first chunk', async () => {
  const o = sdk();
  const clock = manualClock(T0);
  const b = new CircuitBreaker('anthropic', { failureThreshold: 2, resetTimeout: 10_000, clock });
  const otel = new OpenTelemetryMetrics(o.meter, b, { logger: o.logger });
  const ttfc = otel.timeToFirstChunk({ operation: 'chat', provider: 'anthropic', model: 'claude-sonnet-4-5' });

  // Healthy: one call.
  await b.execute(() => Promise.resolve('ok'));
  // The outage: two failures open it (T0); a streamed call is refused (no first chunk: nothing timed).
  for (let i = 0; i < 2; i++) await assert.rejects(b.execute(() => Promise.reject(httpError(529))));
  assert.equal(b.state, 'OPEN');
  const refused = await ttfc(() => b.stream(streamed(0))).catch((e) => e);
  assert.ok(isCircuitOpenError(refused));
  // A withRetry call through the breaker's name: 2 retries, 0.1 + 0.2 s of backoff.
  let n = 0;
  await withRetry(() => (++n < 3 ? Promise.reject(httpError(503)) : Promise.resolve('ok')), {
    maxAttempts: 3,
    baseDelayMs: 100,
    jitter: 'none',
    metrics: otel.retries('anthropic'),
  });
  // Recovery: 10 s later the probe, a stream whose first chunk takes 80 ms, closes it.
  clock.advance(10_000);
  const stream = await ttfc(() => b.stream(streamed(80)));
  assert.equal(await drain(stream), 'Hello world');
  assert.equal(b.state, 'CLOSED');

  // The events: one per change, in order, with the breaker's name, the state now and before.
  const records = o.logExporter.getFinishedLogRecords();
  assert.deepEqual(
    records.map((r) => [r.eventName, r.attributes, hrTimeMs(r.hrTime), r.severityNumber]),
    [
      ['circuitbreaker.state_change', { 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'open', 'circuitbreaker.previous_state': 'closed' }, T0, 13],
      ['circuitbreaker.state_change', { 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'half_open', 'circuitbreaker.previous_state': 'open' }, T0 + 10_000, 9],
      ['circuitbreaker.state_change', { 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'closed', 'circuitbreaker.previous_state': 'half_open' }, T0 + 10_000, 9],
    ],
  );
  assert.equal(records[0].instrumentationScope.name, 'breakwater');

  const by = await o.metrics();
  assert.deepEqual(Object.keys(by).sort(), [
    'breakwater.calls',
    'breakwater.fallbacks',
    'breakwater.incident',
    'breakwater.opened',
    'breakwater.retries',
    'breakwater.retry_delay',
    'breakwater.state',
    'gen_ai.client.operation.time_to_first_chunk',
  ]);
  const points = (name) => by[name].dataPoints.map((p) => [p.attributes, p.value]);
  // The state: the proposal's attributes, one point per state, 1 for the state it is in.
  assert.deepEqual(points('breakwater.state'), [
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'closed' }, 1],
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'open' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'half_open' }, 0],
  ]);
  assert.deepEqual(points('breakwater.opened'), [[{ 'circuitbreaker.name': 'anthropic' }, 1]]);
  assert.deepEqual(points('breakwater.calls'), [
    [{ 'circuitbreaker.name': 'anthropic', result: 'success' }, 2],
    [{ 'circuitbreaker.name': 'anthropic', result: 'failure' }, 2],
    [{ 'circuitbreaker.name': 'anthropic', result: 'ignored' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', result: 'rejected' }, 1],
    [{ 'circuitbreaker.name': 'anthropic', result: 'throttled' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', result: 'full' }, 0],
  ]);
  assert.deepEqual(points('breakwater.fallbacks'), [[{ 'circuitbreaker.name': 'anthropic' }, 0]]);
  const hist = (name) => {
    const m = by[name];
    assert.equal(m.dataPointType, DataPointType.HISTOGRAM, name);
    assert.equal(m.dataPoints.length, 1, name);
    const [p] = m.dataPoints;
    return { attributes: p.attributes, unit: m.descriptor.unit, count: p.value.count, sum: p.value.sum, boundaries: p.value.buckets.boundaries };
  };
  assert.deepEqual(hist('breakwater.incident'), {
    attributes: { 'circuitbreaker.name': 'anthropic' },
    unit: 's',
    count: 1,
    sum: 10,
    boundaries: [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
  });
  assert.deepEqual(hist('breakwater.retries'), { attributes: { 'retry.name': 'anthropic' }, unit: '{retry}', count: 1, sum: 2, boundaries: [0, 1, 2, 3, 5, 8] });
  assert.deepEqual(hist('breakwater.retry_delay'), {
    attributes: { 'retry.name': 'anthropic' },
    unit: 's',
    count: 1,
    sum: 0.3,
    boundaries: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });

  // The GenAI histogram: the refused call is not in it, the probe is, with the GenAI attributes,
  // the spec's unit and bucket advice, and about the 80 ms the first chunk took.
  const { sum, ...chunk } = hist('gen_ai.client.operation.time_to_first_chunk');
  assert.deepEqual(chunk, {
    attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4-5' },
    unit: 's',
    count: 1,
    boundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  });
  assert.ok(sum >= 0.075 && sum < 2, `time to first chunk ${sum} s`);

  // Nothing named as before the proposal.
  for (const m of Object.values(by)) for (const p of m.dataPoints) assert.ok(!('breaker' in p.attributes) && !('state' in p.attributes), m.descriptor.name);

  // dispose(): no more events.
  otel.dispose();
  b.isolate();
  assert.equal(o.logExporter.getFinishedLogRecords().length, 3);
  await o.shutdown();
});

test('a registry\'s breakers, present and future, each send their events; no logger, no events', async () => {
  const o = sdk();
  const clock = manualClock(T0);
  const registry = new BreakerRegistry({ failureThreshold: 1, resetTimeout: 1_000, clock });
  registry.get('openai');
  const otel = new OpenTelemetryMetrics(o.meter, registry, { logger: o.logger });
  const quiet = new OpenTelemetryMetrics(o.meter, registry);
  const quieter = new OpenTelemetryMetrics(o.meter, registry, {});
  await assert.rejects(registry.get('openai').execute(() => Promise.reject(httpError(500))));
  await assert.rejects(registry.get('gemini').execute(() => Promise.reject(httpError(503))));
  assert.deepEqual(
    o.logExporter.getFinishedLogRecords().map((r) => [r.attributes['circuitbreaker.name'], r.attributes['circuitbreaker.previous_state'], r.attributes['circuitbreaker.state']]),
    [
      ['openai', 'closed', 'open'],
      ['gemini', 'closed', 'open'],
    ],
  );
  const by = await o.metrics();
  const open = by['breakwater.state'].dataPoints.filter((p) => p.attributes['circuitbreaker.state'] === 'open' && p.value === 1);
  assert.deepEqual(open.map((p) => p.attributes['circuitbreaker.name']).sort(), ['gemini', 'openai']);
  otel.dispose();
  quiet.dispose();
  quieter.dispose();
  await o.shutdown();
});

test('the options are checked by name; timeToFirstChunk\'s attributes too', () => {
  const o = sdk();
  const b = new CircuitBreaker('checked');
  assert.throws(() => new OpenTelemetryMetrics(o.meter, b, { loger: o.logger }), {
    name: 'TypeError',
    message: /unknown option "loger" in OpenTelemetryMetrics options \(did you mean "logger"\?\)/,
  });
  assert.throws(() => new OpenTelemetryMetrics(o.meter, b, { logger: {} }), { name: 'TypeError', message: /"logger"/ });
  assert.throws(() => new OpenTelemetryMetrics(o.meter, { logger: o.logger }, b), TypeError);
  const otel = new OpenTelemetryMetrics(o.meter, b, { logger: undefined });
  assert.throws(() => otel.timeToFirstChunk({ operation: 'chat', provider: 'openai', modle: 'gpt-5' }), {
    name: 'TypeError',
    message: /unknown option "modle" in timeToFirstChunk \(did you mean "model"\?\)/,
  });
  assert.throws(() => otel.timeToFirstChunk({ operation: 'chat' }), { name: 'TypeError', message: /"provider"/ });
  assert.throws(() => otel.timeToFirstChunk({ operation: '', provider: 'openai' }), { name: 'TypeError', message: /"operation"/ });
  assert.throws(() => otel.timeToFirstChunk(undefined), TypeError);
  otel.dispose();
});

test('without a model, gen_ai.request.model is left out', async () => {
  const o = sdk();
  const otel = new OpenTelemetryMetrics(o.meter);
  const b = new CircuitBreaker('gemini');
  const ttfc = otel.timeToFirstChunk({ operation: 'generate_content', provider: 'gcp.gemini' });
  await drain(await ttfc(() => b.stream(streamed(10))));
  await drain(await ttfc(() => b.stream(streamed(10))));
  const [p] = (await o.metrics())['gen_ai.client.operation.time_to_first_chunk'].dataPoints;
  assert.deepEqual(p.attributes, { 'gen_ai.operation.name': 'generate_content', 'gen_ai.provider.name': 'gcp.gemini' });
  assert.equal(p.value.count, 2);
  assert.ok(p.value.min >= 0.005 && p.value.max < 2, `${p.value.min}..${p.value.max} s`);
  otel.dispose();
  await o.shutdown();
});
