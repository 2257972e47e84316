// The live demo's hedging column: a heavy-tailed LLM provider, live. Two fake providers on
// 127.0.0.1 (Anthropic-format server-sent events) answer most requests' first token within about
// half a second, and 3 % of them only after tens of seconds (8 s with --short): up, not failing,
// so no breaker opens, but those few set the 99th percentile. An app in this process (the npm
// package, as a user imports it) streams every request through a FallbackChain of the two, once
// without and once with `hedge: hedge({ afterMs: 'auto', budget: 0.1 })`, each run against its own
// pair of providers, at the same time and with the same arrivals. It prints time to first token
// p50/p99 and the extra requests each run sent (counted by the providers), and the connections
// the providers saw closed by the app (the hedges' losers).
//
// Usage: node demo/hedging.mjs [--short] [--out DIR]   (or through demo/live.mjs, which adds
// the result to live.json for the picture). Needs the package installed in demo/
// (scripts/install-pkg.sh demo). Stops every server it started.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CircuitBreaker, FallbackChain } from 'breakwater';
import { hedge } from 'breakwater/adaptive';
import { anthropic } from '../js/src/cli/formats.mjs';
import { quantile, rng } from './provider.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The heavy tail: a share of first tokens take `slowMs`, the others `fastMs` ± half. */
export const tail = (short) => ({ fastMs: 300, slowShare: 0.03, slowMs: short ? 8_000 : 20_000 });

/**
 * A heavy-tailed provider: message_start at once, the first text delta after the drawn time,
 * then the rest of the answer and message_stop. Counts requests, and connections the client
 * closed before the answer ended.
 */
async function startTailProvider({ seed, fastMs, slowShare, slowMs }) {
  const random = rng(seed);
  // Every answer's frames, in the shapes of `breakwater fake-llm` (js/src/cli/formats.mjs): the
  // same id, model and usage each time.
  const frames = anthropic.stream({ id: 'msg_demo', model: 'claude-demo', inputTokens: 40, outputTokens: 5 });
  const stats = { requests: 0, closedEarly: 0 };
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    stats.requests += 1;
    req.resume();
    const first = random() < slowShare ? slowMs * (0.75 + random() * 0.5) : fastMs * (0.5 + random());
    let done = false;
    const timers = [];
    res.on('close', () => {
      timers.forEach(clearTimeout);
      if (!done) stats.closedEarly += 1;
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(frames.start());
    timers.push(
      setTimeout(() => {
        res.write(frames.blockStart() + frames.delta('Hello'));
        timers.push(
          setTimeout(() => {
            res.write(frames.delta(' from the demo.'));
            done = true;
            res.end(frames.tail());
          }, 50),
        );
      }, first),
    );
  });
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/messages`,
    stats,
    close: () => new Promise((r) => (sockets.forEach((s) => s.destroy()), server.close(r))),
  };
}

/**
 * Runs the hedging comparison: `{ short }` sets the size. Returns the table's rows and the
 * settings, as live.json's `hedging` (the simulator's `HedgingReport` fields).
 */
export async function runHedging({ short = false, log = console.log } = {}) {
  const t = tail(short);
  const rate = short ? 40 : 20;
  const durationMs = short ? 8_000 : 30_000;
  const budget = 0.1;
  const arrivals = [];
  const random = rng(0x4ed6e);
  for (let at = 0; at < durationMs; at += -Math.log(1 - random()) * (1000 / rate)) arrivals.push(at);
  log(
    `\n=== hedging, live: a heavy-tailed provider (${t.slowShare * 100} % of first tokens after ~${t.slowMs / 1000} s, the rest ~${t.fastMs} ms), ` +
      `${arrivals.length} streamed requests at ~${rate}/s, a backup provider like it; without and with hedge({ afterMs: 'auto', budget: ${budget} }) ===`,
  );
  const closers = [];
  try {
    const runs = [];
    for (const [k, hedged] of [false, true].entries()) {
      const primary = await startTailProvider({ seed: 101, ...t });
      const backup = await startTailProvider({ seed: 202, ...t });
      closers.push(primary.close, backup.close);
      const policy = hedged ? hedge({ afterMs: 'auto', budget }) : undefined;
      const call = (url) => ({ signal }) =>
        fetch(url, { method: 'POST', signal, headers: { 'content-type': 'application/json' }, body: '{"model":"claude-demo","stream":true}' });
      const chain = new FallbackChain(
        [
          { breaker: new CircuitBreaker(`primary-${k}`), call: call(primary.url), name: 'primary' },
          { breaker: new CircuitBreaker(`backup-${k}`), call: call(backup.url), name: 'backup' },
        ],
        policy ? { hedge: policy } : {},
      );
      runs.push({ hedged, primary, backup, policy, chain, ttft: [], errors: 0, byBackup: 0 });
    }
    const t0 = performance.now();
    const pending = [];
    for (const at of arrivals) {
      const wait = at - (performance.now() - t0);
      if (wait > 0) await sleep(wait);
      for (const run of runs) {
        const sent = performance.now();
        pending.push(
          run.chain
            .stream({ inputTokens: 40 })
            .then(async ({ value, tier }) => {
              run.ttft.push(performance.now() - sent);
              if (tier === 1) run.byBackup += 1;
              await new Response(value).text();
            })
            .catch(() => (run.errors += 1)),
        );
      }
    }
    await Promise.all(pending);
    await sleep(100); // the losers' close events reach the providers
    const rows = runs.map((r) => ({
      hedged: r.hedged,
      requests: arrivals.length,
      p50_ms: Math.round(quantile(r.ttft, 0.5)),
      p99_ms: Math.round(quantile(r.ttft, 0.99)),
      provider_requests: r.primary.stats.requests + r.backup.stats.requests,
      extra_requests: r.primary.stats.requests + r.backup.stats.requests - arrivals.length,
      closed_by_app: r.primary.stats.closedEarly + r.backup.stats.closedEarly,
      answered_by_backup: r.byBackup,
      errors: r.errors,
      hedges: r.policy?.stats ?? null,
    }));
    const [plain, hedged] = rows;
    const pct = (n) => `${((100 * n) / arrivals.length).toFixed(1)} %`;
    const s = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`);
    const table = [
      ['', 'first token p50', 'p99', 'extra requests', 'closed by the app', 'by backup', 'errors'],
      ...rows.map((r) => [
        r.hedged ? 'with hedge' : 'without hedge',
        s(r.p50_ms),
        s(r.p99_ms),
        `${r.extra_requests} (${pct(r.extra_requests)})`,
        String(r.closed_by_app),
        String(r.answered_by_backup),
        String(r.errors),
      ]),
    ];
    const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
    for (const row of table) log(row.map((x, c) => (c === 0 ? x.padEnd(widths[c]) : x.padStart(widths[c]))).join('  '));
    const h = hedged.hedges;
    log(
      `hedges: ${h.started} started (${h.won} won the race, ${h.lost} lost), ${h.refused} refused by the budget; ` +
        `p99 ${s(plain.p99_ms)} → ${s(hedged.p99_ms)} (${(plain.p99_ms / Math.max(1, hedged.p99_ms)).toFixed(1)}× lower) for ${pct(hedged.extra_requests)} extra requests; ` +
        `the losers' ${hedged.closed_by_app} connections were closed by the app, its estimated extra input ${h.extraInputTokens} tokens`,
    );
    return {
      after: "auto (p95 of the tier's first tokens, 100–10000 ms)",
      budget,
      requests: arrivals.length,
      plain_p50_ms: plain.p50_ms,
      plain_p99_ms: plain.p99_ms,
      hedged_p50_ms: hedged.p50_ms,
      hedged_p99_ms: hedged.p99_ms,
      extra_requests: hedged.extra_requests,
      hedges_won: h.won,
      hedges_refused: h.refused,
      closed_by_app: hedged.closed_by_app,
      plain_extra_requests: plain.extra_requests,
      errors: plain.errors + hedged.errors,
      slow_share: t.slowShare,
      slow_ms: t.slowMs,
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const short = args.includes('--short');
  const i = args.indexOf('--out');
  const result = await runHedging({ short });
  if (i >= 0) {
    fs.mkdirSync(args[i + 1], { recursive: true });
    fs.writeFileSync(path.join(args[i + 1], 'hedging.json'), JSON.stringify(result, null, 1));
  }
}
