// `breakwater/adaptive/internal`: the code of breakwater/adaptive, with the hook its runtime
// entries (js/entry/adaptive-*) call once they have loaded the adaptive module. Not documented
// for apps: `breakwater/adaptive` re-exports the public part (./index.ts) after that.
export * from './index.js';
export { setAdaptiveModule } from './options.js';
