// mitata, one run: what a breaker costs per call, on the healthy-upstream path (every call
// succeeds, nothing is slow, no breaker opens: checked at the end, exit code 1 if one did).
//   1. execute(async fn), one group per trip rule: breakwater vs cockatiel's equivalent breaker vs
//      opossum (timeout: false) vs the floor (a minimal hand-written async guard around a minimal
//      pure-JS breaker) vs a bare await. Goals, on the overhead over the bare await:
//      breakwater <= 0.5 x cockatiel, <= 0.15 x opossum; aim <= 1.2 x the floor.
//   2. The synchronous decision pair (isHealthy() + recordSuccess()) through wasm vs a minimal
//      pure-JS breaker (seed 000's shape). Goal: <= 2 x.
//   3. What the metrics hooks cost with no exporter attached: execute() and withRetry() of
//      this build, with a PrometheusMetrics collector watching and without; with
//      BREAKWATER_BASELINE=<a pkg/ directory built before the metrics>, the same calls on that
//      build too. Goal: not measurable.
//   4. breaker.stream: the added latency per streamed chunk against reading the bare stream.
//   5. FallbackChain with `hedge` on a healthy primary (it answers before any hedge), against the
//      same chain without: on an instant call, and on a 1 ms one. Goal: within noise of without.
// Environment:
//   BENCH_ONLY=execute,sync,metrics,stream,options,hedge   run only these groups (default: all)
//   BENCH_JSON=FILE   append this run's ratio results to FILE as one JSON line (see report.mjs)
import { run, bench, group, summary, do_not_optimize } from 'mitata';
import { CircuitBreaker, FallbackChain, withRetry } from 'breakwater';
import { hedge, limit, throttle } from 'breakwater/adaptive';
import { PrometheusMetrics } from 'breakwater/prometheus';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { circuitBreaker, bulkhead, handleAll, CircuitState, ConsecutiveBreaker, SamplingBreaker, CountBreaker } from 'cockatiel';
import Opossum from 'opossum';
import { printTable } from './report.mjs';
import { anthropic } from '../../js/src/cli/formats.mjs';

const GROUPS = ['execute', 'sync', 'metrics', 'stream', 'options', 'hedge'];
const only = process.env.BENCH_ONLY
  ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim()).filter(Boolean))
  : new Set(GROUPS);
for (const g of only) {
  if (!GROUPS.includes(g)) {
    console.error(`bench.mjs: unknown group "${g}" in BENCH_ONLY (known: ${GROUPS.join(', ')})`);
    process.exit(2);
  }
}

const work = async () => 42;

// Every breaker built here is checked after the run: still CLOSED, never opened, nothing rejected
// (and, on the healthy path, no failure and no slow call). A benchmark that silently measured the
// OPEN path would be wrong.
const checks = [];
const problems = (label, list) => (list.length ? `${label}: ${list.join(', ')}` : undefined);
/** A breakwater breaker; `healthy`: every call it sees succeeds. */
function watchBreakwater(label, b, healthy = true) {
  checks.push(() => {
    const s = b.stats;
    const p = [];
    if (b.state !== 'CLOSED') p.push(`state ${b.state}`);
    if (s.opened) p.push(`opened ${s.opened} times`);
    if (s.rejected) p.push(`${s.rejected} calls rejected`);
    if (healthy && s.failures) p.push(`${s.failures} failures`);
    if (s.slow) p.push(`${s.slow} slow calls`);
    if (s.admitted === 0) p.push('never called');
    return problems(`breakwater ${label}`, p);
  });
  return b;
}
// Not onFailure/onSuccess: with a listener there cockatiel times every call (performance.now()
// twice), which would inflate its cost. onBreak is emitted only when it opens.
function watchCockatiel(label, policy) {
  let breaks = 0;
  policy.onBreak(() => breaks++);
  checks.push(() => {
    const p = [];
    if (policy.state !== CircuitState.Closed) p.push(`state ${CircuitState[policy.state]}`);
    if (breaks) p.push(`opened ${breaks} times`);
    return problems(`cockatiel ${label}`, p);
  });
  return policy;
}
// Listeners on 'open', 'failure' and 'reject' change nothing on the success path (opossum emits
// 'fire' and 'success' per call whatever is listening).
function watchOpossum(label, o) {
  let opens = 0;
  let failures = 0;
  let rejects = 0;
  o.on('open', () => opens++);
  o.on('failure', () => failures++);
  o.on('reject', () => rejects++);
  checks.push(() => {
    const p = [];
    if (!o.closed) p.push(o.opened ? 'state OPEN' : 'state HALF_OPEN');
    if (opens) p.push(`opened ${opens} times`);
    if (failures) p.push(`${failures} failures`);
    if (rejects) p.push(`${rejects} calls rejected`);
    return problems(`opossum ${label}`, p);
  });
  return o;
}
function watchMinimal(label, b) {
  checks.push(() => problems(`minimal ${label}`, [...(b.state !== 'CLOSED' ? [`state ${b.state}`] : []), ...(b.opened ? [`opened ${b.opened} times`] : [])]));
  return b;
}

/** Seed 000's breaker reduced to the decision: the pure-JS baseline. */
class MinimalBreaker {
  state = 'CLOSED';
  failures = 0;
  openedAt = 0;
  opened = 0;
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
      this.opened++;
    }
  }
}

/** The floor: the least an async guard can do around the minimal breaker. */
const minimalGuard = (b) => async (fn) => {
  if (!b.isHealthy()) throw new Error('minimal breaker: open');
  try {
    const v = await fn();
    b.recordSuccess();
    return v;
  } catch (e) {
    b.recordFailure();
    throw e;
  }
};

// 1. execute(async fn), per trip rule. opossum: its per-call timer off (breakwater and cockatiel
//    set none by default either); it has no consecutive rule, so the consecutive and window rules
//    face its defaults (50 % over a 10 s rolling window of 10 buckets, volumeThreshold 0), the
//    rate rules its rolling window set like breakwater's. It has no count-based window and no
//    slow-call rule (its `timeout` fails a slow call, which is not the same thing), so those rules
//    face the same rolling window.
const OPOSSUM_DEFAULTS = { timeout: false, resetTimeout: 30_000 };
const OPOSSUM_ROLLING = { ...OPOSSUM_DEFAULTS, errorThresholdPercentage: 50, rollingCountTimeout: 10_000, volumeThreshold: 20 };
// cockatiel's closest equivalents. SamplingBreaker({threshold: 0.5, duration: 10_000,
// minimumRps: 2}) for the 10 s rate windows: it keeps max(5, ceil(10 s / 1 s)) = 10 buckets of
// 1 s, like breakwater's 10 buckets, and needs duration × minimumRps = 10 s × 2/s = 20 calls in
// the window before the rate counts: breakwater's minimumCalls 20. Not exact: cockatiel opens
// when failures > 50 % (breakwater: >= 50 %), and it has no slow-call notion at all, so for the
// slow-call rule it is the same failure-rate window (the same bookkeeping per call; breakwater
// also reads the clock at both ends of the call there). CountBreaker({threshold: 0.5, size: 100,
// minimumNumberOfCalls: 20}) for the count-based window (again > vs >=).
const RULES = [
  {
    key: 'consecutive',
    rule: 'consecutive `{failureThreshold: 5}`',
    breakwater: { failureThreshold: 5 },
    cockatiel: 'ConsecutiveBreaker(5)',
    cockatielBreaker: () => new ConsecutiveBreaker(5),
    opossum: OPOSSUM_DEFAULTS,
  },
  {
    key: 'window',
    rule: 'window `{failureThreshold: 5, monitoringWindow: 60_000}`',
    breakwater: { failureThreshold: 5, monitoringWindow: 60_000 },
    cockatiel: 'ConsecutiveBreaker(5)',
    cockatielBreaker: () => new ConsecutiveBreaker(5),
    opossum: OPOSSUM_DEFAULTS,
  },
  {
    key: 'failure rate',
    rule: 'failure rate `{threshold: 50, minimumCalls: 20, windowMs: 10_000}`',
    breakwater: { failureRate: { threshold: 50, minimumCalls: 20, windowMs: 10_000 } },
    cockatiel: 'SamplingBreaker(0.5, 10 s, 2 rps)',
    cockatielBreaker: () => new SamplingBreaker({ threshold: 0.5, duration: 10_000, minimumRps: 2 }),
    opossum: OPOSSUM_ROLLING,
  },
  {
    key: 'failure rate (calls)',
    rule: 'failure rate, count window `{threshold: 50, minimumCalls: 20, windowCalls: 100}`',
    breakwater: { failureRate: { threshold: 50, minimumCalls: 20, windowCalls: 100 } },
    cockatiel: 'CountBreaker(0.5, 100, 20)',
    cockatielBreaker: () => new CountBreaker({ threshold: 0.5, size: 100, minimumNumberOfCalls: 20 }),
    opossum: OPOSSUM_ROLLING,
  },
  {
    key: 'slow-call rate',
    rule: 'slow-call rate `{threshold: 50, slowCallMs: 1000, minimumCalls: 20, windowMs: 10_000}`',
    breakwater: { slowCallRate: { threshold: 50, slowCallMs: 1000, minimumCalls: 20, windowMs: 10_000 } },
    cockatiel: 'SamplingBreaker(0.5, 10 s, 2 rps)',
    cockatielBreaker: () => new SamplingBreaker({ threshold: 0.5, duration: 10_000, minimumRps: 2 }),
    opossum: OPOSSUM_ROLLING,
  },
];
const name = (r, who) => `${r.key}: ${who}`;
// Each sample of an async row is CALLS calls in a row, each awaited: one awaited call is too
// short for mitata's timer, whose per-sample noise (p50s of the same code 2x apart from group to
// group) swamped differences of 50 ns. The numbers reported are per call (p50 / CALLS), the same
// for every row.
const CALLS = 32;
const calls = (f) => async () => {
  for (let i = 0; i < CALLS; i++) do_not_optimize(await f());
};
if (only.has('execute')) {
  for (const r of RULES) {
    const bw = watchBreakwater(r.key, new CircuitBreaker(`bench ${r.key}`, { ...r.breakwater, resetTimeout: 30_000 }));
    const ck = watchCockatiel(r.key, circuitBreaker(handleAll, { halfOpenAfter: 30_000, breaker: r.cockatielBreaker() }));
    const op = watchOpossum(r.key, new Opossum(work, r.opossum));
    const floor = minimalGuard(watchMinimal(`floor (${r.key})`, new MinimalBreaker()));
    group(`execute(async fn), ${r.rule.replaceAll('`', '')}`, () => {
      summary(() => {
        bench(name(r, 'bare await'), calls(work));
        bench(name(r, 'floor (minimal guard)'), calls(() => floor(work)));
        bench(name(r, 'breakwater'), calls(() => bw.execute(work)));
        bench(name(r, `cockatiel ${r.cockatiel}`), calls(() => ck.execute(work)));
        bench(name(r, 'opossum'), calls(() => op.fire()));
      });
    });
  }
}

// 2. The synchronous pair.
if (only.has('sync')) {
  const minimal = watchMinimal('sync pair', new MinimalBreaker());
  const decider = watchBreakwater('decide', new CircuitBreaker('decide', { failureThreshold: 5, resetTimeout: 30_000 }));
  // Never opens (a huge threshold), so every failure is counted by the core.
  const failing = watchBreakwater('failing', new CircuitBreaker('failing', { failureThreshold: 2 ** 32 - 1, resetTimeout: 30_000 }), false);
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
      // The same pair where it must cross into wasm each time: a failure counted by the core (the
      // breaker never opens), against the pure-JS breaker's failure count.
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
}

// 3. Metrics. The baseline build, if given, is loaded from its own directory (its own wasm).
if (only.has('metrics')) {
  const baseline = process.env.BREAKWATER_BASELINE
    ? await import(pathToFileURL(path.resolve(process.env.BREAKWATER_BASELINE, 'dist/node.mjs')).href)
    : undefined;
  const plain = watchBreakwater('plain', new CircuitBreaker('plain', { failureThreshold: 5, resetTimeout: 30_000 }));
  const watched = watchBreakwater('watched', new CircuitBreaker('watched', { failureThreshold: 5, resetTimeout: 30_000 }));
  const prom = new PrometheusMetrics(watched);
  const observer = prom.retries('watched');
  const old = baseline && watchBreakwater('baseline', new baseline.CircuitBreaker('old', { failureThreshold: 5, resetTimeout: 30_000 }));
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
}

// 5. What each option of issue "adaptive throttling and a concurrency limit" adds to execute,
// against the same trip rule without it (goal: within 20 ns), and cockatiel's bulkhead, the peer
// of maxConcurrent, beside it. The upstream is healthy: nothing is shed, nothing waits.
if (only.has('options')) {
  const rule = { failureThreshold: 5, resetTimeout: 30_000 };
  const plain = new CircuitBreaker('plain', rule);
  const throttled = new CircuitBreaker('throttled', { ...rule, adaptiveThrottle: throttle() });
  const limited = new CircuitBreaker('limited', { ...rule, concurrency: limit({ maxConcurrent: 100 }) });
  const queued = new CircuitBreaker('queued', { ...rule, concurrency: limit({ maxConcurrent: 100, maxQueued: 100 }) });
  const ckBulkhead = bulkhead(100);
  group('execute with each option (healthy upstream)', () => {
    summary(() => {
      bench('execute: consecutive rule', async () => do_not_optimize(await plain.execute(work)));
      bench('execute: + adaptiveThrottle', async () => do_not_optimize(await throttled.execute(work)));
      bench('execute: + maxConcurrent 100', async () => do_not_optimize(await limited.execute(work)));
      bench('execute: + maxConcurrent 100, maxQueued 100', async () => do_not_optimize(await queued.execute(work)));
      bench('cockatiel bulkhead(100)', async () => do_not_optimize(await ckBulkhead.execute(work)));
    });
  });
}

// 5. Hedging on a healthy primary: the chain's walk against its race (a signal per tier asked,
//    the policy's delay read, a timer set and cleared, the first progress recorded).
if (only.has('hedge')) {
  const oneMs = () => new Promise((resolve) => setTimeout(resolve, 1, 42));
  const chain = (tag, call, withHedge) => {
    const primary = watchBreakwater(`hedge ${tag}`, new CircuitBreaker(`hedge-${tag}`));
    // The backup is never asked on this path (no hedge starts: the primary answers first).
    const tiers = [{ breaker: primary, call }, { breaker: new CircuitBreaker(`hedge-${tag}-backup`), call }];
    return new FallbackChain(tiers, withHedge ? { hedge: hedge({ afterMs: 'auto', budget: 0.1 }) } : {});
  };
  const plain = chain('plain', work, false);
  const hedged = chain('hedged', work, true);
  const plainMs = chain('plain-1ms', oneMs, false);
  const hedgedMs = chain('hedged-1ms', oneMs, true);
  const twentyMs = () => new Promise((resolve) => setTimeout(resolve, 20, 42));
  const plain20 = chain('plain-20ms', twentyMs, false);
  const hedged20 = chain('hedged-20ms', twentyMs, true);
  group('FallbackChain.execute, healthy primary: without and with hedge', () => {
    summary(() => {
      bench('chain: no hedge', async () => do_not_optimize(await plain.execute()));
      bench('chain: hedge auto', async () => do_not_optimize(await hedged.execute()));
      bench('chain, 1 ms upstream: no hedge', async () => do_not_optimize(await plainMs.execute()));
      bench('chain, 1 ms upstream: hedge auto', async () => do_not_optimize(await hedgedMs.execute()));
      bench('chain, 20 ms upstream: no hedge', async () => do_not_optimize(await plain20.execute()));
      bench('chain, 20 ms upstream: hedge auto', async () => do_not_optimize(await hedged20.execute()));
    });
  });
}

// 4. Streams: what breaker.stream adds per chunk, reading a whole answer of CHUNKS chunks, against
//    reading the same stream bare. Object chunks (the AI SDK's parts), and an Anthropic-shaped
//    event stream as bytes (the guard reads every event for error events): CHUNKS text deltas,
//    in the shape of `breakwater fake-llm` (js/src/cli/formats.mjs).
const CHUNKS = 200;
if (only.has('stream')) {
  const streamer = watchBreakwater('stream', new CircuitBreaker('stream', { failureThreshold: 5, resetTimeout: 30_000 }));
  const partsStream = () =>
    new ReadableStream({
      start(c) {
        for (let i = 0; i < CHUNKS; i++) c.enqueue({ type: 'text-delta', text: 'token ' });
        c.close();
      },
    });
  const event = new TextEncoder().encode(anthropic.stream({ model: 'claude-bench', text: 'token '.repeat(CHUNKS) }).delta('token '));
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
}

const { benchmarks } = await run();

// A bench that threw is not a measurement (mitata only records the error).
const errors = benchmarks.flatMap((b) => b.runs.filter((r) => r.error).map((r) => `${r.name}: ${r.error?.stack ?? r.error}`));
if (errors.length) {
  for (const e of errors) console.error(`ERROR: a benchmark threw, ${e}`);
  process.exit(1);
}

// Medians: this machine is shared, and a mean of a few outliers swamps a difference of 100 ns.
const p50 = Object.fromEntries(benchmarks.map((b) => [b.alias ?? b.runs[0].name, b.runs[0].stats.p50]));
const fmt = (ns) => `${ns.toFixed(1)} ns`;
const result = {};

if (only.has('execute')) {
  result.execute = RULES.map((r) => {
    const per = (who) => p50[name(r, who)] / CALLS;
    const bare = per('bare await');
    const bw = per('breakwater') - bare;
    const ck = per(`cockatiel ${r.cockatiel}`) - bare;
    const op = per('opossum') - bare;
    const floor = per('floor (minimal guard)') - bare;
    return { rule: r.rule, cockatiel: r.cockatiel, bare, bw, ck, op, floor, rCk: bw / ck, rOp: bw / op, rFloor: bw / floor };
  });
}
if (only.has('sync')) {
  const pair = (suffix) => {
    const wasm = p50[`breakwater (wasm)${suffix}`];
    const js = p50[`pure JS (minimal)${suffix}`];
    return { wasm, js, ratio: wasm / js };
  };
  result.sync = pair('');
  result.syncFailure = pair(', failure path');
}
if (result.execute || result.sync) printTable(result, 'ratios (medians: mitata p50)');

if (only.has('metrics')) {
  const m = (name) => (p50[name] === undefined ? 'n/a' : fmt(p50[name]));
  console.log('\n--- metrics (medians) ---');
  console.log(`execute: baseline ${m('execute: baseline build (no metrics code)')}, this build ${m('execute: this build')}, watched ${m('execute: this build, PrometheusMetrics watching')}`);
  console.log(`withRetry: baseline ${m('withRetry: baseline build')}, this build ${m('withRetry: this build')}, with observer ${m('withRetry: this build, metrics observer')}`);
}
if (only.has('stream')) {
  const perChunk = (kind) => (p50[`stream: breaker.stream (${kind})`] - p50[`stream: bare (${kind})`]) / CHUNKS;
  console.log('\n--- streams (medians) ---');
  console.log(
    `floor: a minimal pull wrapper adds ${fmt((p50['stream: minimal pull wrapper (object chunks)'] - p50['stream: bare (object chunks)']) / CHUNKS)} per chunk`,
  );
  for (const kind of ['object chunks', 'SSE bytes']) {
    console.log(
      `${kind}: bare ${fmt(p50[`stream: bare (${kind})`] / CHUNKS)} per chunk, breaker.stream adds ${fmt(perChunk(kind))} per chunk ` +
        `(${(p50[`stream: breaker.stream (${kind})`] / p50[`stream: bare (${kind})`]).toFixed(2)}x the bare read)`,
    );
  }
}

if (only.has('hedge')) {
  const row = (a, b) => `${fmt(p50[b])} with hedge, ${fmt(p50[a])} without: +${fmt(p50[b] - p50[a])} (${(p50[b] / p50[a]).toFixed(3)}x)`;
  console.log('\n--- hedge on a healthy primary (medians) ---');
  console.log(`instant call: ${row('chain: no hedge', 'chain: hedge auto')}`);
  console.log(`1 ms call: ${row('chain, 1 ms upstream: no hedge', 'chain, 1 ms upstream: hedge auto')}`);
  console.log(`20 ms call: ${row('chain, 20 ms upstream: no hedge', 'chain, 20 ms upstream: hedge auto')}`);
  result.hedge = {
    instant: { plain: p50['chain: no hedge'], hedged: p50['chain: hedge auto'] },
    oneMs: { plain: p50['chain, 1 ms upstream: no hedge'], hedged: p50['chain, 1 ms upstream: hedge auto'] },
    twentyMs: { plain: p50['chain, 20 ms upstream: no hedge'], hedged: p50['chain, 20 ms upstream: hedge auto'] },
  };
}

// Every breaker still CLOSED, never opened: otherwise the numbers above measured another path.
const failed = checks.map((check) => check()).filter(Boolean);
if (failed.length) {
  for (const f of failed) console.error(`ERROR: not the healthy path, ${f}`);
  console.error('ERROR: a breaker left CLOSED during the benchmark; the numbers above are not the healthy path (results not recorded)');
  process.exit(1);
}
console.log(`\nchecked: all ${checks.length} breakers stayed CLOSED (never opened, nothing rejected)`);

if (process.env.BENCH_JSON) appendFileSync(process.env.BENCH_JSON, JSON.stringify({ at: new Date().toISOString(), only: [...only], ...result }) + '\n');
