//! The Rust host: `CircuitBreaker::call`, the registry, names and errors.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
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
    let mut b = CircuitBreaker::new("tool", one_strike(), clock.clone()).unwrap();
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
    let mut b = CircuitBreaker::new("llm", one_strike(), clock).unwrap();
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
    let mut b = CircuitBreaker::new("llm", one_strike(), clock).unwrap();
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
    let heard = Rc::new(RefCell::new(Vec::new()));
    let sink = heard.clone();
    b.on_transition(move |name, t| sink.borrow_mut().push((name.to_string(), t.from, t.to)));
    let _ = b.call(|| Err::<(), _>(()));
    clock.advance(1_000);
    let _ = b.call(|| Ok::<_, ()>(()));
    b.isolate();
    b.reset();
    let names: Vec<_> = heard.borrow().iter().map(|(_, f, t)| (*f, *t)).collect();
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
    assert!(heard.borrow().iter().all(|(n, _, _)| n == "llm"));
}

#[test]
fn the_registry_keeps_one_breaker_per_name() {
    let clock = ManualClock::new(Timestamp(0));
    let mut reg = Registry::new(one_strike(), clock);
    let _ = reg.get("anthropic").unwrap().call(|| Err::<(), _>(()));
    assert_eq!(reg.get("anthropic").unwrap().state(), State::Open);
    assert_eq!(reg.get("openai").unwrap().state(), State::Closed);
    let custom = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 9 });
    let b = reg.get_with("tool:search", custom).unwrap();
    assert_eq!(b.core().config().trip, custom.trip);
    assert_eq!(reg.names().count(), 3);
    assert!(matches!(reg.get("no spaces"), Err(BuildError::Name(_))));
    assert!(matches!(
        reg.get_with("ok", BreakerConfig::new().with_probe_timeout_ms(0)),
        Err(BuildError::Config(e)) if e.field == "probe_timeout_ms"
    ));
    assert_eq!(reg.names().count(), 3, "failed builds add nothing");
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
    let mut b = CircuitBreaker::new("x", one_strike(), clock).unwrap();
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
