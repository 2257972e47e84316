// The stream guard (see js/src/guards/stream.ts, which loads this module on the first `stream()` call):
// one outcome per stream, decided by how the stream ends; the readers that tell content, errors
// and endings apart in an event stream and in the official SDKs' stream events; the time limits.
import { TimeoutError } from '../helpers/errors.js';
import { checkKeys, fail, fn as optFn, num } from '../helpers/options.js';
import { FAILURE, IGNORED, SUCCESS, endingOf, isResponse, statusOfCode, type Ending } from '../classify.js';
import { CHUNKS, StreamError, type Chunks, type Classify, type Settle, type SseEvent, type StreamOptions, type StreamSource } from './stream.js';

// Events that are never content, whatever their data: Anthropic's markers and keep-alive.
const NOT_CONTENT = new Set(['ping', 'message_start', 'message_stop', 'message_delta', 'content_block_stop', 'error']);
// The option names, checked here (not in the main entry) since only a stream reads them.
const KEYS = ['signal', 'firstChunkTimeoutMs', 'idleTimeoutMs', 'totalTimeoutMs', 'onInterrupted', 'isContent', 'errorOf', 'endingOf', 'measure'];

/**
 * Splits a `text/event-stream` into events by the WHATWG rules that matter here (LF, CR or CRLF
 * line ends, `event:` and `data:` fields, comments, one optional space after the colon). Written
 * here rather than taken from eventsource-parser, which would add 1.6 KB gzip to every app's
 * bundle; only what a chunk means is read, the bytes pass through untouched.
 */
function sseSplitter(): (text: string, out: SseEvent[]) => void {
  let rest = '';
  let event: string | undefined;
  let data: string[] = [];
  return (text, out) => {
    const lines = (rest + text).split(/\r\n|\n|\r(?!$)/);
    // The last piece is an unfinished line (or a lone CR that a LF may follow).
    rest = lines.pop()!;
    // A line without end (a broken or hostile upstream) is not kept growing: past 1 MiB it is
    // let go (the bytes still pass through; only their meaning is not read).
    if (rest.length > 1 << 20) rest = '';
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) out.push({ event, data: data.join('\n') });
        event = undefined;
        data = [];
        continue;
      }
      const colon = line.indexOf(':');
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
    }
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// The three readers below look at JSON as it came (an event's data, an SDK's stream event), so
// they read it loosely, with optional chaining.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// An event's data, parsed once for the three readers (they ask about the same event in a row).
let lastEvent: SseEvent | undefined;
let lastData: unknown;
function dataOf(e: SseEvent): Json {
  if (e !== lastEvent) {
    lastEvent = e;
    const d = e.data.trim();
    lastData = parseJson(d) ?? d;
  }
  return lastData;
}

function nonEmpty(chunk: unknown): boolean {
  if (chunk === undefined || chunk === null) return false;
  if (typeof chunk === 'string') return chunk !== '';
  if (ArrayBuffer.isView(chunk)) return chunk.byteLength > 0;
  return true;
}

/**
 * Whether an item is content, the same rule for an event's JSON and for an SDK's stream event:
 * Anthropic, a `content_block_delta` with text, thinking or tool input, or the start of a tool
 * call (its input may be empty); OpenAI Chat, a delta with anything but the role; Responses, a
 * non-empty `*.delta` (text, refusal, arguments, reasoning); Gemini, a part with text or a call.
 * Anything else that is not a known marker counts (for an event stream: a `type` ending in
 * `delta`, or JSON without a type, or text).
 */
function contentOf(j: Json, sse: boolean): boolean {
  if (typeof j !== 'object' || j === null || ArrayBuffer.isView(j)) return nonEmpty(j);
  if (Array.isArray(j.choices)) {
    return j.choices.some((c: Json) =>
      Object.entries(c?.delta ?? {}).some(([k, v]) => k !== 'role' && (typeof v === 'string' ? v !== '' : v != null)),
    );
  }
  if (Array.isArray(j.candidates)) return j.candidates.some((c: Json) => c?.content?.parts?.some((p: Json) => p?.text || p?.functionCall));
  const t = j.type;
  if (typeof t !== 'string') return true;
  if (t === 'content_block_delta') return !!(j.delta?.text || j.delta?.thinking || j.delta?.partial_json);
  if (t === 'content_block_start') return /tool_use$/.test(j.content_block?.type);
  if (t.startsWith('response.')) return t.endsWith('.delta') && typeof j.delta === 'string' && j.delta !== '';
  return !NOT_CONTENT.has(t) && (!sse || t.endsWith('delta'));
}

/**
 * The error an item carries: Anthropic's `error` event, an `error` object in OpenAI's or
 * Gemini's data (OpenRouter's comes in a chunk with `choices`), Responses' `error` and
 * `response.failed`; an `Error` one carries as it is.
 */
function errorIn(j: Json, named = false): unknown {
  if (typeof j !== 'object' || j === null) return undefined;
  const t = j.type;
  const e =
    t === 'error' || named
      ? typeof j.error === 'object' && j.error !== null ? j.error : j
      : t === 'response.failed'
        ? j.response?.error ?? {}
        : j.error;
  if (typeof e !== 'object' || e === null) return undefined;
  return e instanceof Error ? e : providerError('event', e, j);
}

/**
 * A `StreamError` for a provider's error object `e` (Anthropic's `{ type }`, OpenAI's
 * `{ code, type }`, Gemini's `{ code: 429, status }`); `j` is what it came in (kept as `error`).
 */
function providerError(kind: 'status' | 'event', e: Json, j: unknown, status?: number, headers?: Headers, body?: string): StreamError {
  // OpenAI's `code` is the specific one (`rate_limit_exceeded` under type `requests`).
  const type: string | undefined = [e.code, e.type, e.status].find((v) => typeof v === 'string' && v !== 'error');
  status ??= statusOfCode(type) ?? statusOfCode(e.type) ?? (e.code >= 400 && e.code <= 599 ? e.code : 500);
  const message = typeof e.message === 'string' ? `: ${e.message}` : '';
  const what = kind === 'status' ? `the upstream answered ${status}` : 'error event in the stream';
  return new StreamError(kind, `${what} (${type ?? status})${message}`, status, type, headers, body, j);
}

/**
 * The ending an item names: Anthropic's `message_delta` stop reason, OpenAI's and Gemini's
 * finish reason (or Gemini's blocked prompt), Responses' `response.completed` / `incomplete` /
 * `failed`, the AI SDK's `finish` part.
 */
function endingIn(j: Json): Ending | undefined {
  if (typeof j !== 'object' || j === null) return undefined;
  const t = j.type;
  if (t === 'response.incomplete') return endingOf(j.response?.incomplete_details?.reason);
  const reason =
    t === 'message_delta'
      ? j.delta?.stop_reason
      : t === 'response.completed' || t === 'response.failed'
        ? t.slice(9)
        : t === 'finish'
          ? j.finishReason
          : (j.choices ?? j.candidates)?.map?.((c: Json) => c?.finish_reason ?? c?.finishReason).find((r: unknown) => r != null) ??
            j.promptFeedback?.blockReason;
  return reason == null ? undefined : endingOf(reason);
}

const sseContent = (e: SseEvent): boolean => !NOT_CONTENT.has(e.event!) && dataOf(e) !== '[DONE]' && contentOf(dataOf(e), true);
const sseError = (e: SseEvent): unknown => {
  const j = dataOf(e);
  if (typeof j !== 'string') return errorIn(j, e.event === 'error');
  return e.event === 'error' ? new StreamError('event', `error event in the stream: ${j.slice(0, 200)}`, 500) : undefined;
};
const sseEnding = (e: SseEvent): Ending | undefined => endingIn(dataOf(e));

interface Source {
  next(): Promise<{ done: boolean; value?: unknown }>;
  cancel(reason: unknown): void;
  /** An SDK stream object's own signal: aborted, it ends the stream as if it were complete. */
  signal?: AbortSignal | undefined;
}

function sourceOf(v: unknown): Source | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  if (typeof (v as ReadableStream).getReader === 'function') {
    const reader = (v as ReadableStream).getReader();
    return {
      next: () => reader.read(),
      cancel: (r) => void reader.cancel(r).catch(() => {}),
    };
  }
  const it = (v as AsyncIterable<unknown>)[Symbol.asyncIterator];
  if (typeof it !== 'function') return undefined;
  const iter = it.call(v);
  const controller = (v as { controller?: Partial<AbortController> }).controller;
  return {
    next: () => iter.next() as Promise<{ done: boolean; value?: unknown }>,
    signal: controller?.signal,
    cancel: (r) => {
      // The SDKs' stream objects stop their request with their `controller` (what their docs
      // say to call); `return()` alone would wait behind a read that may never come back.
      if (typeof controller?.abort === 'function') controller.abort();
      void Promise.resolve(iter.return?.(r)).catch(() => {});
    },
  };
}

function checkOptions<T>(options: StreamOptions<T> | undefined): StreamOptions<T> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null) fail('stream options', options, 'an object', true);
  checkKeys('stream options', options, KEYS);
  const { signal, measure } = options;
  if (signal !== undefined && (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
    fail('signal', signal, 'an AbortSignal');
  }
  num('firstChunkTimeoutMs', options.firstChunkTimeoutMs, 0, 1);
  num('idleTimeoutMs', options.idleTimeoutMs, 0, 1);
  num('totalTimeoutMs', options.totalTimeoutMs, 0, 1);
  optFn('onInterrupted', options.onInterrupted);
  optFn('isContent', options.isContent);
  optFn('errorOf', options.errorOf);
  optFn('endingOf', options.endingOf);
  if (measure !== undefined && measure !== 'first-chunk' && measure !== 'total') {
    fail('measure', measure, '"first-chunk" or "total"', true);
  }
  return options;
}

const encoder = /* @__PURE__ */ new TextEncoder();

/**
 * Where a guarded call is, in order (a later phase never goes back). The methods below are
 * grouped by the phase they act in; what may happen in any phase (a limit running out, the
 * caller's abort) switches on it.
 */
const enum Phase {
  /** `fn` was called; waiting for its source (a Response's headers, an error status's body). */
  Opening,
  /** Reading, holding back what is not content (a role chunk, `message_start`, keep-alives). */
  Waiting,
  /** The reader has the stream: an error is remembered and passed on; the ending decides. */
  Streaming,
  /** The outcome is reported; no timer or listener is left. */
  Settled,
}

type Timer = ReturnType<typeof setTimeout> | undefined;

/** One guarded call, from `fn` to its one outcome. */
class Guard<T> {
  #phase = Phase.Opening;
  readonly #start: number;
  readonly #inner = new AbortController();
  #source: Source | undefined;
  /** A byte stream: a string from `onInterrupted` is encoded. */
  #bytes = false;
  /** For an event stream: the bytes as text, split into events (`#events` holds one chunk's). */
  #decoder: TextDecoder | undefined;
  #split: ReturnType<typeof sseSplitter> | undefined;
  readonly #events: SseEvent[] = [];
  #isContent: (c: T | SseEvent) => boolean;
  #errorOf: (c: T | SseEvent) => unknown;
  #endingOf: (c: T | SseEvent) => Ending | undefined;
  /** When the first content came (-1: not yet, or never: the stream began with its ending). */
  #firstAt = -1;
  /** The last error seen after the stream began, and the ending named after it. */
  #error: unknown;
  #ending: Ending | undefined;
  #first: Timer;
  #idle: Timer;
  #total: Timer;
  #out: ReadableStreamDefaultController<T> | undefined;

  readonly #o: StreamOptions<T>;
  readonly #clock: () => number;
  readonly #settle: Settle;
  readonly #classify: Classify;
  readonly #resolve: (s: ReadableStream<T>) => void;
  readonly #reject: (e: unknown) => void;

  constructor(
    o: StreamOptions<T>,
    clock: () => number,
    settle: Settle,
    classify: Classify,
    resolve: (s: ReadableStream<T>) => void,
    reject: (e: unknown) => void,
  ) {
    this.#o = o;
    this.#clock = clock;
    this.#settle = settle;
    this.#classify = classify;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#start = clock();
    this.#isContent = o.isContent ?? ((c) => contentOf(c, false));
    this.#errorOf = o.errorOf ?? errorIn;
    this.#endingOf = o.endingOf ?? endingIn;
  }

  // ----- opening -----

  open(fn: (context: { signal: AbortSignal }) => StreamSource<T> | Promise<StreamSource<T>>): void {
    const { signal, firstChunkTimeoutMs: first, totalTimeoutMs: total } = this.#o;
    if (signal?.aborted) return this.#fail(signal.reason, IGNORED);
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    // Both limits count from the call: the first-chunk one to the first content (the headers
    // included), the total one to the end.
    if (first !== undefined) this.#first = setTimeout(() => this.#expire(new TimeoutError(first)), first);
    if (total !== undefined) this.#total = setTimeout(() => this.#expire(new TimeoutError(total), true), total);
    let opened: Promise<StreamSource<T>>;
    try {
      opened = Promise.resolve(fn({ signal: this.#inner.signal }));
    } catch (e) {
      return this.#fail(e);
    }
    opened.then((v) => this.#begin(v), (e: unknown) => this.#fail(e)).catch((e: unknown) => this.#fail(e));
  }

  async #begin(v: StreamSource<T>): Promise<void> {
    const r = isResponse(v) ? (v as Response) : undefined;
    if (r !== undefined && r.status >= 400 && this.#phase !== Phase.Settled) {
      // The body says what the status does not (`insufficient_quota`, Gemini's RetryInfo). It is
      // read while the limits run: one running out aborts the request, which ends the read.
      const { readErrorBody } = await import('./body.js');
      const { responseBody: body, data } = await readErrorBody(r, false);
      const b: Json = Array.isArray(data) ? data[0] : data;
      const e = (typeof b?.error === 'object' && b.error) || b || {};
      return this.#fail(providerError('status', e, data, r.status, r.headers as Headers, body?.slice(0, 65_536)));
    }
    const source = sourceOf(r ? r.body ?? new ReadableStream({ start: (c) => c.close() }) : v);
    if (this.#phase === Phase.Settled) return source?.cancel(undefined);
    this.#source = source;
    if (source === undefined) {
      return this.#fail(new TypeError('breakwater: stream(fn): fn must return a Response, a ReadableStream or an AsyncIterable'));
    }
    if (r !== undefined) {
      this.#bytes = true;
      if (/text\/event-stream/i.test(r.headers.get('content-type') ?? '')) {
        this.#decoder = new TextDecoder();
        this.#split = sseSplitter();
        this.#isContent = this.#o.isContent ?? (sseContent as (c: T | SseEvent) => boolean);
        this.#errorOf = this.#o.errorOf ?? (sseError as (c: T | SseEvent) => unknown);
        this.#endingOf = this.#o.endingOf ?? (sseEnding as (c: T | SseEvent) => Ending | undefined);
      }
    }
    this.#phase = Phase.Waiting;
    return this.#wait(source);
  }

  // ----- waiting for content -----

  async #wait(source: Source): Promise<void> {
    const held: unknown[] = [];
    for (;;) {
      const r = await source.next();
      if (this.#phase !== Phase.Waiting) return;
      if (r.done) {
        if (!this.#ended(source)) this.#fail(new StreamError('empty', 'the stream ended without content'));
        return;
      }
      this.#bytes ||= r.value instanceof Uint8Array;
      held.push(r.value);
      const failure = this.#inspect(r.value);
      if (failure !== undefined) return this.#fail(failure);
      // `#inspect` moves the phase on when the stream began.
      if ((this.#phase as Phase) === Phase.Streaming) return this.#resolve(this.#pump(held));
    }
  }

  /** Before the stream began: it fails the attempt (the caller's promise rejects). */
  #fail(e: unknown, outcome?: number): void {
    if (this.#phase >= Phase.Streaming) return;
    this.#source?.cancel(e);
    this.#inner.abort(e);
    this.#report(outcome ?? this.#classify(e, this.#o.signal), e);
    this.#reject(e);
  }

  // ----- what a chunk says -----

  /** Reads one chunk (each of its events, for an event stream); a failure before the stream began. */
  #inspect(chunk: unknown): unknown {
    if (this.#split === undefined) return this.#item(chunk as T);
    this.#events.length = 0;
    this.#split(this.#decoder!.decode(chunk as Uint8Array, { stream: true }), this.#events);
    for (const e of this.#events) {
      const failure = this.#item(e);
      if (failure !== undefined) return failure;
    }
    return undefined;
  }

  #item(x: T | SseEvent): unknown {
    const waiting = this.#phase === Phase.Waiting;
    const error = this.#errorOf(x);
    if (error !== undefined) {
      if (waiting) return error;
      // After content an error does not end the answer (the AI SDK's providers send one for a
      // chunk that failed validation, then stream on): what ends it decides.
      this.#error = error;
      this.#ending = undefined;
      return undefined;
    }
    if (this.#isContent(x)) {
      if (waiting) this.#begun((this.#firstAt = this.#clock()));
      else this.#rearm();
    }
    const ending = this.#endingOf(x);
    if (ending === undefined) return undefined;
    this.#ending = ending;
    if (!waiting) return undefined;
    if (ending === 'failed') return new StreamError('event', 'the answer ended as failed');
    // A refusal, or a budget spent before the first word: the app reads the stream as it came.
    if (ending === 'declined' || ending === 'truncated') this.#begun(-1);
    return undefined;
  }

  /** The stream began (with content at `at`, or with its ending: -1). */
  #begun(at: number): void {
    this.#phase = Phase.Streaming;
    clearTimeout(this.#first);
    if (at >= 0) this.#rearm();
  }

  /** The idle limit counts from the last content chunk. */
  #rearm(): void {
    const ms = this.#o.idleTimeoutMs;
    if (ms === undefined) return;
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.#expire(new TimeoutError(ms)), ms);
  }

  // ----- streaming -----

  #pump(held: unknown[]): ReadableStream<T> {
    return new ReadableStream<T>(
      {
        start: (c) => {
          this.#out = c;
          for (const chunk of held) c.enqueue(chunk as T);
        },
        pull: async (c) => {
          if (this.#phase !== Phase.Streaming) return;
          try {
            const r = await this.#source!.next();
            if (this.#phase !== Phase.Streaming) return;
            if (r.done) {
              if (!this.#ended(this.#source!)) await this.#end();
              return;
            }
            c.enqueue(r.value as T);
            this.#inspect(r.value);
          } catch (e) {
            return this.#cut(e);
          }
        },
        cancel: (reason) => {
          // The reader went away (a client disconnected): nothing learned about the upstream.
          this.#source!.cancel(reason);
          this.#inner.abort(reason);
          this.#report(IGNORED, reason);
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** The stream ended: its ending, or an error after the last ending, decides. */
  #end(): Promise<void> | void {
    const ending = this.#ending;
    if (ending === 'failed' || (ending === undefined && this.#error !== undefined)) {
      return this.#interrupt(this.#error ?? new StreamError('event', 'the answer ended as failed'));
    }
    // A stream that began with its ending (no content) is the app's to read, not counted.
    this.#report(ending === 'declined' || this.#firstAt < 0 ? IGNORED : SUCCESS, undefined);
    this.#out!.close();
  }

  /**
   * Cut (the upstream's connection, a time-out): a failure, unless the answer had named its
   * ending. `budget`: the app's limit for the whole answer ran out while it streamed, which says
   * nothing about the upstream (not counted; the contingency still ends the answer).
   */
  #cut(e: unknown, budget = false): Promise<void> | void {
    if (this.#phase !== Phase.Streaming) return;
    this.#source!.cancel(e);
    if (this.#ending !== undefined && this.#ending !== 'failed') return this.#end();
    return this.#interrupt(e, budget);
  }

  /** A failure after the stream began: what was sent, then the contingency. */
  async #interrupt(e: unknown, budget = false): Promise<void> {
    const out = this.#out!;
    this.#source!.cancel(e);
    this.#report(budget || this.#classify(e, this.#o.signal) === IGNORED ? IGNORED : FAILURE, e);
    const { onInterrupted } = this.#o;
    if (onInterrupted === undefined) return out.error(e);
    try {
      const extra = await onInterrupted(e);
      for (const chunk of (extra as Partial<Chunks> | undefined)?.[CHUNKS] ? (extra as Chunks).items : extra === undefined ? [] : [extra]) {
        out.enqueue((typeof chunk === 'string' && this.#bytes ? encoder.encode(chunk) : chunk) as T);
      }
      out.close();
    } catch (err) {
      out.error(err);
    }
  }

  // ----- events of any phase -----

  #expire(e: TimeoutError, budget = false): void {
    if (this.#phase === Phase.Streaming) void this.#cut(e, budget);
    else this.#fail(e);
  }

  #onAbort = (): void => this.#abort(this.#o.signal!);

  /**
   * The SDKs end their stream quietly when the signal the app gave them aborts: that end is the
   * app's abort (a closed tab), not an empty or a complete answer.
   */
  #ended(source: Source): boolean {
    if (source.signal?.aborted !== true) return false;
    this.#abort(source.signal);
    return true;
  }

  /** The caller aborted (`signal`, or the SDK stream's own). */
  #abort(signal: AbortSignal): void {
    const reason = signal.reason as unknown;
    // A cancel is ignored; an abort for a time-out (an SDK's chunk timeout) fails.
    const outcome = this.#classify(reason, signal);
    if (this.#phase !== Phase.Streaming) return this.#fail(reason, outcome);
    this.#source!.cancel(reason);
    this.#inner.abort(reason);
    this.#report(outcome, reason);
    try {
      this.#out!.error(reason);
    } catch {
      // Already closed.
    }
  }

  // ----- settled -----

  /** Reports the one outcome; every timer and the abort listener go with it. */
  #report(outcome: number, error: unknown): void {
    if (this.#phase === Phase.Settled) return;
    this.#phase = Phase.Settled;
    clearTimeout(this.#first);
    clearTimeout(this.#idle);
    clearTimeout(this.#total);
    this.#o.signal?.removeEventListener('abort', this.#onAbort);
    const at = this.#o.measure !== 'total' && this.#firstAt >= 0 ? this.#firstAt : this.#clock();
    this.#settle(outcome, error, at - this.#start);
  }
}

/**
 * Runs `fn` (already admitted) and guards what it streams; `settle` is called exactly once.
 * Resolves with the guarded stream once the first content chunk arrived.
 */
export function guardStream<T>(
  fn: (context: { signal: AbortSignal }) => StreamSource<T> | Promise<StreamSource<T>>,
  options: StreamOptions<T> | undefined,
  clock: () => number,
  settle: Settle,
  classify: Classify,
): Promise<ReadableStream<T>> {
  let o: StreamOptions<T>;
  try {
    o = checkOptions(options);
  } catch (e) {
    settle(IGNORED, e, 0);
    return Promise.reject(e);
  }
  return new Promise((resolve, reject) => new Guard(o, clock, settle, classify, resolve, reject).open(fn));
}
