// Node (ESM), breakwater/shared: the wasm-bindgen `nodejs` glue reads its .wasm with fs.
import glue from '../node-shared/breakwater_shared.js';
import { setSharedGlue } from './shared-api.mjs';

setSharedGlue(glue);
export * from './shared-api.mjs';
