// Loads the stream guard (js/src/guards/guard.ts) on the first `stream()` call of any breaker, so that an
// app that never streams does not download it: a bundler that splits makes the guard a chunk of
// its own (the ESM build does), one that does not inlines it. Apart from js/src/guards/stream.ts, whose
// options and errors the guard reads, so that no two modules import each other.
import { IGNORED } from '../classify.js';
import type { guardStream as Guard } from './guard.js';

/**
 * Runs `fn` (already admitted) and guards what it streams; `settle` is called exactly once.
 * Resolves with the guarded stream once the first content chunk arrived. Loads the guard first.
 */
export function guardStream<T>(...args: Parameters<typeof Guard<T>>): Promise<ReadableStream<T>> {
  return import('./guard.js').then(
    (guard) => guard.guardStream(...args),
    (e: unknown) => {
      // The chunk did not load (a network error in a browser): the call was never made.
      args[3](IGNORED, e, 0);
      throw e;
    },
  );
}
