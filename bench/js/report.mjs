// The ratio table of bench.mjs, and its aggregation over several runs (plain JS, no dependencies).
//   import { printTable } from './report.mjs'      bench.mjs prints one run's table with it.
//   node bench/js/report.mjs RESULTS.jsonl         prints the table of per-row medians over the runs
//                                                  in RESULTS.jsonl (one JSON line per run, written by
//                                                  bench.mjs when BENCH_JSON names the file).
// A run's result: { execute: [row], sync?: {wasm, js, ratio}, syncFailure?: {wasm, js, ratio} },
// row = { rule, cockatiel, bw, ck, op, floor, rCk, rOp, rFloor } (ns are overheads over a bare
// await, all from mitata's p50). Aggregated, every number of a row is the median of its per-run
// values: a ratio is the median of the per-run ratios, not the ratio of the median overheads.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const GOALS = { rCk: 0.5, rOp: 0.15, rFloor: 1.2, sync: 2 };

export function median(xs) {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const ns = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const ratio = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** Prints the markdown table of one result (a run's, or the aggregate of several). */
export function printTable(result, title) {
  const lines = [];
  if (title) lines.push(`\n### ${title}\n`);
  if (result.execute?.length) {
    lines.push(
      '| trip rule | cockatiel equivalent | breakwater ns | cockatiel ns | opossum ns | floor ns | ' +
        `bw/cockatiel (goal ≤ ${GOALS.rCk}) | bw/opossum (goal ≤ ${GOALS.rOp}) | bw/floor (aim ≤ ${GOALS.rFloor}) |`,
      '|---|---|--:|--:|--:|--:|--:|--:|--:|',
    );
    for (const r of result.execute) {
      lines.push(
        `| ${r.rule} | ${r.cockatiel} | ${ns(r.bw)} | ${ns(r.ck)} | ${ns(r.op)} | ${ns(r.floor)} | ` +
          `${ratio(r.rCk)} | ${ratio(r.rOp)} | ${ratio(r.rFloor)} |`,
      );
    }
    lines.push(
      '',
      "ns: execute() overhead over a bare await, per call (p50 of the row minus p50 of its group's bare await; each sample is 32 calls in a row, divided by 32). " +
        'floor: a minimal async guard around the minimal pure-JS breaker (no rate window, in every group).',
    );
    if (result.execute.some((r) => !(r.bw > 0 && r.ck > 0 && r.op > 0 && r.floor > 0))) {
      lines.push('An overhead <= 0: the difference is below this machine\'s noise between two mitata blocks; that row\'s ratios mean nothing.');
    }
  }
  if (result.sync) {
    const s = result.sync;
    lines.push(
      `sync pair isHealthy() + recordSuccess(): breakwater (wasm) ${ns(s.wasm)} ns / pure JS (minimal) ${ns(s.js)} ns = ` +
        `${ratio(s.ratio)} (goal ≤ ${GOALS.sync})`,
    );
  }
  if (result.syncFailure) {
    const s = result.syncFailure;
    lines.push(
      `sync pair, failure path (crosses into wasm): breakwater (wasm) ${ns(s.wasm)} ns / pure JS (minimal) ${ns(s.js)} ns = ${ratio(s.ratio)}`,
    );
  }
  console.log(lines.join('\n'));
}

/** Per-row medians over several results (rows matched by their rule). */
export function aggregate(results) {
  const out = {};
  const rules = [...new Set(results.flatMap((r) => (r.execute ?? []).map((row) => row.rule)))];
  if (rules.length) {
    out.execute = rules.map((rule) => {
      const rows = results.flatMap((r) => (r.execute ?? []).filter((row) => row.rule === rule));
      const agg = { rule, cockatiel: rows[0].cockatiel, runs: rows.length };
      for (const k of ['bw', 'ck', 'op', 'floor', 'rCk', 'rOp', 'rFloor']) agg[k] = median(rows.map((row) => row[k]));
      return agg;
    });
  }
  for (const key of ['sync', 'syncFailure']) {
    const xs = results.map((r) => r[key]).filter(Boolean);
    if (xs.length) out[key] = { wasm: median(xs.map((x) => x.wasm)), js: median(xs.map((x) => x.js)), ratio: median(xs.map((x) => x.ratio)) };
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node bench/js/report.mjs RESULTS.jsonl');
    process.exit(2);
  }
  const results = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
  if (results.length === 0) {
    console.error(`report.mjs: no results in ${file}`);
    process.exit(1);
  }
  printTable(aggregate(results), `medians over ${results.length} run${results.length === 1 ? '' : 's'} (each number: the median of its per-run values)`);
}
