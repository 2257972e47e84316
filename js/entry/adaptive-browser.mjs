// Browsers and Deno, breakwater/adaptive: fetch the .wasm next to this file.
import { compile } from './compile.mjs';
import { startAdaptive } from './instantiate-adaptive.mjs';

startAdaptive(await compile(new URL('../web-adaptive/breakwater_adaptive_bg.wasm', import.meta.url)));
export * from './adaptive.mjs';
