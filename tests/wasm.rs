//! The core's behaviours, written once and run three ways: natively (`cargo test --test wasm`),
//! and compiled to wasm32 under Node and headless Chromium (`wasm-pack test --node` /
//! `--headless --chrome`, see scripts/test-js.sh). The last module drives the numeric boundary
//! the npm package is built on (feature `wasm`, wasm32 only: it creates JavaScript values).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::{
    parse_retry_after, parse_retry_after_ms, AttemptFailure, Breaker, BreakerConfig, Class,
    Classifier, GiveUpReason, Jitter, Outcome, RejectReason, RetryBudget, RetryDecision,
    RetryPolicy, Signal, SplitMix64, State, Timestamp, TripRule, Window,
};

const T0: u64 = 1_700_000_000_000;

fn at(ms: u64) -> Timestamp {
    Timestamp(T0 + ms)
}

fn tripped(config: BreakerConfig) -> Breaker {
    let mut b = Breaker::new(config).expect("valid config");
    while b.state() == State::Closed {
        let p = b.acquire(at(0)).result.expect("closed admits");
        let _ = b.report(at(0), p, Outcome::Failure);
    }
    b
}

#[test]
fn opens_after_consecutive_failures_and_says_when_to_come_back() {
    let mut b = tripped(BreakerConfig::new().with_open_duration_ms(30_000));
    assert_eq!(b.state(), State::Open);
    let r = b.acquire(at(10_000)).result.unwrap_err();
    assert_eq!(r.reason, RejectReason::Open);
    assert_eq!(r.retry_after_ms, 20_000);
}

#[test]
fn a_success_resets_the_run_of_failures() {
    let mut b = Breaker::new(BreakerConfig::new()).unwrap();
    for i in 0..20 {
        let p = b.acquire(at(i)).result.unwrap();
        let outcome = if i % 5 == 4 {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        let _ = b.report(at(i), p, outcome);
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn half_open_admits_exactly_the_configured_probes() {
    let mut b = tripped(BreakerConfig::new());
    let admitted = (0..50)
        .filter(|_| b.acquire(at(30_000)).result.is_ok())
        .count();
    assert_eq!(admitted, 1);
    assert_eq!(b.state(), State::HalfOpen);

    let mut b = tripped(BreakerConfig::new().with_half_open_max_probes(3));
    let admitted = (0..50)
        .filter(|_| b.acquire(at(30_000)).result.is_ok())
        .count();
    assert_eq!(admitted, 3);
}

#[test]
fn an_unreported_probe_frees_its_slot_when_its_lease_expires() {
    let mut b = tripped(BreakerConfig::new().with_probe_timeout_ms(5_000));
    assert!(b.acquire(at(30_000)).result.is_ok());
    assert!(b.acquire(at(34_999)).result.is_err());
    let probe = b.acquire(at(35_000)).result.expect("the lease expired");
    let closed = b.report(at(35_100), probe, Outcome::Success).unwrap();
    assert_eq!(closed.to, State::Closed);
}

#[test]
fn a_permit_from_an_older_generation_is_ignored() {
    let mut b = Breaker::new(
        BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1 }),
    )
    .unwrap();
    let old = b.acquire(at(0)).result.unwrap();
    let p = b.acquire(at(0)).result.unwrap();
    let _ = b.report(at(1), p, Outcome::Failure);
    assert_eq!(b.state(), State::Open);
    assert!(b.report(at(2), old, Outcome::Success).is_none());
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.stats().stale, 1);
}

#[test]
fn failures_in_window_only_count_within_the_window() {
    let config = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 5,
        window_ms: 60_000,
    });
    let mut b = Breaker::new(config).unwrap();
    for i in 0..20 {
        let _ = b.record(at(i * 15_001), Outcome::Failure);
    }
    assert_eq!(b.state(), State::Closed);
    for i in 0..5 {
        let _ = b.record(at(400_000 + i * 1_000), Outcome::Failure);
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn failure_rate_and_slow_call_rate_rules_trip_at_their_threshold() {
    let rate = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 10,
        window: Window::Calls(10),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(rate)).unwrap();
    for i in 0..10 {
        let outcome = if i >= 6 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        let _ = b.record(at(i), outcome);
    }
    assert_eq!(b.state(), State::Closed);
    let _ = b.record(at(11), Outcome::Failure);
    assert_eq!(b.state(), State::Open);

    let slow = TripRule::SlowCallRate {
        threshold_percent: 50.0,
        slow_call_ms: 1_000,
        minimum_calls: 2,
        window: Window::Millis(60_000),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(slow)).unwrap();
    let p = b.acquire(at(0)).result.unwrap();
    let _ = b.report(at(10), p, Outcome::Success);
    let p = b.acquire(at(100)).result.unwrap();
    let _ = b.report(at(2_000), p, Outcome::Success);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn the_open_period_grows_after_failed_probes_and_jitters() {
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
        .with_open_duration_ms(1_000)
        .with_open_backoff(2.0, 5_000);
    let mut b = tripped(config);
    let mut periods = Vec::new();
    for _ in 0..4 {
        let now = b.open_until().unwrap().0 - T0;
        let p = b.acquire(at(now)).result.unwrap();
        let _ = b.report(at(now), p, Outcome::Failure);
        periods.push(b.open_until().unwrap().0 - T0 - now);
    }
    assert_eq!(periods, [2_000, 4_000, 5_000, 5_000]);

    let jittered = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
        .with_open_duration_ms(10_000)
        .with_open_jitter(0.5);
    let spread: Vec<u64> = (1..6)
        .map(|seed| {
            let b = tripped(jittered.with_seed(seed));
            b.open_until().unwrap().0 - T0
        })
        .collect();
    assert!(
        spread.iter().all(|p| (5_000..=15_000).contains(p)),
        "{spread:?}"
    );
    assert!(spread.windows(2).any(|w| w[0] != w[1]), "{spread:?}");
}

#[test]
fn isolate_reset_and_disable() {
    let mut b = Breaker::new(BreakerConfig::new()).unwrap();
    let _ = b.isolate(at(0));
    let r = b.acquire(at(3_600_000)).result.unwrap_err();
    assert_eq!(r.reason, RejectReason::Isolated);
    let _ = b.reset(at(1));
    assert!(b.acquire(at(2)).result.is_ok());
    b.set_disabled(at(3), true);
    for _ in 0..100 {
        let p = b.acquire(at(4)).result.unwrap();
        assert!(b.report(at(4), p, Outcome::Failure).is_none());
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn invalid_configuration_is_an_error_naming_the_field() {
    let e = Breaker::new(BreakerConfig::new().with_open_jitter(1.5)).unwrap_err();
    assert_eq!(e.field, "open_jitter");
    let e = Breaker::new(BreakerConfig::new().with_half_open_max_probes(0)).unwrap_err();
    assert_eq!(e.field, "half_open_max_probes");
    let e = RetryPolicy::new()
        .with_max_attempts(0)
        .validate()
        .unwrap_err();
    assert_eq!(e.field, "max_attempts");
}

#[test]
fn snapshots_round_trip() {
    let config = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 5,
        window_ms: 60_000,
    });
    let mut b = Breaker::new(config).unwrap();
    for i in 0..4 {
        let _ = b.record(at(i), Outcome::Failure);
    }
    let mut restored = Breaker::restore(config, b.snapshot()).unwrap();
    let _ = restored.record(at(10), Outcome::Failure);
    assert_eq!(restored.state(), State::Open);
}

#[test]
fn retry_backoff_is_exponential_capped_and_honours_retry_after() {
    let policy = RetryPolicy::new()
        .with_max_attempts(6)
        .with_base_delay_ms(1_000)
        .with_max_delay_ms(5_000)
        .with_jitter(Jitter::None);
    let mut rng = SplitMix64::new(1);
    let mut state = policy.start(at(0));
    let mut delays = Vec::new();
    let failure = AttemptFailure {
        retryable: true,
        retry_after_ms: None,
    };
    while let RetryDecision::Retry { delay_ms, .. } =
        policy.decide(&mut state, at(0), failure, &mut rng, None)
    {
        delays.push(delay_ms);
    }
    assert_eq!(delays, [1_000, 2_000, 4_000, 5_000, 5_000]);

    let mut state = policy.start(at(0));
    let asks = AttemptFailure {
        retryable: true,
        retry_after_ms: Some(7_000),
    };
    assert!(matches!(
        policy.decide(&mut state, at(0), asks, &mut rng, None),
        RetryDecision::Retry {
            delay_ms: 7_000,
            ..
        }
    ));
    let too_long = AttemptFailure {
        retryable: true,
        retry_after_ms: Some(3_600_000),
    };
    assert!(matches!(
        policy.decide(&mut state, at(0), too_long, &mut rng, None),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong { .. })
    ));
}

#[test]
fn a_budget_caps_retries_across_calls() {
    let mut budget = RetryBudget::new(10_000, 0, 20.0).unwrap();
    for _ in 0..10 {
        budget.deposit(at(0));
    }
    assert!(budget.try_withdraw(at(1)));
    assert!(budget.try_withdraw(at(1)));
    assert!(!budget.try_withdraw(at(1)));
}

#[test]
fn retry_after_values_parse() {
    let now = Timestamp(784_111_777_000); // Sun, 06 Nov 1994 08:49:37 GMT
    assert_eq!(parse_retry_after("120", now), Some(120_000));
    assert_eq!(parse_retry_after("1.5", now), Some(1_500));
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now),
        Some(120_000)
    );
    assert_eq!(
        parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now),
        Some(10_000)
    );
    assert_eq!(
        parse_retry_after("Sun Nov  6 08:49:57 1994", now),
        Some(20_000)
    );
    assert_eq!(parse_retry_after("soon", now), None);
    assert_eq!(parse_retry_after("-3", now), None);
    assert_eq!(parse_retry_after_ms("1234.5"), Some(1_235));
}

#[test]
fn classification_follows_llm_api_failures() {
    let c = Classifier::new();
    let status = |s| {
        c.classify(&Signal {
            status: Some(s),
            ..Signal::default()
        })
    };
    assert_eq!(status(529).class, Class::Overloaded);
    assert!(status(529).retryable);
    assert_eq!(status(429).outcome, Outcome::Failure);
    assert_eq!(status(400).outcome, Outcome::Ignored);
    assert!(!status(401).retryable);
    let quota = c.classify(&Signal {
        status: Some(429),
        error_code: Some("insufficient_quota"),
        ..Signal::default()
    });
    assert_eq!(quota.class, Class::QuotaExhausted);
    assert!(!quota.retryable);
    let cancelled = c.classify(&Signal {
        cancelled: true,
        ..Signal::default()
    });
    assert_eq!(cancelled.outcome, Outcome::Ignored);
}

/// The numeric boundary of the npm package (JavaScript values exist only in wasm).
#[cfg(all(target_arch = "wasm32", feature = "wasm"))]
mod boundary {
    use super::test;
    use breakwater::wasm::{check, WasmBreaker, WasmBudget, WasmRetry};

    const NOW: f64 = 1_700_000_000_000.0;

    /// trip, threshold, window, min calls, window kind, size, open, jitter, factor, max open,
    /// probes, successes, probe timeout, seed.
    fn cfg(threshold: f64) -> Vec<f64> {
        vec![
            0.0, threshold, 0.0, 0.0, 0.0, 0.0, 30_000.0, 0.0, 1.0, 300_000.0, 1.0, 1.0, 30_000.0,
            7.0,
        ]
    }

    fn state(b: &WasmBreaker) -> f64 {
        b.info(NOW)[0]
    }

    #[test]
    fn permits_are_numbers_and_transitions_are_codes() {
        let mut b = WasmBreaker::create(&cfg(2.0)).unwrap();
        let h = b.acquire(NOW);
        assert!(h >= 0.0);
        assert_eq!(b.report(NOW, NOW, h, 1), 0);
        let h = b.acquire(NOW);
        assert_eq!(b.report(NOW, NOW, h, 1), 1 + 1, "CLOSED → OPEN");
        assert_eq!(state(&b), 1.0);
        // Rejected: -(retry_after_ms × 4 + reason), reason 0 = open.
        assert_eq!(b.acquire(NOW + 1_000.0), -(29_000.0 * 4.0));
        let probe = b.acquire(NOW + 30_000.0);
        assert!(probe >= 2.0);
        assert_eq!(
            b.info(NOW + 30_000.0)[12],
            1.0 + 3.0 + 2.0,
            "OPEN → HALF_OPEN"
        );
        let full = b.acquire(NOW + 30_000.0);
        assert_eq!(-full % 4.0, 1.0, "half-open full");
        assert_eq!(
            b.report(NOW + 30_001.0, NOW + 30_000.0, probe, 0),
            1 + 6,
            "HALF_OPEN → CLOSED"
        );
    }

    #[test]
    fn garbage_handles_and_outcomes_are_ignored() {
        let mut b = WasmBreaker::create(&cfg(1.0)).unwrap();
        for h in [f64::NAN, -2.0, -0.5, f64::INFINITY, 9.1e15, 123_456_789.0] {
            assert_eq!(b.report(NOW, NOW, h, 1), 0);
        }
        assert_eq!(state(&b), 0.0);
        let h = b.acquire(NOW);
        assert_eq!(
            b.report(NOW, NOW, h, 99),
            0,
            "unknown outcome codes count as ignored"
        );
        assert_eq!(state(&b), 0.0);
    }

    #[test]
    fn a_handle_of_minus_one_reports_without_a_permit() {
        let mut b = WasmBreaker::create(&cfg(2.0)).unwrap();
        assert_eq!(b.report(NOW, 0.0, -1.0, 1), 0);
        assert_eq!(b.report(NOW, 0.0, -1.0, 1), 1 + 1, "CLOSED → OPEN");
        let probe = b.acquire(NOW + 30_000.0);
        assert!(probe >= 2.0);
        assert_eq!(
            b.report(NOW + 30_000.0, 0.0, -1.0, 0),
            1 + 6,
            "the probe's success closes"
        );
    }

    #[test]
    fn bad_configuration_is_refused_and_explained_not_a_trap() {
        let mut c = cfg(1.0);
        c[7] = 2.0;
        assert!(WasmBreaker::create(&c).is_none());
        assert_eq!(check(0, &c, &[]), "open_jitter|a fraction in [0, 1)");
        assert_eq!(check(0, &cfg(1.0), &[]), "");
        assert!(WasmBreaker::create(&[]).is_none());
        assert!(WasmBreaker::create(&[f64::NAN; 14]).is_none());
        assert!(WasmRetry::create(&[0.0], false, &[]).is_none());
        assert!(check(2, &[0.0], &[]).starts_with("max_attempts|"));
        assert!(WasmBudget::create(&[1.0, 0.0, 20.0]).is_none());
        assert!(check(3, &[1.0, 0.0, 20.0], &[]).starts_with("budget.ttl_ms|"));
    }

    #[test]
    fn snapshots_round_trip_as_numbers_and_garbage_never_panics() {
        let mut b = WasmBreaker::create(&cfg(1.0)).unwrap();
        let h = b.acquire(NOW);
        let _ = b.report(NOW, NOW, h, 1);
        let data = b.snapshot();
        let r = WasmBreaker::restore(&cfg(1.0), &data).unwrap();
        assert_eq!(r.info(NOW)[0], 1.0);
        assert_eq!(r.info(NOW)[2], NOW + 30_000.0, "open until");
        assert_eq!(check(1, &cfg(1.0), &data), "");
        // Every truncation is refused, and every single corrupted number is refused or
        // accepted; never a trap.
        for n in 0..data.len() {
            assert!(WasmBreaker::restore(&cfg(1.0), &data[..n]).is_none());
            assert!(check(1, &cfg(1.0), &data[..n]).starts_with("snapshot|"));
        }
        for i in 0..data.len() {
            for bad in [-1.0, 0.5, f64::NAN, 1e300, 4_294_967_296.0, 3.0] {
                let mut d = data.clone();
                d[i] = bad;
                let _ = WasmBreaker::restore(&cfg(1.0), &d);
            }
        }
    }

    #[test]
    fn retry_decisions_and_classification_are_numbers() {
        let r = WasmRetry::create(
            &[4.0, 1_000.0, 2.0, 16_000.0, -1.0, 0.0, 0.0, 60_000.0, 1.0],
            false,
            &[],
        )
        .unwrap();
        assert_eq!(r.decide(NOW, NOW, 1, 0.0, true, -1.0, 0.5), 1_000.0);
        assert_eq!(r.decide(NOW, NOW, 2, 1_000.0, true, 5_000.0, 0.5), 5_000.0);
        assert_eq!(r.decide(NOW, NOW, 4, 0.0, true, -1.0, 0.5), -2.0);
        assert_eq!(r.decide(NOW, NOW, 1, 0.0, false, -1.0, 0.5), -1.0);
        assert_eq!(r.decide(NOW, NOW, 1, 0.0, true, 3_600_000.0, 0.5), -4.0);
        let v = r.classify(529, 0, 0);
        assert_eq!((v & 15, v >> 4 & 1, v >> 5), (3, 1, 1));
        let v = r.classify(429, 1, 0);
        assert_eq!((v & 15, v >> 4 & 1, v >> 5), (4, 0, 1));
        let v = r.classify(0, 0, 4);
        assert_eq!((v & 15, v >> 5), (9, 2));
        let only_418 = WasmRetry::create(
            &[4.0, 1_000.0, 2.0, 16_000.0, -1.0, 1.0, 0.0, 60_000.0, 1.0],
            true,
            &[418.0],
        )
        .unwrap();
        assert_eq!(only_418.classify(418, 0, 0) >> 4 & 1, 1);
        assert_eq!(only_418.classify(503, 0, 0) >> 4 & 1, 0);
    }
}
