//! The Rust host: `CircuitBreaker::call`, the registry, names and errors.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use breakwater::{
    validate_name, BreakerConfig, BuildError, CircuitBreaker, Error, ManualClock, Outcome,
    Registry, State, Timestamp, TripRule,
};

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn one_strike() -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
        .with_open_duration_ms(1_000)
}

#[test]
fn call_runs_the_closure_only_when_admitted() {
    let clock = ManualClock::new(Timestamp(0));
    let b = CircuitBreaker::new("tool", one_strike(), clock.clone()).unwrap();
    let mut ran = 0;
    let r: Result<u32, Error<&str>> = b.call(|| {
        ran += 1;
        Err("boom")
    });
    assert_eq!(r, Err(Error::Inner("boom")));
    let r: Result<u32, Error<&str>> = b.call(|| {
        ran += 1;
        Ok(1)
    });
    assert!(r.unwrap_err().is_rejected());
    assert_eq!(ran, 1);
    clock.advance(1_000);
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.call(|| Ok::<_, &str>(7)), Ok(7));
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn call_classified_lets_client_errors_pass_without_counting() {
    let clock = ManualClock::new(Timestamp(0));
    let b = CircuitBreaker::new("llm", one_strike(), clock).unwrap();
    for _ in 0..10 {
        let r = b.call_classified(
            || Err::<(), u16>(400),
            |r| match r {
                Err(400) => Outcome::Ignored,
                Err(_) => Outcome::Failure,
                Ok(_) => Outcome::Success,
            },
        );
        assert_eq!(r, Err(Error::Inner(400)));
    }
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn call_async_awaits_the_future() {
    let clock = ManualClock::new(Timestamp(0));
    let b = CircuitBreaker::new("llm", one_strike(), clock).unwrap();
    assert_eq!(block_on(b.call_async(async { Ok::<_, ()>(5) })), Ok(5));
    assert_eq!(
        block_on(b.call_async(async { Err::<(), _>("529") })),
        Err(Error::Inner("529"))
    );
    assert!(block_on(b.call_async(async { Ok::<_, ()>(()) }))
        .unwrap_err()
        .is_rejected());
}

#[test]
fn listeners_hear_every_transition_after_it_happened() {
    let clock = ManualClock::new(Timestamp(0));
    let mut b = CircuitBreaker::new("llm", one_strike(), clock.clone()).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    b.on_transition(move |name, t| sink.lock().unwrap().push((name.to_string(), t.from, t.to)));
    let _ = b.call(|| Err::<(), _>(()));
    clock.advance(1_000);
    let _ = b.call(|| Ok::<_, ()>(()));
    b.isolate();
    b.reset();
    let names: Vec<_> = heard
        .lock()
        .unwrap()
        .iter()
        .map(|(_, f, t)| (*f, *t))
        .collect();
    assert_eq!(
        names,
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed),
            (State::Closed, State::Open),
            (State::Open, State::Closed),
        ]
    );
    assert!(heard.lock().unwrap().iter().all(|(n, _, _)| n == "llm"));
}

#[test]
fn the_registry_keeps_one_breaker_per_name() {
    let clock = ManualClock::new(Timestamp(0));
    let reg = Registry::new(one_strike(), clock);
    let _ = reg.get("anthropic").unwrap().call(|| Err::<(), _>(()));
    assert_eq!(reg.get("anthropic").unwrap().state(), State::Open);
    assert_eq!(reg.get("openai").unwrap().state(), State::Closed);
    let custom = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 9 });
    let b = reg.get_with("tool:search", custom).unwrap();
    assert_eq!(b.config().trip, custom.trip);
    assert_eq!(reg.names().len(), 3);
    assert!(matches!(reg.get("no spaces"), Err(BuildError::Name(_))));
    assert!(matches!(
        reg.get_with("ok", BreakerConfig::new().with_probe_timeout_ms(0)),
        Err(BuildError::Config(e)) if e.field == "probe_timeout_ms"
    ));
    assert_eq!(reg.names().len(), 3, "failed builds add nothing");
    // One breaker per name, shared: what one holder does, every holder sees.
    let a = reg.get("anthropic").unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &reg.get("anthropic").unwrap()));
    assert_eq!(reg.breakers().len(), 3);
}

#[test]
fn names_are_short_and_plain() {
    for ok in [
        "anthropic",
        "openai/gpt-4o",
        "tool:book_room",
        "a.b-c_d",
        &"x".repeat(128),
    ] {
        assert!(validate_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "has space",
        "ünïcode",
        "semi;colon",
        "new\nline",
        &"x".repeat(129),
    ] {
        let err = validate_name(bad).unwrap_err();
        assert!(err.to_string().contains("invalid breaker name"), "{err}");
    }
    let long = "é".repeat(200);
    let err = validate_name(&long).unwrap_err();
    assert!(err.name.len() <= 160);
}

#[test]
fn errors_display_and_chain() {
    use std::error::Error as _;
    #[derive(Debug)]
    struct Upstream;
    impl std::fmt::Display for Upstream {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("upstream said 529")
        }
    }
    impl std::error::Error for Upstream {}
    let inner: Error<Upstream> = Error::Inner(Upstream);
    assert_eq!(inner.to_string(), "upstream said 529");
    assert!(inner.source().is_some());
    let clock = ManualClock::new(Timestamp(0));
    let b = CircuitBreaker::new("x", one_strike(), clock).unwrap();
    let _ = b.call(|| Err::<(), _>(Upstream));
    let rejected = b.call(|| Ok::<_, Upstream>(())).unwrap_err();
    assert_eq!(rejected.to_string(), "circuit open; retry after 1000 ms");
    assert!(rejected.source().is_none());
    let e = BreakerConfig::new()
        .with_open_jitter(2.0)
        .validate()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid `open_jitter`: 2 (expected a fraction in [0, 1))"
    );
}

// --- Shared between threads and tasks ---

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn the_breaker_is_send_and_sync_and_so_are_its_calls() {
    assert_send_sync::<CircuitBreaker<breakwater::SystemClock>>();
    assert_send_sync::<CircuitBreaker<ManualClock>>();
    assert_send_sync::<breakwater::OwnedCallGuard<ManualClock>>();
    fn assert_send<T: Send>(_: &T) {}
    let b = CircuitBreaker::new("llm", one_strike(), ManualClock::new(Timestamp(0))).unwrap();
    // The future of a call is `Send` when the guarded future is: a tokio task can hold it.
    assert_send(&b.call_async(async { Ok::<_, ()>(()) }));
}

#[test]
fn threads_share_one_breaker_through_an_arc() {
    let clock = ManualClock::new(Timestamp(0));
    let config = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1000 });
    let b = Arc::new(CircuitBreaker::new("llm", config, clock).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let b = Arc::clone(&b);
            std::thread::spawn(move || {
                for i in 0..1_000u32 {
                    let _ = b.call(|| if (i + t) % 10 == 0 { Err(i) } else { Ok(i) });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = b.stats();
    assert_eq!(stats.admitted, 4_000);
    assert_eq!(stats.successes + stats.failures, 4_000);
    assert_eq!(stats.failures, 400);
}

/// A future that never finishes: the upstream hangs.
fn hang() -> impl Future<Output = Result<(), &'static str>> {
    poll_fn(|_| Poll::Pending)
}

/// Polls `fut` once, then drops it: what `tokio::time::timeout` or `select!` do to the loser.
fn poll_once_then_drop<F: Future>(fut: F) {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
}

#[test]
fn a_cancelled_probe_frees_its_slot_at_once_and_counts_nothing() {
    let clock = ManualClock::new(Timestamp(0));
    let b = CircuitBreaker::new("llm", one_strike(), clock.clone()).unwrap();
    let _ = b.call(|| Err::<(), _>("529"));
    clock.advance(1_000);
    let before = b.stats();

    // The probe's caller gives up half-way: its future is dropped while the upstream hangs.
    poll_once_then_drop(b.call_async(hang()));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(
        b.core().probes_in_flight(),
        0,
        "the slot is free, not leased for 30 s"
    );
    let after = b.stats();
    assert_eq!(after.ignored, before.ignored + 1);
    assert_eq!(
        (after.failures, after.successes),
        (before.failures, before.successes)
    );

    // So the next caller probes at once, and closes the circuit.
    assert_eq!(block_on(b.call_async(async { Ok::<_, ()>(1) })), Ok(1));
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn guards_settle_once_and_an_unsettled_one_is_ignored() {
    let clock = ManualClock::new(Timestamp(0));
    let b = Arc::new(CircuitBreaker::new("llm", one_strike(), clock.clone()).unwrap());
    let guard = b.admit().unwrap();
    assert!(guard.permit().is_some());
    drop(guard);
    assert_eq!(b.stats().ignored, 1);
    assert_eq!(b.state(), State::Closed);

    // An owned guard moves into another thread and settles there.
    let owned = b.admit_owned().unwrap();
    std::thread::spawn(move || owned.settle(Outcome::Failure))
        .join()
        .unwrap();
    assert_eq!(b.state(), State::Open);
    let refused = b.admit().unwrap_err();
    assert_eq!(refused.retry_after_ms, 1_000);
    assert_eq!(b.stats().failures, 1);
}

#[test]
fn a_listener_may_call_the_breaker_it_listens_to() {
    use std::sync::{OnceLock, Weak};
    type Handle = OnceLock<Weak<CircuitBreaker<ManualClock>>>;
    let clock = ManualClock::new(Timestamp(0));
    let mut b = CircuitBreaker::new("llm", one_strike(), clock).unwrap();
    let handle: Arc<Handle> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, own) = (Arc::clone(&seen), Arc::clone(&handle));
    // Inside the listener, the breaker is asked again: were the listener run inside the critical
    // section, this would deadlock (std's mutex) or panic (the RefCell of no_std).
    b.on_transition(move |_, t| {
        let me = own.get().and_then(Weak::upgrade).expect("the breaker");
        sink.lock()
            .unwrap()
            .push((t.to, me.state(), me.stats().failures));
    });
    let b = Arc::new(b);
    handle.set(Arc::downgrade(&b)).unwrap();
    let _ = b.call(|| Err::<(), _>(()));
    assert_eq!(*seen.lock().unwrap(), [(State::Open, State::Open, 1)]);
}

#[test]
fn retry_async_waits_what_the_server_asks_and_gives_up_on_a_spent_quota() {
    use breakwater::{retry_async, Classifier, Code, RetryPolicy, SplitMix64};
    let clock = ManualClock::new(Timestamp(0));
    let policy = RetryPolicy::new().with_base_delay_ms(100);
    let classifier = Classifier::new();
    // (status, body, retry-after) as the provider answered each attempt.
    let answers = [
        (
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            Some("7"),
        ),
        (
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            None,
        ),
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            None,
        ),
        (200, "{}", None),
    ];
    let slept = Mutex::new(Vec::new());
    let (result, attempts) = block_on(retry_async(
        &policy,
        &clock,
        &mut SplitMix64::new(1),
        |ms| {
            slept.lock().unwrap().push(ms);
            async {}
        },
        |&(status, body, retry_after): &(u16, &str, Option<&str>)| {
            classifier
                .classify_response(status, Code::in_body(body.as_bytes()), Timestamp(0), |h| {
                    (h == "retry-after").then_some(retry_after).flatten()
                })
                .failure()
        },
        |attempt| {
            let answer = answers[attempt as usize - 1];
            async move {
                if answer.0 >= 400 {
                    Err(answer)
                } else {
                    Ok(answer)
                }
            }
        },
    ));
    assert_eq!(attempts, 3, "the spent quota ends it");
    assert_eq!(result.unwrap_err().0, 429);
    let slept = slept.into_inner().unwrap();
    assert_eq!(slept.len(), 2);
    assert_eq!(slept[0], 7_000, "Retry-After: 7");
    assert!(slept[1] <= 200, "backoff alone: {}", slept[1]);
}

/// A clock that counts its readings.
#[derive(Clone, Default)]
struct CountingClock {
    now: Arc<std::sync::atomic::AtomicU64>,
    reads: Arc<std::sync::atomic::AtomicU64>,
}

impl breakwater::Clock for CountingClock {
    fn now(&self) -> Timestamp {
        use std::sync::atomic::Ordering::SeqCst;
        self.reads.fetch_add(1, SeqCst);
        Timestamp(self.now.load(SeqCst))
    }
}

#[test]
fn a_closed_breaker_reads_the_clock_only_where_the_rule_needs_the_time() {
    use std::sync::atomic::Ordering::SeqCst;
    let clock = CountingClock::default();
    clock.now.store(1_000_000, SeqCst);
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
        .with_open_duration_ms(5_000);
    let b = CircuitBreaker::new("llm", config, clock.clone()).unwrap();
    for _ in 0..100 {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(
        clock.reads.load(SeqCst),
        0,
        "successes under consecutive failures"
    );

    // The failure that trips reads the clock: the open period starts at the real time.
    clock.now.store(2_000_000, SeqCst);
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>(()));
    }
    assert_eq!(clock.reads.load(SeqCst), 3);
    assert_eq!(b.core().open_until(), Some(Timestamp(2_005_000)));
    // OPEN: every admission reads the clock, so that the breaker sees its period end.
    clock.now.store(2_005_000, SeqCst);
    assert_eq!(b.call(|| Ok::<_, ()>(1)), Ok(1), "the probe");
    assert_eq!(b.state(), State::Closed);

    // A rate rule can trip on a success, the one that brings its window to the minimum at the
    // rate: the core says which ([`Breaker::quiet`]), and only reports that can open read the
    // clock (a count window's admissions and quiet successes need no time).
    let clock = CountingClock::default();
    clock.now.store(1_000_000, SeqCst);
    let rate = BreakerConfig::new()
        .with_trip(TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 4,
            window: breakwater::Window::Calls(10),
        })
        .with_open_duration_ms(5_000);
    let b = CircuitBreaker::new("llm", rate, clock.clone()).unwrap();
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>(()));
    }
    clock.now.store(3_000_000, SeqCst);
    b.call(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(b.state(), State::Open, "3 failures in 4 calls");
    assert_eq!(
        b.core().open_until(),
        Some(Timestamp(3_005_000)),
        "opened at the real time"
    );
    // 3 failures, the success that opens, `state()`.
    assert_eq!(clock.reads.load(SeqCst), 3 + 1 + 1);

    // A time window: each success reads the clock (it is quiet until its bucket ends); an
    // admission does not.
    let clock = CountingClock::default();
    clock.now.store(1_000_000, SeqCst);
    let timed = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: breakwater::Window::Millis(10_000),
    });
    let b = CircuitBreaker::new("llm", timed, clock.clone()).unwrap();
    for _ in 0..10 {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(clock.reads.load(SeqCst), 10);
    assert_eq!(b.stats().successes, 10);
}

/// The count-window defect, on the lock-free path: the success that brings the window to its
/// minimum at the rate opens the breaker when it ends (not when something next reads the
/// breaker), and successes counted alone past the minimum are in the window before the next
/// failure; after the open period the breaker recovers by itself.
#[test]
fn a_count_window_opens_on_the_success_that_reaches_it_and_counts_quiet_successes() {
    let rule = || {
        BreakerConfig::new()
            .with_trip(TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 4,
                window: breakwater::Window::Calls(10),
            })
            .with_open_duration_ms(30_000)
    };
    let clock = ManualClock::new(Timestamp(1_700_000_000_000));
    let b = CircuitBreaker::new("llm", rule(), clock.clone()).unwrap();
    for _ in 0..3 {
        let _ = b.call(|| Err::<(), _>(()));
    }
    b.call(|| Ok::<_, ()>(())).unwrap();
    clock.advance(4_000);
    assert_eq!(b.state(), State::Open, "3 failures in 4 calls");
    assert_eq!(
        b.core().open_until(),
        Some(Timestamp(1_700_000_030_000)),
        "open from the success, not from the read 4 s later"
    );
    assert!(b.call(|| Ok::<_, ()>(())).is_err(), "refused while OPEN");
    clock.advance(30_000);
    for _ in 0..3 {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(b.state(), State::Closed, "recovers by itself");

    let b = CircuitBreaker::new("llm", rule(), clock.clone()).unwrap();
    for _ in 0..100 {
        b.call(|| Ok::<_, ()>(())).unwrap();
    }
    let mut failures = 0;
    while b.state() == State::Closed && failures < 20 {
        failures += 1;
        let _ = b.call(|| Err::<(), _>(()));
    }
    assert_eq!(failures, 5, "5 failures in the last 10 calls");
    assert_eq!(b.core().stats().successes, 100);
}

// Under tokio, natively (tokio is not a dev-dependency for wasm32, where `wasm-pack test` builds
// these tests too).
#[cfg(not(target_arch = "wasm32"))]
mod panicking_listener {
    use super::*;

    /// A breaker whose listener panics when it hears OPEN -> HALF_OPEN, opened by one failure.
    fn opened_with_a_panicking_listener(clock: &ManualClock) -> Arc<CircuitBreaker<ManualClock>> {
        let config = one_strike().with_half_open_success_threshold(2);
        let mut b = CircuitBreaker::new("llm", config, clock.clone()).unwrap();
        b.on_transition(|_, t| {
            if (t.from, t.to) == (State::Open, State::HalfOpen) {
                panic!("listener bug");
            }
        });
        let _ = b.call(|| Err::<(), _>("529"));
        assert_eq!(b.state(), State::Open);
        clock.advance(1_000);
        Arc::new(b)
    }

    /// After the panic, one call a second for the probe time-out (30 s): how many were refused, and
    /// the state at the end.
    async fn refusals_after_the_panic(
        clock: &ManualClock,
        b: &Arc<CircuitBreaker<ManualClock>>,
    ) -> (u32, State) {
        assert_eq!(
            b.core().probes_in_flight(),
            0,
            "the probe slot was given back"
        );
        let mut refused = 0;
        for _ in 0..30 {
            if b.call_async(async { Ok::<_, ()>(()) }).await.is_err() {
                refused += 1;
            }
            clock.advance(1_000);
        }
        (refused, b.state())
    }

    #[tokio::test]
    async fn a_listener_that_panics_on_half_open_does_not_keep_the_probe_slot() {
        let clock = ManualClock::new(Timestamp(0));
        let b = opened_with_a_panicking_listener(&clock);
        let probe = Arc::clone(&b);
        let task = tokio::spawn(async move { probe.call_async(async { Ok::<_, ()>(()) }).await });
        assert!(task.await.unwrap_err().is_panic());
        assert_eq!(b.state(), State::HalfOpen);
        // The next calls probe at once and close the circuit (29 refusals when the slot was lost).
        assert_eq!(
            refusals_after_the_panic(&clock, &b).await,
            (0, State::Closed)
        );
    }

    #[tokio::test]
    async fn a_listener_that_panics_on_half_open_does_not_keep_an_owned_probe_slot() {
        let clock = ManualClock::new(Timestamp(0));
        let b = opened_with_a_panicking_listener(&clock);
        // `admit_owned`, as the tower layer admits.
        let probe = Arc::clone(&b);
        let task =
            tokio::spawn(async move { probe.admit_owned().map(|g| g.settle(Outcome::Success)) });
        assert!(task.await.unwrap_err().is_panic());
        assert_eq!(b.state(), State::HalfOpen);
        assert_eq!(
            refusals_after_the_panic(&clock, &b).await,
            (0, State::Closed)
        );
    }
}

/// The lock-free CLOSED path loses no count under contention: threads whose calls mostly succeed
/// (counted alone) and sometimes fail (through the core, which takes the counts first), under a
/// rule that stays CLOSED and under one that opens and recovers, end with every admitted call
/// counted once, as a success or a failure.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn the_lock_free_path_counts_every_call_once_under_contention() {
    use breakwater::SystemClock;
    let rules = [
        TripRule::ConsecutiveFailures { threshold: 1_000 },
        TripRule::FailureRate {
            threshold_percent: 20.0,
            minimum_calls: 50,
            window: breakwater::Window::Calls(100),
        },
        // The run lasts a few milliseconds, one or two buckets: a rate of the whole run.
        TripRule::FailureRate {
            threshold_percent: 2.0,
            minimum_calls: 50,
            window: breakwater::Window::Millis(1_000),
        },
    ];
    for rule in rules {
        let config = BreakerConfig::new()
            .with_trip(rule)
            .with_open_duration_ms(1)
            .with_half_open_success_threshold(1);
        let b = Arc::new(CircuitBreaker::new("llm", config, SystemClock).unwrap());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || {
                    let mut ran = 0u64;
                    for i in 0..20_000u32 {
                        // Bursts of failures now and then, enough to open the rate rules.
                        let fail = (i / 500 + t) % 7 == 0 && i % 3 == 0;
                        if b.call(|| if fail { Err(()) } else { Ok(()) }).is_ok() || fail {
                            ran += 1;
                        }
                    }
                    ran
                })
            })
            .collect();
        let ran: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let s = b.stats();
        assert_eq!(s.admitted, s.successes + s.failures, "{rule:?}: {s:?}");
        assert_eq!(s.admitted + s.rejected, 80_000, "{rule:?}: {s:?}");
        assert!(ran >= s.admitted, "{rule:?}: {s:?}");
        if let TripRule::ConsecutiveFailures { .. } = rule {
            assert_eq!((s.opened, s.rejected), (0, 0), "{rule:?}: {s:?}");
        } else {
            assert!(s.opened > 0, "{rule:?} opened on the bursts: {s:?}");
        }
    }
}
