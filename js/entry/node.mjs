// Node and Bun (ESM). The .wasm is inlined into this file at build time (esbuild's binary loader),
// so a bundler that follows only JavaScript imports (Next.js's Turbopack and webpack, in dev and
// build, for routes and proxy.ts alike) carries it along: no file is read at run time.
import bytes from '../web/breakwater_bg.wasm';
import { start } from './instantiate.mjs';

start(new WebAssembly.Module(bytes));
export * from './api.mjs';
