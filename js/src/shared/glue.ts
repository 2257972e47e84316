// The one module that touches the shared breaker's wasm-bindgen glue, of its two modules:
// - `breakwater_shared.wasm` (src/wasm/shared.rs): the core's lease client, which every app that
//   shares a breaker loads (breakwater/shared). Its entries (js/entry/shared-*) load it their
//   runtime's way and hand the glue to `setSharedGlue`.
// - `breakwater_coordinator.wasm` (src/wasm/coordinator.rs and src/wasm/shared.rs): the core's
//   coordinator and the object's helpers, and the lease client as well: a superset of the first.
//   Only breakwater/store and breakwater/cloudflare load it, through the hidden
//   breakwater/coordinator, whose entries (js/entry/coordinator-*) hand its glue to
//   `setCoordinatorGlue` and to `setSharedGlue` both. A store, or a Worker hosting the object
//   and its clients (with `SharedCircuitBreaker` from breakwater/cloudflare), then loads this one
//   module, and a client elsewhere the first alone, without the coordinator's code.
// When an app loads both (a Worker that imports breakwater/shared too), breakwater/shared's
// module serves the lease client: its entries replace the glue, the coordinator's sets it only
// when none is set, so which serves does not depend on the order of the imports. Either would be
// correct: the two modules run the same core code, and nothing passes between them but strings
// and numbers (a `WasmLeaseClient` keeps the module it was made in for its life; the JSON and the
// arrays are copied in and out), so a client made in one and a settings text checked by the other
// agree, and clients made before the switch go on in their own module.
/** The core's lease client. Encodings: see src/wasm/shared.rs. */
export interface WasmLeaseClient {
  /** A ticket handle (≥ 0), `-Decision.Acquire`, `-Decision.Refresh`, or a refusal (`Reject`, ≤ `-Reject.Scale`). */
  admit(now: number): number;
  /** As `admit`, for a call that has waited on `round` requests: refused as open past the core's `ADMIT_ROUNDS`. */
  admit_again(now: number, round: number): number;
  /** As `admit`, for a caller that cannot wait: a ticket handle or a refusal, never a request. */
  admit_now(now: number): number;
  /** What `admit_now` left to send in the background, once: 0, `Decision.Acquire` or `Decision.Refresh`. */
  take_background(): number;
  /** The state this process acts on (a `State` code). */
  state(now: number): number;
  /** 0 when a call would be admitted (or ask), else the refusal as `admit` encodes it. */
  peek(now: number): number;
  acquire_request(): string;
  /**
   * Feeds the answer to the request `op` (an `Op`): `status` 200 with the protocol's JSON, a 4xx
   * with what went wrong, or 0 when nothing usable came back (why in `text`). A ticket or a
   * refusal for the call an acquire held, or `-Decision.Again`, `-Decision.Report`, `-Decision.Idle`.
   */
  on_answer(now: number, op: number, status: number, text: string): number;
  /** Whether a report is due. */
  record(now: number, ticket: number, outcome: number): boolean;
  record_untracked(now: number, outcome: number): boolean;
  flush_due(now: number): boolean;
  begin_flush(force: boolean): string | undefined;
  abandon(now: number): void;
  next_event(): string | undefined;
  /** Laid out as `LeaseInfo` (js/src/codes/layout.ts). */
  info(now: number): Float64Array;
  free(): void;
}

/** The core's coordinator, for stores that hold the shared state themselves (Redis) and the object. */
export interface WasmCoordinator {
  exchange(now: number, req: string, acquire: boolean): string;
  isolate(now: number): void;
  reset(now: number): void;
  view(now: number): string;
  changed(): boolean;
  /** The last `exchange`'s HTTP status: 200, 400 (bad request) or 503 (a newer version's record). */
  status(): number;
  /** [from, to, at, …] of the last step. */
  transitions(): Float64Array;
  record(): string;
  may_expire(): boolean;
  free(): void;
}

/** What a host does next (src/wasm/coordinator.rs `WasmRoute`): read through getters, then freed. */
export interface WasmRoute {
  /** A `Plan`. */
  readonly kind: number;
  readonly status: number;
  /** The answer's JSON body. */
  readonly answer: string;
  /** Add `WWW-Authenticate: Bearer`. */
  readonly challenge: boolean;
  /** What to log as an error ("" for nothing). */
  readonly log: string;
  readonly prometheus: boolean;
  /** The served names, one per line. */
  readonly names: string;
  readonly name: string;
  readonly op: string;
  /** GET, else POST. */
  readonly get: boolean;
  /** A `Body`. */
  readonly body: number;
  readonly settings: string;
  free(): void;
}

/** A request body collected up to the protocol's limit: `push` is false once it would pass it. */
export interface WasmBody {
  push(chunk: Uint8Array): boolean;
  /** The bytes collected (the body is emptied). */
  bytes(): Uint8Array;
  free(): void;
}

/** The lease client's exports: breakwater/shared's module, or the coordinator's (which has them too). */
export interface SharedGlue {
  WasmLeaseClient: {
    create(id: string, session: number, opts: Float64Array, fallback: Float64Array): WasmLeaseClient | undefined;
  };
  /** "" or the first refused setting: "field|value (why)", the field as the core spells it (`local.open_jitter`, `max_batch`). */
  check_lease(opts: Float64Array, fallback: Float64Array): string;
  /** The settings JSON, or "!" and the first refused setting: "field|value (why)" (`breaker.open_duration_ms`, `lease_ms`). */
  spec_json(cfg: Float64Array, leaseMs: number): string;
  /** Whether `name` is a breaker name (the core's rule). */
  is_breaker_name(name: string): boolean;
  /** Whether `id` is a client identifier (the protocol's rule). */
  is_client_id(id: string): boolean;
}

/** The coordinator's module (breakwater/coordinator, for breakwater/store and breakwater/cloudflare); its glue is a `SharedGlue` too. */
export interface CoordinatorGlue extends SharedGlue {
  WasmCoordinator: {
    create(name: string, spec: string, record: string | undefined, adopt: boolean): WasmCoordinator | undefined;
  };
  /** "" or why. */
  check_spec(spec: string): string;
  /** A `BREAKERS` document: with `name` "", its names (one per line); else that breaker's settings JSON, or "" if absent. "!why" when invalid. */
  breakers(text: string, name: string): string;
  /** What the routes do with a request (src/shared/routes.rs `plan`); `names` (one per line) or else `breakers` (the `BREAKERS` text) are the served names. */
  route(
    verb: number,
    path: string,
    breaker: string | undefined,
    prometheus: boolean,
    authorization: string | undefined,
    contentLength: string | undefined,
    admin: string | undefined,
    service: string | undefined,
    names: string | undefined,
    breakers: string | undefined,
  ): WasmRoute;
  /** The answer to a refusal the host meets itself (`code`: an `Http`). */
  refusal(code: number): WasmRoute;
  /** The object's operation at `path` (`op` of a `Plan.Object`), or its refusal. */
  object_op(path: string, verb: number): WasmRoute;
  /** A reset's body (`pinned`: the settings `BREAKERS` pins): `Plan.Object` with the `settings` it names ("" for none), or the refusal. */
  reset_settings(body: string, pinned: string | undefined): WasmRoute;
  /** A request body collected up to the protocol's limit. */
  WasmBody: new () => WasmBody;
  /** The breaker an object holds (its id's name or the first one served, else the one asked): `Plan.Object` with `name`, or the refusal. */
  object_name(kept: string | undefined, asked: string | undefined): WasmRoute;
  /** A declared `content-length`: `Plan.Pass` when the body may be read, else the refusal. */
  check_length(contentLength: string | undefined): WasmRoute;
  /** The record's storage key. */
  storage_key(): string;
  /** The settings JSON a stored record runs under, or "" when it holds none readable. */
  stored_spec(record: string): string;
  /** The objects' views (a JSON array) in the Prometheus text format; `undefined` when unreadable. */
  views_prometheus(views: string): string | undefined;
  /** The status page for the objects' views at `now`; `undefined` when unreadable. */
  status_page(views: string, now: number): string | undefined;
  status_headers(): string;
}

let current: SharedGlue | undefined;

/**
 * Called once by each module's runtime entry point with its initialised glue: breakwater/shared's
 * replaces (`replace`, the default), the coordinator's (`replace` false) only fills an empty slot.
 */
export function setSharedGlue(g: SharedGlue, replace = true): void {
  if (replace || current === undefined) current = g;
}

export function sharedGlue(): SharedGlue {
  if (current === undefined) {
    throw new Error(
      'breakwater: the shared breaker\'s WebAssembly module was never initialised. Import ' +
        '"breakwater/shared", "breakwater/store" or "breakwater/cloudflare" through the package ' +
        '(not a file inside it), so that your runtime loads its .wasm.',
    );
  }
  return current;
}

let coordinator: CoordinatorGlue | undefined;

/** Called once by the coordinator module's entry point with the initialised glue. */
export function setCoordinatorGlue(g: CoordinatorGlue): void {
  coordinator = g;
}

export function coordinatorGlue(): CoordinatorGlue {
  if (coordinator === undefined) {
    throw new Error(
      'breakwater: the shared breaker\'s coordinator WebAssembly module was never initialised. ' +
        'Import "breakwater/store" or "breakwater/cloudflare" (which load it through ' +
        '"breakwater/coordinator") through the package (not a file inside it), so that your ' +
        'runtime loads its .wasm.',
    );
  }
  return coordinator;
}
