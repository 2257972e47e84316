//! The breakwater Worker's wasm module. Everything it exports is defined in the breakwater crate
//! (`src/worker/`): the Durable Object class `BreakerObject` (`#[durable_object]`) and the
//! Worker's `fetch` handler. Both are `#[wasm_bindgen]` exports of that rlib, which a cdylib
//! linking it exports as its own; naming the crate here is what links it in.
//! scripts/test-worker.sh checks both exports in the built module.

pub use breakwater::worker::BreakerObject;
