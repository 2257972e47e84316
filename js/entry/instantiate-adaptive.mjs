// Instantiates breakwater/adaptive's compiled WebAssembly.Module over its `bundler` glue (see
// instantiate.mjs for why not wasm-bindgen's own initSync) and hands it to this entry's
// option values (`throttle()`, `limit()`). The main module is loaded too (adaptive-api.mjs imports `breakwater`): the adaptive
// one holds only breakers, the rest (the retry policy, the classifier) is the main module's.
import * as bg from '../web-adaptive/breakwater_adaptive_bg.js';
import { setAdaptiveModule } from './adaptive-api.mjs';

export function startAdaptive(module) {
  const instance = new WebAssembly.Instance(module, { './breakwater_adaptive_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  if (typeof instance.exports.__wbindgen_start === 'function') instance.exports.__wbindgen_start();
  setAdaptiveModule(instance.exports);
}
