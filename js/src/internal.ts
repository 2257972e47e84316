// What the runtime entry points import: the public API plus the hook that hands over the glue.
export * from './index.js';
export { setGlue } from './glue.js';
export { build as breakerConfig } from './breaker.js';
export { outcomeCode } from './classify.js';
export { guardStream } from './stream.js';
