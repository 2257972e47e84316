// Cloudflare Workers / workerd (and wrangler's "worker" condition): a static import of the
// .wasm gives a compiled WebAssembly.Module (the CompiledWasm module rule).
import wasmModule from '../web/breakwater_bg.wasm';
import { start } from './instantiate.mjs';

start(wasmModule);
export * from './index.mjs';
