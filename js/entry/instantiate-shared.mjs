// Instantiates the shared breaker's compiled WebAssembly.Module over its `bundler` glue (see
// instantiate.mjs for why not wasm-bindgen's own initSync).
import * as bg from '../web-shared/breakwater_shared_bg.js';
import { setSharedGlue } from './shared-api.mjs';

export function startShared(module) {
  const instance = new WebAssembly.Instance(module, { './breakwater_shared_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  if (typeof instance.exports.__wbindgen_start === 'function') instance.exports.__wbindgen_start();
  setSharedGlue(bg);
}
