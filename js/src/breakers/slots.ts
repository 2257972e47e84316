// The concurrency limit (`concurrency: limit(...)`) of a CircuitBreaker, on the JavaScript side: the core
// holds the slots and the line (src/bulkhead.rs, through the adaptive module's `queue` export);
// this class keeps the promises of the calls waiting in line and a timer for the line's next
// deadline. breakwater/adaptive's `limit()` brings it to the breakers, so that the main entry
// does not carry it.
import type { Exports } from '../glue.js';
import { Bulkhead, Queue, Reject, Sentinel } from '../codes/layout.js';

/** The refusal code (negated) of a call the limit turns away. */
const FULL = -(Reject.Scale + Reject.Full);

export class Slots {
  #x: Exports;
  /** The breaker's handle now (a restore replaces it). */
  #h: () => number;
  #now: () => number;
  /** Calls waiting in line for a slot, by ticket. */
  #waiters = new Map<number, (slot: number) => void>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(x: Exports, h: () => number, now: () => number) {
    this.#x = x;
    this.#h = h;
    this.#now = now;
  }

  /**
   * A slot (≥ 0), at once or after waiting in line, or a refusal code (negated: `full`). Rejects
   * with the signal's reason when it aborts while waiting.
   */
  enter(signal: AbortSignal | undefined): number | Promise<number> {
    const e = this.#x.queue(this.#h(), this.#now(), Queue.Enter, 0);
    if (e < Bulkhead.Mark) return e;
    const ticket = e - Bulkhead.Mark;
    return new Promise<number>((resolve, reject) => {
      const onAbort = () => {
        if (this.#x.queue(this.#h(), 0, Queue.Cancel, ticket)) {
          this.#waiters.delete(ticket);
          this.#arm();
          reject(signal!.reason);
        }
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.set(ticket, (slot) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(slot);
      });
      this.#arm();
    });
  }

  /**
   * Runs `go` in a slot, at once or once one is free in line; `refuse` with the refusal's code
   * when there is none (`full`). A call aborted as its slot was handed over gives it back.
   */
  run<T>(signal: AbortSignal | undefined, refuse: (code: number) => Promise<T>, go: (slot: number) => Promise<T>): Promise<T> {
    const next = (slot: number): Promise<T> => {
      if (slot < 0) return refuse(-slot);
      if (signal?.aborted) {
        this.leave(slot);
        return Promise.reject(signal.reason);
      }
      return go(slot);
    };
    const s = this.enter(signal);
    return typeof s === 'number' ? next(s) : s.then(next);
  }

  /** A slot now, or the refusal code (negated): never a place in line (`tryAcquire`). */
  take(): number {
    const e = this.#x.queue(this.#h(), this.#now(), Queue.Enter, 0);
    if (e < Bulkhead.Mark) return e;
    this.#x.queue(this.#h(), 0, Queue.Cancel, e);
    return FULL;
  }

  /** Gives a slot back (-1: none held); the next in line gets it. */
  leave(slot: number): void {
    if (slot < 0) return;
    // No clock read unless someone waits: the limit's leases only need the time to expire, and
    // a reading of 0 is no time passing for it.
    const waiting = this.#waiters.size > 0;
    this.#wake(this.#x.queue(this.#h(), waiting ? this.#now() : 0, Queue.Leave, slot));
    if (waiting) this.#poll();
  }

  /** A waiter's news from the core: its slot, or its time is up (refused as full). */
  #wake(code: number): void {
    if (code < 0) return;
    const timedOut = code >= Bulkhead.Mark;
    const ticket = timedOut ? code - Bulkhead.Mark : code;
    const resolve = this.#waiters.get(ticket);
    this.#waiters.delete(ticket);
    resolve?.(timedOut ? FULL : ticket);
  }

  #poll(): void {
    if (this.#waiters.size === 0) return;
    for (let c = this.#x.queue(this.#h(), this.#now(), Queue.Poll, 0); c >= 0; c = this.#x.queue(this.#h(), this.#now(), Queue.Poll, 0)) {
      this.#wake(c);
    }
    this.#arm();
  }

  /** A timer for the line's next deadline (a waiter's time-out, a lease running out). */
  #arm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const at = this.#waiters.size === 0 ? Sentinel.None : this.#x.queue(this.#h(), 0, Queue.Deadline, 0);
    if (at >= 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#poll();
      }, Math.max(0, at - this.#now()));
    }
  }
}
