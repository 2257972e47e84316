// `breakwater/coordinator`: the core's coordinator (src/wasm/coordinator.rs), in a wasm module of
// its own, for breakwater/store and breakwater/cloudflare. Not documented for apps. Its runtime
// entries (js/entry/coordinator-*) load the module their runtime's way and hand the glue over
// with `setCoordinatorGlue`; the sub-entries then reach it with `coordinatorGlue()`. Apart from
// breakwater/shared's module, which every client loads, so that a client does not carry it.
export { coordinatorGlue, setCoordinatorGlue, type CoordinatorGlue, type WasmCoordinator } from './shared/glue.js';
