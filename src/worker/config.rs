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

pub use crate::shared::spec::{
    check_breakers, parse_breakers, Breakers, DEFAULT_LEASE_MS, MAX_LEASE_MS,
};

/// One breaker's settings: the core's [`SharedSpec`](crate::shared::SharedSpec) (`breaker` and
/// `lease_ms`, every field optional).
pub type BreakerSpec = crate::shared::SharedSpec;

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
            r#"{"a": {"breaker": {"trip": {"slow_call_rate": {"threshold_percent": 50, "slow_call_ms": 1000, "minimum_calls": 10, "window": {"calls": 10}}}}}}"#,
            "not json",
        ] {
            assert!(parse_breakers(bad).is_err(), "{bad}");
        }
    }
}
