// No function of the package's TypeScript (js/src) is longer than a screen: 80 lines from its
// first line to its closing brace, whatever its form (a declaration, a method, an accessor, an
// arrow function or a function expression). The Rust side has its twin in tests/architecture.rs.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..', '..');
const ts = createRequire(import.meta.url)('typescript');
const MAX_LINES = 80;

/** Every function of `text` longer than `max` lines, as `file:line name (n lines)`. */
function longFunctions(file, text, max) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const long = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > max) long.push(`${file}:${first + 1} ${nameOf(node, source)} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return long;
}

function nameOf(node, source) {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) return parent.name.getText(source);
  return '(anonymous)';
}

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|mjs|js)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

test(`no function in js/src is over ${MAX_LINES} lines`, () => {
  const files = sources(path.join(root, 'js', 'src'));
  assert.ok(files.length > 30, `read ${files.length} files`);
  const long = files.flatMap((f) => longFunctions(path.relative(root, f), readFileSync(f, 'utf8'), MAX_LINES));
  assert.deepEqual(long, [], `split these:\n${long.join('\n')}`);
});

test('the measure finds a long function in every form, and passes a short one', () => {
  const body = (n) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join('\n');
  const text = [
    `function declared() {\n${body(80)}\n}`,
    `const arrow = () => {\n${body(80)}\n};`,
    `class C {\n  method() {\n${body(80)}\n  }\n  get value() {\n${body(10)}\n    return 1;\n  }\n}`,
    `export function fits() {\n${body(78)}\n}`,
  ].join('\n');
  const long = longFunctions('sample.ts', text, MAX_LINES).map((l) => l.replace(/^sample\.ts:\d+ /, ''));
  assert.deepEqual(long, ['declared (82 lines)', 'arrow (82 lines)', 'method (82 lines)']);
});
