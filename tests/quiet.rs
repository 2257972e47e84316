//! The quiet answer ([`Breaker::quiet`], [`Breaker::record_quiet`]): a host that counts alone
//! what the core lets it (admissions of its CLOSED permit, quiet successes) and hands the
//! counts over before anything else reaches the core behaves exactly as one that reports every
//! call. Random traces of every trip rule (the reference model's generators, tests/model.rs,
//! checks the plain breaker) drive both side by side: every transition, state, generation and
//! (with the counts not yet handed over added) statistic agrees after every step, and the whole
//! snapshot agrees once the counts are handed over.

use breakwater::{
    Breaker, BreakerConfig, FastPath, Mode, Outcome, Permit, PermitKind, Quiet, State, Stats,
    Timestamp, Transition, TripRule, Window, CLOCK_STEP_MS,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// A host that batches as the npm package and the Rust facade do.
struct Batching {
    core: Breaker,
    /// The CLOSED generation whose permit admissions reuse, when admitting may skip the core.
    closed: Option<u32>,
    quiet: Quiet,
    /// Counted alone since `quiet` was read.
    admitted: u64,
    successes: u32,
    /// The latest time of a call counted alone (handed over with them, so that the breaker sees
    /// the times it would have seen).
    last: u64,
}

impl Batching {
    fn new(config: BreakerConfig) -> Self {
        let mut b = Batching {
            core: Breaker::new(config).unwrap(),
            closed: None,
            quiet: Quiet::NONE,
            admitted: 0,
            successes: 0,
            last: 0,
        };
        b.refresh();
        b
    }

    /// Hands the counts over, runs `f` on the core, reads its answers again.
    fn with<R>(&mut self, f: impl FnOnce(&mut Breaker) -> R) -> (Option<Transition>, R) {
        let t = self.flush();
        let r = f(&mut self.core);
        self.refresh();
        (t, r)
    }

    fn flush(&mut self) -> Option<Transition> {
        let (admitted, successes) = (self.admitted, self.successes);
        self.admitted = 0;
        self.successes = 0;
        if admitted == 0 && successes == 0 {
            return None;
        }
        let at = Timestamp(self.last.max(self.core.latest().0));
        self.core.record_quiet(at, admitted, successes.into())
    }

    fn refresh(&mut self) {
        let closed = self.core.state() == State::Closed && self.core.mode() == Mode::Automatic;
        let fast = self.core.config().fast_path().contains(FastPath::ADMIT);
        self.closed = (closed && fast).then(|| self.core.generation());
        self.quiet = self.core.quiet();
        self.last = 0;
    }

    fn acquire(&mut self, now: Timestamp) -> Result<Permit, ()> {
        if let Some(generation) = self.closed {
            self.admitted += 1;
            // A clock that went back reads as no time passed, as the breaker would read it.
            self.last = self.last.max(now.0).max(self.core.latest().0);
            return Ok(Permit {
                generation,
                kind: PermitKind::Normal,
                issued_at: Timestamp(self.last),
            });
        }
        let (t, a) = self.with(|core| core.acquire(now));
        assert_eq!(t, None, "handing over quiet counts never opens");
        a.result.map_err(|_| ())
    }

    fn report(&mut self, now: Timestamp, permit: Permit, outcome: Outcome) -> Option<Transition> {
        // The time as the breaker would read it: a clock that went back by less than
        // `CLOCK_STEP_MS` reads as no time passed (further back, the breaker steps back with it:
        // that report goes to the core).
        let seen = self.last.max(self.core.latest().0);
        let read = Timestamp(now.0.max(seen));
        let quiet = outcome == Outcome::Success
            && permit.kind == PermitKind::Normal
            && self.closed == Some(permit.generation)
            && self.successes < self.quiet.successes
            && now.0 + CLOCK_STEP_MS >= seen
            && self.quiet.admits(permit.issued_at, read);
        if quiet {
            self.successes += 1;
            self.last = read.0;
            return None;
        }
        let (t, r) = self.with(|core| core.report(now, permit, outcome));
        assert_eq!(t, None, "handing over quiet counts never opens");
        r
    }

    /// The statistics as the host shows them: the core's and its own counts.
    fn stats(&self) -> Stats {
        let mut s = *self.core.stats();
        s.admitted += self.admitted;
        s.successes += u64::from(self.successes);
        s
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Advance(u64),
    Rewind(u64),
    Acquire,
    Report { pick: usize, outcome: Outcome },
    ReportSlow { pick: usize, failure: bool },
    Reset,
    Isolate,
    SetDisabled(bool),
    RoundTrip,
}

fn op() -> impl Strategy<Value = Op> {
    let outcome = prop_oneof![
        12 => Just(Outcome::Success),
        2 => Just(Outcome::Failure),
        1 => Just(Outcome::Ignored),
    ];
    prop_oneof![
        15 => prop_oneof![6 => 0u64..20, 3 => 20u64..200, 1 => 200u64..3_000].prop_map(Op::Advance),
        2 => (1u64..300).prop_map(Op::Rewind),
        30 => Just(Op::Acquire),
        30 => (0usize..4, outcome).prop_map(|(pick, outcome)| Op::Report { pick, outcome }),
        3 => (0usize..4, any::<bool>()).prop_map(|(pick, failure)| Op::ReportSlow { pick, failure }),
        1 => Just(Op::Reset),
        1 => Just(Op::Isolate),
        1 => any::<bool>().prop_map(Op::SetDisabled),
        1 => Just(Op::RoundTrip),
    ]
}

fn window() -> impl Strategy<Value = Window> {
    prop_oneof![
        (1u32..=12).prop_map(Window::Calls),
        (1u64..=40).prop_map(|k| Window::Millis(k * 10)),
        (1u64..=3_000).prop_map(Window::Millis),
    ]
}

fn trip() -> impl Strategy<Value = TripRule> {
    let percent = prop_oneof![Just(100.0), Just(50.0), Just(1.0), 0.1f64..=100.0];
    prop_oneof![
        (1u32..=4).prop_map(|threshold| TripRule::ConsecutiveFailures { threshold }),
        (1u32..=4, 1u64..=300).prop_map(|(threshold, window_ms)| TripRule::FailuresInWindow {
            threshold,
            window_ms
        }),
        (percent.clone(), 1u32..=12, window()).prop_map(
            |(threshold_percent, minimum_calls, window)| {
                TripRule::FailureRate {
                    threshold_percent,
                    minimum_calls,
                    window,
                }
            }
        ),
        (percent, 1u64..=100, 1u32..=12, window()).prop_map(
            |(threshold_percent, slow_call_ms, minimum_calls, window)| TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            }
        ),
    ]
}

/// Reports the `pick`-th newest held permit to both.
fn report(
    plain: &mut Breaker,
    host: &mut Batching,
    held: &mut Vec<(Permit, Permit)>,
    pick: usize,
    outcome: Outcome,
    now: Timestamp,
) -> (Option<Transition>, Option<Transition>) {
    let (p, h) = held.remove(held.len() - 1 - pick % held.len());
    (plain.report(now, p, outcome), host.report(now, h, outcome))
}

fn run(trip: TripRule, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let config = BreakerConfig::new()
        .with_trip(trip)
        .with_open_duration_ms(50)
        .with_probe_timeout_ms(40);
    let mut plain = Breaker::new(config).unwrap();
    let mut host = Batching::new(config);
    let mut clock = start;
    // Each permit as both hosts hold it.
    let mut held: Vec<(Permit, Permit)> = Vec::new();
    let mut free = false;
    for (step, &op) in ops.iter().enumerate() {
        let t = Timestamp(clock);
        let (want, got) = match op {
            Op::Advance(ms) => {
                clock += ms;
                (None, None)
            }
            Op::Rewind(ms) => {
                clock = clock.saturating_sub(ms);
                (None, None)
            }
            Op::Acquire => {
                let p = plain.acquire(t).result;
                let h = host.acquire(t);
                prop_assert_eq!(p.is_ok(), h.is_ok(), "step {}: admitted", step);
                if let (Ok(p), Ok(h)) = (p, h) {
                    prop_assert_eq!(p.generation, h.generation, "step {}", step);
                    held.push((p, h));
                }
                (None, None)
            }
            Op::Report { pick, outcome } if !held.is_empty() => {
                report(&mut plain, &mut host, &mut held, pick, outcome, t)
            }
            Op::ReportSlow { pick, failure } if !held.is_empty() => {
                let issued = held[held.len() - 1 - pick % held.len()].0.issued_at.0;
                clock = clock.max(issued) + trip.slow_call_ms().unwrap_or(0) + 1;
                let outcome = if failure {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                report(
                    &mut plain,
                    &mut host,
                    &mut held,
                    pick,
                    outcome,
                    Timestamp(clock),
                )
            }
            Op::Report { .. } | Op::ReportSlow { .. } => (None, None),
            Op::Reset => (plain.reset(t), host.with(|c| c.reset(t)).1),
            Op::Isolate => (plain.isolate(t), host.with(|c| c.isolate(t)).1),
            Op::SetDisabled(d) => {
                plain.set_disabled(t, d);
                host.with(|c| c.set_disabled(t, d));
                (None, None)
            }
            Op::RoundTrip => {
                // A snapshot is a read: the counts are handed over first.
                let (_, snapshot) = host.with(|c| c.snapshot());
                prop_assert_eq!(&snapshot, &plain.snapshot(), "step {}: snapshot", step);
                host.core = Breaker::restore(config, snapshot).unwrap();
                host.refresh();
                (None, None)
            }
        };
        prop_assert_eq!(want, got, "step {}: {:?}", step, op);
        // A free answer holds while the breaker stays CLOSED and automatic.
        if free
            && host.core.state() == State::Closed
            && host.core.mode() == Mode::Automatic
            && !matches!(op, Op::Reset | Op::RoundTrip)
        {
            prop_assert_eq!(
                plain.quiet(),
                Quiet::FREE,
                "step {}: {:?} after a free answer",
                step,
                op
            );
        }
        free = plain.quiet() == Quiet::FREE;
        prop_assert_eq!(plain.state(), host.core.state(), "step {}: state", step);
        prop_assert_eq!(plain.generation(), host.core.generation(), "step {}", step);
        prop_assert_eq!(*plain.stats(), host.stats(), "step {}: stats", step);
        prop_assert_eq!(plain.open_until(), host.core.open_until(), "step {}", step);
    }
    prop_assert_eq!(host.flush(), None);
    host.refresh();
    prop_assert_eq!(plain.snapshot(), host.core.snapshot(), "at the end");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 5_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_host_that_counts_quiet_calls_alone_behaves_as_one_that_reports_each(
        trip in trip(),
        start in prop_oneof![0u64..1_000, 1_700_000_000_000u64..1_700_000_001_000],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run(trip, start, &ops)?;
    }
}

/// The answer itself, rule by rule: what may be counted alone, and until when.
#[test]
fn each_rule_says_how_many_successes_cannot_open_it() {
    let at = Timestamp;
    // The consecutive rule: a success never opens, whatever the run of failures.
    let mut b = Breaker::new(BreakerConfig::new()).unwrap();
    let p = b.acquire(at(1_000)).result.unwrap();
    assert_eq!(b.report(at(1_000), p, Outcome::Failure), None);
    let q = b.quiet();
    assert_eq!(
        (q.successes, q.until, q.slow_call_ms),
        (u32::MAX, at(u64::MAX), u64::MAX)
    );

    // A failure rate over 10 calls, at least 4, 50 %: below the minimum, the successes that
    // keep the window there are quiet (after 1 failure: 2; after 2: 1); the one that brings it
    // to 4 calls is reported, since it may open (2 of 4 is 50 %); past the minimum, any number.
    let rate = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Calls(10),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(rate)).unwrap();
    let fail = |b: &mut Breaker| {
        let p = b.acquire(at(1_000)).result.unwrap();
        b.report(at(1_000), p, Outcome::Failure)
    };
    assert_eq!(b.quiet().successes, 0, "the first call derives the window");
    assert_eq!(fail(&mut b), None);
    assert_eq!(b.quiet().successes, 2);
    assert_eq!(
        b.quiet().until,
        at(u64::MAX),
        "a count window needs no time"
    );
    assert_eq!(fail(&mut b), None);
    assert_eq!(b.quiet().successes, 1);
    // The core's answer holds: the first success is quiet, the second opens.
    assert_eq!(b.record_quiet(at(1_000), 0, 1), None);
    assert_eq!(b.quiet().successes, 0);
    let p = b.acquire(at(1_000)).result.unwrap();
    let t = b
        .report(at(1_000), p, Outcome::Success)
        .expect("the fourth call opens");
    assert_eq!(t.to, State::Open);
    assert_eq!(b.quiet(), Quiet::NONE, "nothing is quiet outside CLOSED");
    // Past its minimum at a rate below the threshold, a count window lets every success be
    // quiet, and a failure that does not open keeps it so.
    let mut b = Breaker::new(BreakerConfig::new().with_trip(rate)).unwrap();
    for outcome in [
        Outcome::Success,
        Outcome::Failure,
        Outcome::Success,
        Outcome::Success,
    ] {
        let p = b.acquire(at(1_000)).result.unwrap();
        assert_eq!(b.report(at(1_000), p, outcome), None);
    }
    assert_eq!(b.quiet(), Quiet::FREE);
    assert_eq!(fail(&mut b), None, "2 of 5 is 40 %");
    assert_eq!(b.quiet(), Quiet::FREE);

    // A time window: quiet until its current bucket (1 s of a 10 s window) ends.
    let timed = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Millis(10_000),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(timed)).unwrap();
    let p = b.acquire(at(12_345)).result.unwrap();
    assert_eq!(b.report(at(12_345), p, Outcome::Success), None);
    assert_eq!(b.quiet().until, at(13_000));

    // The slow-call rule: quiet successes are the fast ones.
    let slow = TripRule::SlowCallRate {
        threshold_percent: 50.0,
        slow_call_ms: 300,
        minimum_calls: 4,
        window: Window::Calls(10),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(slow)).unwrap();
    assert_eq!(b.quiet().successes, 0, "the first call derives the window");
    let p = b.acquire(at(0)).result.unwrap();
    assert_eq!(b.report(at(0), p, Outcome::Success), None);
    let q = b.quiet();
    assert_eq!(q.slow_call_ms, 300);
    assert!(q.admits(at(0), at(300)));
    assert!(!q.admits(at(0), at(301)));
}

/// The defect fixed earlier holds under batching: a success that brings a count window to its
/// minimum of calls at the rate opens the breaker, and is never counted alone.
#[test]
fn the_success_that_reaches_the_minimum_at_the_rate_is_reported() {
    let rule = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Calls(100),
    };
    let mut host = Batching::new(BreakerConfig::new().with_trip(rule));
    let at = Timestamp(5_000);
    for outcome in [Outcome::Failure, Outcome::Failure, Outcome::Success] {
        let p = host.acquire(at).unwrap();
        assert_eq!(host.report(at, p, outcome), None);
    }
    assert_eq!(
        host.successes, 1,
        "the third call's success was counted alone"
    );
    let p = host.acquire(at).unwrap();
    let t = host.report(at, p, Outcome::Success);
    assert_eq!(
        t.map(|t| t.to),
        Some(State::Open),
        "the fourth call opens, at 50 %"
    );
    assert_eq!(host.core.stats().successes, 2);
}

/// Handing over more than the answer allowed (a host that does not keep to it) still counts as
/// reporting each would: the success that opens opens, the rest count as stale.
#[test]
fn handing_over_too_many_successes_opens_where_reporting_each_would() {
    let rule = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 4,
        window: Window::Millis(10_000),
    };
    let mut b = Breaker::new(BreakerConfig::new().with_trip(rule)).unwrap();
    for _ in 0..2 {
        let p = b.acquire(Timestamp(100)).result.unwrap();
        assert_eq!(b.report(Timestamp(100), p, Outcome::Failure), None);
    }
    let t = b.record_quiet(Timestamp(200), 5, 10).expect("opens");
    assert_eq!((t.to, t.at), (State::Open, Timestamp(200)));
    assert_eq!(b.stats().successes, 10);
    assert_eq!(b.stats().admitted, 7);
    // After the transition, handed-over successes are stale.
    assert_eq!(b.record_quiet(Timestamp(300), 0, 3), None);
    assert_eq!(b.stats().stale, 3);
}
