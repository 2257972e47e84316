// Cloudflare Workers / workerd, breakwater/coordinator: a static import of the .wasm gives a
// compiled WebAssembly.Module (the CompiledWasm module rule).
import wasmModule from '../web-coordinator/breakwater_coordinator_bg.wasm';
import { startCoordinator } from './instantiate-coordinator.mjs';

startCoordinator(wasmModule);
export * from './coordinator.mjs';
