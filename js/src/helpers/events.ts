/** Stops a subscription. Calling it twice is harmless. Also usable with `using`. */
export interface Unsubscribe {
  (): void;
  /** The same function: stops the subscription. */
  dispose(): void;
}

/** A minimal event: listeners are called in order; a throwing listener does not stop the others. */
export class Emitter<T> {
  #listeners: Array<(event: T) => void> = [];

  get size(): number {
    return this.#listeners.length;
  }

  subscribe(listener: (event: T) => void): Unsubscribe {
    if (typeof listener !== 'function') {
      throw new TypeError(`breakwater: a listener must be a function, got ${describe(listener)}`);
    }
    // A fresh array on each change, so that emitting while (un)subscribing is safe.
    this.#listeners = [...this.#listeners, listener];
    const off = (() => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    }) as Unsubscribe;
    off.dispose = off;
    const dispose = (Symbol as { dispose?: symbol }).dispose;
    if (dispose) (off as unknown as Record<symbol, unknown>)[dispose] = off;
    return off;
  }

  emit(event: T): void {
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch (err) {
        // A listener's bug must not break the caller's request; surface it asynchronously.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}

export function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v == null) return String(v);
  if (typeof v === 'function') return 'a function';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : typeof v;
}
