// Node and Bun (ESM), breakwater/shared: the .wasm inlined at build time, as in node.mjs.
import bytes from '../web-shared/breakwater_shared_bg.wasm';
import { startShared } from './instantiate-shared.mjs';

startShared(new WebAssembly.Module(bytes));
export * from './shared-api.mjs';
