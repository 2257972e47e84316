// `breakwater fake-llm`'s server: a local fake LLM provider that answers Anthropic Messages
// (POST /v1/messages) and OpenAI Chat Completions (POST /v1/chat/completions), JSON or a stream
// (`"stream": true`), healthy or failing as its mode says. Each path is answered without its
// `/v1` too (ROUTES), for the SDKs whose base URL carries it. The mode changes while it runs: by
// hand (POST /_fake/mode), or on a schedule (`--outage`). GET /_fake says the mode and what was
// served. The answers' shapes are ./formats.mjs's. Node ≥ 18 (node:http), no dependencies.
import http from 'node:http';
import { anthropic, openai, deltasOf } from './formats.mjs';

/** The modes, each with what it answers (the usage text and the banner print these), in order. */
export const MODES = new Map([
  ['ok', 'answers every request, JSON or stream'],
  ['529', 'overloaded: 529 overloaded_error (Anthropic), 503 (OpenAI has no 529)'],
  ['429', 'rate limited: 429 with retry-after: 1'],
  ['overloaded-stream', 'a 200 stream broken after two words by an overloaded error event'],
  ['hang', 'never answers, until the client gives up'],
  ['slow-first-token', 'the first word after --delay (a JSON answer: all of it after --delay)'],
]);
export const MODE_NAMES = [...MODES.keys()];

/** What an answer says, and the pause between two stream deltas (a stream that looks like one). */
const TEXT = 'Hello from the fake LLM. Nothing was sent to a real provider.';
const DELTA_GAP_MS = 15;
/** The port when none is given: `wrangler dev` takes 8787, so a Worker and the fake run side by side. */
export const DEFAULT_PORT = 8788;
/** The status that answers an overload, by provider (OpenAI has no 529). */
const OVERLOADED = { anthropic: 529, openai: 503 };

/**
 * The provider paths, each with its dialect: the API's own (`/v1/messages`), which the SDKs
 * call whose base URL has no `/v1` (@anthropic-ai/sdk: `${baseURL}/v1/messages`), and the same
 * without `/v1` (`/messages`), which those call whose base URL ends in `/v1` and is given
 * without (@ai-sdk/anthropic: `${baseURL}/messages`; openai and @ai-sdk/openai:
 * `${baseURL}/chat/completions`). Either way of writing a base URL reaches the fake.
 */
export const ROUTES = new Map([anthropic, openai].flatMap((d) => [[d.path, d], [d.path.replace(/^\/v1\//, '/'), d]]));

/**
 * What the usage text and the banner print: for each SDK, its base URL for the fake at `url`, as
 * the environment variable it reads and as its option, and what else it needs.
 */
export const baseUrls = (url) => [
  { sdk: '@anthropic-ai/sdk', variable: `ANTHROPIC_BASE_URL=${url}`, option: `new Anthropic({ baseURL: '${url}', apiKey: 'fake', maxRetries: 0 })` },
  { sdk: '@ai-sdk/anthropic', variable: `ANTHROPIC_BASE_URL=${url}/v1`, option: `createAnthropic({ baseURL: '${url}/v1', apiKey: 'fake' })` },
  { sdk: 'openai', variable: `OPENAI_BASE_URL=${url}/v1`, option: `new OpenAI({ baseURL: '${url}/v1', apiKey: 'fake', maxRetries: 0 })` },
  {
    sdk: '@ai-sdk/openai',
    variable: `OPENAI_BASE_URL=${url}/v1`,
    option: `createOpenAI({ baseURL: '${url}/v1', apiKey: 'fake' })`,
    note: 'with openai.chat(model): the fake has no Responses API',
  },
];

/** A usage error: the CLI prints its message and the usage text, and exits with code 2. */
export class UsageError extends Error {
  name = 'UsageError';
}

/** `mode` when it is one; else a UsageError naming `flag` and the value. */
export function checkMode(mode, flag) {
  if (MODE_NAMES.includes(mode)) return mode;
  throw new UsageError(`invalid ${flag} ${JSON.stringify(mode)}: expected one of ${MODE_NAMES.join(', ')}`);
}

/** Milliseconds from "250ms", "10s", "1.5s", "2m"; a bare number when `bare` names its unit. */
export function parseDuration(text, flag, { bare } = {}) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  const unit = m?.[2] ?? bare;
  const ms = m && unit ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[unit] : NaN;
  if (!Number.isFinite(ms) || ms > 24 * 3_600_000) {
    throw new UsageError(`invalid ${flag} ${JSON.stringify(text)}: expected a duration such as 500ms, 10s or 2m${bare ? ` (a bare number is ${bare})` : ''}, at most 24 h`);
  }
  return Math.round(ms);
}

/**
 * An outage schedule: "10s" (529 for 10 s, then ok) or steps "MODE:DURATION,...", the last of
 * which may have no duration (its mode then stays; otherwise the last mode stays anyway).
 * Returns [{ mode, ms }] (`ms` Infinity for the last step without a duration).
 */
export function parseOutage(spec, flag = '--outage') {
  if (/^[\d.]+(ms|s|m)?$/.test(spec)) return [{ mode: '529', ms: parseDuration(spec, flag) }, { mode: 'ok', ms: Infinity }];
  const parts = spec.split(',');
  return parts.map((part, i) => {
    const [mode, duration, extra] = part.trim().split(':');
    const last = i === parts.length - 1;
    if (extra !== undefined || (duration === undefined && !last) || mode === '') {
      throw new UsageError(`invalid ${flag} ${JSON.stringify(spec)}: step ${JSON.stringify(part)} should be MODE:DURATION (only the last step may omit its duration), e.g. ok:5s,529:20s,ok`);
    }
    checkMode(mode, `${flag} step`);
    return { mode, ms: duration === undefined ? Infinity : parseDuration(duration, `${flag} step ${JSON.stringify(part)}:`) };
  });
}

/** The schedule's steps back in the spelling of --outage. */
const spell = (steps) => steps.map((s) => (s.ms === Infinity ? s.mode : `${s.mode}:${s.ms % 1000 ? `${s.ms}ms` : `${s.ms / 1000}s`}`)).join(',');

/** Resolves after `ms`, or as soon as the client has gone; says whether the client is still there. */
const pause = (res, ms) =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });

/** Resolves when the client has gone (it aborted, or the server closed the connection). */
const gone = (res) => new Promise((resolve) => (res.destroyed ? resolve() : res.once('close', resolve)));

function sendJson(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * Streams an answer: the head, the deltas, the tail; `errorAfter` words in, an error event
 * instead of the rest; `firstAfterMs`, the pause before the first word. Returns a note for the
 * log line, or 'aborted by the client'.
 */
async function stream(res, dialect, headers, { model, errorAfter, firstAfterMs = 0 }) {
  const frames = dialect.stream({ model, text: TEXT });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...headers });
  res.write(frames.head());
  if (firstAfterMs > 0 && !(await pause(res, firstAfterMs))) return 'aborted by the client';
  const deltas = deltasOf(TEXT);
  for (let i = 0; i < deltas.length; i++) {
    if (i === errorAfter) {
      res.end(frames.error());
      return `stream: error event after ${i} words`;
    }
    res.write(frames.delta(deltas[i]));
    if (!(await pause(res, DELTA_GAP_MS))) return 'aborted by the client';
  }
  res.end(frames.tail());
  return 'stream';
}

/**
 * Answers one provider request as `mode` says. Returns `{ status, note }` for the log line
 * (`status` undefined when nothing was answered).
 */
async function answer(res, dialect, mode, { model, streamed, delayMs }) {
  const headers = Object.fromEntries([dialect.requestId()]);
  const overloaded = () => {
    const status = OVERLOADED[dialect.name];
    sendJson(res, status, dialect.error(status), headers);
    return { status };
  };
  switch (mode) {
    case 'ok':
      if (streamed) return { status: 200, note: await stream(res, dialect, headers, { model }) };
      sendJson(res, 200, dialect.message({ model, text: TEXT }), headers);
      return { status: 200 };
    case '529':
      return overloaded();
    case '429':
      sendJson(res, 429, dialect.error(429), { ...headers, 'retry-after': '1' });
      return { status: 429 };
    case 'overloaded-stream':
      if (!streamed) return overloaded();
      return { status: 200, note: await stream(res, dialect, headers, { model, errorAfter: 2 }) };
    case 'hang':
      await gone(res);
      return { status: undefined, note: 'no answer; the client gave up' };
    case 'slow-first-token':
      if (streamed) return { status: 200, note: await stream(res, dialect, headers, { model, firstAfterMs: delayMs }) };
      if (!(await pause(res, delayMs))) return { status: undefined, note: 'aborted by the client' };
      sendJson(res, 200, dialect.message({ model, text: TEXT }), headers);
      return { status: 200 };
  }
  throw new Error(`unreachable: mode ${mode}`);
}

/**
 * The fake's mode, set by hand or by a schedule (parseOutage's steps): `current()`, `set(mode,
 * by)`, `reschedule(steps)` (ends the schedule, if any, and follows `steps` if given), `stop()`
 * (the schedule's timer), and `describe()`: the mode, since when, and what is left of the
 * schedule, as GET /_fake says them.
 */
function modeSchedule(initial, onModeChange) {
  let mode = initial;
  let since = Date.now();
  let steps;
  let timer;
  const set = (next, by) => {
    mode = checkMode(next, 'mode');
    since = Date.now();
    onModeChange({ mode, by });
  };
  const nextStep = () => {
    const step = steps?.shift();
    if (!step) return void (steps = undefined);
    set(step.mode, 'schedule');
    if (step.ms !== Infinity) timer = setTimeout(nextStep, step.ms);
  };
  return {
    current: () => mode,
    set,
    reschedule(next) {
      clearTimeout(timer);
      steps = next && [...next];
      nextStep();
    },
    stop: () => clearTimeout(timer),
    describe: () => ({ mode, since: new Date(since).toISOString(), schedule: steps?.length ? spell(steps) : null }),
  };
}

/** The request's body as text; undefined when the client went away before it was complete. */
async function bodyOf(req) {
  let body = '';
  try {
    for await (const chunk of req) body += chunk;
  } catch {
    return undefined;
  }
  return body;
}

/** The body parsed when it is a JSON object; else undefined. */
function jsonObject(body) {
  let value;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  return value === null || typeof value !== 'object' || Array.isArray(value) ? undefined : value;
}

/**
 * Answers one request: the fake's own routes (GET /_fake, POST /_fake/mode), a provider path as
 * the mode says, or a 404 in the provider's shape. `fake`: startFakeLlm's mode, counts, state,
 * delay and onRequest.
 */
async function handle(fake, req, res) {
  const at = new Date();
  const path = new URL(req.url ?? '/', 'http://fake').pathname;
  const body = await bodyOf(req);
  if (body === undefined) return; // the client went away before its request was complete
  const log = (entry) => fake.onRequest({ at, method: req.method, path, ...entry });

  if (path === '/_fake' && req.method === 'GET') return sendJson(res, 200, fake.state());
  if (path === '/_fake/mode' && req.method === 'POST') return setModeByHand(fake, res, body);

  const dialect = ROUTES.get(path);
  if (!dialect || req.method !== 'POST') {
    const shape = dialect ?? (path.includes('chat/completions') ? openai : anthropic);
    const message = `${req.method} ${path}: the fake answers POST ${[...ROUTES.keys()].join(', ')} (and GET /_fake, POST /_fake/mode)`;
    sendJson(res, 404, shape.error(404, message));
    return log({ mode: '-', status: 404 });
  }
  const request = jsonObject(body);
  if (request === undefined) {
    sendJson(res, 400, dialect.error(400, 'The request body is not a JSON object'));
    return log({ mode: '-', status: 400 });
  }
  log(await serve(fake, res, dialect, request));
}

/** POST /_fake/mode: `{"mode": M}` sets the mode by hand, which ends the schedule. */
function setModeByHand(fake, res, body) {
  let next;
  try {
    next = JSON.parse(body).mode;
  } catch {
    /* answered below */
  }
  if (!MODE_NAMES.includes(next)) {
    return sendJson(res, 400, { error: `expected {"mode": M} with M one of ${MODE_NAMES.join(', ')}; got ${body.slice(0, 200) || 'nothing'}` });
  }
  fake.modes.reschedule(); // a mode set by hand ends the schedule
  fake.modes.set(next, 'POST /_fake/mode');
  return sendJson(res, 200, fake.state());
}

/**
 * Answers a provider request as the current mode says, and counts it: by mode, by status, and
 * whether its client went away first. Returns the log line's `{ mode, status, note }`.
 */
async function serve(fake, res, dialect, request) {
  const { counts } = fake;
  const served = fake.modes.current();
  counts.requests += 1;
  counts.served[served] += 1;
  res.once('close', () => {
    if (!res.writableFinished) counts.aborted += 1;
  });
  const model = typeof request.model === 'string' ? request.model : `${dialect.name}-fake`;
  const outcome = await answer(res, dialect, served, { model, streamed: request.stream === true, delayMs: fake.delayMs });
  const status = outcome.status ?? 'none';
  counts.statuses[status] = (counts.statuses[status] ?? 0) + 1;
  return { mode: served, ...outcome };
}

/** Starts `server` listening; resolves to the URL and the port clients reach it at. */
async function listen(server, port, host) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address().port;
  // Clients reach a server on every interface (0.0.0.0, ::) through the loopback address.
  const reachable = { '0.0.0.0': '127.0.0.1', '::': '::1' }[host] ?? host;
  return { url: `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${bound}`, port: bound };
}

/**
 * Starts the fake provider. Options:
 *   port (default 8788, off wrangler dev's 8787; 0: any free port), host (default 127.0.0.1),
 *   mode (default 'ok'), or schedule: parseOutage's steps, started at once,
 *   delayMs: slow-first-token's delay (default 3000),
 *   onRequest({ at, method, path, mode, status, note }): after each request is over,
 *   onModeChange({ mode, by }): `by` 'schedule' or 'POST /_fake/mode'.
 * Resolves, once it listens, to { url, port, state(), setMode(mode), schedule(steps), close() }.
 */
export async function startFakeLlm(options = {}) {
  const { port = DEFAULT_PORT, host = '127.0.0.1', delayMs = 3000, onRequest = () => {}, onModeChange = () => {} } = options;
  const modes = modeSchedule(checkMode(options.mode ?? 'ok', 'mode'), onModeChange);
  // Requests to the provider paths: by the mode that answered them, by the status answered
  // ('none': no answer), and those whose client went away before the answer was complete.
  const counts = { requests: 0, served: Object.fromEntries(MODE_NAMES.map((m) => [m, 0])), statuses: {}, aborted: 0 };
  const state = () => ({
    ...modes.describe(),
    ...counts,
    served: { ...counts.served },
    statuses: { ...counts.statuses },
  });
  const fake = { modes, counts, state, delayMs, onRequest };
  const server = http.createServer((req, res) => handle(fake, req, res));
  const { url, port: bound } = await listen(server, port, host);
  modes.reschedule(options.schedule);
  return {
    url,
    port: bound,
    state,
    /** Sets the mode now, ending any schedule. */
    setMode: (next) => {
      modes.reschedule();
      modes.set(next, 'setMode');
    },
    /** Follows parseOutage's steps from now on, in place of any schedule. */
    schedule: (next) => modes.reschedule(next),
    close() {
      modes.stop();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
