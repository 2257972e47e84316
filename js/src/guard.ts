// The stream guard (see js/src/stream.ts, which loads this module on the first `stream()` call):
// one outcome per stream, the event-stream reader that finds error events in a 200, and the
// time-outs before the first content and between chunks.
import { TimeoutError, isObj } from './errors.js';
import { checkKeys, fail, fn as optFn, num } from './options.js';
import { FAILURE, IGNORED, SUCCESS, isResponse } from './classify.js';
import { CHUNKS, KEYS, StreamError, type Chunks, type Classify, type Settle, type SseEvent, type StreamOptions, type StreamSource } from './stream.js';

// Statuses of the error types providers send inside a 200 stream.
const EVENT_STATUS: Record<string, number> = {
  overloaded_error: 529,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
};
const NOT_CONTENT = new Set(['ping', 'message_start', 'message_stop', 'message_delta', 'content_block_start', 'content_block_stop', 'error']);

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

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** The default `errorOf` for event streams. */
function sseError(e: SseEvent): unknown {
  if (e.event !== 'error' && !e.data.includes('"error"')) return undefined;
  const j = parseJson(e.data) as { type?: unknown; error?: unknown; choices?: unknown } | undefined;
  if (j === undefined || j === null || typeof j !== 'object') {
    return e.event === 'error' ? new StreamError('event', `error event in the stream: ${e.data.slice(0, 200)}`, 500) : undefined;
  }
  if (e.event !== 'error' && j.type !== 'error' && (j.error === undefined || j.error === null || j.choices !== undefined)) return undefined;
  const err = (isObj(j.error) ? j.error : j) as { type?: unknown; code?: unknown; message?: unknown; status?: unknown };
  // OpenAI's `code` is the specific one (`rate_limit_exceeded` under type `requests`).
  const type = typeof err.code === 'string' ? err.code : typeof err.type === 'string' && err.type !== 'error' ? err.type : undefined;
  const code = typeof err.code === 'string' ? EVENT_STATUS[err.code] : undefined;
  const status =
    code ?? (type !== undefined ? EVENT_STATUS[type] : undefined) ?? (typeof err.code === 'number' && err.code >= 400 && err.code <= 599 ? err.code : 500);
  const message = typeof err.message === 'string' ? err.message : e.data.slice(0, 200);
  return new StreamError('event', `error event in the stream (${type ?? status}): ${message}`, status, type);
}

/** The default `isContent` for event streams. */
function sseContent(e: SseEvent): boolean {
  if (e.event !== undefined && NOT_CONTENT.has(e.event)) return false;
  const d = e.data.trim();
  if (d === '' || d === '[DONE]') return false;
  const j = parseJson(d) as { type?: unknown; choices?: unknown; delta?: unknown } | undefined;
  if (j === undefined || j === null || typeof j !== 'object') return true;
  if (Array.isArray(j.choices)) {
    // OpenAI chat: a delta with text, a refusal, reasoning or a tool call (the role header has none).
    return j.choices.some((c: { delta?: Record<string, unknown> }) =>
      Object.entries(c?.delta ?? {}).some(([k, v]) => k !== 'role' && (typeof v === 'string' ? v !== '' : v !== null && v !== undefined)),
    );
  }
  if (typeof j.type === 'string') return j.type.endsWith('delta') && !NOT_CONTENT.has(j.type);
  return true;
}

function nonEmpty(chunk: unknown): boolean {
  if (chunk === undefined || chunk === null) return false;
  if (typeof chunk === 'string') return chunk !== '';
  if (ArrayBuffer.isView(chunk)) return chunk.byteLength > 0;
  return true;
}

interface Source {
  next(): Promise<{ done: boolean; value?: unknown }>;
  cancel(reason: unknown): void;
}

function sourceOf(v: unknown): Source | undefined {
  if (v instanceof ReadableStream || (isObj(v) && typeof (v as ReadableStream).getReader === 'function')) {
    const reader = (v as ReadableStream).getReader();
    return {
      next: () => reader.read(),
      cancel: (r) => void reader.cancel(r).catch(() => {}),
    };
  }
  const it = isObj(v) ? (v as AsyncIterable<unknown>)[Symbol.asyncIterator] : undefined;
  if (typeof it === 'function') {
    const iter = it.call(v);
    return {
      next: () => iter.next() as Promise<{ done: boolean; value?: unknown }>,
      cancel: (r) => void Promise.resolve(iter.return?.(r)).catch(() => {}),
    };
  }
  return undefined;
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
  optFn('onInterrupted', options.onInterrupted);
  optFn('isContent', options.isContent);
  optFn('errorOf', options.errorOf);
  if (measure !== undefined && measure !== 'first-chunk' && measure !== 'total') {
    fail('measure', measure, '"first-chunk" or "total"', true);
  }
  return options;
}

const encoder = /* @__PURE__ */ new TextEncoder();


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
  const { signal, firstChunkTimeoutMs, idleTimeoutMs, onInterrupted } = o;
  const start = clock();
  const inner = new AbortController();
  let firstAt = -1;
  let settled = false;
  let source: Source | undefined;
  let bytes = false;
  // For event streams: the parser turns chunks into events; `seen` collects what one chunk held.
  let decoder: TextDecoder | undefined;
  let parser: ReturnType<typeof sseSplitter> | undefined;
  const events: SseEvent[] = [];
  let isContent: (c: T | SseEvent) => boolean = o.isContent ?? nonEmpty;
  let errorOf: (c: T | SseEvent) => unknown = o.errorOf ?? (() => undefined);

  const finish = (outcome: number, error: unknown): void => {
    if (settled) return;
    settled = true;
    if (signal !== undefined) signal.removeEventListener('abort', onAbort);
    const end = clock();
    settle(outcome, error, o.measure !== 'total' && firstAt >= 0 ? firstAt - start : end - start);
  };
  let onAbortHook: ((reason: unknown) => void) | undefined;
  function onAbort(): void {
    inner.abort(signal!.reason);
    source?.cancel(signal!.reason);
    // A cancel is ignored; an abort for a time-out (an SDK's chunk timeout) fails.
    finish(classify(signal!.reason, signal), signal!.reason);
    onAbortHook?.(signal!.reason);
  }

  /** What a chunk says: [content?, error or undefined]. */
  const inspect = (chunk: unknown): [boolean, unknown] => {
    if (parser === undefined) {
      const err = errorOf(chunk as T);
      if (err !== undefined) return [false, err];
      return [isContent(chunk as T), undefined];
    }
    events.length = 0;
    parser(decoder!.decode(chunk as Uint8Array, { stream: true }), events);
    // After the first content chunk only errors matter.
    let content = firstAt >= 0;
    for (const e of events) {
      const err = errorOf(e);
      if (err !== undefined) return [content, err];
      content ||= isContent(e);
    }
    return [content, undefined];
  };

  /** Reads one chunk, failing after `ms` (0: no limit) with a `TimeoutError` of `limit`. */
  const read = (ms: number, limit: number): Promise<{ done: boolean; value?: unknown }> => {
    const p = source!.next();
    if (ms <= 0) return p;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new TimeoutError(limit)), ms);
      p.then(
        (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  };

  const limitBeforeFirst = (): [number, number] => {
    const left = firstChunkTimeoutMs === undefined ? 0 : Math.max(1, firstChunkTimeoutMs - (clock() - start));
    if (idleTimeoutMs !== undefined && (left === 0 || idleTimeoutMs < left)) return [idleTimeoutMs, idleTimeoutMs];
    return [left, firstChunkTimeoutMs ?? 0];
  };

  return new Promise<ReadableStream<T>>((resolve, reject) => {
    if (signal?.aborted) {
      finish(IGNORED, signal.reason);
      reject(signal.reason);
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    onAbortHook = reject;
    const abandon = (e: unknown): void => {
      if (settled) return;
      source?.cancel(e);
      inner.abort(e);
      finish(classify(e, signal), e);
      reject(e);
    };
    let opened: Promise<StreamSource<T>>;
    try {
      opened = Promise.resolve(fn({ signal: inner.signal }));
    } catch (e) {
      abandon(e);
      return;
    }
    // The first-chunk limit also covers waiting for the response's headers.
    let openTimer: ReturnType<typeof setTimeout> | undefined;
    if (firstChunkTimeoutMs !== undefined) {
      openTimer = setTimeout(() => abandon(new TimeoutError(firstChunkTimeoutMs)), firstChunkTimeoutMs);
    }
    const begin = async (v: StreamSource<T>): Promise<void> => {
        if (openTimer !== undefined) clearTimeout(openTimer);
        if (settled) {
          sourceOf(isResponse(v) ? (v as Response).body : v)?.cancel(undefined);
          return;
        }
        if (isResponse(v)) {
          const r = v as Response;
          if (r.status >= 400) {
            void r.body?.cancel().catch(() => {});
            return abandon(new StreamError('status', `the upstream answered ${r.status}`, r.status, undefined, r.headers));
          }
          bytes = true;
          if (/text\/event-stream/i.test(r.headers.get('content-type') ?? '')) {
            decoder = new TextDecoder();
            parser = sseSplitter();
            isContent = o.isContent ?? (sseContent as (c: T | SseEvent) => boolean);
            errorOf = o.errorOf ?? (sseError as (c: T | SseEvent) => unknown);
          }
          v = (r.body ?? new ReadableStream({ start: (c) => c.close() })) as unknown as StreamSource<T>;
        }
        source = sourceOf(v);
        if (source === undefined) {
          return abandon(new TypeError('breakwater: stream(fn): fn must return a Response, a ReadableStream or an AsyncIterable'));
        }
        const held: unknown[] = [];
        for (;;) {
          const [ms, limit] = limitBeforeFirst();
          const r = await read(ms, limit);
          if (settled) return;
          if (r.done) return abandon(new StreamError('empty', 'the stream ended without content'));
          bytes ||= r.value instanceof Uint8Array;
          const [content, err] = inspect(r.value);
          if (err !== undefined && !content) return abandon(err);
          held.push(r.value);
          if (content) {
            // Content, then an error in the same chunk: the answer began, so it is a cut.
            firstAt = clock();
            return resolve(pump(held, err));
          }
        }
    };
    opened.then(
      (v) => begin(v).catch(abandon),
      (e) => {
        if (openTimer !== undefined) clearTimeout(openTimer);
        abandon(e);
      },
    );
  });

  /** The stream handed to the reader, once content began. */
  function pump(held: unknown[], cut: unknown): ReadableStream<T> {
    let out!: ReadableStreamDefaultController<T>;
    const interrupt = async (e: unknown): Promise<void> => {
      if (settled) return;
      source!.cancel(e);
      finish(classify(e, signal) === IGNORED ? IGNORED : FAILURE, e);
      if (onInterrupted === undefined) return out.error(e);
      try {
        const extra = await onInterrupted(e);
        for (const chunk of (extra as Partial<Chunks> | undefined)?.[CHUNKS] ? (extra as Chunks).items : extra === undefined ? [] : [extra]) {
          out.enqueue((typeof chunk === 'string' && bytes ? encoder.encode(chunk) : chunk) as T);
        }
        out.close();
      } catch (err) {
        out.error(err);
      }
    };
    onAbortHook = (reason) => {
      try {
        out.error(reason);
      } catch {
        /* already closed */
      }
    };
    return new ReadableStream<T>(
      {
        start(c) {
          out = c;
          for (const chunk of held) c.enqueue(chunk as T);
          if (cut !== undefined) return interrupt(cut);
        },
        async pull(c) {
          if (settled) return;
          let r: { done: boolean; value?: unknown };
          try {
            r = await read(idleTimeoutMs ?? 0, idleTimeoutMs ?? 0);
          } catch (e) {
            return interrupt(e);
          }
          if (settled) return;
          if (r.done) {
            finish(SUCCESS, undefined);
            return c.close();
          }
          const [, err] = inspect(r.value);
          if (err !== undefined) {
            c.enqueue(r.value as T);
            return interrupt(err);
          }
          c.enqueue(r.value as T);
        },
        cancel(reason) {
          // The reader went away (a client disconnected): nothing learned about the upstream.
          inner.abort(reason);
          source!.cancel(reason);
          finish(IGNORED, reason);
        },
      },
      { highWaterMark: 0 },
    );
  }
}
