// The ratio table of bench.mjs: one row per trip rule, from one run's result
// { execute: [row], sync?: {wasm, js, ratio}, syncFailure?: {wasm, js, ratio} },
// row = { rule, cockatiel, bw, ck, op, floor, rCk, rOp, rFloor } (ns are overheads over a bare
// await, all from mitata's p50).

export const GOALS = { rCk: 0.5, rOp: 0.15, rFloor: 1.2, sync: 2 };

const ns = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const ratio = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** Prints the markdown table of one run's result. */
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
      "ns: execute() overhead over a bare await (p50 of the row minus p50 of its group's bare await). " +
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
