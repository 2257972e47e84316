// Vercel Edge / Next.js edge runtime: compiling wasm from bytes is refused there, so the .wasm
// is imported as a module with `?module`, which Next.js turns into a WebAssembly.Module.
import wasmModule from '../web/breakwater_bg.wasm?module';
import { start } from './instantiate.mjs';

start(wasmModule);
export * from './index.mjs';
