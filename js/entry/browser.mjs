// Browsers and Deno: fetch the .wasm next to this file (bundlers understand this `new URL`).
import { compile } from './compile.mjs';
import { start } from './instantiate.mjs';

start(await compile(new URL('../web/breakwater_bg.wasm', import.meta.url)));
export * from './index.mjs';
