// Browsers and Deno: fetch the .wasm next to this file (bundlers understand this `new URL`).
import { start } from './instantiate.mjs';

const url = new URL('../web/breakwater_bg.wasm', import.meta.url);
let module;
try {
  module = await WebAssembly.compileStreaming(fetch(url));
} catch {
  // No streaming compile, or a server that does not send application/wasm.
  module = await WebAssembly.compile(await (await fetch(url)).arrayBuffer());
}
start(module);
export * from './api.mjs';
