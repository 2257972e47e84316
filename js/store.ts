/**
 * `breakwater/store`: one circuit breaker shared by every instance of an app (several Node
 * servers, serverless instances, edge isolates) through a store such as Redis.
 *
 * The logic stays in the wasm core. The store holds the core's snapshot (`toJSON()`), a version
 * and the clients' applied-batch numbers under one key per breaker (`breakwater:<name>`); every
 * change is read → restore into a core breaker → apply (grant a probe, apply a batch of outcomes,
 * isolate, reset) → write back if the version has not moved (an atomic compare-and-set: a small
 * Lua script), again on conflict, a bounded number of times.
 *
 * The client is the Durable Object client of `breakwater/shared` with this store as transport,
 * so the lease semantics are the same: CLOSED → admit locally and batch the outcomes (a failure
 * is sent at once); OPEN → reject locally until the retry-after; HALF_OPEN → ask the store for
 * every admission, so exactly the configured number of probes run across all instances. Store
 * unreachable or slow (every call is bounded by a timeout): a local breaker decides (or
 * `failClosed`), a `fallback` event says so, and the waiting outcomes are sent when it answers
 * again (`recovered`); a batch is applied at most once however often it is sent.
 *
 * ```ts
 * import { createClient } from 'redis';
 * import { StoreCircuitBreaker, RedisStore, fromNodeRedis } from 'breakwater/store';
 * const redis = await createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).connect();
 * export const breaker = new StoreCircuitBreaker('anthropic', {
 *   store: new RedisStore(fromNodeRedis(redis)),
 *   breaker: { failureThreshold: 5, resetTimeout: 30_000 },
 * });
 * const reply = await breaker.execute(() => callTheModel());
 * ```
 * @packageDocumentation
 */
import { CircuitBreaker, classifyError, type BreakerSnapshot, type CircuitBreakerOptions } from 'breakwater';
import {
  SharedCircuitBreaker,
  type Batch,
  type Exchange,
  type Outcome,
  type Reply,
  type SharedBreakerOptions,
  type SharedTransport,
} from './shared.js';

export {
  SharedCircuitOpenError,
  type SharedEvent,
  type SharedState,
  type SharedMode,
  type Outcome,
  type ExecuteOptions,
  type LocalBreakerLike,
  type Unsubscribe,
} from './shared.js';

// ----- the store -----

/** A stored value and its version (1 for the first write). */
export interface Versioned {
  version: number;
  value: string;
}

/**
 * Where the records live: a read, and an atomic compare-and-set on the version. `RedisStore`
 * implements it over any Redis client; `MemoryStore` in one process (tests, development).
 */
export interface BreakerStore {
  /** The current record, or null when there is none. */
  read(key: string): Promise<Versioned | null>;
  /**
   * Writes `value` as version `expected + 1` if the record's version is still `expected` (0: no
   * record yet). Answers `{ ok: true }`, or `{ ok: false, current }` with what is there now.
   */
  compareAndSet(key: string, expected: number, value: string, ttlMs: number): Promise<CasResult>;
}

export type CasResult = { ok: true } | { ok: false; current: Versioned | null };

/** The one command the Redis store needs: `EVAL script numkeys key... arg...`. */
export interface RedisEval {
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

/** The stored value is `<version>|<record JSON>`, so the script can check the version cheaply. */
const READ_SCRIPT = "return redis.call('GET', KEYS[1])";
const CAS_SCRIPT = [
  "local cur = redis.call('GET', KEYS[1])",
  'local v = 0',
  "if cur then v = tonumber(string.match(cur, '^(%d+)|')) or 0 end",
  "if v ~= tonumber(ARGV[1]) then return cur or '' end",
  "redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])",
  'return 1',
].join('\n');

function parseVersioned(raw: unknown): Versioned | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const text = typeof raw === 'string' ? raw : String(raw);
  const bar = text.indexOf('|');
  const version = Number(text.slice(0, bar));
  // Not ours (or damaged): version 0, so that the next write replaces it (as the script agrees).
  if (bar < 1 || !/^\d+$/.test(text.slice(0, bar)) || !Number.isSafeInteger(version)) return { version: 0, value: text };
  return { version, value: text.slice(bar + 1) };
}

/** A `BreakerStore` on Redis: one string key per breaker, changed by a Lua compare-and-set. */
export class RedisStore implements BreakerStore {
  #redis: RedisEval;
  constructor(redis: RedisEval) {
    if (typeof redis?.eval !== 'function') {
      throw new TypeError('breakwater: RedisStore needs an adapter: fromNodeRedis(client), fromIoredis(client) or fromUpstash(client)');
    }
    this.#redis = redis;
  }
  async read(key: string): Promise<Versioned | null> {
    return parseVersioned(await this.#redis.eval(READ_SCRIPT, [key], []));
  }
  async compareAndSet(key: string, expected: number, value: string, ttlMs: number): Promise<CasResult> {
    const next = `${expected + 1}|${value}`;
    const r = await this.#redis.eval(CAS_SCRIPT, [key], [String(expected), next, String(Math.max(1, Math.floor(ttlMs)))]);
    if (r === 1 || r === '1') return { ok: true };
    return { ok: false, current: parseVersioned(r) };
  }
}

/** The node `redis` client (v4, v5): `client.eval(script, { keys, arguments })`. */
export function fromNodeRedis(client: {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}): RedisEval {
  return { eval: (script, keys, args) => client.eval(script, { keys, arguments: args }) };
}

/** `ioredis`: `redis.eval(script, numkeys, ...keys, ...args)`. */
export function fromIoredis(client: { eval(script: string, numkeys: number, ...rest: string[]): Promise<unknown> }): RedisEval {
  return { eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args) };
}

/** `@upstash/redis` (Vercel KV's REST client): `redis.eval(script, keys, args)`. */
export function fromUpstash(client: { eval(script: string, keys: string[], args: unknown[]): Promise<unknown> }): RedisEval {
  return { eval: (script, keys, args) => client.eval(script, keys, args) };
}

/** A `BreakerStore` in this process's memory: for tests and development (shares nothing). */
export class MemoryStore implements BreakerStore {
  #data = new Map<string, { v: Versioned; expires: number }>();
  constructor(private readonly clock: () => number = Date.now) {}
  async read(key: string): Promise<Versioned | null> {
    const e = this.#data.get(key);
    if (!e || e.expires <= this.clock()) return null;
    return { ...e.v };
  }
  async compareAndSet(key: string, expected: number, value: string, ttlMs: number): Promise<CasResult> {
    const cur = await this.read(key);
    if ((cur?.version ?? 0) !== expected) return { ok: false, current: cur };
    this.#data.set(key, { v: { version: expected + 1, value }, expires: this.clock() + ttlMs });
    return { ok: true };
  }
}

// ----- the record and the engine -----

/** What the store keeps besides the core's snapshot (visible through `inspect()`). */
export interface StoreCounters {
  /** Outcomes applied to the core, by kind (from leases, fallbacks and probes). */
  successes: number;
  failures: number;
  ignored: number;
  /** Outcomes of a generation that had passed: counted here, never moving the state. */
  stale: number;
  probesGranted: number;
  probeOutcomes: number;
  /** Batches applied, and batches sent again after a lost answer (acknowledged, not counted). */
  batches: number;
  duplicateBatches: number;
  /** Successful compare-and-sets (writes of the record). */
  writes: number;
}

interface StoredRecord {
  /** The core's snapshot. */
  s: BreakerSnapshot;
  /** Client id → [highest applied batch number, last seen]. */
  c: Record<string, [number, number]>;
  n: StoreCounters;
}

/** What `inspect()` answers. */
export interface StoreView {
  name: string;
  key: string;
  version: number;
  state: 'CLOSED' | 'OPEN' | 'HALF_OPEN';
  mode: 'automatic' | 'isolated' | 'disabled';
  generation: number;
  openUntil: number | undefined;
  probesInFlight: number;
  counters: StoreCounters;
  /** The core's own statistics (`CircuitBreaker.stats`). */
  stats: CircuitBreaker['stats'];
  clients: number;
  /** Why the stored record was replaced by a fresh CLOSED breaker, if it was. */
  restoreError?: string;
}

const MAX_CLIENTS = 256;
const NAME_RE = /^[A-Za-z0-9\-_.:/]{1,128}$/;
const PREFIX_RE = /^[A-Za-z0-9\-_.:/{}]{0,64}$/;
const zero = (): StoreCounters => ({
  successes: 0,
  failures: 0,
  ignored: 0,
  stale: 0,
  probesGranted: 0,
  probeOutcomes: 0,
  batches: 0,
  duplicateBatches: 0,
  writes: 0,
});

// Positions in the core's numeric snapshot (js/src/breaker.ts `toJSON().data`, src/wasm/mod.rs):
// [version, state, mode, generation, last_now, opened_at, open_until, failed_probe_rounds,
//  half_open_successes, next_probe_id, rng_hi, rng_lo, 8 × stats, probes n, (id, expires_at) × n, …]
const D_STATE = 1;
const D_MODE = 2;
const D_GENERATION = 3;
const D_OPENED_AT = 5;
const D_OPEN_UNTIL = 6;
const D_NEXT_PROBE = 9;
const D_PROBES = 20;

type Op = { t: 'exchange'; acquire: boolean; body: Exchange } | { t: 'isolate' } | { t: 'reset' } | { t: 'view' };

interface Engine {
  name: string;
  key: string;
  store: BreakerStore;
  breaker: CircuitBreakerOptions;
  leaseMs: number;
  ttlMs: number;
  maxAttempts: number;
  timeoutMs: number;
  clock: () => number;
}

/** Runs the protocol's exchanges (and the admin operations) against the store. */
class StoreTransport implements SharedTransport {
  calls = 0;
  conflicts = 0;
  #e: Engine;
  #core: CircuitBreaker;
  #fresh: BreakerSnapshot;
  #moved = false;
  constructor(e: Engine) {
    this.#e = e;
    this.#core = new CircuitBreaker(e.name, { ...e.breaker, clock: e.clock });
    this.#fresh = this.#core.toJSON();
    this.#core.onStateChange(() => {
      this.#moved = true;
    });
  }

  exchange(op: 'acquire' | 'report', body: Exchange): Promise<Reply> {
    return this.run({ t: 'exchange', acquire: op === 'acquire', body }) as Promise<Reply>;
  }

  async #call<T>(p: Promise<T>): Promise<T> {
    this.calls += 1;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`store: no answer within ${this.#e.timeoutMs} ms`)), this.#e.timeoutMs);
    });
    try {
      return await Promise.race([p, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** read → restore → apply → compare-and-set, again on conflict (with what the conflict returned). */
  async run(op: Op): Promise<Reply | StoreView> {
    const { store, key } = this.#e;
    let cur = await this.#call(store.read(key));
    for (let attempt = 1; ; attempt++) {
      const now = this.#e.clock();
      const { rec, changed, answer } = this.#apply(cur, op, now);
      if (!changed) return answer;
      rec.n.writes += 1;
      rec.s = this.#core.toJSON();
      const r = await this.#call(store.compareAndSet(key, cur?.version ?? 0, JSON.stringify(rec), this.#e.ttlMs));
      if (r.ok) return answer;
      this.conflicts += 1;
      if (attempt >= this.#e.maxAttempts) {
        throw new Error(`store: ${attempt} compare-and-set conflicts in a row on ${key}`);
      }
      cur = r.current;
    }
  }

  #load(cur: Versioned | null): { rec: StoredRecord; restoreError?: string } {
    const core = this.#core;
    if (cur) {
      try {
        const rec = JSON.parse(cur.value) as StoredRecord;
        if (!rec || typeof rec !== 'object' || !rec.s || !Array.isArray(rec.s.data)) throw new Error('not a record');
        const d = rec.s.data;
        // An isolated breaker's snapshot may carry open_until < opened_at, which the core's
        // restore check rejects; isolation ignores open_until (as in src/worker/engine.rs).
        if (d[D_MODE] === 1 && d[D_STATE] === 1 && d[D_OPEN_UNTIL]! < d[D_OPENED_AT]!) d[D_OPEN_UNTIL] = d[D_OPENED_AT]!;
        core.restore({ ...rec.s, name: this.#e.name });
        return { rec: { s: rec.s, c: rec.c && typeof rec.c === 'object' ? rec.c : {}, n: { ...zero(), ...rec.n } } };
      } catch (e) {
        core.restore(this.#fresh);
        return { rec: { s: this.#fresh, c: {}, n: zero() }, restoreError: e instanceof Error ? e.message : String(e) };
      }
    }
    core.restore(this.#fresh);
    return { rec: { s: this.#fresh, c: {}, n: zero() } };
  }

  #apply(cur: Versioned | null, op: Op, now: number): { rec: StoredRecord; changed: boolean; answer: Reply | StoreView } {
    const { rec, restoreError } = this.#load(cur);
    const core = this.#core;
    let changed = restoreError !== undefined && op.t !== 'view';
    this.#moved = false;
    if (op.t === 'isolate' || op.t === 'reset') {
      if (op.t === 'isolate') core.isolate();
      else core.reset();
      changed = true;
    }
    if (op.t !== 'exchange') {
      return { rec, changed, answer: this.#view(cur, rec, now, restoreError) };
    }
    const { body } = op;
    const acked: number[] = [];
    for (const batch of body.batches) {
      const last = rec.c[body.client]?.[0] ?? 0;
      if (batch.seq <= last) {
        rec.n.duplicateBatches += 1; // rare (a lost answer): worth recording
        changed = true;
      } else {
        this.#applyBatch(batch, rec.n);
        this.#remember(rec, body.client, batch.seq, now);
        rec.n.batches += 1;
        changed = true;
      }
      acked.push(batch.seq);
    }
    const reply: Reply = { lease: this.#lease(now), acked };
    if (op.acquire) {
      const probesBefore = core.probesInFlight;
      this.#moved = false;
      if (core.isHealthy()) {
        const data = core.toJSON().data;
        const generation = data[D_GENERATION]!;
        if (core.probesInFlight > probesBefore) {
          rec.n.probesGranted += 1;
          changed = true;
          reply.permit = { generation, probe: data[D_NEXT_PROBE]! - 1, issued_at: now };
        } else {
          reply.permit = { generation, probe: null, issued_at: now };
        }
      } else {
        const lease = this.#lease(now);
        reply.rejected =
          lease.mode === 'isolated'
            ? { reason: 'isolated', retry_after_ms: lease.retry_after_ms }
            : lease.state === 'OPEN'
              ? { reason: 'open', retry_after_ms: lease.retry_after_ms }
              : { reason: 'half_open_full', retry_after_ms: 1 };
      }
      // A rejection only bumps the core's `rejected` count: not worth a write.
      if (this.#moved) changed = true;
      reply.lease = this.#lease(now);
    }
    return { rec, changed, answer: reply };
  }

  /** Applies one batch as the Durable Object's engine does: counts of the current CLOSED
   * generation in order (successes, ignored, failures; what follows a transition is stale), other
   * generations stale; probe outcomes to the probe they belong to. */
  #applyBatch(batch: Batch, n: StoreCounters): void {
    const core = this.#core;
    for (const c of batch.counts) {
      const total = c.successes + c.ignored + c.failures;
      const data = core.toJSON().data;
      const current =
        c.generation !== null && c.generation === data[D_GENERATION] && (data[D_STATE] === 0 || data[D_MODE] === 2);
      if (!current) {
        n.stale += total;
        continue;
      }
      this.#moved = false;
      let left = total;
      for (const [count, kind] of [
        [c.successes, 'success'],
        [c.ignored, 'ignored'],
        [c.failures, 'failure'],
      ] as const) {
        for (let i = 0; i < count; i++) {
          if (this.#moved) {
            n.stale += left;
            left = 0;
            break;
          }
          if (kind === 'success') core.recordSuccess();
          else if (kind === 'failure') core.recordFailure();
          n[kind === 'success' ? 'successes' : kind === 'failure' ? 'failures' : 'ignored'] += 1;
          left -= 1;
        }
      }
    }
    for (const p of batch.probes) {
      n.probeOutcomes += 1;
      const data = core.toJSON().data;
      const probes: number[] = [];
      for (let i = 0; i < data[D_PROBES]!; i++) probes.push(data[D_PROBES + 1 + 2 * i]!);
      if (p.generation !== data[D_GENERATION] || data[D_STATE] !== 2 || !probes.includes(p.id)) {
        n.stale += 1;
        continue;
      }
      this.#probeOutcome(p.id, p.outcome, data);
      n[p.outcome === 'success' ? 'successes' : p.outcome === 'failure' ? 'failures' : 'ignored'] += 1;
    }
  }

  #probeOutcome(id: number, outcome: Outcome, data: number[]): void {
    const core = this.#core;
    if (outcome === 'success') core.recordSuccess();
    else if (outcome === 'failure') core.recordFailure();
    else {
      // An ignored probe (a 400, a cancelled call) frees its slot and proves nothing: drop it
      // from the snapshot's probe list.
      const count = data[D_PROBES]!;
      const i = Array.from({ length: count }, (_, k) => data[D_PROBES + 1 + 2 * k]).indexOf(id);
      data.splice(D_PROBES + 1 + 2 * i, 2);
      data[D_PROBES] = count - 1;
      core.restore({ breakwater: 1, name: this.#e.name, state: 'HALF_OPEN', data });
    }
  }

  #remember(rec: StoredRecord, client: string, seq: number, now: number): void {
    const ids = Object.keys(rec.c);
    if (!(client in rec.c) && ids.length >= MAX_CLIENTS) {
      let oldest = ids[0]!;
      for (const id of ids) if (rec.c[id]![1] < rec.c[oldest]![1]) oldest = id;
      delete rec.c[oldest];
    }
    rec.c[client] = [seq, now];
  }

  #lease(now: number): Reply['lease'] {
    const core = this.#core;
    const state = core.state;
    const mode = core.mode;
    const until = core.openUntil;
    return {
      state,
      mode,
      generation: core.toJSON().data[D_GENERATION]!,
      lease_ms: this.#e.leaseMs,
      retry_after_ms:
        state !== 'OPEN' ? 0 : mode === 'isolated' ? this.#e.leaseMs : Math.max(1, (until ?? now + 1) - now),
      now,
    };
  }

  #view(cur: Versioned | null, rec: StoredRecord, now: number, restoreError?: string): StoreView {
    const core = this.#core;
    const lease = this.#lease(now);
    const view: StoreView = {
      name: this.#e.name,
      key: this.#e.key,
      version: cur?.version ?? 0,
      state: lease.state,
      mode: lease.mode,
      generation: lease.generation,
      openUntil: core.openUntil,
      probesInFlight: core.probesInFlight,
      counters: { ...rec.n },
      stats: core.stats,
      clients: Object.keys(rec.c).length,
    };
    if (restoreError !== undefined) view.restoreError = restoreError;
    return view;
  }
}

// ----- the breaker -----

export interface StoreBreakerOptions extends Omit<SharedBreakerOptions, 'shared' | 'transport'> {
  /** Where the state lives: `new RedisStore(fromNodeRedis(client))`, or your own `BreakerStore`. */
  store: BreakerStore;
  /** The core's options (`CircuitBreaker` options, without `clock`): the same in every instance. */
  breaker?: Omit<CircuitBreakerOptions, 'clock'>;
  /** Key prefix. Default `'breakwater:'` (the key is `breakwater:<name>`). */
  prefix?: string;
  /** How long a CLOSED lease lets an instance admit calls without asking the store, ms. Default 1000. */
  leaseMs?: number;
  /** The record expires after this long without a write, ms. Default 7 days. */
  keyTtlMs?: number;
  /** Compare-and-set attempts per change before giving up (then the local breaker decides). Default 32. */
  maxCasAttempts?: number;
  /** Bound of each store call, ms. Default 1000. (`requestTimeoutMs` bounds a whole exchange.) */
  storeTimeoutMs?: number;
}

/**
 * A circuit breaker whose state lives in a shared store (Redis): every instance of the app sees
 * the same breaker. Keep one per name per process (module scope).
 */
export class StoreCircuitBreaker extends SharedCircuitBreaker {
  readonly key: string;
  #t: StoreTransport;

  constructor(name: string, options: StoreBreakerOptions) {
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      throw new TypeError(
        `breakwater: invalid breaker name ${JSON.stringify(name)}: 1 to 128 of ASCII letters, digits and - _ . : /`,
      );
    }
    const o = options ?? ({} as StoreBreakerOptions);
    const store = o.store;
    if (typeof store?.read !== 'function' || typeof store?.compareAndSet !== 'function') {
      throw new TypeError('breakwater: `store` must be a BreakerStore (e.g. new RedisStore(fromNodeRedis(client)))');
    }
    const prefix = o.prefix ?? 'breakwater:';
    if (typeof prefix !== 'string' || !PREFIX_RE.test(prefix)) {
      throw new TypeError('breakwater: `prefix` must be 0 to 64 of ASCII letters, digits and - _ . : / { }');
    }
    const int = (v: unknown, field: string, dflt: number, min: number): number => {
      if (v === undefined) return dflt;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
        throw new RangeError(`breakwater: \`${field}\` must be an integer >= ${min}, got ${String(v)}`);
      }
      return v;
    };
    const clock = o.clock ?? Date.now;
    const breaker = { ...(o.breaker ?? {}) };
    const t = new StoreTransport({
      name,
      key: prefix + name,
      store,
      breaker,
      leaseMs: int(o.leaseMs, 'leaseMs', 1000, 1),
      ttlMs: int(o.keyTtlMs, 'keyTtlMs', 7 * 24 * 3600 * 1000, 1000),
      maxAttempts: int(o.maxCasAttempts, 'maxCasAttempts', 32, 1),
      timeoutMs: int(o.storeTimeoutMs, 'storeTimeoutMs', 1000, 1),
      clock,
    });
    const { store: _s, breaker: _b, prefix: _p, leaseMs: _l, keyTtlMs: _k, maxCasAttempts: _m, storeTimeoutMs: _st, ...rest } = o;
    super(name, {
      ...rest,
      transport: t,
      fallback: o.fallback ?? new CircuitBreaker(name, { ...breaker, clock }),
      classify: o.classify ?? classifyOutcome,
    });
    this.key = prefix + name;
    this.#t = t;
  }

  /** Store round trips so far (reads and compare-and-sets). */
  get storeCalls(): number {
    return this.#t.calls;
  }
  /** Compare-and-sets that found the version moved (and were retried). */
  get casConflicts(): number {
    return this.#t.conflicts;
  }
  /** Forces the shared breaker OPEN until `reset()`, for every instance (at their next lease). */
  async isolate(): Promise<StoreView> {
    return (await this.#t.run({ t: 'isolate' })) as StoreView;
  }
  /** Back to CLOSED with empty counters, for every instance. */
  async reset(): Promise<StoreView> {
    return (await this.#t.run({ t: 'reset' })) as StoreView;
  }
  /** The shared state as stored (one read). */
  async inspect(): Promise<StoreView> {
    return (await this.#t.run({ t: 'view' })) as StoreView;
  }
}

/** The package's rules (a 400 or an abort is ignored; 429, 5xx, timeouts, network errors fail). */
function classifyOutcome(r: { ok: true; value: unknown } | { ok: false; error: unknown }): Outcome {
  const x = r.ok ? r.value : r.error;
  if (r.ok) {
    const v = x as { status?: unknown; ok?: unknown; headers?: unknown } | null;
    const response = typeof v === 'object' && v !== null && typeof v.status === 'number' && typeof v.ok === 'boolean';
    if (!response || (v.status as number) < 400) return 'success';
  }
  const verdict = classifyError(x);
  return verdict.failure ? 'failure' : verdict.ignored ? 'ignored' : 'success';
}
