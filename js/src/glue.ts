// The one module that touches the WebAssembly instance. Each runtime's entry point (js/entry/*)
// loads the module its own way and hands its exports to `setGlue`; everything else calls
// `wasm()`, which fails clearly if that never happened. The exports take and return numbers
// only (src/wasm/exports.rs), so they are called directly, without wasm-bindgen's wrappers.
import { Refusal } from './codes/layout.js';

/** The core's exports. A handle names a breaker, a retry policy or a budget in the core's table. */
export interface Exports {
  memory: WebAssembly.Memory;
  /** The scratch buffer's address, grown to at least `len` numbers (it may move). */
  io(len: number): number;
  release(h: number): void;
  /** A breaker from `Cfg` (and a snapshot after it): a handle, or `-Refusal`. */
  breaker(len: number): number;
  /** A permit handle (≥ 0, `Permit`), or a refusal `-(retryAfterMs × Reject.Scale + reason)`. */
  acquire(h: number, now: number): number;
  /** What `acquire` would answer, taking nothing: 0, or a refusal (`Reject`). */
  peek(h: number, now: number): number;
  /** `permit` `Sentinel.None`: an outcome without a permit (recordSuccess / recordFailure). Returns a `Transition` code. */
  report(h: number, now: number, issuedAt: number, permit: number, outcome: number): number;
  /** Hands over what this layer counted alone under `Info.Quiet*` (`Breaker::record_quiet`); a `Transition` code. */
  record_quiet(h: number, now: number, admitted: number, successes: number): number;
  /** The address of `Info`. */
  info(h: number, now: number): number;
  /** A `Control` operation; returns a `Transition` code. */
  control(h: number, now: number, op: number): number;
  /**
   * The concurrency limit (`Queue` operations): a slot (≥ 0), `Bulkhead.Mark + ticket` (wait) or a
   * refusal (enter); the ticket now holding a slot, `Bulkhead.Mark + ticket` timed out, or `Sentinel.None`
   * (leave `arg`, poll); 1 if ticket `arg` was waiting (cancel); the next deadline or `Sentinel.None`; adopt
   * breaker `arg`'s limit into `h`.
   */
  queue(h: number, now: number, op: number, arg: number): number;
  /** The snapshot's length, written at `io(len)`. */
  snapshot(h: number): number;
  /** A retry policy from `Retry` (statuses after it): a handle, or `-Refusal`. */
  retry(len: number): number;
  decide(
    h: number,
    now: number,
    startedAt: number,
    attempts: number,
    previousDelayMs: number,
    retryable: number,
    retryAfterMs: number,
    unit: number,
  ): number;
  /** `flags` and the answer as `Classify` lays them out. */
  classify(h: number, status: number, code: number, flags: number): number;
  /** What the string in `io` (one char code a number) says, `what` a `Text` kind: see src/wasm/exports.rs `read_text`. */
  read_text(len: number, what: number): number;
  /** A retry budget from `Budget`: a handle, or `-Refusal`. */
  budget_new(): number;
  /** A `BudgetOp`: deposit, withdraw (1 or 0), available. */
  budget_op(h: number, now: number, op: number): number;
  /** The byte buffer's address, grown to at least `len` bytes (it may move). */
  bytes(len: number): number;
  /** A stream watch from `now`, its limits in `io` (`Watch`): a handle. */
  watch_new(now: number): number;
  /** `len` bytes of the byte buffer as an `Item` kind: a `StreamStep` code (`Item.Split`: the records' length). */
  watch_item(h: number, now: number, len: number, kind: number): number;
  /** A `WatchOp`: a `StreamStep` code, a time or a length. */
  watch_op(h: number, now: number, op: number): number;
  /** An item's reading by the core's rules (`Item.Object` JSON, or bytes): a `Reading` code. */
  read_item(len: number, kind: number): number;
  /** A reading (a `Reading` code) judged at `now`: a `StreamStep` code. */
  watch_reading(h: number, now: number, reading: number): number;
  /** The adaptive module's: a hedging policy from `Hedge`, a handle or `-Refusal`. */
  hedge_new?(): number;
  /** The adaptive module's: a `HedgeOp` on policy `h`. */
  hedge_op?(h: number, op: number, tier: number, value: number): number;
}

let current: Exports | undefined;
let view = new Float64Array(0);

/** Called once by the runtime's entry point with the instance's exports. */
export function setGlue(exports: Exports): void {
  current = exports;
}

export function wasm(): Exports {
  if (current === undefined) {
    throw new Error(
      'breakwater: the WebAssembly module was never initialised: import "breakwater" by its package entry point, which loads the .wasm.',
    );
  }
  return current;
}

/** The memory of module `x` as numbers (a new view once the memory has grown). */
export function memory(x = wasm()): Float64Array {
  const buffer = x.memory.buffer;
  if (view.buffer !== buffer) view = new Float64Array(buffer);
  return view;
}

/** `len` numbers at the address `at` of module `x` (a copy). */
export function read(at: number, len: number, x?: Exports): Float64Array {
  return memory(x).slice(at / 8, at / 8 + len);
}

/** One number of what `info` wrote at `at` in module `x`. */
export function readAt(at: number, i: number, x?: Exports): number {
  return memory(x)[at / 8 + i]!;
}

const REFUSALS: Record<number, string> = {
  [Refusal.Malformed]: 'malformed data',
  [Refusal.Version]: 'written by an unsupported version',
  [Refusal.Mismatch]: 'taken under another trip rule or window size',
  [Refusal.Corrupt]: 'inconsistent values',
};

/**
 * Writes `input` into the scratch buffer and calls the constructor `make` with its length: the
 * handle, or an error in words for the core's refusal. The options were validated already, so a
 * refused configuration is a bug; a refused snapshot is the caller's data.
 */
export function create(make: (len: number) => number, input: ArrayLike<number>, x = wasm()): number {
  const at = x.io(input.length);
  memory(x).set(input, at / 8);
  const h = make(input.length);
  if (h > 0) return h;
  const why = REFUSALS[-h];
  throw why === undefined
    ? new RangeError('breakwater: the core refused a configuration these options were checked to give (a bug)')
    : new TypeError(`breakwater: cannot restore the snapshot: ${why}`);
}
