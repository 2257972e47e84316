// A local fake LLM provider on 127.0.0.1 that answers Anthropic- and OpenAI-shaped requests
// with whatever was cued: 529, 429 with retry-after, 503, 400, 401... then 200s. A request with
// `"stream": true` gets server-sent events in the provider's format (Anthropic Messages, OpenAI
// Chat Completions), and the cue can spoil them: cut mid-answer, stall, an error event inside the
// 200 stream, or a well-formed answer with no content.
import http from 'node:http';

const ANTHROPIC_OK = {
  id: 'msg_test',
  type: 'message',
  role: 'assistant',
  model: 'claude-test',
  content: [{ type: 'text', text: 'hello from the fake provider' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 5 },
};
const OPENAI_OK = {
  id: 'chatcmpl-test',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-test',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the fake provider' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
};

export const errors = {
  anthropic: {
    529: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    429: { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited' } },
    503: { type: 'error', error: { type: 'api_error', message: 'Service unavailable' } },
    400: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: required' } },
    401: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
  },
  openai: {
    429: { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
    quota: { error: { message: 'You exceeded your current quota', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } },
    503: { error: { message: 'The server is overloaded', type: 'server_error', param: null, code: null } },
    400: { error: { message: 'Invalid model', type: 'invalid_request_error', param: 'model', code: null } },
    401: { error: { message: 'Incorrect API key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
  },
};

/** The answer a stream spells out by default, one delta per word. */
export const STREAM_TEXT = 'hello from the fake provider';
const DELTAS = STREAM_TEXT.split(/(?<= )/);

const sse = (event, data) => (event ? `event: ${event}\n` : '') + `data: ${JSON.stringify(data)}\n\n`;

/** Anthropic Messages stream events: [before the first delta, each delta, after the last]. */
const anthropicEvents = {
  head: () =>
    sse('message_start', {
      type: 'message_start',
      message: { ...ANTHROPIC_OK, content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 1 } },
    }) +
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
    sse('ping', { type: 'ping' }),
  delta: (text) => sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
  tail: () =>
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
    sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }) +
    sse('message_stop', { type: 'message_stop' }),
  empty: () =>
    sse('message_start', {
      type: 'message_start',
      message: { ...ANTHROPIC_OK, content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 0 } },
    }) +
    sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } }) +
    sse('message_stop', { type: 'message_stop' }),
  error: () => sse('error', errors.anthropic[529]),
};

const chunk = (delta, finish_reason = null) => ({
  id: OPENAI_OK.id,
  object: 'chat.completion.chunk',
  created: OPENAI_OK.created,
  model: OPENAI_OK.model,
  choices: [{ index: 0, delta, finish_reason }],
});
/** OpenAI Chat Completions stream lines, likewise. */
const openaiEvents = {
  head: () => sse(undefined, chunk({ role: 'assistant', content: '' })),
  delta: (content) => sse(undefined, chunk({ content })),
  tail: () =>
    sse(undefined, chunk({}, 'stop')) +
    sse(undefined, { ...chunk({}), choices: [], usage: OPENAI_OK.usage }) +
    'data: [DONE]\n\n',
  empty: () => openaiEvents.head() + openaiEvents.tail(),
  error: () => sse(undefined, errors.openai[503]),
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

export async function startFakeProvider() {
  const cues = [];
  const requests = [];
  let hold; // a promise every response waits for, if set
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    requests.push({ method: req.method, url: req.url, body });
    if (hold) await hold;
    const cue = cues.shift();
    const openai = req.url.includes('/chat/completions');
    // Stalled before anything: no status line at all.
    if (cue?.stall === 'silent' || res.destroyed) return;
    const status = cue?.status ?? 200;
    let streamed = false;
    try {
      streamed = JSON.parse(body).stream === true;
    } catch {
      /* not JSON: answered as JSON below */
    }
    if (streamed && status === 200) return stream(res, openai ? openaiEvents : anthropicEvents, cue);
    const payload = cue?.body ?? (openai ? OPENAI_OK : ANTHROPIC_OK);
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
