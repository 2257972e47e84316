/**
 * A circuit breaker shared by every isolate of a Cloudflare Worker, held by breakwater's
 * `BreakerObject` Durable Object (the Rust Worker built with `--features worker`).
 *
 * Self-contained: plain `fetch` to the object's stub plus the lease logic; it does not load the
 * wasm module. The same logic as `src/worker/lease.rs`:
 *
 * - CLOSED lease: admit locally until it runs out; outcomes wait in a batch. A failure (or a
 *   probe outcome) is sent at once, with the successes waiting; successes alone are sent when
 *   `maxBatch` wait or with the lease renewal.
 * - OPEN lease: reject locally until the object's retry-after has passed.
 * - HALF_OPEN: every admission asks the object, which grants the probe permits, so exactly the
 *   configured number of probes run cluster-wide.
 * - Object unreachable or overloaded: a local breaker decides (`failClosed: true` rejects
 *   everything instead) for `retryUnreachableMs`; a `fallback` event says so.
 *
 * ```ts
 * import { SharedCircuitBreaker } from 'breakwater/shared';
 * const breaker = new SharedCircuitBreaker('anthropic', { shared: env.BREAKER });
 * const reply = await breaker.execute(() => callTheModel(), { waitUntil: (p) => ctx.waitUntil(p) });
 * ```
 *
 * Keep one instance per breaker name per isolate (module scope); pass `waitUntil` so that batched
 * reports are not cut off when the response is sent.
 *
 * Outside Cloudflare (a Next.js app on Vercel, Node, any runtime with `fetch`), the same client
 * reaches the object through the Worker's breaker service over HTTPS (the Worker's `SERVICE_TOKEN`
 * secret turns it on):
 *
 * ```ts
 * const breaker = new SharedCircuitBreaker('anthropic', {
 *   service: { url: 'https://breakwater.example.workers.dev', token: process.env.BREAKWATER_TOKEN! },
 * });
 * ```
 */

const OPEN_MARK = Symbol.for('breakwater.CircuitOpenError');

export type SharedState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';
export type SharedMode = 'automatic' | 'isolated' | 'disabled';
export type Outcome = 'success' | 'failure' | 'ignored';
export type SharedRejectReason = 'open' | 'half-open-full' | 'isolated';

/** The bits of a Durable Object stub this client uses. */
export interface StubLike {
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

/** The bits of a Durable Object namespace binding this client uses. */
export interface NamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): StubLike;
  getByName?(name: string): StubLike;
}

/** A local breaker to fall back on, such as the package's `CircuitBreaker`. */
export interface LocalBreakerLike {
  isHealthy(): boolean;
  recordSuccess(): void;
  recordFailure(error?: unknown): void;
}

/**
 * Where the shared state lives, when it is not a Durable Object: one exchange of the protocol
 * (`src/worker/protocol.rs`), answered as the object would. `breakwater/store` implements it over
 * Redis (or any compare-and-set store) with the wasm core.
 */
export interface SharedTransport {
  exchange(op: 'acquire' | 'report', body: Exchange, signal?: AbortSignal): Promise<Reply>;
}

/** The breaker service: the Worker's `/v1/acquire` and `/v1/report` routes over HTTPS. */
export interface ServiceOptions {
  /** The Worker's origin, e.g. `https://breakwater.example.workers.dev`. */
  url: string;
  /** The Worker's `SERVICE_TOKEN` secret. */
  token: string;
  /** Default: the global `fetch`. */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
}

export interface SharedBreakerOptions {
  /** The Durable Object namespace binding (`env.BREAKER`), possibly bound with `script_name`. */
  shared?: NamespaceLike;
  /** Instead of `shared`, from outside Cloudflare: the Worker's breaker service over HTTPS. */
  service?: ServiceOptions;
  /** Instead of `shared`: another place holding the state (see `breakwater/store`). */
  transport?: SharedTransport;
  /** Send waiting successes once this many outcomes wait. Default 1000. */
  maxBatch?: number;
  /** Reject every call while the object is unreachable. Default false (the local breaker decides). */
  failClosed?: boolean;
  /** How long to stay on the local breaker before trying the object again, ms. Default 1000. */
  retryUnreachableMs?: number;
  /** Abandon an object request after this many ms (then fall back). Default 5000. */
  requestTimeoutMs?: number;
  /** The local breaker. Default: 5 consecutive failures open it for 30 s, then one probe. */
  fallback?: LocalBreakerLike;
  /** How a result or error counts. Default: a resolved value is a success, a throw a failure. */
  classify?: (result: { ok: true; value: unknown } | { ok: false; error: unknown }) => Outcome;
  /** The clock, ms since the epoch. Default `Date.now`. */
  clock?: () => number;
  /** This client's id (1–64 of `A-Za-z0-9-_`). Default: random. */
  clientId?: string;
}

export interface ExecuteOptions {
  /** Where to hand a report that need not delay this call (`(p) => ctx.waitUntil(p)`). */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Overrides the breaker's `classify` for this call. */
  classify?: SharedBreakerOptions['classify'];
}

export type SharedEvent =
  | { type: 'state'; breaker: string; from: SharedState | null; to: SharedState }
  | { type: 'fallback'; breaker: string; reason: string }
  | { type: 'recovered'; breaker: string };

/** Stops a subscription; calling it twice is harmless. */
export interface Unsubscribe {
  (): void;
  dispose(): void;
}

/** Thrown by `execute` when the shared breaker refuses the call. */
export class SharedCircuitOpenError extends Error {
  readonly isCircuitOpenError = true as const;
  readonly breaker: string;
  readonly state: SharedState;
  readonly reason: SharedRejectReason;
  readonly retryAfterMs: number;
  constructor(breaker: string, state: SharedState, reason: SharedRejectReason, retryAfterMs: number) {
    super(`circuit "${breaker}" is ${reason === 'open' ? 'open' : reason}; retry after ${retryAfterMs} ms`);
    this.name = 'CircuitOpenError';
    this.breaker = breaker;
    this.state = state;
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    (this as unknown as Record<symbol, boolean>)[OPEN_MARK] = true;
  }
}

// ----- wire shapes (see src/worker/protocol.rs) -----

export interface Counts {
  generation: number | null;
  successes: number;
  failures: number;
  ignored: number;
}
export interface ProbeReport {
  generation: number;
  id: number;
  issued_at: number;
  outcome: Outcome;
}
export interface Batch {
  seq: number;
  counts: Counts[];
  probes: ProbeReport[];
}
export interface Lease {
  state: SharedState;
  mode: SharedMode;
  generation: number;
  lease_ms: number;
  retry_after_ms: number;
  now: number;
}
export interface Exchange {
  client: string;
  batches: Batch[];
}
export interface Reply {
  lease: Lease;
  permit?: { generation: number; probe: number | null; issued_at: number };
  rejected?: { reason: 'open' | 'half_open_full' | 'isolated'; retry_after_ms: number };
  acked: number[];
}

const MAX_BATCHES = 16;
const MAX_GENERATIONS = 8;
const MAX_PROBES = 64;
const NAME_RE = /^[A-Za-z0-9\-_.:/]{1,128}$/;
const CLIENT_RE = /^[A-Za-z0-9\-_]{1,64}$/;

type Ticket =
  | { kind: 'lease'; generation: number | null }
  | { kind: 'probe'; generation: number; id: number; issuedAt: number }
  | { kind: 'local'; generation: number | null };

type Decision =
  | { t: 'admit'; ticket: Ticket }
  | { t: 'reject'; reason: SharedRejectReason; retryAfterMs: number }
  | { t: 'acquire' }
  | { t: 'refresh' };

interface Known {
  state: SharedState;
  mode: SharedMode;
  generation: number;
  until: number;
}

/**
 * A tiny consecutive-failures breaker, the default local fallback: `threshold` failures in a row
 * open it for `openMs`; then one call probes.
 */
export class LocalFallbackBreaker implements LocalBreakerLike {
  #failures = 0;
  #openUntil = 0;
  #probing = false;
  constructor(
    readonly threshold = 5,
    readonly openMs = 30_000,
    readonly clock: () => number = Date.now,
  ) {}
  get state(): SharedState {
    if (this.#openUntil === 0) return 'CLOSED';
    return this.clock() < this.#openUntil ? 'OPEN' : 'HALF_OPEN';
  }
  isHealthy(): boolean {
    if (this.#openUntil === 0) return true;
    if (this.clock() < this.#openUntil || this.#probing) return false;
    this.#probing = true;
    return true;
  }
  recordSuccess(): void {
    this.#failures = 0;
    this.#openUntil = 0;
    this.#probing = false;
  }
  recordFailure(): void {
    this.#failures += 1;
    if (this.#probing || this.#failures >= this.threshold) {
      this.#openUntil = this.clock() + this.openMs;
      this.#probing = false;
    }
  }
}

export class SharedCircuitBreaker {
  readonly name: string;
  readonly clientId: string;
  #ns: NamespaceLike | undefined;
  #transport: SharedTransport | undefined;
  #maxBatch: number;
  #failClosed: boolean;
  #retryUnreachableMs: number;
  #timeoutMs: number;
  #local: LocalBreakerLike;
  #classify: NonNullable<SharedBreakerOptions['classify']>;
  #now: () => number;
  #known: Known | null = null;
  #pending: Counts[] = [];
  #pendingProbes: ProbeReport[] = [];
  #outbox: Batch[] = [];
  #nextSeq = 1;
  #inFlight: Promise<void> | null = null;
  #fallbackUntil: number | null = null;
  #requests = 0;
  #tickets: Ticket[] = [];
  #listeners: Array<(e: SharedEvent) => void> = [];

  constructor(name: string, options: SharedBreakerOptions) {
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw new TypeError(
        `breakwater: invalid breaker name ${JSON.stringify(name)}: 1 to 128 of ASCII letters, digits and - _ . : /`,
      );
    }
    const service = options?.service;
    if (service !== undefined && (typeof service?.url !== 'string' || !/^https?:\/\//.test(service.url) || typeof service.token !== 'string' || service.token === '')) {
      throw new TypeError('breakwater: `service` needs `url` (http(s)://...) and a non-empty `token`');
    }
    if (!options || (typeof options.shared?.get !== 'function' && typeof options.transport?.exchange !== 'function' && !service)) {
      throw new TypeError('breakwater: `shared` must be a Durable Object namespace binding (or give `service`)');
    }
    const positive = (v: unknown, field: string, dflt: number): number => {
      if (v === undefined) return dflt;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 1) {
        throw new RangeError(`breakwater: \`${field}\` must be a number >= 1, got ${String(v)}`);
      }
      return Math.floor(v);
    };
    this.name = name;
    this.#ns = options.shared;
    this.#transport =
      typeof options.shared?.get === 'function' ? undefined : service ? serviceTransport(name, service) : options.transport;
    this.#maxBatch = positive(options.maxBatch, 'maxBatch', 1000);
    this.#retryUnreachableMs = positive(options.retryUnreachableMs, 'retryUnreachableMs', 1000);
    this.#timeoutMs = positive(options.requestTimeoutMs, 'requestTimeoutMs', 5000);
    this.#failClosed = options.failClosed === true;
    this.#now = options.clock ?? Date.now;
    this.#local = options.fallback ?? new LocalFallbackBreaker(5, 30_000, this.#now);
    this.#classify = options.classify ?? ((r) => (r.ok ? 'success' : 'failure'));
    const id = options.clientId ?? `js-${randomHex()}`;
    if (!CLIENT_RE.test(id)) throw new TypeError('breakwater: `clientId` must be 1 to 64 of A-Za-z0-9-_');
    this.clientId = id;
  }

  /** The state this client last learned from the object (null before the first answer). */
  get state(): SharedState | null {
    return this.#known?.state ?? null;
  }
  /** Whether the local breaker decides now (the object did not answer). */
  get inFallback(): boolean {
    return this.#fallbackUntil !== null;
  }
  /** Requests sent to the object so far. */
  get objectRequests(): number {
    return this.#requests;
  }
  /** Outcomes the object has not acknowledged yet. */
  get unacknowledged(): number {
    const sum = (cs: Counts[]) => cs.reduce((a, c) => a + c.successes + c.failures + c.ignored, 0);
    return (
      sum(this.#pending) +
      this.#pendingProbes.length +
      this.#outbox.reduce((a, b) => a + sum(b.counts) + b.probes.length, 0)
    );
  }

  /** Listens to state changes, fallbacks and recoveries. */
  onEvent(listener: (e: SharedEvent) => void): Unsubscribe {
    if (typeof listener !== 'function') throw new TypeError('breakwater: a listener must be a function');
    this.#listeners = [...this.#listeners, listener];
    const off = (() => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    }) as Unsubscribe;
    off.dispose = off;
    return off;
  }

  /** Runs `fn` if admitted; throws a `CircuitOpenError` (`isCircuitOpenError`) if not. */
  async execute<T>(fn: () => T | Promise<T>, opts: ExecuteOptions = {}): Promise<T> {
    const ticket = await this.#admit();
    const classify = opts.classify ?? this.#classify;
    let value: T;
    try {
      value = await fn();
    } catch (error) {
      const done = this.#settle(ticket, safeClassify(classify, { ok: false, error }, 'failure'), opts.waitUntil, error);
      if (!opts.waitUntil) await done;
      throw error;
    }
    const outcome = safeClassify(classify, { ok: true, value }, 'success');
    const done = this.#settle(ticket, outcome, opts.waitUntil);
    if (!opts.waitUntil) await done;
    return value;
  }

  /** The `isHealthy()` pattern: may one call go ahead? Report it with `recordSuccess/Failure`. */
  async isHealthy(): Promise<boolean> {
    try {
      this.#tickets.push(await this.#admit());
      return true;
    } catch {
      return false;
    }
  }
  /** Reports a success of the oldest call let through by `isHealthy()`. */
  recordSuccess(opts: ExecuteOptions = {}): Promise<void> {
    return this.#settleUntracked('success', opts.waitUntil);
  }
  /** Reports a failure of the oldest call let through by `isHealthy()`. */
  recordFailure(error?: unknown, opts: ExecuteOptions = {}): Promise<void> {
    return this.#settleUntracked('failure', opts.waitUntil, error);
  }

  /** Sends whatever waits and renews the lease. Resolves to whether the object answered. */
  async flush(): Promise<boolean> {
    if (this.#inFlight) await this.#inFlight;
    await this.#flush(true);
    return this.#fallbackUntil === null;
  }

  // ----- admission -----

  async #admit(): Promise<Ticket> {
    for (let i = 0; i < 4; i++) {
      const d = this.#decide();
      if (d.t === 'admit') return d.ticket;
      if (d.t === 'reject') throw this.#rejection(d.reason, d.retryAfterMs);
      if (d.t === 'refresh') {
        await this.#flush(true);
        continue;
      }
      this.#requests += 1;
      let reply: Reply;
      try {
        reply = await this.#send('acquire', { client: this.clientId, batches: [] });
      } catch (e) {
        this.#unreachable(e);
        continue;
      }
      this.#onLease(reply.lease);
      if (reply.permit) {
        const p = reply.permit;
        return p.probe === null || p.probe === undefined
          ? { kind: 'lease', generation: p.generation }
          : { kind: 'probe', generation: p.generation, id: p.probe, issuedAt: p.issued_at };
      }
      const r = reply.rejected;
      throw this.#rejection(
        r?.reason === 'half_open_full' ? 'half-open-full' : (r?.reason ?? 'open'),
        Math.max(1, r?.retry_after_ms ?? 1),
      );
    }
    throw this.#rejection('open', 1);
  }

  #decide(): Decision {
    const now = this.#now();
    if (this.#fallbackUntil !== null) {
      if (now < this.#fallbackUntil || this.#inFlight) return this.#admitLocally(now, this.#fallbackUntil);
      return this.#known?.state === 'CLOSED' ? { t: 'refresh' } : { t: 'acquire' };
    }
    const k = this.#known;
    if (!k) return { t: 'acquire' };
    const lease: Decision = { t: 'admit', ticket: { kind: 'lease', generation: k.generation } };
    if (k.mode === 'disabled' || k.state === 'CLOSED') {
      return now < k.until || this.#inFlight ? lease : { t: 'refresh' };
    }
    if (k.state === 'OPEN' && now < k.until) {
      return { t: 'reject', reason: k.mode === 'isolated' ? 'isolated' : 'open', retryAfterMs: Math.max(1, k.until - now) };
    }
    return { t: 'acquire' };
  }

  #admitLocally(now: number, until: number): Decision {
    if (this.#failClosed) return { t: 'reject', reason: 'open', retryAfterMs: Math.max(1, until - now) };
    let healthy = false;
    try {
      healthy = this.#local.isHealthy();
    } catch {
      healthy = true;
    }
    return healthy
      ? { t: 'admit', ticket: { kind: 'local', generation: this.#known?.generation ?? null } }
      : { t: 'reject', reason: 'open', retryAfterMs: Math.max(1, until - now) };
  }

  #rejection(reason: SharedRejectReason, retryAfterMs: number): SharedCircuitOpenError {
    return new SharedCircuitOpenError(this.name, this.#known?.state ?? 'OPEN', reason, retryAfterMs);
  }

  // ----- outcomes and reports -----

  #settle(ticket: Ticket, outcome: Outcome, waitUntil?: (p: Promise<unknown>) => void, error?: unknown): Promise<void> {
    if (ticket.kind === 'probe') {
      this.#pendingProbes.push({ generation: ticket.generation, id: ticket.id, issued_at: ticket.issuedAt, outcome });
    } else {
      if (ticket.kind === 'local') {
        try {
          if (outcome === 'success') this.#local.recordSuccess();
          else if (outcome === 'failure') this.#local.recordFailure(error);
        } catch {
          /* a broken fallback must not break the call */
        }
      }
      this.#count(ticket.generation, outcome);
    }
    if (!this.#flushDue()) return Promise.resolve();
    const p = this.#flush(false);
    if (waitUntil) waitUntil(p);
    return p;
  }

  #settleUntracked(outcome: Outcome, waitUntil?: (p: Promise<unknown>) => void, error?: unknown): Promise<void> {
    const ticket = this.#tickets.shift() ?? { kind: 'lease', generation: this.#known?.generation ?? null };
    const p = this.#settle(ticket, outcome, waitUntil, error);
    return waitUntil ? Promise.resolve() : p;
  }

  #count(generation: number | null, outcome: Outcome): void {
    let c = this.#pending.find((x) => x.generation === generation);
    if (!c) {
      if (this.#pending.length >= MAX_GENERATIONS) {
        // Outcomes of long-gone generations are stale whatever their number: fold the oldest.
        const old = this.#pending.shift()!;
        const none = this.#pending.find((x) => x.generation === null);
        if (none) {
          none.successes += old.successes;
          none.failures += old.failures;
          none.ignored += old.ignored;
        } else {
          this.#pending.unshift({ ...old, generation: null });
        }
      }
      c = { generation, successes: 0, failures: 0, ignored: 0 };
      this.#pending.push(c);
    }
    if (outcome === 'success') c.successes += 1;
    else if (outcome === 'failure') c.failures += 1;
    else c.ignored += 1;
  }

  #flushDue(): boolean {
    if (this.#inFlight) return false;
    if (this.#fallbackUntil !== null && this.#now() < this.#fallbackUntil) return false;
    if (this.#pendingProbes.length > 0) return true;
    let waiting = 0;
    for (const c of this.#pending) {
      if (c.failures > 0) return true;
      waiting += c.successes + c.ignored;
    }
    return waiting >= this.#maxBatch;
  }

  /** One report at a time; a failure recorded meanwhile is sent right after. */
  #flush(force: boolean): Promise<void> {
    if (this.#inFlight) return this.#inFlight;
    if (this.#pending.length > 0 || this.#pendingProbes.length > 0) {
      if (this.#outbox.length < MAX_BATCHES) {
        this.#outbox.push({
          seq: this.#nextSeq++,
          counts: this.#pending,
          probes: this.#pendingProbes.splice(0, MAX_PROBES),
        });
        this.#pending = [];
      }
    }
    if (this.#outbox.length === 0 && !force) return Promise.resolve();
    const batches = this.#outbox.slice();
    this.#requests += 1;
    const run = (async () => {
      try {
        const reply = await this.#send('report', { client: this.clientId, batches });
        const acked = new Set(reply.acked);
        this.#outbox = this.#outbox.filter((b) => !acked.has(b.seq));
        this.#inFlight = null;
        this.#onLease(reply.lease);
      } catch (e) {
        this.#inFlight = null;
        this.#unreachable(e);
        return;
      }
      if (this.#flushDue()) await this.#flush(false);
    })();
    this.#inFlight = run;
    return run;
  }

  // ----- the object -----

  async #send(op: 'acquire' | 'report', body: Exchange): Promise<Reply> {
    if (this.#transport) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      });
      try {
        const signal = typeof AbortSignal.timeout === 'function' ? AbortSignal.timeout(this.#timeoutMs) : undefined;
        const reply = await Promise.race([this.#transport.exchange(op, body, signal), late]);
        if (!reply || typeof reply !== 'object' || !reply.lease || !Array.isArray(reply.acked)) {
          throw new Error('transport answer unreadable');
        }
        return reply;
      } finally {
        clearTimeout(timer);
      }
    }
    const ns = this.#ns!;
    const stub = ns.getByName ? ns.getByName(this.name) : ns.get(ns.idFromName(this.name));
    const signal = typeof AbortSignal.timeout === 'function' ? AbortSignal.timeout(this.#timeoutMs) : undefined;
    const resp = await stub.fetch(`https://breaker/${op}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    const text = await resp.text();
    if (resp.status !== 200) throw new Error(`object answered ${resp.status}: ${text.slice(0, 200)}`);
    const reply = JSON.parse(text) as Reply;
    if (!reply || typeof reply !== 'object' || !reply.lease || !Array.isArray(reply.acked)) {
      throw new Error('object answer unreadable');
    }
    return reply;
  }

  #onLease(lease: Lease): void {
    const now = this.#now();
    const until =
      lease.mode === 'disabled' || lease.state === 'CLOSED'
        ? now + lease.lease_ms
        : lease.state === 'OPEN'
          ? now + Math.max(1, lease.retry_after_ms)
          : now;
    const before = this.#known?.state ?? null;
    this.#known = { state: lease.state, mode: lease.mode, generation: lease.generation, until };
    if (before !== lease.state) this.#emit({ type: 'state', breaker: this.name, from: before, to: lease.state });
    if (this.#fallbackUntil !== null) {
      this.#fallbackUntil = null;
      this.#emit({ type: 'recovered', breaker: this.name });
    }
  }

  #unreachable(e: unknown): void {
    const first = this.#fallbackUntil === null;
    this.#fallbackUntil = this.#now() + this.#retryUnreachableMs;
    if (first) this.#emit({ type: 'fallback', breaker: this.name, reason: e instanceof Error ? e.message : String(e) });
  }

  #emit(e: SharedEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        /* a throwing listener does not stop the others */
      }
    }
  }
}

function serviceTransport(name: string, service: ServiceOptions): SharedTransport {
  const base = service.url.replace(/\/+$/, '');
  const send = service.fetch ?? ((input: string, init?: RequestInit) => fetch(input, init));
  return {
    async exchange(op, body, signal) {
      const resp = await send(`${base}/v1/${op}?breaker=${encodeURIComponent(name)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${service.token}` },
        body: JSON.stringify(body),
        signal,
      });
      const text = await resp.text();
      if (resp.status !== 200) throw new Error(`breaker service answered ${resp.status}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as Reply;
    },
  };
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

function randomHex(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
