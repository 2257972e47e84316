// Vercel Edge / Next.js edge runtime, breakwater/adaptive: the .wasm imported with `?module`.
import wasmModule from '../web-adaptive/breakwater_adaptive_bg.wasm?module';
import { startAdaptive } from './instantiate-adaptive.mjs';

startAdaptive(wasmModule);
export * from './adaptive.mjs';
