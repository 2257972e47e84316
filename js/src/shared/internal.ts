// What the shared entry points import: the public API plus the glue hooks (`setSharedGlue` for
// the entries, `sharedGlue` and the raw transport types for `breakwater/store`).
export * from './index.js';
export { setSharedGlue, sharedGlue, type WasmCoordinator } from './glue.js';
export { localConfig, settingsJson, isBreakerName, SETTINGS_HEADER, type Answer, type RawTransport } from './client.js';
