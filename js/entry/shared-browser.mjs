// Browsers and Deno, breakwater/shared: fetch the .wasm next to this file.
import { startShared } from './instantiate-shared.mjs';

const url = new URL('../web-shared/breakwater_shared_bg.wasm', import.meta.url);
let module;
try {
  module = await WebAssembly.compileStreaming(fetch(url));
} catch {
  module = await WebAssembly.compile(await (await fetch(url)).arrayBuffer());
}
startShared(module);
export * from './shared-api.mjs';
