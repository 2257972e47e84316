//! The worked examples of the articles breakwater comes from, replayed on a manual clock.

use std::cell::Cell;

use breakwater::{
    retry_blocking, AttemptFailure, BreakerConfig, CircuitBreaker, Clock, Error, Jitter,
    ManualClock, RetryPolicy, SplitMix64, State, Timestamp, TripRule,
};

/// Seed 003: a breaker per agent tool, around a whole run of up to 3 attempts. The tool is down
/// for its first 9 real calls. 3 failed runs in a row open the breaker; with time in place of
/// the article's call counts, runs 4 and 5 fall inside the open period and run 6 is the probe.
/// Seven runs cost 11 real calls, not the 21 that seven runs of three attempts could cost.
#[test]
fn seed_003_seven_runs_cost_eleven_real_calls() {
    let clock = ManualClock::new(Timestamp(1_700_000_000_000));
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
        .with_open_duration_ms(25_000);
    let breaker = CircuitBreaker::new("book_room", config, clock.clone()).unwrap();
    let policy = RetryPolicy::new()
        .with_max_attempts(3)
        .with_base_delay_ms(100)
        .with_jitter(Jitter::None);
    let mut rng = SplitMix64::new(3);

    let real_calls = Cell::new(0u32);
    let book_room = || {
        real_calls.set(real_calls.get() + 1);
        if real_calls.get() <= 9 {
            Err("503 from book_room")
        } else {
            Ok("booked")
        }
    };

    let mut log = Vec::new();
    for run in 1..=7 {
        let before = breaker.state();
        let calls_before = real_calls.get();
        let result = breaker.call(|| {
            retry_blocking(
                &policy,
                &clock,
                &mut rng,
                |ms| clock.advance(ms),
                |_| AttemptFailure {
                    retryable: true,
                    retry_after_ms: None,
                },
                |_| book_room(),
            )
            .0
        });
        let outcome = match result {
            Ok(_) => "ok",
            Err(Error::Inner(_)) => "failed",
            Err(Error::Rejected(_)) => "rejected",
        };
        log.push((run, before, outcome, real_calls.get() - calls_before));
        clock.advance(10_000); // the next run comes ten seconds later
    }

    assert_eq!(
        log,
        [
            (1, State::Closed, "failed", 3),
            (2, State::Closed, "failed", 3),
            (3, State::Closed, "failed", 3),
            (4, State::Open, "rejected", 0),
            (5, State::Open, "rejected", 0),
            (6, State::HalfOpen, "ok", 1),
            (7, State::Closed, "ok", 1),
        ]
    );
    assert_eq!(real_calls.get(), 11);
}

/// Seed 000's production settings: 5 failures within 60 s open the circuit; after 30 s one
/// probe goes through; 2 successes close it.
#[test]
fn seed_000_five_failures_in_a_minute_then_one_probe_then_two_successes() {
    let t0 = 1_700_000_000_000;
    let clock = ManualClock::new(Timestamp(t0));
    let config = BreakerConfig::new()
        .with_trip(TripRule::FailuresInWindow {
            threshold: 5,
            window_ms: 60_000,
        })
        .with_open_duration_ms(30_000)
        .with_half_open_success_threshold(2);
    let b = CircuitBreaker::new("anthropic", config, clock.clone()).unwrap();

    // Failures at 0, 10, 20, 30 and 61 s: never five within 60 s.
    for at in [0, 10_000, 20_000, 30_000, 61_000] {
        clock.set(Timestamp(t0 + at));
        let _ = b.call(|| Err::<(), _>("529"));
    }
    assert_eq!(b.state(), State::Closed);
    // One more at 65 s: the last five (10 to 65 s) span 55 s: open.
    clock.set(Timestamp(t0 + 65_000));
    let _ = b.call(|| Err::<(), _>("529"));
    assert_eq!(b.state(), State::Open);

    // 29.999 s later still failing fast, the upstream untouched.
    clock.advance(29_999);
    let ran = Cell::new(0);
    let r = b.call(|| {
        ran.set(ran.get() + 1);
        Ok::<_, ()>(())
    });
    assert!(matches!(r, Err(Error::Rejected(rej)) if rej.retry_after_ms == 1));
    assert_eq!(ran.get(), 0);

    // At 30 s: 50 callers arrive together; exactly one becomes the probe.
    clock.advance(1);
    let mut core = b.core();
    let now = clock.now();
    let admitted: Vec<_> = (0..50)
        .filter_map(|_| core.acquire(now).result.ok())
        .collect();
    assert_eq!(admitted.len(), 1);

    // Through the facade: two successful probes, one after the other, close it.
    assert!(b.call(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.call(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(b.state(), State::Closed);
}
