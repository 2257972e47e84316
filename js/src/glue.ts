// The one module that touches the wasm-bindgen glue. Each runtime's entry point (js/entry/*)
// loads the WebAssembly module its own way and hands the glue to `setGlue`; everything else asks
// `glue()`, which fails clearly if that never happened.

/** See src/wasm/mod.rs for the numeric encodings. */
export interface WasmBreaker {
  /** A permit handle (≥ 0), or `-(retryAfterMs × 4 + reason)`. */
  acquire(now: number): number;
  /** What `acquire` would answer, taking nothing: 0, or `-(retryAfterMs × 4 + reason)`. */
  peek(now: number): number;
  /** `handle` -1: an outcome without a permit (recordSuccess / recordFailure). */
  report(now: number, issuedAt: number, handle: number, outcome: number): number;
  /** [state at now, mode, open until, probes, admitted, rejected, successes, failures, ignored, stale, slow, opened, last acquire's transition] */
  info(now: number): Float64Array;
  /** 0 isolate, 1 reset, 2 disable, 3 enable; returns a transition code. */
  control(now: number, op: number): number;
  snapshot(): Float64Array;
  free(): void;
}

export interface WasmRetry {
  decide(
    now: number,
    startedAt: number,
    attempts: number,
    previousDelayMs: number,
    retryable: boolean,
    retryAfterMs: number,
    unit: number,
  ): number;
  classify(status: number, code: number, flags: number): number;
  free(): void;
}

export interface WasmBudget {
  /** 0 deposit, 1 withdraw (1 or 0), 2 available. */
  op(now: number, op: number): number;
  free(): void;
}

/** The generated glue. Constructors return undefined for a configuration `check_*` refuses. */
export interface Glue {
  WasmBreaker: {
    create(cfg: Float64Array): WasmBreaker | undefined;
    restore(cfg: Float64Array, data: Float64Array): WasmBreaker | undefined;
  };
  WasmRetry: {
    create(cfg: Float64Array, useRetryable: boolean, retryable: Float64Array): WasmRetry | undefined;
  };
  WasmBudget: {
    /** [ttlMs, minPerSec, retryPercent] */
    create(cfg: Float64Array): WasmBudget | undefined;
  };
  /** Why a create returned undefined: "" or "field|expected". 0 breaker, 1 restore, 2 retry, 3 budget. */
  check(what: number, cfg: Float64Array, data: Float64Array): string;
}

let current: Glue | undefined;

/** Called once by the runtime's entry point with the initialised glue. */
export function setGlue(g: Glue): void {
  current = g;
}

export function glue(): Glue {
  if (current === undefined) {
    throw new Error(
      'breakwater: the WebAssembly module was never initialised. Import "breakwater" through its ' +
        'package entry point (not a file inside the package), so that your runtime loads the .wasm.',
    );
  }
  return current;
}
