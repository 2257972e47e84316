// `breakwater/shared/internal`: the code of breakwater/shared, with the glue hooks (`setSharedGlue`
// for the entries, `sharedGlue` and the raw transport's option key for breakwater/store, the name
// check for both, and the settings header for /cloudflare; the coordinator is breakwater/coordinator's). Not
// documented for apps: `breakwater/shared` re-exports the public part (./index.ts) after its
// runtime's entry has loaded the shared module; this subpath is the same module without the loader.
export * from './index.js';
export { setSharedGlue, sharedGlue } from './glue.js';
export {
  breakerConfig,
  localConfig,
  settingsJson,
  SHARED_KEYS,
  ownSettings,
  isBreakerName,
  checkBreakerName,
  RAW_TRANSPORT,
  SETTINGS_HEADER,
  type Answer,
  type RawTransport,
  type SharedBreakerInternalOptions,
} from './client.js';
