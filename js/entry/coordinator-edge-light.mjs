// Vercel Edge / Next.js edge runtime, breakwater/coordinator: the .wasm imported with `?module`.
import wasmModule from '../web-coordinator/breakwater_coordinator_bg.wasm?module';
import { startCoordinator } from './instantiate-coordinator.mjs';

startCoordinator(wasmModule);
export * from './coordinator.mjs';
