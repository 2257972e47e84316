//! The Cloudflare Worker variant (feature `worker`): one breaker per configured name, held in a
//! Durable Object and shared by every isolate.
//!
//! Build with `scripts/build-worker.sh` (worker-build 0.8.7, `--features worker`; `wrangler.toml`
//! at the crate root). The Worker exports:
//!
//! - the Durable Object class `BreakerObject` ([`object`]): the shared breaker's
//!   [`Coordinator`](crate::shared::Coordinator) in memory, its [`Record`](crate::shared::Record)
//!   (the breaker's [`Snapshot`](crate::Snapshot) and what the coordinator remembers) persisted
//!   as JSON after each step that changed it, and restored lazily on the first request after an
//!   eviction or restart (a record it cannot restore: start CLOSED, log, show the reason in
//!   `/state`);
//! - a fetch handler ([`routes`]): `/metrics` and `/admin/breakers/<name>[/isolate|/reset]` behind
//!   a bearer token from the `ADMIN_TOKEN` secret (off without it), the breaker service
//!   `/v1/acquire|report` behind the `SERVICE_TOKEN` secret, and, only when built with the
//!   feature `demo` (the tests and the live demo), a demonstration app under `/app/*` that is off
//!   unless `DEMO_UPSTREAM` is set.
//!
//! Breaker names come only from the `BREAKERS` variable ([`config`]), are validated with
//! [`validate_name`](crate::validate_name), and an object refuses a name not configured there.
//!
//! Clients speak the JSON [`protocol`] over the object's stub and hold a lease on the last known
//! state ([`lease`]): CLOSED admits locally and reports in batches (failures at once, successes
//! aggregated), OPEN rejects locally until the object's retry-after, HALF_OPEN asks the object for
//! every admission, so only the object grants probe permits. An unreachable object means a local
//! fallback breaker (fail-open by default) and a [`ClientEvent::Local`].
//!
//! - Rust Workers (workers-rs): [`SharedBreaker`], with the namespace binding passed per call.
//! - JavaScript Workers: `SharedCircuitBreaker` of `breakwater/shared` (js/src/shared/client.ts),
//!   with a binding to this Worker's class (`script_name = "breakwater"`).
//!
//! The protocol, the coordinator and the lease client live in the core ([`crate::shared`]),
//! `no_std` and tested natively; the object, routes and client here are thin shells around
//! them, tested in workerd by `scripts/test-worker.sh`. [`coordinator`], [`lease`] and
//! [`protocol`] re-export them here.

pub mod config;

/// The coordinator the object drives ([`crate::shared::coordinator`]).
pub mod coordinator {
    pub use crate::shared::coordinator::{
        Coordinator, Grant, OnMismatch, Record, Step, STORAGE_KEY,
    };
}

/// The lease client ([`crate::shared::client`]).
pub mod lease {
    pub use crate::shared::client::{
        Answer, ClientEvent, Decision, LeaseClient, LeaseOptions, LocalTime, Next, Op, Ticket,
        ADMIT_ROUNDS, REPORT_ROUNDS,
    };
}

/// The JSON protocol ([`crate::shared::protocol`]).
pub mod protocol {
    pub use crate::shared::protocol::*;
}

pub mod client;
// `#[durable_object]` generates undocumented glue methods.
#[allow(missing_docs)]
pub mod object;
pub mod routes;
mod url;

pub use client::SharedBreaker;
pub use config::{Breakers, SharedSpec};
pub use lease::{ClientEvent, LeaseClient, LeaseOptions, Ticket};
pub use object::BreakerObject;
