// A local fake LLM provider on 127.0.0.1 that answers Anthropic- and OpenAI-shaped requests
// with whatever was cued: 529, 429 with retry-after, 503, 400, 401... then 200s. A request with
// `"stream": true` gets server-sent events in the provider's format (Anthropic Messages, OpenAI
// Chat Completions), and the cue can spoil them: cut mid-answer, stall, an error event inside the
// 200 stream, or a well-formed answer with no content. A cue can also replay a transcript from
// tests/fixtures/llm (any provider's format, on whatever path the SDK calls), then stall with
// keep-alives or hold the response until the client aborts.
import http from 'node:http';
import { anthropic, openai, deltasOf } from '../../js/src/cli/formats.mjs';
import { anthropicText, openaiChatText, responsesText, geminiText, anthropicPrefillRefused400 } from '../fixtures/llm/index.mjs';

// The answers' shapes are those of `breakwater fake-llm` (js/src/cli/formats.mjs); what is fixed
// here is what the tests read: the ids, the models, the text, the token counts.

/** The answer a stream spells out by default, one delta per word; the JSON answers' text too. */
export const STREAM_TEXT = 'hello from the fake provider';
const DELTAS = deltasOf(STREAM_TEXT);

/** Each provider's answer: its id, model and usage (3 tokens in, a token a word out). */
const ANTHROPIC = { id: 'msg_test', model: 'claude-test', text: STREAM_TEXT, inputTokens: 3 };
const OPENAI = { id: 'chatcmpl-test', created: 1_700_000_000, model: 'gpt-test', text: STREAM_TEXT, inputTokens: 3 };
const ANTHROPIC_OK = anthropic.message(ANTHROPIC);
const OPENAI_OK = openai.message(OPENAI);

/** Well-formed answers with no content (the empty answer), in each provider's shape. */
export const emptyAnswers = {
  anthropic: anthropic.message({ ...ANTHROPIC, id: 'msg_empty', text: '' }),
  openai: openai.message({ ...OPENAI, id: 'chatcmpl-empty', text: '' }),
};

export const errors = {
  anthropic: {
    529: anthropic.error(529),
    429: anthropic.error(429, 'Rate limited'),
    503: anthropic.error(503, 'Service unavailable'),
    400: anthropic.error(400, 'max_tokens: required'),
    401: anthropic.error(401),
  },
  openai: {
    429: openai.error(429, 'Rate limit reached'),
    quota: openai.error('quota', 'You exceeded your current quota'),
    503: openai.error(503, 'The server is overloaded'),
    400: openai.error(400, 'Invalid model', { param: 'model' }),
    401: openai.error(401, 'Incorrect API key'),
  },
};

/** Each provider's stream frames: head, delta, tail, error (after n deltas), empty (a whole answer). */
const anthropicEvents = anthropic.stream(ANTHROPIC);
const openaiFrames = openai.stream({ ...OPENAI, includeUsage: true });
const openaiEvents = {
  ...openaiFrames,
  empty: () => openaiFrames.head() + openaiFrames.tail(),
  error: () => openaiFrames.error(errors.openai[503].error.message),
};

/** Writes one streamed answer as `cue` says; resolves when done (or when the socket is gone). */
async function stream(res, events, cue) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...(cue?.headers ?? {}) });
  if (cue?.stall === 'headers') {
    res.flushHeaders();
    return; // headers sent, then nothing (until the client gives up or the server closes)
  }
  if (cue?.empty) return void res.end(events.empty());
  const deltas = cue?.deltas ?? DELTAS;
  // Cut: what was written reaches the client, then the socket closes with the answer unfinished.
  const cut = () => res.write('', () => res.destroy());
  res.write(events.head());
  for (let i = 0; i < deltas.length; i++) {
    if (cue?.errorAfter === i) return void res.end(events.error());
    if (cue?.cutAfter === i) return void cut();
    res.write(events.delta(deltas[i]));
    // Let each delta reach the client as its own read.
    await new Promise((r) => setImmediate(r));
    if (res.destroyed) return;
  }
  if (cue?.errorAfter === deltas.length) return void res.end(events.error());
  if (cue?.cutAfter === deltas.length) return void cut();
  res.end(events.tail());
}

// One SSE event on the wire: the `event:` line if any, one `data:` line per line of data, then a
// blank line; a comment is a `:` line (and a blank line, as OpenRouter sends it).
const sseFrame = (e) =>
  'comment' in e
    ? `:${e.comment}\n\n`
    : (e.event ? `event: ${e.event}\n` : '') + e.data.split('\n').map((line) => `data: ${line}\n`).join('') + '\n';

/** The Anthropic keep-alive a stall repeats unless the cue names another. */
const ANTHROPIC_PING = { event: 'ping', data: '{"type": "ping"}' };

/** Resolves after `ms`, or as soon as the client has gone. */
const pause = (res, ms) =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });

/** Resolves when the client has gone (it aborted, or the server closed the connection). */
const closed = (res) => new Promise((resolve) => (res.destroyed || res.writableFinished ? resolve() : res.once('close', resolve)));

/** Serves one transcript as `cue` says (see `cue` below). */
async function replay(res, cue) {
  const t = cue.transcript;
  res.writeHead(t.status ?? 200, { ...t.headers, ...cue.headers });
  if (!t.events) return void res.end(typeof t.body === 'string' ? t.body : JSON.stringify(t.body));
  res.flushHeaders();
  for (const e of t.events) {
    if (res.destroyed) return;
    if ('delayMs' in e) await pause(res, e.delayMs);
    else res.write(sseFrame(e));
  }
  if (res.destroyed) return;
  // Cut: what was written reaches the client, then the socket closes with the answer unfinished.
  if (t.cut) return void res.write('', () => res.destroy());
  if (cue.stall) {
    const ping = cue.stall.ping ?? ANTHROPIC_PING;
    while (!res.destroyed) {
      if (cue.stall.pingMs == null) return closed(res);
      await pause(res, cue.stall.pingMs);
      if (!res.destroyed) res.write(sseFrame(ping));
    }
    return;
  }
  res.end();
}

/** The answer for a request nobody cued a transcript for, by the API its path names. */
function defaultTranscript(url) {
  if (url.includes('/responses')) return responsesText;
  if (url.includes(':streamGenerateContent')) return geminiText;
  if (url.includes(':generateContent')) {
    return { status: 200, headers: { 'content-type': 'application/json; charset=UTF-8' }, body: geminiText.events.map((e) => JSON.parse(e.data)).at(-1) };
  }
  return undefined;
}

/** The role of a request's last message (Anthropic's and OpenAI's `messages`), if any. */
function lastRole(body) {
  try {
    return JSON.parse(body).messages?.at(-1)?.role;
  } catch {
    return undefined;
  }
}

export async function startFakeProvider() {
  const cues = [];
  const requests = [];
  let hold; // a promise every response waits for, if set
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const request = { method: req.method, url: req.url, headers: req.headers, body, aborted: false };
    requests.push(request);
    // The client went away before the answer was complete (an abort, a time-out).
    res.once('close', () => (request.aborted = !res.writableFinished));
    if (hold) await hold;
    const cue = cues.shift();
    if (res.destroyed) return;
    if (cue?.holdUntilAbort) return closed(res);
    // A model that refuses a prefill (Claude 4.6 and later) when the messages end with the assistant.
    if (cue?.refusePrefill && lastRole(body) === 'assistant') return replay(res, { transcript: anthropicPrefillRefused400 });
    const transcript = cue?.transcript ?? (cue ? undefined : defaultTranscript(req.url));
    if (transcript) return replay(res, { ...cue, transcript });
    const chat = req.url.includes('/chat/completions');
    // Stalled before anything: no status line at all.
    if (cue?.stall === 'silent' || res.destroyed) return;
    const status = cue?.status ?? 200;
    let streamed = false;
    try {
      streamed = JSON.parse(body).stream === true;
    } catch {
      /* not JSON: answered as JSON below */
    }
    if (streamed && status === 200) return stream(res, chat ? openaiEvents : anthropicEvents, cue);
    const payload = cue?.body ?? (chat ? OPENAI_OK : ANTHROPIC_OK);
    res.writeHead(status, { 'content-type': 'application/json', ...(cue?.headers ?? {}) });
    if (cue?.stall === 'headers') return void res.flushHeaders();
    res.end(JSON.stringify(payload));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /**
     * Queue responses: each { status, headers?, body? } answers one request. A streaming request
     * answered 200 takes, besides `headers`: `deltas` (the text pieces; default the words of
     * STREAM_TEXT), `cutAfter: n` (close the socket after n deltas), `errorAfter: n` (an error
     * event after n deltas: Anthropic's `overloaded_error`, OpenAI's `server_error`), `empty: true`
     * (a well-formed answer with no content). Any request: `stall: 'headers'` (headers sent, then
     * nothing) or `stall: 'silent'` (nothing at all).
     *
     * Or replay a transcript from tests/fixtures/llm, whatever the path: `{ transcript }` serves its
     * status, headers (plus the cue's `headers`) and body, or its events in order with their
     * `delayMs` pauses. A stream transcript can then stay open: `stall: { pingMs: 50 }` repeats a
     * keep-alive every 50 ms (Anthropic's `ping` event unless `stall.ping` names another event,
     * e.g. `{ comment: ' OPENROUTER PROCESSING' }`) until the client goes away, and `stall: {}`
     * stays silent. `{ holdUntilAbort: true }` answers nothing until the client aborts.
     * `refusePrefill: true` (with any other cue) answers Anthropic's 400 for a prefill, as Claude
     * 4.6 and later do, when the request's messages end with an assistant message. Each entry
     * of `requests` has `aborted: true` once the connection closed before its answer was complete
     * (the client aborted or timed out, or the transcript was cut).
     * Uncued requests to the Responses and Gemini paths get responsesText and geminiText.
     */
    cue(...items) {
      cues.push(...items);
    },
    /** Make responses wait until the returned function is called. */
    holdResponses() {
      let release;
      hold = new Promise((r) => (release = r));
      return () => {
        hold = undefined;
        release();
      };
    },
    reset() {
      cues.length = 0;
      requests.length = 0;
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
