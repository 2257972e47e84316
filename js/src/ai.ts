/**
 * `breakwater/ai`: the Vercel AI SDK integration.
 *
 * - `breakerMiddleware(breaker)` for `wrapLanguageModel`: every attempt the SDK makes is one
 *   guarded call. An OPEN breaker throws `CircuitOpenError`, which the SDK does not retry.
 * - `fallbackModel([{ model }, { model }])`: a language model that answers from the first tier
 *   whose breaker admits the call (a `FallbackChain` of models).
 * - `answerBegun(result)` and `errorResponse(error)`: a route answers 503 with `Retry-After`,
 *   not a 200 stream that says "An error occurred.", when no tier could begin the answer.
 *
 * Works with AI SDK 6 (language model specification v3) and AI SDK 7 (v4): it reads only what
 * both specifications share (call options' `abortSignal`, stream part types, generated content)
 * and imports nothing from `ai` at run time.
 *
 * ```ts
 * import { wrapLanguageModel, streamText } from 'ai';
 * import { anthropic } from '@ai-sdk/anthropic';
 * import { CircuitBreaker } from 'breakwater';
 * import { breakerMiddleware } from 'breakwater/ai';
 *
 * const breaker = new CircuitBreaker('anthropic', { failureThreshold: 5 });
 * const model = wrapLanguageModel({ model: anthropic('claude-sonnet-4-5'), middleware: breakerMiddleware(breaker) });
 * ```
 * @packageDocumentation
 */
import {
  BreakerRegistry,
  FallbackChain,
  globalBreakers,
  classifyError,
  isCircuitOpenError,
  endingOf,
  isTimeoutError,
  retryAfterMs,
  type CallContext,
  type CircuitBreakerOptions,
  type Ending,
  type BreakerStreamOptions,
  type StreamRetryOptions,
  type TierEvent,
  type HedgeOption,
  type Unsubscribe,
} from 'breakwater';
import { breakerConfig, Emitter, checkKeys, fail, num, obj, type ChainBreaker } from 'breakwater/internal';

/**
 * What breakwater reads of a model call's options (v3 and v4 alike).
 * @inline
 */
interface ModelCallOptions {
  /** The call's abort signal (the SDK's `abortSignal` option). */
  abortSignal?: AbortSignal | undefined;
  /** Whether the app asked for the provider's raw chunks (`streamText`'s `includeRawChunks`). */
  includeRawChunks?: boolean | undefined;
  /** The prompt: `hedge` estimates a lost race's input tokens from its text. */
  prompt?: unknown;
}

/** A language model as both specifications shape it (`LanguageModelV3`, `LanguageModelV4`). */
export interface LanguageModelLike {
  /** The specification the model implements: `'v3'` (AI SDK 6) or `'v4'` (AI SDK 7). */
  readonly specificationVersion: string;
  /** The provider's name (`fallbackModel` names a tier's default breaker `provider:modelId`). */
  readonly provider: string;
  /** The model's id, e.g. `claude-sonnet-4-5`. */
  readonly modelId: string;
  /** The URL patterns the model takes as they are, by media type. */
  readonly supportedUrls: PromiseLike<Record<string, RegExp[]>> | Record<string, RegExp[]>;
  /** Generates an answer in one piece (`generateText`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each specification's own call options
  doGenerate(options: any): PromiseLike<unknown>;
  /** Generates an answer as a stream of parts (`streamText`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- likewise
  doStream(options: any): PromiseLike<{
    /** The answer's parts. */
    stream: ReadableStream<unknown>;
  }>;
}

/** How long an attempt may take; each is optional and off by default. */
export interface GuardOptions {
  /** `generateText`: fail an attempt (a `TimeoutError`, counted) after this many ms. */
  timeoutMs?: number | undefined;
  /**
   * `streamText`: fail an attempt (a `TimeoutError`, counted, retried) when no text, reasoning or
   * tool delta arrived within this many ms of the call. Set it: the SDK's `timeout.chunkMs` counts
   * any part (a `response-metadata`, a provider's `custom` part) as a chunk.
   */
  firstChunkTimeoutMs?: number | undefined;
  /**
   * `streamText`: cut the answer (counted, with `onInterrupted`'s contingency) when no content
   * arrives for this many ms while it is read; keep-alives do not count.
   */
  idleTimeoutMs?: number | undefined;
  /**
   * `streamText`: the whole stream's limit. Before the first content a `TimeoutError` (counted,
   * retried); after it a cut with the contingency that is not counted (the app's budget for a
   * long answer, as the SDK's `timeout.totalMs` is).
   */
  totalTimeoutMs?: number | undefined;
  /**
   * `streamText`, off by default: cut the answer (counted, with the contingency) when no output
   * (text, a tool call, a file: not reasoning) came within this many ms of the call.
   */
  firstOutputTimeoutMs?: number | undefined;
  /**
   * `streamText`, off by default: cut the answer (counted, with the contingency) when the model
   * has reasoned for this many ms with no output in between (a model looping in its thoughts).
   */
  maxThinkingMs?: number | undefined;
  /**
   * `streamText`: retry before the first word. An attempt whose stream fails before any part
   * reached the reader (an `error` part such as an overloaded error in a 200 answer, a reset, a
   * malformed frame, no sign of the model in time) is tried again on the same model by these
   * rules (`withRetry`'s options; `true`: the defaults), invisible to the reader, each attempt
   * counted by the breaker. The SDK does not retry these itself (vercel/ai #2453). After the first
   * part nothing is retried. With `fallbackModel`, each tier is retried before the next is asked.
   */
  retry?: StreamRetryOptions | boolean | undefined;
  /**
   * `streamText`: the contingency for an answer that fails after its first words (a cut, a
   * time-out of breakwater's, an error part the stream's `finish` does not overcome); it is never
   * retried. Its return value goes into a text block of its own (`text-start`, `text-delta`,
   * `text-end` with a fresh id), then the stream ends with a `finish` part whose `finishReason` is
   * `'error'` (raw: `'breakwater-interrupted'`) and no `error` part: `onFinish` and `fullStream`
   * see the failure, and `toUIMessageStreamResponse()` ends so that `useChat` shows the words so
   * far and this text with `status: 'ready'`. The provider's own error parts of that answer are
   * not passed on; the error reaches this function. Without it, a cut reaches the SDK as the
   * stream's error, error parts as themselves.
   */
  onInterrupted?: ((error: unknown) => string | undefined) | undefined;
}

/** `breakerMiddleware`'s options. */

/**
 * The middleware `breakerMiddleware` returns. Its `specificationVersion` is `'v3'`: AI SDK 6
 * requires that value and AI SDK 7 accepts any (its `wrapLanguageModel` hands it v4 models and
 * calls; the middleware reads only what v3 and v4 share). Its wrappers are generic, so the object
 * fits `LanguageModelV3Middleware` and AI SDK 7's `LanguageModelMiddleware` alike.
 */
export interface BreakerMiddleware {
  /** Always `'v3'` (AI SDK 7 accepts it too). */
  readonly specificationVersion: 'v3';
  /** Runs a `generateText` attempt behind the breaker. */
  wrapGenerate: <R>(options: {
    doGenerate: () => PromiseLike<R>;
    params: ModelCallOptions;
    model: LanguageModelLike;
  }) => Promise<R>;
  /** Runs a `streamText` attempt behind the breaker, watching its parts until the answer begins. */
  wrapStream: <
    S extends {
      /** The attempt's parts. */
      stream: ReadableStream<unknown>;
    },
  >(options: {
    doStream: () => PromiseLike<S>;
    params: ModelCallOptions;
    model: LanguageModelLike;
  }) => Promise<S>;
}

/** One tier of `fallbackModel`. */
export interface FallbackTier<M extends LanguageModelLike> {
  /** The tier's language model. */
  model: M;
  /**
   * Its breaker: a `CircuitBreaker`, `SharedCircuitBreaker` or `StoreCircuitBreaker`. Default:
   * the one named `provider:modelId` in `globalBreakers()` (one per model in the process).
   */
  breaker?: ChainBreaker | undefined;
  /** Named in `onTier` events. Default: the breaker's name. */
  name?: string | undefined;
}

/** `fallbackModel`'s options. */
export interface FallbackModelOptions extends GuardOptions {
  /** Named in the `CircuitOpenError` thrown when every tier refused. Default `"fallback-model"`. */
  name?: string | undefined;
  /** Whether an error moves on to the next tier (see `FallbackChainOptions.fallThrough`). */
  fallThrough?: ((error: unknown) => boolean) | undefined;
  /** Where tiers without a breaker find theirs. Default: `globalBreakers()`. */
  registry?: BreakerRegistry | undefined;
  /** Options of the breakers the registry creates for tiers without one (when it creates them). */
  breakerOptions?: CircuitBreakerOptions | undefined;
  /**
   * Hedged calls, `hedge()` from `breakwater/adaptive` (see `FallbackChainOptions.hedge`): when
   * the tier asked shows no progress (`streamText`: no text, reasoning or tool delta;
   * `generateText`: no answer) after the policy's delay, the next tier is asked too; the first
   * to answer wins and the other's request is aborted. A lost race's cost is estimated from the
   * prompt (its characters / 4, in `onTier`'s `lost` events and the value's `stats`).
   */
  hedge?: HedgeOption | undefined;
  /**
   * `streamText`, off by default: when an answer is cut after its first words (a reset, an
   * error part, `idleTimeoutMs`), the next tier whose breaker admits it continues the answer in
   * the same stream, so that the reader sees one answer. Each tier's model says how
   * (`continuationOf`: a trailing assistant message, or the partial answer then a user turn
   * asking to go on; never on a model not known to do either), the overlap with what was read is
   * trimmed, and `onTier` reports a `continued` event with the continuation's estimated input.
   * Never after a tool call, reasoning (signed thinking) or a file: such an answer ends as it
   * would without this option (`onInterrupted`'s contingency, or the error), as does one that no
   * tier could continue.
   */
  continueOnBackup?: boolean | undefined;
}

/** The model `fallbackModel` returns: the tiers' specification, plus `onTier`. */
export type FallbackModel<M extends LanguageModelLike> = Pick<
  M,
  'specificationVersion' | 'provider' | 'modelId' | 'supportedUrls' | 'doGenerate' | 'doStream'
> & {
  /** Tells which tier answered, was skipped (its breaker refused) or failed, call by call. */
  onTier(listener: (event: TierEvent) => void): Unsubscribe;
};

// The AI SDK recognises its errors by these markers (`APICallError.isInstance`), whichever copy
// of the SDK threw them; it retries an `APICallError` whose `isRetryable` is true.
const SDK_ERROR = Symbol.for('vercel.ai.error');
const API_CALL_ERROR = Symbol.for('vercel.ai.error.AI_APICallError');
// A chunk the provider package's schema rejected (`TypeValidationError`): the SDK's strictness,
// not the upstream's failure; the provider streams on after it.
const VALIDATION_ERROR = Symbol.for('vercel.ai.error.AI_TypeValidationError');
const ANSWER_ERROR = Symbol.for('breakwater.ModelAnswerError');

/**
 * A model's answer failed before any content: an `error` part in its stream (an overloaded
 * model inside a 200 answer), or no content at all. It carries the AI SDK's `APICallError`
 * markers, so the SDK retries it (`isRetryable`) as it would an HTTP failure, and a fallback
 * moves on. The breaker counts it as a failure.
 */
export class ModelAnswerError extends Error {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'ModelAnswerError';
  /** Always `true`: tells a `ModelAnswerError` apart without `instanceof` (`isModelAnswerError` is the test to use). */
  readonly isModelAnswerError = true as const;
  /**
   * `error-part`: the stream began with an error; `empty`: the model answered nothing; `timeout`:
   * nothing came within breakwater's `firstChunkTimeoutMs` or `totalTimeoutMs` (its
   * `TimeoutError` is the `error`).
   */
  readonly kind: 'error-part' | 'empty' | 'timeout';
  /** The error part's error as the provider gave it (e.g. `{ type: 'overloaded_error', message }`). */
  readonly error: unknown;
  /** The status the error stands for, when it says (an `APICallError`'s, a 529 for `overloaded_error`…). */
  readonly statusCode: number | undefined;
  /** The answer's response headers (for `Retry-After`), when the provider gave them. */
  readonly responseHeaders: Record<string, string> | undefined;
  /** Whether the AI SDK retries it (as it reads an `APICallError`'s `isRetryable`). */
  readonly isRetryable: boolean;

  constructor(
    kind: ModelAnswerError['kind'],
    message: string,
    details: { error?: unknown; statusCode?: number | undefined; responseHeaders?: Record<string, string> | undefined; isRetryable: boolean },
  ) {
    super(message, details.error === undefined ? undefined : { cause: details.error });
    this.name = 'ModelAnswerError';
    this.kind = kind;
    this.error = details.error;
    this.statusCode = details.statusCode;
    this.responseHeaders = details.responseHeaders;
    this.isRetryable = details.isRetryable;
    const marks = this as unknown as Record<symbol, boolean>;
    marks[SDK_ERROR] = marks[API_CALL_ERROR] = marks[ANSWER_ERROR] = true;
  }
}

/** True for a `ModelAnswerError` from any copy of this package. */
export function isModelAnswerError(err: unknown): err is ModelAnswerError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[ANSWER_ERROR] === true;
}

/** An AI SDK `APICallError` (any copy) that carries an error status. */
function isHttpApiCallError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || (err as Record<symbol, unknown>)[API_CALL_ERROR] !== true) return false;
  const s = (err as { statusCode?: unknown }).statusCode;
  return typeof s === 'number' && s >= 400;
}

function messageOf(err: unknown): string {
  if (typeof err === 'string') return err;
  const m = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  if (typeof m === 'string') return m;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

/** The error an `error` stream part stands for, as the attempt's failure. */
function partFailure(error: unknown, headers: Record<string, string> | undefined): unknown {
  if (isHttpApiCallError(error)) return error;
  // breakwater's classification reads the provider's error type (overloaded_error...) from `error`.
  const probe = new ModelAnswerError('error-part', '', { error, isRetryable: false });
  const v = classifyError(probe);
  return new ModelAnswerError('error-part', `the model's stream failed before any content: ${messageOf(error)}`, {
    error,
    ...(v.status !== undefined && v.status >= 400 ? { statusCode: v.status } : {}),
    ...(headers !== undefined ? { responseHeaders: headers } : {}),
    isRetryable: v.failure && v.retryable,
  });
}

const emptyAnswer = (): ModelAnswerError =>
  new ModelAnswerError('empty', 'the model answered with no content', { isRetryable: true });

/** breakwater's `StreamError` for a stream that ended before its first content. */
function isEmptyStream(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { isStreamError?: unknown; kind?: unknown };
  return e.isStreamError === true && e.kind === 'empty';
}

// The parts that are a whole answer in a generated result (a tool call or result, a file).
const WHOLE = new Set(['tool-call', 'tool-result', 'tool-approval-request', 'file', 'reasoning-file']);

/** A generated result with an answer in it (text, reasoning, a tool call, a file). */
function hasContent(result: unknown): boolean {
  const content = typeof result === 'object' && result !== null ? (result as { content?: unknown }).content : undefined;
  if (!Array.isArray(content)) return true; // a shape this module does not know: not judged
  return content.some((p: { type?: unknown; text?: unknown } | null) => {
    if (typeof p !== 'object' || p === null || typeof p.type !== 'string') return false;
    return p.type === 'text' || p.type === 'reasoning' ? typeof p.text === 'string' && p.text !== '' : WHOLE.has(p.type);
  });
}

type Generate = (signal: AbortSignal | undefined) => PromiseLike<unknown>;
type Stream = (signal: AbortSignal | undefined) => PromiseLike<{ stream: ReadableStream<unknown> }>;

/** The ending a stream's `finish` part names; undefined for any other part. */
function finishEnding(part: unknown): Ending | undefined {
  if (typeof part !== 'object' || part === null || (part as { type?: unknown }).type !== 'finish') return undefined;
  return endingOf((part as { finishReason?: unknown }).finishReason);
}

/**
 * A signal that follows `signal`, and can be aborted on its own. breakwater counts a call whose
 * signal aborted for a reason that is not a time-out as cancelled (ignored, not retried, no
 * fallback), whatever the breaker's `isFailure` says: this is how an answer that says nothing
 * about the upstream leaves a guarded call.
 */
function follow(signal: AbortSignal | undefined, reasonOf: (reason: unknown) => unknown = (r) => r) {
  const own = new AbortController();
  const forward = (): void => own.abort(reasonOf(signal!.reason));
  if (signal?.aborted) forward();
  else signal?.addEventListener('abort', forward, { once: true });
  return { own, release: () => signal?.removeEventListener('abort', forward) };
}

/**
 * `stream` as it is, calling `release` once it ends, errors or is cancelled: the listener
 * `follow` put on the caller's signal goes with the answer (an app may pass one signal to many
 * calls).
 */
function releasing(stream: ReadableStream<unknown>, release: () => void): ReadableStream<unknown> {
  const reader = stream.getReader();
  return new ReadableStream(
    {
      async pull(c) {
        try {
          const r = await reader.read();
          if (!r.done) return c.enqueue(r.value);
          release();
          c.close();
        } catch (e) {
          release();
          c.error(e);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * One guarded `doGenerate`, the call for a breaker or a `FallbackChain` tier: an empty answer
 * fails it; a declined answer (`content-filter`) or an empty one cut by its length limit (a
 * reasoning model that spent its budget) is the app's to see: returned as it came, counted as
 * neither success nor failure, not retried, not sent to another tier.
 */
function generateGuard(params: ModelCallOptions) {
  const { own, release } = follow(params.abortSignal);
  let passed: { reason: unknown; result: unknown } | undefined;
  // `SharedCircuitBreaker.execute` calls `fn()` without a context.
  const call = (generate: Generate) => async (ctx?: CallContext): Promise<unknown> => {
    const result = await generate(ctx?.signal ?? own.signal);
    const ending = endingOf((result as { finishReason?: unknown } | null)?.finishReason);
    const content = hasContent(result);
    if (ending === 'declined' || (ending === 'truncated' && !content)) {
      const reason = new DOMException(`the model's answer ended "${ending}": returned as it came, not counted`, 'AbortError');
      passed = { reason, result };
      own.abort(reason);
      throw reason;
    }
    if (!content) throw emptyAnswer();
    return result;
  };
  const run = async <R>(p: Promise<R>): Promise<R> => {
    try {
      return await p;
    } catch (e) {
      if (passed !== undefined && e === passed.reason) return passed.result as R;
      throw e;
    } finally {
      release();
    }
  };
  return { signal: own.signal, call, run };
}

// The AI SDK's `timeout.chunkMs` aborts with this message; its `totalMs` and `stepMs` (and an
// app's own `AbortSignal.timeout`) abort with a `TimeoutError` of another message.
const CHUNK_TIMEOUT = /^Chunk timeout of /;

/**
 * A time limit of the whole answer (the SDK's `timeout.totalMs` or `stepMs`, an app's
 * `AbortSignal.timeout`) that ran out after the first words: the app's budget for a long answer,
 * not the provider's failure. The SDK's `chunkMs` (a stall between chunks) is not one.
 */
function isBudget(reason: unknown): boolean {
  if (typeof reason !== 'object' || reason === null) return false;
  const { name, message } = reason as { name?: unknown; message?: unknown };
  return name === 'TimeoutError' && !(typeof message === 'string' && CHUNK_TIMEOUT.test(message));
}

let contingencies = 0;

/** What the reader has of an interrupted answer (see `shape`). */
interface Sent {
  /** The text it read. */
  text: string;
  /** The text block still open when the answer was cut (its id), if any. */
  open: unknown;
  /** The first part that makes continuing unsafe (a tool call, reasoning, a file, a source). */
  unsafe: string | undefined;
}

/** Notes what `part` adds to the answer the reader has (`Sent`), for a continuation. */
function track(sent: Sent, part: unknown): void {
  const p = part as { type?: unknown; id?: unknown; delta?: unknown; kind?: unknown } | null;
  const type = p?.type;
  if (type === 'text-delta' && typeof p?.delta === 'string') sent.text += p.delta;
  else if (type === 'text-start') sent.open = p?.id;
  else if (type === 'text-end') sent.open = undefined;
  else if (typeof type === 'string' && !PLAIN.has(type) && !(type === 'custom' && META.test(String(p?.kind)))) sent.unsafe ??= type;
}

/**
 * Continues an interrupted answer into `out`: `true` once the continuation ended the stream,
 * `false` when no tier could continue it (nothing was added), `{ error }` when a continuation
 * began and failed in its turn (its words are in `out`).
 */
type Continue = (sent: Sent, out: TransformStreamDefaultController<unknown>, error: unknown) => Promise<true | false | { error: unknown }>;

// The parts an answer may hold and still be continued: text, and what says nothing of content.
const PLAIN = new Set(['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-end', 'raw']);
// AI SDK 7's `custom` parts that are only metadata (Anthropic's `anthropic.message_start`).
const META = /\.message_start$/;

/**
 * How a model can continue an answer another model began (`fallbackModel`'s `continueOnBackup`):
 * - `'prefill'`: the partial answer as a trailing assistant message, which the model continues
 *   (Anthropic's Claude up to 4.5, without extended thinking);
 * - `'user-turn'`: the partial answer as an assistant turn, then a user turn quoting its end and
 *   asking to go on from there (OpenAI, which answers a trailing assistant message with a new
 *   answer; Gemini; Claude Opus/Sonnet 4.6 and later, and 5, which refuse a trailing assistant
 *   message with a 400; Claude with extended thinking; Mistral, DeepSeek, xAI, Groq);
 * - `'restart'`: not known to continue safely: the answer is not continued on it (it ends as it
 *   would without `continueOnBackup`).
 */
export type ContinuationStyle = 'prefill' | 'user-turn' | 'restart';

/** Claude's version in a model id (`claude-sonnet-4-5-20250929`, `claude-3-7-sonnet`, `anthropic.claude-opus-4-6-v1`). */
function claudeVersion(modelId: string): number | undefined {
  const m = /claude-(?:(?:opus|sonnet|haiku)-)?(\d{1,2})(?:[-.](\d{1,2})(?!\d))?/.exec(modelId);
  return m === null ? undefined : Number(m[1]) + (m[2] === undefined ? 0 : Number(m[2]) / 10);
}

/**
 * The continuation style of a model, by its provider and model id (the capability table of
 * `ContinuationStyle`). `thinking`: the call asks for Claude's extended thinking, which refuses a
 * prefill.
 */
export function continuationOf(model: { provider: string; modelId: string }, options: { thinking?: boolean } = {}): ContinuationStyle {
  const provider = String(model.provider).toLowerCase();
  const id = String(model.modelId).toLowerCase();
  if (/^anthropic\b|\.anthropic\b|^(amazon-)?bedrock\b/.test(provider)) {
    const v = claudeVersion(id);
    if (v === undefined) return provider.includes('anthropic') ? 'user-turn' : /^(amazon-)?bedrock\b/.test(provider) ? 'user-turn' : 'restart';
    return v < 4.6 && options.thinking !== true ? 'prefill' : 'user-turn';
  }
  if (/^(openai|azure|google|vertex|mistral|deepseek|xai|groq)\b/.test(provider)) return 'user-turn';
  return 'restart';
}

/** Whether a call asks Claude for extended thinking (`providerOptions.anthropic.thinking`). */
function thinkingOn(params: { providerOptions?: unknown }): boolean {
  const t = (params.providerOptions as { anthropic?: { thinking?: { type?: unknown } } } | undefined)?.anthropic?.thinking?.type;
  return t === 'enabled' || t === 'adaptive';
}

/** The words of the user turn that asks a model to go on with a cut answer. */
const GO_ON = (tail: string): string =>
  `Your previous answer was cut off. It ends with: "${tail}". Continue it from exactly that point: ` +
  'do not repeat any of it, do not start over, add no preamble.';

/** The prompt that continues `text` in `style`. */
function continuationPrompt(prompt: unknown, text: string, style: 'prefill' | 'user-turn'): unknown[] {
  const before = Array.isArray(prompt) ? prompt : [];
  // Anthropic refuses a prefill that ends in white space; the overlap trimming restores it.
  const said = { role: 'assistant', content: [{ type: 'text', text: style === 'prefill' ? text.trimEnd() : text }] };
  if (style === 'prefill') return [...before, said];
  const tail = text.length > 120 ? `…${text.slice(-120)}` : text;
  return [...before, said, { role: 'user', content: [{ type: 'text', text: GO_ON(tail) }] }];
}

/**
 * `next` without what repeats the end of `sent`: the whole of `sent` when the model started
 * over, else the longest overlap of at least 4 characters between the end of `sent` and the
 * start of `next`; leading white space when `sent` ended with some.
 */
export function trimOverlap(sent: string, next: string): string {
  let n = next;
  if (/\s$/.test(sent)) n = n.replace(/^\s+/, '');
  const s = sent.trimEnd();
  if (s.length >= 16 && n.startsWith(s)) return n.slice(s.length);
  for (let k = Math.min(n.length, s.length, 200); k >= 4; k--) {
    if (s.endsWith(n.slice(0, k))) return n.slice(k);
  }
  return n;
}
const NO_USAGE = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
};

/** An answer a tier gave: the stream the guard watches, and its response (for the headers). */
type StreamResult = { stream: ReadableStream<unknown>; response?: { headers?: Record<string, string> } };

/** What the guard of one `doStream` learns as the answer goes (see `modelStreamOptions`). */
interface StreamState {
  /** The last answer a tier gave. */
  result?: StreamResult | undefined;
  /** Each tier's answer, by tier (a hedged call runs two at once). */
  results: Array<StreamResult | undefined>;
  /** An error part was the provider's own error. */
  providerFailed: boolean;
  /** The answer was cut after its first words, and its end left to `shape`. */
  interrupted?: { error: unknown } | undefined;
}

/** A stream's `finish` part, as far as a contingency's `finish` reads it. */
type Finish = { usage?: unknown; providerMetadata?: unknown };

/**
 * The guard's options for one `doStream`, and what it learns: the result whose stream it guards.
 * Before the first content an `error` part fails the attempt. After it error parts reach the
 * reader and the stream's `finish` decides (see the guard); a cut or a time-out reaches the
 * reader as the stream's error, as it would without the guard, or with `onInterrupted` the
 * contingency (see `GuardOptions.onInterrupted`).
 */
function modelStreamOptions(params: ModelCallOptions, guard: GuardOptions, continuing?: Continue) {
  let began = false;
  const { own, release } = follow(params.abortSignal, (reason) =>
    began && isBudget(reason)
      ? new DOMException(`the answer's time limit ran out after its first words (the app's budget, not counted): ${messageOf(reason)}`, 'AbortError')
      : reason,
  );
  const state: StreamState = { results: [], providerFailed: false };
  const options = streamGuardOptions(own.signal, guard, state, continuing !== undefined);
  const call = (stream: Stream, tier = 0) => async (ctx?: CallContext) => {
    const result = await stream(ctx?.signal ?? own.signal);
    state.result = state.results[tier] = result;
    return result.stream;
  };
  /**
   * With `onInterrupted`: the guarded stream as the reader gets it. Error parts and the `finish`
   * part wait until the stream ends: passed on as they came when the answer stands, replaced by
   * the contingency block and a `finish` of reason `error` when it was interrupted (an `error`
   * part would make `useChat` end in `status: 'error'`, and text after a closed block would be
   * lost: "text part … not found").
   */
  const shape = (guarded: ReadableStream<unknown>): ReadableStream<unknown> => {
    // The provider's raw chunks are asked for the guard (they say what the parts leave out: AI
    // SDK 7 drops a refusal's words); the reader gets them only if it asked too.
    const raw = params.includeRawChunks === true;
    const rawPart = (part: unknown): boolean => !raw && (part as { type?: unknown } | null)?.type === 'raw';
    if (guard.onInterrupted === undefined && continuing === undefined) {
      if (raw) return releasing(guarded, release);
      return releasing(guarded.pipeThrough(new TransformStream({ transform: (part, out) => void (rawPart(part) || out.enqueue(part)) })), release);
    }
    const held: unknown[] = [];
    let finish: Finish | undefined;
    // What the reader has of the answer, for a continuation: its text, the text block still open,
    // and the first part that makes continuing unsafe (a tool call, reasoning, a file...).
    const sent: Sent = { text: '', open: undefined, unsafe: undefined };
    return releasing(guarded.pipeThrough(
      new TransformStream<unknown, unknown>({
        transform(part, out) {
          const type = (part as { type?: unknown } | null)?.type;
          if (rawPart(part)) return;
          if (type === 'error') return void held.push(part);
          if (type === 'finish') return void (finish = part as Finish);
          if (continuing !== undefined) track(sent, part);
          out.enqueue(part);
        },
        async flush(out) {
          let cut = state.interrupted;
          if (cut === undefined) {
            for (const p of held) out.enqueue(p);
            if (finish !== undefined) out.enqueue(finish);
            return;
          }
          if (continuing !== undefined && sent.unsafe === undefined && sent.text !== '') {
            const ended = await continuing(sent, out, cut.error);
            if (ended === true) return;
            if (ended !== false) cut = ended;
          }
          endInterrupted(out, cut.error, held, finish, state.providerFailed, guard);
        },
      }),
    ), release);
  };
  /** The answer began (the guard resolved): a budget running out later is the app's. */
  const begin = (stream: ReadableStream<unknown>): ReadableStream<unknown> => ((began = true), stream);
  return { options, state, call, shape, release, begin };
}

/**
 * The stream guard's options for a model's answer: `guard`'s limits and `retry`, and how it reads
 * the parts (`endingOf`, `errorOf`) and an answer cut after its first words (`onInterrupted`),
 * noting in `state` what it saw.
 */
function streamGuardOptions(
  signal: AbortSignal,
  guard: GuardOptions,
  state: StreamState,
  continuing: boolean,
): BreakerStreamOptions<unknown> {
  // An error part was a chunk the schema rejected (the provider's own error: `state.providerFailed`).
  let rejected = false;
  return {
    signal,
    firstChunkTimeoutMs: guard.firstChunkTimeoutMs,
    idleTimeoutMs: guard.idleTimeoutMs,
    totalTimeoutMs: guard.totalTimeoutMs,
    firstOutputTimeoutMs: guard.firstOutputTimeoutMs,
    maxThinkingMs: guard.maxThinkingMs,
    retry: guard.retry,
    endingOf: (part) => {
      const ending = finishEnding(part);
      // @ai-sdk/openai ends with finishReason `error` (raw: none) after a rejected chunk, even
      // when the answer had finished: with no error of the provider's, the content decides.
      const raw = (part as { finishReason?: { raw?: unknown } }).finishReason?.raw;
      return ending === 'failed' && rejected && !state.providerFailed && raw === undefined ? 'unknown' : ending;
    },
    errorOf: (part) => {
      const p = part as { type?: unknown; error?: unknown } | null;
      if (typeof p !== 'object' || p === null || p.type !== 'error') return undefined;
      // A chunk the schema rejected passes on to the reader and counts for nothing (vercel/ai
      // #7417: a proxy's usage chunk without `choices`, the last chunk of every answer).
      if (typeof p.error === 'object' && p.error !== null && (p.error as Record<symbol, unknown>)[VALIDATION_ERROR] === true) {
        rejected = true;
        return undefined;
      }
      state.providerFailed = true;
      return partFailure(p.error, state.result?.response?.headers);
    },
    onInterrupted: (error) => {
      if (guard.onInterrupted === undefined && !continuing) {
        // The provider's error part has gone through to the reader already.
        if (state.providerFailed) return undefined;
        throw error;
      }
      // `shape` ends the stream: continued on the next tier, or with the contingency.
      state.interrupted = { error };
      return undefined;
    },
  };
}

/**
 * Ends an answer cut after its first words that no tier continued. Without `onInterrupted`, as
 * it ends today: the provider's error parts as they came, or the cut as the stream's error. With
 * it, its text in a block of its own, then a `finish` of reason `error`.
 */
function endInterrupted(
  out: TransformStreamDefaultController<unknown>,
  error: unknown,
  held: unknown[],
  finish: Finish | undefined,
  providerFailed: boolean,
  guard: GuardOptions,
): void {
  if (guard.onInterrupted === undefined) {
    for (const p of held) out.enqueue(p);
    if (!providerFailed) throw error;
    if (finish !== undefined) out.enqueue(finish);
    return;
  }
  const text = guard.onInterrupted(error);
  if (text !== undefined && text !== '') {
    const id = `breakwater-interrupted-${++contingencies}`;
    out.enqueue({ type: 'text-start', id });
    out.enqueue({ type: 'text-delta', id, delta: text });
    out.enqueue({ type: 'text-end', id });
  }
  out.enqueue({
    type: 'finish',
    finishReason: { unified: 'error', raw: 'breakwater-interrupted' },
    usage: finish?.usage ?? NO_USAGE,
    ...(finish?.providerMetadata === undefined ? {} : { providerMetadata: finish.providerMetadata }),
  });
}

const GUARD_KEYS = ['timeoutMs', 'firstChunkTimeoutMs', 'idleTimeoutMs', 'totalTimeoutMs', 'firstOutputTimeoutMs', 'maxThinkingMs', 'retry', 'onInterrupted'] as const;

function checkGuardOptions(o: Record<string, unknown>): GuardOptions {
  num('timeoutMs', o.timeoutMs, 0, 0);
  num('firstChunkTimeoutMs', o.firstChunkTimeoutMs, 0, 1);
  num('idleTimeoutMs', o.idleTimeoutMs, 0, 1);
  num('totalTimeoutMs', o.totalTimeoutMs, 0, 1);
  num('firstOutputTimeoutMs', o.firstOutputTimeoutMs, 0, 1);
  num('maxThinkingMs', o.maxThinkingMs, 0, 1);
  const r = o.retry;
  if (r !== undefined && typeof r !== 'boolean' && (typeof r !== 'object' || r === null)) fail('retry', r, 'true, false or withRetry options', true);
  if (o.onInterrupted !== undefined && typeof o.onInterrupted !== 'function') fail('onInterrupted', o.onInterrupted, 'a function', true);
  return o as GuardOptions;
}

function checkBreaker(option: string, b: unknown): ChainBreaker {
  const x = b as ChainBreaker | undefined;
  if (typeof x?.execute !== 'function' || typeof x.stream !== 'function') {
    fail(option, b, 'a breaker (CircuitBreaker, SharedCircuitBreaker or StoreCircuitBreaker)', true);
  }
  return x;
}

/**
 * The error an attempt hands the SDK, so that the SDK retries what breakwater would and nothing
 * else: an empty stream, or breakwater's own time-out before the first content, as a retryable
 * `ModelAnswerError` (the SDK retries only `APICallError`s); an `APICallError` the SDK would
 * retry that breakwater would not (a 429 whose code says the quota is spent, a prompt a content
 * policy refused) marked not retryable, or the SDK asks again for what waiting will not change.
 */
const rethrow = (e: unknown): never => {
  if (isEmptyStream(e)) throw emptyAnswer();
  if (isTimeoutError(e)) throw new ModelAnswerError('timeout', `the model sent no content in time: ${e.message}`, { error: e, isRetryable: true });
  return rethrowCall(e);
};

/** `rethrow`'s rule for an `APICallError`, for `generateText` too. */
const rethrowCall = (e: unknown): never => {
  if (isHttpApiCallError(e) && (e as { isRetryable?: unknown }).isRetryable === true && !classifyError(e).retryable) {
    // The SDK's own error stays what it is (class, status, data); only its verdict changes.
    Object.defineProperty(e, 'isRetryable', { value: false, configurable: true });
  }
  throw e;
};

/**
 * A middleware for `wrapLanguageModel` that puts every attempt of the AI SDK behind `breaker`
 * (a `CircuitBreaker`, or a `SharedCircuitBreaker` / `StoreCircuitBreaker`).
 *
 * - Refused (OPEN): `CircuitOpenError` (`isCircuitOpenError`), which the SDK does not retry;
 *   the provider sees no request.
 * - `generateText`: a failure is counted as breakwater classifies it (429, 5xx, 529, time-outs,
 *   network errors fail; 400 and a cancel do not); an empty answer fails the attempt.
 * - `streamText`: the stream is watched part by part. An `error` part, a time-out, a cut or the
 *   end of the stream before the first text, reasoning or tool delta fails the attempt (the
 *   call rejects: the SDK may retry, a fallback moves on). After it the failure is counted and
 *   the stream goes on to the reader as the provider sent it (never retried).
 * - The SDK's time-outs (`timeout`, `abortSignal: AbortSignal.timeout(…)`) count as failures; a
 *   user's abort is ignored.
 */
export function breakerMiddleware(breaker: ChainBreaker, options: GuardOptions = {}): BreakerMiddleware {
  checkBreaker('breaker', breaker);
  const o = obj('breakerMiddleware options', options) ?? {};
  checkKeys('breakerMiddleware options', o, GUARD_KEYS);
  const guard = checkGuardOptions(o);
  const execute = breaker.execute as (fn: (c: CallContext) => unknown, o?: object) => Promise<unknown>;
  const stream = breaker.stream as (fn: (c: CallContext) => unknown, o?: object) => Promise<ReadableStream<unknown>>;
  return {
    specificationVersion: 'v3',
    wrapGenerate: ({ params, model }) => {
      const g = generateGuard(params);
      const call = g.call((signal) => model.doGenerate({ ...params, abortSignal: signal }));
      return g.run(execute.call(breaker, call, { signal: g.signal, timeoutMs: guard.timeoutMs })).catch(rethrowCall) as Promise<never>;
    },
    wrapStream: async ({ params, model }) => {
      const g = modelStreamOptions(params, guard);
      const guarded = await stream
        .call(breaker, g.call((signal) => model.doStream({ ...params, includeRawChunks: true, abortSignal: signal })), g.options)
        .then(g.begin, (e: unknown) => (g.release(), rethrow(e)));
      return { ...g.state.result!, stream: g.shape(guarded) } as never;
    },
  };
}

/**
 * A prompt's input tokens, estimated: its text's characters / 4 (OpenAI's rule of thumb for
 * English), what a tier aborted by a hedge was likely billed at least. Files and images are not
 * counted.
 */
function promptTokens(params: { prompt?: unknown }): number {
  let chars = 0;
  const walk = (v: unknown, depth: number): void => {
    if (depth > 6) return;
    if (typeof v === 'string') chars += v.length;
    else if (Array.isArray(v)) for (const x of v) walk(x, depth + 1);
    else if (typeof v === 'object' && v !== null) {
      const p = v as { type?: unknown; text?: unknown; content?: unknown; input?: unknown };
      if (typeof p.text === 'string') chars += p.text.length;
      if (p.content !== undefined) walk(p.content, depth + 1);
      if (p.type === 'tool-call' && p.input !== undefined) chars += JSON.stringify(p.input)?.length ?? 0;
    }
  };
  walk(params.prompt, 0);
  return Math.ceil(chars / 4);
}

/**
 * Reads a continuation's parts into `out` as the rest of the interrupted answer: its first text
 * block goes on in the block left open (or opens one), its start trimmed of what repeats the
 * answer so far (`trimOverlap`, on up to the answer's length plus 48 characters, or the whole
 * first block); its `finish` ends the stream. `{ error }` if it fails in its turn.
 */
async function pipeContinuation(
  reader: ReadableStreamDefaultReader<unknown>,
  sent: Sent,
  out: TransformStreamDefaultController<unknown>,
): Promise<true | { error: unknown }> {
  let first: unknown; // the continuation's first text block (its id)
  let id = sent.open;
  let head: string | undefined = ''; // the start held back for trimming; undefined once sent
  const want = Math.min(sent.text.length, 400) + 48;
  const release = (): void => {
    if (head === undefined) return;
    const text = trimOverlap(sent.text, head);
    head = undefined;
    if (text !== '') out.enqueue({ type: 'text-delta', id, delta: text });
  };
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      const p = r.value as { type?: unknown; id?: unknown; delta?: unknown };
      if (p.type === 'stream-start' || p.type === 'response-metadata' || (p.type === 'custom' && META.test(String((p as { kind?: unknown }).kind)))) continue;
      if (p.type === 'text-start' && first === undefined) {
        first = p.id;
        if (id === undefined) out.enqueue({ ...p, id: (id = p.id) });
        continue;
      }
      if (p.id === first && first !== undefined) {
        if (p.type === 'text-delta' && head !== undefined) {
          head += typeof p.delta === 'string' ? p.delta : '';
          if (head.length >= want) release();
          continue;
        }
        if (p.type === 'text-end') release();
        out.enqueue({ ...p, id });
        continue;
      }
      if (p.type === 'finish') release();
      out.enqueue(p);
    }
    release();
    return true;
  } catch (error) {
    release();
    return { error };
  }
}

/** Per media type, the URL patterns every tier supports (same source and flags). */
async function commonUrls(models: readonly LanguageModelLike[]): Promise<Record<string, RegExp[]>> {
  const all = await Promise.all(models.map((m) => m.supportedUrls));
  const [first, ...rest] = all;
  const out: Record<string, RegExp[]> = {};
  for (const [type, patterns] of Object.entries(first ?? {})) {
    const kept = patterns.filter((p) => rest.every((r) => (r?.[type] ?? []).some((q) => q.source === p.source && q.flags === p.flags)));
    if (kept.length > 0) out[type] = kept;
  }
  return out;
}

/**
 * A language model that answers from the first tier whose breaker admits the call and whose
 * answer begins, for `generateText` and `streamText` alike: an OPEN tier is skipped at once (no
 * request), an upstream failure (429, 5xx, 529, time-out, an error before the first content, an
 * empty answer) moves on to the next tier, a request error (400, 422) stops. When every tier
 * refused, `CircuitOpenError` with the soonest `retryAfterMs`. Built on `FallbackChain`.
 *
 * Tiers must share one specification version (all AI SDK 6 providers, or all AI SDK 7). A tier
 * without `breaker` uses the one named `provider:modelId` in `globalBreakers()`.
 */
export function fallbackModel<M extends LanguageModelLike>(
  tiers: ReadonlyArray<FallbackTier<M>>,
  options: FallbackModelOptions = {},
): FallbackModel<M> {
  if (!Array.isArray(tiers) || tiers.length === 0) fail('tiers', tiers, 'a non-empty array of { model, breaker? }', true);
  const o = obj('fallbackModel options', options) ?? {};
  checkKeys('fallbackModel options', o, [...GUARD_KEYS, 'name', 'fallThrough', 'registry', 'breakerOptions', 'hedge', 'continueOnBackup']);
  if (o.continueOnBackup !== undefined && typeof o.continueOnBackup !== 'boolean') fail('continueOnBackup', o.continueOnBackup, 'true or false', true);
  const guard = checkGuardOptions(o);
  if (o.registry !== undefined && typeof (o.registry as BreakerRegistry | null)?.get !== 'function') {
    fail('registry', o.registry, 'a BreakerRegistry', true);
  }
  const breakerOptions = obj('breakerOptions', o.breakerOptions) as CircuitBreakerOptions | undefined;
  // Checked now, under this function's name (a registry of your own checks them over its defaults).
  if (breakerOptions !== undefined && o.registry === undefined) breakerConfig(breakerOptions, 'fallbackModel options.breakerOptions');
  const defs = checkTiers<M>(tiers, o.registry as BreakerRegistry | undefined, breakerOptions);
  const chainOptions = {
    name: (o.name as string | undefined) ?? 'fallback-model',
    ...(o.fallThrough === undefined ? {} : { fallThrough: o.fallThrough as (e: unknown) => boolean }),
    ...(o.hedge === undefined ? {} : { hedge: o.hedge as HedgeOption }),
  };
  const events = new Emitter<TierEvent>();
  const emit = (e: Omit<TierEvent, 'chain'>): void => {
    if (events.size) events.emit({ chain: chainOptions.name, ...e });
  };
  /** A chain for one call: each tier's `call` closes over this call's options. */
  const chain = <T>(call: (model: M, tier: number) => (ctx?: CallContext) => T | Promise<T>): FallbackChain<T> => {
    const c = new FallbackChain<T>(
      defs.map((d, i) => ({ breaker: d.breaker, call: call(d.model, i), ...(d.name === undefined ? {} : { name: d.name }) })),
      chainOptions,
    );
    if (events.size) c.onTier((e) => events.emit(e));
    return c;
  };
  // Fail now, not on the first call, if the chain's own options are wrong.
  chain(() => () => undefined);
  const hedging = o.hedge !== undefined;
  const primary = defs[0]!.model;
  let urls: Promise<Record<string, RegExp[]>> | undefined;
  const model = {
    specificationVersion: primary.specificationVersion,
    provider: primary.provider,
    modelId: primary.modelId,
    get supportedUrls() {
      return (urls ??= commonUrls(defs.map((d) => d.model)));
    },
    async doGenerate(params: ModelCallOptions) {
      const g = generateGuard(params);
      const c = chain((m) => g.call((signal) => m.doGenerate({ ...params, abortSignal: signal })));
      const input = hedging ? { inputTokens: promptTokens(params) } : {};
      return g.run(c.execute({ signal: g.signal, timeoutMs: guard.timeoutMs, ...input }).then((r) => r.value)).catch(rethrowCall);
    },
    async doStream(params: ModelCallOptions) {
      // One guard serves every tier; its result is the answering tier's (a hedge runs two).
      let answered = -1;
      const continuing: Continue | undefined =
        o.continueOnBackup === true ? (sent, out, error) => continueOn(defs, guard, emit, answered + 1, params, sent, out, error) : undefined;
      const g = modelStreamOptions(params, guard, continuing);
      const c = chain((m, i) => g.call((signal) => m.doStream({ ...params, includeRawChunks: true, abortSignal: signal }), i));
      const options = hedging ? { ...g.options, inputTokens: promptTokens(params) } : g.options;
      const { value, tier } = await c.stream<unknown>(options).catch((e: unknown) => (g.release(), rethrow(e)));
      answered = tier;
      g.state.result = g.state.results[tier] ?? g.state.result;
      return { ...g.state.result!, stream: g.shape(g.begin(value)) };
    },
    onTier: (listener: (event: TierEvent) => void): Unsubscribe => events.subscribe(listener),
  };
  return model as unknown as FallbackModel<M>;
}

/** A tier of `fallbackModel`, checked: its model, its breaker (given or found) and its name if given. */
interface CheckedTier<M extends LanguageModelLike> {
  model: M;
  breaker: ChainBreaker;
  name?: string;
}

/**
 * `fallbackModel`'s tiers, checked: each an object with a language model of the first one's
 * specification version; a tier without `breaker` gets the one named `provider:modelId` in
 * `registry` (default `globalBreakers()`), made with `breakerOptions` if it is new.
 */
function checkTiers<M extends LanguageModelLike>(
  tiers: ReadonlyArray<FallbackTier<M>>,
  registry: BreakerRegistry | undefined,
  breakerOptions: CircuitBreakerOptions | undefined,
): CheckedTier<M>[] {
  let version: string | undefined;
  return tiers.map((t, i) => {
    const tier = obj(`tiers[${i}]`, t) ?? fail(`tiers[${i}]`, t, 'an object { model, breaker? }', true);
    checkKeys(`tiers[${i}]`, tier, ['model', 'breaker', 'name']);
    const model = tier.model as M;
    if (typeof model?.doGenerate !== 'function' || typeof model.doStream !== 'function' || typeof model.specificationVersion !== 'string') {
      fail(`tiers[${i}].model`, model, 'a language model object (e.g. anthropic("claude-…"); model id strings are not supported)', true);
    }
    version ??= model.specificationVersion;
    if (model.specificationVersion !== version) {
      fail(`tiers[${i}].model.specificationVersion`, model.specificationVersion, `"${version}" like tiers[0] (one AI SDK version for every tier)`, true);
    }
    const breaker =
      tier.breaker === undefined
        ? (registry ?? globalBreakers()).get(`${model.provider}:${model.modelId}`, breakerOptions)
        : checkBreaker(`tiers[${i}].breaker`, tier.breaker);
    return { model, breaker, ...(tier.name === undefined ? {} : { name: tier.name as string }) };
  });
}

/**
 * Continues the answer cut on a tier before `from` on the first tier from `from` on that can
 * (`continuationOf`) and whose stream begins; see `Continue`. `emit` reports the tiers tried.
 */
async function continueOn(
  tiers: ReadonlyArray<CheckedTier<LanguageModelLike>>,
  guard: GuardOptions,
  emit: (e: Omit<TierEvent, 'chain'>) => void,
  from: number,
  params: ModelCallOptions,
  sent: Sent,
  out: TransformStreamDefaultController<unknown>,
  cause: unknown,
): Promise<true | false | { error: unknown }> {
  for (let i = from; i < tiers.length; i++) {
    const d = tiers[i]!;
    const name = d.name ?? d.breaker.name;
    const style = continuationOf(d.model, { thinking: thinkingOn(params as { providerOptions?: unknown }) });
    if (style === 'restart') continue;
    const prompt = continuationPrompt(params.prompt, sent.text, style);
    const next = { ...params, prompt };
    const g = modelStreamOptions(next, { ...guard, onInterrupted: undefined });
    const stream = d.breaker.stream as (fn: (c: CallContext) => unknown, o?: object) => Promise<ReadableStream<unknown>>;
    let parts: ReadableStream<unknown>;
    try {
      parts = g.shape(g.begin(await stream.call(d.breaker, g.call((signal) => d.model.doStream({ ...next, includeRawChunks: true, abortSignal: signal })), g.options)));
    } catch (e) {
      g.release();
      emit({ tier: i, name, outcome: isCircuitOpenError(e) ? 'skipped' : 'failed', error: e });
      continue;
    }
    emit({ tier: i, name, outcome: 'continued', inputTokens: promptTokens(next), error: cause });
    return pipeContinuation(parts.getReader(), sent, out);
  }
  return false;
}

/**
 * What `answerBegun` reads of a `streamText` result (AI SDK 6 and 7).
 * @inline
 */
export interface StreamTextResultLike {
  /** The answer's parts (`streamText` hands each reader a copy of them). */
  readonly fullStream: AsyncIterable<unknown>;
}

/**
 * Waits until a `streamText` answer has begun, so that a route can still choose its status:
 * `toUIMessageStreamResponse()` and `toTextStreamResponse()` answer 200 at once and report a
 * failure inside the stream ("An error occurred."). Resolves at the answer's first part from the
 * model (with `breakerMiddleware` or `fallbackModel`: once some tier's stream has begun), or when
 * the stream ends without one (the caller aborted); rejects with the error that kept it from
 * beginning: the `CircuitOpenError` with the soonest `retryAfterMs` when every tier refused, else
 * the last failure (the SDK's `RetryError` when it retried). Hand that error to `errorResponse`.
 *
 * It reads a copy of `result.fullStream` up to that part and then lets it go: the SDK keeps the
 * parts for the response made afterwards, which sends them all. Not for `streamTextLowMemory`
 * (AI SDK 7), whose result has one reader.
 */
export async function answerBegun(result: StreamTextResultLike): Promise<void> {
  const parts = result.fullStream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const r = await parts.next();
      if (r.done === true) return;
      const p = r.value as { type?: unknown; error?: unknown } | null;
      if (p?.type === 'error') throw p.error;
      if (p?.type !== 'start') return;
    }
  } finally {
    void Promise.resolve(parts.return?.()).catch(() => {});
  }
}

/**
 * A `Response` for an error that kept an answer from beginning (`answerBegun`'s, or any call's),
 * whose body is `message` as plain text (what `useChat` shows as its `error.message`):
 * - 503 with `Retry-After` (seconds, rounded up, at least 1) for a refusal (`CircuitOpenError`:
 *   its `retryAfterMs`, the soonest of the tiers' with `fallbackModel`) and for an upstream
 *   failure (429, 5xx, 529, a time-out, a network error, an error before the first content: the
 *   wait its response asked for, when it asked; else no `Retry-After`);
 * - 502 for anything else (a request error such as a 400 from the provider).
 * The default message says which, and no more (the provider's error is not sent to the client).
 */
export function errorResponse(error: unknown, message?: string): Response {
  const last = (error as { lastError?: unknown } | null | undefined)?.lastError ?? error;
  const unavailable = isCircuitOpenError(last) || classifyError(error).failure;
  const wait = unavailable ? retryAfterMs(error) : undefined;
  const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
  if (wait !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(wait / 1000)));
  const text = message ?? (unavailable ? 'The model is unavailable right now. Please try again later.' : 'The model could not answer.');
  return new Response(text, { status: unavailable ? 503 : 502, headers });
}
