// Guarding a streamed answer: one outcome per stream, settled when it ends. Before the first
// content chunk the caller's promise rejects (so retries and fallbacks apply); after it the stream
// is never retried, it ends with what was sent plus the contingency `onInterrupted` gives. Every
// breaker of the package (`CircuitBreaker`, the shared and store breakers) runs this one guard
// between its own admission and its own report.
//
// This module holds what is public and what the other entries build on (the options, the
// errors, `Chunks`); the guard itself (js/src/guard.ts, with its event-stream reader) is loaded on
// the first `stream()` call, so an app that never streams does not download it (a bundler that
// splits makes it a chunk of its own; one that does not inlines it).
import { IGNORED } from './classify.js';
import type { guardStream as Guard } from './guard.js';

/** What a streaming call may return: a fetch `Response` (its body), a `ReadableStream` or an async iterable. */
export type StreamSource<T> = Response | ReadableStream<T> | AsyncIterable<T>;

/** An event of a `text/event-stream` body, as `isContent` and `errorOf` see it. */
export interface SseEvent {
  /** The `event:` field (undefined for the default `message`). */
  event: string | undefined;
  data: string;
}

export interface StreamOptions<T> {
  /** Aborting cancels the stream; a cancel says nothing about the upstream (ignored). */
  signal?: AbortSignal | undefined;
  /** Fail (a `TimeoutError`, retryable) when no content arrives within this many ms of the call. */
  firstChunkTimeoutMs?: number | undefined;
  /** Fail when the upstream sends nothing for this many ms while the stream is read. */
  idleTimeoutMs?: number | undefined;
  /**
   * After the first content chunk a failure is never retried (the reader already has part of
   * the answer): the stream ends with what was sent plus this function's return value (a chunk,
   * or a string, encoded for byte streams) instead of erroring. Undefined ends it with nothing more.
   * (Not a hint for `T`: a string here leaves a byte stream's type `Uint8Array`.)
   */
  onInterrupted?: ((error: unknown) => NoInfer<T> | string | undefined | Promise<NoInfer<T> | string | undefined>) | undefined;
  /**
   * Whether a chunk is content (the answer began). Chunks before it (a role header, a ping) are
   * held back and released with it. For a `text/event-stream` Response it gets each event.
   * Default: a non-empty chunk; for event streams, an event carrying text (not a ping, a start or
   * stop marker, `[DONE]` or an error) in the Anthropic, OpenAI or generic shape.
   */
  isContent?: ((chunk: T | SseEvent) => boolean) | undefined;
  /**
   * An error carried inside the stream (an SSE `error` event in a 200 answer), or undefined.
   * Default for event streams: Anthropic's `event: error` and an `error` object in a `data:` line,
   * as a `StreamError` whose `status` follows the error's type (overloaded_error → 529...).
   */
  errorOf?: ((chunk: T | SseEvent) => unknown) | undefined;
  /** Which duration the slow-call rule sees: time to first content (default) or the whole stream. */
  measure?: 'first-chunk' | 'total' | undefined;
}

/** @internal */
export const KEYS = ['signal', 'firstChunkTimeoutMs', 'idleTimeoutMs', 'onInterrupted', 'isContent', 'errorOf', 'measure'] as const;

/** Why a stream failed without a thrown error: an error status, an error event, or no content. */
export class StreamError extends Error {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'StreamError';
  /** `instanceof` holds for one thrown by any copy of this package. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return (value as Partial<StreamError> | null)?.isStreamError === true;
  }
  readonly isStreamError = true as const;
  /** The HTTP status the failure stands for (the response's, or the error event's type). */
  readonly status: number | undefined;
  /** The error's type, e.g. `overloaded_error`. */
  readonly type: string | undefined;
  /** The response's headers (so `Retry-After` is read), when the response had an error status. */
  readonly headers: Headers | undefined;
  readonly kind: 'status' | 'event' | 'empty';

  constructor(kind: StreamError['kind'], message: string, status?: number, type?: string, headers?: Headers) {
    super(message);
    this.name = 'StreamError';
    this.kind = kind;
    this.status = status;
    this.type = type;
    this.headers = headers;
  }
}

/** How a guard reports the stream's one outcome to its breaker. */
export type Settle = (outcome: number, error: unknown, durationMs: number) => void;
/** How a breaker counts an error (`outcomeCode` with its own `isFailure`). */
export type Classify = (error: unknown, signal: AbortSignal | undefined) => number;

/** @internal */
export const CHUNKS = Symbol.for('breakwater.Chunks');

/**
 * Several chunks from one `onInterrupted` (for `breakwater/ai`: a text part, then an error part).
 * Recognised by a global symbol, not `instanceof`: the breaker streaming and the `breakwater/ai`
 * that made the chunks can come from two bundled copies of the package (Next.js bundles each
 * layer on its own, and `globalBreakers()` hands the same breaker to all of them).
 * @internal
 */
export class Chunks {
  readonly [CHUNKS] = true;
  constructor(readonly items: readonly unknown[]) {}
}

/**
 * Runs `fn` (already admitted) and guards what it streams; `settle` is called exactly once.
 * Resolves with the guarded stream once the first content chunk arrived. Loads the guard first.
 * @internal
 */
export function guardStream<T>(...args: Parameters<typeof Guard<T>>): Promise<ReadableStream<T>> {
  return import('./guard.js').then(
    (guard) => guard.guardStream(...args),
    (e: unknown) => {
      // The chunk did not load (a network error in a browser): the call was never made.
      args[3](IGNORED, e, 0);
      throw e;
    },
  );
}
