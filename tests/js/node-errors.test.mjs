// An uncaught error thrown by the package in Node stays readable: Node prints the source line of
// the throw site before the error, and the package's code is minified, with the Node entries'
// .wasm inlined as base64. That line must be a short line of code, never the base64 (once ~370 KB
// printed ahead of a `breakwater/shared` error) nor a whole minified bundle. Each case runs an
// app script in a child process, ESM and CommonJS, against the installed package; the error is
// thrown from the entry's code module (api.*, shared-api.*: the code each runtime's entry loads).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = path.dirname(require.resolve('breakwater/package.json'));
const LIMIT = 4096;

const CASES = [
  {
    entry: 'breakwater',
    name: 'CircuitBreaker',
    call: "new CircuitBreaker('x', { resetTimout: 1 });",
    message: 'unknown option "resetTimout" in CircuitBreaker options',
    files: { esm: 'dist/api.mjs', cjs: 'dist/api.cjs' },
  },
  {
    entry: 'breakwater/shared',
    name: 'SharedCircuitBreaker',
    call: "new SharedCircuitBreaker('x', {});",
    message: '`shared` must be a Durable Object namespace binding',
    files: { esm: 'dist/shared-api.mjs', cjs: 'dist/shared-api.cjs' },
  },
];

for (const { entry, name, call, message, files } of CASES) {
  for (const format of ['esm', 'cjs']) {
    test(`an uncaught error from ${entry} (${format}) prints under ${LIMIT} bytes and names the problem`, (t) => {
      // Inside node_modules (as size.test does), where `breakwater` resolves as in an app.
      const dir = fs.mkdtempSync(path.join(root, '..', '.errors-'));
      try {
        const script = path.join(dir, format === 'esm' ? 'app.mjs' : 'app.cjs');
        const load = format === 'esm' ? `import { ${name} } from '${entry}';` : `const { ${name} } = require('${entry}');`;
        fs.writeFileSync(script, `${load}\n${call}\n`);
        const { status, stderr } = spawnSync(process.execPath, [script], { encoding: 'utf8' });
        t.diagnostic(`${Buffer.byteLength(stderr)} bytes on stderr`);
        assert.notEqual(status, 0, 'the script fails');
        assert.ok(stderr.includes(message), `stderr names the error:\n${stderr.slice(0, 2000)}`);
        assert.ok(stderr.includes(path.join(root, files[format])), `thrown from ${files[format]}:\n${stderr.slice(0, 2000)}`);
        assert.ok(Buffer.byteLength(stderr) < LIMIT, `${Buffer.byteLength(stderr)} bytes on stderr:\n${stderr.slice(0, 1000)}…`);
        assert.doesNotMatch(stderr, /[A-Za-z0-9+/]{200}/, 'no base64 on stderr');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
}
