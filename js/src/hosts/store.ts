/**
 * `breakwater/store`: one circuit breaker shared by every instance of an app (several Node
 * servers, serverless instances, edge isolates) through a store such as Redis.
 *
 * The store holds the core coordinator's record (the breaker, the settings it runs under, the
 * client sessions' batch numbers, the probes granted) under one key per breaker
 * (`breakwater:<name>`). Every change is read → one step of the core's coordinator (in wasm, the
 * same one the Durable Object runs) at the store's own time → write back if the version has not
 * moved (an atomic compare-and-set: a small Lua script), again on conflict, a bounded number of
 * times. The client is `breakwater/shared`'s `SharedCircuitBreaker` with this store as transport,
 * so the lease works the same: CLOSED → admit locally and batch the outcomes; OPEN → reject
 * locally until the retry-after; HALF_OPEN → ask the store for every admission, so exactly the
 * configured number of probes run across all instances, and a probe that never reports (a
 * function killed at its time-out) frees its slot after `probeTimeoutMs`.
 *
 * Time is the store's: `TIME` inside the Redis script, so an instance whose clock is off moves
 * nothing. Instances configured differently (a rolling deploy) never wipe the shared state: the
 * breaker keeps the settings it was stored with, `inspect()` says so, and `reset()` from an
 * instance installs its own. An OPEN or isolated breaker never expires.
 *
 * ```ts
 * import { createClient } from 'redis';
 * import { StoreCircuitBreaker, RedisStore, fromNodeRedis } from 'breakwater/store';
 * const redis = await createClient({ url: process.env.REDIS_URL!, disableOfflineQueue: true }).connect();
 * export const breaker = new StoreCircuitBreaker('anthropic', {
 *   store: new RedisStore(fromNodeRedis(redis)),
 *   breaker: { failureThreshold: 5, resetTimeout: 30_000 },
 * });
 * const reply = await breaker.execute(() => callTheModel());
 * ```
 * @packageDocumentation
 */
// The entries (`breakwater`, `breakwater/coordinator`) load the core's wasm modules for the
// runtime: the main one, and the coordinator's, which runs the store's steps and, a superset of
// breakwater/shared's, the lease client too. So `SharedCircuitBreaker` comes from the code-only
// `breakwater/shared/internal` (the same class breakwater/shared exports: its entries re-export
// that code), and the lease client's own module is never loaded; `breakwater/internal` is the
// main entry's code without the loader.
import 'breakwater';
import type { CircuitBreaker } from 'breakwater';
import type { BreakerSettings, ConsecutiveTrip, FailureRateTrip } from 'breakwater/internal';
import { answerOf, coordinatorGlue, refusal, statusResponse, verbOf, type WasmCoordinator } from 'breakwater/coordinator';
import {
  SharedCircuitBreaker,
  checkBreakerName,
  localConfig,
  settingsJson,
  SHARED_KEYS,
  ownSettings,
  RAW_TRANSPORT,
  type Answer,
  type RawTransport,
  type SharedBreakerInternalOptions,
  type SharedBreakerOptions,
} from 'breakwater/shared/internal';
import { checkKeys, num, withTimeout } from 'breakwater/internal';
import { Http, Limit, Plan } from '../codes/layout.js';


// ----- the store -----

/**
 * A stored value and its version.
 * @inline
 */
interface Versioned {
  /** The record's version (see `BreakerStore`), 0 when there is no record. */
  version: number;
  /** The stored record (empty when there is none). */
  value: string;
  /** The store's clock when it was read (ms since the epoch), if the store has one. */
  now?: number | undefined;
}

/**
 * Where the records live: a read, and an atomic compare-and-set on the version. `RedisStore`
 * implements it over any Redis client; `MemoryStore` in one process (tests, development).
 *
 * A version is not a count: each write brings a new one, drawn at random by the shared breaker
 * (an integer from 1 to 2^53 - 2), so a record deleted and written again (evicted, lost in a
 * failover, deleted by hand) never has the version a step read before it went. A store compares
 * versions for equality and keeps the one it is given.
 */
export interface BreakerStore {
  /**
   * The current record, or null when there is none. A store with a clock of its own also
   * answers `{ version: 0, value: '', now }` when there is none, and sets `now`: the shared
   * breaker then runs on that clock rather than on each instance's.
   */
  read(key: string): Promise<Versioned | null>;
  /**
   * Writes `value` as version `version` if the record's version is still `expected` (0: no
   * record), expiring after `ttlMs` (0: never). Answers `{ ok: true }`, or
   * `{ ok: false, current }` with what is there now.
   */
  compareAndSet(key: string, expected: number, version: number, value: string, ttlMs: number): Promise<CasResult>;
}

/**
 * What `compareAndSet` answers: `ok: true` when it wrote, or `ok: false` with the record there now.
 * @inline
 */
type CasResult =
  | {
      /** Written. */
      ok: true;
    }
  | {
      /** Not written: the version had moved. */
      ok: false;
      /** The record there now, or null when there is none. */
      current: Versioned | null;
    };

/** The one command the Redis store needs: `EVAL script numkeys key... arg...`. */
export interface RedisEval {
  /** Runs `script` with `keys` as `KEYS` and `args` as `ARGV`, and answers what Redis returned. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

/**
 * The stored value is `<version>|<record JSON>`, so the script can check the version cheaply. The
 * versions are compared as the decimal strings they are (all digits, no leading zero), as both
 * sides of an exact comparison: a record of an earlier release (its versions counted from 1) reads
 * the same, and is replaced at the next write.
 */
const READ_SCRIPT = "local t = redis.call('TIME') return {t[1], t[2], redis.call('GET', KEYS[1]) or ''}";
const CAS_SCRIPT = [
  "local cur = redis.call('GET', KEYS[1])",
  "local v = '0'",
  "if cur then local m = string.match(cur, '^([1-9]%d*)|') if m and #m <= 16 and tonumber(m) <= 9007199254740991 then v = m end end",
  "if v ~= ARGV[1] then local t = redis.call('TIME') return {t[1], t[2], cur or ''} end",
  "if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end",
  'return 1',
].join('\n');

function parseVersioned(raw: unknown, now?: number): Versioned | null {
  if (raw === null || raw === undefined || raw === '') return now === undefined ? null : { version: 0, value: '', now };
  const text = typeof raw === 'string' ? raw : String(raw);
  const bar = text.indexOf('|');
  const version = Number(text.slice(0, bar));
  const v: Versioned =
    // Not ours (or damaged): version 0, so that the next write replaces it (as the script agrees).
    bar < 1 || bar > 16 || !/^[1-9]\d*$/.test(text.slice(0, bar)) || !Number.isSafeInteger(version)
      ? { version: 0, value: text }
      : { version, value: text.slice(bar + 1) };
  if (now !== undefined) v.now = now;
  return v;
}

/** `[seconds, microseconds, value]` from the scripts: the value and Redis's clock in ms. */
function timed(raw: unknown): Versioned | null {
  if (!Array.isArray(raw) || raw.length < 2) throw new Error('store: unexpected answer to the read script');
  const now = Number(raw[0]) * 1000 + Math.floor(Number(raw[1]) / 1000);
  if (!Number.isFinite(now)) throw new Error('store: unreadable TIME from Redis');
  return parseVersioned(raw[2], now);
}

/** The largest version: one more is still a safe integer (a release that counts adds one). */
const MAX_VERSION = 2 ** 53 - 2;

/** A version, or a clear error: `what` (naming the field) and the value (`zero`: 0, no record, allowed). */
function checkVersion(v: unknown, what: string, zero: boolean): void {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= (zero ? 0 : 1) && v <= MAX_VERSION) return;
  const shown = typeof v === 'string' ? JSON.stringify(v) : String(v);
  throw new RangeError(`breakwater: ${what} ${shown} (expected an integer in [${+!zero}, ${MAX_VERSION}])`);
}

/**
 * A new version for the record that has `previous`: drawn at random, so that no other record of
 * the key, before or after, has it (a collision needs the same one of 2^52 draws; not a secret).
 */
function nextVersion(previous: number): number {
  const v = Math.floor(Math.random() * MAX_VERSION) + 1;
  return v === previous ? (v % MAX_VERSION) + 1 : v;
}

/**
 * Redis's `maxmemory-policy`, read from `INFO` by a script (`CONFIG` may not run in one, and the
 * adapters run nothing but `EVAL`): on the node that holds the key.
 */
const POLICY_SCRIPT = "return string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:(%S+)') or ''";

/**
 * A `BreakerStore` on Redis: one string key per breaker, read and changed by Lua scripts.
 *
 * Redis must not evict the records: `maxmemory-policy` `noeviction` or a `volatile-*` one. The
 * record of an OPEN or isolated breaker has no TTL, so only an `allkeys-*` policy can evict it,
 * and then the breaker is CLOSED again for every instance while the upstream is still down. At its
 * first read the store looks at the policy and warns once (`console.warn`) if it is `allkeys-*`;
 * a Redis that does not answer (a managed one may refuse `INFO`) is taken as it is, silently.
 */
export class RedisStore implements BreakerStore {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'RedisStore';
  #redis: RedisEval;
  #policyChecked = false;
  constructor(redis: RedisEval) {
    if (typeof redis?.eval !== 'function') {
      throw new TypeError('breakwater: RedisStore needs an adapter: fromNodeRedis(client), fromIoredis(client) or fromUpstash(client)');
    }
    this.#redis = redis;
  }
  async read(key: string): Promise<Versioned | null> {
    const read = this.#redis.eval(READ_SCRIPT, [key], []);
    if (this.#policyChecked) return timed(await read);
    this.#policyChecked = true;
    const [raw] = await Promise.all([read, this.#checkPolicy(key)]);
    return timed(raw);
  }
  /** Warns if Redis may evict the records (see the class); never fails. */
  async #checkPolicy(key: string): Promise<void> {
    let policy: unknown;
    try {
      policy = await this.#redis.eval(POLICY_SCRIPT, [key], []);
    } catch {
      return;
    }
    if (typeof policy === 'string' && policy.startsWith('allkeys-')) {
      console.warn(`breakwater: Redis maxmemory-policy ${policy} may evict an OPEN breaker (no TTL): use noeviction or volatile-*`);
    }
  }
  async compareAndSet(key: string, expected: number, version: number, value: string, ttlMs: number): Promise<CasResult> {
    checkVersion(expected, 'invalid `expected` version', true);
    checkVersion(version, 'invalid `version`', false);
    const next = `${version}|${value}`;
    const ttl = String(Math.max(0, Math.floor(ttlMs)));
    const r = await this.#redis.eval(CAS_SCRIPT, [key], [String(expected), next, ttl]);
    if (r === 1 || r === '1') return { ok: true };
    return { ok: false, current: timed(r) };
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

/** A `BreakerStore` in this process's memory, on `clock` (the store's clock): tests and development. */
export class MemoryStore implements BreakerStore {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'MemoryStore';
  #data = new Map<string, { v: Versioned; expires: number }>();
  constructor(private readonly clock: () => number = Date.now) {}
  #get(key: string): Versioned {
    const now = this.clock();
    const e = this.#data.get(key);
    if (!e || e.expires <= now) return { version: 0, value: '', now };
    return { ...e.v, now };
  }
  async read(key: string): Promise<Versioned | null> {
    return this.#get(key);
  }
  async compareAndSet(key: string, expected: number, version: number, value: string, ttlMs: number): Promise<CasResult> {
    checkVersion(expected, 'invalid `expected` version', true);
    checkVersion(version, 'invalid `version`', false);
    // Checked and written in one synchronous step: nothing can slip in between.
    const cur = this.#get(key);
    if (cur.version !== expected) return { ok: false, current: cur };
    const expires = ttlMs > 0 ? this.clock() + ttlMs : Infinity;
    this.#data.set(key, { v: { version, value }, expires });
    return { ok: true };
  }
}

// ----- the view -----

/**
 * What the store keeps besides the core's snapshot (visible through `inspect()`).
 * @inline
 */
interface StoreCounters {
  /** Successes applied (from leases, local decisions and probes), stale ones included. */
  successes: number;
  /** Failures applied (from leases, local decisions and probes), stale ones included. */
  failures: number;
  /** Outcomes applied that say nothing about the upstream, stale ones included. */
  ignored: number;
  /** Outcomes of a generation that had passed: counted, never moving the state. */
  stale: number;
  /** Half-open probes granted. */
  probesGranted: number;
  /** Probe outcomes applied. */
  probeOutcomes: number;
  /** Batches applied. */
  batches: number;
  /** Batches sent again after a lost answer: acknowledged, not counted. */
  duplicateBatches: number;
  /** Batches refused (over a limit, or numbered too far ahead). */
  refusedBatches: number;
  /** Probe reports that matched no probe granted to that client. */
  unmatchedProbeReports: number;
  /** Compare-and-sets this process made that succeeded (writes of the record). */
  writes: number;
}

/** What `inspect()` answers. */
export interface StoreView {
  /** The breaker's name. */
  name: string;
  /** The store key of its record (`prefix` + name). */
  key: string;
  /** The record's version after this operation (0: none stored): drawn at random at each write, see `BreakerStore`. */
  version: number;
  /** The shared breaker's state: `'CLOSED'`, `'OPEN'` or `'HALF_OPEN'`. */
  state: 'CLOSED' | 'OPEN' | 'HALF_OPEN';
  /** Its mode: `'automatic'`, `'isolated'` (after `isolate()`) or `'disabled'`. */
  mode: 'automatic' | 'isolated' | 'disabled';
  /** The generation outcomes are reported under (a new one with each state change). */
  generation: number;
  /** When the open period ends (ms since the epoch, the store's clock); undefined when not OPEN, or when isolated. */
  openUntil: number | undefined;
  /** Half-open probes granted and not yet reported. */
  probesInFlight: number;
  /** What the store counts besides the core's statistics. */
  counters: StoreCounters;
  /** The core's own statistics (`CircuitBreaker.stats`). */
  stats: Omit<CircuitBreaker['stats'], 'fallbacks'>;
  /** Client sessions the record remembers. */
  clients: number;
  /** The fingerprint of the settings the shared breaker runs under. */
  options: number;
  /** Those settings in words (the trip rule, the open period, the probes, the lease, the throttle). */
  settings: string;
  /** When this instance's settings differ from the stored ones: `adopted` (the stored ones run; `reset()` installs this instance's). */
  optionsMismatch?:
    | {
        /** The fingerprint of the settings in the record. */
        stored: number;
        /** The fingerprint of this instance's settings. */
        configured: number;
        /**
         * `'adopted'`: the stored settings keep running (`reset()` installs this instance's);
         * `'installed'`: this instance's replaced them (the stored ones were not valid), the state carried over.
         */
        resolution: string;
      }
    | undefined;
  /** Why the stored record was replaced by a fresh CLOSED breaker, if it was. */
  restoreError?: string | undefined;
}

interface CoreView {
  lease: { state: StoreView['state']; mode: StoreView['mode']; generation: number };
  open_until: number | null;
  probes_in_flight: number;
  stats: StoreView['stats'];
  counters: {
    counted_outcomes: number;
    probes_granted: number;
    probe_outcomes: number;
    batches: number;
    duplicate_batches: number;
    refused_batches: number;
    unmatched_probe_reports: number;
  };
  restore_error: string | null;
  options: number;
  options_mismatch: { stored: number; configured: number; resolution: string } | null;
  sessions: number;
  settings: string;
}

// ----- the transport -----

const PREFIX_RE = /^[A-Za-z0-9\-_.:/{}]{0,64}$/;

interface Setup {
  name: string;
  key: string;
  store: BreakerStore;
  spec: string;
  ttlMs: number;
  maxAttempts: number;
  timeoutMs: number;
  clock: () => number;
}

type Step = (co: WasmCoordinator, now: number) => string;

/** A store's answer as `BreakerStore` says, or a clear error naming the field and the value. */
function checkRead(v: Versioned | null | undefined): Versioned | null {
  if (v === null || v === undefined) return null;
  checkVersion(v.version, "the store's read answered `version`", true);
  if (typeof v.value !== 'string') throw new TypeError(`breakwater: the store's read answered \`value\` ${String(v.value)} (expected a string)`);
  return v;
}

/** Runs the coordinator's steps against the store: read → one step → compare-and-set. */
class StoreTransport {
  calls = 0;
  conflicts = 0;
  writes = 0;
  #s: Setup;
  constructor(s: Setup) {
    this.#s = s;
  }

  raw: RawTransport = async (op, body) => {
    // The core says how it answered: 200, 400 (a bad request), or 503 (a record written by a
    // newer version, during a rollback, which is left alone: answered as unreachable).
    let status = 200;
    const { text } = await this.run(false, (co, now) => {
      const answer = co.exchange(now, body, op === 'acquire');
      status = co.status();
      return answer;
    });
    if (status === 200) return { kind: 'ok', text } satisfies Answer;
    return status === 503 ? { kind: 'unreachable', reason: text } : { kind: 'refused', status, reason: text };
  };

  /** One store call, bounded by `storeTimeoutMs`. */
  #call<T>(call: () => Promise<T>): Promise<T> {
    this.calls += 1;
    return withTimeout(this.#s.timeoutMs, call, 'store: ');
  }

  /**
   * read → step → compare-and-set, again on conflict (with what the conflict returned). Answers
   * the step's answer and the record's version after it.
   */
  async run(readOnly: boolean, step: Step): Promise<{ text: string; version: number }> {
    const { store, key, name, spec } = this.#s;
    let cur = checkRead(await this.#call(() => store.read(key)));
    for (let attempt = 1; ; attempt++) {
      const now = cur?.now ?? this.#s.clock();
      const co = coordinatorGlue().WasmCoordinator.create(name, spec, cur?.value || undefined, true);
      if (co === undefined) throw new Error('store: the settings were refused by the core');
      let answer: string;
      let record: string | undefined;
      let ttl = 0;
      try {
        answer = step(co, now);
        if (!readOnly && co.changed()) {
          record = co.record();
          ttl = co.may_expire() ? this.#s.ttlMs : 0;
        }
      } finally {
        co.free();
      }
      const version = cur?.version ?? 0;
      if (record === undefined) return { text: answer, version };
      const next = nextVersion(version);
      const r = await this.#call(() => store.compareAndSet(key, version, next, record, ttl));
      if (r.ok) {
        this.writes += 1;
        return { text: answer, version: next };
      }
      this.conflicts += 1;
      if (attempt >= this.#s.maxAttempts) {
        throw new Error(`store: ${attempt} compare-and-set conflicts in a row on ${key}`);
      }
      cur = checkRead(r.current);
    }
  }

  /** The core's `/state` view, as JSON, and the time it was taken at (the store's clock if it has one). */
  async state(): Promise<{ text: string; now: number }> {
    let at = 0;
    const { text } = await this.run(true, (co, now) => {
      at = now;
      return co.view(now);
    });
    return { text, now: at };
  }

  async view(op: 'view' | 'isolate' | 'reset'): Promise<StoreView> {
    const { text, version } = await this.run(op === 'view', (co, now) => {
      if (op === 'isolate') co.isolate(now);
      if (op === 'reset') co.reset(now);
      return co.view(now);
    });
    const v = JSON.parse(text) as CoreView;
    const view: StoreView = {
      name: this.#s.name,
      key: this.#s.key,
      version,
      state: v.lease.state,
      mode: v.lease.mode,
      generation: v.lease.generation,
      openUntil: v.open_until ?? undefined,
      probesInFlight: v.probes_in_flight,
      counters: {
        successes: v.stats.successes,
        failures: v.stats.failures,
        ignored: v.stats.ignored,
        stale: v.stats.stale,
        probesGranted: v.counters.probes_granted,
        probeOutcomes: v.counters.probe_outcomes,
        batches: v.counters.batches,
        duplicateBatches: v.counters.duplicate_batches,
        refusedBatches: v.counters.refused_batches,
        unmatchedProbeReports: v.counters.unmatched_probe_reports,
        writes: this.writes,
      },
      stats: v.stats,
      clients: v.sessions,
      options: v.options,
      settings: v.settings,
    };
    if (v.options_mismatch) view.optionsMismatch = v.options_mismatch;
    if (v.restore_error) view.restoreError = v.restore_error;
    return view;
  }
}

// ----- the breaker -----

/**
 * The shared breaker's options: `CircuitBreaker` options without `clock` (the store's clock
 * rules) and without `slowCallRate` (outcomes reach the store as counts, without durations).
 * @inline
 */
type StoreBreakerRule = Omit<BreakerSettings, 'clock'> & (ConsecutiveTrip | FailureRateTrip);

/** `StoreCircuitBreaker`'s options: the store, and `SharedCircuitBreaker`'s options but `shared`, `service` and `transport`. */
export interface StoreBreakerOptions extends Omit<SharedBreakerOptions, 'shared' | 'transport' | 'service'> {
  /** Where the state lives: `new RedisStore(fromNodeRedis(client))`, or your own `BreakerStore`. */
  store: BreakerStore;
  /** The shared breaker's options (`CircuitBreaker` options, without `clock`; no `slowCallRate`): the same in every instance. */
  breaker?: StoreBreakerRule | undefined;
  /** Key prefix. Default `'breakwater:'` (the key is `breakwater:<name>`). */
  prefix?: string | undefined;
  /** How long a CLOSED lease lets an instance admit calls without asking the store, ms. Default 1000. */
  leaseMs?: number | undefined;
  /** A CLOSED record expires after this long without a write, ms (an OPEN or isolated one never does). Default 7 days; at least 900 000 (15 min, while a client may still resend a batch). */
  keyTtlMs?: number | undefined;
  /** Compare-and-set attempts per change before giving up (then the local breaker decides). Default 32. */
  maxCasAttempts?: number | undefined;
  /** Bound of each store call, ms. Default 1000. (`requestTimeoutMs` bounds a whole exchange.) */
  storeTimeoutMs?: number | undefined;
}


/** `StoreCircuitBreaker`'s hidden method for `statusPage`: the core's view as JSON. */
const STATE = Symbol('breakwater.state');

/**
 * A circuit breaker whose state lives in a shared store (Redis): every instance of the app sees
 * the same breaker. Keep one per name per process (module scope).
 */
export class StoreCircuitBreaker extends SharedCircuitBreaker {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'StoreCircuitBreaker';
  /** The store key of the breaker's record: `prefix` + name. */
  readonly key: string;
  #t: StoreTransport;

  constructor(name: string, options: StoreBreakerOptions) {
    checkBreakerName(name);
    const o = options ?? ({} as StoreBreakerOptions);
    checkKeys('StoreCircuitBreaker options', o, [
      ...SHARED_KEYS.filter((k) => k !== 'shared' && k !== 'service' && k !== 'transport'),
      'store',
      'prefix',
      'keyTtlMs',
      'maxCasAttempts',
      'storeTimeoutMs',
    ]);
    const store = o.store;
    if (typeof store?.read !== 'function' || typeof store?.compareAndSet !== 'function') {
      throw new TypeError('breakwater: `store` must be a BreakerStore (e.g. new RedisStore(fromNodeRedis(client)))');
    }
    const prefix = o.prefix ?? 'breakwater:';
    if (typeof prefix !== 'string' || !PREFIX_RE.test(prefix)) {
      throw new TypeError('breakwater: `prefix` must be 0 to 64 of ASCII letters, digits and - _ . : / { }');
    }
    const clock = o.clock ?? Date.now;
    const breaker = { ...(o.breaker ?? {}) };
    const specJson = settingsJson(breaker, o.leaseMs, 'StoreCircuitBreaker options');
    // The local breaker's options, named as this constructor's (the shared one checks them again).
    if (o.local !== undefined) localConfig(o.local, clock, 'StoreCircuitBreaker options');
    const t = new StoreTransport({
      name,
      key: prefix + name,
      store,
      spec: specJson,
      // A record forgets its clients' sessions when it expires: no sooner than a session may
      // still send a batch again (the coordinator's dedup window), or resends would count twice.
      ttlMs: num('keyTtlMs', o.keyTtlMs, 7 * 24 * 3600 * 1000, Limit.DedupWindowMs),
      maxAttempts: num('maxCasAttempts', o.maxCasAttempts, 32, 1),
      timeoutMs: num('storeTimeoutMs', o.storeTimeoutMs, 1000, 1),
      clock,
    });
    const { store: _s, prefix: _p, leaseMs: _l, keyTtlMs: _k, maxCasAttempts: _m, storeTimeoutMs: _st, ...rest } = o;
    // `breaker` goes along for what the client itself applies (`isFailure`); the settings travel
    // in the store's record.
    const shared: SharedBreakerInternalOptions = { ...rest, local: o.local ?? ownSettings(breaker), [RAW_TRANSPORT]: t.raw };
    super(name, shared);
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
  /** Forces the shared breaker OPEN until `reset()`, for every instance (at their next lease). Never expires. */
  isolate(): Promise<StoreView> {
    return this.#t.view('isolate');
  }
  /** Back to CLOSED with empty counters, for every instance; installs this instance's settings. */
  reset(): Promise<StoreView> {
    return this.#t.view('reset');
  }
  /** The shared state as stored (reads only). */
  inspect(): Promise<StoreView> {
    return this.#t.view('view');
  }

  /** @internal The core's view as JSON, for `statusPage`. */
  [STATE](): Promise<{ text: string; now: number }> {
    return this.#t.state();
  }
}

/**
 * The status page of these breakers, for an app's own route (a Next.js route handler, say):
 * one HTML document with every breaker's state and since when, when it probes next, its settings
 * in words beside their fingerprint, its last state changes and what it counted minute by minute,
 * served with a strict Content-Security-Policy (no script, no external asset). The same page the
 * Worker's `GET /admin/status` answers.
 *
 * Behind a bearer token, checked by the core as the Worker's routes check theirs: the request
 * must carry `Authorization: Bearer <adminToken>` (else 401); with no `adminToken` (undefined or
 * empty) the page is off and the answer is 404. Only `GET` is served (else 405). It reads the
 * store and writes nothing.
 *
 * ```ts
 * // app/admin/breakers/route.ts
 * import { statusPage } from 'breakwater/store';
 * import { anthropicBreaker } from '@/lib/llm-shared';
 *
 * export const dynamic = 'force-dynamic';
 * export function GET(request: Request): Promise<Response> {
 *   return statusPage(request, [anthropicBreaker], { adminToken: process.env.ADMIN_TOKEN });
 * }
 * ```
 * (js/README's block, type-checked there; the Next.js example serves it under `next start`.)
 */
export async function statusPage(
  request: Request,
  breakers: readonly StoreCircuitBreaker[],
  options: StatusPageOptions,
): Promise<Response> {
  checkKeys('statusPage options', options ?? {}, ['adminToken']);
  const token = options?.adminToken;
  if (token !== undefined && typeof token !== 'string') {
    throw new TypeError(`breakwater: invalid option "adminToken" in statusPage options: ${typeof token} (expected a string)`);
  }
  if (!Array.isArray(breakers) || !breakers.every((b) => b instanceof StoreCircuitBreaker)) {
    throw new TypeError('breakwater: statusPage(request, breakers): `breakers` must be an array of StoreCircuitBreaker');
  }
  const g = coordinatorGlue();
  const plan = g.route(
    verbOf(request.method),
    '/admin/status',
    undefined,
    false,
    request.headers.get('authorization') ?? undefined,
    undefined,
    token,
    undefined,
    breakers.map((b) => b.name).join('\n'),
    undefined,
  );
  // Off (no token): 404, as the Rust Worker answers a route that is off.
  if (plan.kind === Plan.Pass) {
    plan.free();
    return refusal(Http.NoSuchRoute);
  }
  if (plan.kind !== Plan.Status) return answerOf(plan);
  plan.free();
  const states = await Promise.all(breakers.map((b) => b[STATE]()));
  const now = Math.max(0, ...states.map((s) => s.now));
  return statusResponse(`[${states.map((s) => s.text).join(',')}]`, now);
}

/** `statusPage`'s options. */
export interface StatusPageOptions {
  /** The bearer token the request must carry; undefined or empty: the page is off (404). */
  adminToken: string | undefined;
}
