//! The shared breaker, once: one breaker whose state every process obeys, kept by a
//! *coordinator* (in a Durable Object, or read and written through a Redis script) and used
//! through *lease clients* (one per process). `no_std`, sans-IO: time comes in, messages and
//! decisions go out; hosts only carry messages and persist the coordinator's [`Record`].
//!
//! - [`protocol`]: the messages, their limits and checks.
//! - [`Coordinator`]: the server side — permits, numbered batches applied exactly once, probe
//!   reports checked against the probes it granted, the client sessions it remembers, and the
//!   settings it runs under.
//! - [`LeaseClient`]: the client side — admit on a lease, count, seal batches the coordinator
//!   accepts, fall back to a local core [`Breaker`](crate::Breaker) while it is unreachable.
//! - [`SharedSpec`]: the settings every participant must agree on.
//! - [`routes`]: the HTTP routes' decisions (tokens, names, body limits, refusals), for both
//!   Workers.
//!
//! The Durable Object and the Rust client (`breakwater::worker`), and the JavaScript clients and
//! the Redis store (`breakwater/shared`, `breakwater/store`, through wasm), are shells around
//! these types.

pub mod admin;
pub mod client;
pub mod coordinator;
pub mod json;
pub mod metrics;
pub mod protocol;
pub mod routes;
pub mod spec;
pub mod status;
mod wire;

pub use client::{
    Answer, Background, ClientEvent, ClientStats, Decision, LeaseClient, LeaseOptions, LocalTime,
    Next, Op, Ticket, ADMIT_ROUNDS, PARKED_PERMIT_MS, REPORT_ROUNDS,
};
pub use coordinator::{
    session_key, Coordinator, Grant, OnMismatch, Record, SessionKey, Step, STORAGE_KEY,
};
pub use protocol::{
    BadRequest, Batch, ClientId, Counts, Exchange, ExchangeError, ExchangeReply, Lease,
    ProbeReport, Refusal, StateView, WireOutcome,
};
pub use spec::{SharedSpec, SpecError, SpecRefusal, DEFAULT_LEASE_MS, MAX_LEASE_MS};
