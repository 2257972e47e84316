// Node (ESM): the wasm-bindgen `nodejs` glue reads the .wasm next to it with fs, synchronously.
import glue from '../node/breakwater.js';
import { setGlue } from './api.mjs';

setGlue(glue);
export * from './api.mjs';
