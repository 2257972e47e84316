// mitata, one run: what a breaker costs per call.
//   1. execute(async fn): breakwater vs cockatiel (ConsecutiveBreaker) vs opossum vs a bare await.
//      Goal: breakwater's overhead over the bare await <= 0.5 x cockatiel's.
//   2. The synchronous decision pair (isHealthy() + recordSuccess()) through wasm vs a minimal
//      pure-JS breaker (seed 000's shape). Goal: <= 2 x.
//   3. What the metrics hooks cost with no exporter attached: execute() and withRetry() of
//      this build, with a PrometheusMetrics collector watching and without; with
//      BREAKWATER_BASELINE=<a pkg/ directory built before the metrics>, the same calls on that
//      build too. Goal: not measurable.
//   4. breaker.stream: the added latency per streamed chunk against reading the bare stream.
import { run, bench, group, summary, do_not_optimize } from 'mitata';
import { CircuitBreaker, withRetry } from 'breakwater';
import { PrometheusMetrics } from 'breakwater/prometheus';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { circuitBreaker, handleAll, ConsecutiveBreaker } from 'cockatiel';
import Opossum from 'opossum';

const work = async () => 42;

const breakwater = new CircuitBreaker('bench', { failureThreshold: 5, resetTimeout: 30_000 });
const cockatiel = circuitBreaker(handleAll, { halfOpenAfter: 30_000, breaker: new ConsecutiveBreaker(5) });
// opossum with its per-call timer off (breakwater and cockatiel set none by default either).
const opossum = new Opossum(work, { timeout: false, resetTimeout: 30_000 });

/** Seed 000's breaker reduced to the decision: the pure-JS baseline. */
class MinimalBreaker {
  state = 'CLOSED';
  failures = 0;
  openedAt = 0;
  isHealthy() {
    if (this.state === 'OPEN' && Date.now() - this.openedAt >= 30_000) this.state = 'HALF_OPEN';
    return this.state !== 'OPEN';
  }
  recordSuccess() {
    this.failures = 0;
    if (this.state === 'HALF_OPEN') this.state = 'CLOSED';
  }
  recordFailure() {
    if (++this.failures >= 2 ** 32 - 1 || this.state === 'HALF_OPEN') {
      this.state = 'OPEN';
      this.openedAt = Date.now();
    }
  }
}
const minimal = new MinimalBreaker();
const decider = new CircuitBreaker('decide', { failureThreshold: 5, resetTimeout: 30_000 });
// Never opens (a huge threshold), so every failure is counted by the core.
const failing = new CircuitBreaker('failing', { failureThreshold: 2 ** 32 - 1, resetTimeout: 30_000 });

group('execute(async fn)', () => {
  summary(() => {
    bench('bare await', async () => do_not_optimize(await work()));
    bench('breakwater', async () => do_not_optimize(await breakwater.execute(work)));
    bench('cockatiel ConsecutiveBreaker', async () => do_not_optimize(await cockatiel.execute(work)));
    bench('opossum', async () => do_not_optimize(await opossum.fire()));
  });
});

group('sync decision pair: isHealthy() + recordSuccess()', () => {
  summary(() => {
    bench('pure JS (minimal)', () => {
      const ok = minimal.isHealthy();
      if (ok) minimal.recordSuccess();
      do_not_optimize(ok);
    });
    bench('breakwater (wasm)', () => {
      const ok = decider.isHealthy();
      if (ok) decider.recordSuccess();
      do_not_optimize(ok);
    });
    // The same pair where it must cross into wasm each time: a half-open probe slot taken and
    // settled, against the pure-JS breaker's half-open path.
    bench('pure JS (minimal), failure path', () => {
      const ok = minimal.isHealthy();
      if (ok) minimal.recordFailure();
      do_not_optimize(ok);
    });
    bench('breakwater (wasm), failure path', () => {
      const ok = failing.isHealthy();
      if (ok) failing.recordFailure();
      do_not_optimize(ok);
    });
  });
});

// 3. Metrics. The baseline build, if given, is loaded from its own directory (its own wasm).
const baseline = process.env.BREAKWATER_BASELINE
  ? await import(pathToFileURL(path.resolve(process.env.BREAKWATER_BASELINE, 'dist/node.mjs')).href)
  : undefined;
const plain = new CircuitBreaker('plain', { failureThreshold: 5, resetTimeout: 30_000 });
const watched = new CircuitBreaker('watched', { failureThreshold: 5, resetTimeout: 30_000 });
const prom = new PrometheusMetrics(watched);
const observer = prom.retries('watched');
const old = baseline && new baseline.CircuitBreaker('old', { failureThreshold: 5, resetTimeout: 30_000 });
group('metrics, no exporter attached', () => {
  summary(() => {
    if (old) bench('execute: baseline build (no metrics code)', async () => do_not_optimize(await old.execute(work)));
    bench('execute: this build', async () => do_not_optimize(await plain.execute(work)));
    bench('execute: this build, PrometheusMetrics watching', async () => do_not_optimize(await watched.execute(work)));
  });
});
group('withRetry, first attempt succeeds', () => {
  summary(() => {
    if (baseline) bench('withRetry: baseline build', async () => do_not_optimize(await baseline.withRetry(work)));
    bench('withRetry: this build', async () => do_not_optimize(await withRetry(work)));
    bench('withRetry: this build, metrics observer', async () => do_not_optimize(await withRetry(work, { metrics: observer })));
  });
});

// 4. Streams: what breaker.stream adds per chunk, reading a whole answer of CHUNKS chunks, against
//    reading the same stream bare. Object chunks (the AI SDK's parts), and an Anthropic-shaped
//    event stream as bytes (the guard reads every event for error events).
const CHUNKS = 200;
const streamer = new CircuitBreaker('stream', { failureThreshold: 5, resetTimeout: 30_000 });
const partsStream = () =>
  new ReadableStream({
    start(c) {
      for (let i = 0; i < CHUNKS; i++) c.enqueue({ type: 'text-delta', text: 'token ' });
      c.close();
    },
  });
const event = new TextEncoder().encode(
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token "}}\n\n',
);
const sseResponse = () =>
  new Response(
    new ReadableStream({
      start(c) {
        for (let i = 0; i < CHUNKS; i++) c.enqueue(event);
        c.close();
      },
    }),
    { headers: { 'content-type': 'text/event-stream' } },
  );
const drain = async (stream) => {
  const reader = stream.getReader();
  let n = 0;
  while (!(await reader.read()).done) n++;
  return n;
};
/** The floor: the least a guard can do, one ReadableStream re-emitting another's chunks. */
const wrap = (stream) => {
  const reader = stream.getReader();
  return new ReadableStream(
    {
      async pull(c) {
        const r = await reader.read();
        if (r.done) c.close();
        else c.enqueue(r.value);
      },
    },
    { highWaterMark: 0 },
  );
};
group(`a streamed answer of ${CHUNKS} chunks`, () => {
  summary(() => {
    bench('stream: bare (object chunks)', async () => do_not_optimize(await drain(partsStream())));
    bench('stream: minimal pull wrapper (object chunks)', async () => do_not_optimize(await drain(wrap(partsStream()))));
    bench('stream: breaker.stream (object chunks)', async () => do_not_optimize(await drain(await streamer.stream(partsStream))));
    bench('stream: bare (SSE bytes)', async () => do_not_optimize(await drain(sseResponse().body)));
    bench('stream: breaker.stream (SSE bytes)', async () => do_not_optimize(await drain(await streamer.stream(sseResponse))));
  });
});

const { benchmarks } = await run();
// Medians: this machine is shared, and a mean of a few outliers swamps a difference of 100 ns.
const avg = Object.fromEntries(benchmarks.map((b) => [b.alias ?? b.runs[0].name, b.runs[0].stats.p50]));
const overhead = (name) => avg[name] - avg['bare await'];
const fmt = (ns) => `${ns.toFixed(1)} ns`;
console.log('\n--- ratios (medians) ---');
console.log(`overhead over a bare await: breakwater ${fmt(overhead('breakwater'))}, cockatiel ${fmt(overhead('cockatiel ConsecutiveBreaker'))}, opossum ${fmt(overhead('opossum'))}`);
const r1 = overhead('breakwater') / overhead('cockatiel ConsecutiveBreaker');
const r2 = avg['breakwater (wasm)'] / avg['pure JS (minimal)'];
console.log(`breakwater overhead / cockatiel overhead = ${r1.toFixed(2)} (goal <= 0.5)`);
console.log(`breakwater overhead / opossum overhead = ${(overhead('breakwater') / overhead('opossum')).toFixed(2)}`);
console.log(`sync pair: wasm / pure JS = ${r2.toFixed(2)} (goal <= 2)`);
const r3 = avg['breakwater (wasm), failure path'] / avg['pure JS (minimal), failure path'];
console.log(`sync pair, failure path (crosses into wasm): wasm / pure JS = ${r3.toFixed(2)}`);
const m = (name) => (avg[name] === undefined ? 'n/a' : fmt(avg[name]));
console.log('\n--- metrics (medians) ---');
console.log(`execute: baseline ${m('execute: baseline build (no metrics code)')}, this build ${m('execute: this build')}, watched ${m('execute: this build, PrometheusMetrics watching')}`);
console.log(`withRetry: baseline ${m('withRetry: baseline build')}, this build ${m('withRetry: this build')}, with observer ${m('withRetry: this build, metrics observer')}`);
const perChunk = (kind) => (avg[`stream: breaker.stream (${kind})`] - avg[`stream: bare (${kind})`]) / CHUNKS;
console.log('\n--- streams (medians) ---');
console.log(
  `floor: a minimal pull wrapper adds ${fmt((avg['stream: minimal pull wrapper (object chunks)'] - avg['stream: bare (object chunks)']) / CHUNKS)} per chunk`,
);
for (const kind of ['object chunks', 'SSE bytes']) {
  console.log(
    `${kind}: bare ${fmt(avg[`stream: bare (${kind})`] / CHUNKS)} per chunk, breaker.stream adds ${fmt(perChunk(kind))} per chunk ` +
      `(${(avg[`stream: breaker.stream (${kind})`] / avg[`stream: bare (${kind})`]).toFixed(2)}x the bare read)`,
  );
}
