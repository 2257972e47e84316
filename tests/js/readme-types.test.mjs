// Every ```ts / ```typescript block of README.md, js/README.md and every docs/*.md type-checks
// against the installed package's declarations under strict + exactOptionalPropertyTypes, as an
// app would compile it. A block not meant to compile takes another fence (```sh, ```text...).
//
// Each block is a module of its own (in a temporary folder under tests/js, so `breakwater` is the
// packed package and the root's dev dependencies resolve). A block whose first line is a path
// comment (`// lib/llm.ts`) is written at that path, and `@/…` resolves in its README's folder
// (Next.js' alias). What a block takes as given:
//   - names the package exports (`CircuitBreaker`, `withRetry`…) that it uses without importing:
//     imported for it from the entry that exports them;
//   - the app's own functions and values (`callTheModel`, `prompt`, `env`…): PREAMBLE below,
//     declared in the block's module unless it declares them itself;
//   - a `return` at top level (a function body shown alone): the block is wrapped in a function;
//   - imports of packages not installed here (`ai`, `@ai-sdk/*`, `next/server`…): an ambient
//     module declaring exactly the names it imports, as `any` (listed in the test's output).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import './workerd-module.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const ts = require('typescript');
/** The two READMEs, which must have blocks; and every page of docs/ (one without blocks passes). */
const MAIN_READMES = ['README.md', 'js/README.md'];
const DOCS = (() => {
  try {
    return readdirSync(path.join(here, '../../docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  } catch {
    return [];
  }
})();
const READMES = [...MAIN_READMES, ...DOCS];
const ENTRIES = ['breakwater', 'breakwater/shared', 'breakwater/store', 'breakwater/ai', 'breakwater/prometheus', 'breakwater/otel', 'breakwater/cloudflare'];

/** Diagnostics a block is known to produce, with the reason; the test fails when one goes away. */
const KNOWN = [];

// The app's own functions and values the blocks use, declared in each block that does not declare
// them itself (in the module, so that they shadow the DOM's globals: `prompt`, `request`...).
const PREAMBLE = `declare const prompt: string;
declare const request: Request;
declare const env: { BREAKER: import('breakwater/shared').NamespaceLike };
declare const ctx: { waitUntil(promise: Promise<unknown>): void };
declare const process: { env: Record<string, string | undefined> };
declare const url: string;
declare const init: RequestInit;
declare const headers: Record<string, string>;
declare const ANTHROPIC_URL: string;
declare const PRIMARY_MODEL: string;
declare const BACKUP_MODEL: string;
declare const client: { messages: { create(params: object, options?: { signal?: AbortSignal | undefined }): Promise<{ content: unknown[] }> } };
declare const openai: { chat: { completions: { create(...args: unknown[]): Promise<unknown> } } };
declare const statsd: { gauge(name: string, value: number): void };
declare const anthropicBreaker: import('breakwater').CircuitBreaker;
declare const breakers: import('breakwater').BreakerRegistry;
declare const registry: import('breakwater').BreakerRegistry;
declare const metrics: import('breakwater/prometheus').PrometheusMetrics;
declare function callTheModel(prompt?: string): Promise<string>;
declare function callProvider(prompt: string): Promise<string>;
declare function getFallbackResponse(prompt: string): string;
declare function ask(model: string, prompt: string, signal?: AbortSignal): Promise<string>;
declare function bodyFor(prompt: string): string;
declare function fn(): Promise<unknown>;
declare function streamMessage(model: string, prompt: string, signal?: AbortSignal): Promise<Response>;
declare function textDeltaEvent(text: string): Uint8Array;
declare function textOfEvents(): TransformStream<Uint8Array, Uint8Array>;
`;

// A block written for a Worker (it imports 'cloudflare:workers' or names `ExportedHandler`)
// compiles as a Worker's TypeScript does: the runtime's types (@cloudflare/workers-types) instead
// of the DOM's, and the `Env` that `npx wrangler types` generates for the README's wrangler.toml.
const isWorker = (code) => /from 'cloudflare:workers'|\bExportedHandler\b/.test(code);
const WORKERS_TYPES = require.resolve('@cloudflare/workers-types/index.d.ts');
const WORKER_ENV = `declare namespace Cloudflare {
  interface Env {
    BREAKER: DurableObjectNamespace<import('breakwater/cloudflare').BreakerObject>;
    ADMIN_TOKEN?: string;
    SERVICE_TOKEN?: string;
  }
}
interface Env extends Cloudflare.Env {}
`;

const OPTIONS = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  skipLibCheck: true,
  types: [],
};

let dir;
const exported = new Map(); // name -> entry
before(async () => {
  dir = await fs.mkdtemp(path.join(here, '.readme-types-'));
  for (const entry of ENTRIES) {
    for (const name of Object.keys(await import(entry))) if (!exported.has(name)) exported.set(name, entry);
  }
});
after(() => fs.rm(dir, { recursive: true, force: true }));

/** The blocks of a README: `{ line, code, file }` (`file`: its path comment, if any). */
async function blocks(readme) {
  const text = await fs.readFile(path.join(here, '../..', readme), 'utf8');
  const out = [];
  for (const m of text.matchAll(/^```(?:ts|typescript)(?:[ \t][^\n]*)?\n([\s\S]*?)^```/gm)) {
    const line = text.slice(0, m.index).split('\n').length;
    const first = /^\/\/ ((?:[\w.-]+\/)*[\w.-]+\.tsx?)\b/.exec(m[1]);
    out.push({ line, code: m[1], file: first?.[1] });
  }
  return out;
}

function resolvable(specifier, from) {
  if (specifier.startsWith('.') || specifier.startsWith('@/') || specifier.startsWith('cloudflare:')) return true;
  try {
    createRequire(from).resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

/** Rewrites a block until it stands alone: imports of the package's names, a wrapper, stubs. */
function prepare(code, file, { missing, wrap }) {
  const sf = ts.createSourceFile(file, code, ts.ScriptTarget.ES2022, true);
  const imports = sf.statements.filter(ts.isImportDeclaration);
  const body = sf.statements.filter((s) => !ts.isImportDeclaration(s)).map((s) => code.slice(s.getFullStart(), s.end)).join('');
  const head = imports.map((s) => code.slice(s.getFullStart(), s.end).trim()).join('\n');
  const byEntry = new Map();
  for (const name of missing) {
    const entry = exported.get(name);
    byEntry.set(entry, [...(byEntry.get(entry) ?? []), name]);
  }
  const added = [...byEntry].map(([entry, names]) => `import { ${names.join(', ')} } from '${entry}';`).join('\n');
  const main = wrap ? `export async function block() {\n${body}\n}` : body;
  const own = declared(sf);
  const given = PREAMBLE.split('\n').filter((l) => {
    const name = /^declare (?:const|function) ([\w$]+)/.exec(l)?.[1];
    return name !== undefined && !own.has(name) && !missing.has(name);
  });
  return `${head}\n${added}\n${given.join('\n')}\n${main}\nexport {};\n`;
}

/** The names a block declares at its top level (imports included). */
function declared(sf) {
  const names = new Set();
  for (const s of sf.statements) {
    if (ts.isImportDeclaration(s)) {
      const c = s.importClause;
      if (c?.name) names.add(c.name.text);
      const b = c?.namedBindings;
      if (b && ts.isNamespaceImport(b)) names.add(b.name.text);
      if (b && ts.isNamedImports(b)) for (const e of b.elements) names.add(e.name.text);
    } else if (ts.isVariableStatement(s)) {
      for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) names.add(d.name.text);
    } else if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) && s.name) {
      names.add(s.name.text);
    }
  }
  return names;
}

/** Ambient modules for the imports that do not resolve here: exactly the names imported. */
function stubs(files) {
  const modules = new Map();
  for (const [file, code] of files) {
    const sf = ts.createSourceFile(file, code, ts.ScriptTarget.ES2022, true);
    for (const s of sf.statements) {
      if (!ts.isImportDeclaration(s)) continue;
      const spec = s.moduleSpecifier.text;
      if (resolvable(spec, file)) continue;
      const names = modules.get(spec) ?? new Set();
      const clause = s.importClause;
      if (clause?.name) names.add('default');
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings)) for (const e of bindings.elements) names.add((e.propertyName ?? e.name).text);
      if (bindings && ts.isNamespaceImport(bindings)) names.add('*');
      modules.set(spec, names);
    }
  }
  const text = [...modules]
    .map(([spec, names]) => {
      const lines = [...names].map((n) =>
        n === 'default' ? '  const _default: any;\n  export default _default;' : n === '*' ? '' : `  export const ${n}: any;\n  export type ${n} = any;`,
      );
      return `declare module '${spec}' {\n${lines.join('\n')}\n}`;
    })
    .join('\n');
  return { text, modules: [...modules.keys()] };
}

for (const readme of READMES) {
  test(`the TypeScript blocks of ${readme} type-check against the package (strict, exactOptionalPropertyTypes)`, async (t) => {
    const root = path.join(dir, readme.replace(/[/.]/g, '-'));
    const found = await blocks(readme);
    if (MAIN_READMES.includes(readme)) assert.ok(found.length > 0, `${readme} has TypeScript blocks`);
    else if (found.length === 0) return t.diagnostic(`${readme} has no TypeScript blocks`);
    const used = new Set();
    const names = found.map((b) => {
      let f = b.file ?? `block-${b.line}.ts`;
      if (used.has(f)) f = `block-${b.line}.ts`;
      used.add(f);
      return path.join(root, f);
    });
    const state = found.map(() => ({ missing: new Set(), wrap: false }));
    let diagnostics = [];
    let stubbed = [];
    for (let pass = 0; pass < 3; pass++) {
      const files = new Map(found.map((b, i) => [names[i], prepare(b.code, names[i], state[i])]));
      const s = stubs(files);
      stubbed = s.modules;
      await fs.rm(root, { recursive: true, force: true });
      for (const [file, code] of files) {
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(file, code);
      }
      await fs.writeFile(path.join(root, 'stubs.d.ts'), `${s.text}\n`);
      await fs.writeFile(path.join(root, 'worker-env.d.ts'), WORKER_ENV);
      const web = [...files.keys()].filter((f) => !isWorker(files.get(f)));
      const workers = [...files.keys()].filter((f) => isWorker(files.get(f)));
      const compile = (roots, options) =>
        roots.length === 0
          ? []
          : ts.getPreEmitDiagnostics(ts.createProgram(roots, { ...options, baseUrl: root, paths: { '@/*': ['./*'] } }));
      diagnostics = [
        ...compile([...web, path.join(root, 'stubs.d.ts')], OPTIONS),
        ...compile([...workers, path.join(root, 'stubs.d.ts'), path.join(root, 'worker-env.d.ts'), WORKERS_TYPES], {
          ...OPTIONS,
          lib: ['lib.es2022.d.ts'],
        }),
      ].filter((d) => d.file && names.includes(d.file.fileName));
      let changed = false;
      for (const d of diagnostics) {
        const i = names.indexOf(d.file.fileName);
        const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        const name = /^Cannot find name '([\w$]+)'/.exec(message)?.[1];
        if ((d.code === 2304 || d.code === 2552) && name && exported.has(name) && !state[i].missing.has(name)) {
          state[i].missing.add(name);
          changed = true;
        } else if (d.code === 1108 && !state[i].wrap) {
          state[i].wrap = true;
          changed = true;
        }
      }
      if (!changed) break;
    }
    if (stubbed.length) t.diagnostic(`not installed here, stubbed with the names imported: ${stubbed.join(', ')}`);
    const known = KNOWN.filter((k) => k.file === readme);
    const report = [];
    const seen = new Set();
    for (const d of diagnostics) {
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      const k = known.find((k) => k.code === d.code && k.text.test(message));
      if (k) {
        seen.add(k);
        t.diagnostic(`known: ${k.reason}`);
        continue;
      }
      const i = names.indexOf(d.file.fileName);
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const hint = d.code === 2304 || d.code === 2552 ? ' (the app\'s own? declare it in PREAMBLE, tests/js/readme-types.test.mjs)' : '';
      report.push(`${readme}, block at line ${found[i].line} (${path.relative(root, names[i])}:${line + 1}): TS${d.code} ${message}${hint}\n    ${d.file.text.split('\n')[line]}`);
    }
    for (const k of known) if (!seen.has(k)) report.push(`fixed, remove it from KNOWN: ${k.reason}`);
    assert.equal(report.length, 0, report.join('\n'));
  });
}
