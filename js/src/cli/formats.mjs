// The providers' wire formats, as `breakwater fake-llm` answers them: Anthropic Messages
// (POST /v1/messages) and OpenAI Chat Completions (POST /v1/chat/completions), JSON and
// server-sent events. One codec per shape: the fake (./fake-llm.mjs), the repository's demo
// providers (demo/provider.mjs, demo/hedging.mjs) and the tests' fakes (tests/js/fake-provider.mjs,
// tests/nextjs/*-provider.mjs) build their answers here.
//
// Every answer takes { model, text, inputTokens }, and may fix what is otherwise drawn or counted:
// `id` (else a fresh one), `outputTokens` (else a word each of `text`), and for OpenAI `created`
// (else now). A `text` of '' is the empty answer: no content, 0 output tokens.
//
// The shapes follow the recorded transcripts of tests/fixtures/llm (anthropic.mjs: frames from
// claude-sonnet-4-5; openai-chat.mjs: frames from gpt-4.1-nano), the providers' API references
// (https://docs.anthropic.com/en/api/messages, .../en/api/errors, .../build-with-claude/streaming;
// https://platform.openai.com/docs/api-reference/chat) and what the official SDKs parse.

/** One server-sent event: its `event:` line (Anthropic names each), its data, a blank line. */
export const sseFrame = (event, data) => (event ? `event: ${event}\n` : '') + `data: ${JSON.stringify(data)}\n\n`;

/** The answer's words, one stream delta each ("Hello " "from " ...). */
export const deltasOf = (text) => text.split(/(?<= )/);

/** Ids in each provider's spelling (`msg_…`, `chatcmpl-…`), unique enough for a fake. */
let serial = 0;
const id = (prefix) => `${prefix}${Date.now().toString(36)}${(serial++).toString(36).padStart(4, '0')}`;

/** Tokens, roughly: a word each (at least 1), and 0 for the empty answer. */
const tokens = (text) => (text === '' ? 0 : Math.max(1, text.split(/\s+/).filter(Boolean).length));

/** Anthropic Messages. */
export const anthropic = {
  name: 'anthropic',
  path: '/v1/messages',
  /** The header that carries a response's request id, and one. */
  requestId: () => ['request-id', id('req_')],
  /** The JSON answer (a `Message`); the empty answer's `content` is []. */
  message: ({ model, text, inputTokens = 12, outputTokens = tokens(text), id: messageId = id('msg_') }) => ({
    id: messageId,
    type: 'message',
    role: 'assistant',
    model,
    content: text === '' ? [] : [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens },
  }),
  /**
   * The error body for a status (https://docs.anthropic.com/en/api/errors): 529 `overloaded_error`,
   * 429 `rate_limit_error`, 400 `invalid_request_error`, 401 `authentication_error`, 404
   * `not_found_error`, else `api_error`.
   */
  error: (status, message) => {
    const [type, text] = ANTHROPIC_ERRORS[status] ?? ['api_error', 'Internal server error'];
    return { type: 'error', error: { type, message: message ?? text } };
  },
  /**
   * One stream's frames: `head` (before the first delta: `start`, `blockStart` and a ping),
   * `delta(text)`, `tail` (after the last), `error` (the in-stream error event of the streaming
   * page, an `overloaded_error`), `empty` (a whole stream with no content block: the empty answer).
   * `start` (`message_start`) and `blockStart` (`content_block_start`) alone, for a stream that
   * sends them apart.
   */
  stream: ({ model, text, inputTokens = 12, outputTokens = tokens(text), id: messageId }) => {
    const start = (startTokens = 1) =>
      sseFrame('message_start', {
        type: 'message_start',
        message: { id: messageId ?? id('msg_'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: startTokens } },
      });
    const blockStart = () => sseFrame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const end = (endTokens) =>
      sseFrame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: endTokens } }) +
      sseFrame('message_stop', { type: 'message_stop' });
    return {
      start: () => start(),
      blockStart,
      head: () => start() + blockStart() + sseFrame('ping', { type: 'ping' }),
      delta: (piece) => sseFrame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }),
      tail: () => sseFrame('content_block_stop', { type: 'content_block_stop', index: 0 }) + end(outputTokens),
      error: () => sseFrame('error', anthropic.error(529)),
      empty: () => start(0) + end(0),
    };
  },
};
const ANTHROPIC_ERRORS = {
  400: ['invalid_request_error', 'Invalid request'],
  401: ['authentication_error', 'invalid x-api-key'],
  404: ['not_found_error', 'Not found'],
  429: ['rate_limit_error', 'Number of requests has exceeded your rate limit. Please try again later.'],
  529: ['overloaded_error', 'Overloaded'],
};

/** OpenAI Chat Completions. */
export const openai = {
  name: 'openai',
  path: '/v1/chat/completions',
  requestId: () => ['x-request-id', id('req_')],
  /** The JSON answer (a `chat.completion`). */
  message: ({ model, text, inputTokens = 12, outputTokens = tokens(text), id: messageId = id('chatcmpl-'), created = Math.floor(Date.now() / 1000) }) => ({
    id: messageId,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: openaiUsage(inputTokens, outputTokens),
    system_fingerprint: null,
  }),
  /**
   * The error body for a status (https://platform.openai.com/docs/guides/error-codes): 429
   * `rate_limit_exceeded`, or with `'quota'` for the status its `insufficient_quota`; 503 the
   * overload OpenAI answers ("The engine is currently overloaded"); 400 `invalid_request_error`
   * (`param`: the request's field it names, if any); 401 `invalid_api_key`; 404 not found.
   */
  error: (status, message, { param = null } = {}) => {
    const [type, code, text] = OPENAI_ERRORS[status] ?? ['server_error', null, 'The server had an error while processing your request.'];
    return { error: { message: message ?? text, type, param, code } };
  },
  /**
   * One stream's chunks, likewise (`data: [DONE]` last); `error(message?)` is a chunk with a
   * top-level `error`, which the openai SDK throws. `includeUsage`: a last chunk with no choices
   * and the usage, before `[DONE]` (what `stream_options: { include_usage: true }` asks for).
   */
  stream: ({ model, text = '', inputTokens = 12, outputTokens = tokens(text), id: messageId = id('chatcmpl-'), created = Math.floor(Date.now() / 1000), includeUsage = false }) => {
    const head = { id: messageId, object: 'chat.completion.chunk', created, model, system_fingerprint: null };
    const chunk = (delta, finishReason = null) => sseFrame(undefined, { ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
    const usage = () => (includeUsage ? sseFrame(undefined, { ...head, choices: [], usage: openaiUsage(inputTokens, outputTokens) }) : '');
    return {
      head: () => chunk({ role: 'assistant', content: '', refusal: null }),
      delta: (content) => chunk({ content }),
      tail: () => chunk({}, 'stop') + usage() + 'data: [DONE]\n\n',
      error: (message = 'The server is overloaded, please try again later.') => sseFrame(undefined, openai.error(503, message)),
    };
  },
};
const openaiUsage = (input, output) => ({ prompt_tokens: input, completion_tokens: output, total_tokens: input + output });
const OPENAI_ERRORS = {
  400: ['invalid_request_error', null, 'Invalid request'],
  401: ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided.'],
  404: ['invalid_request_error', 'unknown_url', 'Unknown request URL'],
  429: ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests. Please try again in 1s.'],
  quota: ['insufficient_quota', 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing details.'],
  503: ['server_error', null, 'The engine is currently overloaded, please try again later.'],
};
