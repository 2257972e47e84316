// `SharedCircuitBreaker`: a shell around the core's lease client (src/shared/client.rs, through
// src/wasm/shared.rs). It reads the clock, carries the messages the core builds to the
// coordinator and back (a Durable Object stub, the Worker's breaker service, or a store), runs
// the guarded call, and tells listeners what the core reports. It decides nothing itself.
import {
  CircuitOpenError,
  isTimeoutError,
  type BreakerStreamOptions,
  type BreakerMode,
  type BreakerPermit,
  type BreakerState,
  type BreakerStats,
  type CircuitBreakerOptions,
  type FallbackReason,
  type OutcomeEvent,
  type RejectEvent,
  type StateChangeEvent,
  type Unsubscribe,
} from 'breakwater';
import {
  breakerConfig as build,
  checkCallOptions,
  checkKeys,
  Emitter,
  guardCall,
  guardStream,
  num,
  outcomeCode,
  streamWithRetry,
  checkStreamDefaults,
  withDefaults,
  type StreamDefaults,
  withTimeout,
  OUTCOMES,
  REASONS,
  STATES,
  type CallOutcome,
  type BreakerSettings,
  type ConsecutiveTrip,
  type FailureRateTrip,
  type StreamSource,
} from 'breakwater/internal';
/**
 * The main entry's `build` for a shared breaker: the adaptive throttle is read (the shared
 * modules shed, the fleet's share on each lease) and the concurrency limit refused, naming it: it
 * is a `CircuitBreaker`'s.
 */
export function breakerConfig(o: CircuitBreakerOptions, where: string): Float64Array {
  refuse(o ?? {}, ['concurrency'], where, "the concurrency limit is a CircuitBreaker's (wrap the calls in one with concurrency: limit(...))");
  return build(o, where);
}
import { sharedGlue, type WasmLeaseClient } from './glue.js';
import { Decision, LeaseInfo, LeaseOpts, Limit, Op, Reject } from '../codes/layout.js';

export type { CallOutcome, Unsubscribe };

/**
 * How `CircuitBreaker.execute` counts a settled call, by name; the default `classify` of the
 * shared breakers. A resolved value is a success, unless it is a fetch `Response` with a status
 * of 400 or more, classified like the error it stands for: 429, 5xx, time-outs and network
 * errors fail; a 400 or a cancelled call says nothing about the upstream (ignored).
 */
export function classifyOutcome(
  result: { ok: true; value: unknown } | { ok: false; error: unknown },
  signal?: AbortSignal,
): CallOutcome {
  const code = result.ok ? outcomeCode(result.value, true, signal) : outcomeCode(result.error, false, signal);
  return OUTCOMES[code] ?? 'success';
}

type Outcome = CallOutcome;

/**
 * A shared breaker's settings: `CircuitBreaker` options without `clock` (the coordinator's clock
 * rules) and without `slowCallRate` (outcomes reach the coordinator as counts, without
 * durations).
 * @inline
 */
type SharedBreakerRule = Omit<BreakerSettings, 'clock'> & (ConsecutiveTrip | FailureRateTrip);

/**
 * The bits of a Durable Object stub this client uses.
 * @inline
 */
interface StubLike {
  /** Sends a request to the object. */
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

/** The bits of a Durable Object namespace binding this client uses. */
export interface NamespaceLike {
  /** The id of the object for a name. */
  idFromName(name: string): unknown;
  /** The stub of the object with that id. */
  get(id: unknown): StubLike;
  /** The stub of the object for a name, in one step (newer runtimes); used instead of `idFromName` and `get` when present. */
  getByName?: ((name: string) => StubLike) | undefined;
}


// ----- wire shapes (src/shared/protocol.rs), for transports written by hand -----
// Checked against the messages the core writes (tests/conformance/messages.json) by
// tests/js/wire-types.test.mjs: every field and value, both ways.

/**
 * Outcomes of calls admitted under one generation (`null`: under no lease the client knew of).
 * @inline
 */
interface Counts {
  /** The generation of the lease the calls were admitted under; `null` when the client never had a lease (counted as stale). */
  generation: number | null;
  /** Successful calls. */
  successes: number;
  /** Failed calls. */
  failures: number;
  /** Calls that say nothing about the upstream. */
  ignored: number;
  /** Calls the client shed under the lease's throttle; left out when 0. */
  throttled?: number;
}
/**
 * A half-open probe's outcome.
 * @inline
 */
interface ProbeReport {
  /** The permit's generation. */
  generation: number;
  /** The probe slot. */
  id: number;
  /** When the permit was issued, as the client was told (informational: the coordinator keeps its own record of each grant). */
  issued_at: number;
  /** How it ended. */
  outcome: Outcome;
}
/**
 * One numbered batch of outcomes.
 * @inline
 */
interface Batch {
  /** Increases by one per batch and client session, from 1; at most 2^53. */
  seq: number;
  /** Outcomes of ordinary calls, by generation. */
  counts: Counts[];
  /** Outcomes of probes. */
  probes: ProbeReport[];
}
/**
 * The state a client may act on without asking, and for how long.
 * @inline
 */
interface Lease {
  /** The state now. CLOSED: admit locally for `lease_ms`. OPEN: reject locally for `retry_after_ms`. HALF_OPEN: ask for every admission. */
  state: BreakerState;
  /** The manual mode (`disabled` admits everything, `isolated` is OPEN until reset). */
  mode: BreakerMode;
  /** The generation outcomes should be reported under. */
  generation: number;
  /** How long a CLOSED lease may be used before asking again, ms. */
  lease_ms: number;
  /** While OPEN: how long to reject before asking again, ms (when isolated, `lease_ms`). */
  retry_after_ms: number;
  /** The coordinator's clock when it answered (ms since the epoch), for diagnostics. */
  now: number;
  /** The fleet's throttle probability while CLOSED, in millionths; left out when 0. */
  throttle_ppm?: number;
}
/** What a client sends to `/acquire` and `/report`. */
export interface Exchange {
  /** The client's identifier: 1 to 64 ASCII letters, digits, `-` or `_`. */
  client: string;
  /**
   * Drawn at random when the client starts (at most 2^53); batch numbers are per
   * `(client, session)`. 0 from clients that predate sessions.
   */
  session: number;
  /** Outcomes to apply before answering, oldest first. */
  batches: Batch[];
}
/** The coordinator's answer. */
export interface Reply {
  /** The state to act on. */
  lease: Lease;
  /** `/acquire` only: the permit granted (`probe: null` for a CLOSED one). */
  permit?: {
    /** Its generation. */
    generation: number;
    /** The probe slot of a half-open probe (report it in `probes`); `null` otherwise (report it in `counts` under `generation`). */
    probe: number | null;
    /** When it was issued (the coordinator's clock, ms since the epoch). */
    issued_at: number;
  };
  /** `/acquire` only: the refusal. */
  rejected?: {
    /** Why: `'open'`, `'half_open_full'`, `'isolated'`, `'throttled'` or `'full'`. */
    reason: 'open' | 'half_open_full' | 'isolated' | 'throttled' | 'full';
    /** Milliseconds until asking again may succeed (at least 1). */
    retry_after_ms: number;
  };
  /** The `seq` of every batch now applied (including ones applied before). */
  acked: number[];
  /** Batches not applied; `last_applied` when one was numbered too far ahead (the client sends them again in a new session). */
  refused?: Array<{
    /** The batch's number. */
    seq: number;
    /** Why, for the client's event and the log. */
    reason: string;
    /** When the batch was numbered too far past the session's last applied one: that number. Absent for a batch over a limit. */
    last_applied?: number;
  }>;
}

/**
 * Where the shared state lives, when it is not a Durable Object: one exchange of the protocol,
 * answered as the coordinator would. `breakwater/store` implements it over Redis.
 */
export interface SharedTransport {
  /** Carries one exchange (`op`: `'acquire'` or `'report'`) to the coordinator and answers its reply. */
  exchange(op: 'acquire' | 'report', body: Exchange, signal?: AbortSignal): Promise<Reply>;
}

/**
 * What a transport answers: `ok` with the reply's JSON, `refused` with a 4xx `status` (the
 * client falls back to its local breaker and asks again later; on a 400 or 413 it also stops
 * sending that report as it is), or `unreachable` (worth trying again later).
 */
export type Answer =
  | { kind: 'ok'; text: string }
  | { kind: 'refused'; status: number; reason: string }
  | { kind: 'unreachable'; reason: string };

/** A transport that carries the core's JSON as it is. */
export type RawTransport = (op: 'acquire' | 'report', body: string, signal?: AbortSignal) => Promise<Answer>;

/** The breaker service: the Worker's `/v1/acquire` and `/v1/report` routes over HTTPS. */
export interface ServiceOptions {
  /** The Worker's origin, e.g. `https://breakwater.example.workers.dev` (https, except on loopback). */
  url: string;
  /** The Worker's `SERVICE_TOKEN` secret. */
  token: string;
  /** Default: the global `fetch`. */
  fetch?: ((input: string, init?: RequestInit) => Promise<Response>) | undefined;
}

/**
 * `SharedCircuitBreaker`'s options: where the state lives (`shared`, `service` or `transport`), the
 * shared breaker's settings, and this client's own.
 */
export interface SharedBreakerOptions {
  /**
   * The Durable Object namespace binding (`env.BREAKER`) of `BreakerObject`: exported by your
   * own Worker from `breakwater/cloudflare`, or by breakwater's Rust Worker (`script_name`).
   */
  shared?: NamespaceLike | undefined;
  /**
   * With `shared` or `service`: the shared breaker's settings (`CircuitBreaker` options, without
   * `clock`; no `slowCallRate`), sent with every request, the same in every instance. An object
   * whose Worker declares `BREAKERS` runs the settings declared there instead. Across a rolling
   * deploy the breaker keeps the settings it runs under; the admin route's `reset` installs the
   * ones clients send now. Default: 5 consecutive failures open it for 30 s.
   */
  breaker?: SharedBreakerRule | undefined;
  /** With `shared` or `service`: how long a CLOSED lease lets this client admit calls without asking, ms. Default 1000. */
  leaseMs?: number | undefined;
  /** Instead of `shared`, from outside Cloudflare: the Worker's breaker service over HTTPS. */
  service?: ServiceOptions | undefined;
  /** Instead of `shared`: another place holding the state (see `breakwater/store`). */
  transport?: SharedTransport | undefined;
  /** Send waiting successes once this many outcomes wait. Default 1000 (at most 62 500). */
  maxBatch?: number | undefined;
  /** Reject every call while the coordinator is unreachable. Default false (the local breaker decides). */
  failClosed?: boolean | undefined;
  /** How long to stay on the local breaker before trying the coordinator again, ms. Default 1000 (at most 300 000). */
  retryUnreachableMs?: number | undefined;
  /** Abandon a request to the coordinator after this many ms (then fall back). Default 5000 (at most 300 000). */
  requestTimeoutMs?: number | undefined;
  /**
   * This instance's own breaker (`CircuitBreaker` options; it runs in the core, beside the
   * lease): it sees every outcome of this instance, blocks it at once when they alone open it
   * (until the coordinator, having heard them, says otherwise), and decides alone before the
   * first lease and while the coordinator is unreachable or refusing. Default: the `breaker`
   * settings.
   */
  local?: CircuitBreakerOptions | undefined;
  /**
   * Where to hand the reports and lease renewals that `isHealthy()` and `record*` start in the
   * background (`waitUntil` from `cloudflare:workers` or `@vercel/functions`), so that the
   * runtime keeps them alive after the response. Default: none (they run on their own).
   */
  waitUntil?: ((promise: Promise<unknown>) => void) | undefined;
  /**
   * How a result or error counts. Default: `classifyOutcome`, as `CircuitBreaker.execute`
   * counts, with `breaker.isFailure` consulted first when given.
   */
  classify?: ((result: { ok: true; value: unknown } | { ok: false; error: unknown }) => Outcome) | undefined;
  /** The clock, ms since the epoch. Default `Date.now`. */
  clock?: (() => number) | undefined;
  /** This client's id (1–64 of `A-Za-z0-9-_`). Default: random. A session drawn at random at start keeps a restarted process that reuses its id apart from its former self. */
  clientId?: string | undefined;
}

interface ExecuteOptions {
  /** Where to hand a report that need not delay this call (`(p) => ctx.waitUntil(p)`). Default: the breaker's `waitUntil`. */
  waitUntil?: ((promise: Promise<unknown>) => void) | undefined;
  /** Overrides the breaker's `classify` for this call. */
  classify?: SharedBreakerOptions['classify'] | undefined;
  /** Aborting rejects at once with the signal's reason; a cancel is not counted (a time-out's abort is). */
  signal?: AbortSignal | undefined;
  /** Fail the call with `TimeoutError` (an upstream failure) after this many ms. */
  timeoutMs?: number | undefined;
}

/** `execute`'s options: as `CircuitBreaker.execute`'s, plus where to hand the report and how to count. */
export interface SharedExecuteOptions<T> extends ExecuteOptions {
  /** As `CircuitBreaker.execute`'s: answers a refused call, or one that failed against the upstream. */
  fallback?: ((error: unknown, reason: FallbackReason) => T | Promise<T>) | undefined;
}

/** `stream`'s options: the guard's, plus where to hand the report and how to count. */
export interface SharedStreamOptions<T> extends BreakerStreamOptions<T>, ExecuteOptions {}

/**
 * What `onEvent` listeners get: `state` (the state this client acts on changed), `local` (the
 * coordinator could not be reached, or refused: the local breaker decides now), `recovered` (the
 * coordinator answers again) or `dropped` (outcomes were given up).
 */
export type SharedEvent =
  | {
      /** `'state'`: the state this client acts on changed. */
      type: 'state';
      /** The breaker's name. */
      breaker: string;
      /** The state before (null before the first answer). */
      from: BreakerState | null;
      /** The state now. */
      to: BreakerState;
    }
  | {
      /** `'local'`: the coordinator could not be reached, or refused; the local breaker decides now. */
      type: 'local';
      /** The breaker's name. */
      breaker: string;
      /** What went wrong. */
      reason: string;
      /** The coordinator's refusal (a 4xx), if it refused. */
      status?: number;
      /** When that refusal is a configuration mistake, not an outage: what it most likely means. */
      misconfigured?: string;
    }
  | {
      /** `'recovered'`: the coordinator answers again. */
      type: 'recovered';
      /** The breaker's name. */
      breaker: string;
    }
  | {
      /** `'dropped'`: outcomes were given up (refused by the coordinator, too old to send again, or more than a client keeps). */
      type: 'dropped';
      /** The breaker's name. */
      breaker: string;
      /** How many outcomes. */
      outcomes: number;
      /** Why. */
      reason: string;
    };

/** Whether `name` is a breaker name (1 to 128 of ASCII letters, digits and - _ . : /): the core's rule. */
export function isBreakerName(name: unknown): name is string {
  return typeof name === 'string' && sharedGlue().is_breaker_name(name);
}

/** A shared breaker's name, or a `TypeError` saying what a name is. */
export function checkBreakerName(name: unknown): string {
  if (!isBreakerName(name)) {
    throw new TypeError(`breakwater: invalid breaker name ${JSON.stringify(name)}: 1 to 128 of ASCII letters, digits and - _ . : /`);
  }
  return name;
}

/**
 * The key of the options under which `breakwater/store` hands its store to the shared breaker
 * it extends: a transport that carries the core's JSON as it is. Exported only through
 * `breakwater/shared/internal`.
 */
export const RAW_TRANSPORT: unique symbol = Symbol('breakwater.rawTransport');

/** A shared breaker's options as the package's own sub-entries give them (`RAW_TRANSPORT`). */
export interface SharedBreakerInternalOptions extends SharedBreakerOptions {
  [RAW_TRANSPORT]?: RawTransport | undefined;
}

const NO_CONTEXT: { signal?: AbortSignal } = Object.freeze({});


/**
 * The settings JSON the core reads (`SharedSpec`) for a breaker's options and lease, or a
 * `RangeError` naming the option (`where`: the constructor).
 */
export function settingsJson(breaker: SharedBreakerRule | undefined, leaseMs: unknown, where: string): string {
  const b = { ...(breaker ?? {}) };
  refuse(b, ['clock', 'random'], `${where}.breaker`, 'the coordinator runs the breaker on its own clock and draws (give this client\'s clock as the top-level `clock`)');
  refuse(b, ['slowCallRate'], `${where}.breaker`, 'outcomes reach the coordinator as counts, without durations, so a slow-call rule could never trip');
  const json = sharedGlue().spec_json(breakerConfig(b, `${where}.breaker`), num('leaseMs', leaseMs, 1000, 1, Limit.MaxLeaseMs));
  if (json.startsWith('!')) throw refused(json.slice(1), where);
  return json;
}

/**
 * The core's refusal of a setting (`"field|value (why)"`, src/wasm/shared.rs) as a RangeError
 * naming the option it came from: the core spells its fields its own way (`breaker.open_duration_ms`).
 */
function refused(answer: string, where: string): RangeError {
  const bar = answer.indexOf('|');
  const field = answer.slice(0, bar);
  const section = /^(breaker|local)\./.exec(field)?.[1];
  const own = section === undefined ? field : field.slice(section.length + 1);
  const option = OPTION_OF_FIELD[own] ?? own;
  const at = section === undefined ? where : `${where}.${section}`;
  return new RangeError(`breakwater: invalid option "${option}" in ${at}: ${answer.slice(bar + 1)}`);
}

/** The option of each field of the core's settings that a shared breaker may refuse (src/shared/spec.rs, src/breaker/config.rs). */
const OPTION_OF_FIELD: Record<string, string> = {
  lease_ms: 'leaseMs',
  max_batch: 'maxBatch',
  retry_unreachable_ms: 'retryUnreachableMs',
  request_deadline_ms: 'requestTimeoutMs',
  open_duration_ms: 'resetTimeout',
  max_open_duration_ms: 'maxResetTimeoutMs',
  probe_timeout_ms: 'probeTimeoutMs',
  half_open_max_probes: 'halfOpenMaxProbes',
  half_open_success_threshold: 'halfOpenSuccessThreshold',
  open_jitter: 'openJitter',
  open_backoff_factor: 'openBackoffFactor',
  'trip.threshold': 'failureThreshold',
  'trip.window_ms': 'monitoringWindow',
  'trip.threshold_percent': 'failureRate.threshold',
  'trip.minimum_calls': 'failureRate.minimumCalls',
  'trip.window.calls': 'failureRate.windowCalls',
  'trip.window.millis': 'failureRate.windowMs',
};

/** Options a shared breaker's settings or its local breaker cannot honour: refused by name, never ignored. */
function refuse(o: object, keys: readonly string[], where: string, why: string): void {
  for (const k of keys) {
    if ((o as Record<string, unknown>)[k] !== undefined) throw new TypeError(`breakwater: option "${k}" in ${where} is not supported here: ${why}`);
  }
}

/**
 * The breaker settings as the local breaker takes them when no `local` is given: without
 * `isFailure`, which the client applies before any breaker sees an outcome.
 */
export function ownSettings(breaker: SharedBreakerRule | undefined): CircuitBreakerOptions | undefined {
  if (breaker?.isFailure === undefined) return breaker;
  const { isFailure: _, ...rest } = breaker;
  return rest as CircuitBreakerOptions;
}

/** The options of `SharedCircuitBreaker` (and of `StoreCircuitBreaker`, which adds its own). */
export const SHARED_KEYS = [
  'shared',
  'service',
  'transport',
  'breaker',
  'leaseMs',
  'maxBatch',
  'failClosed',
  'retryUnreachableMs',
  'requestTimeoutMs',
  'local',
  'waitUntil',
  'classify',
  'clock',
  'clientId',
] as const;

/** The local breaker's configuration array (`where`: the constructor, for error messages). */
export function localConfig(local: SharedBreakerOptions['local'], clock: () => number, where: string): Float64Array {
  if (local === undefined) return breakerConfig({ failureThreshold: 5, resetTimeout: 30_000, clock }, where);
  if (typeof local !== 'object' || local === null || typeof (local as { isHealthy?: unknown }).isHealthy === 'function') {
    throw new TypeError(
      `breakwater: invalid option "local" in ${where}: the local breaker runs in the core, beside the lease; give its CircuitBreaker options (e.g. { failureThreshold: 5, resetTimeout: 30000 })`,
    );
  }
  refuse(local, ['clock'], `${where}.local`, "the local breaker runs on this client's clock (the top-level `clock`)");
  refuse(local, ['isFailure'], `${where}.local`, 'outcomes reach the local breaker classified by the client (`breaker.isFailure` or `classify`)');
  return breakerConfig({ ...local, clock }, `${where}.local`);
}

function randomHex(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function randomSession(): number {
  const w = new Uint32Array(2);
  crypto.getRandomValues(w);
  return (w[0]! % 2 ** 21) * 2 ** 32 + w[1]!;
}

/** A 200 is an answer, a 4xx a refusal (a rotated token, a name not deployed yet, a bad body), the rest unreachable. */
async function answerOf(resp: Response, who: string): Promise<Answer> {
  const text = await resp.text();
  if (resp.status === 200) return { kind: 'ok', text };
  const reason = `${who} answered ${resp.status}: ${text.slice(0, 200)}`;
  return resp.status >= 400 && resp.status < 500
    ? { kind: 'refused', status: resp.status, reason }
    : { kind: 'unreachable', reason };
}

/**
 * The header carrying a client's settings (the core's settings JSON) to the object, which runs
 * them unless its Worker pins its own (`BREAKERS`).
 */
export const SETTINGS_HEADER = 'breakwater-settings';

function objectTransport(name: string, ns: NamespaceLike, settings: string): RawTransport {
  // The name travels with every request too: an id made by idFromName does not always carry it
  // (wrangler dev addresses an object in another process by its id alone).
  const url = `?breaker=${encodeURIComponent(name)}`;
  return async (op, body, signal) => {
    const stub = ns.getByName ? ns.getByName(name) : ns.get(ns.idFromName(name));
    const init: RequestInit = { method: 'POST', headers: { 'content-type': 'application/json', [SETTINGS_HEADER]: settings }, body };
    if (signal) init.signal = signal;
    return answerOf(await stub.fetch(`https://breaker/${op}${url}`, init), 'object');
  };
}

function serviceTransport(name: string, service: ServiceOptions, settings: string): RawTransport {
  const base = service.url.replace(/\/+$/, '');
  const send = service.fetch ?? ((input: string, init?: RequestInit) => fetch(input, init));
  return async (op, body, signal) => {
    const init: RequestInit = {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${service.token}`, [SETTINGS_HEADER]: settings },
      body,
    };
    if (signal) init.signal = signal;
    return answerOf(await send(`${base}/v1/${op}?breaker=${encodeURIComponent(name)}`, init), 'breaker service');
  };
}

/** A hand-written `SharedTransport` (parsed messages) as a raw one. */
function objectShaped(t: SharedTransport): RawTransport {
  return async (op, body, signal) => ({
    kind: 'ok',
    text: JSON.stringify(await t.exchange(op, JSON.parse(body) as Exchange, signal)),
  });
}

/** `http:` only where the token cannot be overheard. */
function checkServiceUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`breakwater: invalid option "service.url": ${JSON.stringify(url)} (expected an https:// URL)`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) || u.hostname.startsWith('127.');
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) {
    throw new TypeError(
      `breakwater: invalid option "service.url": ${JSON.stringify(url)} (expected https://: the token must not travel in clear text; http:// is accepted on loopback only)`,
    );
  }
}

/**
 * A circuit breaker shared by every isolate or instance: the state lives with a coordinator (a
 * Durable Object, the Worker's breaker service, or a store), this client holds a lease on it.
 * Keep one per breaker name per process (module scope).
 */
export class SharedCircuitBreaker {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'SharedCircuitBreaker';
  /** The breaker's name: the same in every instance, it names the shared state. */
  readonly name: string;
  #id: string | undefined;
  #made: WasmLeaseClient | undefined;
  #make: () => WasmLeaseClient | undefined;
  #send: RawTransport;
  #timeoutMs: number;
  #classify: NonNullable<SharedBreakerOptions['classify']>;
  #now: () => number;
  #inFlight: Promise<void> | null = null;
  #fallbacks = 0;
  #background = new Set<Promise<void>>();
  #waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  /** The breaker settings' `stream`: its `stream()` calls' defaults. */
  readonly #streamDefaults: StreamDefaults | undefined;
  #tickets: number[] = [];
  #events = new Emitter<SharedEvent>();
  #stateChange = new Emitter<StateChangeEvent>();
  #reject = new Emitter<RejectEvent>();
  #success = new Emitter<OutcomeEvent>();
  #failure = new Emitter<OutcomeEvent>();
  /** The state last told to `onStateChange` listeners (a `State` code; -1 before any). */
  #told = -1;

  constructor(name: string, options: SharedBreakerOptions);
  constructor(name: string, options: SharedBreakerInternalOptions) {
    checkBreakerName(name);
    const o = options ?? ({} as SharedBreakerInternalOptions);
    checkKeys('SharedCircuitBreaker options', o, SHARED_KEYS);
    const service = o.service;
    const settings = () => settingsJson(o.breaker, o.leaseMs, 'SharedCircuitBreaker options');
    let send: RawTransport;
    if (typeof o.shared?.get === 'function') send = objectTransport(name, o.shared, settings());
    else if (service !== undefined) {
      if (typeof service?.url !== 'string' || typeof service.token !== 'string' || service.token === '') {
        throw new TypeError('breakwater: `service` needs `url` (https://...) and a non-empty `token`');
      }
      checkServiceUrl(service.url);
      send = serviceTransport(name, service, settings());
    } else if (typeof o.transport?.exchange === 'function') send = objectShaped(o.transport);
    else if (typeof o[RAW_TRANSPORT] === 'function') send = o[RAW_TRANSPORT];
    else {
      throw new TypeError('breakwater: `shared` must be a Durable Object namespace binding (or give `service`)');
    }
    this.name = name;
    this.#send = send;
    this.#timeoutMs = num('requestTimeoutMs', o.requestTimeoutMs, 5000, 1, Limit.ResendWindowMs);
    this.#now = o.clock ?? Date.now;
    if (typeof this.#now !== 'function') throw new TypeError('breakwater: invalid option "clock" (expected a function)');
    const isFailure = o.breaker?.isFailure;
    this.#streamDefaults = checkStreamDefaults(o.breaker?.stream);
    this.#classify =
      o.classify ??
      (isFailure === undefined
        ? (r) => classifyOutcome(r)
        : (r) => OUTCOMES[r.ok ? outcomeCode(r.value, true, undefined, isFailure) : outcomeCode(r.error, false, undefined, isFailure)] ?? 'success');
    if (o.waitUntil !== undefined && typeof o.waitUntil !== 'function') {
      throw new TypeError(`breakwater: invalid option "waitUntil": ${String(o.waitUntil)} (expected a function)`);
    }
    this.#waitUntil = o.waitUntil;
    const id = o.clientId;
    if (id !== undefined && (typeof id !== 'string' || !sharedGlue().is_client_id(id))) {
      throw new TypeError(`breakwater: invalid option "clientId": ${JSON.stringify(id)} (expected 1 to 64 of A-Za-z0-9-_)`);
    }
    this.#id = id;
    const lease = new Float64Array(LeaseOpts.Len);
    lease[LeaseOpts.MaxBatch] = num('maxBatch', o.maxBatch, 1000, 1, Limit.MaxBatch);
    lease[LeaseOpts.FailClosed] = o.failClosed === true ? 1 : 0;
    lease[LeaseOpts.RetryUnreachable] = num('retryUnreachableMs', o.retryUnreachableMs, 1000, 1, Limit.ResendWindowMs);
    lease[LeaseOpts.RequestDeadline] = this.#timeoutMs;
    const local = localConfig(o.local ?? ownSettings(o.breaker), this.#now, 'SharedCircuitBreaker options');
    const g = sharedGlue();
    const invalid = g.check_lease(lease, local);
    if (invalid !== '') throw refused(invalid, 'SharedCircuitBreaker options');
    // Made on first use: Workers refuse random values at global scope, where a module-level
    // breaker is constructed (its client id and session are drawn at random).
    this.#make = () => g.WasmLeaseClient.create(this.clientId, randomSession(), lease, local);
  }

  /** This client's id: the `clientId` option, or drawn at random on first use. */
  get clientId(): string {
    return (this.#id ??= `js-${randomHex()}`);
  }

  get #core(): WasmLeaseClient {
    if (this.#made === undefined) {
      const core = this.#make();
      if (core === undefined) throw new Error('breakwater: the core refused the lease client (checked options)');
      this.#made = core;
    }
    return this.#made;
  }

  /**
   * The state this process acts on: the coordinator's, or this process's own breaker's before
   * the first lease, while the coordinator is unreachable, and when this process's own failures
   * opened it under a CLOSED lease. Never null.
   */
  get state(): BreakerState {
    return STATES[this.#core.state(this.#now())]!;
  }
  /**
   * The probability that a call is shed now (`CircuitBreaker.throttleProbability`): the fleet's,
   * which rides on the lease in hand while CLOSED, or the local breaker's while it decides.
   */
  get throttleProbability(): number {
    return this.#info()[LeaseInfo.Throttle]!;
  }
  /** The state this client last learned from the coordinator (null before the first answer). */
  get fleetState(): BreakerState | null {
    return STATES[this.#info()[LeaseInfo.KnownState]!] ?? null;
  }
  /**
   * Whether a call would be refused now, as `CircuitBreaker.isOpen()`: takes nothing and counts
   * nothing. An OPEN breaker whose period has elapsed reads `false`: the next call asks for the probe.
   */
  isOpen(): boolean {
    return this.#core.peek(this.#now()) < 0;
  }
  /** Milliseconds until a call may be admitted (a Retry-After); 0 when one would be now. */
  get retryAfterMs(): number {
    const code = this.#core.peek(this.#now());
    return code < 0 ? this.#decode(code).retryAfterMs : 0;
  }
  /** Whether the local breaker decides now (the coordinator did not answer). */
  get decidingLocally(): boolean {
    return this.#info()[LeaseInfo.InFallback] === 1;
  }
  /** Requests sent to the coordinator so far. */
  get coordinatorRequests(): number {
    return this.#info()[LeaseInfo.Requests]!;
  }
  /** Outcomes the coordinator has not acknowledged yet. */
  get unacknowledged(): number {
    return this.#info()[LeaseInfo.Unacknowledged]!;
  }
  /** Outcomes given up so far (refused, too old to resend, or beyond what a client keeps). */
  get dropped(): number {
    return this.#info()[LeaseInfo.Dropped]!;
  }
  /**
   * What this instance's calls met, as `CircuitBreaker.stats` counts them (the lease client's
   * counts; `fallbacks` are `execute`'s). `stale`, `slow`, `opened` and `full` are the fleet's
   * business or not kept here, and read 0: the coordinator counts the fleet.
   */
  get stats(): BreakerStats {
    const i = this.#info();
    return {
      admitted: i[LeaseInfo.Admitted]!,
      rejected: i[LeaseInfo.Rejected]!,
      successes: i[LeaseInfo.Successes]!,
      failures: i[LeaseInfo.Failures]!,
      ignored: i[LeaseInfo.Ignored]!,
      stale: 0,
      slow: 0,
      opened: 0,
      throttled: i[LeaseInfo.Throttled]!,
      full: 0,
      fallbacks: this.#fallbacks,
    };
  }

  #info(): Float64Array {
    return this.#core.info(this.#now());
  }

  /** Listens to the coordinator's state changes, fallbacks, recoveries and dropped outcomes. */
  onEvent(listener: (e: SharedEvent) => void): Unsubscribe {
    return this.#events.subscribe(listener);
  }
  /** As `CircuitBreaker.onStateChange`: the state this process acts on (`state`) changed. */
  onStateChange(listener: (event: StateChangeEvent) => void): Unsubscribe {
    if (this.#told < 0) this.#told = this.#core.state(this.#now());
    return this.#stateChange.subscribe(listener);
  }
  /** As `CircuitBreaker.onReject`: a call was refused. */
  onReject(listener: (event: RejectEvent) => void): Unsubscribe {
    return this.#reject.subscribe(listener);
  }
  /** As `CircuitBreaker.onSuccess`: a call was reported a success. */
  onSuccess(listener: (event: OutcomeEvent) => void): Unsubscribe {
    return this.#success.subscribe(listener);
  }
  /** As `CircuitBreaker.onFailure`: a call was reported an upstream failure. */
  onFailure(listener: (event: OutcomeEvent) => void): Unsubscribe {
    return this.#failure.subscribe(listener);
  }

  #rejectEvent(e: CircuitOpenError): RejectEvent {
    return { breaker: this.name, reason: e.reason, retryAfterMs: e.retryAfterMs };
  }

  /** Runs `fn` if admitted; throws a `CircuitOpenError` (`isCircuitOpenError`) if not. */
  async execute<T>(fn: (context: { signal?: AbortSignal | undefined }) => T | Promise<T>, opts: SharedExecuteOptions<T> = {}): Promise<T> {
    checkKeys('execute options', opts ?? {}, ['waitUntil', 'classify', 'signal', 'timeoutMs', 'fallback']);
    const { signal, timeoutMs, fallback } = checkCallOptions(opts ?? {});
    if (signal?.aborted) throw signal.reason;
    if (fallback !== undefined && typeof fallback !== 'function') {
      throw new TypeError(`breakwater: invalid option "fallback" in execute options: ${String(fallback)} (expected a function)`);
    }
    let ticket: number;
    try {
      ticket = await this.#admit();
    } catch (e) {
      if (fallback !== undefined && e instanceof CircuitOpenError) return (this.#fallbacks++, fallback(e, e.reason));
      throw e;
    }
    const waitUntil = opts.waitUntil ?? this.#waitUntil;
    const classify = opts.classify ?? this.#classify;
    // The report follows the call (awaited unless a waitUntil takes it); a call that failed
    // against the upstream is answered by `fallback` when given, as CircuitBreaker.execute does.
    let done: Promise<void> = Promise.resolve();
    let outcome = 'success' as Outcome;
    const settle = (code: number) => {
      outcome = OUTCOMES[code] ?? 'failure';
      done = this.#settle(ticket, outcome, waitUntil);
    };
    const count = (result: unknown, resolved: boolean, s: AbortSignal | undefined): number => {
      if (!resolved && s?.aborted && result === s.reason) return outcomeCode(result, false, s);
      return OUTCOMES.indexOf(safeClassify(classify, resolved ? { ok: true, value: result } : { ok: false, error: result }, resolved ? 'success' : 'failure'));
    };
    let value: T;
    try {
      if (signal !== undefined || timeoutMs !== undefined) value = await guardCall(fn, signal, timeoutMs, settle, count);
      else {
        try {
          value = await fn(NO_CONTEXT);
        } catch (error) {
          settle(count(error, false, undefined));
          throw error;
        }
        settle(count(value, true, undefined));
      }
    } catch (error) {
      if (!waitUntil) await done;
      if (fallback !== undefined && outcome === 'failure') return (this.#fallbacks++, fallback(error, isTimeoutError(error) ? 'timeout' : 'failure'));
      throw error;
    }
    if (!waitUntil) await done;
    return fallback !== undefined && outcome === 'failure' ? (this.#fallbacks++, fallback(value, 'failure')) : value;
  }

  /**
   * Runs a streaming call if admitted and counts the whole stream as one outcome, settled when it
   * ends: exactly as `CircuitBreaker.stream` (the same guard), with this breaker's admission,
   * `classify` and reports. Rejects before the first content chunk; never after.
   */
  stream(
    fn: (context: { signal: AbortSignal }) => Response | Promise<Response>,
    opts?: SharedStreamOptions<Uint8Array>,
  ): Promise<ReadableStream<Uint8Array>>;
  stream<T>(
    fn: (context: { signal: AbortSignal }) => ReadableStream<T> | AsyncIterable<T> | Promise<ReadableStream<T> | AsyncIterable<T>>,
    opts?: SharedStreamOptions<T>,
  ): Promise<ReadableStream<T>>;
  async stream<T>(
    fn: (context: { signal: AbortSignal }) => StreamSource<T> | Promise<StreamSource<T>>,
    opts: SharedStreamOptions<T> = {},
  ): Promise<ReadableStream<T>> {
    const { waitUntil = this.#waitUntil, classify = this.#classify, retry, ...options } = withDefaults(this.#streamDefaults, opts) ?? {};
    if (options.signal?.aborted) throw options.signal.reason;
    if (retry !== undefined && retry !== false) {
      return streamWithRetry(retry, options.signal, (signal) => this.stream(fn as (c: { signal: AbortSignal }) => ReadableStream<T>, { ...options, waitUntil, classify, signal, retry: false }));
    }
    const ticket = await this.#admit();
    return guardStream(
      fn,
      options,
      this.#now,
      (outcome) => {
        const done = this.#settle(ticket, OUTCOMES[outcome] ?? 'failure', waitUntil);
        if (!waitUntil) void done.catch(() => {});
      },
      (error) => OUTCOMES.indexOf(safeClassify(classify, { ok: false, error }, 'failure')),
    );
  }

  /**
   * The synchronous check, as `CircuitBreaker.isHealthy()`: may one call go ahead now?
   * Answered from the lease, or from this process's own breaker before the first lease and
   * while a renewal is on its way; what must be asked of the coordinator is sent in the
   * background (handed to `waitUntil`). In HALF_OPEN a `true` holds one of the fleet's probes,
   * which a background request fetched: the first call after the open period is refused while
   * it is asked for. Report every `true` with `recordSuccess()`, `recordFailure(error)` or
   * `recordIgnored()`.
   */
  isHealthy(): boolean {
    const d = this.#admitNow();
    if (d < 0) return false;
    // Calls let through and never reported are forgotten beyond the core's own ticket ring
    // (a report without a ticket counts under the current lease).
    if (this.#tickets.length >= Limit.Tickets) this.#tickets.shift();
    this.#tickets.push(d);
    return true;
  }
  /** Reports a success of the oldest call let through by `isHealthy()`; the report goes in the background. */
  recordSuccess(): void {
    this.#settleUntracked('success');
  }
  /**
   * Reports how the oldest call let through by `isHealthy()` failed, classified as `execute`
   * would (`breaker.isFailure`, then the package's rules; no error: an upstream failure). Pass
   * the call's `signal` so that the caller's own abort is not counted.
   */
  recordFailure(error?: unknown, signal?: AbortSignal): void {
    this.#settleUntracked(this.#failureOutcome(error, signal));
  }
  /** Reports a call let through by `isHealthy()` that says nothing about the upstream (or was never made). */
  recordIgnored(): void {
    this.#settleUntracked('ignored');
  }

  /**
   * As `CircuitBreaker.tryAcquire()`: asks, synchronously, to run one call you make yourself. A
   * permit to settle exactly once with `success()`, `failure(error)` or `ignore()` (later calls
   * do nothing), or `undefined` when the breaker refuses (see `retryAfterMs`). Answered as
   * `isHealthy()` is; the report goes in the background.
   */
  tryAcquire(): BreakerPermit | undefined {
    const d = this.#admitNow();
    if (d < 0) return undefined;
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      this.#hand(this.#settle(d, outcome));
    };
    return {
      success: () => settle('success'),
      failure: (error?: unknown, signal?: AbortSignal) => settle(this.#failureOutcome(error, signal)),
      ignore: () => settle('ignored'),
    };
  }

  /** How a failed call counts: the caller's own abort is not the upstream's; the rest as `classify` says. */
  #failureOutcome(error: unknown, signal: AbortSignal | undefined): Outcome {
    if (error === undefined) return 'failure';
    if (signal?.aborted && error === signal.reason) return OUTCOMES[outcomeCode(error, false, signal)] ?? 'ignored';
    return safeClassify(this.#classify, { ok: false, error }, 'failure');
  }

  /** Sends whatever waits and renews the lease. Resolves to whether the coordinator answered. */
  async flush(): Promise<boolean> {
    while (this.#background.size) await Promise.all(this.#background);
    if (this.#inFlight) await this.#inFlight;
    await this.#flush(true);
    return !this.decidingLocally;
  }

  // ----- admission -----

  async #admit(): Promise<number> {
    // The core bounds the rounds: past its `ADMIT_ROUNDS`, `admit_again` refuses.
    for (let round = 0; ; round++) {
      const d = this.#core.admit_again(this.#now(), round);
      this.#drain();
      if (d >= 0) return d;
      if (d <= -Reject.Scale) throw this.#rejection(d);
      if (d === -Decision.Refresh) {
        // The lease ran out: renew it, or wait for the report already renewing it.
        await (this.#inFlight ?? this.#flush(true));
        continue;
      }
      const r = await this.#ask(Op.Acquire);
      if (r >= 0) return r;
      if (r <= -Reject.Scale) throw this.#rejection(r);
    }
  }

  /** Sends an `/acquire` and feeds its answer to the core; what `on_answer` answers. */
  async #ask(op: Op): Promise<number> {
    const answer = await this.#exchange('acquire', this.#core.acquire_request());
    const next = this.#feed(op, answer);
    this.#drain();
    return next;
  }

  #feed(op: Op, answer: Answer): number {
    const now = this.#now();
    if (answer.kind === 'ok') return this.#core.on_answer(now, op, 200, answer.text);
    return this.#core.on_answer(now, op, answer.kind === 'refused' ? answer.status : 0, answer.reason);
  }

  #rejection(code: number): CircuitOpenError {
    const e = this.#decode(code);
    if (this.#reject.size) this.#reject.emit(this.#rejectEvent(e));
    return e;
  }

  #decode(code: number): CircuitOpenError {
    const c = -code;
    const reason = REASONS[c % Reject.Scale] ?? 'open';
    const retryAfterMs = Math.max(1, (c - (c % Reject.Scale)) / Reject.Scale);
    const state: BreakerState = reason === 'half-open-full' ? 'HALF_OPEN' : 'OPEN';
    return new CircuitOpenError(this.name, state, reason, retryAfterMs);
  }

  // ----- outcomes and reports -----

  #settle(ticket: number, outcome: Outcome, waitUntil?: (p: Promise<unknown>) => void): Promise<void> {
    const due = this.#core.record(this.#now(), ticket, OUTCOMES.indexOf(outcome));
    this.#drain();
    this.#tellOutcome(outcome);
    if (!due) return Promise.resolve();
    const p = this.#flush(false);
    if (waitUntil) waitUntil(p);
    return p;
  }

  #settleUntracked(outcome: Outcome): void {
    const ticket = this.#tickets.shift();
    const now = this.#now();
    const due =
      ticket === undefined ? this.#core.record_untracked(now, OUTCOMES.indexOf(outcome)) : this.#core.record(now, ticket, OUTCOMES.indexOf(outcome));
    this.#drain();
    if (due) this.#hand(this.#flush(false));
    this.#tellOutcome(outcome);
  }

  #tellOutcome(outcome: Outcome): void {
    if (outcome === 'success') {
      if (this.#success.size) this.#success.emit({ breaker: this.name });
    } else if (outcome === 'failure' && this.#failure.size) this.#failure.emit({ breaker: this.name });
  }

  /**
   * The synchronous admission of `isHealthy()` and `tryAcquire()`: a ticket, or -1 once the
   * refusal is told to `onReject` listeners; what must be asked of the coordinator goes in the
   * background.
   */
  #admitNow(): number {
    const d = this.#core.admit_now(this.#now());
    this.#drain();
    this.#kick();
    if (d >= 0) return d;
    this.#rejection(d);
    return -1;
  }

  /** Sends what `admit_now` left for the background: a lease renewal, or an `/acquire`. */
  #kick(): void {
    const need = this.#core.take_background();
    if (need === Decision.Refresh) this.#hand(this.#flush(true));
    else if (need === Decision.Acquire) this.#hand(this.#acquireInBackground());
  }

  async #acquireInBackground(): Promise<void> {
    if ((await this.#ask(Op.BackgroundAcquire)) === -Decision.Report) await this.#flush(false);
  }

  /** A request started in the background: handed to `waitUntil`, and awaited by `flush()`. */
  #hand(p: Promise<void>): void {
    const tracked = p.catch(() => {}).finally(() => this.#background.delete(tracked));
    this.#background.add(tracked);
    this.#waitUntil?.(tracked);
  }

  /** One report at a time; a failure recorded meanwhile is sent right after, as the core's `REPORT_ROUNDS` allow. */
  #flush(force: boolean): Promise<void> {
    if (this.#inFlight) return this.#inFlight;
    const body = this.#core.begin_flush(force);
    if (body === undefined) return Promise.resolve();
    const run = (async () => {
      const next = this.#feed(Op.Report, await this.#exchange('report', body));
      this.#inFlight = null;
      this.#drain();
      if (next === -Decision.Report) await this.#flush(false);
    })();
    this.#inFlight = run;
    return run;
  }

  async #exchange(op: 'acquire' | 'report', body: string): Promise<Answer> {
    try {
      return await withTimeout(this.#timeoutMs, (signal) => this.#send(op, body, signal));
    } catch (e) {
      return { kind: 'unreachable', reason: e instanceof Error ? e.message : String(e) };
    }
  }

  #drain(): void {
    if (this.#stateChange.size) {
      const now = this.#now();
      const to = this.#core.state(now);
      if (this.#told >= 0 && to !== this.#told) {
        this.#stateChange.emit({ breaker: this.name, from: STATES[this.#told]!, to: STATES[to]!, at: now });
      }
      this.#told = to;
    }
    for (let json = this.#core.next_event(); json !== undefined; json = this.#core.next_event()) {
      const e = { ...(JSON.parse(json) as object), breaker: this.name } as SharedEvent;
      warnMisconfigured(this.name, e);
      // As every breaker's events: a throwing listener does not stop the others, nor this
      // breaker; its error is reported asynchronously.
      this.#events.emit(e);
    }
  }
}

const warned = new Set<string>();

/** One `console.warn` per breaker and status: deciding locally because of configuration (the core says which), not an outage. */
function warnMisconfigured(name: string, e: SharedEvent): void {
  if (e.type !== 'local' || e.misconfigured === undefined || warned.has(`${name}|${e.status}`)) return;
  warned.add(`${name}|${e.status}`);
  console.warn(
    `breakwater: shared breaker ${JSON.stringify(name)} is deciding locally because ${e.reason.slice(0, 300)}; ` +
      `this is configuration, not an outage: ${e.misconfigured}`,
  );
}

function safeClassify(
  classify: NonNullable<SharedBreakerOptions['classify']>,
  r: { ok: true; value: unknown } | { ok: false; error: unknown },
  dflt: Outcome,
): Outcome {
  try {
    const o = classify(r);
    return o === 'success' || o === 'failure' || o === 'ignored' ? o : dflt;
  } catch {
    return dflt;
  }
}
