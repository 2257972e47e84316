// Cloudflare Workers / workerd, breakwater/adaptive: a static import of the .wasm gives a
// compiled WebAssembly.Module (the CompiledWasm module rule).
import wasmModule from '../web-adaptive/breakwater_adaptive_bg.wasm';
import { startAdaptive } from './instantiate-adaptive.mjs';

startAdaptive(wasmModule);
export * from './adaptive.mjs';
