// Node and Bun (ESM), breakwater/shared: the .wasm inlined as base64 in shared-node-wasm.cjs, as in
// node.mjs (bundled as shared-node.cjs for `require`).
import bytes from './shared-node-wasm.cjs';
import { startShared } from './instantiate-shared.mjs';

startShared(new WebAssembly.Module(bytes));
export * from './shared.mjs';
