// Every code block of the public docs is checked by a test, and this says which: a block in a
// language no test reads, or in a file the test of its language does not read, fails here.
//   ts, typescript  type-checked against the package (readme-types.test.mjs: README.md,
//                   js/README.md, docs/*.md); some also run (readme, recipes, fake-llm tests)
//   rust            doctests: a file src/lib.rs includes under #[cfg(doctest)]
//   js              another library's code (docs/migrating.md's "before"): compiled here, and
//                   every package it imports resolves
//   toml            a BREAKERS block: parsed by the core (tests/readme.rs); wrangler.toml lines:
//                   deployed dry by scripts/sizes.mjs; a scenario: scenarios/README.md, whose
//                   format tests/sim.rs reads
//   yaml            Prometheus config and rules (tests/dashboard/dashboard.test.mjs)
//   mermaid         the README's pictures (tests/diagrams.rs)
//   sh, bash        commands: every script, binary, example, scenario and `breakwater` command
//                   they name exists (checked here)
//   text            output shown as an example; nothing to run
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const exists = (file) => fs.existsSync(path.join(ROOT, file));

/** The public docs (as tests/readme.rs lists them). */
function publicDocs() {
  const docs = ['README.md', 'js/README.md', 'ARCHITECTURE.md', 'dashboards/README.md', 'scenarios/README.md'];
  for (const f of fs.readdirSync(path.join(ROOT, 'docs')).sort()) if (f.endsWith('.md')) docs.push(`docs/${f}`);
  for (const d of fs.readdirSync(path.join(ROOT, 'starters')).sort()) if (exists(`starters/${d}/README.md`)) docs.push(`starters/${d}/README.md`);
  return docs.filter(exists);
}

/** The fenced blocks of a doc: `{ lang, code, line }` (fences may be indented under a list item). */
function blocks(doc) {
  const out = [];
  const lines = read(doc).split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, info] = open;
    const body = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^ {0,${indent.length}}\`\`\`\\s*$`).test(lines[j])) body.push(lines[j++].slice(indent.length));
    assert.ok(j < lines.length, `${doc}:${i + 1}: a block that never ends`);
    out.push({ lang: info.split(',')[0], code: body.join('\n'), line: i + 1 });
    i = j;
  }
  return out;
}

const typeChecked = (doc) => doc === 'README.md' || doc === 'js/README.md' || /^docs\/[^/]+\.md$/.test(doc);
const doctested = [...read('src/lib.rs').matchAll(/#\[cfg\(doctest\)\]\s*#\[doc = include_str!\("\.\.\/([^"]+)"\)\]/g)].map((m) => m[1]);
const cliCommands = (() => {
  const m = /const COMMANDS = \{([^}]*)\}/.exec(read('js/src/cli/main.mjs'));
  assert.ok(m, 'js/src/cli/main.mjs has its COMMANDS table');
  return [...m[1].matchAll(/'?([\w-]+)'?\s*:/g)].map((x) => x[1]);
})();
const builtinScenarios = fs.readdirSync(path.join(ROOT, 'scenarios')).map((f) => f.replace(/\.(toml|json)$/, ''));

/** Why a shell line's commands may be wrong: the scripts, binaries, examples, scenarios and commands it names. */
function shellProblems(line) {
  const problems = [];
  const code = line.replace(/\s+#.*$/, '').trim();
  if (code === '' || code.startsWith('#')) return problems;
  for (const command of code.split(/&&|\|\||;|\|/).map((c) => c.trim().replace(/^\(+|\)+$/g, '').trim())) {
    const words = command.split(/\s+/);
    for (const w of words.filter((x) => /^(\.\/)?scripts\/[\w.-]+$/.test(x))) if (!exists(w.replace(/^\.\//, ''))) problems.push(`no ${w}`);
    const bw = words.indexOf('breakwater');
    if (bw >= 0 && (words[bw - 1] === 'npx' || bw === 0) && words[bw + 1] && !words[bw + 1].startsWith('-')) {
      if (!cliCommands.includes(words[bw + 1])) problems.push(`\`breakwater ${words[bw + 1]}\` is not one of its commands (${cliCommands.join(', ')})`);
    }
    const flag = (name) => (words.includes(name) ? words[words.indexOf(name) + 1] : undefined);
    if (words[0] === 'cargo' && words[1] === 'run') {
      const bin = flag('--bin');
      if (bin && !exists(`src/bin/${bin}.rs`)) problems.push(`no binary ${bin}`);
      const example = flag('--example');
      if (example && !exists(`examples/${example}.rs`)) problems.push(`no example ${example}`);
      const run = words.indexOf('run', 2);
      const scenario = run > 0 && words[run - 1] === '--' ? words[run + 1] : bin === 'breakwater-sim' && words.includes('--') ? words[words.indexOf('--') + 2] : undefined;
      if (scenario && !/\.(toml|json)$/.test(scenario) && !builtinScenarios.includes(scenario)) problems.push(`no built-in scenario ${scenario}`);
      if (scenario && /^scenarios\//.test(scenario) && !exists(scenario)) problems.push(`no ${scenario}`);
    }
  }
  return problems;
}

test('every block of the public docs is in a language a test checks, in a file that test reads', () => {
  const unchecked = [];
  const counts = {};
  for (const doc of publicDocs()) {
    for (const b of blocks(doc)) {
      counts[b.lang || '(none)'] = (counts[b.lang || '(none)'] ?? 0) + 1;
      const where = `${doc}:${b.line}`;
      switch (b.lang) {
        case 'ts':
        case 'typescript':
          if (!typeChecked(doc)) unchecked.push(`${where}: a ts block in a file readme-types.test.mjs does not read`);
          break;
        case 'rust':
          if (!doctested.includes(doc)) unchecked.push(`${where}: a rust block in a file src/lib.rs does not doctest (it includes ${doctested.join(', ')})`);
          break;
        case 'js':
          break; // compiled below
        case 'toml':
          if (!/BREAKERS = '''/.test(b.code) && !/\[\[durable_objects\.bindings\]\]/.test(b.code) && doc !== 'scenarios/README.md') {
            unchecked.push(`${where}: a toml block that is neither BREAKERS, the Workers guide's wrangler lines nor the scenario format`);
          }
          if (/\[\[durable_objects\.bindings\]\]/.test(b.code) && doc !== 'docs/cloudflare.md') unchecked.push(`${where}: wrangler lines scripts/sizes.mjs does not deploy`);
          break;
        case 'yaml':
          if (doc !== 'js/README.md' && doc !== 'dashboards/README.md') unchecked.push(`${where}: a yaml block tests/dashboard does not read`);
          break;
        case 'mermaid':
          if (doc !== 'README.md') unchecked.push(`${where}: a diagram tests/diagrams.rs does not read`);
          break;
        case 'sh':
        case 'bash':
        case 'text':
          break; // commands checked below; text is output
        default:
          unchecked.push(`${where}: a block in ${b.lang ? `"${b.lang}"` : 'no language'}, which no test checks`);
      }
    }
  }
  assert.deepEqual(unchecked, []);
  console.log(`blocks by language: ${JSON.stringify(counts)}`);
  assert.ok((counts.ts ?? 0) > 30 && (counts.rust ?? 0) > 3 && (counts.sh ?? 0) > 5, JSON.stringify(counts));
});

test('the js blocks compile, and the packages they import resolve', () => {
  const require = createRequire(path.join(ROOT, 'package.json'));
  let n = 0;
  for (const doc of publicDocs()) {
    for (const b of blocks(doc).filter((x) => x.lang === 'js')) {
      n++;
      const where = `${doc}:${b.line}`;
      assert.doesNotThrow(() => transformSync(b.code, { loader: 'js', format: 'esm' }), where);
      for (const [, spec] of b.code.matchAll(/(?:from|require\()\s*['"]([^'"]+)['"]/g)) {
        assert.doesNotThrow(() => require.resolve(spec), `${where}: ${spec} does not resolve`);
      }
    }
  }
  assert.ok(n > 0, 'no js block found');
});

test('the shell commands name scripts, binaries, examples, scenarios and commands that exist', () => {
  const wrong = [];
  let lines = 0;
  for (const doc of publicDocs()) {
    for (const b of blocks(doc).filter((x) => x.lang === 'sh' || x.lang === 'bash')) {
      b.code.split('\n').forEach((line, i) => {
        lines++;
        for (const p of shellProblems(line)) wrong.push(`${doc}:${b.line + 1 + i}: ${p}: ${line.trim()}`);
      });
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(lines > 20, `only ${lines} lines of commands`);
});

test('the shell check finds what it is for', () => {
  assert.deepEqual(shellProblems('scripts/nope.sh --x'), ['no scripts/nope.sh']);
  assert.equal(shellProblems('npx breakwater fake-llm --port 8788').length, 0);
  assert.match(shellProblems('npx breakwater fakellm')[0], /not one of its commands/);
  assert.match(shellProblems('cargo run --release --features sim --bin breakwater-sim -- run seed999')[0], /no built-in scenario seed999/);
  assert.match(shellProblems('cargo run --example nope --features tower')[0], /no example nope/);
  assert.equal(shellProblems('cargo run --release --features sim --bin breakwater-sim -- run hung-llm --svg out/x.svg').length, 0);
});
