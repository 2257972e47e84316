// The stream transcripts that carry `expect` (tests/fixtures/llm: images, server tools,
// compaction, pause_turn, refusals, long thinking, tool input after silence, an empty role chunk,
// a reset, a malformed frame, keep-alives only), each replayed by the fake provider through
// `breaker.stream` as a new user would call it: raw `fetch`, and the official SDK's stream
// object. Each reaches the outcome the corpus documents (the same table as tests/stream_corpus.rs
// for the core and tests/stream_guard.rs for the Rust services): before the first word a
// failure rejects (so `retry` and fallbacks apply); a refusal is the app's to read, not counted;
// an answer cut after content is counted a failure; anything else answered is a success.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'breakwater';
import { corpus, documented } from '../fixtures/llm/index.mjs';
import { useSdkClients, ASK, CHAT } from './sdk-clients.mjs';

let provider, anthropic, openai, gemini;
useSdkClients((c) => ({ provider, anthropic, openai, gemini } = c));

const PATHS = {
  anthropic: '/v1/messages',
  'openai-chat': '/v1/chat/completions',
  'openai-responses': '/v1/responses',
  gemini: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
};

/** The official SDK's stream object for a provider's API. */
const SDK = {
  anthropic: (signal) => anthropic.messages.create({ ...ASK, stream: true }, { signal }),
  'openai-chat': (signal) => openai.chat.completions.create({ ...CHAT, stream: true }, { signal }),
  'openai-responses': (signal) => openai.responses.create({ model: 'gpt-5-nano', input: 'hi', stream: true }, { signal }),
  gemini: (signal) => gemini.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi', config: { abortSignal: signal } }),
};

/** Runs one guarded stream to its end: how it went, and what the breaker counted. */
async function run(call) {
  const breaker = new CircuitBreaker('corpus');
  let got;
  try {
    const stream = await breaker.stream(call);
    const reader = stream.getReader();
    try {
      for (;;) if ((await reader.read()).done) break;
      got = 'read';
    } catch {
      got = 'cut';
    }
  } catch {
    got = 'fail';
  }
  // The guard settles when the provider's stream ends; give a cut's report its turn.
  await new Promise((r) => setTimeout(r, 5));
  const { successes, failures, ignored } = breaker.stats;
  return { got, successes, failures, ignored };
}

/** What the documented outcome looks like to the app and to the breaker. */
const WANT = {
  fail: { got: 'fail', successes: 0, failures: 1, ignored: 0 },
  cut: { got: 'cut', successes: 0, failures: 1, ignored: 0 },
  ignored: { got: 'read', successes: 0, failures: 0, ignored: 1 },
  success: { got: 'read', successes: 1, failures: 0, ignored: 0 },
};

const withExpect = Object.entries(corpus).flatMap(([api, ts]) =>
  Object.entries(ts)
    .filter(([, t]) => t.expect)
    .map(([name, t]) => ({ api, name, t })),
);

test('the corpus has the situations of the stream guard', () => {
  assert.ok(withExpect.length >= 19, `${withExpect.length} transcripts with expect`);
});

for (const { api, name, t } of withExpect) {
  test(`${name} through raw fetch: ${documented(t)}`, async () => {
    provider.cue({ transcript: t });
    const r = await run(({ signal }) => fetch(provider.url + PATHS[api], { method: 'POST', body: '{}', signal }));
    assert.deepEqual(r, WANT[documented(t)]);
  });

  test(`${name} through the official SDK's stream: ${documented(t)}`, async () => {
    provider.cue({ transcript: t });
    const r = await run(({ signal }) => SDK[api](signal));
    assert.deepEqual(r, WANT[documented(t)]);
  });
}
