// The package's command, `breakwater` (dist/cli.mjs), as a user gets it: the bin of the packed
// package installed here (tests/js/node_modules/.bin/breakwater), spawned as a process.
//   - fake-llm answers the official SDKs (@anthropic-ai/sdk, openai) in every mode, JSON and
//     stream, on the paths with and without /v1 (what @ai-sdk/anthropic and @ai-sdk/openai call
//     is tested with those SDKs in tests/ai/suite.mjs); it listens on 8788 unless told; its mode changes by POST /_fake/mode and on an --outage schedule; GET /_fake
//     counts what it served; it logs one line per request; a wrong flag exits 2 naming it;
//     SIGINT and SIGTERM stop it with exit code 0.
//   - `breakwater try` exits 0 after showing the breaker open and close.
//   - docs/quickstart.md: its script is the one the package ships (and `try` runs), and it runs
//     as written against the fake: open on 529, refused fast with retryAfterMs, closed once
//     healthy; its SDK block, compiled, meets OverloadedError then CircuitOpenError.
// Every process started here is killed in `after`. The only time bound asserted is a lower one
// (slow-first-token's first word cannot come before its delay).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { transform } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(here, 'node_modules/.bin/breakwater');
const PAGE = path.join(here, '../../docs/quickstart.md');
const ASK = { model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
const CHAT = { model: 'gpt-4.1-nano', messages: [{ role: 'user', content: 'hi' }] };
const TEXT = 'Hello from the fake LLM. Nothing was sent to a real provider.';

const children = new Set();
const dirs = [];
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

/** Spawns a command; `exited` resolves to { code, signal }; `out()` / `err()` are its output so far. */
function spawnTracked(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, exited, out: () => stdout, err: () => stderr };
}

/** Resolves once `proc`'s stdout matches `pattern` (its match), rejects if it exits first or after `ms`. */
async function waitFor(proc, pattern, ms = 30_000) {
  const deadline = Date.now() + ms;
  let done = false;
  proc.exited.then(() => (done = true));
  for (;;) {
    const m = pattern.exec(proc.out());
    if (m) return m;
    if (done || Date.now() > deadline) {
      throw new Error(`no ${pattern} in the output${done ? ' (it exited)' : ''}:\n${proc.out()}\n${proc.err()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `breakwater fake-llm --port 0 ...args`, once it listens: { url, proc, mode(m), state(), stop() }. */
async function startFake(...args) {
  const proc = spawnTracked(BIN, ['fake-llm', '--port', '0', ...args]);
  const [, url] = await waitFor(proc, /a fake LLM provider on (http:\/\/127\.0\.0\.1:\d+)/);
  const mode = async (m) => {
    const res = await fetch(`${url}/_fake/mode`, { method: 'POST', body: JSON.stringify({ mode: m }) });
    assert.equal(res.status, 200, await res.clone().text());
    return res.json();
  };
  const state = async () => (await fetch(`${url}/_fake`)).json();
  const stop = async (signal = 'SIGTERM') => {
    proc.child.kill(signal);
    return proc.exited;
  };
  return { url, proc, mode, state, stop };
}

const clients = (url) => ({
  anthropic: new Anthropic({ apiKey: 'fake', baseURL: url, maxRetries: 0 }),
  openai: new OpenAI({ apiKey: 'fake', baseURL: `${url}/v1`, maxRetries: 0 }),
});

/** The error `promise` rejects with (fails if it resolves). */
async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a rejection');
}

/** Reads an SDK stream to its end: the text it carried, and the error it threw, if any. */
async function drain(stream, textOf) {
  let text = '';
  try {
    for await (const event of stream) text += textOf(event) ?? '';
  } catch (error) {
    return { text, error };
  }
  return { text, error: undefined };
}
const anthropicText = (e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '');
const openaiText = (c) => c.choices[0]?.delta?.content ?? '';

test('fake-llm listens on 127.0.0.1, prints how to point the SDKs at it, and answers them (mode ok, JSON and stream)', async () => {
  const fake = await startFake();
  const banner = fake.proc.out();
  // Each SDK's base URL in its own convention: @anthropic-ai/sdk without /v1, the others with it.
  const u = fake.url.replaceAll('.', '\\.');
  assert.match(banner, new RegExp(`@anthropic-ai/sdk +ANTHROPIC_BASE_URL=${u}  or  new Anthropic\\(\\{ baseURL: '${u}'`));
  assert.match(banner, new RegExp(`@ai-sdk/anthropic +ANTHROPIC_BASE_URL=${u}/v1  or  createAnthropic\\(\\{ baseURL: '${u}/v1'`));
  assert.match(banner, new RegExp(`openai +OPENAI_BASE_URL=${u}/v1  or  new OpenAI\\(\\{ baseURL: '${u}/v1'`));
  assert.match(banner, new RegExp(`@ai-sdk/openai +OPENAI_BASE_URL=${u}/v1 .*\\n +with openai\\.chat\\(model\\)`));
  const { anthropic, openai } = clients(fake.url);

  const message = await anthropic.messages.create(ASK);
  assert.equal(message.type, 'message');
  assert.equal(message.model, ASK.model);
  assert.equal(message.stop_reason, 'end_turn');
  assert.deepEqual(message.content, [{ type: 'text', text: TEXT }]);
  const streamed = anthropic.messages.stream(ASK);
  assert.equal(await streamed.finalText(), TEXT);
  assert.equal((await streamed.finalMessage()).stop_reason, 'end_turn');

  const completion = await openai.chat.completions.create(CHAT);
  assert.equal(completion.object, 'chat.completion');
  assert.equal(completion.choices[0].message.content, TEXT);
  assert.equal(completion.choices[0].finish_reason, 'stop');
  const chunks = await drain(await openai.chat.completions.create({ ...CHAT, stream: true }), openaiText);
  assert.deepEqual(chunks, { text: TEXT, error: undefined });
  // The openai SDK's stream helper checks the chunks' shape and assembles the completion.
  const runner = openai.chat.completions.stream(CHAT);
  assert.equal((await runner.finalChatCompletion()).choices[0].message.content, TEXT);

  // One line per request: time, path, mode, status.
  await waitFor(fake.proc, /\d\d:\d\d:\d\d\.\d{3} {2}POST \/v1\/chat\/completions {2}mode ok {2}200 {2}\(stream\)/);
  assert.match(fake.proc.out(), /\d\d:\d\d:\d\d\.\d{3} {2}POST \/v1\/messages {2}mode ok {2}200\n/);
  assert.deepEqual(await fake.stop('SIGINT'), { code: 0, signal: null });
  assert.match(fake.proc.out(), /SIGINT: stopping the fake LLM/);
});

test('fake-llm answers each path without /v1 too: /messages and /chat/completions, for SDKs whose base URL ends in /v1', async () => {
  const fake = await startFake();
  // The official SDKs given the other convention's base URL: openai without /v1 calls /chat/completions.
  const openai = new OpenAI({ apiKey: 'fake', baseURL: fake.url, maxRetries: 0 });
  assert.equal((await openai.chat.completions.create(CHAT)).choices[0].message.content, TEXT);
  const post = (path, body) => fetch(`${fake.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const message = await post('/messages', ASK);
  assert.equal(message.status, 200);
  assert.equal(message.headers.get('content-type'), 'application/json');
  assert.deepEqual((await message.json()).content, [{ type: 'text', text: TEXT }]);
  const streamed = await post('/messages', { ...ASK, stream: true });
  assert.match(streamed.headers.get('content-type'), /^text\/event-stream/);
  assert.match(await streamed.text(), /event: message_stop/);

  await fake.mode('529');
  const overloaded = await post('/messages', ASK);
  assert.equal(overloaded.status, 529);
  assert.equal((await overloaded.json()).error.type, 'overloaded_error');
  const busy = await rejection(openai.chat.completions.create(CHAT));
  assert.equal(busy.status, 503);

  // Anything else: 404 in the provider's error shape, naming the paths it answers.
  const missing = await post('/v1/v1/messages', ASK);
  assert.equal(missing.status, 404);
  assert.match((await missing.json()).error.message, /answers POST \/v1\/messages, \/messages, \/v1\/chat\/completions, \/chat\/completions/);
  const { requests, statuses } = await fake.state();
  assert.deepEqual({ requests, statuses }, { requests: 5, statuses: { 200: 3, 529: 1, 503: 1 } });
  await waitFor(fake.proc, /POST \/chat\/completions {2}mode 529 {2}503/);
  assert.match(fake.proc.out(), /POST \/messages {2}mode ok {2}200 {2}\(stream\)/);
  await fake.stop();
});

test('fake-llm listens on 127.0.0.1:8788 when no --port is given (wrangler dev takes 8787)', async (t) => {
  const proc = spawnTracked(BIN, ['fake-llm']);
  const started = await Promise.race([
    waitFor(proc, /a fake LLM provider on (http:\/\/127\.0\.0\.1:\d+)/).then(([, url]) => url),
    proc.exited.then(() => undefined),
  ]);
  if (started === undefined && /port 8788 is in use/.test(proc.err())) return t.skip('port 8788 is in use on this machine');
  assert.equal(started, 'http://127.0.0.1:8788', proc.err());
  assert.equal((await (await fetch(`${started}/_fake`)).json()).mode, 'ok');
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
});

test('modes 529 and 429: the SDKs throw OverloadedError (529), InternalServerError (503) and RateLimitError with retry-after', async () => {
  const fake = await startFake('--mode', '529');
  const { anthropic, openai } = clients(fake.url);
  const overloaded = await rejection(anthropic.messages.create(ASK));
  assert.ok(overloaded instanceof Anthropic.APIError && overloaded.constructor.name === 'OverloadedError', overloaded.constructor.name);
  assert.equal(overloaded.status, 529);
  assert.equal(overloaded.type, 'overloaded_error');
  const busy = await rejection(openai.chat.completions.create(CHAT));
  assert.ok(busy instanceof OpenAI.InternalServerError);
  assert.equal(busy.status, 503);
  assert.equal(busy.type, 'server_error');

  await fake.mode('429');
  const limited = await rejection(anthropic.messages.create(ASK));
  assert.ok(limited instanceof Anthropic.RateLimitError);
  assert.equal(limited.type, 'rate_limit_error');
  assert.equal(limited.headers.get('retry-after'), '1');
  const openaiLimited = await rejection(openai.chat.completions.create({ ...CHAT, stream: true }));
  assert.ok(openaiLimited instanceof OpenAI.RateLimitError);
  assert.equal(openaiLimited.code, 'rate_limit_exceeded');
  assert.equal(openaiLimited.headers.get('retry-after'), '1');

  const { served, statuses, requests } = await fake.state();
  assert.equal(requests, 4);
  assert.deepEqual({ 529: served['529'], 429: served['429'], ok: served.ok }, { 529: 2, 429: 2, ok: 0 });
  assert.deepEqual(statuses, { 529: 1, 503: 1, 429: 2 });
  assert.deepEqual(await fake.stop('SIGTERM'), { code: 0, signal: null });
  assert.match(fake.proc.out(), /SIGTERM: stopping the fake LLM/);
});

test('mode overloaded-stream: a 200 stream that both SDKs throw on after two words; JSON requests get the overload', async () => {
  const fake = await startFake('--mode', 'overloaded-stream');
  const { anthropic, openai } = clients(fake.url);
  const a = await drain(await anthropic.messages.create({ ...ASK, stream: true }), anthropicText);
  assert.equal(a.text, 'Hello from ');
  assert.ok(a.error instanceof Anthropic.APIError, String(a.error));
  assert.equal(a.error.type, 'overloaded_error');
  const o = await drain(await openai.chat.completions.create({ ...CHAT, stream: true }), openaiText);
  assert.equal(o.text, 'Hello from ');
  assert.ok(o.error instanceof OpenAI.APIError, String(o.error));
  assert.equal(o.error.type, 'server_error');
  assert.equal((await rejection(anthropic.messages.create(ASK))).status, 529);
  await waitFor(fake.proc, /POST \/v1\/messages {2}mode overloaded-stream {2}200 {2}\(stream: error event after 2 words\)/);
  await fake.stop();
});

test('mode hang answers nothing until the client gives up; slow-first-token sends the first word after --delay', async () => {
  const fake = await startFake('--mode', 'hang', '--delay', '400ms');
  const { anthropic, openai } = clients(fake.url);
  const gaveUp = await rejection(anthropic.messages.create(ASK, { timeout: 300 }));
  assert.ok(gaveUp instanceof Anthropic.APIConnectionTimeoutError, String(gaveUp));
  const aborted = await rejection(openai.chat.completions.create(CHAT, { signal: AbortSignal.timeout(300) }));
  assert.ok(aborted instanceof OpenAI.APIUserAbortError || aborted.name === 'TimeoutError', String(aborted));
  await waitFor(fake.proc, /mode hang {2}--- {2}\(no answer; the client gave up\)[\s\S]*mode hang {2}---/);
  assert.deepEqual(await fake.state().then(({ aborted, statuses }) => ({ aborted, statuses })), { aborted: 2, statuses: { none: 2 } });

  await fake.mode('slow-first-token');
  for (const [name, open, textOf] of [
    ['anthropic', () => anthropic.messages.create({ ...ASK, stream: true }), anthropicText],
    ['openai', () => openai.chat.completions.create({ ...CHAT, stream: true }), openaiText],
  ]) {
    const started = Date.now();
    let firstWordAfter;
    let text = '';
    for await (const event of await open()) {
      const piece = textOf(event);
      if (piece && firstWordAfter === undefined) firstWordAfter = Date.now() - started;
      text += piece;
    }
    assert.equal(text, TEXT, name);
    assert.ok(firstWordAfter >= 390, `${name}: first word after ${firstWordAfter} ms, before the 400 ms delay`);
  }
  await fake.stop();
});

test('the mode changes by POST /_fake/mode (an unknown one is refused with 400) and on an --outage schedule', async () => {
  const fake = await startFake('--outage', 'ok:300ms,529:300ms,ok');
  await waitFor(fake.proc, /mode -> ok \(schedule\)\n.*mode -> 529 \(schedule\)\n.*mode -> ok \(schedule\)\n/);
  assert.equal((await fake.state()).schedule, null, 'the schedule is over');
  const refused = await fetch(`${fake.url}/_fake/mode`, { method: 'POST', body: '{"mode":"503"}' });
  assert.equal(refused.status, 400);
  assert.match((await refused.json()).error, /one of ok, 529, 429, overloaded-stream, hang, slow-first-token/);
  await fake.stop();

  // A mode set by hand ends the schedule.
  const scheduled = await startFake('--outage', 'ok:1m,529');
  assert.equal((await scheduled.state()).schedule, '529');
  const now = await scheduled.mode('429');
  assert.equal(now.mode, '429');
  assert.equal(now.schedule, null);
  await waitFor(scheduled.proc, /mode -> 429 \(POST \/_fake\/mode\)/);
  await scheduled.stop();
});

test('a wrong flag or value exits with code 2, naming it, with the usage; a port in use exits 1', async () => {
  const cases = [
    [['--port', '80a'], /invalid --port "80a": expected an integer from 0 to 65535/],
    [['--port', '70000'], /invalid --port "70000"/],
    [['--host', 'example.com'], /invalid --host "example.com": expected an IP address/],
    [['--mode', '503'], /invalid --mode "503": expected one of ok, 529, 429/],
    [['--outage', 'ok:5s,529:soon,ok'], /invalid --outage step "529:soon": "soon": expected a duration/],
    [['--outage', 'ok,529:5s'], /invalid --outage "ok,529:5s": step "ok" should be MODE:DURATION/],
    [['--outage', 'ok:5s,down'], /invalid --outage step "down": expected one of ok, 529/],
    [['--delay', '-1'], /invalid --delay "-1": expected a duration/],
    [['--mode', '529', '--outage', '10s'], /--mode 529 and --outage cannot go together/],
    [['--prot', '1'], /unknown option "--prot" \(options: --port, --host, --mode, --outage, --delay\)/],
    [['--port'], /--port needs a value/],
  ];
  await Promise.all(
    cases.map(async ([args, message]) => {
      const proc = spawnTracked(BIN, ['fake-llm', ...args]);
      const { code } = await proc.exited;
      assert.equal(code, 2, `${args.join(' ')}: ${proc.err()}`);
      assert.match(proc.err(), message);
      assert.match(proc.err(), /^breakwater fake-llm: /);
      assert.match(proc.err(), /Usage: breakwater <command> \[options\]/);
      assert.equal(proc.out(), '', 'nothing started');
    }),
  );
  const unknown = spawnTracked(BIN, ['serve']);
  assert.equal((await unknown.exited).code, 2);
  assert.match(unknown.err(), /unknown command "serve" \(commands: try, fake-llm\)/);
  const help = spawnTracked(BIN, ['fake-llm', '--help']);
  assert.equal((await help.exited).code, 0);
  assert.match(help.out(), /--outage SPEC/);
  assert.match(help.out(), /--port N +the port to listen on \(default 8788; 0 picks a free one\)/);
  assert.match(help.out(), /@ai-sdk\/anthropic +ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:8788\/v1\n/);

  const first = await startFake();
  const port = new URL(first.url).port;
  const second = spawnTracked(BIN, ['fake-llm', '--port', port]);
  assert.equal((await second.exited).code, 1);
  assert.match(second.err(), new RegExp(`port ${port} is in use: stop what uses it, or choose another with --port`));
  await first.stop();
});

test('breakwater try exits 0 after showing the breaker open, refuse calls fast and close by itself', async () => {
  const proc = spawnTracked(BIN, ['try']);
  const { code } = await proc.exited;
  const out = proc.out();
  assert.equal(code, 0, proc.err());
  const at = (line) => out.indexOf(line);
  assert.ok(at('breaker: CLOSED -> OPEN') > 0, out);
  assert.ok(at('breaker: HALF_OPEN -> CLOSED') > at('breaker: CLOSED -> OPEN'), out);
  // What the script counted as sent is what the fake says it received; the rest was refused.
  const [, sent, failed, refused] = /18s CLOSED: (\d+) sent \((\d+) failed\), (\d+) refused fast\n/.exec(out) ?? assert.fail(out);
  const [, received, answered, overloaded] = /The fake LLM received (\d+) requests: (\d+) answered, (\d+) overloaded/.exec(out) ?? assert.fail(out);
  assert.equal(received, sent);
  assert.equal(overloaded, failed);
  assert.equal(Number(answered) + Number(overloaded), Number(received));
  assert.ok(Number(refused) > 0 && Number(sent) + Number(refused) === 180, out);
});

/** The ```ts block of docs/quickstart.md whose first line starts with `first`. */
async function block(first) {
  const page = await fs.readFile(PAGE, 'utf8');
  const found = [...page.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => m[1]).find((b) => b.startsWith(first));
  assert.ok(found, `docs/quickstart.md has a ts block starting with ${first}`);
  return found;
}

test("docs/quickstart.md's script is the one the package ships, and runs as written: open on 529, refused fast, closed once healthy", async () => {
  const script = await block('// quickstart.mjs');
  const require = createRequire(import.meta.url);
  const shipped = await fs.readFile(path.join(path.dirname(require.resolve('breakwater/package.json')), 'dist/quickstart.mjs'), 'utf8');
  assert.equal(script, shipped, 'the page shows the script `breakwater try` runs');

  // Written where `breakwater` resolves to the installed package, as in a user's project.
  const dir = await fs.mkdtemp(path.join(here, '.quickstart-'));
  dirs.push(dir);
  await fs.writeFile(path.join(dir, 'quickstart.mjs'), script);
  const fake = await startFake();
  const run = spawnTracked(process.execPath, ['quickstart.mjs'], { cwd: dir, env: { ...process.env, FAKE_LLM_URL: fake.url, RUN_SECONDS: '60' } });
  await waitFor(run, /^1s CLOSED: 10 sent \(0 failed\), 0 refused fast$/m);
  await fake.mode('529');
  await waitFor(run, /^breaker: CLOSED -> OPEN$/m);
  const [, sent, retryAfter] = await waitFor(run, /^\d+s OPEN: (\d+) sent \(5 failed\), [1-9]\d* refused fast, retry after (\d+) ms$/m);
  assert.ok(Number(retryAfter) > 0 && Number(retryAfter) <= 3000, retryAfter);
  // The refused calls never reached the fake: it received what the script sent (and a probe at most).
  const { requests } = await fake.state();
  assert.ok(requests >= Number(sent) && requests <= Number(sent) + 1, `${requests} received, ${sent} sent`);
  await fake.mode('ok');
  await waitFor(run, /^breaker: HALF_OPEN -> CLOSED$/m);
  assert.match(run.out(), /^breaker: OPEN -> HALF_OPEN$/m);
  run.child.kill('SIGTERM');
  await run.exited;
  await fake.stop();
});

test("docs/quickstart.md's SDK block, compiled: OverloadedError from the fake counts, then CircuitOpenError with retryAfterMs", async () => {
  const code = (await transform(await block('// lib/llm.ts'), { loader: 'ts', format: 'esm' })).code;
  const dir = await fs.mkdtemp(path.join(here, '.quickstart-'));
  dirs.push(dir);
  const file = path.join(dir, 'llm.mjs');
  await fs.writeFile(file, code);
  const fake = await startFake('--mode', '529');
  process.env.ANTHROPIC_BASE_URL = fake.url;
  process.env.ANTHROPIC_API_KEY = 'fake';
  try {
    const { ask, breaker } = await import(pathToFileURL(file).href);
    for (let i = 0; i < 5; i++) {
      const error = await rejection(ask('hi'));
      assert.equal(error.status, 529, String(error));
    }
    assert.equal(breaker.state, 'OPEN');
    const refused = await rejection(ask('hi'));
    assert.equal(refused.name, 'CircuitOpenError');
    assert.ok(refused.retryAfterMs > 25_000 && refused.retryAfterMs <= 30_000, String(refused.retryAfterMs));
    assert.equal((await fake.state()).requests, 5, 'the refused call never reached the fake');
  } finally {
    delete process.env.ANTHROPIC_BASE_URL;
    delete process.env.ANTHROPIC_API_KEY;
    await fake.stop();
  }
});
