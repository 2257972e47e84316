// docs/sizes.md is the one place the repository states its sizes, and it cannot drift:
//   - its table of entries equals what `node scripts/sizes.mjs` measures on the package installed
//     here (`--check --only package`; the Workers' figures, which need wrangler and worker-build,
//     are checked by scripts/test-worker.sh with `--only workers`);
//   - README.md, js/README.md, ARCHITECTURE.md and docs/*.md quote no size in prose: a number
//     with a unit of size (B, KB, KiB, MB, MiB, bytes...) outside docs/sizes.md fails, unless it is
//     one of the allowances named below (limits that are settings, not sizes of the package).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('docs/sizes.md: the table of entries is what scripts/sizes.mjs measures now', async () => {
  const { status, stderr } = await new Promise((resolve) =>
    execFile(process.execPath, [path.join(ROOT, 'scripts/sizes.mjs'), '--check', '--only', 'package'], { cwd: ROOT, timeout: 300_000 }, (err, stdout, stderr) =>
      resolve({ status: err ? (err.code ?? 1) : 0, stderr }),
    ),
  );
  assert.equal(status, 0, stderr);
});

/** A size: a number and a unit of size (not a percentage, a count or a duration). */
const SIZE = /(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:KiB|KB|kB|kb|MiB|MB|GiB|GB|bytes|B)\b/g;
/**
 * What may stay: each a file, the text around the figure, and why it is not a size of the
 * package. Every allowance must still match something (a stale one fails too).
 */
const ALLOWED = [
  { file: 'js/README.md', text: /at most 64 KiB/g, count: 2, why: "a setting: the most of a failing Response's body that is read to classify it" },
  { file: 'js/README.md', text: /up to 1 MiB of a byte stream|at most 1 MiB \(1024 chunks\)/g, count: 2, why: "a setting: the stream guard's bounded buffer" },
];

function documents() {
  const docs = fs.existsSync(path.join(ROOT, 'docs')) ? fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`) : [];
  return ['README.md', 'js/README.md', 'ARCHITECTURE.md', ...docs].filter((f) => f !== 'docs/sizes.md');
}

test('no document quotes a size outside docs/sizes.md (they link to it)', () => {
  const found = [];
  for (const file of documents()) {
    let text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const a of ALLOWED.filter((x) => x.file === file)) {
      const n = text.match(a.text)?.length ?? 0;
      assert.equal(n, a.count, `${file}: the allowance for ${a.text} (${a.why}) matched ${n} times, not ${a.count}: update or remove it`);
      text = text.replace(a.text, (m) => m.replace(/\d/g, '#'));
    }
    text.split('\n').forEach((line, i) => {
      for (const m of line.matchAll(SIZE)) found.push(`${file}:${i + 1}: "${m[0]}" in: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, [], `sizes quoted in prose: link to https://github.com/breakwater-llm/breakwater/blob/main/docs/sizes.md instead\n${found.join('\n')}`);
});

test('every document that speaks of the package size links to the table', () => {
  for (const file of ['README.md', 'js/README.md']) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    assert.match(text, /https:\/\/github\.com\/breakwater-llm\/breakwater\/blob\/main\/docs\/sizes\.md/, file);
  }
});
