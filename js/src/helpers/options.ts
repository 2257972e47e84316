import { Limit } from '../codes/layout.js';
import { describe } from './events.js';

/** Throws a TypeError for any key of `options` that is not in `known` (catches typos). */
export function checkKeys(where: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const near = known.find((k) => close(k, key));
      throw new TypeError(
        `breakwater: unknown option "${key}" in ${where}` + (near ? ` (did you mean "${near}"?)` : ''),
      );
    }
  }
}

function close(a: string, b: string): boolean {
  a = a.toLowerCase();
  b = b.toLowerCase();
  if (Math.abs(a.length - b.length) > 2) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  let j = 0;
  while (j < a.length - i && a[a.length - 1 - j] === b[b.length - 1 - j]) j++;
  return a.length - i - j <= 2 && b.length - i - j <= 2;
}

/** Where the options being checked were given (see `within`); named in `fail`'s messages. */
let scope: string | undefined;

/** Runs `check` with `fail` naming `where` (`invalid option "x" in <where>: …`). */
export function within<T>(where: string, check: () => T): T {
  const outer = scope;
  scope = where;
  try {
    return check();
  } finally {
    scope = outer;
  }
}

/** A RangeError for a number out of range, a TypeError for anything else (or when `type`). */
export function fail(option: string, value: unknown, expected: string, type = false): never {
  const at = scope === undefined ? '' : ` in ${scope}`;
  const msg = `breakwater: invalid option "${option}"${at}: ${describe(value)} (expected ${expected})`;
  throw typeof value === 'number' && !type ? new RangeError(msg) : new TypeError(msg);
}

/** The longest duration an option takes: the core's `MAX_DURATION_MS` (a timestamp plus it stays below 2^53). */
export const MAX_DURATION: number = Limit.MaxDurationMs;

/**
 * A finite number within [min, max] (default: the longest duration), integer if asked;
 * `undefined` gives `dflt`. `open` leaves an end out: `'('` for (min, max], `')'` for [min, max).
 */
export function num(
  option: string,
  value: unknown,
  dflt: number,
  min: number,
  max = MAX_DURATION,
  integer = true,
  open?: '(' | ')',
): number {
  if (value === undefined) return dflt;
  const range = `${open === '(' ? open : '['}${min}, ${max === MAX_DURATION ? '2^52' : max}${open === ')' ? open : ']'}`;
  // The end left out, if any, is refused as the outside is.
  const end = open === '(' ? min : open && max;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    value === end ||
    (integer && !Number.isInteger(value))
  ) {
    fail(option, value, `${integer ? 'an integer' : 'a number'} in ${range}`);
  }
  return value;
}

export function fn<T>(option: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') fail(option, value, 'a function', true);
  return value as T;
}

export function obj(option: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(option, value, 'an object', true);
  }
  return value as Record<string, unknown>;
}
