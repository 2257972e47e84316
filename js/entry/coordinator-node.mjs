// Node and Bun (ESM), breakwater/coordinator: the .wasm inlined as base64 in
// coordinator-node-wasm.cjs, as in node.mjs (bundled as coordinator-node.cjs for `require`).
import bytes from './coordinator-node-wasm.cjs';
import { startCoordinator } from './instantiate-coordinator.mjs';

startCoordinator(new WebAssembly.Module(bytes));
export * from './coordinator.mjs';
