// Guarding a streamed answer: one outcome per stream, decided by how it ends. Before the first
// content chunk a failure rejects the caller's promise (so retries and fallbacks apply); after it
// the stream is never retried, and a failure ends it with what was sent plus the contingency
// `onInterrupted` gives. A refusal (or a budget spent) before any content is the app's to read:
// the stream as it came, not counted. Every
// breaker of the package (`CircuitBreaker`, the shared and store breakers) runs this one guard
// between its own admission and its own report.
//
// This module holds what is public and what the other entries build on (the options, the
// errors, `Chunks`), and what the guard reads of them; the guard itself (js/src/guards/guard.ts, with its
// event-stream reader) is loaded by js/src/guards/load-guard.ts on the first `stream()` call, so an app
// that never streams does not download it (a bundler that splits makes it a chunk of its own; one
// that does not inlines it).
import type { Ending } from '../classify.js';

/** What a streaming call may return: a fetch `Response` (its body), a `ReadableStream` or an async iterable. */
export type StreamSource<T> = Response | ReadableStream<T> | AsyncIterable<T>;

/** An event of a `text/event-stream` body, as `isContent`, `errorOf` and `endingOf` see it. */
export interface SseEvent {
  /** The `event:` field (undefined for the default `message`). */
  event: string | undefined;
  /** The `data:` field (several `data:` lines joined with `\n`). */
  data: string;
}

/** The stream guard's options, each optional: an abort signal, time limits, the contingency after a cut, and how chunks are read. */
export interface StreamOptions<T> {
  /** Aborting cancels the stream; a cancel says nothing about the upstream (ignored). */
  signal?: AbortSignal | undefined;
  /**
   * Fail the attempt (a `TimeoutError`, retryable) when the model shows no sign of working
   * within this many ms of the call: the wait for the response's headers and everything before
   * the first text, thinking, tool input, server tool result or image. Keep-alives (Anthropic's
   * `ping`, SSE comments) and markers (a role chunk, `message_start`) do not count: they prove
   * the connection, not the model.
   */
  firstChunkTimeoutMs?: number | undefined;
  /**
   * Cut the stream (a `TimeoutError`, the `onInterrupted` contingency) when the model shows no
   * sign of working for this many ms after the last one (thinking counts; keep-alives and
   * markers do not). Silence is measured at the provider: the guard reads ahead of the app, and
   * while the app is behind (its buffer full) the limit stands still. Before the first sign
   * only `firstChunkTimeoutMs` counts.
   */
  idleTimeoutMs?: number | undefined;
  /**
   * A limit for the whole stream, from the call to its end: before the first content it fails
   * the attempt (a `TimeoutError`, retryable, counted: nothing came in all that time); after it
   * it is a cut (the `onInterrupted` contingency) that is not counted: the app's budget for a long
   * answer ran out, the upstream was answering. Once the answer named its ending, running out only
   * closes the stream.
   */
  totalTimeoutMs?: number | undefined;
  /**
   * Off by default. Cut the stream (counted) when no output (text, a tool call, an image: not
   * thinking) came within this many ms of the call: a reasoning model that thinks for longer than
   * the app can wait.
   */
  firstOutputTimeoutMs?: number | undefined;
  /**
   * Off by default. Cut the stream (counted) when the model has been thinking for this many ms
   * with no output in between: a model looping in its thoughts. Output starts the count anew.
   */
  maxThinkingMs?: number | undefined;
  /**
   * After the first content chunk a failure is never retried (the reader already has part of
   * the answer): the stream ends with what was sent plus this function's return value (a chunk,
   * or a string, encoded for byte streams) instead of erroring. Undefined ends it with nothing more.
   * (Not a hint for `T`: a string here leaves a byte stream's type `Uint8Array`.)
   */
  onInterrupted?: ((error: unknown) => NoInfer<T> | string | undefined | Promise<NoInfer<T> | string | undefined>) | undefined;
  /**
   * Whether a chunk is content (the model at work). Chunks before it (a role header, a ping)
   * are held back and released with it. For a `text/event-stream` Response it gets each event.
   * Default: the core's rules for every provider (src/stream/read.rs), the same for an event
   * stream's events and for the official SDKs' stream objects and the AI SDK's parts: text,
   * thinking, tool input, a tool call, a server tool's result (web search, code execution), an
   * image, a compaction block; never a field that is empty (`""`, `[]`), a role chunk, a block's
   * start without words, `message_start`, `response.created` and the other markers, `[DONE]`.
   */
  isContent?: ((chunk: T | SseEvent) => boolean) | undefined;
  /**
   * An error carried inside the stream (an SSE `error` event in a 200 answer), or undefined.
   * Before the first content it fails the attempt (retried with `retry`); after it the chunk
   * goes on to the reader and the error is remembered: the stream fails if it ends with no
   * ending named after the error. Default, the core's: Anthropic's `error` event, an `error`
   * object in OpenAI's or Gemini's data, Responses' `error` and `response.failed`, as a
   * `StreamError` whose `status` follows the error's code or type (overloaded_error → 529...).
   * (The SDKs throw for some of these themselves; a thrown error is classified as it is.)
   */
  errorOf?: ((chunk: T | SseEvent) => unknown) | undefined;
  /**
   * The answer's ending when this chunk names it, or undefined (then the core's reading of the
   * chunk stands: the default below). How the stream ends decides its
   * outcome: `complete`, `truncated` or `unknown` → a success; `declined` → not counted; `failed`
   * → a failure. With no content before it, `declined` and `truncated` (a refusal, a reasoning
   * budget spent) resolve with the stream as it came, not counted and never retried; `failed`
   * rejects. Default, the core's: Anthropic's `message_delta` stop reason, OpenAI's and
   * Gemini's finish reason, a refusal in words (Chat's `delta.refusal`, Responses'
   * `response.refusal.delta`: declined), Responses' `response.completed` / `response.incomplete`
   * (its reason) / `response.failed`, the AI SDK's `finish` part.
   */
  endingOf?: ((chunk: T | SseEvent) => Ending | undefined) | undefined;
  /** Which duration the slow-call rule sees: time to first content (default) or the whole stream. */
  measure?: 'first-chunk' | 'total' | undefined;
}

/** Why a stream failed without a thrown error: an error status, an error event, or no content. */
export class StreamError extends Error {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'StreamError';
  /** `instanceof` holds for one thrown by any copy of this package. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return (value as Partial<StreamError> | null)?.isStreamError === true;
  }
  /** Always `true`: what `instanceof StreamError` checks, so it holds across copies of the package. */
  readonly isStreamError = true as const;
  // The fields are declared only (set in the constructor), so that no second set of field
  // initialisers is emitted into the main entry.
  /** The HTTP status the failure stands for (the response's, or the error event's type). */
  declare readonly status: number | undefined;
  /** The error's type, e.g. `overloaded_error`. */
  declare readonly type: string | undefined;
  /** The response's headers (so `Retry-After` is read), when the response had an error status. */
  declare readonly headers: Headers | undefined;
  /**
   * `'status'`: the response had an error status; `'event'`: an error event in the stream, or an
   * ending that says the answer failed; `'empty'`: the stream ended without content;
   * `'malformed'`: a frame that was not what it began to be (JSON cut short; status 502).
   */
  declare readonly kind: 'status' | 'event' | 'empty' | 'malformed';
  /** An error status's body as text (at most its first 64 KiB), so Gemini's `RetryInfo` is read. */
  declare readonly body: string | undefined;
  /** The provider's error as it came: the error body's JSON, or the error event's. */
  declare readonly error: unknown;

  constructor(kind: StreamError['kind'], message: string, status?: number, type?: string, headers?: Headers, body?: string, error?: unknown) {
    super(message);
    this.name = 'StreamError';
    this.kind = kind;
    this.status = status;
    this.type = type;
    this.headers = headers;
    this.body = body;
    this.error = error;
  }
}

/** How a guard reports the stream's one outcome to its breaker. */
export type Settle = (outcome: number, error: unknown, durationMs: number) => void;
/** How a breaker counts an error (`outcomeCode` with its own `isFailure`). */
export type Classify = (error: unknown, signal: AbortSignal | undefined) => number;

/** The mark of `Chunks`. */
export const CHUNKS = Symbol.for('breakwater.Chunks');

/**
 * Several chunks from one `onInterrupted` (for `breakwater/ai`: a text part, then an error part).
 * Recognised by a global symbol, not `instanceof`: the breaker streaming and the `breakwater/ai`
 * that made the chunks can come from two bundled copies of the package (Next.js bundles each
 * layer on its own, and `globalBreakers()` hands the same breaker to all of them).
 */
export class Chunks {
  readonly [CHUNKS] = true;
  constructor(readonly items: readonly unknown[]) {}
}
