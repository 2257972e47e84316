// What the runtime entry points import: the public API plus the hook that hands over the glue,
// and what the sub-entries (breakwater/shared, /store, /ai) reuse instead of bundling a copy.
export * from './index.js';
export { setGlue } from './glue.js';
export { build as breakerConfig } from './breaker.js';
export { outcomeCode } from './classify.js';
export { Chunks, guardStream } from './stream.js';
export { checkGuard, guardCall } from './call.js';
export { checkKeys, fail, num, obj } from './options.js';
export { Emitter } from './events.js';
