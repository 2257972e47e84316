// The live demo: the Worker built from this crate, served by real workerd through Miniflare,
// against a fake LLM provider on 127.0.0.1 (the primary model) that goes down (529 overloaded),
// stalls (accepts requests and never answers), flaps, and recovers, while simulated users send
// requests through several app-Worker isolates. Every app has a deadline per user request and a
// backup model (a second fake provider, healthy throughout): when the breaker refuses the primary,
// or the primary fails, it asks the backup with the time that is left. The same scenario runs at
// once, each on its own Miniflare (own workerd process) and its own pair of providers, for:
//   shared   one breaker in the Durable Object, shared by every isolate (DEMO_MODE=shared)
//   local    one breaker per isolate (DEMO_MODE=local)
//   none     no breaker: the isolates call the primary every time and fall back only after it
//            failed (demo/direct-app.mjs); a stalled call uses up the whole deadline
// It prints the shared object's state transitions as they happen and a line per second, then a
// comparison table, and writes the totals and per-second series to <out>/live.json
// (scripts/demo.sh draws them with `breakwater-sim plot`). Then the hedging column
// (demo/hedging.mjs): a heavy-tailed provider streamed through the npm package's FallbackChain
// without and with `hedge`, its time to first token p50/p99 and extra requests, into live.json too.
//
// Usage: node demo/live.mjs [--short] [--out DIR] [--isolates N] [--rate R]
// Needs build/index.js with the demo app (scripts/build-worker.sh --features worker,demo) and
// tests/worker's npm packages (miniflare).
// Stops every server it started, on success, on error and on SIGINT/SIGTERM.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadMiniflare, moduleWorker, objectWorker, requireDemoBuild, ROOT, rustApp } from '../tests/worker/workerd.mjs';
import { ALWAYS_HEALTHY, phaseAt, quantile, recoveredAt, rng, startProvider } from './provider.mjs';
import { runHedging } from './hedging.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIRECT_APP = path.join(HERE, 'direct-app.mjs');
const ADMIN_TOKEN = 'demo-admin-token-0123456789';
const BREAKER = 'llm';

// ----- options -----

function parseArgs(argv) {
  const o = { short: false, out: path.join(ROOT, 'out'), isolates: 6, rate: 20 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--short') o.short = true;
    else if (a === '--out') o.out = path.resolve(next());
    else if (a === '--isolates') o.isolates = Number(next());
    else if (a === '--rate') o.rate = Number(next());
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.isolates) || o.isolates < 1 || o.isolates > 16) usage('--isolates: 1 to 16');
  if (!(o.rate > 0 && o.rate <= 200)) usage('--rate: requests per second, up to 200');
  return o;
}

function usage(error) {
  const text = 'usage: node demo/live.mjs [--short] [--out DIR] [--isolates N] [--rate R]';
  if (error) {
    console.error(`live demo: ${error}\n${text}`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

const opts = parseArgs(process.argv.slice(2));

// The provider's schedule and the breaker's settings; --short scales everything down.
const plan = opts.short
  ? { healthyMs: 3000, outageMs: 4000, stalledMs: 4000, flappingMs: 2000, flapMs: 1000, recoveryMs: 4000 }
  : { healthyMs: 10000, outageMs: 15000, stalledMs: 10000, flappingMs: 6000, flapMs: 1000, recoveryMs: 12000 };
// How long a user request may take: the primary may use all of it, the backup gets what is left.
const DEADLINE_MS = opts.short ? 2000 : 2500;
const OUTAGE_START = plan.healthyMs;
const RECOVERED_AT = recoveredAt(plan);
const END = RECOVERED_AT + plan.recoveryMs;
const BREAKERS = {
  [BREAKER]: {
    lease_ms: opts.short ? 500 : 1000,
    breaker: {
      trip: { kind: 'consecutive_failures', threshold: 5 },
      open_duration_ms: opts.short ? 1000 : 4000,
      open_jitter: 0.1,
      half_open_max_probes: 1,
      probe_timeout_ms: 10000,
    },
  },
};

const STRATEGIES = [
  { key: 'shared', sim: 'shared_breaker', label: 'shared breaker (Durable Object)', short: 'shared' },
  { key: 'local', sim: 'breaker_per_instance', label: 'breaker per isolate', short: 'local' },
  { key: 'none', sim: 'no_protection', label: 'no breaker', short: 'none' },
];

// ----- clean-up: every server started is registered here and stopped on any exit path -----

const closers = [];
let cleaning = null;
let stopping = false;
function cleanup() {
  cleaning ??= (async () => {
    for (const close of closers.splice(0).reverse()) {
      try {
        await Promise.race([close(), sleep(5000)]);
      } catch {}
    }
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    console.error(`\nlive demo: ${sig}: stopping the servers`);
    await cleanup();
    process.exit(130);
  });
}
process.on('uncaughtException', async (e) => {
  console.error('live demo: failed:', e);
  await cleanup();
  process.exit(1);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ----- Miniflare -----

// The workers come from tests/worker/workerd.mjs, as in the Worker tests.
const directApp = (name, { primary, backup }) =>
  moduleWorker(name, DIRECT_APP, {
    bindings: { DEMO_UPSTREAM: primary, DEMO_BACKUP: backup, DEMO_DEADLINE_MS: String(DEADLINE_MS) },
  });

async function startCluster(Miniflare, s, upstreams, run) {
  const names = Array.from({ length: opts.isolates }, (_, i) => `app-${i + 1}`);
  const workers =
    s.key === 'none'
      ? names.map((n) => directApp(n, upstreams))
      : [
          objectWorker({ breakers: BREAKERS, adminToken: ADMIN_TOKEN }),
          ...names.map((n) =>
            rustApp(n, {
              breakers: BREAKERS,
              upstream: upstreams.primary,
              backup: upstreams.backup,
              deadlineMs: DEADLINE_MS,
              breaker: BREAKER,
              mode: s.key,
            }),
          ),
        ];
  const mf = new Miniflare({
    host: '127.0.0.1',
    port: 0,
    workers,
    handleRuntimeStdio: runtimeStdio(s.key === 'shared' ? run : null, s.short),
  });
  closers.push(() => mf.dispose());
  const url = await mf.ready;
  if (s.key === 'shared') writePrometheusTargets(url);
  const apps = await Promise.all(names.map(async (n) => [n, await mf.getWorker(n)]));
  return { mf, apps };
}

// With DEMO_PROMETHEUS_TARGETS=<file> (scripts/test-dashboard.sh), the shared strategy's Worker
// (the object's routes, /metrics among them, on 127.0.0.1) is written there as a Prometheus
// file_sd target list as soon as it listens; Prometheus rereads the file by itself.
function writePrometheusTargets(url) {
  const file = process.env.DEMO_PROMETHEUS_TARGETS;
  if (!file) return;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify([{ targets: [url.host], labels: { demo: 'live', strategy: 'shared' } }]));
  fs.renameSync(tmp, file);
}

async function callJson(fetcher, route, method = 'POST') {
  const resp = await fetcher.fetch(`http://app${route}`, { method });
  const text = await resp.text();
  try {
    return JSON.parse(text);
  } catch {
    return { result: 'error', status: resp.status, body: text };
  }
}

async function objectState(mf) {
  const resp = await mf.dispatchFetch(`http://breakwater/admin/breakers/${BREAKER}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const text = await resp.text();
  if (resp.status !== 200) throw new Error(`object state: ${resp.status} ${text}`);
  return JSON.parse(text);
}

// ----- the users: the same arrival times for every strategy -----

function arrivals() {
  const random = rng(0xb4ea);
  const users = Math.max(opts.isolates, Math.round(opts.rate * 1.5));
  const period = (1000 * users) / opts.rate; // each user sends one request per `period`
  const list = [];
  for (let u = 0; u < users; u++) {
    let t = random() * period;
    while (t < END) {
      list.push({ at: t, user: u, isolate: u % opts.isolates });
      t += period * (0.75 + random() * 0.5);
    }
  }
  return { users, list: list.sort((a, b) => a.at - b.at) };
}

// ----- output -----

const t0Holder = { t0: 0, epoch: 0 };
const clock = () => performance.now() - t0Holder.t0;
const stamp = (ms = clock()) => `[${(ms / 1000).toFixed(1).padStart(5)}s]`;
const phaseName = (ms) => phaseAt(plan, Math.max(0, ms)).phase;
const LEVEL = { CLOSED: 0, HALF_OPEN: 0.5, OPEN: 1 };
const SHORT_STATE = { CLOSED: 'closed', HALF_OPEN: 'half-open', OPEN: 'OPEN' };

function bucket(arr, i) {
  while (arr.length <= i) arr.push(0);
  return i;
}

// ----- one strategy's run -----

function newRun(s) {
  return {
    s,
    requests: 0,
    results: { ok: 0, failed: 0, rejected: 0, error: 0 },
    byPrimary: 0,
    byBackup: 0,
    userErrors: 0,
    timedOut: 0,
    latencies: [],
    reqSeries: [],
    rejectedSeries: [],
    backupSeries: [],
    errorSeries: [],
    levelSum: [],
    levelN: [],
    affectedAfterMs: 0,
    inflight: new Set(),
    state: null, // shared: the object's; local: per-isolate
    localStates: new Map(),
    opened: 0,
    coordinatorRequests: 0,
    transitions: [],
  };
}

// `result` is what happened to the primary (ok, failed, rejected by the breaker); `answered_by`
// who answered the user (primary, backup, or nobody: a user-visible error).
function record(run, sent, body, end) {
  const result = ['ok', 'failed', 'rejected'].includes(body.result) ? body.result : 'error';
  run.results[result] += 1;
  run.latencies.push(end - sent);
  if (body.timed_out) run.timedOut += 1;
  const i = Math.floor(Math.max(0, end) / 1000);
  if (result === 'rejected') run.rejectedSeries[bucket(run.rejectedSeries, i)] += 1;
  if (body.answered_by === 'primary') run.byPrimary += 1;
  else if (body.answered_by === 'backup') {
    run.byBackup += 1;
    run.backupSeries[bucket(run.backupSeries, i)] += 1;
  } else {
    run.userErrors += 1;
    run.errorSeries[bucket(run.errorSeries, i)] += 1;
  }
  if (body.answered_by !== 'primary' && end > RECOVERED_AT) {
    run.affectedAfterMs = Math.max(run.affectedAfterMs, end - RECOVERED_AT);
  }
}

function sampleLevel(run, level) {
  const i = Math.floor(Math.max(0, clock()) / 1000);
  bucket(run.levelSum, i);
  bucket(run.levelN, i);
  run.levelSum[i] += level;
  run.levelN[i] += 1;
}

async function pollShared(run, mf) {
  const v = await objectState(mf);
  sampleLevel(run, LEVEL[v.lease.state] ?? 0);
  run.state = { st: v.lease.state };
  run.opened = v.stats.opened;
}

// The object logs each transition itself ("breakwater <name>: FROM -> TO at <epoch ms>"): print
// those as they arrive, with the demo's clock. Everything else workerd prints goes to stderr.
const WHY = {
  'CLOSED>OPEN': 'the object opened the breaker: every isolate fails fast from its next lease',
  'OPEN>HALF_OPEN': 'the open period is over: the next call, from any isolate, is the one probe',
  'HALF_OPEN>OPEN': 'the probe failed: open again',
  'HALF_OPEN>CLOSED': 'the probe succeeded: every isolate admits again',
};
function runtimeStdio(run, label) {
  return (stdout, stderr) => {
    const lines = (stream, sink) => {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        rest += chunk;
        let nl;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const text = rest.slice(0, nl).trimEnd();
          rest = rest.slice(nl + 1);
          if (text) sink(text);
        }
      });
    };
    const onLine = (text) => {
      const m = /breakwater (\S+): (\w+) -> (\w+) at (\d+)/.exec(text);
      if (m && run) {
        const at = Number(m[4]) - t0Holder.epoch;
        const why = WHY[`${m[2]}>${m[3]}`];
        console.log(`${stamp(at)} shared object: ${m[2]} → ${m[3]}${why ? `  (${why})` : ''}`);
        run.transitions.push({ at_ms: Math.round(at), from: m[2], to: m[3] });
      } else {
        console.error(`[workerd ${label}] ${text}`);
      }
    };
    lines(stdout, onLine);
    lines(stderr, onLine);
  };
}

async function pollLocal(run, apps) {
  const states = await Promise.all(apps.map(async ([n, f]) => [n, (await callJson(f, '/app/stats', 'GET')).state]));
  let sum = 0;
  const changes = [];
  for (const [n, st] of states) {
    sum += LEVEL[st] ?? 0;
    const prev = run.localStates.get(n);
    run.localStates.set(n, st);
    // OPEN ↔ HALF_OPEN churn is in the per-second line; print trips and closes.
    if (prev && prev !== st && (st === 'CLOSED' || prev === 'CLOSED')) changes.push(`${n} ${prev} → ${st}`);
  }
  sampleLevel(run, sum / states.length);
  if (changes.length > 0) {
    const open = [...run.localStates.values()].filter((s) => s !== 'CLOSED').length;
    console.log(`${stamp()} per-isolate breakers: ${changes.join(', ')} (${open}/${apps.length} not closed)`);
    run.transitions.push({ at_ms: Math.round(clock()), changes });
  }
}

function stateSummary(run) {
  if (run.s.key === 'shared') return run.state ? SHORT_STATE[run.state.st] ?? run.state.st : '?';
  if (run.s.key === 'local') {
    const open = [...run.localStates.values()].filter((s) => s !== 'CLOSED').length;
    return `${open}/${opts.isolates} open`;
  }
  return '';
}

// One line per second, in columns under `secondHeader()`.
const CELL = { shared: 36, local: 35, none: 17 };
function secondHeader(runs) {
  const top = runs.map((run) => run.s.label.padEnd(CELL[run.s.key]).slice(0, CELL[run.s.key]));
  const sub = runs.map((run) =>
    (run.s.key === 'none' ? 'req  up   bk  err' : 'req  up fast   bk  err state').padEnd(CELL[run.s.key]),
  );
  console.log(`${' '.repeat(8)} ${'phase'.padEnd(9)} | ${top.join(' | ')}`);
  console.log(`${' '.repeat(8)} ${''.padEnd(9)} | ${sub.join(' | ')}`);
}
function secondLine(runs, providers, i) {
  const n = (x, w = 3) => String(x).padStart(w);
  const cells = runs.map((run, k) => {
    const up = providers[k].stats.calls[i] ?? 0;
    const req = run.reqSeries[i] ?? 0;
    const fast = run.rejectedSeries[i] ?? 0;
    const bk = run.backupSeries[i] ?? 0;
    const err = run.errorSeries[i] ?? 0;
    const text =
      run.s.key === 'none'
        ? `${n(req)} ${n(up)} ${n(bk, 4)} ${n(err, 4)}`
        : `${n(req)} ${n(up)} ${n(fast, 4)} ${n(bk, 4)} ${n(err, 4)} ${stateSummary(run)}`;
    return text.padEnd(CELL[run.s.key]);
  });
  console.log(`${stamp((i + 1) * 1000)} ${phaseName(i * 1000).padEnd(9)} | ${cells.join(' | ')}`);
}

// ----- main -----

async function main() {
  // The app Workers are the Rust demo app (/app/*), built in only with the feature `demo`.
  requireDemoBuild();
  const Miniflare = await loadMiniflare();
  const { users, list } = arrivals();
  const secs = (ms) => `${ms / 1000} s`;
  console.log(
    `live demo: ${users} simulated users, ~${opts.rate} requests/s over ${opts.isolates} app-Worker isolates, in workerd (Miniflare)`,
  );
  console.log(
    `primary model (fake provider, 127.0.0.1): healthy ${secs(plan.healthyMs)}, 529 overloaded ${secs(plan.outageMs)}, stalled (no answer) ${secs(plan.stalledMs)}, flapping ${secs(plan.flappingMs)} (${secs(plan.flapMs)} windows), healthy ${secs(plan.recoveryMs)}`,
  );
  console.log(
    `backup model (another fake provider): healthy throughout. Each user request has a ${secs(DEADLINE_MS)} deadline: the primary may use all of it, the backup gets what is left`,
  );
  const b = BREAKERS[BREAKER];
  console.log(
    `breaker: opens after ${b.breaker.trip.threshold} consecutive failures, stays open ${secs(b.breaker.open_duration_ms)} (±10%), one probe; shared lease ${secs(b.lease_ms)}`,
  );
  console.log(`strategies, run at the same time on separate Miniflare instances: ${STRATEGIES.map((s) => `${s.short} = ${s.label}`).join('; ')}\n`);

  // Providers (a primary and a backup per strategy, same schedules) and clusters.
  const providers = [];
  const backups = [];
  for (const [k] of STRATEGIES.entries()) {
    const p = await startProvider({ plan, clock, seed: 7 + k });
    closers.push(() => p.close());
    providers.push(p);
    const b = await startProvider({ plan: ALWAYS_HEALTHY, clock, seed: 17 + k, model: 'claude-demo-small' });
    closers.push(() => b.close());
    backups.push(b);
  }
  const startedAt = performance.now();
  const runs = STRATEGIES.map(newRun);
  const clusters = [];
  for (const [k, s] of STRATEGIES.entries()) clusters.push(await startCluster(Miniflare, s, { primary: providers[k].url, backup: backups[k].url }, runs[k]));
  // Warm up every isolate (a lease, the wasm instance) before the clock starts: not counted.
  t0Holder.t0 = performance.now() + 1e9;
  t0Holder.epoch = Date.now() + 1e9;
  await Promise.all(clusters.flatMap(({ apps }) => apps.map(([, f]) => callJson(f, '/app/call'))));
  console.log(`${clusters.length} Miniflare instances up in ${((performance.now() - startedAt) / 1000).toFixed(1)} s; go`);
  console.log('each second: req = user requests, up = calls that reached the primary, fast = refused by the breaker (sent to the');
  console.log('             backup at once), bk = answered by the backup, err = users left with no answer (neither model answered');
  console.log('             in time), state = the breaker (local: isolates not closed)\n');
  secondHeader(runs);

  t0Holder.t0 = performance.now();
  t0Holder.epoch = Date.now();

  // Pollers: the object's state (shared) and the isolates' breakers (local).
  let polling = true;
  const pollers = [
    (async () => {
      while (polling && !stopping) {
        await pollShared(runs[0], clusters[0].mf).catch((e) => console.error(`${stamp()} shared object: ${e.message}`));
        await sleep(100);
      }
    })(),
    (async () => {
      while (polling && !stopping) {
        await pollLocal(runs[1], clusters[1].apps).catch((e) => console.error(`${stamp()} local: ${e.message}`));
        await sleep(250);
      }
    })(),
  ];

  // Per-second lines.
  let printed = 0;
  const ticker = setInterval(() => {
    const now = clock();
    while (printed < Math.floor(now / 1000) && printed < Math.ceil(END / 1000)) secondLine(runs, providers, printed++);
  }, 100);

  // The users.
  let next = 0;
  while (next < list.length && !stopping) {
    const now = clock();
    while (next < list.length && list[next].at <= now) {
      const a = list[next++];
      for (const [k, run] of runs.entries()) {
        const [, fetcher] = clusters[k].apps[a.isolate];
        run.requests += 1;
        run.reqSeries[bucket(run.reqSeries, Math.floor(a.at / 1000))] += 1;
        const sent = clock();
        const p = callJson(fetcher, '/app/call')
          .catch((e) => ({ result: 'error', message: e.message }))
          .then((body) => {
            record(run, sent, body, clock());
            run.inflight.delete(p);
          });
        run.inflight.add(p);
      }
    }
    await sleep(Math.max(1, Math.min(20, (list[next]?.at ?? now) - clock())));
  }
  if (stopping) return;
  await sleep(Math.max(0, END - clock()));
  await Promise.race([Promise.all(runs.flatMap((r) => [...r.inflight])), sleep(5000)]);
  polling = false;
  await Promise.all(pollers);
  clearInterval(ticker);
  while (printed < Math.ceil(END / 1000)) secondLine(runs, providers, printed++);

  // Object requests: what every isolate's client sent to the object.
  for (const [k, run] of runs.entries()) {
    if (run.s.key !== 'shared') continue;
    const stats = await Promise.all(clusters[k].apps.map(([, f]) => callJson(f, '/app/stats', 'GET')));
    run.coordinatorRequests = stats.reduce((a, s) => a + (s.object_requests ?? 0), 0);
  }

  // The table.
  const rows = runs.map((run, k) => {
    const p = providers[k].stats;
    return {
      strategy: run.s.label,
      key: run.s.key,
      requests: run.requests,
      user_visible_errors: run.userErrors,
      answered_by_primary: run.byPrimary,
      answered_by_backup: run.byBackup,
      upstream_calls: p.total,
      upstream_calls_during_outage: p.duringOutage,
      upstream_529s: p.overloaded,
      upstream_stalled: p.stalled,
      primary_timeouts: run.timedOut,
      failed_fast: run.results.rejected,
      backup_calls: backups[k].stats.total,
      latency_p50_ms: Math.round(quantile(run.latencies, 0.5)),
      latency_p95_ms: Math.round(quantile(run.latencies, 0.95)),
      latency_p99_ms: Math.round(quantile(run.latencies, 0.99)),
      affected_after_recovery_ms: Math.round(run.affectedAfterMs),
      object_requests: run.s.key === 'shared' ? run.coordinatorRequests : null,
      breaker_opened: run.s.key === 'shared' ? run.opened : null,
    };
  });
  const ms = (x) => `${x} ms`;
  const columns = [
    ['strategy', (r) => r.strategy],
    ['requests', (r) => String(r.requests)],
    ['user-visible errors', (r) => String(r.user_visible_errors)],
    ['by primary', (r) => String(r.answered_by_primary)],
    ['by backup', (r) => String(r.answered_by_backup)],
    ['primary calls', (r) => String(r.upstream_calls)],
    ['during outage', (r) => String(r.upstream_calls_during_outage)],
    ['timed out', (r) => String(r.primary_timeouts)],
    ['failed fast', (r) => String(r.failed_fast)],
    ['p50', (r) => ms(r.latency_p50_ms)],
    ['p99', (r) => ms(r.latency_p99_ms)],
    ['object requests', (r) => (r.object_requests === null ? '-' : String(r.object_requests))],
  ];
  const head = columns.map(([h]) => h);
  const body = rows.map((r) => columns.map(([, cell]) => cell(r)));
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((row) => row[c].length)));
  const line = (cells) => cells.map((x, c) => (c === 0 ? x.padEnd(widths[c]) : x.padStart(widths[c]))).join('  ');
  console.log(
    `\nlive demo results (outage = ${secs(OUTAGE_START)} to ${secs(RECOVERED_AT)}: 529s, a stall, then flapping; ${opts.isolates} isolates; ${secs(DEADLINE_MS)} deadline):`,
  );
  console.log(line(head));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of body) console.log(line(row));
  const [sh, lo, no] = rows;
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(1)}×` : 'n/a');
  const after = (r) => `${(r.affected_after_recovery_ms / 1000).toFixed(1)} s`;
  console.log(
    `\nduring the outage the primary got ${sh.upstream_calls_during_outage} calls through the shared breaker, ` +
      `${lo.upstream_calls_during_outage} through per-isolate breakers (${ratio(lo.upstream_calls_during_outage, sh.upstream_calls_during_outage)}) ` +
      `and ${no.upstream_calls_during_outage} with no breaker (${ratio(no.upstream_calls_during_outage, sh.upstream_calls_during_outage)}).`,
  );
  console.log(
    `users left with no answer: ${sh.user_visible_errors} with the shared breaker, ${lo.user_visible_errors} with per-isolate breakers, ` +
      `${no.user_visible_errors} with no breaker (${no.primary_timeouts} of its primary calls used up the deadline in the stall).`,
  );
  console.log(
    'user-visible error: neither model answered before the deadline. p50 / p99: the latency the users saw, answers and errors alike.',
  );
  console.log(
    `back on the primary after its recovery: shared ${after(sh)}, per-isolate ${after(lo)}, none ${after(no)} ` +
      '(the last answer from the backup or error after the recovery).',
  );

  // The hedging column: a heavy-tailed provider, without and with `hedge` (demo/hedging.mjs).
  const hedging = await runHedging({ short: opts.short });

  // The recording, for `breakwater-sim plot`.
  fs.mkdirSync(opts.out, { recursive: true });
  const nb = Math.ceil(END / 1000);
  const pad = (arr) => Array.from({ length: nb }, (_, i) => arr[i] ?? 0);
  const recording = {
    title: `live demo in workerd${opts.short ? ' (short)' : ''}`,
    bucket_ms: 1000,
    instances: opts.isolates,
    requests: runs[0].requests,
    outage_start_ms: OUTAGE_START,
    recovered_at_ms: RECOVERED_AT,
    deadline_ms: DEADLINE_MS,
    plan,
    breakers: BREAKERS,
    hedging,
    // In the simulator's order: no protection first, the shared breaker last.
    strategies: [...runs].reverse().map((run) => {
      const k = runs.indexOf(run);
      const row = rows[k];
      const levels = run.levelSum.length
        ? pad(run.levelSum).map((s, i) => (run.levelN[i] ? s / run.levelN[i] : 0))
        : [];
      return {
        ...row,
        strategy: run.s.sim,
        label: run.s.label,
        calls: pad(providers[k].stats.calls),
        rejected: pad(run.rejectedSeries),
        errors: pad(run.errorSeries),
        backup: pad(run.backupSeries),
        requests_per_s: pad(run.reqSeries),
        breaker_open: levels,
        transitions: run.transitions,
      };
    }),
  };
  const file = path.join(opts.out, 'live.json');
  fs.writeFileSync(file, JSON.stringify(recording, null, 1));
  const shown = path.relative(process.cwd(), file);
  console.log(`\nper-second series written to ${shown.startsWith('..') ? file : shown}`);
}

const started = performance.now();
// A watchdog: the demo finishes by itself even if something hangs.
const watchdog = setTimeout(
  async () => {
    console.error('live demo: took too long, stopping');
    stopping = true;
    await cleanup();
    process.exit(1);
  },
  END + 210_000,
);
try {
  await main();
  await cleanup();
  clearTimeout(watchdog);
  if (stopping) process.exit(130);
  console.log(`live demo finished in ${((performance.now() - started) / 1000).toFixed(0)} s; every server stopped`);
  process.exit(0);
} catch (e) {
  console.error(`live demo: failed: ${e?.stack ?? e}`);
  await cleanup();
  process.exit(1);
}
