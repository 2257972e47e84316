// Browsers and Deno, breakwater/coordinator: fetch the .wasm next to this file.
import { compile } from './compile.mjs';
import { startCoordinator } from './instantiate-coordinator.mjs';

startCoordinator(await compile(new URL('../web-coordinator/breakwater_coordinator_bg.wasm', import.meta.url)));
export * from './coordinator.mjs';
