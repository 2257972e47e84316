// The route-handler example of js/README.md, run as written: its two code blocks are extracted,
// stripped of their types, and driven through the real @anthropic-ai/sdk against a local fake
// provider (the SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transform } from 'esbuild';
import { startFakeProvider, errors } from './fake-provider.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const readme = path.join(here, '../../js/README.md');
let provider;
let dir;
before(async () => {
  provider = await startFakeProvider();
  dir = await fs.mkdtemp(path.join(here, '.readme-'));
});
after(async () => {
  await provider.close();
  await fs.rm(dir, { recursive: true, force: true });
});

async function extract(firstLine) {
  const text = await fs.readFile(readme, 'utf8');
  const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.startsWith(firstLine));
  assert.ok(block, `README has a block starting with ${firstLine}`);
  return (await transform(block, { loader: 'ts', format: 'esm' })).code;
}

test('the README route handler works as written', async () => {
  process.env.ANTHROPIC_BASE_URL = provider.url;
  process.env.ANTHROPIC_API_KEY = 'test-key';
  const lib = path.join(dir, 'llm.mjs');
  await fs.writeFile(lib, await extract('// lib/llm.ts'));
  const route = (await extract('// app/api/agent/route.ts')).replace(/["']@\/lib\/llm["']/, JSON.stringify(pathToFileURL(lib).href));
  const routeFile = path.join(dir, 'route.mjs');
  await fs.writeFile(routeFile, route);
  const routeModule = await import(pathToFileURL(routeFile).href);
  const { POST } = routeModule;
  const { anthropicBreaker } = await import(pathToFileURL(lib).href);
  // A fresh create-next-app 16 app turns on cacheComponents, under which `next build` refuses a
  // route segment's `runtime`: the example must not set one.
  assert.equal(routeModule.runtime, undefined);
  const call = () =>
    POST(new Request('http://app.test/api/agent', { method: 'POST', body: JSON.stringify({ prompt: 'hi' }) }));

  const ok = await call();
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { text: 'hello from the fake provider' });

  // A spent quota is not retried but counts: five of them within the window open the circuit.
  // The users who met them got the route's busy answer, not a bare 500: the fallback answers a
  // failed call as it answers a refused one.
  for (let i = 0; i < 5; i++) {
    provider.cue({ status: 429, body: errors.openai.quota });
    const failed = await call();
    assert.equal(failed.status, 503);
    assert.deepEqual(await failed.json(), { text: 'The assistant is busy, try again shortly.' });
  }
  assert.equal(anthropicBreaker.state, 'OPEN');
  const before = provider.requests.length;
  const busy = await call();
  assert.equal(busy.status, 503);
  assert.deepEqual(await busy.json(), { text: 'The assistant is busy, try again shortly.' });
  assert.equal(provider.requests.length, before, 'the open circuit kept the call from the provider');
});
