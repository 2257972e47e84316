//! The Rust host: the breaker that holds its clock and runs the call ([`facade`]), and the
//! service integrations built on it, `tower` and `reqwest-middleware` (features of the same
//! names), which read an `http::Response` with the crate's LLM rules (`http`) and guard a
//! streamed answer's body by the core's stream rules (`body`). The crate root re-exports what is
//! public: `breakwater::CircuitBreaker`, `breakwater::tower`, `breakwater::reqwest`,
//! `breakwater::GuardedBody`.

#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) mod body;
pub(crate) mod facade;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod http;
mod quick;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest;
#[cfg(feature = "tower")]
pub mod tower;
