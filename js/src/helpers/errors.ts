import type { BreakerState, RejectReason } from '../codes/names.js';

export type { RejectReason };

const OPEN = Symbol.for('breakwater.CircuitOpenError');
const TIMEOUT = Symbol.for('breakwater.TimeoutError');

/**
 * Thrown by `execute` when the breaker refuses the call (OPEN, isolated, HALF_OPEN with every
 * probe slot taken, or shed by `adaptiveThrottle` while CLOSED) and no `fallback` was given. `retryAfterMs` says when asking again may work.
 */
export class CircuitOpenError extends Error {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'CircuitOpenError';
  /** `instanceof` holds for one thrown by any copy of this package (Next.js bundles one per layer). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return isCircuitOpenError(value);
  }
  /** Marker that survives duplicate copies of the package; test with `isCircuitOpenError`. */
  readonly isCircuitOpenError = true as const;
  /** The name of the breaker (or `FallbackChain`) that refused the call. */
  readonly breaker: string;
  /** The breaker's state when it refused. */
  readonly state: BreakerState;
  /** Why the call was refused. */
  readonly reason: RejectReason;
  /** Milliseconds until asking again may work. */
  readonly retryAfterMs: number;

  constructor(breaker: string, state: BreakerState, reason: RejectReason, retryAfterMs: number) {
    super(`circuit "${breaker}" is ${state === 'OPEN' ? 'open' : reason}; retry after ${retryAfterMs} ms`);
    this.name = 'CircuitOpenError';
    this.breaker = breaker;
    this.state = state;
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    (this as unknown as Record<symbol, boolean>)[OPEN] = true;
  }
}

/** True for a `CircuitOpenError` from any copy of this package (ESM, CJS, another version). */
export function isCircuitOpenError(err: unknown): err is CircuitOpenError {
  return (
    isObj(err) &&
    ((err as Record<symbol, unknown>)[OPEN] === true ||
      (err as { isCircuitOpenError?: unknown }).isCircuitOpenError === true)
  );
}

/** Thrown by `execute` when the call outlives `timeoutMs`; it counts as an upstream failure. */
export class TimeoutError extends Error {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'TimeoutError';
  /** `instanceof` holds for one thrown by any copy of this package. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return isTimeoutError(value);
  }
  /** Always `true`: tells a `TimeoutError` apart without `instanceof` (`isTimeoutError` is the test to use). */
  readonly isTimeoutError = true as const;
  /** The time limit that ran out, ms. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`the call did not finish within ${timeoutMs} ms`);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
    (this as unknown as Record<symbol, boolean>)[TIMEOUT] = true;
  }
}

/** True for a `TimeoutError` from any copy of this package. */
export function isTimeoutError(err: unknown): err is TimeoutError {
  return (
    isObj(err) && (err as Record<symbol, unknown>)[TIMEOUT] === true
  );
}

/**
 * Whether `v` is an object (not null): what every reading of an error checks first.
 * @internal
 */
export function isObj(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}
