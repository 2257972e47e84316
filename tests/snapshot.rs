//! Snapshots: the whole state as data, restored exactly; bad data is an error, never a panic.
//! Runs natively and compiled to wasm32 (scripts/test-js.sh); the JSON module needs `serde`.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::Counter;
use breakwater::{
    Breaker, BreakerConfig, Mode, Outcome, RestoreError, SnapshotError, State, Timestamp, TripRule,
    Window,
};

fn rules() -> Vec<TripRule> {
    vec![
        TripRule::ConsecutiveFailures { threshold: 3 },
        TripRule::FailuresInWindow {
            threshold: 3,
            window_ms: 10_000,
        },
        TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 4,
            window: Window::Calls(8),
        },
        TripRule::SlowCallRate {
            threshold_percent: 50.0,
            slow_call_ms: 100,
            minimum_calls: 4,
            window: Window::Millis(10_000),
        },
    ]
}

/// Drives a breaker through a few calls and returns it with the time reached.
fn exercised(rule: TripRule, steps: u64) -> (Breaker, u64) {
    let config = BreakerConfig::new()
        .with_trip(rule)
        .with_open_duration_ms(1_000)
        .with_open_jitter(0.3)
        .with_half_open_max_probes(2)
        .with_half_open_success_threshold(2);
    let mut b = Breaker::new(config).unwrap();
    let mut now = 1_000_000;
    for i in 0..steps {
        now += 150;
        if let Ok(p) = b.acquire(Timestamp(now)).result {
            let outcome = if i % 3 == 0 {
                Outcome::Success
            } else {
                Outcome::Failure
            };
            let _ = b.report(Timestamp(now + 120), p, outcome);
        }
    }
    (b, now)
}

#[test]
fn a_restored_breaker_behaves_exactly_like_the_original() {
    for rule in rules() {
        for steps in [0, 3, 5, 9, 17, 40] {
            let (mut original, mut now) = exercised(rule, steps);
            let mut restored =
                Breaker::restore(*original.config(), original.snapshot()).expect("restores");
            assert_eq!(restored.snapshot(), original.snapshot());
            for i in 0..60 {
                now += 97;
                let t = Timestamp(now);
                let (a, b) = (original.acquire(t), restored.acquire(t));
                assert_eq!(a, b, "{rule:?} after {steps} steps, step {i}");
                if let (Ok(pa), Ok(pb)) = (a.result, b.result) {
                    let o = if i % 4 == 0 {
                        Outcome::Success
                    } else {
                        Outcome::Failure
                    };
                    assert_eq!(original.report(t, pa, o), restored.report(t, pb, o));
                }
                assert_eq!(original.state(), restored.state());
            }
        }
    }
}

#[test]
fn an_open_state_and_its_reopen_time_survive() {
    let config = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1 });
    let mut b = Breaker::new(config).unwrap();
    let p = b.acquire(Timestamp(5_000)).result.unwrap();
    let _ = b.report(Timestamp(5_000), p, Outcome::Failure);
    let mut r = Breaker::restore(config, b.snapshot()).unwrap();
    assert_eq!(r.state(), State::Open);
    assert_eq!(r.open_until(), Some(Timestamp(35_000)));
    assert_eq!(
        r.acquire(Timestamp(20_000))
            .result
            .unwrap_err()
            .retry_after_ms,
        15_000
    );
}

#[test]
fn an_unknown_version_is_an_error() {
    let b = Breaker::new(BreakerConfig::new()).unwrap();
    let mut s = b.snapshot();
    s.version = 2;
    assert_eq!(
        Breaker::restore(BreakerConfig::new(), s).unwrap_err(),
        RestoreError::Snapshot(SnapshotError::UnsupportedVersion(2))
    );
}

#[test]
fn a_snapshot_under_another_trip_rule_is_a_mismatch() {
    let all = rules();
    for (i, from) in all.iter().enumerate() {
        let (b, _) = exercised(*from, 2);
        for (j, to) in all.iter().enumerate() {
            let r = Breaker::restore(BreakerConfig::new().with_trip(*to), b.snapshot());
            if i == j {
                assert!(r.is_ok());
            } else {
                assert!(
                    matches!(
                        r,
                        Err(RestoreError::Snapshot(SnapshotError::ConfigMismatch(_)))
                    ),
                    "{from:?} → {to:?}: {r:?}"
                );
            }
        }
    }
    // A smaller window than the snapshot holds.
    let rule = TripRule::FailureRate {
        threshold_percent: 90.0,
        minimum_calls: 100,
        window: Window::Calls(8),
    };
    let (b, _) = exercised(rule, 8);
    let smaller = TripRule::FailureRate {
        threshold_percent: 90.0,
        minimum_calls: 100,
        window: Window::Calls(4),
    };
    assert!(matches!(
        Breaker::restore(BreakerConfig::new().with_trip(smaller), b.snapshot()),
        Err(RestoreError::Snapshot(SnapshotError::ConfigMismatch(_)))
    ));
}

#[test]
fn corrupt_fields_are_errors() {
    let config = BreakerConfig::new();
    let good = Breaker::new(config).unwrap().snapshot();
    let mut bad = Vec::new();
    let mut s = good.clone();
    s.mode = Mode::Isolated; // isolated but CLOSED
    bad.push(s);
    let mut s = good.clone();
    s.half_open_successes = 1; // outside HALF_OPEN
    bad.push(s);
    let mut s = good.clone();
    s.state = State::Open;
    s.opened_at = 10;
    s.open_until = 5;
    bad.push(s);
    let mut s = good.clone();
    s.state = State::HalfOpen;
    s.probes = vec![
        breakwater::ProbeLease {
            id: 1,
            expires_at: 1
        };
        2
    ];
    bad.push(s);

    let rate = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Calls(8),
    });
    let (b, _) = exercised(rate.trip, 3);
    let mut s = b.snapshot();
    if let Counter::Calls { failures, .. } = &mut s.counter {
        *failures += 1;
    }
    let mut s2 = b.snapshot();
    if let Counter::Calls { ring, .. } = &mut s2.counter {
        ring.push(7);
    }
    for s in bad {
        assert!(Breaker::restore(config, s).is_err());
    }
    assert!(Breaker::restore(rate, s).is_err());
    assert!(Breaker::restore(rate, s2).is_err());
}

#[test]
fn restoring_under_an_invalid_configuration_names_the_field() {
    let s = Breaker::new(BreakerConfig::new()).unwrap().snapshot();
    match Breaker::restore(BreakerConfig::new().with_half_open_max_probes(0), s) {
        Err(RestoreError::Config(e)) => assert_eq!(e.field, "half_open_max_probes"),
        other => panic!("{other:?}"),
    }
}

#[cfg(feature = "serde")]
mod json {
    use super::*;

    #[test]
    fn snapshots_round_trip_through_json() {
        for rule in rules() {
            let (b, _) = exercised(rule, 11);
            let json = serde_json::to_string(&b.snapshot()).unwrap();
            let back: breakwater::Snapshot = serde_json::from_str(&json).unwrap();
            assert_eq!(back, b.snapshot());
            assert!(Breaker::restore(*b.config(), back).is_ok());
        }
    }

    /// A snapshot `restore` refused: the error says what is wrong, in its words.
    fn assert_names_what_is_wrong(e: &RestoreError, text: &str) {
        let message = e.to_string();
        let what = match e {
            RestoreError::Snapshot(SnapshotError::UnsupportedVersion(v)) => {
                assert_ne!(*v, breakwater::SNAPSHOT_VERSION, "{text}");
                assert!(message.contains(&format!("version {v}")), "{message}");
                return;
            }
            RestoreError::Snapshot(SnapshotError::ConfigMismatch(what)) => {
                assert!(message.starts_with("snapshot does not match"), "{message}");
                what
            }
            RestoreError::Snapshot(SnapshotError::Corrupt(what)) => {
                assert!(message.starts_with("corrupt snapshot: "), "{message}");
                what
            }
            RestoreError::Config(c) => panic!("the configuration is valid, yet {c} for {text}"),
        };
        assert_eq!(what.is_empty(), cfg!(feature = "terse"), "{message}");
        assert!(message.ends_with(what), "{message}");
    }

    #[test]
    fn garbage_json_is_an_error_not_a_panic() {
        let (b, _) = exercised(rules()[2], 7);
        let json = serde_json::to_string(&b.snapshot()).unwrap();
        // Every truncation is an unexpected end, found where the text ends.
        for cut in 0..json.len() {
            let e = serde_json::from_str::<breakwater::Snapshot>(&json[..cut])
                .expect_err("a truncated snapshot does not parse");
            assert!(e.is_eof(), "{e} for {:?}", &json[..cut]);
            assert!(e.to_string().starts_with("EOF while parsing"), "{e}");
            assert_eq!((e.line(), e.column()), (1, cut), "{e}");
        }
        // A sweep of single-byte corruptions: each is refused by the parser, where it is, or by
        // `restore`, naming what is wrong, or accepted and working.
        let (mut unparsed, mut refused, mut accepted) = (0, 0, 0);
        let bytes = json.as_bytes();
        for i in 0..bytes.len() {
            for replacement in [b'0', b'9', b'"', b'-', b'x'] {
                if bytes[i] == replacement {
                    continue;
                }
                let mut v = bytes.to_vec();
                v[i] = replacement;
                let text = std::str::from_utf8(&v).expect("ASCII stays ASCII");
                match serde_json::from_str::<breakwater::Snapshot>(text) {
                    Err(e) => {
                        unparsed += 1;
                        assert!(!e.is_io(), "{e}");
                        // Found at the byte, or after it (the column is that of the last byte
                        // read, which may be the one before it).
                        assert!(e.line() == 1 && e.column() >= i, "{e} for byte {i}: {text}");
                        assert!(e.to_string().contains(" at line 1 column "), "{e}");
                    }
                    Ok(s) => match Breaker::restore(*b.config(), s) {
                        Err(e) => {
                            refused += 1;
                            assert_names_what_is_wrong(&e, text);
                        }
                        Ok(mut restored) => {
                            accepted += 1;
                            // Whatever was accepted must keep working.
                            let _ = restored.acquire(Timestamp(u64::MAX / 2));
                            let _ = restored.record(Timestamp(u64::MAX / 2), Outcome::Failure);
                        }
                    },
                }
            }
        }
        assert!(
            unparsed > 0 && refused > 0 && accepted > 0,
            "{unparsed} unparsed, {refused} refused, {accepted} accepted"
        );
    }

    #[test]
    fn configuration_round_trips_through_json() {
        let c = BreakerConfig::new().with_trip(TripRule::SlowCallRate {
            threshold_percent: 40.0,
            slow_call_ms: 5_000,
            minimum_calls: 10,
            window: Window::Millis(60_000),
        });
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<BreakerConfig>(&json).unwrap(), c);
        let partial: BreakerConfig = serde_json::from_str(r#"{"open_duration_ms": 5000}"#).unwrap();
        assert_eq!(partial, BreakerConfig::new().with_open_duration_ms(5_000));
        let typo = serde_json::from_str::<BreakerConfig>(r#"{"open_duraton_ms": 5000}"#);
        assert!(typo.unwrap_err().to_string().contains("open_duraton_ms"));
    }
}
