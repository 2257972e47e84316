// Node and Bun (ESM; js/build.mjs bundles this file as node.cjs for `require`). The .wasm comes
// inlined as base64 in node-wasm.cjs (built from web/breakwater_bg.wasm, shared with node.cjs), so
// that a bundler that follows only JavaScript imports (Next.js's Turbopack and webpack, in dev and
// build, for routes and proxy.ts alike) carries it along: no file is read at run time.
import bytes from './node-wasm.cjs';
import { start } from './instantiate.mjs';

start(new WebAssembly.Module(bytes));
export * from './index.mjs';
