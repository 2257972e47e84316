//! Errors: invalid configuration, unreadable snapshots, and the facade's call error.

use core::fmt;

use crate::breaker::Rejected;

/// A configuration value out of range. Names the field (as spelled in Rust, `snake_case`), the
/// value that was given and what was expected; nothing is ever clamped silently.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfigError {
    /// The field, e.g. `"open_jitter"` or `"trip.threshold"`.
    pub field: &'static str,
    /// The value that was rejected.
    pub value: f64,
    /// What the field accepts, e.g. `"a number in [0, 1)"`.
    pub expected: &'static str,
}

impl ConfigError {
    pub(crate) const fn new(field: &'static str, value: f64, expected: &'static str) -> Self {
        ConfigError {
            field: terse(field),
            value,
            expected: terse(expected),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}`: {} (expected {})",
            self.field,
            crate::float::Plain(self.value),
            self.expected
        )
    }
}

/// A message, or `""` under the `terse` feature (see Cargo.toml): there the words are never
/// stored, so they stay out of the binary.
pub(crate) const fn terse(words: &'static str) -> &'static str {
    if cfg!(feature = "terse") {
        ""
    } else {
        words
    }
}

/// Why a snapshot could not be restored. The breaker it would have replaced is untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// The snapshot was written by a format this version does not read.
    UnsupportedVersion(u32),
    /// The snapshot's window does not fit the configuration it is restored under (the trip rule
    /// or its size changed).
    ConfigMismatch(&'static str),
    /// A field holds a value no breaker can produce.
    Corrupt(&'static str),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported snapshot version {v} (this build reads version {})",
                    crate::snapshot::SNAPSHOT_VERSION
                )
            }
            SnapshotError::ConfigMismatch(what) => {
                write!(f, "snapshot does not match the configuration: {what}")
            }
            SnapshotError::Corrupt(what) => write!(f, "corrupt snapshot: {what}"),
        }
    }
}

/// The error of a guarded call: either the call's own error, or the breaker refused to run it.
#[derive(Clone, Debug, PartialEq)]
pub enum Error<E> {
    /// The guarded operation ran and failed with this error.
    Inner(E),
    /// The breaker did not run the operation; [`Rejected::retry_after_ms`] says when to ask again.
    Rejected(Rejected),
}

impl<E> Error<E> {
    /// The operation's own error, if it ran.
    pub fn into_inner(self) -> Option<E> {
        match self {
            Error::Inner(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }

    /// True if the breaker refused the call.
    pub fn is_rejected(&self) -> bool {
        matches!(self, Error::Rejected(_))
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Inner(e) => e.fmt(f),
            Error::Rejected(r) => r.fmt(f),
        }
    }
}

impl core::error::Error for ConfigError {}

impl core::error::Error for SnapshotError {}

impl<E: core::error::Error + 'static> core::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Inner(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }
}

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
