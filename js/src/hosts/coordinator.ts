// `breakwater/coordinator`: the core's coordinator (src/wasm/coordinator.rs), in a wasm module of
// its own, for breakwater/store and breakwater/cloudflare. Not documented for apps. Its runtime
// entries (js/entry/coordinator-*) load the module their runtime's way and hand the glue over
// with `setCoordinatorGlue`, and to breakwater/shared/internal's `setSharedGlue` as well (the
// module carries the lease client too: js/src/shared/glue.ts); the sub-entries then reach it with
// `coordinatorGlue()`. Apart from breakwater/shared's module, which every client elsewhere
// loads, so that such a client does not carry the coordinator.
export { coordinatorGlue, setCoordinatorGlue, type CoordinatorGlue, type WasmCoordinator, type WasmRoute } from '../shared/glue.js';
