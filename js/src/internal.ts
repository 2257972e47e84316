// `breakwater/internal`: the code of the main entry, with what the runtime entries (`setGlue`) and
// the sub-entries (breakwater/shared, /store, /ai) reuse instead of bundling a copy. Not
// documented for apps: `breakwater` re-exports the public part (js/src/index.ts) after its
// runtime's entry has loaded the core; this subpath is the same module without the loader.
export * from './index.js';
export { setGlue, wasm, create, memory, type Exports } from './glue.js';
export {
  build as breakerConfig,
  checkStreamDefaults,
  withDefaults,
  type StreamDefaults,
  finalizer,
  type AdaptiveValue,
  type HedgeValue,
  type BreakerSettings,
  type ConsecutiveTrip,
  type FailureRateTrip,
} from './breakers/breaker.js';
export type { ChainBreaker } from './chain.js';
export type { StreamSource } from './guards/stream.js';
export { outcomeCode } from './classify.js';
export { Chunks } from './guards/stream.js';
export { guardStream } from './guards/load-guard.js';
export { streamWithRetry } from './breakers/retry.js';
export { checkCallOptions, guardCall } from './guards/call.js';
export { checkKeys, fail, num, obj } from './helpers/options.js';
export { Emitter } from './helpers/events.js';
export { withTimeout } from './helpers/timeout.js';
export { MODES, OUTCOMES, REASONS, STATES, type CallOutcome } from './codes/names.js';
