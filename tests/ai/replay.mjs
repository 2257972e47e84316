// A provider on 127.0.0.1 that answers each request with the next cued transcript: a streamed
// answer as the provider's API sends it, event by event (each its own write, so each reaches the
// client as its own read). The transcripts below are written after the providers' API references
// and the @ai-sdk providers' own test fixtures (each names its source); the AI SDK providers
// parse them as they parse the real APIs.
import http from 'node:http';

const sse = (event, data) => (event ? `event: ${event}\n` : '') + `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

// Anthropic Messages streaming, https://docs.anthropic.com/en/docs/build-with-claude/streaming
const aStart = (outputTokens = 1) =>
  sse('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_replay',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: outputTokens },
    },
  });
const aBlock = (index, block) => sse('content_block_start', { type: 'content_block_start', index, content_block: block });
const aText = (index, text) => sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
const aJson = (index, partial_json) =>
  sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
const aStop = (index) => sse('content_block_stop', { type: 'content_block_stop', index });
const aEnd = (stop_reason, output_tokens) => [
  sse('message_delta', { type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: { output_tokens } }),
  sse('message_stop', { type: 'message_stop' }),
];

// OpenAI Chat Completions streaming, https://platform.openai.com/docs/api-reference/chat-streaming
const oChunk = (delta, finish_reason = null, extra = {}) =>
  sse(undefined, {
    id: 'chatcmpl-replay',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'gpt-test',
    choices: [{ index: 0, delta, finish_reason }],
    ...extra,
  });
const oUsage = (completion_tokens, reasoning_tokens = 0) =>
  sse(undefined, {
    id: 'chatcmpl-replay',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'gpt-test',
    choices: [],
    usage: { prompt_tokens: 12, completion_tokens, total_tokens: 12 + completion_tokens, completion_tokens_details: { reasoning_tokens } },
  });

// Gemini streamGenerateContent?alt=sse, https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse
const gChunk = (candidate, usage = { promptTokenCount: 12, totalTokenCount: 12 }) =>
  sse(undefined, { candidates: [{ index: 0, ...candidate }], usageMetadata: usage, modelVersion: 'gemini-test' });

const WORDS = ['Hello ', 'from ', 'the ', 'replay.'];
export const REPLAY_TEXT = WORDS.join('');

/** The transcripts, by name: each a list of SSE events. */
export const transcripts = {
  anthropic: {
    ok: () => [aStart(), aBlock(0, { type: 'text', text: '' }), ...WORDS.map((w) => aText(0, w)), aStop(0), ...aEnd('end_turn', 6)],
    // A refusal with no text: stop_reason "refusal" (Claude 4 models; Anthropic's "Handling stop
    // reasons" page, https://docs.anthropic.com/en/api/handling-stop-reasons).
    refusal: () => [aStart(), ...aEnd('refusal', 0)],
    // max_tokens spent before any text (a large `thinking` budget; same page, "max_tokens").
    emptyLength: () => [aStart(), ...aEnd('max_tokens', 1024)],
    // "Text, then tool_use": the streaming page's tool-use example (a text block, then a tool_use
    // block whose input arrives as input_json_delta), here with the input never finished.
    toolUse: () => [
      aStart(),
      aBlock(0, { type: 'text', text: '' }),
      aText(0, 'Let me check '),
      aText(0, 'the weather.'),
      aStop(0),
      aBlock(1, { type: 'tool_use', id: 'toolu_replay', name: 'weather', input: {} }),
      aJson(1, ''),
      aJson(1, '{"city": "San'),
      aJson(1, ' Francisco", "unit'),
      aStop(1),
      ...aEnd('tool_use', 40),
    ],
    // A chunk that fails the provider's validation mid-answer (a delta type it does not know), then
    // a normal end: @ai-sdk/anthropic emits an `error` part for it and streams on (vercel/ai #7417's
    // pattern for OpenAI-compatible providers).
    invalidChunk: () => [
      aStart(),
      aBlock(0, { type: 'text', text: '' }),
      aText(0, 'Hello '),
      sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'future_delta', value: 1 } }),
      aText(0, 'again.'),
      aStop(0),
      ...aEnd('end_turn', 3),
    ],
    // An overloaded_error after the first words (the streaming page's "Error events").
    errorAfterText: () => [
      aStart(),
      aBlock(0, { type: 'text', text: '' }),
      aText(0, 'Hello '),
      aText(0, 'from '),
      sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    ],
  },
  openai: {
    ok: () => [oChunk({ role: 'assistant', content: '' }), ...WORDS.map((w) => oChunk({ content: w })), oChunk({}, 'stop'), oUsage(6), 'data: [DONE]\n\n'],
    // finish_reason "content_filter" with no content (the Chat Completions object reference;
    // Azure OpenAI's content filtering sends it so).
    contentFilter: () => [oChunk({ role: 'assistant', content: '' }), oChunk({}, 'content_filter'), oUsage(0), 'data: [DONE]\n\n'],
    // A reasoning model that spent max_completion_tokens thinking: no content, finish_reason
    // "length" (the reasoning guide, "Allocating space for reasoning").
    emptyLength: () => [oChunk({ role: 'assistant', content: '' }), oChunk({}, 'length'), oUsage(1024, 1024), 'data: [DONE]\n\n'],
  },
  google: {
    ok: () => [
      ...WORDS.slice(0, -1).map((w) => gChunk({ content: { role: 'model', parts: [{ text: w }] } })),
      gChunk({ content: { role: 'model', parts: [{ text: WORDS.at(-1) }] }, finishReason: 'STOP' }, { promptTokenCount: 12, candidatesTokenCount: 6, totalTokenCount: 18 }),
    ],
    // A candidate blocked by the safety filters: finishReason SAFETY, no content, its ratings
    // (the GenerateContentResponse reference, FinishReason.SAFETY and SafetyRating.blocked).
    safety: () => [
      gChunk({
        finishReason: 'SAFETY',
        safetyRatings: [
          { category: 'HARM_CATEGORY_HARASSMENT', probability: 'HIGH', blocked: true },
          { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
        ],
      }),
    ],
  },
};

/**
 * Starts the replay provider. `cue({ events, cutAfter?, pauseAfter?, pauseMs?, stallAfter? })`
 * queues one streamed answer: the events in order; the socket closed after `cutAfter` of them; a
 * wait of `pauseMs` after `pauseAfter` of them; nothing more after `stallAfter` of them (until the
 * client gives up). `cue({ json })` queues a JSON answer (200).
 */
export async function startReplay() {
  const cues = [];
  const requests = [];
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    requests.push({ url: req.url, body });
    const cue = cues.shift() ?? { events: transcripts.anthropic.ok() };
    if (cue.json !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(cue.json));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    for (let i = 0; i < cue.events.length; i++) {
      if (cue.cutAfter === i) return void res.write('', () => res.destroy());
      if (cue.stallAfter === i) return;
      if (cue.pauseAfter === i) await new Promise((r) => setTimeout(r, cue.pauseMs));
      if (res.destroyed) return;
      res.write(cue.events[i]);
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    cue: (...items) => cues.push(...items),
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
