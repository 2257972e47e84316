// A local fake LLM provider on 127.0.0.1 that answers Anthropic- and OpenAI-shaped requests
// with whatever was cued: 529, 429 with retry-after, 503, 400, 401... then 200s.
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
    const status = cue?.status ?? 200;
    const payload = cue?.body ?? (openai ? OPENAI_OK : ANTHROPIC_OK);
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', ...(cue?.headers ?? {}) });
    res.end(JSON.stringify(payload));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Queue responses: each { status, headers?, body? } answers one request. */
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
