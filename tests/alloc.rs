//! The hot path never touches the heap: after a breaker is built, admitting, reporting,
//! tripping, rejecting, probing, closing again and deciding retries allocate nothing.
//!
//! A counting global allocator wraps the system one. It counts per thread, and only inside
//! [`allocations_in`], so that the test harness (which runs tests on parallel threads and
//! allocates for its own bookkeeping) never shows up in the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use breakwater::{
    AttemptFailure, Breaker, BreakerConfig, CircuitBreaker, Jitter, ManualClock, Outcome,
    RejectReason, RetryBudget, RetryDecision, RetryPolicy, SplitMix64, State, Timestamp, TripRule,
    Window,
};

struct Counting;

thread_local! {
    /// Whether this thread is inside [`allocations_in`].
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Allocations (alloc, alloc_zeroed, realloc) made by this thread while counting.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: a thread being torn down may still allocate; it is never counting then.
    let counting = COUNTING.try_with(Cell::get).unwrap_or(false);
    if counting {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every method forwards to `System` unchanged; the counting touches only const-initialised
// thread-locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns what it returned and how many allocations this thread made meanwhile.
fn allocations_in<T>(f: impl FnOnce() -> T) -> (T, usize) {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATIONS.with(Cell::get))
}

/// Rounds of the full life cycle per breaker.
const ROUNDS: u64 = 1_000;
/// Healthy calls per round.
const HEALTHY: u64 = 200;

const T0: u64 = 1_700_000_000_000;

const SLOW_LIMIT_MS: u64 = 1_000;
/// Bad calls in flight at once while tripping.
const BATCH: usize = 10;

fn rules() -> [TripRule; 6] {
    [
        TripRule::ConsecutiveFailures { threshold: 5 },
        TripRule::FailuresInWindow {
            threshold: 5,
            window_ms: 60_000,
        },
        TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 10,
            window: Window::Calls(20),
        },
        TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 10,
            window: Window::Millis(10_000),
        },
        TripRule::SlowCallRate {
            threshold_percent: 50.0,
            slow_call_ms: SLOW_LIMIT_MS,
            minimum_calls: 10,
            window: Window::Calls(20),
        },
        TripRule::SlowCallRate {
            threshold_percent: 50.0,
            slow_call_ms: SLOW_LIMIT_MS,
            minimum_calls: 10,
            window: Window::Millis(10_000),
        },
    ]
}

/// Jitter and open-period backoff on, so that tripping draws from the generator and grows the
/// open period; two probes in flight, two successes to close.
fn config(rule: TripRule) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(rule)
        .with_open_duration_ms(5_000)
        .with_open_jitter(0.2)
        .with_open_backoff(2.0, 60_000)
        .with_half_open_max_probes(2)
        .with_half_open_success_threshold(2)
        .with_probe_timeout_ms(3_000)
}

/// What one life cycle went through, so the test proves it exercised every path.
#[derive(Debug, Default)]
struct Seen {
    opened_from_closed: u64,
    reopened_from_half_open: u64,
    closed_again: u64,
    rejected_open: u64,
    rejected_half_open_full: u64,
    stale_reports: u64,
}

/// One call of `now` → `now + latency` reporting `outcome`; returns the transition, if any.
fn call(
    breaker: &mut Breaker,
    now: &mut u64,
    outcome: Outcome,
    latency: u64,
) -> Option<breakwater::Transition> {
    let admission = breaker.acquire(Timestamp(*now));
    *now += latency;
    let permit = admission.result.ok()?;
    breaker.report(Timestamp(*now), permit, outcome)
}

/// Drives `breaker` through healthy traffic, a trip, rejections, a failed half-open round, a full
/// half-open slot table, a stale report, an expired lease and a successful close, `ROUNDS` times.
fn life_cycle(breaker: &mut Breaker, now: &mut u64) -> Seen {
    let slow_rule = breaker.config().trip.slow_call_ms().is_some();
    let bad_latency = if slow_rule { SLOW_LIMIT_MS + 500 } else { 5 };
    let bad_outcome = if slow_rule {
        Outcome::Success
    } else {
        Outcome::Failure
    };
    let mut seen = Seen::default();
    for _ in 0..ROUNDS {
        // Healthy: mostly successes, a few failures (fewer than any rule trips on) and ignored
        // calls.
        for i in 0..HEALTHY {
            let outcome = match i % 50 {
                0 => Outcome::Failure,
                7 => Outcome::Ignored,
                _ => Outcome::Success,
            };
            let t = call(breaker, now, outcome, 5);
            assert!(t.is_none(), "healthy traffic tripped: {t:?}");
        }
        // A permit issued while CLOSED, reported after the trip: stale.
        let stale = breaker.acquire(Timestamp(*now)).result.expect("closed");

        // Trip: batches of concurrent bad calls (a time window only fills with slow calls if
        // they overlap). Reports after the tripping one are stale.
        let mut tripped = false;
        for _ in 0..100 {
            let mut batch = [None; BATCH];
            for slot in &mut batch {
                *slot = breaker.acquire(Timestamp(*now)).result.ok();
            }
            *now += bad_latency;
            for permit in batch.into_iter().flatten() {
                if let Some(t) = breaker.report(Timestamp(*now), permit, bad_outcome) {
                    assert_eq!((t.from, t.to), (State::Closed, State::Open));
                    tripped = true;
                }
            }
            if tripped {
                break;
            }
        }
        assert!(tripped, "never tripped");
        seen.opened_from_closed += 1;
        assert!(breaker
            .report(Timestamp(*now), stale, Outcome::Failure)
            .is_none());

        // Rejected while OPEN.
        for _ in 0..10 {
            let r = breaker.acquire(Timestamp(*now)).result.expect_err("open");
            assert_eq!(r.reason, RejectReason::Open);
            seen.rejected_open += 1;
            *now += 1;
        }
        // A permit-less report while OPEN only counts in the statistics.
        assert!(breaker.record(Timestamp(*now), Outcome::Failure).is_none());

        // Half-open: two probes, a third caller is turned away, one probe fails: OPEN again.
        *now = breaker.open_until().expect("open").0;
        let first = breaker.acquire(Timestamp(*now));
        assert_eq!(first.transition.map(|t| t.to), Some(State::HalfOpen));
        let first = first.result.expect("probe");
        let second = breaker.acquire(Timestamp(*now)).result.expect("probe");
        let full = breaker.acquire(Timestamp(*now)).result.expect_err("full");
        assert_eq!(full.reason, RejectReason::HalfOpenFull);
        seen.rejected_half_open_full += 1;
        *now += bad_latency;
        let t = breaker.report(Timestamp(*now), first, bad_outcome);
        assert_eq!(
            t.map(|t| (t.from, t.to)),
            Some((State::HalfOpen, State::Open))
        );
        seen.reopened_from_half_open += 1;
        // The other probe of the failed round reports late: stale.
        assert!(breaker
            .report(Timestamp(*now), second, Outcome::Success)
            .is_none());

        // Half-open again: one probe is lost (its lease expires), then two succeed: CLOSED.
        *now = breaker.open_until().expect("open").0;
        let lost = breaker.acquire(Timestamp(*now)).result.expect("probe");
        let _ = black_box(lost);
        *now += 3_000; // the probe timeout
        let a = breaker.acquire(Timestamp(*now)).result.expect("probe");
        let b = breaker.acquire(Timestamp(*now)).result.expect("probe");
        *now += 5;
        assert!(breaker
            .report(Timestamp(*now), a, Outcome::Success)
            .is_none());
        let t = breaker.report(Timestamp(*now), b, Outcome::Success);
        assert_eq!(
            t.map(|t| (t.from, t.to)),
            Some((State::HalfOpen, State::Closed))
        );
        seen.closed_again += 1;

        // Leave the time windows behind so that the next round starts clean.
        *now += 70_000;
    }
    seen.stale_reports = breaker.stats().stale;
    seen
}

fn check(rule: &TripRule, seen: &Seen) {
    assert_eq!(seen.opened_from_closed, ROUNDS, "{rule:?}: {seen:?}");
    assert_eq!(seen.reopened_from_half_open, ROUNDS, "{rule:?}: {seen:?}");
    assert_eq!(seen.closed_again, ROUNDS, "{rule:?}: {seen:?}");
    assert_eq!(seen.rejected_open, 10 * ROUNDS, "{rule:?}: {seen:?}");
    assert_eq!(seen.rejected_half_open_full, ROUNDS, "{rule:?}: {seen:?}");
    assert!(seen.stale_reports >= 2 * ROUNDS, "{rule:?}: {seen:?}");
}

#[test]
fn counter_sees_an_allocation() {
    // The guard for every other test here: were the counter blind, they would pass vacuously.
    let (_, n) = allocations_in(|| black_box(Box::new(black_box(7u64))));
    assert!(n >= 1, "the counting allocator missed an allocation");
    let (_, n) = allocations_in(|| black_box(1u64 + 1));
    assert_eq!(n, 0, "the counting allocator counted a phantom allocation");
}

#[test]
fn breaker_life_cycle_allocates_nothing_under_every_trip_rule() {
    for rule in rules() {
        let mut breaker = Breaker::new(config(rule)).expect("valid configuration");
        let mut now = T0;
        let (seen, n) = allocations_in(|| life_cycle(&mut breaker, &mut now));
        assert_eq!(n, 0, "{rule:?}: {n} allocations on the hot path");
        check(&rule, &seen);
    }
}

#[test]
fn restored_breaker_allocates_nothing() {
    for rule in rules() {
        // Snapshot mid-window (half-full rings), restore, and carry on.
        let mut breaker = Breaker::new(config(rule)).expect("valid configuration");
        let mut now = T0;
        for outcome in [Outcome::Success, Outcome::Failure, Outcome::Success] {
            assert!(call(&mut breaker, &mut now, outcome, 5).is_none());
        }
        now += 70_000; // past every window, so the old failure cannot help trip
        let snapshot = breaker.snapshot();
        let mut restored = Breaker::restore(config(rule), snapshot).expect("restorable");
        let (seen, n) = allocations_in(|| life_cycle(&mut restored, &mut now));
        assert_eq!(n, 0, "{rule:?}: {n} allocations after a restore");
        check(&rule, &seen);
    }
}

#[test]
fn cloned_breaker_allocates_nothing() {
    let counts = rules().map(|rule| {
        let breaker = Breaker::new(config(rule)).expect("valid configuration");
        let mut clone = breaker.clone();
        let mut now = T0;
        let (_, n) = allocations_in(|| life_cycle(&mut clone, &mut now));
        (rule, n)
    });
    assert!(
        counts.iter().all(|&(_, n)| n == 0),
        "allocations in a cloned breaker: {counts:?}"
    );
}

#[test]
fn disabled_and_isolated_breakers_allocate_nothing() {
    let mut breaker = Breaker::new(config(TripRule::ConsecutiveFailures { threshold: 1 }))
        .expect("valid configuration");
    let mut now = T0;
    let (_, n) = allocations_in(|| {
        breaker.set_disabled(Timestamp(now), true);
        for _ in 0..1_000 {
            assert!(call(&mut breaker, &mut now, Outcome::Failure, 1).is_none());
        }
        breaker.set_disabled(Timestamp(now), false);
        let _ = breaker.isolate(Timestamp(now));
        for _ in 0..1_000 {
            let r = breaker
                .acquire(Timestamp(now))
                .result
                .expect_err("isolated");
            assert_eq!(r.reason, RejectReason::Isolated);
            now += 1;
        }
        let _ = breaker.reset(Timestamp(now));
        for _ in 0..1_000 {
            let _ = call(&mut breaker, &mut now, Outcome::Success, 1);
        }
    });
    assert_eq!(n, 0, "{n} allocations");
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn facade_calls_allocate_nothing() {
    let clock = ManualClock::new(Timestamp(T0));
    let config = config(TripRule::ConsecutiveFailures { threshold: 3 });
    let mut breaker = CircuitBreaker::new("anthropic", config, clock.clone()).expect("valid");
    let transitions = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&transitions);
    breaker.on_transition(move |_name, _t| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    let (_, n) = allocations_in(|| {
        for i in 0..10_000u32 {
            let r = breaker.call(|| if i % 50 < 5 { Err(i) } else { Ok(i) });
            if matches!(r, Err(breakwater::Error::Rejected(_))) {
                clock.advance(1_000);
            }
            clock.advance(10);
        }
    });
    assert_eq!(n, 0, "{n} allocations in CircuitBreaker::call");
    assert!(breaker.stats().opened > 0, "never tripped");
    assert!(
        transitions.load(Ordering::Relaxed) > 0,
        "no transition reached the listener"
    );
}

#[test]
fn retry_decisions_allocate_nothing() {
    let jitters = [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Proportional(0.3),
    ];
    for jitter in jitters {
        let policy = RetryPolicy::new()
            .with_max_attempts(6)
            .with_base_delay_ms(100)
            .with_deadline_ms(Some(120_000))
            .with_jitter(jitter);
        policy.validate().expect("valid policy");
        let mut budget = RetryBudget::new(10_000, 1, 20.0).expect("valid budget");
        let mut rng = SplitMix64::new(7);
        let mut now = T0;
        let mut retries = 0u32;
        let mut give_ups = 0u32;
        let (_, n) = allocations_in(|| {
            for call in 0..5_000u64 {
                budget.deposit(Timestamp(now));
                let mut state = policy.start(Timestamp(now));
                loop {
                    let failure = AttemptFailure {
                        retryable: call % 10 != 0,
                        retry_after_ms: match call % 7 {
                            0 => Some(2_000),
                            1 => Some(600_000), // longer than allowed: give up
                            _ => None,
                        },
                    };
                    let budget = (call % 2 == 0).then_some(&mut budget);
                    match policy.decide(&mut state, Timestamp(now), failure, &mut rng, budget) {
                        RetryDecision::Retry { delay_ms, .. } => {
                            retries += 1;
                            now += delay_ms;
                        }
                        RetryDecision::GiveUp(_) => {
                            give_ups += 1;
                            break;
                        }
                    }
                }
                now += 10;
            }
        });
        assert_eq!(n, 0, "{jitter:?}: {n} allocations in RetryPolicy::decide");
        assert!(retries > 0 && give_ups == 5_000, "{jitter:?}");
    }
}
