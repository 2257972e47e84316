// The metrics (breakwater/prometheus, breakwater/otel): exact counts after a scripted scenario
// (manual clock), the Prometheus text accepted by a real parser (parse-prometheus-text-format) and
// by prom-client's registry, the OpenTelemetry path through the SDK's InMemoryMetricExporter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { BreakerRegistry, CircuitBreaker, withRetry } from 'breakwater';
import { PrometheusMetrics } from 'breakwater/prometheus';
import { OpenTelemetryMetrics } from 'breakwater/otel';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import promClient from 'prom-client';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { manualClock, httpError } from './helpers.mjs';

const require = createRequire(import.meta.url);
const T0 = 1_700_000_000_000;

/**
 * One breaker's histogram, through the parser. parse-prometheus-text-format only flattens a
 * histogram whose samples carry no label but `le` (it drops the _sum/_count of labelled ones), so
 * the family's lines for that breaker are taken and its `breaker` label removed first.
 */
function histogramOf(text, family, breaker) {
  const label = `breaker="${breaker}"`;
  const lines = text
    .split('\n')
    .filter((l) => l === `# TYPE ${family} histogram` || (l.startsWith(`${family}_`) && l.includes(label)))
    .map((l) => l.replace(`{${label}}`, '').replace(`${label},`, ''));
  const [f] = parsePrometheusTextFormat(lines.join('\n') + '\n');
  assert.equal(f.type, 'HISTOGRAM');
  const [m] = f.metrics;
  const buckets = Object.fromEntries(Object.entries(m.buckets).map(([k, v]) => [k, Number(v)]));
  return { count: Number(m.count), sum: Number(m.sum), buckets };
}

/**
 * The script, on breaker "anthropic" (2 failures in a row open it, 10 s open):
 *   3 successes; 2 failures (OPEN at T0); 2 rejections served by a fallback, 1 without;
 *   +10 s: the probe fails (OPEN again); +10 s: the probe succeeds (CLOSED at T0 + 20 s).
 * And 4 withRetry calls (jitter none, base 100 ms): 503, 503, ok (2 retries, 300 ms);
 *   ok (0); 400 (0, not retried); 503 ×3 with maxAttempts 3 (2 retries, 300 ms, gives up).
 * Expected: calls success 4, failure 3, ignored 0, rejected 3; fallbacks 2; opened 2;
 *   one incident of 20 s; retries [2, 0, 0, 2]; retry delay [0.3, 0, 0, 0.3] s.
 */
async function scenario(attach) {
  const clock = manualClock(T0);
  const registry = new BreakerRegistry({ failureThreshold: 2, resetTimeout: 10_000, clock });
  const observer = attach(registry);
  const b = registry.get('anthropic');
  const ok = () => Promise.resolve('ok');
  const boom = () => Promise.reject(httpError(503));
  for (let i = 0; i < 3; i++) await b.execute(ok);
  for (let i = 0; i < 2; i++) await assert.rejects(b.execute(boom));
  assert.equal(b.state, 'OPEN');
  assert.equal(await b.execute(ok, { fallback: () => 'fallback' }), 'fallback');
  assert.equal(await b.execute(ok, { fallback: () => 'fallback' }), 'fallback');
  await assert.rejects(b.execute(ok), { name: 'CircuitOpenError' });
  clock.advance(10_000);
  await assert.rejects(b.execute(boom));
  assert.equal(b.state, 'OPEN');
  clock.advance(10_000);
  assert.equal(await b.execute(ok), 'ok');
  assert.equal(b.state, 'CLOSED');

  const opts = { baseDelayMs: 100, jitter: 'none', sleep: async () => {}, clock, metrics: observer };
  let n = 0;
  assert.equal(await withRetry(() => (++n < 3 ? Promise.reject(httpError(503)) : 'ok'), opts), 'ok');
  assert.equal(await withRetry(ok, opts), 'ok');
  await assert.rejects(withRetry(() => Promise.reject(httpError(400)), opts), { status: 400 });
  await assert.rejects(withRetry(boom, { ...opts, maxAttempts: 3 }), { status: 503 });
  return { registry, breaker: b };
}

test('stats count fallbacks; withRetry tells its metrics observer once per call', async () => {
  const seen = [];
  const { breaker } = await scenario(() => ({ observeRetries: (r, d) => seen.push([r, d]) }));
  assert.deepEqual(breaker.stats, {
    admitted: 7,
    rejected: 3,
    successes: 4,
    failures: 3,
    ignored: 0,
    stale: 0,
    slow: 0,
    opened: 2,
    throttled: 0,
    full: 0,
    fallbacks: 2,
  });
  assert.deepEqual(seen, [[2, 300], [0, 0], [0, 0], [2, 300]]);
  // Also when the signal aborts mid-wait: the retries made so far.
  const ac = new AbortController();
  const calls = [];
  const p = withRetry(() => Promise.reject(httpError(503)), {
    baseDelayMs: 50,
    jitter: 'none',
    signal: ac.signal,
    sleep: (ms) => (calls.length === 1 ? (ac.abort(new Error('stop')), new Promise(() => {})) : (calls.push(ms), Promise.resolve())),
    metrics: { observeRetries: (r, d) => calls.push(['observed', r, d]) },
  });
  await assert.rejects(p, /stop/);
  assert.deepEqual(calls, [50, ['observed', 1, 50]]);
  await assert.rejects(withRetry(() => 1, { metrics: {} }), /invalid option "metrics"/);
});

test('Prometheus text: exact series after the scenario, accepted by parse-prometheus-text-format', async () => {
  let prom;
  await scenario((registry) => {
    prom = new PrometheusMetrics(registry);
    return prom.retries('anthropic');
  });
  const text = prom.text();
  const families = Object.fromEntries(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
  assert.deepEqual(Object.keys(families), [
    'breakwater_state',
    'breakwater_opened_total',
    'breakwater_incident_seconds',
    'breakwater_calls_total',
    'breakwater_fallbacks_total',
    'breakwater_retries',
    'breakwater_retry_delay_seconds',
  ]);
  const values = (name) => families[name].metrics.map((m) => [m.labels, Number(m.value)]);
  assert.equal(families.breakwater_state.type, 'GAUGE');
  assert.deepEqual(values('breakwater_state'), [
    [{ breaker: 'anthropic', state: 'closed' }, 1],
    [{ breaker: 'anthropic', state: 'open' }, 0],
    [{ breaker: 'anthropic', state: 'half_open' }, 0],
  ]);
  assert.equal(families.breakwater_opened_total.type, 'COUNTER');
  assert.deepEqual(values('breakwater_opened_total'), [[{ breaker: 'anthropic' }, 2]]);
  assert.deepEqual(values('breakwater_calls_total'), [
    [{ breaker: 'anthropic', result: 'success' }, 4],
    [{ breaker: 'anthropic', result: 'failure' }, 3],
    [{ breaker: 'anthropic', result: 'ignored' }, 0],
    [{ breaker: 'anthropic', result: 'rejected' }, 3],
    [{ breaker: 'anthropic', result: 'throttled' }, 0],
    [{ breaker: 'anthropic', result: 'full' }, 0],
  ]);
  assert.deepEqual(values('breakwater_fallbacks_total'), [[{ breaker: 'anthropic' }, 2]]);
  for (const name of ['breakwater_incident_seconds', 'breakwater_retries', 'breakwater_retry_delay_seconds']) {
    assert.equal(families[name].type, 'HISTOGRAM');
  }
  const hist = (name) => histogramOf(text, name, 'anthropic');
  assert.deepEqual(hist('breakwater_incident_seconds'), {
    count: 1,
    sum: 20,
    buckets: { 1: 0, 5: 0, 10: 0, 30: 1, 60: 1, 120: 1, 300: 1, 600: 1, 1800: 1, 3600: 1, '+Inf': 1 },
  });
  assert.deepEqual(hist('breakwater_retries'), {
    count: 4,
    sum: 4,
    buckets: { 0: 2, 1: 2, 2: 4, 3: 4, 5: 4, 8: 4, '+Inf': 4 },
  });
  assert.deepEqual(hist('breakwater_retry_delay_seconds'), {
    count: 4,
    sum: 0.6,
    buckets: { 0.1: 2, 0.25: 2, 0.5: 4, 1: 4, 2.5: 4, 5: 4, 10: 4, 30: 4, 60: 4, '+Inf': 4 },
  });
  assert.match(prom.contentType, /^text\/plain; version=0\.0\.4/);
  // Fallback share, as the README's alert computes it: 2 of 10 calls.
  const calls = values('breakwater_calls_total').reduce((s, [, v]) => s + v, 0);
  assert.equal(values('breakwater_fallbacks_total')[0][1] / calls, 0.2);
});

test('Prometheus text: several breakers, retry names without a breaker, escaped labels, dispose', async () => {
  const clock = manualClock(T0);
  const a = new CircuitBreaker('a', { clock });
  const odd = new CircuitBreaker('we"ird\\name\nx', { clock });
  const prom = new PrometheusMetrics(a, odd, a);
  await withRetry(() => 'ok', { metrics: prom.retries('batch-jobs') });
  const parsed = parsePrometheusTextFormat(prom.text());
  const state = parsed.find((f) => f.name === 'breakwater_state');
  assert.deepEqual([...new Set(state.metrics.map((m) => m.labels.breaker))], ['a', 'we"ird\\name\nx']);
  const text = prom.text();
  assert.deepEqual(histogramOf(text, 'breakwater_retries', 'a').count, 0);
  assert.deepEqual(histogramOf(text, 'breakwater_retries', 'batch-jobs'), {
    count: 1,
    sum: 0,
    buckets: { 0: 1, 1: 1, 2: 1, 3: 1, 5: 1, 8: 1, '+Inf': 1 },
  });
  assert.ok(text.includes('breakwater_retries_count{breaker="we\\"ird\\\\name\\nx"} 0\n'), text);
  assert.throws(() => prom.add({}), TypeError);
  assert.throws(() => prom.retries(''), TypeError);
  // After dispose, state changes are no longer followed.
  prom.dispose();
  a.isolate();
  a.reset();
  const incidents = parsePrometheusTextFormat(prom.text()).find((f) => f.name === 'breakwater_incident_seconds');
  assert.equal(incidents, undefined); // no source left, nothing observed
});

test('prom-client: register() exposes the same series through a prom-client Registry', async () => {
  let prom;
  await scenario((registry) => {
    prom = new PrometheusMetrics(registry);
    return prom.retries('anthropic');
  });
  const reg = new promClient.Registry();
  new promClient.Counter({ name: 'app_requests_total', help: 'the app', registers: [reg] }).inc(5);
  prom.register(reg);
  const text = await reg.metrics();
  // prom-client writes the HELP and TYPE of a family with no series (the hedge families, while no
  // hedge() is watched); text() leaves such a family out. Both are valid exposition.
  const fromClient = parsePrometheusTextFormat(text).filter((f) => f.name.startsWith('breakwater_') && f.metrics.length > 0);
  const ours = parsePrometheusTextFormat(prom.text());
  assert.deepEqual(fromClient, ours);
  assert.ok(text.includes('app_requests_total 5'));
  // A policy watched after register() is read at the next scrape.
  const { hedge } = await import('breakwater/adaptive');
  prom.hedges('assistant', hedge());
  const later = await reg.metrics();
  assert.ok(later.includes('breakwater_hedges_total{chain="assistant",result="started"} 0'), later);
  assert.deepEqual(
    parsePrometheusTextFormat(later).filter((f) => f.name.startsWith('breakwater_')),
    parsePrometheusTextFormat(prom.text()),
  );
  const json = await reg.getMetricsAsJSON();
  assert.equal(json.find((m) => m.name === 'breakwater_fallbacks_total').values[0].value, 2);
  assert.throws(() => prom.register({}), TypeError);
});

test('OpenTelemetry: the SDK in-memory exporter receives the same counts', async () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  let otel;
  await scenario((registry) => {
    otel = new OpenTelemetryMetrics(provider.getMeter('breakwater'), registry);
    return otel.retries('anthropic');
  });
  await reader.forceFlush();
  const metrics = exporter.getMetrics().at(-1).scopeMetrics[0].metrics;
  const by = Object.fromEntries(metrics.map((m) => [m.descriptor.name, m]));
  const points = (name) => by[name].dataPoints.map((p) => [p.attributes, p.value]);
  assert.deepEqual(points('breakwater.state'), [
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'closed' }, 1],
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'open' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', 'circuitbreaker.state': 'half_open' }, 0],
  ]);
  assert.deepEqual(points('breakwater.opened'), [[{ 'circuitbreaker.name': 'anthropic' }, 2]]);
  assert.deepEqual(points('breakwater.calls'), [
    [{ 'circuitbreaker.name': 'anthropic', result: 'success' }, 4],
    [{ 'circuitbreaker.name': 'anthropic', result: 'failure' }, 3],
    [{ 'circuitbreaker.name': 'anthropic', result: 'ignored' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', result: 'rejected' }, 3],
    [{ 'circuitbreaker.name': 'anthropic', result: 'throttled' }, 0],
    [{ 'circuitbreaker.name': 'anthropic', result: 'full' }, 0],
  ]);
  assert.deepEqual(points('breakwater.fallbacks'), [[{ 'circuitbreaker.name': 'anthropic' }, 2]]);
  const hist = (name) => {
    const m = by[name];
    assert.equal(m.dataPointType, DataPointType.HISTOGRAM);
    const [p] = m.dataPoints;
    return { attributes: p.attributes, unit: m.descriptor.unit, count: p.value.count, sum: p.value.sum, boundaries: p.value.buckets.boundaries, counts: p.value.buckets.counts };
  };
  assert.deepEqual(hist('breakwater.incident'), {
    attributes: { 'circuitbreaker.name': 'anthropic' },
    unit: 's',
    count: 1,
    sum: 20,
    boundaries: [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
    counts: [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
  });
  assert.deepEqual(hist('breakwater.retries'), {
    attributes: { 'retry.name': 'anthropic' },
    unit: '{retry}',
    count: 4,
    sum: 4,
    boundaries: [0, 1, 2, 3, 5, 8],
    counts: [2, 0, 2, 0, 0, 0, 0],
  });
  assert.deepEqual(hist('breakwater.retry_delay'), {
    attributes: { 'retry.name': 'anthropic' },
    unit: 's',
    count: 4,
    sum: 0.6,
    boundaries: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    counts: [2, 0, 2, 0, 0, 0, 0, 0, 0, 0],
  });
  otel.dispose();
  await provider.shutdown();
});

test('the adapters load neither the wasm nor @opentelemetry/api', () => {
  const root = path.dirname(require.resolve('breakwater/package.json'));
  for (const f of ['prometheus.mjs', 'prometheus.cjs', 'otel.mjs', 'otel.cjs']) {
    const src = fs.readFileSync(path.join(root, 'dist', f), 'utf8');
    assert.doesNotMatch(src, /\bimport\b[^;]*from|require\(|\.wasm|WebAssembly|never initialised/, f);
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.deepEqual(pkg.peerDependenciesMeta['@opentelemetry/api'], { optional: true });
  for (const f of ['api.mjs', 'api.cjs']) {
    assert.doesNotMatch(fs.readFileSync(path.join(root, 'dist', f), 'utf8'), /opentelemetry|breakwater_incident/, f);
  }
  // CommonJS too.
  assert.equal(typeof require('breakwater/prometheus').PrometheusMetrics, 'function');
  assert.equal(typeof require('breakwater/otel').OpenTelemetryMetrics, 'function');
});

test('hedges: breakwater_hedges_total and the extra input, in Prometheus (parsed) and OpenTelemetry (in-memory exporter)', async () => {
  const { FallbackChain } = await import('breakwater');
  const { hedge } = await import('breakwater/adaptive');
  const policy = hedge({ afterMs: 20, budget: 1 });
  let primaryMs = 200;
  const sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)));
    });
  const chain = new FallbackChain(
    [
      { breaker: new CircuitBreaker('h-primary'), call: ({ signal }) => sleep(primaryMs, signal).then(() => 'primary') },
      { breaker: new CircuitBreaker('h-backup'), call: ({ signal }) => sleep(60, signal).then(() => 'backup') },
    ],
    { hedge: policy },
  );
  // Two hedges won (the primary takes 200 ms), one lost (it takes 40), one call not hedged.
  await chain.execute({ inputTokens: 500 });
  await chain.execute({ inputTokens: 500 });
  primaryMs = 40;
  await chain.execute({ inputTokens: 300 });
  primaryMs = 5;
  await chain.execute({ inputTokens: 300 });
  const prom = new PrometheusMetrics().hedges('assistant', policy);
  const families = Object.fromEntries(parsePrometheusTextFormat(prom.text()).map((f) => [f.name, f]));
  const hedges = Object.fromEntries(families.breakwater_hedges_total.metrics.map((m) => [m.labels.result, Number(m.value)]));
  assert.deepEqual(hedges, { started: 3, won: 2, lost: 1, refused: 0, held: 0 });
  assert.equal(families.breakwater_hedges_total.metrics[0].labels.chain, 'assistant');
  assert.equal(Number(families.breakwater_hedge_extra_input_tokens_total.metrics[0].value), 1300);
  assert.throws(() => prom.hedges('x', { afterMs: 10 }), /hedge\(\) from 'breakwater\/adaptive'/);

  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const otel = new OpenTelemetryMetrics(provider.getMeter('breakwater')).hedges('assistant', policy);
  await reader.forceFlush();
  const metrics = exporter.getMetrics().at(-1).scopeMetrics[0].metrics;
  const by = Object.fromEntries(metrics.map((m) => [m.descriptor.name, m]));
  assert.deepEqual(
    by['breakwater.hedges'].dataPoints.map((p) => [p.attributes.result, p.value]),
    [['started', 3], ['won', 2], ['lost', 1], ['refused', 0], ['held', 0]],
  );
  assert.deepEqual(by['breakwater.hedge.extra_input'].dataPoints.map((p) => [p.attributes, p.value]), [[{ chain: 'assistant' }, 1300]]);
  assert.equal(by['breakwater.hedge.extra_input'].descriptor.unit, '{token}');
  otel.dispose();
  await provider.shutdown();
});
