// The stream guard (see js/src/guards/stream.ts, which loads this module on the first `stream()`
// call): one outcome per stream, decided by how the stream ends. What each chunk means and when
// the stream began, stalled or ended are the core's (src/stream/: `Reading`, `SseSplitter`,
// `Watch`, through the main module's `watch_*` exports); this module reads the source ahead of
// the app into a bounded buffer, holds back what comes before the answer, runs the one timer
// the core asks for, and acts on each step.
import { wasm } from '../glue.js';
import { Item, Reading as R, ReadingBits as RB, Sentinel, StepBits as SB, StreamStep as S, StreamStop as P, Watch as W, WatchOp as Op } from '../codes/layout.js';
import { TimeoutError } from '../helpers/errors.js';
import { checkKeys, fail, fn as optFn, num } from '../helpers/options.js';
import { FAILURE, IGNORED, SUCCESS, isResponse, type Ending } from '../classify.js';
import { CHUNKS, StreamError, type Chunks, type Classify, type Settle, type SseEvent, type StreamOptions, type StreamSource } from './stream.js';

// The option names, checked here (not in the main entry) since only a stream reads them (a
// breaker's `stream` takes `retry` off first: it runs the attempts).
const KEYS = [
  'signal',
  'firstChunkTimeoutMs',
  'idleTimeoutMs',
  'totalTimeoutMs',
  'firstOutputTimeoutMs',
  'maxThinkingMs',
  'onInterrupted',
  'isContent',
  'errorOf',
  'endingOf',
  'measure',
];
// The limits in the order of the core's `Watch` layout, with the option naming each.
const LIMITS = ['firstChunkTimeoutMs', 'idleTimeoutMs', 'totalTimeoutMs', 'firstOutputTimeoutMs', 'maxThinkingMs'] as const;
/** Indexed by `Ending`'s codes (`Reading`'s ending field is one more). */
const ENDINGS: readonly Ending[] = ['complete', 'truncated', 'declined', 'failed', 'unknown'];

/**
 * How far the guard reads ahead of a reader that is behind: up to this many bytes of a byte
 * stream, or chunks of an object stream, beyond what the reader took (plus the chunk in hand).
 * While the buffer is full the guard stops reading and the model's limits stand still: time the
 * app takes is not the model's silence. Before the answer begins (nothing reaches the reader
 * yet) at most READ_AHEAD_BYTES of what is not the answer is held; past it the attempt fails.
 */
export const READ_AHEAD_BYTES = 1 << 20;
export const READ_AHEAD_CHUNKS = 1024;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// Provider errors are read loosely, with optional chaining.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/**
 * A `StreamError` for a provider's error object `e` (Anthropic's `{ type }`, OpenAI's
 * `{ code, type }`, Gemini's `{ code: 429, status }`); `j` is what it came in (kept as `error`).
 * The status is the core's reading when it made one.
 */
function providerError(kind: 'status' | 'event', e: Json, j: unknown, status: number, headers?: Headers, body?: string): StreamError {
  // OpenAI's `code` is the specific one (`rate_limit_exceeded` under type `requests`).
  const type: string | undefined = [e?.code, e?.type, e?.status].find((v) => typeof v === 'string' && v !== 'error');
  const message = typeof e?.message === 'string' ? `: ${e.message}` : '';
  const what = kind === 'status' ? `the upstream answered ${status}` : 'error event in the stream';
  return new StreamError(kind, `${what} (${type ?? status})${message}`, status, type, headers, body, j);
}

/** The error object inside an item: `error`, a failed response's, or the item itself. */
function errorObject(j: Json): Json {
  if (typeof j !== 'object' || j === null) return {};
  if (j.type === 'response.failed') return j.response?.error ?? {};
  return typeof j.error === 'object' && j.error !== null ? j.error : j;
}

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
  for (const name of LIMITS) num(name, options[name], 0, 1);
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
const decoder = /* @__PURE__ */ new TextDecoder();
const NONE = Sentinel.None as number;

/** Copies `bytes` into the core's byte buffer; returns their length. */
function put(bytes: Uint8Array): number {
  const x = wasm();
  const at = x.bytes(bytes.byteLength);
  new Uint8Array(x.memory.buffer, at, bytes.byteLength).set(bytes);
  return bytes.byteLength;
}

/** Writes `text` as UTF-8 into the core's byte buffer; returns its length in bytes. */
function putText(text: string): number {
  const x = wasm();
  const at = x.bytes(text.length * 3);
  return encoder.encodeInto(text, new Uint8Array(x.memory.buffer, at, text.length * 3)).written;
}

/** The first `len` bytes of the core's byte buffer, as text. */
function takeText(len: number): string {
  const x = wasm();
  return decoder.decode(new Uint8Array(x.memory.buffer, x.bytes(0), len));
}

/**
 * Where a guarded call is, in order (a later phase never goes back). The methods below are
 * grouped by the phase they act in; what may happen in any phase (a limit running out, the
 * caller's abort) switches on it.
 */
const enum Phase {
  /** `fn` was called; waiting for its source (a Response's headers, an error status's body). */
  Opening,
  /** Reading, holding back what is not yet the answer (a role chunk, `message_start`, pings). */
  Waiting,
  /** The reader has the stream. */
  Streaming,
  /** The outcome is reported; no timer or listener is left. */
  Settled,
}

/** How a source's chunks are read: an event stream's bytes, other bytes, objects. */
const enum Mode {
  Sse,
  Bytes,
  Objects,
}

/** One guarded call, from `fn` to its one outcome. */
class Guard<T> {
  #phase = Phase.Opening;
  readonly #start: number;
  readonly #inner = new AbortController();
  /** The core's watch over this stream. */
  readonly #h: number;
  #source: Source | undefined;
  #mode = Mode.Objects;
  /** A byte stream: a string from `onInterrupted` is encoded; the buffer is counted in bytes. */
  #bytes = false;
  /** The user's own readers of an item, if any (then each item's reading is made here). */
  readonly #custom: boolean;
  /** Held back until the answer begins, and their size. */
  readonly #held: unknown[] = [];
  #heldBytes = 0;
  /** The error object of the last item that carried one (for the step that names it). */
  #error: unknown;
  /** The breaker's clock when the first sign of the model came (-1: not yet, or never). */
  #firstAt = -1;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = NONE;
  /** Some limit is set: the core may ask for a timer. */
  readonly #timed: boolean;
  /** Wakes the read loop when the reader took from a full buffer. */
  #wake: (() => void) | undefined;
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
    this.#custom = o.isContent !== undefined || o.errorOf !== undefined || o.endingOf !== undefined;
    const x = wasm();
    const at = x.io(W.Len) / 8;
    const io = new Float64Array(x.memory.buffer);
    LIMITS.forEach((name, i) => (io[at + i] = o[name] ?? 0));
    this.#timed = LIMITS.some((name) => o[name] !== undefined);
    this.#h = x.watch_new(Date.now());
  }

  // ----- opening -----

  open(fn: (context: { signal: AbortSignal }) => StreamSource<T> | Promise<StreamSource<T>>): void {
    const { signal } = this.#o;
    if (signal?.aborted) return this.#fail(signal.reason, IGNORED);
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    // The limits count from the call: the headers' wait is the model's too.
    this.#arm();
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
      this.#mode = /text\/event-stream/i.test(r.headers.get('content-type') ?? '') ? Mode.Sse : Mode.Bytes;
    }
    this.#phase = Phase.Waiting;
    return this.#read(source);
  }

  // ----- reading -----

  /** Reads the source ahead of the reader until the stream settles. */
  async #read(source: Source): Promise<void> {
    for (;;) {
      const out = this.#out;
      if (out !== undefined && (out.desiredSize ?? 1) <= 0 && this.#phase === Phase.Streaming) {
        // The reader is behind: stop reading; the model's limits stand still meanwhile.
        this.#op(Op.Pause);
        await new Promise<void>((wake) => (this.#wake = wake));
        if (this.#phase !== Phase.Streaming) return;
        this.#op(Op.Resume);
      }
      let r: { done: boolean; value?: unknown };
      try {
        r = await source.next();
      } catch (e) {
        if (this.#phase === Phase.Settled) return;
        return this.#act(this.#op(Op.Broke), undefined, e);
      }
      if (this.#phase === Phase.Settled) return;
      if (r.done) {
        if (!this.#ended(source)) this.#act(this.#op(Op.End), undefined);
        return;
      }
      this.#act(this.#item(r.value), r.value);
      if ((this.#phase as Phase) === Phase.Settled) return;
    }
  }

  /** What the core makes of one chunk: a `StreamStep` code. */
  #item(chunk: unknown): number {
    const x = wasm();
    const now = Date.now();
    if (chunk instanceof Uint8Array) this.#bytes = true;
    if (this.#mode === Mode.Sse) {
      const len = put(chunk as Uint8Array);
      return this.#custom ? this.#events(len, now) : x.watch_item(this.#h, now, len, Item.Sse);
    }
    // A chunk of bytes or text is the answer when it is not empty; an object by the core's rules.
    let reading: number;
    if (typeof chunk === 'string' || ArrayBuffer.isView(chunk) || this.#mode === Mode.Bytes) {
      const empty = typeof chunk === 'string' ? chunk === '' : (chunk as ArrayBufferView).byteLength === 0;
      reading = empty ? R.None : R.Output;
    } else {
      let json: string | undefined;
      try {
        json = JSON.stringify(chunk);
      } catch {
        // Not JSON (a BigInt, a cycle): a chunk of a shape not known, the answer.
      }
      if (json === undefined || json.length > READ_AHEAD_BYTES) reading = R.Output;
      else if (!this.#custom) {
        // One call: the core reads and judges it; ERRORED says the chunk carried an error.
        const step = x.watch_item(this.#h, now, putText(json), Item.Object);
        if (step & SB.Errored) this.#error = chunk;
        return step & ~SB.Errored;
      } else reading = x.read_item(putText(json), Item.Object);
    }
    if (reading & RB.Error) this.#error = chunk;
    return x.watch_reading(this.#h, now, this.#custom ? this.#own(chunk as T, reading) : reading);
  }

  /** An event stream's chunk with the user's own readers: each event read, then judged. */
  #events(len: number, now: number): number {
    const x = wasm();
    const total = x.watch_item(this.#h, now, len, Item.Split);
    // The records (see the core's `split`): reading, name length (a comment: 2^32 - 1), data
    // length, then the bytes; copied, as the user's readers may grow the module's memory.
    const bytes = new Uint8Array(x.memory.buffer, x.bytes(0), total).slice();
    const view = new DataView(bytes.buffer);
    let at = 0;
    let began = false;
    while (at + 12 <= total) {
      const reading = view.getUint32(at, true);
      const nameLen = view.getUint32(at + 4, true);
      const dataLen = view.getUint32(at + 8, true);
      at += 12;
      let code = reading;
      if (nameLen !== 0xffffffff) {
        const name = decoder.decode(bytes.subarray(at, at + nameLen));
        const data = decoder.decode(bytes.subarray(at + nameLen, at + nameLen + dataLen));
        at += nameLen + dataLen;
        const event: SseEvent = { event: name === '' ? undefined : name, data };
        if (reading & RB.Error) this.#error = event;
        code = this.#own(event, reading);
      }
      const step = x.watch_reading(this.#h, now, code);
      if (step === S.Begin) began = true;
      else if (step !== S.Hold && step !== S.Pass) return step;
    }
    return began ? S.Begin : this.#phase === Phase.Streaming ? S.Pass : S.Hold;
  }

  /** A reading as the user's `isContent`, `errorOf` and `endingOf` make it (each where given). */
  #own(item: T | SseEvent, reading: number): number {
    const { isContent, errorOf, endingOf } = this.#o;
    let code = reading;
    if (isContent !== undefined && (code & RB.ProgressMask) !== R.KeepAlive) {
      code = (code & ~RB.ProgressMask) | (isContent(item) ? R.Output : R.None);
    }
    if (errorOf !== undefined) {
      const e = errorOf(item);
      code &= RB.ProgressMask | (RB.EndingMask << RB.EndingShift);
      if (e !== undefined) {
        this.#error = e;
        const status = (e as { status?: unknown } | null)?.status;
        code |= RB.Error | ((typeof status === 'number' && status >= 400 && status <= 599 ? status : 500) << SB.StatusShift);
      }
    }
    // An ending the user's reader does not name leaves the core's reading of the chunk.
    const ending = endingOf?.(item);
    if (ending !== undefined) code = (code & ~(RB.EndingMask << RB.EndingShift)) | ((ENDINGS.indexOf(ending) + 1) << RB.EndingShift);
    return code;
  }

  /** Acts on a step; `chunk` the item it came with (undefined: none), `thrown` a read's error. */
  #act(step: number, chunk: unknown, thrown?: unknown): void {
    if (step === S.None) return this.#arm();
    const kind = step & SB.FieldMask;
    const has = chunk !== undefined;
    switch (kind) {
      case S.Hold:
        if (has) {
          this.#held.push(chunk);
          this.#heldBytes += this.#bytes ? (chunk as Uint8Array).byteLength ?? 1 : 1;
          if (this.#heldBytes > (this.#bytes ? READ_AHEAD_BYTES : READ_AHEAD_CHUNKS)) {
            return this.#fail(new StreamError('empty', `the stream sent ${this.#heldBytes} ${this.#bytes ? 'bytes' : 'chunks'} and no answer`));
          }
        }
        return this.#arm();
      case S.Begin:
        if (has) this.#held.push(chunk);
        if (this.#op(Op.FirstAt) !== NONE) this.#firstAt = this.#clock();
        this.#phase = Phase.Streaming;
        this.#resolve(this.#pump());
        return this.#arm();
      case S.Pass:
        if (has) this.#out!.enqueue(chunk as T);
        return this.#arm();
      case S.Fail:
        return this.#fail(this.#stopError(step, thrown));
      case S.Cut:
        if (has) this.#out!.enqueue(chunk as T);
        return void this.#interrupt(this.#stopError(step, thrown), (step & SB.Counted) === 0);
      default:
        if (has) this.#out?.enqueue(chunk as T);
        // A stream that ended as it began (a refusal before any word) is read as it came.
        if (this.#phase === Phase.Waiting) {
          this.#phase = Phase.Streaming;
          this.#resolve(this.#pump());
        }
        this.#report(kind === S.Success ? SUCCESS : IGNORED, undefined);
        this.#out!.close();
    }
  }

  /** The error a stopping step stands for. */
  #stopError(step: number, thrown: unknown): unknown {
    const stop = (step >> SB.StopShift) & SB.FieldMask;
    const status = (step >> SB.StatusShift) & 1023;
    switch (stop) {
      case P.Timeout: {
        const limit = LIMITS[(step >> SB.LimitShift) & SB.FieldMask]!;
        const e = new TimeoutError(this.#o[limit]!);
        e.message = `the stream's ${limit} (${this.#o[limit]} ms) ran out`;
        return e;
      }
      case P.Broken:
        return thrown;
      case P.Empty:
        return new StreamError('empty', 'the stream ended without content');
      case P.Malformed:
        return new StreamError('malformed', 'a malformed frame in the stream', 502);
      default:
        return status === 0 ? new StreamError('event', 'the answer ended as failed') : this.#eventError(status);
    }
  }

  /** The in-band error the core read (of status `status`), as an error to throw. */
  #eventError(status: number): unknown {
    let j: Json = this.#error;
    if (this.#mode === Mode.Sse && !this.#custom) {
      const text = takeText(wasm().watch_op(this.#h, Date.now(), Op.ErrorData)).trim();
      j = parseJson(text) ?? text;
      if (typeof j === 'string') return new StreamError('event', `error event in the stream: ${j.slice(0, 200)}`, status);
    } else if (typeof j === 'object' && j !== null && 'data' in j && 'event' in j) {
      // An event the user's `errorOf` did not take: its data.
      j = parseJson((j as SseEvent).data) ?? j;
    }
    if (j instanceof Error || (this.#custom && this.#o.errorOf !== undefined)) return j;
    const e = errorObject(j);
    return e instanceof Error ? e : providerError('event', e, j, status);
  }

  // ----- waiting for content -----

  /** Before the stream began: it fails the attempt (the caller's promise rejects). */
  #fail(e: unknown, outcome?: number): void {
    if (this.#phase >= Phase.Streaming) return;
    this.#source?.cancel(e);
    this.#inner.abort(e);
    this.#report(outcome ?? this.#classify(e, this.#o.signal), e);
    this.#reject(e);
  }

  // ----- streaming -----

  #pump(): ReadableStream<T> {
    const held = this.#held.splice(0);
    return new ReadableStream<T>(
      {
        start: (c) => {
          this.#out = c;
          for (const chunk of held) c.enqueue(chunk as T);
        },
        pull: () => {
          const wake = this.#wake;
          this.#wake = undefined;
          wake?.();
        },
        cancel: (reason) => {
          // The reader went away (a client disconnected): nothing learned about the upstream.
          this.#source!.cancel(reason);
          this.#inner.abort(reason);
          this.#report(IGNORED, reason);
          this.#wake?.();
        },
      },
      this.#bytes
        ? { highWaterMark: READ_AHEAD_BYTES, size: (c) => (c as Uint8Array)?.byteLength ?? 1 }
        : { highWaterMark: READ_AHEAD_CHUNKS },
    );
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

  /** A `WatchOp` on the core's watch, now. */
  #op(op: number): number {
    return wasm().watch_op(this.#h, Date.now(), op);
  }

  /** Keeps one timer for the core's next deadline (a timer that fires early is set again). */
  #arm(): void {
    if (this.#phase === Phase.Settled || !this.#timed) return;
    const at = this.#op(Op.Deadline);
    if (at === NONE || (this.#timer !== undefined && this.#timerAt <= at)) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = NONE;
      if (this.#phase === Phase.Settled) return;
      const step = this.#op(Op.Tick);
      // A limit that stops the stream: the read in flight is given up.
      if (step !== S.None) this.#source?.cancel(undefined);
      this.#act(step, undefined);
    }, Math.max(0, at - Date.now()));
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

  /** Reports the one outcome; the timer, the watch and the abort listener go with it. */
  #report(outcome: number, error: unknown): void {
    if (this.#phase === Phase.Settled) return;
    this.#phase = Phase.Settled;
    clearTimeout(this.#timer);
    wasm().release(this.#h);
    this.#o.signal?.removeEventListener('abort', this.#onAbort);
    this.#wake?.();
    const at = this.#o.measure !== 'total' && this.#firstAt >= 0 ? this.#firstAt : this.#clock();
    this.#settle(outcome, error, at - this.#start);
  }
}

/**
 * Runs `fn` (already admitted) and guards what it streams; `settle` is called exactly once.
 * Resolves with the guarded stream once the answer began.
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
