// Instantiates the coordinator's compiled WebAssembly.Module over its `bundler` glue (see
// instantiate.mjs for why not wasm-bindgen's own initSync). The module carries the lease client
// too (a superset of breakwater/shared's): its glue serves both, so that a store, or a Worker
// hosting the object and its clients, loads this module alone. As the lease client's glue only
// while breakwater/shared's module has not set its own (js/src/shared/glue.ts).
import * as bg from '../web-coordinator/breakwater_coordinator_bg.js';
import { setCoordinatorGlue } from './coordinator.mjs';
import { setSharedGlue } from './shared-api.mjs';

export function startCoordinator(module) {
  const instance = new WebAssembly.Instance(module, { './breakwater_coordinator_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  if (typeof instance.exports.__wbindgen_start === 'function') instance.exports.__wbindgen_start();
  setCoordinatorGlue(bg);
  setSharedGlue(bg, false);
}
