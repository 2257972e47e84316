/**
 * `breakwater/cloudflare`: the shared breaker's Durable Object for your own Worker, the routes
 * that expose it, and its clients.
 *
 * `BreakerObject` holds one breaker per name and answers `SharedCircuitBreaker` clients. It is a
 * shell around the core's coordinator (the one `breakwater/store` and breakwater's Rust Worker
 * run), in the coordinator's WebAssembly module: it loads the record from `ctx.storage` on the
 * first request, takes one coordinator step per request, persists the record when the step
 * changed it, then answers. It decides nothing itself.
 *
 * That module carries the lease client too, so a Worker that hosts the object and its clients
 * imports `SharedCircuitBreaker` from here (the same class as `breakwater/shared`'s) and loads one
 * shared module. Importing it from `breakwater/shared` in such a Worker works as well, but then
 * loads that entry's module too, the lease client's alone (about 27.5 KB gzip more). Workers
 * that only call another Worker's object, and apps outside Cloudflare, import
 * `breakwater/shared`.
 *
 * ```ts
 * // src/index.ts
 * import { env } from 'cloudflare:workers';
 * import { SharedCircuitBreaker } from 'breakwater/cloudflare';
 * export { BreakerObject } from 'breakwater/cloudflare';
 *
 * const breaker = new SharedCircuitBreaker('anthropic', {
 *   shared: env.BREAKER,
 *   breaker: { failureThreshold: 5, resetTimeout: 30_000 },
 * });
 * ```
 * ```
 * # wrangler.toml
 * [[durable_objects.bindings]]
 * name = "BREAKER"
 * class_name = "BreakerObject"
 * [[migrations]]
 * tag = "v1"
 * new_sqlite_classes = ["BreakerObject"]
 * ```
 *
 * Settings come from this Worker's own clients (`breaker`, `leaseMs`), as with
 * `breakwater/store`, never from clients outside Cloudflare: an object keeps the settings it runs
 * under across a rolling deploy, and the admin route's reset installs the ones its clients send
 * now, or those its body names. A `BREAKERS` variable (the Rust Worker's format: name →
 * `lease_ms` and the core's `BreakerConfig`) pins them instead: then only the names it declares
 * exist, and a reset that names other settings is refused (409).
 * @packageDocumentation
 */
import { DurableObject } from 'cloudflare:workers';
// `breakwater/coordinator` loads the coordinator's wasm for the runtime (a static import under
// workerd), and hands it over as the lease client's glue too: the clients re-exported below, from
// the code-only breakwater/shared/internal, run in it, and the lease client's own module
// (breakwater/shared's) is not loaded unless the Worker imports that entry as well.
import { answerOf, coordinatorGlue, json, refusal, statusResponse, verbOf, type WasmCoordinator } from 'breakwater/coordinator';
import { isBreakerName, SETTINGS_HEADER } from 'breakwater/shared/internal';
import { Body, Http, Plan, Step } from '../codes/layout.js';
import { STATES } from 'breakwater/internal';

export { SharedCircuitBreaker } from 'breakwater/shared/internal';

/** What the object reads from its Worker's `env`. */
export interface BreakerObjectEnv {
  /**
   * Optional: the breakers' settings, pinned (a JSON object, or a string holding one: name →
   * `{ lease_ms, breaker }`, as in the Rust Worker's `wrangler.toml`). Without it, the settings
   * come from the clients' `breaker` option and any valid name is served.
   */
  BREAKERS?: unknown;
}

function error(status: number, code: string, message: string): Response {
  return json(status, JSON.stringify({ error: code, message }));
}

type ObjectOp = 'acquire' | 'report' | 'state' | 'isolate' | 'reset';

let key: string | undefined;
/** The record's storage key, the core's (src/shared/coordinator.rs `STORAGE_KEY`), read once. */
const storageKey = (): string => (key ??= coordinatorGlue().storage_key());

/** `BREAKERS` as text, or undefined when the Worker declares none. */
function breakersText(env: BreakerObjectEnv | undefined): string | undefined {
  const v = env?.BREAKERS;
  if (v === undefined || v === null || v === '') return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * The body, read as a stream into the core's bounded buffer (64 KiB, src/shared/routes.rs): the
 * stream is cancelled at the first chunk past the limit, so a chunked body without a length is
 * never held whole; a declared length over it is refused before anything is read.
 */
async function readBody(req: Request): Promise<string | Response> {
  const g = coordinatorGlue();
  const declared = g.check_length(req.headers.get('content-length') ?? undefined);
  if (declared.kind !== Plan.Pass) return answerOf(declared);
  declared.free();
  if (req.body === null) return '';
  const body = new g.WasmBody();
  const reader = req.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return new TextDecoder().decode(body.bytes());
      if (!body.push(value)) {
        reader.cancel().catch(() => {});
        return refusal(Http.TooLarge);
      }
    }
  } catch {
    return refusal(Http.Unreadable);
  } finally {
    body.free();
  }
}

/** Logs each state change of a step (the core's transitions, `Step.Len` numbers each). */
function logTransitions(name: string, t: Float64Array): void {
  for (let i = 0; i + Step.Len <= t.length; i += Step.Len) {
    console.log(`breakwater ${name}: ${STATES[t[i + Step.From]!]} -> ${STATES[t[i + Step.To]!]} at ${t[i + Step.At]}`);
  }
}

/**
 * The Durable Object holding one shared breaker: export it from your Worker
 * (`export { BreakerObject } from 'breakwater/cloudflare'`) and bind it with a
 * `new_sqlite_classes` migration. Its clients are `SharedCircuitBreaker`s with
 * `shared: env.<BINDING>`. It extends the runtime's `DurableObject` (from 'cloudflare:workers').
 */
export class BreakerObject extends DurableObject<BreakerObjectEnv> {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'BreakerObject';
  /** The breaker's name, when the id does not carry it: the first one a request named. */
  #name: string | undefined;
  /** The record as last stored: what the coordinator goes back to when a write fails. */
  #stored: string | undefined;
  #loading: Promise<void> | undefined;
  #co: WasmCoordinator | undefined;
  /** The settings JSON `#co` was made with, and whether they were pinned by `BREAKERS`. */
  #settings = '';
  /** The last `BREAKERS` lookup: the text, the name and what the core found for it. */
  #pinned: { text: string; name: string; found: string } | undefined;

  constructor(ctx: DurableObjectState, env: BreakerObjectEnv) {
    super(ctx, env);
  }

  /** The protocol's operations: `POST /acquire|report|isolate|reset`, `GET /state`, each `?breaker=<name>`. */
  async fetch(request: Request): Promise<Response> {
    try {
      return await this.#handle(request);
    } catch (e) {
      console.error(`breakwater object: ${e instanceof Error ? e.message : String(e)}`);
      return refusal(Http.Internal);
    }
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const g = coordinatorGlue();
    const asked = g.object_op(url.pathname, verbOf(req.method));
    if (asked.kind !== Plan.Object) return answerOf(asked);
    const op = asked.op as ObjectOp;
    asked.free();
    // 1. Everything that is not storage first: the body.
    const body = await readBody(req);
    if (body instanceof Response) return body;
    // 2. Which breaker, under which settings.
    const name = this.#nameOf(url.searchParams.get('breaker'));
    if (name instanceof Response) return name;
    const pinned = breakersText(this.env);
    const found = pinned === undefined ? undefined : this.#pinnedFor(pinned, name);
    if (found instanceof Response) return found;
    let settings = this.#settingsOf(req, op, body, found);
    if (settings instanceof Response) return settings;
    this.#name ??= name;
    // 3. Load lazily (storage only: the input gate keeps other events out meanwhile).
    await (this.#loading ??= this.#load());
    // No client has spoken since the object started (an operator's view or reset first): the
    // settings the record runs under, so that a reset keeps them rather than the defaults.
    settings ??= (this.#stored === undefined ? '' : g.stored_spec(this.#stored)) || '{}';
    const co = this.#coordinator(name, settings, pinned !== undefined);
    if (co === undefined) return error(500, 'misconfigured', 'the settings were refused by the core');
    // 4. One synchronous step.
    const now = Date.now();
    let text: string;
    let status = 200;
    if (op === 'acquire' || op === 'report') {
      text = co.exchange(now, body, op === 'acquire');
      status = co.status();
    } else {
      if (op === 'isolate') co.isolate(now);
      if (op === 'reset') co.reset(now);
      text = co.view(now);
    }
    // 5. Persist, then report. A view takes no step: what the coordinator holds as its last
    // step is the previous request's, already stored and reported.
    const stepped = op !== 'state';
    if (stepped && status === 200 && co.changed()) {
      const refused = await this.#persist(name, co);
      if (refused !== undefined) return refused;
    }
    if (stepped) logTransitions(name, co.transitions());
    return json(status, text);
  }

  /**
   * What `BREAKERS` (the text `pinned`) declares for `name`: its settings, or the answer that
   * refuses the request (an unknown name, or a `BREAKERS` the core cannot read).
   */
  #pinnedFor(pinned: string, name: string): string | Response {
    // `BREAKERS` is the same text on every request of a deploy: read once per name.
    if (this.#pinned?.text !== pinned || this.#pinned.name !== name) {
      this.#pinned = { text: pinned, name, found: coordinatorGlue().breakers(pinned, name) };
    }
    const found = this.#pinned.found;
    if (found.startsWith('!')) {
      console.error(`breakwater: ${found.slice(1)}`);
      return error(500, 'misconfigured', found.slice(1));
    }
    if (found === '') return refusal(Http.UnknownBreaker);
    return found;
  }

  /**
   * The settings `op` runs under: the pinned ones (`found`), else those a reset's body names,
   * those the client sent, or the running coordinator's; undefined before any is known. A reset
   * that names settings it may not, or settings the core refuses, get their answer instead.
   */
  #settingsOf(req: Request, op: ObjectOp, body: string, found: string | undefined): string | undefined | Response {
    const g = coordinatorGlue();
    // A reset may name the settings to install (an operator's, through the admin route).
    let named = '';
    if (op === 'reset') {
      const r = g.reset_settings(body, found);
      if (r.kind !== Plan.Object) return answerOf(r);
      named = r.settings;
      r.free();
    }
    if (found !== undefined) return found;
    const sent = named !== '' ? named : req.headers.get(SETTINGS_HEADER);
    // Settings the running coordinator was made with were accepted then: checked once.
    if (sent !== null && !(this.#co !== undefined && sent === this.#settings)) {
      const why = g.check_spec(sent);
      if (why !== '') return error(400, 'bad_request', `invalid ${SETTINGS_HEADER}: ${why}`);
    }
    return sent ?? (this.#co ? this.#settings : undefined);
  }

  /**
   * Stores the coordinator's record after a step that changed it. When the write fails, the
   * coordinator goes back to what is stored and the client hears 503 (the answer returned).
   */
  async #persist(name: string, co: WasmCoordinator): Promise<Response | undefined> {
    const record = co.record();
    try {
      await this.ctx.storage.put(storageKey(), record);
      this.#stored = record;
      return undefined;
    } catch (e) {
      console.error(`breakwater object ${name}: could not persist: ${e instanceof Error ? e.message : String(e)}`);
      // Back to what is stored: the client hears 503 and will ask again, so a probe granted
      // or a batch applied in this step must not stay in memory.
      this.#drop();
      return refusal(Http.Storage);
    }
  }

  /** The breaker this object holds (src/shared/routes.rs `object_name`). */
  #nameOf(asked: string | null): string | Response {
    const r = coordinatorGlue().object_name(this.ctx.id.name ?? this.#name, asked ?? undefined);
    if (r.kind !== Plan.Object) return answerOf(r);
    const name = r.name;
    r.free();
    return name;
  }

  async #load(): Promise<void> {
    try {
      const stored = await this.ctx.storage.get<unknown>(storageKey());
      this.#stored = typeof stored === 'string' ? stored : stored === undefined ? undefined : JSON.stringify(stored);
    } catch (e) {
      // Unreadable storage: start from nothing, and say so (the first change replaces it).
      console.error(`breakwater object: stored record is not readable: ${e instanceof Error ? e.message : String(e)}`);
      this.#stored = undefined;
    }
  }

  /** The coordinator for these settings, made from the stored record when they changed. */
  #coordinator(name: string, settings: string, pinned: boolean): WasmCoordinator | undefined {
    if (this.#co !== undefined && this.#settings === settings) return this.#co;
    this.#drop();
    // Pinned settings are this Worker's own, installed; clients' settings meet a record that
    // may run others (a rolling deploy), which it keeps until a reset.
    const co = coordinatorGlue().WasmCoordinator.create(name, settings, this.#stored, !pinned);
    if (co === undefined) return undefined;
    this.#co = co;
    this.#settings = settings;
    const view = JSON.parse(co.view(Date.now())) as {
      options_mismatch: { stored: number; configured: number; resolution: string } | null;
      restore_error: string | null;
    };
    const m = view.options_mismatch;
    if (m) {
      console.log(
        `breakwater object ${name}: settings differ (stored ${m.stored.toString(16)}, configured ${m.configured.toString(16)}); ${m.resolution}`,
      );
    }
    if (view.restore_error) console.error(`breakwater object ${name}: ${view.restore_error}; starting CLOSED`);
    return co;
  }

  #drop(): void {
    this.#co?.free();
    this.#co = undefined;
    this.#settings = '';
  }
}

// ----- the routes -----

/** Where `breakerRoutes` finds things, and where it is mounted. */
export interface BreakerRoutesOptions {
  /** The `env` binding of `BreakerObject`'s namespace. Default `'BREAKER'`. */
  binding?: string | undefined;
  /** Where the routes are mounted: `'/breakwater'` serves `/breakwater/metrics`, … Default `''` (the root). */
  prefix?: string | undefined;
  /** The breakers the routes serve and `/metrics` lists. Default: the names `BREAKERS` declares. */
  names?: readonly string[] | undefined;
}

interface NamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(input: string, init?: RequestInit): Promise<Response> };
}

interface RoutesEnv extends BreakerObjectEnv {
  ADMIN_TOKEN?: unknown;
  SERVICE_TOKEN?: unknown;
  [binding: string]: unknown;
}

const ROUTE_KEYS = ['binding', 'prefix', 'names'];

/**
 * The routes breakwater's Rust Worker serves, for your Worker's `fetch` handler: answers the
 * request if it is one of them, else `null` (your handler goes on).
 *
 * - `POST <prefix>/v1/acquire?breaker=<name>`, `POST <prefix>/v1/report?breaker=<name>`: the
 *   breaker service for clients outside Cloudflare (`SharedCircuitBreaker` with
 *   `service: { url, token }`), behind `Authorization: Bearer <SERVICE_TOKEN>`. They run under
 *   the breaker's settings: their `breakwater-settings` header is not forwarded.
 * - `GET <prefix>/admin/status`: the status page, one HTML document (every breaker's state and
 *   since when, its settings in words, its last changes and minutes; no script, a strict CSP).
 * - `GET <prefix>/metrics` (JSON, or `?format=prometheus`), `GET <prefix>/admin/breakers/<name>`,
 *   `POST <prefix>/admin/breakers/<name>/isolate` and `.../reset` (its body may name the
 *   settings to install, the JSON of a `BREAKERS` entry): behind
 *   `Authorization: Bearer <ADMIN_TOKEN>`.
 *
 * Each group is off (answers `null`) while its secret is not set. Only the names in `names` (or
 * `BREAKERS`) are served; another name is a 404 and touches no object. Bodies are read as a
 * stream and cut at the protocol's limit (413). Every decision is the core's, as in the Rust
 * Worker (src/shared/routes.rs); this function does the I/O.
 */
export async function breakerRoutes(request: Request, env: object, options: BreakerRoutesOptions = {}): Promise<Response | null> {
  for (const k of Object.keys(options ?? {})) {
    if (!ROUTE_KEYS.includes(k)) throw new TypeError(`breakwater: unknown option "${k}" in breakerRoutes options (expected one of ${ROUTE_KEYS.join(', ')})`);
  }
  const e = env as RoutesEnv;
  const binding = options.binding ?? 'BREAKER';
  const prefix = (options.prefix ?? '').replace(/\/+$/, '');
  if (prefix !== '' && !prefix.startsWith('/')) {
    throw new TypeError(`breakwater: invalid option "prefix": ${JSON.stringify(options.prefix)} (expected a path starting with /)`);
  }
  if (options.names !== undefined && (!Array.isArray(options.names) || !options.names.every(isBreakerName))) {
    throw new TypeError('breakwater: invalid option "names" (expected an array of breaker names)');
  }
  const url = new URL(request.url);
  if (!url.pathname.startsWith(`${prefix}/`)) return null;
  const secret = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  // Everything is decided by the core (src/shared/routes.rs), as in the Rust Worker: the route,
  // its token, the names served, the method, the body's limit. This only does the I/O.
  const g = coordinatorGlue();
  const plan = g.route(
    verbOf(request.method),
    url.pathname.slice(prefix.length),
    url.searchParams.get('breaker') ?? undefined,
    url.searchParams.get('format') === 'prometheus',
    request.headers.get('authorization') ?? undefined,
    request.headers.get('content-length') ?? undefined,
    secret(e.ADMIN_TOKEN),
    secret(e.SERVICE_TOKEN),
    options.names?.join('\n'),
    breakersText(e),
  );
  const kind = plan.kind;
  if (kind === Plan.Pass) {
    plan.free();
    return null;
  }
  if (kind === Plan.Answer) return answerOf(plan);
  const { name, op, get, body: bodyKind, prometheus, names } = plan;
  plan.free();
  const ns = e[binding] as NamespaceLike | undefined;
  if (typeof ns?.get !== 'function' || typeof ns.idFromName !== 'function') {
    return error(500, 'misconfigured', `env.${binding} is not a Durable Object namespace binding (of BreakerObject)`);
  }
  // Nothing of the request's headers goes to the object: a service client's settings least of
  // all (it runs under the breaker's).
  const call = async (name: string, op: string, init: RequestInit): Promise<Response> => {
    const stub = ns.get(ns.idFromName(name));
    try {
      const resp = await stub.fetch(`https://breaker/${op}?breaker=${encodeURIComponent(name)}`, init);
      return json(resp.status, await resp.text());
    } catch {
      return refusal(Http.Unreachable);
    }
  };
  if (kind === Plan.Metrics || kind === Plan.Status) {
    const views: unknown[] = [];
    for (const n of names === '' ? [] : names.split('\n')) {
      const resp = await call(n, 'state', { method: 'GET' });
      if (resp.status !== 200) return resp;
      views.push(await resp.json());
    }
    const text = JSON.stringify(views);
    if (kind === Plan.Status) return statusResponse(text, Date.now());
    if (prometheus) {
      const prom = g.views_prometheus(text);
      if (prom === undefined) return refusal(Http.BadGateway);
      return new Response(prom, { headers: { 'content-type': 'text/plain; version=0.0.4' } });
    }
    return json(200, text);
  }
  if (bodyKind === Body.None) return call(name, op, { method: get ? 'GET' : 'POST' });
  const body = await readBody(request);
  if (body instanceof Response) return body;
  return call(name, op, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}
