// Vercel Edge / Next.js edge runtime, breakwater/shared: the .wasm imported with `?module`.
import wasmModule from '../web-shared/breakwater_shared_bg.wasm?module';
import { startShared } from './instantiate-shared.mjs';

startShared(wasmModule);
export * from './shared.mjs';
