// The package's TypeScript types of the shared protocol's messages (`Exchange`, `Reply` of
// breakwater/shared, what a hand-written `SharedTransport` receives and answers) against the
// messages the core writes (tests/conformance/messages.json, which tests/messages.rs keeps equal
// to the core's output, every field and every value of every code present). Both ways:
//   - every message type-checks as its type, in strict mode with exactOptionalPropertyTypes (an
//     object literal: a field the type lacks is an error, and so is one it requires and the
//     message leaves out);
//   - every property the types declare, and every string literal they allow, occurs in the
//     messages (no field or value the core never sends).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const ts = require('typescript');
const file = JSON.parse(fs.readFileSync(path.join(here, '../conformance/messages.json'), 'utf8'));
const exchanges = file.exchanges.map((t) => JSON.parse(t));
const replies = file.replies.map((t) => JSON.parse(t));

const OPTIONS = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  types: [],
};

/** Compiles `code` in a folder under tests/js (so `breakwater` is the packed package); the program and its file. */
function compile(code) {
  const dir = fs.mkdtempSync(path.join(here, '.wire-'));
  const app = path.join(dir, 'check.ts');
  fs.writeFileSync(app, code);
  try {
    const program = ts.createProgram([app], OPTIONS);
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    return { program, source: program.getSourceFile(app), diagnostics };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const CODE = [
  "import type { Exchange, Reply } from 'breakwater/shared';",
  ...exchanges.map((m, i) => `export const exchange${i}: Exchange = ${JSON.stringify(m)};`),
  ...replies.map((m, i) => `export const reply${i}: Reply = ${JSON.stringify(m)};`),
  'export declare const types: [Exchange, Reply];',
].join('\n');

test('every message the core writes type-checks as its TypeScript type', () => {
  const { diagnostics } = compile(CODE);
  assert.deepEqual(diagnostics, []);
});

test('the check sees a field the type lacks, and one the message leaves out', () => {
  // The same program with one message changed each way: both must be refused.
  const extra = CODE.replace('"lease_ms":1000', '"lease_ms":1000,"surprise":1');
  const missing = CODE.replace('"acked":[]', '"ackd":[]');
  assert.notEqual(extra, CODE);
  assert.notEqual(missing, CODE);
  assert.ok(compile(extra).diagnostics.some((d) => d.includes('surprise')));
  assert.ok(compile(missing).diagnostics.some((d) => d.includes('ackd') || d.includes('acked')));
});

/**
 * Every property path (`lease.state`; arrays are transparent), and per path every string literal
 * it allows, in a type (recursively).
 */
function declared(checker, type, at = '', names = new Set(), literals = new Map(), depth = 0) {
  if (depth > 6) return { names, literals };
  for (const t of type.isUnion() ? type.types : [type]) {
    if (checker.isArrayType(t)) {
      declared(checker, checker.getTypeArguments(t)[0], at, names, literals, depth + 1);
      continue;
    }
    if (!(t.flags & ts.TypeFlags.Object)) continue;
    for (const p of checker.getPropertiesOfType(t)) {
      const path = at + p.name;
      names.add(path);
      const pt = checker.getNonNullableType(checker.getTypeOfSymbol(p));
      for (const u of pt.isUnion() ? pt.types : [pt]) {
        if (u.isStringLiteral()) literals.set(path, new Set([...(literals.get(path) ?? []), u.value]));
      }
      declared(checker, pt, `${path}.`, names, literals, depth + 1);
    }
  }
  return { names, literals };
}

/** Every key path in the messages, and per path every string value. */
function sent(messages) {
  const keys = new Set();
  const values = new Map();
  const walk = (v, at) => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, at));
    if (v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      const path = at + k;
      keys.add(path);
      if (typeof x === 'string') values.set(path, new Set([...(values.get(path) ?? []), x]));
      walk(x, `${path}.`);
    }
  };
  walk(messages, '');
  return { keys, values };
}

test('every field and every value the types declare is one the core sends', () => {
  const { program, source } = compile(CODE);
  const checker = program.getTypeChecker();
  const decl = source.statements.find((s) => ts.isVariableStatement(s) && s.declarationList.declarations[0].name.text === 'types');
  const tuple = checker.getTypeAtLocation(decl.declarationList.declarations[0].name);
  const [exchangeType, replyType] = checker.getTypeArguments(tuple);
  for (const [type, messages, what] of [
    [exchangeType, exchanges, 'Exchange'],
    [replyType, replies, 'Reply'],
  ]) {
    const { names, literals } = declared(checker, type);
    const { keys, values } = sent(messages);
    assert.ok(names.size > 3, `${what}: ${[...names]}`);
    assert.deepEqual([...names].filter((n) => !keys.has(n)), [], `${what} declares fields the core never sends`);
    assert.deepEqual([...keys].filter((k) => !names.has(k)), [], `the core sends fields ${what} lacks`);
    for (const [name, allowed] of literals) {
      assert.deepEqual([...allowed].filter((v) => !values.get(name)?.has(v)).sort(), [], `${what}.${name} allows values the core never sends`);
      assert.deepEqual([...(values.get(name) ?? [])].filter((v) => !allowed.has(v)).sort(), [], `the core sends values of ${name} that ${what} does not allow`);
    }
  }
});
