//! The Worker's configuration: which breakers exist and how each behaves.
//!
//! The `BREAKERS` variable (in `wrangler.toml`, `[vars]`) maps each breaker name to its
//! settings, as a JSON object or a string holding one:
//!
//! ```toml
//! [vars]
//! BREAKERS = { anthropic = { lease_ms = 1000, breaker = { open_duration_ms = 30000, trip = { consecutive_failures = { threshold = 5 } } } } }
//! ```
//!
//! Only these names ever become Durable Objects: the Worker's routes look names up here, and
//! the object refuses any name it does not find here, so nobody can create objects at will.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

use serde::{Deserialize, Serialize};

use crate::breaker::BreakerConfig;
use crate::facade::validate_name;

/// The default lease: how long a client may admit locally on a CLOSED state before asking again.
pub const DEFAULT_LEASE_MS: u64 = 1_000;
/// The longest lease accepted.
pub const MAX_LEASE_MS: u64 = 3_600_000;

/// One breaker's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    /// The state machine's configuration (every field optional; see [`BreakerConfig`]).
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// How long a client may act on a CLOSED lease before asking again, in ms: the longest a
    /// trip can go unseen by an isolate that has not failed itself. Default 1 000, at most one
    /// hour.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u64,
}

fn default_lease_ms() -> u64 {
    DEFAULT_LEASE_MS
}

impl Default for BreakerSpec {
    fn default() -> Self {
        BreakerSpec {
            breaker: BreakerConfig::new(),
            lease_ms: DEFAULT_LEASE_MS,
        }
    }
}

/// Every configured breaker, by name.
pub type Breakers = BTreeMap<String, BreakerSpec>;

/// Parses and checks the `BREAKERS` JSON: every name valid, every configuration valid, every
/// lease in `1..=3_600_000` ms.
pub fn parse_breakers(json: &str) -> Result<Breakers, String> {
    let map: Breakers =
        serde_json::from_str(json).map_err(|e| format!("BREAKERS is not valid: {e}"))?;
    check_breakers(&map)?;
    Ok(map)
}

/// Checks an already parsed `BREAKERS` map.
pub fn check_breakers(map: &Breakers) -> Result<(), String> {
    for (name, spec) in map {
        validate_name(name).map_err(|e| format!("BREAKERS: {e}"))?;
        spec.breaker
            .validate()
            .map_err(|e| format!("BREAKERS[{name:?}].breaker: {e}"))?;
        if spec.lease_ms == 0 || spec.lease_ms > MAX_LEASE_MS {
            return Err(format!(
                "BREAKERS[{name:?}].lease_ms: {} (expected 1..=3600000)",
                spec.lease_ms
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::TripRule;

    #[test]
    fn parses_names_and_defaults() {
        let map = parse_breakers(
            r#"{"anthropic": {"lease_ms": 250, "breaker": {"open_duration_ms": 1000,
                 "trip": {"consecutive_failures": {"threshold": 3}}}}, "openai/gpt": {}}"#,
        )
        .unwrap();
        let a = map.get("anthropic").unwrap();
        assert_eq!(a.lease_ms, 250);
        assert_eq!(a.breaker.open_duration_ms, 1_000);
        assert_eq!(
            a.breaker.trip,
            TripRule::ConsecutiveFailures { threshold: 3 }
        );
        assert_eq!(map.get("openai/gpt").unwrap(), &BreakerSpec::default());
    }

    #[test]
    fn the_example_in_wrangler_toml_is_valid() {
        let toml = include_str!("../../wrangler.toml");
        let start = toml.find("BREAKERS = '''").unwrap() + "BREAKERS = '''".len();
        let end = start + toml[start..].find("'''").unwrap();
        let map = parse_breakers(&toml[start..end]).unwrap();
        assert_eq!(
            map.keys().collect::<alloc::vec::Vec<_>>(),
            ["anthropic", "openai"]
        );
    }

    #[test]
    fn rejects_bad_names_fields_and_values() {
        for bad in [
            r#"{"bad name": {}}"#,
            r#"{"": {}}"#,
            r#"{"a": {"lease_ms": 0}}"#,
            r#"{"a": {"breaker": {"open_jitter": 2.0}}}"#,
            r#"{"a": {"surprise": 1}}"#,
            r#"[1, 2]"#,
            "not json",
        ] {
            assert!(parse_breakers(bad).is_err(), "{bad}");
        }
    }
}
