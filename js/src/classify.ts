import { memory, wasm } from './glue.js';
import { Classify, Outcome, Text } from './codes/layout.js';
import { isCircuitOpenError, isObj, isTimeoutError } from './helpers/errors.js';
import { MAX_DURATION } from './helpers/options.js';

/** How an outcome counts for a breaker (the core's `Outcome` codes). */
export const SUCCESS = Outcome.Success;
export const FAILURE = Outcome.Failure;
export const IGNORED = Outcome.Ignored;

/** The classes the core distinguishes, indexed by `Class`'s codes. */
export const CLASSES = [
  'success',
  'transient',
  'rate-limited',
  'overloaded',
  'quota-exhausted',
  'client-error',
  'server-error',
  'network',
  'timeout',
  'cancelled',
  'declined',
] as const;
/**
 * The kind of outcome a call had: `success` (1xx–3xx), `transient` (408, 500, 502, 503, 504, or
 * another retryable status such as 409), `rate-limited` (429), `overloaded` (529, or an
 * `overloaded_error`), `quota-exhausted` (a 4xx whose code says the quota, credit or spend limit
 * is spent), `client-error` (another 4xx), `server-error` (another 5xx: 501, 505…), `network` (the
 * connection failed), `timeout` (the attempt timed out), `cancelled` (the caller cancelled) or
 * `declined` (a 4xx whose code says a content policy refused the prompt).
 * @useDeclaredType
 */
export type ErrorClass = (typeof CLASSES)[number];

/** How an error (or a failing `Response`) is classified: what it was, whether to retry, how a breaker counts it. */
export interface Verdict {
  /** The kind of outcome. */
  class: ErrorClass;
  /** Worth another attempt. */
  retryable: boolean;
  /** Counts against the breaker. */
  failure: boolean;
  /** Says nothing about the upstream (a 400, a cancelled call). */
  ignored: boolean;
  /** The HTTP status read from the error, if it has one. */
  status: number | undefined;
}

type Headerish = { get(name: string): string | null } | Record<string, unknown>;

/** A fetch `Response` (or anything shaped like one), resolved rather than thrown. */
export function isResponse(v: unknown): v is { status: number; headers: Headerish; ok: boolean } {
  return (
    isObj(v) &&
    typeof (v as { status?: unknown }).status === 'number' &&
    typeof (v as { ok?: unknown }).ok === 'boolean' &&
    typeof (v as { headers?: unknown }).headers === 'object'
  );
}

/**
 * The error a retry loop gave up on: the AI SDK's `RetryError` carries every attempt's error in
 * `errors` and the last in `lastError`, which says what the upstream did. Anything else as is.
 */
function lastErrorOf(err: unknown): unknown {
  if (!isObj(err)) return err;
  const e = err as { errors?: unknown; lastError?: unknown };
  return Array.isArray(e.errors) && e.lastError !== undefined ? e.lastError : err;
}

/**
 * The HTTP status of an error: `err.status`, `err.statusCode`, or `err.response.status` (of the
 * last attempt's error for the AI SDK's `RetryError`).
 */
export function statusOf(error: unknown): number | undefined {
  const err = lastErrorOf(error);
  if (!isObj(err)) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  for (const s of [e.status, e.statusCode, e.response?.status]) {
    if (typeof s === 'number' && Number.isInteger(s) && s >= 100 && s <= 999) return s;
  }
  return undefined;
}

function header(headers: unknown, name: string): string | undefined {
  if (!isObj(headers)) return undefined;
  const h = headers as { get?: unknown } & Record<string, unknown>;
  if (typeof h.get === 'function') {
    const v = (h.get as (n: string) => unknown).call(headers, name);
    return typeof v === 'string' ? v : undefined;
  }
  for (const key of Object.keys(h)) {
    if (key.toLowerCase() === name) {
      const v = h[key];
      return typeof v === 'string' ? v : Array.isArray(v) ? String(v[0]) : typeof v === 'number' ? String(v) : undefined;
    }
  }
  return undefined;
}

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;
// RFC 9110 HTTP-date: IMF-fixdate, the obsolete RFC 850 form, and asctime.
const HTTP_DATE =
  /^(?:[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT|[A-Z][a-z]+, \d\d-[A-Z][a-z]{2}-\d\d \d\d:\d\d:\d\d GMT|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})$/;

/**
 * `Retry-After` (delay-seconds, possibly fractional, rounded up to the ms; or an HTTP-date) in ms
 * from `now`, or -1. The same rules as the Rust core's `parse_retry_after`; parsed here rather
 * than in wasm because string handling would more than double the .wasm every app downloads.
 */
export function parseRetryAfter(value: string, now: number): number {
  const v = value.trim();
  const m = DECIMAL.exec(v);
  if (m) return Math.min(Number(m[1]) * 1000 + Math.ceil(Number((m[2] ?? '').padEnd(6, '0').slice(0, 6)) / 1000), MAX_DURATION);
  if (!HTTP_DATE.test(v)) return -1;
  const at = Date.parse(v);
  return at >= 0 ? Math.min(Math.max(at - now, 0), MAX_DURATION) : -1;
}

/** `retry-after-ms` (OpenAI, Anthropic): ms, possibly fractional, rounded up; or -1. */
export function parseRetryAfterMs(value: string): number {
  const m = DECIMAL.exec(value.trim());
  return m ? Math.min(Number(m[1]) + (/[1-9]/.test(m[2] ?? '') ? 1 : 0), MAX_DURATION) : -1;
}

/**
 * The server's requested wait in ms, from `retry-after-ms` or `retry-after` (seconds or an
 * HTTP-date) on `err.headers` / `err.response.headers` (a plain object or fetch `Headers`), or
 * a breaker's `retryAfterMs`. -1 when there is none.
 */
export function retryAfterOf(error: unknown, now: number): number {
  const err = lastErrorOf(error);
  if (isCircuitOpenError(err)) return err.retryAfterMs;
  if (!isObj(err)) return -1;
  for (const headers of headersOf(err)) {
    const ms = header(headers, 'retry-after-ms');
    const v = ms === undefined ? -1 : parseRetryAfterMs(ms);
    if (v >= 0) return v;
    const ra = header(headers, 'retry-after');
    const w = ra === undefined ? -1 : parseRetryAfter(ra, now);
    if (w >= 0) return w;
  }
  return retryDelayOf(err);
}

/**
 * Where errors keep response headers: `headers`, `responseHeaders` (AI SDK), `response.headers`,
 * and the same on `cause` (the Vercel AI Gateway's errors keep the provider's response there).
 */
function headersOf(err: object): unknown[] {
  type E = { headers?: unknown; responseHeaders?: unknown; response?: { headers?: unknown }; cause?: unknown };
  const e = err as E;
  const c = (isObj(e.cause) ? e.cause : {}) as E;
  return [e.headers, e.responseHeaders, e.response?.headers, c.headers, c.responseHeaders, c.response?.headers];
}

const RETRY_DELAY = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/;

/**
 * Google's `RetryInfo.retryDelay` (`"30s"`, `"1.5s"`) in an error's body (Gemini sends it with
 * 429 RESOURCE_EXHAUSTED), in ms rounded up; -1 when there is none. Read from `responseBody`,
 * `body`, `data`, `error` or the message, where SDKs put the body.
 */
function retryDelayOf(err: object): number {
  const e = err as { responseBody?: unknown; body?: unknown; data?: unknown; error?: unknown; message?: unknown };
  for (const b of [e.responseBody, e.body, e.data, e.error, e.message]) {
    let text: string | undefined;
    if (typeof b === 'string') text = b;
    else if (isObj(b)) {
      try {
        text = JSON.stringify(b);
      } catch {
        /* a cyclic body: no delay in it */
      }
    }
    const m = text !== undefined && text.length < 65_536 ? RETRY_DELAY.exec(text) : null;
    if (m) return Math.min(Math.ceil(Number(m[1]) * 1000), MAX_DURATION);
  }
  return -1;
}

/** `x-should-retry: true|false` (OpenAI, Anthropic): the server's word on retrying, or undefined. */
function shouldRetryOf(err: unknown): boolean | undefined {
  if (!isObj(err)) return undefined;
  for (const headers of headersOf(err)) {
    const v = header(headers, 'x-should-retry')?.trim().toLowerCase();
    if (v === 'true') return true;
    if (v === 'false') return false;
  }
  return undefined;
}

/** Asks the core what `text` says (`what`: an error's codes and texts, or a finish reason). */
function readText(text: string, what: Text.Codes | Text.Ending): number {
  const n = Math.min(text.length, 2048);
  const at = wasm().io(n) / 8;
  const m = memory();
  // One char code a number: the core compares ASCII; anything else is sent as 0, which matches
  // nothing (its low byte could spell a letter).
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    m[at + i] = c < 128 ? c : 0;
  }
  return wasm().read_text(n, what);
}

const QUOTA_ID = /"quotaId"\s*:\s*"([^"]{1,200})"/g;

/**
 * The provider's error code as the core reads it (`Code::index | status << 8`, 0 for none) from
 * every place the SDKs keep one: OpenAI's `code`/`type`, Anthropic's `error.error.type`, Gemini's
 * `error.status`, the AI SDK's `APICallError.data`, the messages (Anthropic says a credit
 * balance is spent only in words), and the quota ids of Gemini's QuotaFailure in the raw body.
 */
export function codeOf(err: unknown): number {
  if (!isObj(err)) return 0;
  type Body = { code?: unknown; type?: unknown; status?: unknown; message?: unknown; error?: Body };
  const e = err as Body & { data?: Body; responseBody?: unknown; body?: unknown };
  let codes = '';
  let texts = '\x01';
  for (const b of [e, e.error, e.error?.error, e.data, e.data?.error]) {
    if (!isObj(b)) continue;
    for (const c of [b.code, b.type, b.status]) if (typeof c === 'string') codes += c.slice(0, 64) + '\n';
    if (typeof b.message === 'string') texts += b.message.slice(0, 300) + '\n';
  }
  for (const raw of [e.responseBody, e.body, e.message]) {
    if (typeof raw === 'string') for (const m of raw.slice(0, 65_536).matchAll(QUOTA_ID)) texts += m[1] + '\n';
  }
  return readText(codes + texts, Text.Codes);
}

/** Indexed by `Ending`'s codes. */
const ENDINGS = ['complete', 'truncated', 'declined', 'failed', 'unknown'] as const;
/**
 * How an answer ended, by its finish or stop reason (the core's table, src/retry/ending.rs).
 * @useDeclaredType
 */
export type Ending = (typeof ENDINGS)[number];

const ending = (reason: unknown): Ending => (typeof reason === 'string' ? ENDINGS[readText(reason, Text.Ending)] ?? 'unknown' : 'unknown');

/**
 * How an answer ended, by its finish or stop reason in any provider's spelling: Anthropic's
 * `stop_reason`, OpenAI's `finish_reason`, the Responses API's `status` or
 * `incomplete_details.reason`, Gemini's `finishReason`, the AI SDK's unified reasons (a string,
 * or AI SDK 6 and 7's `{ unified, raw }`, whose `raw` is asked when `unified` says little, as
 * `other` does). `complete` (end_turn, stop, tool_use...), `truncated` (max_tokens, length...),
 * `declined` (refusal, content_filter, SAFETY...), `failed` (the AI SDK's `error`, `failed`), or
 * `unknown`.
 */
export function endingOf(reason: unknown): Ending {
  if (!isObj(reason)) return ending(reason);
  const { unified, raw } = reason as { unified?: unknown; raw?: unknown };
  const e = ending(unified);
  return e === 'unknown' ? ending(raw) : e;
}

/**
 * The HTTP status a provider's error code or type stands for (`overloaded_error` 529,
 * `rate_limit_error` 429, `api_error` 500...), or undefined when the core does not know it.
 */
export function statusOfCode(code: unknown): number | undefined {
  const c = typeof code === 'string' ? readText(code.slice(0, 64), Text.Codes) : 0;
  return c === 0 ? undefined : c >> Text.StatusShift;
}

/** The SDKs' error for a call their caller aborted (`APIUserAbortError`, any copy: by name). */
function isSdkAbort(err: unknown): boolean {
  if (!isObj(err)) return false;
  const ctor = (err as { constructor?: { name?: unknown; _errorName?: unknown } }).constructor;
  return (err as { name?: unknown }).name === 'APIUserAbortError' || ctor?._errorName === 'APIUserAbortError' || ctor?.name === 'APIUserAbortError';
}

/** `AbortSignal.timeout`'s `TimeoutError` (a DOMException), or breakwater's. */
function isTimeoutName(v: unknown): boolean {
  return isTimeoutError(v) || (isObj(v) && (v as { name?: unknown }).name === 'TimeoutError');
}

/**
 * A time-out's abort: the `TimeoutError` itself (what fetch rejects with), or an `AbortError`
 * whose `cause` is one (Node's timers/promises, http, events and streams wrap the reason so).
 */
function isTimeoutReason(reason: unknown): boolean {
  if (isTimeoutName(reason)) return true;
  if (!isObj(reason)) return false;
  const e = reason as { name?: unknown; cause?: unknown };
  return e.name === 'AbortError' && isTimeoutName(e.cause);
}

/**
 * Whether `err` is the abort of `signal` (its reason, an `AbortError`, or an SDK's
 * `APIUserAbortError` while it is aborted), or an SDK's `APIUserAbortError` by itself: the SDKs
 * throw it only when the signal their caller gave them aborted.
 */
export function isAbort(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted && (err === signal.reason || err === undefined)) return true;
  if (isSdkAbort(err)) return true;
  return (
    isObj(err) &&
    (err as { name?: unknown }).name === 'AbortError' &&
    signal?.aborted === true
  );
}

/**
 * Classifies a thrown error (or a resolved fetch `Response`) with the classifier of the core's
 * retry policy `policy`; 0 for the core's default rules (statuses 408, 409, 429, 500, 502, 503,
 * 504 and 529 retryable).
 */
export function classifyWith(policy: number, error: unknown, signal?: AbortSignal): Verdict {
  const err = lastErrorOf(error);
  let status: number | undefined;
  let flags = 0;
  // An abort for a time-out (the SDK's, `AbortSignal.timeout`'s) is the upstream's slowness.
  if (isAbort(err, signal)) flags = signal?.aborted && isTimeoutReason(signal.reason) ? Classify.Timeout : Classify.Cancelled;
  else if (isTimeoutReason(err)) flags = Classify.Timeout;
  else if (isCircuitOpenError(err)) {
    // Another breaker refused: retry later, but this says nothing about our upstream.
    return { class: 'rate-limited', retryable: true, failure: false, ignored: true, status };
  } else status = statusOf(err);
  // A thrown error with a 2xx/3xx status (the AI SDK's "Failed to process successful response"
  // when a 200 stream is cut) failed after the status line: a network failure, not a success.
  const v = wasm().classify(policy, status !== undefined && status >= 400 ? status : 0, flags === 0 ? codeOf(err) & Text.CodeMask : 0, flags);
  const outcome = v >> Classify.OutcomeShift;
  const should = flags === 0 ? shouldRetryOf(err) : undefined;
  return {
    class: CLASSES[v & Classify.ClassMask] ?? 'network',
    retryable: should ?? (v & Classify.Retryable) !== 0,
    failure: outcome === FAILURE,
    ignored: outcome === IGNORED,
    status,
  };
}

/**
 * The one rule every breaker here uses to count a call (`CircuitBreaker.execute`, and
 * `classifyOutcome` for `SharedCircuitBreaker` and `StoreCircuitBreaker`): a resolved value is a
 * success, unless it is a
 * fetch `Response` with a status of 400 or more, which is classified like a thrown error; a
 * thrown error is classified by `classifyError` (429, 5xx, time-outs and network errors fail; a
 * 400 or a cancelled call says nothing about the upstream). `isFailure`, when it answers, decides
 * for anything but a cancel.
 */
export function outcomeCode(
  result: unknown,
  resolved: boolean,
  signal?: AbortSignal,
  isFailure?: (error: unknown) => boolean | undefined,
): number {
  if (resolved) {
    const s = isResponse(result) ? result.status : 200;
    if (s < 400) return SUCCESS;
  }
  if (isFailure !== undefined && !(isAbort(result, signal) && !(signal?.aborted && isTimeoutReason(signal.reason)))) {
    const f = isFailure(result);
    if (f === true) return FAILURE;
    if (f === false) return IGNORED;
  }
  const v = classifyWith(0, result, signal);
  return v.failure ? FAILURE : v.ignored ? IGNORED : SUCCESS;
}

/** Classifies an error the way breakers and `withRetry` do by default. */
export function classifyError(err: unknown): Verdict {
  return classifyWith(0, err);
}

/**
 * The wait a failed call asks for, in ms: `retry-after-ms` or `retry-after` (seconds or an
 * HTTP-date) on the error's headers (plain object or fetch `Headers`) or on a fetch `Response`,
 * or a `CircuitOpenError`'s `retryAfterMs`. Undefined when there is none.
 */
export function retryAfterMs(errorOrResponse: unknown, now: number = Date.now()): number | undefined {
  const v = retryAfterOf(errorOrResponse, now);
  return v < 0 ? undefined : v;
}
