//! The core's errors: an invalid configuration and an unreadable snapshot. A leaf: every core
//! module returns these, so this one imports none of them (only `src/float.rs`, itself a leaf,
//! to write a value).

use core::fmt;

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

/// Why a snapshot could not be restored. The breaker it would have replaced is untouched. Its
/// words (`Display`) are written in `src/snapshot.rs`, beside the version they name.
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

impl core::error::Error for ConfigError {}
