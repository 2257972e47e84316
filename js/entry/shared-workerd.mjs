// Cloudflare Workers / workerd, breakwater/shared: a static import of the .wasm gives a
// compiled WebAssembly.Module (the CompiledWasm module rule).
import wasmModule from '../web-shared/breakwater_shared_bg.wasm';
import { startShared } from './instantiate-shared.mjs';

startShared(wasmModule);
export * from './shared.mjs';
