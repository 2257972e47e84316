import { CircuitBreaker, build, type BreakerSnapshot, type CircuitBreakerOptions, type StateChangeEvent } from './breaker.js';
import { Emitter, type Unsubscribe } from '../helpers/events.js';
import { obj } from '../helpers/options.js';

/**
 * One breaker per name (a provider, a model, a tool), created on first use with the registry's
 * defaults plus per-name overrides. Keep the registry as a module-level singleton.
 */
export class BreakerRegistry {
  /** Kept through minification (the bundles' own and an app's). */
  static readonly name: string = 'BreakerRegistry';
  #defaults: CircuitBreakerOptions;
  #breakers = new Map<string, CircuitBreaker>();
  #unsubscribe = new Map<string, () => void>();
  #stateChange = new Emitter<StateChangeEvent>();

  constructor(defaults: CircuitBreakerOptions = {}) {
    // Fail now, not on first use, if the defaults are invalid.
    build(defaults, 'BreakerRegistry defaults');
    this.#defaults = { ...defaults };
  }

  /**
   * The breaker named `name`; `options` only apply when it is created, over the registry's
   * defaults. Options that are `undefined` keep the defaults' values; a trip rule other than the
   * defaults' (`failureRate` where they give `failureThreshold`, say) replaces theirs.
   */
  get(name: string, options?: CircuitBreakerOptions): CircuitBreaker {
    let b = this.#breakers.get(name);
    if (b === undefined) {
      const o = merge(this.#defaults, options);
      build(o, 'BreakerRegistry.get options');
      b = new CircuitBreaker(name, o);
      this.#breakers.set(name, b);
      this.#unsubscribe.set(name, b.onStateChange((e) => this.#stateChange.emit(e)));
    }
    return b;
  }

  /** Whether the registry holds a breaker named `name`. */
  has(name: string): boolean {
    return this.#breakers.has(name);
  }

  /** Forgets a breaker (a later `get` creates a fresh one). */
  delete(name: string): boolean {
    this.#unsubscribe.get(name)?.();
    this.#unsubscribe.delete(name);
    return this.#breakers.delete(name);
  }

  /** The names of the breakers it holds, in the order they were created. */
  names(): string[] {
    return [...this.#breakers.keys()];
  }

  /** Iterates over the `[name, breaker]` pairs it holds. */
  [Symbol.iterator](): IterableIterator<[string, CircuitBreaker]> {
    return this.#breakers.entries();
  }

  /** State changes of every breaker in the registry, present and future. */
  onStateChange(listener: (event: StateChangeEvent) => void): Unsubscribe {
    return this.#stateChange.subscribe(listener);
  }

  /** Every breaker's snapshot (its `toJSON()`), by name: what `restore()` takes. */
  toJSON(): Record<string, BreakerSnapshot> {
    const out: Record<string, BreakerSnapshot> = {};
    for (const [name, b] of this.#breakers) out[name] = b.toJSON();
    return out;
  }

  /** Restores every breaker in `snapshot` (creating those that do not exist yet). */
  restore(snapshot: Record<string, BreakerSnapshot>): void {
    for (const [name, s] of Object.entries(obj('snapshot', snapshot) ?? {})) {
      this.get(name).restore(s as BreakerSnapshot);
    }
  }
}

const RULES = [['failureThreshold', 'monitoringWindow'], ['failureRate'], ['slowCallRate']];

/** `defaults` with the options `over` gives (not `undefined`); another trip rule replaces theirs. */
function merge(defaults: CircuitBreakerOptions, over: CircuitBreakerOptions | undefined): CircuitBreakerOptions {
  const o: Record<string, unknown> = { ...defaults };
  const given = Object.entries(obj('BreakerRegistry.get options', over) ?? {}).filter(([, v]) => v !== undefined);
  const rule = RULES.find((keys) => given.some(([k]) => keys.includes(k)));
  if (rule !== undefined) for (const keys of RULES) if (keys !== rule) for (const k of keys) delete o[k];
  for (const [k, v] of given) o[k] = v;
  return o as CircuitBreakerOptions;
}

const GLOBAL = Symbol.for('breakwater.globalBreakers');

/**
 * The process-wide registry, kept on `globalThis`: every copy of this package in the process
 * finds the same one. Next.js bundles `proxy.ts`, route handlers and server components
 * separately, each with its own copy of breakwater; a breaker taken from here is the same object
 * in all of them, so a `proxy.ts` can gate on `isOpen()` what the routes' `execute` learns.
 * Breakers are created with the options of the first `get(name, options)`: give every layer the
 * same options (one module that both import).
 */
export function globalBreakers(): BreakerRegistry {
  const g = globalThis as unknown as Record<symbol, BreakerRegistry | undefined>;
  return (g[GLOBAL] ??= new BreakerRegistry());
}
