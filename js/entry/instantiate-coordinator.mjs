// Instantiates the coordinator's compiled WebAssembly.Module over its `bundler` glue (see
// instantiate.mjs for why not wasm-bindgen's own initSync).
import * as bg from '../web-coordinator/breakwater_coordinator_bg.js';
import { setCoordinatorGlue } from './coordinator.mjs';

export function startCoordinator(module) {
  const instance = new WebAssembly.Instance(module, { './breakwater_coordinator_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  if (typeof instance.exports.__wbindgen_start === 'function') instance.exports.__wbindgen_start();
  setCoordinatorGlue(bg);
}
