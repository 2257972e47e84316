//! Behaviour of the breaker state machine, on a manual clock. Each test body runs natively
//! (`cargo test`) and compiled to wasm32 under Node and headless Chromium (`wasm-pack test`,
//! see scripts/test-js.sh).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::{
    Breaker, BreakerConfig, Mode, Outcome, Permit, RejectReason, State, Timestamp, TripRule, Window,
};

const T0: u64 = 1_700_000_000_000;

fn at(ms: u64) -> Timestamp {
    Timestamp(T0 + ms)
}

fn consecutive(threshold: u32) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold })
        .with_open_duration_ms(10_000)
}

fn admit(b: &mut Breaker, now: Timestamp) -> Permit {
    b.acquire(now).result.expect("admitted")
}

fn fail(b: &mut Breaker, now: Timestamp) -> Option<breakwater::Transition> {
    let p = admit(b, now);
    b.report(now, p, Outcome::Failure)
}

fn succeed(b: &mut Breaker, now: Timestamp) -> Option<breakwater::Transition> {
    let p = admit(b, now);
    b.report(now, p, Outcome::Success)
}

#[test]
fn opens_after_consecutive_failures_and_says_when_to_come_back() {
    let mut b = Breaker::new(consecutive(3)).unwrap();
    assert_eq!(fail(&mut b, at(0)), None);
    assert_eq!(fail(&mut b, at(1)), None);
    let t = fail(&mut b, at(2)).expect("third failure trips");
    assert_eq!((t.from, t.to, t.at), (State::Closed, State::Open, at(2)));
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.stats().opened, 1);
    let r = b.acquire(at(2_002)).result.unwrap_err();
    assert_eq!(r.reason, RejectReason::Open);
    assert_eq!(r.retry_after_ms, 8_000);
}

#[test]
fn the_defaults_open_after_five_failures_for_thirty_seconds_with_one_probe() {
    let mut b = Breaker::new(BreakerConfig::new()).unwrap();
    for i in 0..4 {
        assert_eq!(fail(&mut b, at(i)), None, "failure {i}");
    }
    assert_eq!(fail(&mut b, at(4)).unwrap().to, State::Open);
    let r = b.acquire(at(10_004)).result.unwrap_err();
    assert_eq!((r.reason, r.retry_after_ms), (RejectReason::Open, 20_000));
    let probe = admit(&mut b, at(30_004));
    let r = b.acquire(at(30_004)).result.unwrap_err();
    assert_eq!(r.reason, RejectReason::HalfOpenFull);
    assert_eq!(
        b.report(at(30_005), probe, Outcome::Success).unwrap().to,
        State::Closed,
        "one successful probe closes"
    );
}

#[test]
fn a_success_resets_the_consecutive_count() {
    let mut b = Breaker::new(consecutive(3)).unwrap();
    for i in 0..10 {
        assert_eq!(fail(&mut b, at(i * 10)), None);
        assert_eq!(fail(&mut b, at(i * 10 + 1)), None);
        assert_eq!(succeed(&mut b, at(i * 10 + 2)), None);
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn rejects_until_open_window_elapses() {
    let mut b = Breaker::new(consecutive(1)).unwrap();
    let _ = fail(&mut b, at(0));
    for (t, left) in [(0, 10_000), (1, 9_999), (5_000, 5_000), (9_999, 1)] {
        let r = b.acquire(at(t)).result.unwrap_err();
        assert_eq!(r.reason, RejectReason::Open);
        assert_eq!(r.retry_after_ms, left, "at +{t}");
    }
    assert_eq!(b.state_at(at(9_999)), State::Open);
    assert_eq!(b.state_at(at(10_000)), State::HalfOpen);
    let a = b.acquire(at(10_000));
    assert!(a.result.is_ok());
    let t = a.transition.unwrap();
    assert_eq!((t.from, t.to), (State::Open, State::HalfOpen));
}

#[test]
fn half_open_admits_only_the_configured_probes() {
    for probes in [1u32, 3] {
        let mut b = Breaker::new(consecutive(1).with_half_open_max_probes(probes)).unwrap();
        let _ = fail(&mut b, at(0));
        let admitted = (0..50)
            .filter(|_| b.acquire(at(10_000)).result.is_ok())
            .count();
        assert_eq!(admitted, probes as usize);
        assert_eq!(b.state(), State::HalfOpen);
        assert_eq!(b.probes_in_flight(), probes as usize);
        let r = b.acquire(at(10_001)).result.unwrap_err();
        assert_eq!(r.reason, RejectReason::HalfOpenFull);
        assert_eq!(
            r.retry_after_ms,
            30_000 - 1,
            "until the oldest lease runs out"
        );
    }
}

#[test]
fn closes_after_the_success_threshold() {
    let mut b = Breaker::new(consecutive(1).with_half_open_success_threshold(2)).unwrap();
    let _ = fail(&mut b, at(0));
    assert_eq!(succeed(&mut b, at(10_000)), None);
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.half_open_successes(), 1);
    let t = succeed(&mut b, at(10_001)).unwrap();
    assert_eq!((t.from, t.to), (State::HalfOpen, State::Closed));
}

#[test]
fn a_failed_probe_reopens() {
    let mut b = Breaker::new(consecutive(1).with_half_open_success_threshold(2)).unwrap();
    let _ = fail(&mut b, at(0));
    let _ = succeed(&mut b, at(10_000));
    let t = fail(&mut b, at(10_500)).unwrap();
    assert_eq!((t.from, t.to), (State::HalfOpen, State::Open));
    assert_eq!(b.open_until(), Some(at(20_500)));
    assert_eq!(b.stats().opened, 2);
}

#[test]
fn an_unreported_probe_frees_its_slot_when_its_lease_expires() {
    let mut b = Breaker::new(consecutive(1).with_probe_timeout_ms(5_000)).unwrap();
    let _ = fail(&mut b, at(0));
    let lost = admit(&mut b, at(10_000));
    assert!(b.acquire(at(14_999)).result.is_err());
    let second = admit(&mut b, at(15_000));
    // The second probe closes the circuit...
    assert_eq!(
        b.report(at(15_001), second, Outcome::Success).unwrap().to,
        State::Closed
    );
    // ...and when the lost one finally reports, it is stale: the breaker has moved on.
    assert_eq!(b.report(at(15_002), lost, Outcome::Failure), None);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.stats().stale, 1);
}

#[test]
fn a_stale_permit_from_an_older_generation_is_ignored() {
    let mut b = Breaker::new(consecutive(2)).unwrap();
    let early = admit(&mut b, at(0));
    let old = admit(&mut b, at(0));
    let _ = fail(&mut b, at(1));
    let _ = fail(&mut b, at(2)); // opens

    // A success from before the trip neither closes the circuit nor moves its reopen time.
    assert_eq!(b.report(at(3), early, Outcome::Success), None);
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.open_until(), Some(at(10_002)));
    assert_eq!(b.stats().stale, 1);
    let _ = succeed(&mut b, at(10_002)); // probe closes
    assert_eq!(b.state(), State::Closed);
    // The permit from the first CLOSED period fails now: it must not count.
    assert_eq!(b.report(at(10_003), old, Outcome::Failure), None);
    assert_eq!(fail(&mut b, at(10_004)), None, "only one failure counted");
    assert_eq!(b.stats().stale, 2);
}

#[test]
fn ignored_outcomes_do_not_count_and_free_probe_slots() {
    let mut b = Breaker::new(consecutive(2)).unwrap();
    for i in 0..10 {
        let p = admit(&mut b, at(i));
        assert_eq!(b.report(at(i), p, Outcome::Ignored), None);
    }
    let _ = fail(&mut b, at(20));
    let _ = fail(&mut b, at(21));
    let p = admit(&mut b, at(10_021));
    assert_eq!(b.probes_in_flight(), 1);
    assert_eq!(b.report(at(10_022), p, Outcome::Ignored), None);
    assert_eq!(b.probes_in_flight(), 0);
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.acquire(at(10_023)).result.is_ok());
}

#[test]
fn failures_in_window_count_only_within_the_window() {
    let cfg = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 3,
        window_ms: 1_000,
    });
    let mut b = Breaker::new(cfg).unwrap();
    // Failures 600 ms apart: never three within a second.
    for i in 0..10 {
        assert_eq!(fail(&mut b, at(i * 600)), None, "failure {i}");
        let _ = succeed(&mut b, at(i * 600 + 1));
    }
    // Three within 999 ms: opens, successes in between notwithstanding.
    let _ = fail(&mut b, at(20_000));
    let _ = succeed(&mut b, at(20_100));
    let _ = fail(&mut b, at(20_500));
    assert_eq!(fail(&mut b, at(20_999)).unwrap().to, State::Open);

    // Likewise for outcomes recorded without a permit: five failures 15 001 ms apart never
    // share a 60 s window; five within four seconds do.
    let cfg = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 5,
        window_ms: 60_000,
    });
    let mut b = Breaker::new(cfg).unwrap();
    for i in 0..20 {
        assert_eq!(b.record(at(i * 15_001), Outcome::Failure), None, "{i}");
    }
    for i in 0..4 {
        assert_eq!(b.record(at(400_000 + i * 1_000), Outcome::Failure), None);
    }
    assert_eq!(
        b.record(at(404_000), Outcome::Failure).unwrap().to,
        State::Open
    );
}

#[test]
fn failures_in_window_at_exactly_the_window_do_not_trip() {
    let cfg = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 2,
        window_ms: 1_000,
    });
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, at(0));
    assert_eq!(fail(&mut b, at(1_000)), None);
    assert!(fail(&mut b, at(1_999)).is_some());
}

#[test]
fn failure_rate_needs_the_minimum_calls() {
    let cfg = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 10,
        window: Window::Calls(20),
    });
    let mut b = Breaker::new(cfg).unwrap();
    for i in 0..9 {
        assert_eq!(fail(&mut b, at(i)), None, "only {i} calls so far");
    }
    assert_eq!(fail(&mut b, at(9)).unwrap().to, State::Open);
}

#[test]
fn failure_rate_over_a_count_window_forgets_old_calls() {
    let cfg = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Calls(4),
    });
    let mut b = Breaker::new(cfg).unwrap();
    // S F S F S F ... : the last four always hold 2 failures = 50 % → trips at the 4th call.
    let _ = succeed(&mut b, at(0));
    let _ = fail(&mut b, at(1));
    let _ = succeed(&mut b, at(2));
    assert_eq!(fail(&mut b, at(3)).unwrap().to, State::Open);

    // 1 failure in 4 (25 %) never trips however long it runs.
    let mut b = Breaker::new(cfg).unwrap();
    for i in 0..100 {
        let t = if i % 4 == 3 {
            fail(&mut b, at(i))
        } else {
            succeed(&mut b, at(i))
        };
        assert_eq!(t, None);
    }
}

#[test]
fn failure_rate_over_a_time_window_expires_buckets() {
    let cfg = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Millis(10_000),
    });
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, at(0));
    let _ = fail(&mut b, at(100));
    let _ = fail(&mut b, at(200));
    // 10 s later those failures have left the window: 1 failure of 1 call, under the minimum.
    assert_eq!(fail(&mut b, at(10_500)), None);
    for i in 0..5 {
        let _ = succeed(&mut b, at(10_600 + i));
    }
    // 1 failure + 5 successes; three more failures make 4 of 9 (44 %), a fourth 5 of 10.
    assert_eq!(fail(&mut b, at(11_000)), None);
    assert_eq!(fail(&mut b, at(11_001)), None);
    assert_eq!(fail(&mut b, at(11_002)), None);
    assert_eq!(fail(&mut b, at(11_003)).unwrap().to, State::Open);
}

#[test]
fn slow_calls_trip_the_slow_call_rule() {
    // Over a window of calls and over a window of time alike.
    for window in [Window::Calls(10), Window::Millis(60_000)] {
        let cfg = BreakerConfig::new().with_trip(TripRule::SlowCallRate {
            threshold_percent: 50.0,
            slow_call_ms: 2_000,
            minimum_calls: 4,
            window,
        });
        let mut b = Breaker::new(cfg).unwrap();
        let mut t = 0;
        let mut call = |b: &mut Breaker, took: u64, outcome| {
            let p = b.acquire(at(t)).result.unwrap();
            t += took;
            let tr = b.report(at(t), p, outcome);
            t += 1;
            tr
        };
        // Fast failures do not count under this rule; a call of exactly 2 s is not slow.
        assert_eq!(call(&mut b, 10, Outcome::Failure), None, "{window:?}");
        assert_eq!(call(&mut b, 2_000, Outcome::Success), None, "{window:?}");
        assert_eq!(call(&mut b, 2_001, Outcome::Success), None, "{window:?}");
        assert_eq!(
            call(&mut b, 5_000, Outcome::Success).unwrap().to,
            State::Open,
            "{window:?}"
        );
        assert_eq!(b.stats().slow, 2);
    }
}

#[test]
fn open_duration_grows_after_failed_probes_up_to_the_cap() {
    let cfg = consecutive(1).with_open_backoff(2.0, 35_000);
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, at(0));
    let mut now = 0;
    let mut periods = Vec::new();
    for _ in 0..4 {
        let until = b.open_until().unwrap().0 - T0;
        periods.push(until - now);
        now = until;
        let _ = fail(&mut b, at(now)); // the probe fails
    }
    assert_eq!(periods, [10_000, 20_000, 35_000, 35_000]);
    // A successful round resets the growth.
    now = b.open_until().unwrap().0 - T0;
    let _ = succeed(&mut b, at(now));
    let _ = fail(&mut b, at(now + 1));
    assert_eq!(b.open_until().unwrap().0 - T0 - (now + 1), 10_000);
}

#[test]
fn open_duration_jitter_stays_in_bounds_and_follows_the_seed() {
    let draw = |seed| {
        let cfg = consecutive(1).with_open_jitter(0.2).with_seed(seed);
        let mut b = Breaker::new(cfg).unwrap();
        let mut out = Vec::new();
        let mut now = 0;
        for _ in 0..200 {
            let _ = fail(&mut b, at(now));
            let until = b.open_until().unwrap().0 - T0;
            out.push(until - now);
            now = until;
            let _ = succeed(&mut b, at(now));
            now += 1;
        }
        out
    };
    let a = draw(7);
    assert!(a.iter().all(|&p| (8_000..=12_000).contains(&p)), "{a:?}");
    assert!(a.iter().any(|&p| p < 9_000) && a.iter().any(|&p| p > 11_000));
    assert_eq!(a, draw(7), "same seed, same periods");
    assert_ne!(a, draw(8));
}

#[test]
fn isolate_rejects_everything_until_reset() {
    let mut b = Breaker::new(consecutive(1)).unwrap();
    let held = admit(&mut b, at(0));
    let t = b.isolate(at(1)).unwrap();
    assert_eq!((t.from, t.to), (State::Closed, State::Open));
    assert_eq!(b.mode(), Mode::Isolated);
    for t in [2, 1_000_000] {
        let r = b.acquire(at(t)).result.unwrap_err();
        assert_eq!(r.reason, RejectReason::Isolated);
    }
    assert_eq!(
        b.state_at(at(1_000_000)),
        State::Open,
        "no half-open while isolated"
    );
    assert_eq!(b.report(at(3), held, Outcome::Success), None);
    let t = b.reset(at(1_000_001)).unwrap();
    assert_eq!((t.from, t.to), (State::Open, State::Closed));
    assert!(b.acquire(at(1_000_002)).result.is_ok());
}

#[test]
fn disabled_admits_everything_and_counts_but_never_trips() {
    let mut b = Breaker::new(consecutive(1)).unwrap();
    b.set_disabled(at(0), true);
    for i in 0..100 {
        assert_eq!(fail(&mut b, at(i)), None);
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.stats().failures, 100);
    b.set_disabled(at(100), false);
    assert_eq!(fail(&mut b, at(101)).unwrap().to, State::Open);
}

#[test]
fn a_clock_stepped_back_keeps_the_time_left_and_a_small_step_means_no_time_passed() {
    let mut b = Breaker::new(consecutive(1)).unwrap();
    let _ = fail(&mut b, at(5_000));
    // Skew: a reading 30 s behind means no time passed.
    let r = b
        .acquire(Timestamp(T0 + 5_000 - 30_000))
        .result
        .unwrap_err();
    assert_eq!(r.retry_after_ms, 10_000);
    // A step: the clock jumps back an hour. Still open, with the same time left as at +5 000...
    let back = T0 + 5_000 - 3_600_000;
    let r = b.acquire(Timestamp(back)).result.unwrap_err();
    assert_eq!(r.retry_after_ms, 10_000);
    assert_eq!(b.state_at(Timestamp(0)), State::Open);
    // ...and live: the period ends 10 s later on the new clock, not an hour later.
    assert!(b.acquire(Timestamp(back + 9_999)).result.is_err());
    assert!(b.acquire(Timestamp(back + 10_000)).result.is_ok());
}

#[test]
fn a_clock_stepped_back_moves_probe_leases_and_failure_windows_along() {
    // A probe that never reports frees its slot after probe_timeout on the new clock.
    let cfg = consecutive(1).with_probe_timeout_ms(5_000);
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, at(0));
    let _lost = b.acquire(at(10_000)).result.unwrap();
    let back = T0 + 10_000 - 600_000;
    assert!(
        b.acquire(Timestamp(back)).result.is_err(),
        "the slot is taken"
    );
    assert!(
        b.acquire(Timestamp(back + 5_000)).result.is_ok(),
        "freed after 5 s"
    );
    // Failures in a window: the ones before the step still count after it.
    let cfg = BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: 3,
        window_ms: 60_000,
    });
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, at(0));
    let _ = fail(&mut b, at(1_000));
    let back = T0 + 1_000 - 600_000;
    assert_eq!(fail(&mut b, Timestamp(back + 1)).unwrap().to, State::Open);
}

#[test]
fn record_without_permits_follows_the_seed_000_pattern() {
    let mut b = Breaker::new(consecutive(2).with_half_open_success_threshold(2)).unwrap();
    let _ = b.record(at(0), Outcome::Failure);
    assert_eq!(b.record(at(1), Outcome::Failure).unwrap().to, State::Open);
    // isHealthy() is acquire; the outcome comes back without the permit.
    let _probe = b.acquire(at(10_001)).result.unwrap();
    assert!(b.acquire(at(10_001)).result.is_err(), "one probe at a time");
    assert_eq!(b.record(at(10_002), Outcome::Success), None);
    let _probe = b.acquire(at(10_003)).result.unwrap();
    assert_eq!(
        b.record(at(10_004), Outcome::Success).unwrap().to,
        State::Closed
    );
    // With no probe outstanding, a half-open report is not invented.
    let mut b = Breaker::new(consecutive(1)).unwrap();
    let _ = b.record(at(0), Outcome::Failure);
    assert_eq!(b.record(at(5), Outcome::Success), None);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn extreme_times_do_not_overflow() {
    let cfg = consecutive(1)
        .with_open_duration_ms(1 << 52)
        .with_open_backoff(1e300, 1 << 52)
        .with_open_jitter(0.999);
    let mut b = Breaker::new(cfg).unwrap();
    let _ = fail(&mut b, Timestamp(u64::MAX - 1));
    assert_eq!(b.open_until(), Some(Timestamp(u64::MAX)));
    let r = b.acquire(Timestamp(u64::MAX - 1)).result.unwrap_err();
    assert_eq!(r.retry_after_ms, 1);
    let _ = b.acquire(Timestamp(u64::MAX));
    let _ = b.acquire(Timestamp(u64::MAX));
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn every_invalid_configuration_names_its_field() {
    let base = BreakerConfig::new();
    let cases: Vec<(BreakerConfig, &str)> = vec![
        (
            base.with_trip(TripRule::ConsecutiveFailures { threshold: 0 }),
            "trip.threshold",
        ),
        (
            base.with_trip(TripRule::FailuresInWindow {
                threshold: 5,
                window_ms: 0,
            }),
            "trip.window_ms",
        ),
        (
            base.with_trip(TripRule::FailuresInWindow {
                threshold: 1_000_000,
                window_ms: 10,
            }),
            "trip.threshold",
        ),
        (
            base.with_trip(TripRule::FailureRate {
                threshold_percent: f64::NAN,
                minimum_calls: 1,
                window: Window::Calls(10),
            }),
            "trip.threshold_percent",
        ),
        (
            base.with_trip(TripRule::FailureRate {
                threshold_percent: 101.0,
                minimum_calls: 1,
                window: Window::Calls(10),
            }),
            "trip.threshold_percent",
        ),
        (
            base.with_trip(TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 0,
                window: Window::Calls(10),
            }),
            "trip.minimum_calls",
        ),
        (
            base.with_trip(TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 5,
                window: Window::Calls(0),
            }),
            "trip.window.calls",
        ),
        (
            base.with_trip(TripRule::SlowCallRate {
                threshold_percent: 50.0,
                slow_call_ms: 0,
                minimum_calls: 5,
                window: Window::Millis(1_000),
            }),
            "trip.slow_call_ms",
        ),
        (
            base.with_trip(TripRule::SlowCallRate {
                threshold_percent: 50.0,
                slow_call_ms: 10,
                minimum_calls: 5,
                window: Window::Millis(0),
            }),
            "trip.window.millis",
        ),
        (base.with_open_jitter(1.0), "open_jitter"),
        (base.with_open_jitter(-0.1), "open_jitter"),
        (base.with_open_jitter(f64::INFINITY), "open_jitter"),
        (base.with_open_backoff(0.5, 300_000), "open_backoff_factor"),
        (
            base.with_open_backoff(f64::NAN, 300_000),
            "open_backoff_factor",
        ),
        (
            base.with_open_backoff(f64::INFINITY, 300_000),
            "open_backoff_factor",
        ),
        (
            base.with_throttle(breakwater::Throttle {
                multiplier: f64::INFINITY,
                ..breakwater::Throttle::new()
            }),
            "throttle.multiplier",
        ),
        (base.with_open_backoff(2.0, 1_000), "max_open_duration_ms"),
        (base.with_open_duration_ms(u64::MAX), "open_duration_ms"),
        (base.with_half_open_max_probes(0), "half_open_max_probes"),
        (
            base.with_half_open_max_probes(5_000),
            "half_open_max_probes",
        ),
        (
            base.with_half_open_success_threshold(0),
            "half_open_success_threshold",
        ),
        (base.with_probe_timeout_ms(0), "probe_timeout_ms"),
    ];
    for (cfg, field) in cases {
        let err = Breaker::new(cfg).unwrap_err();
        assert_eq!(err.field, field, "{cfg:?}");
        let msg = err.to_string();
        assert!(msg.contains(field), "{msg}");
    }
    assert!(Breaker::new(base).is_ok());
}

/// The snapshot without what a host that skips the core counts itself (admissions, successes)
/// and without the last time the breaker saw.
fn without_counts(b: &Breaker) -> breakwater::Snapshot {
    let mut s = b.snapshot();
    s.stats.admitted = 0;
    s.stats.successes = 0;
    s.last_now = 0;
    s
}

#[test]
fn the_fast_path_bits_say_what_a_closed_breaker_may_skip() {
    use breakwater::FastPath;
    let rate = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Calls(10),
    };
    let slow = TripRule::SlowCallRate {
        threshold_percent: 50.0,
        slow_call_ms: 100,
        minimum_calls: 4,
        window: Window::Millis(60_000),
    };
    let window = TripRule::FailuresInWindow {
        threshold: 3,
        window_ms: 60_000,
    };
    let rules = [
        (
            TripRule::ConsecutiveFailures { threshold: 3 },
            FastPath::ADMIT,
        ),
        (window, FastPath::ADMIT),
        (rate, FastPath::ADMIT),
        (slow, FastPath::ADMIT.with(FastPath::TIMED)),
    ];
    for (rule, bits) in rules {
        assert_eq!(rule.fast_path(), bits, "{rule:?}");
        let config = BreakerConfig::new().with_trip(rule);
        // A throttle decides every call: no admission is skipped, and no success is quiet (the
        // main npm module is built without it, and refuses one).
        let throttled = config.with_throttle(breakwater::Throttle {
            multiplier: 2.0,
            window_ms: 60_000,
            minimum_requests: 20,
            max_rejection_probability: 0.8,
        });
        let want = if cfg!(feature = "throttle") {
            bits.without(FastPath::ADMIT)
        } else {
            bits
        };
        assert_eq!(throttled.fast_path(), want, "{rule:?} with a throttle");
        if let Ok(b) = Breaker::new(throttled) {
            assert_eq!(
                b.quiet(),
                breakwater::Quiet::NONE,
                "{rule:?} with a throttle"
            );
        }

        // What the bits claim is true of the core: admitting changes nothing but counts.
        assert_eq!(config.fast_path(), bits);
        let mut b = Breaker::new(config).unwrap();
        let before = without_counts(&b);
        let p = admit(&mut b, at(10));
        assert_eq!(without_counts(&b), before, "{rule:?}: admitting");
        let again = admit(&mut b, at(20));
        assert_eq!(
            again,
            Permit {
                issued_at: at(20),
                ..p
            },
            "{rule:?}: the same permit"
        );
    }
}
