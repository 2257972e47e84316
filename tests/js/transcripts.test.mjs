// The transcript corpus (tests/fixtures/llm) through the official SDKs, against the fake provider:
// what each SDK parses out of each transcript is what the provider would have meant. These tests
// check the fixtures (and the fake provider's replay), not breakwater.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { classifyError } from 'breakwater';
import OpenAI from 'openai';
import { corpus } from '../fixtures/llm/index.mjs';
import { useSdkClients, ASK, CHAT } from './sdk-clients.mjs';

let provider, anthropic, openai, gemini;
useSdkClients((c) => ({ provider, anthropic, openai, gemini } = c));


/** Every event the SDK's stream yields, and the error it threw, if any. */
async function drain(stream) {
  const events = [];
  try {
    for await (const e of await stream) events.push(e);
    return { events };
  } catch (error) {
    return { events, error };
  }
}
const anthropicStream = (t) => (provider.cue({ transcript: t }), drain(anthropic.messages.create({ ...ASK, stream: true })));
const chatStream = (t) => (provider.cue({ transcript: t }), drain(openai.chat.completions.create({ ...CHAT, stream: true })));
const responsesStream = (t) => (provider.cue({ transcript: t }), drain(openai.responses.create({ model: 'gpt-5-nano', input: 'hi', stream: true })));
const geminiStream = (t) => (provider.cue({ transcript: t }), drain(gemini.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hi' })));
const anthropicText = (events) => events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'text_delta').map((e) => e.delta.text).join('');
const chatText = (events) => events.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
const responsesText = (events) => events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
const geminiTextOf = (chunks) => chunks.map((c) => c.text ?? '').join('');
/** The error a non-streaming call rejects with. */
const rejection = (t, call) => (provider.cue({ transcript: t }), call().then(() => assert.fail('the call resolved'), (e) => e));
const ask = () => anthropic.messages.create(ASK);
const chat = () => openai.chat.completions.create(CHAT);
const generate = () => gemini.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });

// What each transcript must parse to, by name. Every transcript of the corpus needs an entry.
const checks = {
  // ---- Anthropic ----
  async anthropicText(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.content[0].text, "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    assert.equal(provider.requests.at(-1).url, '/v1/messages');
  },
  async anthropicRefusal(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'refusal');
    assert.deepEqual(message.content, []);
  },
  async anthropicRefusalAfterText(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'refusal');
    assert.equal(message.content[0].text, 'Hello! I');
  },
  async anthropicMaxTokensNoText(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'max_tokens');
    assert.deepEqual(message.content.map((b) => b.type), ['thinking']);
  },
  async anthropicToolUseCutMidInput(t) {
    const { events, error } = await anthropicStream(t);
    assert.equal(anthropicText(events), "Okay, let's check the weather for San Francisco, CA:");
    const inputs = events.filter((e) => e.delta?.type === 'input_json_delta').map((e) => e.delta.partial_json);
    assert.equal(inputs.join(''), '{"location":', 'the tool input stops mid-object');
    assert.equal(events.at(-1).type, 'content_block_delta', 'no content_block_stop or message_stop after the cut');
    assert.ok(error, 'the SDK reports the cut');
  },
  async anthropicOverloadedBeforeText(t) {
    const { events, error } = await anthropicStream(t);
    assert.deepEqual(events.map((e) => e.type), ['message_start']);
    assert.ok(error instanceof Anthropic.APIError, `an APIError, not ${error}`);
    assert.equal(error.error.error.type, 'overloaded_error');
  },
  async anthropicOverloadedAfterText(t) {
    const { events, error } = await anthropicStream(t);
    assert.equal(anthropicText(events), 'Hello! I');
    assert.ok(error instanceof Anthropic.APIError);
    assert.equal(error.error.error.type, 'overloaded_error');
  },
  async anthropicPingsDuringStall(t) {
    // The SDK consumes `ping` events without yielding them, so the pings are counted on the wire.
    provider.cue({ transcript: t });
    const raw = await (await fetch(`${provider.url}/v1/messages`, { method: 'POST', body: '{"stream":true}' })).text();
    assert.equal(raw.split('event: ping\ndata: {"type":"ping"}\n\n').length - 1, 9, 'the first ping and eight during the stall');
    const started = Date.now();
    const { events, error } = await anthropicStream(t);
    assert.equal(error, undefined);
    assert.ok(Date.now() - started >= 350, 'the pings came with their delays');
    assert.equal(anthropicText(events), "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    assert.equal(events.at(-1).type, 'message_stop');
  },
  async anthropicCitationRejectedBySdk6(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.content[0].citations[0].type, 'content_block_location', 'the official SDK knows the citation type');
    assert.match(message.content[0].text, /^Hello! I'm doing well/);
  },
  async anthropicRateLimit429(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.RateLimitError);
    assert.equal(err.status, 429);
    assert.equal(err.error.error.type, 'rate_limit_error');
    assert.equal(err.headers.get('retry-after'), '12');
    assert.equal(err.headers.get('anthropic-ratelimit-requests-remaining'), '0');
    assert.equal(err.requestID, 'req_011CSHoEeqs5C35K2UUqR7Fy');
  },
  async anthropicOverloaded529(t) {
    const err = await rejection(t, ask);
    assert.equal(err.constructor.name, 'OverloadedError');
    assert.equal(err.status, 529);
    assert.equal(err.error.error.type, 'overloaded_error');
  },
  async anthropicSpendCap429(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.RateLimitError);
    assert.equal(err.error.error.details.error_code, 'enforced_spend_limit_reached');
    assert.equal(err.headers.get('retry-after'), null, 'no retry-after on a spend cap');
  },
  async anthropicSpendLimit400(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.BadRequestError);
    assert.equal(err.error.error.type, 'invalid_request_error');
    assert.match(err.error.error.message, /^You have reached your specified API usage limits/);
  },
  async anthropicCreditBalance400(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.BadRequestError);
    assert.match(err.error.error.message, /credit balance is too low/);
  },
  async anthropicBilling402(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.APIError);
    assert.equal(err.status, 402);
    assert.equal(err.error.error.type, 'billing_error');
  },
  async anthropicConflict409(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.ConflictError);
    assert.equal(err.error.error.type, 'conflict_error');
  },
  async anthropicPromptTooLong400(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.BadRequestError);
    assert.match(err.error.error.message, /^prompt is too long: \d+ tokens > \d+ maximum$/);
  },

  async anthropicPrefillRefused400(t) {
    const err = await rejection(t, ask);
    assert.ok(err instanceof Anthropic.BadRequestError);
    assert.equal(err.error.error.type, 'invalid_request_error');
    assert.match(err.error.error.message, /does not support assistant message prefill/);
    // A request error: never counted against the upstream, never retried.
    assert.deepEqual([classifyError(err).class, classifyError(err).retryable, classifyError(err).failure], ['client-error', false, false]);
  },

  // Anthropic streams with `expect`: server tools, thinking, compaction, fallback, early failures.
  async anthropicWebSearch(t) {
    provider.cue({ transcript: t });
    const started = Date.now();
    const message = await anthropic.beta.messages.stream(ASK).finalMessage();
    assert.ok(Date.now() - started >= 750, 'the pauses around the result block');
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.content.map((b) => b.type), ['server_tool_use', 'web_search_tool_result', 'text', 'text']);
    assert.deepEqual(message.content[0].input, { query: 'tech news today September 26 2025' });
    assert.equal(message.content[1].content[0].type, 'web_search_result');
    assert.equal(message.content[3].citations.length, 3);
  },
  async anthropicCodeExecution(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.beta.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.content.map((b) => b.type), ['server_tool_use', 'bash_code_execution_tool_result', 'server_tool_use', 'bash_code_execution_tool_result', 'text']);
    assert.equal(message.content[0].name, 'bash_code_execution');
    assert.equal(message.content[3].content.stdout, 'Sum: 650\n');
  },
  async anthropicPauseTurn(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.beta.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'pause_turn');
    assert.deepEqual(message.content.map((b) => b.type), ['server_tool_use']);
    assert.equal(message.content[0].name, 'web_search');
  },
  async anthropicCompactionPause(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.beta.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'compaction');
    assert.deepEqual(message.content.map((b) => b.type), ['compaction']);
    assert.match(message.content[0].content, /^## Summary of Conversation/);
  },
  async anthropicServerFallback(t) {
    provider.cue({ transcript: t });
    const message = await anthropic.beta.messages.stream(ASK).finalMessage();
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text', 'fallback', 'text']);
    assert.deepEqual(message.content[2].to, { model: 'claude-opus-4-8' });
    assert.equal(message.model, 'claude-opus-4-8', 'the SDK relabels the message with the fallback model');
    assert.match(message.content[1].text + message.content[3].text, /^Hi there! Happy to explain\./);
  },
  async anthropicThinkingPauses(t) {
    provider.cue({ transcript: t });
    const started = Date.now();
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.ok(Date.now() - started >= 850, 'the pauses inside the thinking block');
    assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text']);
    assert.match(message.content[0].thinking, /^The previous result was 925\./);
    assert.equal(message.content[1].text, '925 ÷ 5 = 185');
  },
  async anthropicThinkingForever(t) {
    const started = Date.now();
    const { events, error } = await anthropicStream(t);
    assert.ok(Date.now() - started >= 1900, 'a delta every 100 ms');
    assert.equal(events.filter((e) => e.delta?.type === 'thinking_delta').length, 20);
    assert.equal(anthropicText(events), '');
    assert.ok(error, 'the SDK reports the cut');
  },
  async anthropicToolInputAfterSilence(t) {
    provider.cue({ transcript: t });
    const started = Date.now();
    const message = await anthropic.messages.stream(ASK).finalMessage();
    assert.ok(Date.now() - started >= 1400, 'the silence before the input');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.content[0].input, { elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }] });
  },
  async anthropicResetBeforeContent(t) {
    const { events, error } = await anthropicStream(t);
    assert.deepEqual(events.map((e) => e.type), ['message_start']);
    assert.ok(error, 'the SDK reports the cut');
  },
  async anthropicMalformedBeforeContent(t) {
    const { events, error } = await anthropicStream(t);
    assert.deepEqual(events.map((e) => e.type), ['message_start', 'content_block_start']);
    assert.ok(error instanceof SyntaxError, `a SyntaxError from JSON.parse, not ${error}`);
    // On the wire the answer goes on after the broken frame.
    provider.cue({ transcript: t });
    const raw = await (await fetch(`${provider.url}/v1/messages`, { method: 'POST', body: '{"stream":true}' })).text();
    assert.match(raw, /"stop_reason":"end_turn"/);
  },
  // ---- OpenAI Chat Completions ----
  async openaiChatText(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.equal(chatText(events), '**Holiday Name:** Harmony');
    assert.equal(events.at(-1).choices[0].finish_reason, 'stop');
    assert.equal(provider.requests.at(-1).url, '/v1/chat/completions');
  },
  async openaiChatContentFilter(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.equal(chatText(events), '');
    assert.equal(events.at(-1).choices[0].finish_reason, 'content_filter');
  },
  async openaiChatLengthNoText(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.equal(chatText(events), '');
    assert.equal(events[1].choices[0].finish_reason, 'length');
    const usage = events.at(-1).usage;
    assert.equal(usage.completion_tokens_details.reasoning_tokens, usage.completion_tokens);
  },
  async openaiChatErrorChunk(t) {
    const { events, error } = await chatStream(t);
    assert.equal(chatText(events), '**Holiday');
    assert.ok(error instanceof OpenAI.APIError, `an APIError, not ${error}`);
    assert.equal(error.error.code, 'server_error');
    assert.equal(error.message, 'Provider disconnected unexpectedly');
  },
  async openaiChatOpenRouterKeepAlive(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined, 'the SDK skips SSE comments');
    assert.equal(chatText(events), '**Holiday Name:** Harmony');
  },
  async openaiChatUsageChunkWithoutChoices(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.equal(events.at(-1).choices, undefined, 'the last chunk has no choices');
    assert.equal(events.at(-1).usage.total_tokens, 2974);
  },
  async openaiInsufficientQuota429(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.code, 'insufficient_quota');
    assert.equal(err.type, 'insufficient_quota');
  },
  async openaiCreditBalanceExhausted429(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.deepEqual([err.type, err.code], ['insufficient_quota', 'credit_balance_exhausted']);
  },
  async openaiProjectSpendLimit429(t) {
    const err = await rejection(t, chat);
    assert.deepEqual([err.status, err.type, err.code], [429, 'insufficient_quota', 'project_spend_limit_exceeded']);
  },
  async openaiOrganizationSpendLimit429(t) {
    const err = await rejection(t, chat);
    assert.deepEqual([err.status, err.type, err.code], [429, 'insufficient_quota', 'organization_spend_limit_exceeded']);
  },
  async openaiBillingNotActive429(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.code, 'billing_not_active');
  },
  async openaiBillingHardLimit400(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.code, 'billing_hard_limit_reached');
  },
  async openaiRateLimit429(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.equal(err.headers.get('retry-after-ms'), '1500');
    assert.equal(err.requestID, 'req_3f0a8b7c1d2e4f5a6b7c8d9e0f1a2b3c');
  },
  async openaiConflict409(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.ConflictError);
    assert.equal(err.status, 409);
  },
  async openaiContextLengthExceeded400(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.deepEqual([err.code, err.param], ['context_length_exceeded', 'messages']);
  },
  async openaiInvalidPrompt400(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.code, 'invalid_prompt');
  },
  async openaiContentPolicyViolation400(t) {
    const err = await rejection(t, chat);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.equal(err.code, 'content_policy_violation');
  },

  // OpenAI Chat streams with `expect`.
  async openaiChatEmptyRoleChunk(t) {
    const { events, error } = await chatStream(t);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0].choices[0].delta, { role: 'assistant', content: '', tool_calls: [] });
    assert.ok(error instanceof OpenAI.APIError, `an APIError, not ${error}`);
    assert.equal(error.error.type, 'InternalServerError');
    assert.match(error.message, /^EngineCore encountered an issue/);
  },
  async openaiChatRefusal(t) {
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.equal(chatText(events), '');
    assert.equal(events.map((c) => c.choices[0]?.delta?.refusal ?? '').join(''), "I'm very sorry, but I can't assist with that request.");
    assert.equal(events.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
  },
  async openaiChatToolCallsAfterPause(t) {
    const started = Date.now();
    const { events, error } = await chatStream(t);
    assert.equal(error, undefined);
    assert.ok(Date.now() - started >= 1400, 'the silence before the arguments');
    const calls = events.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.equal(calls[0].function.name, 'test-tool');
    assert.equal(calls.map((c) => c.function.arguments).join(''), '{"value":"Sparkle Day"}');
    assert.equal(events.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
  },
  async openaiChatOpenRouterKeepAliveOnly(t) {
    const started = Date.now();
    const { events, error } = await chatStream(t);
    assert.ok(Date.now() - started >= 450, 'the keep-alives came with their delays');
    assert.deepEqual(events, [], 'comments are not chunks');
    assert.equal(error, undefined, 'the SDK ends quietly without [DONE]');
  },
  // ---- OpenAI Responses ----
  async responsesText(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.equal(responsesText(events), 'Hello! How can I help?');
    const done = events.at(-1);
    assert.equal(done.type, 'response.completed');
    assert.equal(done.response.status, 'completed');
    assert.equal(done.response.output[0].content[0].text, 'Hello! How can I help?');
    assert.equal(provider.requests.at(-1).url, '/v1/responses');
  },
  async responsesFailed(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined, 'response.failed is an event, not a thrown error');
    const failed = events.at(-1);
    assert.equal(failed.type, 'response.failed');
    assert.equal(failed.response.status, 'failed');
    assert.equal(failed.response.error.code, 'rate_limit_exceeded');
  },
  async responsesErrorQuota(t) {
    const { events, error } = await responsesStream(t);
    assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress']);
    assert.ok(error instanceof OpenAI.APIError, `the error event throws an APIError, not ${error}`);
    assert.match(error.message, /exceeded your current quota/);
  },
  async responsesServerErrorAfterText(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(responsesText(events), 'Hello!');
    assert.ok(error instanceof OpenAI.APIError);
    assert.match(error.message, /An error occurred while processing the request/);
  },
  async responsesIncompleteMaxOutputTokens(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.equal(responsesText(events), '');
    const last = events.at(-1);
    assert.equal(last.type, 'response.incomplete');
    assert.equal(last.response.incomplete_details.reason, 'max_output_tokens');
  },
  async responsesIncompleteContentFilter(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.equal(responsesText(events), 'Hello!');
    assert.equal(events.at(-1).response.incomplete_details.reason, 'content_filter');
  },

  // OpenAI Responses streams with `expect`.
  async responsesImageGeneration(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.equal(responsesText(events), '');
    assert.equal(events.find((e) => e.type === 'response.image_generation_call.partial_image').partial_image_b64, 'UklGRuIWGQBXRUJQVlA4TKAwGAAv/8X/ABlJbiNJkgRDwkID');
    const image = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'image_generation_call').item;
    assert.equal(image.result, 'UklGRuIWGQBXRUJQVlA4TKAwGAAv/8X/ABlJbiNJkgRDwkID');
    assert.equal(events.at(-1).type, 'response.completed');
  },
  async responsesRefusal(t) {
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.equal(responsesText(events), '');
    const refusal = events.filter((e) => e.type === 'response.refusal.delta').map((e) => e.delta).join('');
    assert.equal(refusal, "I'm very sorry, but I can't assist with that request.");
    assert.equal(events.find((e) => e.type === 'response.refusal.done').refusal, refusal);
    assert.equal(events.at(-1).response.output[0].content[0].type, 'refusal');
  },
  async responsesReasoningSummaryPauses(t) {
    const started = Date.now();
    const { events, error } = await responsesStream(t);
    assert.equal(error, undefined);
    assert.ok(Date.now() - started >= 1700, 'the pauses in the summary');
    const summary = events.filter((e) => e.type === 'response.reasoning_summary_text.delta').map((e) => e.delta).join('');
    assert.match(summary, /^\*\*Calculating step-by-step using calculator\*\*\n\nI'll compute 12 plus 7/);
    assert.equal(responsesText(events), 'The final result is **570**.');
    assert.equal(events.at(-1).response.status, 'completed');
  },
  // ---- Gemini ----
  async geminiText(t) {
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    assert.equal(geminiTextOf(events), 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y');
    assert.equal(events.at(-1).candidates[0].finishReason, 'STOP');
    assert.match(provider.requests.at(-1).url, /^\/v1(beta)?\/models\/gemini-2\.5-flash:streamGenerateContent\?alt=sse$/);
  },
  async geminiSafety(t) {
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    assert.equal(geminiTextOf(events), '');
    const candidate = events.at(-1).candidates[0];
    assert.equal(candidate.finishReason, 'SAFETY');
    assert.equal(candidate.safetyRatings.find((r) => r.blocked).category, 'HARM_CATEGORY_DANGEROUS_CONTENT');
  },
  async geminiPromptBlocked(t) {
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    assert.equal(events.at(-1).promptFeedback.blockReason, 'PROHIBITED_CONTENT');
    assert.equal(events.at(-1).candidates, undefined);
  },
  async geminiMaxTokensNoText(t) {
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    assert.equal(events.at(-1).candidates[0].finishReason, 'MAX_TOKENS');
    assert.equal(events.at(-1).usageMetadata.thoughtsTokenCount, 64);
  },
  async gemini429PerMinute(t) {
    const err = await rejection(t, generate);
    assert.equal(err.status, 429);
    const details = JSON.parse(err.message).error.details;
    assert.equal(details[0].violations[0].quotaId, 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier');
    assert.equal(details[1].retryDelay, '34.4s');
    // @google/genai 3.x calls /v1/models/…; @ai-sdk/google calls /v1beta/models/….
    assert.match(provider.requests.at(-1).url, /^\/v1(beta)?\/models\/gemini-2\.5-flash:generateContent/);
  },
  async gemini429PerDay(t) {
    const err = await rejection(t, generate);
    assert.equal(err.status, 429);
    const { status, details } = JSON.parse(err.message).error;
    assert.equal(status, 'RESOURCE_EXHAUSTED');
    const quota = details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.QuotaFailure');
    assert.equal(quota.violations[0].quotaId, 'GenerateRequestsPerDayPerProjectPerModel-FreeTier');
    assert.equal(details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo').retryDelay, '38s');
  },
  // Gemini streams with `expect`.
  async geminiImage(t) {
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    const [candidate] = events[0].candidates;
    assert.deepEqual(candidate.content.parts.map((p) => Object.keys(p)), [['inlineData']]);
    assert.equal(candidate.content.parts[0].inlineData.mimeType, 'image/png');
    assert.equal(candidate.finishReason, 'STOP');
  },
  async geminiThought(t) {
    const started = Date.now();
    const { events, error } = await geminiStream(t);
    assert.equal(error, undefined);
    assert.ok(Date.now() - started >= 250, 'the pause after the thought');
    assert.equal(events[0].candidates[0].content.parts[0].thought, true);
    assert.match(events[0].candidates[0].content.parts[0].text, /^\*\*Processing User Requests\*\*/);
    assert.equal(events.slice(1).map((c) => c.candidates[0].content.parts.map((p) => p.text).join('')).join(''), 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y');
    assert.equal(events.at(-1).candidates[0].finishReason, 'STOP');
  },
};

for (const [api, transcripts] of Object.entries(corpus)) {
  for (const [name, transcript] of Object.entries(transcripts)) {
    test(`${api}: ${name} parses through the official SDK as the provider meant it`, async () => {
      assert.ok(checks[name], `no check for ${name}`);
      assert.ok(transcript.source, 'the transcript names its source');
      await checks[name](transcript);
    });
  }
}

test('every check names a transcript of the corpus', () => {
  const names = new Set(Object.values(corpus).flatMap((t) => Object.keys(t)));
  assert.deepEqual(Object.keys(checks).filter((n) => !names.has(n)), []);
});

// ---- The fake provider's replay options ----

test('a stalled stream repeats its keep-alive until the client aborts, and the request shows the abort', async () => {
  const head = { ...corpus.anthropic.anthropicText, events: corpus.anthropic.anthropicText.events.slice(0, 5) };
  // On the wire: the head, then only pings.
  provider.cue({ transcript: head, stall: { pingMs: 10 } });
  const controller = new AbortController();
  const reader = (await fetch(`${provider.url}/v1/messages`, { method: 'POST', body: '{}', signal: controller.signal })).body.getReader();
  let raw = '';
  while ((raw.match(/event: ping\n/g) ?? []).length < 4) raw += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  const stalled = raw.slice(raw.indexOf(head.events[4].data) + head.events[4].data.length + 2);
  assert.match(stalled, /^(event: ping\ndata: \{"type": "ping"\}\n\n)+$/);

  // Through the SDK: the text so far, then nothing until the caller aborts.
  provider.cue({ transcript: head, stall: { pingMs: 10 } });
  const signal = AbortSignal.timeout(150);
  const { events, error } = await drain(anthropic.messages.create({ ...ASK, stream: true }, { signal }));
  assert.equal(anthropicText(events), 'Hello! I');
  // The SDK's stream ends quietly when its signal aborts mid-body: no error, and no message_stop.
  assert.equal(error, undefined);
  assert.equal(events.at(-1).type, 'content_block_delta');
  assert.ok(signal.aborted);
  await waitFor(() => provider.requests.at(-1).aborted);
});

test('a stall can repeat an SSE comment instead', async () => {
  const head = { ...corpus['openai-chat'].openaiChatText, events: corpus['openai-chat'].openaiChatText.events.slice(0, 2) };
  provider.cue({ transcript: head, stall: { pingMs: 10, ping: { comment: ' OPENROUTER PROCESSING' } } });
  const controller = new AbortController();
  const response = await fetch(`${provider.url}/v1/chat/completions`, { method: 'POST', body: '{"stream":true}', signal: controller.signal });
  const reader = response.body.getReader();
  let text = '';
  while ((text.match(/: OPENROUTER PROCESSING\n\n/g) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  assert.ok(text.startsWith(`data: ${head.events[0].data}\n\ndata: ${head.events[1].data}\n\n: OPENROUTER PROCESSING\n\n`), text);
});

test('holdUntilAbort answers nothing until the SDK call is aborted', async () => {
  provider.cue({ holdUntilAbort: true });
  const controller = new AbortController();
  const pending = openai.chat.completions.create(CHAT, { signal: controller.signal }).catch((e) => e);
  await waitFor(() => provider.requests.length === 1);
  setTimeout(() => controller.abort(), 30);
  const err = await pending;
  assert.equal(err.constructor.name, 'APIUserAbortError');
  await waitFor(() => provider.requests[0].aborted);
});

test('stream frames go on the wire exactly: event line, one data line per line, blank line', async () => {
  provider.cue({ transcript: { status: 200, headers: { 'content-type': 'text/event-stream' }, events: [{ event: 'x', data: 'a\nb' }, { comment: ' hi' }, { data: '[DONE]' }] } });
  const body = await (await fetch(`${provider.url}/anything`, { method: 'POST', body: '{}' })).text();
  assert.equal(body, 'event: x\ndata: a\ndata: b\n\n: hi\n\ndata: [DONE]\n\n');
});

/** Polls `ok` until it holds (a second at most). */
async function waitFor(ok) {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok(), 'condition never held');
}
