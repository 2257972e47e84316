// Browsers and Deno, breakwater/shared: fetch the .wasm next to this file.
import { compile } from './compile.mjs';
import { startShared } from './instantiate-shared.mjs';

startShared(await compile(new URL('../web-shared/breakwater_shared_bg.wasm', import.meta.url)));
export * from './shared.mjs';
