//! The Worker's configuration: which breakers exist and how each behaves.
//!
//! The `BREAKERS` variable (in `wrangler.toml`, `[vars]`) maps each breaker name to its
//! settings, as a JSON object or a string holding one:
//!
//! ```toml
//! [vars]
//! BREAKERS = { anthropic = { lease_ms = 1000, breaker = { open_duration_ms = 30000, trip = { kind = "consecutive_failures", threshold = 5 } } } }
//! ```
//!
//! Each entry is a [`SharedSpec`]: `lease_ms` and `breaker`, the core's
//! [`BreakerConfig`](crate::BreakerConfig) with every field optional; a trip rule is tagged by
//! `kind` ([`TripRule`](crate::breaker::TripRule)), as in the simulator's scenarios.
//!
//! Only these names ever become Durable Objects: the Worker's routes look names up here, and
//! the object refuses any name it does not find here, so nobody can create objects at will.

pub use crate::shared::spec::{
    check_breakers, parse_breakers, Breakers, SharedSpec, DEFAULT_LEASE_MS, MAX_LEASE_MS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::TripRule;

    #[test]
    fn parses_names_and_defaults() {
        let map = parse_breakers(
            r#"{"anthropic": {"lease_ms": 250, "breaker": {"open_duration_ms": 1000,
                 "trip": {"kind": "consecutive_failures", "threshold": 3}}}, "openai/gpt": {}}"#,
        )
        .unwrap();
        let a = map.get("anthropic").unwrap();
        assert_eq!(a.lease_ms, 250);
        assert_eq!(a.breaker.open_duration_ms, 1_000);
        assert_eq!(
            a.breaker.trip,
            TripRule::ConsecutiveFailures { threshold: 3 }
        );
        assert_eq!(map.get("openai/gpt").unwrap(), &SharedSpec::default());
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
        for (bad, named) in [
            (r#"{"bad name": {}}"#, "bad name"),
            (r#"{"": {}}"#, "BREAKERS"),
            (r#"{"a": {"lease_ms": 0}}"#, "`lease_ms`: 0"),
            (
                r#"{"a": {"breaker": {"open_jitter": 2.0}}}"#,
                "`open_jitter`: 2",
            ),
            (r#"{"a": {"surprise": 1}}"#, "surprise"),
            (r#"[1, 2]"#, "BREAKERS is not valid"),
            (
                r#"{"a": {"breaker": {"trip": {"kind": "slow_call_rate", "threshold_percent": 50, "slow_call_ms": 1000, "minimum_calls": 10, "window": {"calls": 10}}}}}"#,
                "invalid `breaker.trip`: slow_call_rate",
            ),
            (
                r#"{"a": {"breaker": {"trip": {"consecutive_failures": {"threshold": 3}}}}}"#,
                "kind",
            ),
            ("not json", "BREAKERS is not valid"),
        ] {
            let e = parse_breakers(bad).expect_err(bad);
            assert!(e.contains(named), "{bad}: {e}");
        }
    }
}
