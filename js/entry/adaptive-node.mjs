// Node and Bun (ESM), breakwater/adaptive: the .wasm inlined as base64 in adaptive-node-wasm.cjs,
// as in node.mjs (bundled as adaptive-node.cjs for `require`).
import bytes from './adaptive-node-wasm.cjs';
import { startAdaptive } from './instantiate-adaptive.mjs';

startAdaptive(new WebAssembly.Module(bytes));
export * from './adaptive.mjs';
