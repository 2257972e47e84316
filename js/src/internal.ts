// `breakwater/internal`: the code of the main entry, with what the runtime entries (`setGlue`) and
// the sub-entries (breakwater/shared, /store, /ai) reuse instead of bundling a copy. Not
// documented for apps: `breakwater` re-exports the public part (js/src/index.ts) after its
// runtime's entry has loaded the core; this subpath is the same module without the loader.
export * from './index.js';
export { setGlue, wasm, type Exports } from './glue.js';
export { build as breakerConfig, setAdaptive, type AdaptiveOptions } from './breaker.js';
export { outcomeCode } from './classify.js';
export { Chunks } from './stream.js';
export { guardStream } from './load-guard.js';
export { checkGuard, guardCall } from './call.js';
export { checkKeys, fail, num, obj } from './options.js';
export { Emitter } from './events.js';
export { withTimeout } from './timeout.js';
export { MODES, OUTCOMES, REASONS, STATES, type CallOutcome } from './names.js';
