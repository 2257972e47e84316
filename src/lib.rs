//! # breakwater
//!
//! A circuit breaker and retry policy for calls to LLM APIs and other flaky upstreams, written
//! once as a sans-IO state machine and hosted everywhere: natively, in wasm (browser, Node,
//! workerd, Deno, Vercel Edge), and in a Cloudflare Durable Object shared by every isolate.
//!
//! The core never reads a clock, sleeps or does I/O. Time comes in as a [`Timestamp`]
//! (milliseconds since the Unix epoch) and randomness as a seed or a [`Random`]; decisions come
//! out as data ([`Admission`], [`Transition`], [`RetryDecision`]). The hosts act on them.
//!
//! - [`Breaker`]: CLOSED → OPEN → HALF_OPEN with four trip rules ([`TripRule`]), leased probe
//!   permits, open-period jitter and backoff, isolate / reset / disable, and [`Snapshot`]s.
//! - [`RetryPolicy`]: exponential backoff with five jitters, Retry-After, deadlines, and a
//!   [`RetryBudget`]; [`Classifier`] maps HTTP statuses and provider errors to decisions.
//! - [`CircuitBreaker`] and [`Registry`]: a host that holds a [`Clock`] and runs the call.
//!
//! The crate is always `#![no_std]` + `alloc`, and every error type implements
//! [`core::error::Error`] in every build. The default feature `std` only adds `SystemClock` and
//! `SplitMix64::from_entropy`; `serde`, `json`, `wasm`, `worker` and `sim` add the serialisation,
//! the npm package's boundary, the Cloudflare Worker and the outage simulator (see the README).
//!
//! ```
//! use breakwater::{BreakerConfig, CircuitBreaker, Error, ManualClock, Timestamp, TripRule};
//!
//! // 5 failures within 60 s open it; 30 s later one probe; 2 successes close.
//! let config = BreakerConfig::new()
//!     .with_trip(TripRule::FailuresInWindow { threshold: 5, window_ms: 60_000 })
//!     .with_open_duration_ms(30_000)
//!     .with_half_open_success_threshold(2);
//! let clock = ManualClock::new(Timestamp(1_700_000_000_000));
//! let mut breaker = CircuitBreaker::new("anthropic", config, clock.clone())?;
//!
//! for _ in 0..5 {
//!     let _ = breaker.call(|| Err::<(), _>("529 overloaded"));
//!     clock.advance(1_000);
//! }
//! // Open: callers fail fast and learn when to come back.
//! match breaker.call(|| Ok::<_, &str>("unreachable")) {
//!     Err(Error::Rejected(r)) => assert_eq!(r.retry_after_ms, 29_000),
//!     other => panic!("expected a rejection, got {other:?}"),
//! }
//! # Ok::<(), breakwater::BuildError>(())
//! ```
#![no_std]
#![warn(missing_docs)]
// docs.rs (nightly, `--cfg docsrs`): each item is marked with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod breaker;
pub mod bulkhead;
mod clock;
mod error;
mod float;
mod hedge;
mod host;
mod metrics;
mod name;
mod retry;
mod rng;
pub mod shared;
#[cfg(feature = "sim")]
pub mod sim;
mod snapshot;
pub mod stream;
#[cfg(feature = "wasm")]
pub mod wasm;
#[cfg(feature = "worker")]
pub mod worker;

// One path per public name: the core's modules are private, and what they make public is
// re-exported here (the subsystems `bulkhead`, `shared`, `sim`, `wasm` and `worker` keep their
// own paths, and none of their names is re-exported here).
pub use breaker::{
    throttle_probability, Admission, Breaker, BreakerConfig, Bucket, Counter, FastPath, Mode,
    Outcome, Permit, PermitKind, ProbeLease, Quiet, RejectReason, Rejected, State, Stats, Throttle,
    ThrottleBucket, ThrottleWindow, Transition, TripRule, Window, CLOCK_STEP_MS, MAX_COUNT,
    MAX_DURATION_MS, MAX_HALF_OPEN_PROBES, MAX_HALF_OPEN_SUCCESSES, MAX_WINDOW_CALLS,
    THROTTLE_BUCKETS, TIME_WINDOW_BUCKETS,
};
#[cfg(feature = "std")]
pub use clock::SystemClock;
pub use clock::{Clock, ManualClock, Timestamp};
pub use error::{ConfigError, SnapshotError};
pub use hedge::{
    Hedge, HedgeAfter, HedgeConfig, HedgeStats, HEDGE_BURST, HEDGE_MIN_SAMPLES, MAX_HEDGE_TIERS,
};
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub use host::body::{BodyError, GuardedBody, StreamCut};
pub use host::facade::{
    retry_async, retry_blocking, BuildError, CallGuard, CircuitBreaker, Error, OwnedCallGuard,
    Registry,
};
#[cfg(feature = "reqwest-middleware")]
pub use host::reqwest;
#[cfg(feature = "tower")]
pub use host::tower;
pub use metrics::{
    render_prometheus, render_series, BreakerMetrics, Buckets, Families, Histogram, Series,
};
pub use name::{validate_name, InvalidName, MAX_NAME_LEN};
pub use retry::{
    parse_http_date, parse_retry_after, parse_retry_after_ms, AttemptFailure, Class, Classifier,
    Code, Ending, GiveUpReason, Jitter, ResponseVerdict, RetryBudget, RetryDecision, RetryPolicy,
    RetryState, Signal, StatusSet, Verdict, MAX_ATTEMPTS, MAX_BUDGET_TTL_MS, MAX_RETRY_PERCENT,
    MIN_BUDGET_TTL_MS,
};
pub use rng::{Random, SplitMix64, UnitFn};
pub use snapshot::{RestoreError, Snapshot, SNAPSHOT_VERSION};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust guide's examples (docs/rust.md), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/rust.md")]
pub struct RustGuideDoctests;

/// Every public error type is a `core::error::Error` in every build: scripts/test-rust.sh runs
/// these with and without `std`.
#[cfg(test)]
mod error_tests {
    use alloc::string::{String, ToString};
    use core::error::Error as CoreError;

    use crate::{
        validate_name, Breaker, BreakerConfig, BuildError, CircuitBreaker, ConfigError, Error,
        ManualClock, RestoreError, Timestamp, TripRule,
    };

    /// Its `Display` through `dyn core::error::Error`, and its source's, if any.
    fn describe(e: &(dyn CoreError + 'static)) -> (String, Option<String>) {
        (e.to_string(), e.source().map(|s| s.to_string()))
    }

    fn config_error() -> ConfigError {
        BreakerConfig::new()
            .with_half_open_max_probes(0)
            .validate()
            .unwrap_err()
    }

    #[test]
    fn configuration_errors_are_errors_naming_the_field() {
        let (message, source) = describe(&config_error());
        assert!(message.contains("half_open_max_probes"), "{message}");
        assert_eq!(source, None);
    }

    /// The throttle is behind the `throttle` feature (default on): a build without it refuses
    /// one by name rather than ignore it, and one with it applies it. Both builds run this.
    #[test]
    fn a_throttle_needs_the_throttle_feature() {
        let config = BreakerConfig::new().with_throttle(crate::Throttle::new());
        let built = cfg!(feature = "throttle");
        match config.validate() {
            Ok(()) => assert!(built),
            Err(e) => {
                assert!(!built);
                assert!(describe(&e).0.contains("throttle"), "{e}");
                assert!(Breaker::new(config).is_err());
            }
        }
        assert_eq!(
            config.fast_path().contains(crate::FastPath::ADMIT),
            !cfg!(feature = "throttle")
        );
    }

    #[test]
    fn snapshot_and_restore_errors_are_errors() {
        let mut snapshot = Breaker::new(BreakerConfig::new()).unwrap().snapshot();
        snapshot.version = 2;
        let e = snapshot.check(&BreakerConfig::new()).unwrap_err();
        let (message, _) = describe(&e);
        assert!(message.contains("version 2"), "{message}");

        let e: RestoreError = Breaker::restore(BreakerConfig::new(), snapshot).unwrap_err();
        assert_eq!(describe(&e).0, message);
    }

    #[test]
    fn name_and_build_errors_are_errors() {
        let e = validate_name("no spaces").unwrap_err();
        let (message, _) = describe(&e);
        assert!(message.contains("no spaces"), "{message}");

        let clock = ManualClock::new(Timestamp(0));
        let e: BuildError =
            CircuitBreaker::new("no spaces", BreakerConfig::new(), clock).unwrap_err();
        assert_eq!(describe(&e).0, message);
    }

    #[test]
    fn a_failed_call_is_an_error_whose_source_is_the_calls_own() {
        let inner: Error<ConfigError> = Error::Inner(config_error());
        let source = CoreError::source(&inner).expect("the call's own error is the source");
        assert_eq!(source.downcast_ref::<ConfigError>(), Some(&config_error()));

        let one_strike =
            BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1 });
        let clock = ManualClock::new(Timestamp(0));
        let breaker = CircuitBreaker::new("upstream", one_strike, clock).unwrap();
        let _ = breaker.call(|| Err::<(), _>(config_error()));
        let rejected = breaker.call(|| Ok::<_, ConfigError>(())).unwrap_err();
        assert!(rejected.is_rejected());
        assert_eq!(describe(&rejected).1, None, "a rejection has no source");
    }
}

/// What the `terse` feature keeps of an error: which one, and its value.
#[cfg(test)]
mod terse_tests {
    use crate::BreakerConfig;

    #[test]
    fn terse_keeps_which_error_and_the_value_and_drops_only_the_words() {
        let e = BreakerConfig::new()
            .with_open_jitter(2.0)
            .validate()
            .unwrap_err();
        assert_eq!(e.value, 2.0);
        if cfg!(feature = "terse") {
            assert_eq!((e.field, e.expected), ("", ""));
        } else {
            assert_eq!(
                (e.field, e.expected),
                ("open_jitter", "a fraction in [0, 1)")
            );
        }
    }

    #[test]
    fn terse_keeps_which_snapshot_error() {
        use crate::{Breaker, RestoreError, SnapshotError};
        let config = BreakerConfig::new();
        let mut s = Breaker::new(config).unwrap().snapshot();
        s.half_open_successes = 1;
        match Breaker::restore(config, s) {
            Err(RestoreError::Snapshot(SnapshotError::Corrupt(why))) => {
                assert_eq!(why.is_empty(), cfg!(feature = "terse"), "{why:?}")
            }
            other => panic!("expected a corrupt snapshot, got {:?}", other.map(|_| ())),
        }
    }
}
