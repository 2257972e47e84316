// Instantiates an already compiled WebAssembly.Module over the wasm-bindgen `bundler` glue (its
// imports; the JavaScript layer calls the module's numeric exports directly).
// `new WebAssembly.Instance` accepts a module from another realm (Next.js edge hands one over),
// where wasm-bindgen's own `initSync` would fail its `instanceof` check.
import * as bg from '../web/breakwater_bg.js';
import { setGlue } from './api.mjs';

export function start(module) {
  const instance = new WebAssembly.Instance(module, { './breakwater_bg.js': bg });
  bg.__wbg_set_wasm(instance.exports);
  if (typeof instance.exports.__wbindgen_start === 'function') instance.exports.__wbindgen_start();
  setGlue(instance.exports);
}
