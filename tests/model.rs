//! A reference model of [`Breaker`], checked against the real one after every step of random
//! traces.
//!
//! The model is written to be obviously right rather than fast, and differently from the real
//! breaker: it keeps every outcome recorded while CLOSED, with its time, and recomputes the trip
//! rule from that history on every call; the half-open probes are a plain list in the order they
//! were admitted, from which expired leases are never removed (a lease is simply "live" while its
//! expiry is in the future); and the open period is recomputed from its definition (the base
//! duration times the backoff factor once per failed half-open round, capped, then jittered by a
//! draw from the same SplitMix64 sequence).
//!
//! Proptest generates configurations (every trip rule, both window kinds, jitter, backoff, probe
//! limits) and traces of up to 60 operations (time moving forwards and backwards, acquiring,
//! reporting with fresh, stale and duplicated permits, slow calls, `record`, isolate, reset,
//! disable, snapshot round trips) and compares every observable after every step.
//!
//! Where the documentation leaves a choice open, the model follows the implementation: a time
//! window's buckets are `max(ms / 10, 1)` ms wide; `FailuresInWindow` spans are half-open
//! (`now - t < window_ms`); `set_disabled` always starts a new generation; a probe permit that
//! reports after its lease expired, or twice, still counts. The regression tests at the end
//! hold three cases this model found where the breaker once departed from its documentation.

use breakwater::{
    Admission, Breaker, BreakerConfig, Mode, Outcome, Permit, PermitKind, Random, RejectReason,
    Rejected, SplitMix64, State, Stats, Timestamp, Transition, TripRule, Window,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// ----- the reference model -----

/// One outcome recorded while CLOSED.
#[derive(Clone, Copy, Debug)]
struct Call {
    at: u64,
    failure: bool,
    slow: bool,
}

/// A half-open probe slot, live while `expires_at` is later than the latest time seen.
#[derive(Clone, Copy, Debug)]
struct Lease {
    id: u32,
    expires_at: u64,
}

#[derive(Clone, Debug)]
struct Reference {
    config: BreakerConfig,
    state: State,
    mode: Mode,
    generation: u32,
    /// The latest time seen: a clock that goes backwards means no time passed.
    latest: u64,
    opened_at: u64,
    open_until: u64,
    failed_rounds: u32,
    probe_successes: u32,
    /// Every lease handed out in this half-open round that has not reported, in admission order.
    /// Expired leases stay in the list; they just stop counting.
    leases: Vec<Lease>,
    next_probe_id: u32,
    /// Every outcome the trip rule was ever fed.
    history: Vec<Call>,
    /// Where the current CLOSED period begins in `history` (the trip rule forgets everything
    /// before it).
    since: usize,
    rng: SplitMix64,
    stats: Stats,
}

impl Reference {
    fn new(config: BreakerConfig) -> Self {
        Reference {
            config,
            state: State::Closed,
            mode: Mode::Automatic,
            generation: 0,
            latest: 0,
            opened_at: 0,
            open_until: 0,
            failed_rounds: 0,
            probe_successes: 0,
            leases: Vec::new(),
            next_probe_id: 0,
            history: Vec::new(),
            since: 0,
            rng: SplitMix64::new(config.seed),
            stats: Stats::default(),
        }
    }

    fn see(&mut self, now: Timestamp) -> u64 {
        self.latest = self.latest.max(now.0);
        self.latest
    }

    fn state_at(&self, now: u64) -> State {
        let elapsed = now.max(self.latest) >= self.open_until;
        if self.state == State::Open && self.mode != Mode::Isolated && elapsed {
            State::HalfOpen
        } else {
            self.state
        }
    }

    fn opened_at(&self) -> Option<Timestamp> {
        (self.state == State::Open).then_some(Timestamp(self.opened_at))
    }

    fn open_until(&self) -> Option<Timestamp> {
        (self.state == State::Open && self.mode != Mode::Isolated)
            .then_some(Timestamp(self.open_until))
    }

    /// Leases not yet expired as of the last call.
    fn probes_in_flight(&self) -> usize {
        self.leases
            .iter()
            .filter(|l| l.expires_at > self.latest)
            .count()
    }

    fn permit(&self, now: u64, kind: PermitKind) -> Permit {
        Permit {
            generation: self.generation,
            kind,
            issued_at: Timestamp(now),
        }
    }

    fn admit(&mut self, now: u64, kind: PermitKind, transition: Option<Transition>) -> Admission {
        self.stats.admitted += 1;
        Admission {
            result: Ok(self.permit(now, kind)),
            transition,
        }
    }

    fn refuse(
        &mut self,
        reason: RejectReason,
        ms: u64,
        transition: Option<Transition>,
    ) -> Admission {
        self.stats.rejected += 1;
        Admission {
            result: Err(Rejected {
                reason,
                retry_after_ms: ms.max(1),
            }),
            transition,
        }
    }

    fn acquire(&mut self, now: Timestamp) -> Admission {
        let now = self.see(now);
        match self.mode {
            Mode::Disabled => return self.admit(now, PermitKind::Bypass, None),
            Mode::Isolated => {
                return self.refuse(RejectReason::Isolated, self.config.open_duration_ms, None)
            }
            Mode::Automatic => {}
        }
        let transition = match self.state {
            State::Closed => return self.admit(now, PermitKind::Normal, None),
            State::Open if now < self.open_until => {
                return self.refuse(RejectReason::Open, self.open_until - now, None)
            }
            State::Open => Some(self.go(State::HalfOpen, now)),
            State::HalfOpen => None,
        };
        let live: Vec<Lease> = self
            .leases
            .iter()
            .copied()
            .filter(|l| l.expires_at > now)
            .collect();
        if live.len() < self.config.half_open_max_probes as usize {
            let id = self.next_probe_id;
            self.next_probe_id += 1;
            self.leases.push(Lease {
                id,
                expires_at: now + self.config.probe_timeout_ms,
            });
            self.admit(now, PermitKind::Probe { id }, transition)
        } else {
            let soonest = live.iter().map(|l| l.expires_at).min().unwrap_or(now + 1);
            self.refuse(RejectReason::HalfOpenFull, soonest - now, transition)
        }
    }

    fn tally(&mut self, outcome: Outcome, slow: bool) {
        match outcome {
            Outcome::Success => self.stats.successes += 1,
            Outcome::Failure => self.stats.failures += 1,
            Outcome::Ignored => self.stats.ignored += 1,
        }
        if slow && outcome != Outcome::Ignored {
            self.stats.slow += 1;
        }
    }

    fn report(&mut self, now: Timestamp, permit: Permit, outcome: Outcome) -> Option<Transition> {
        let now = self.see(now);
        let slow = match self.config.trip {
            TripRule::SlowCallRate { slow_call_ms, .. } => {
                now.saturating_sub(permit.issued_at.0) > slow_call_ms
            }
            _ => false,
        };
        self.tally(outcome, slow);
        if permit.kind == PermitKind::Bypass || self.mode != Mode::Automatic {
            return None;
        }
        if permit.generation != self.generation {
            self.stats.stale += 1;
            return None;
        }
        match (permit.kind, self.state) {
            (PermitKind::Normal, State::Closed) => self.closed_outcome(now, outcome, slow),
            (PermitKind::Probe { id }, State::HalfOpen) => {
                self.leases.retain(|l| l.id != id);
                self.probe_outcome(now, outcome, slow)
            }
            _ => None,
        }
    }

    fn record(&mut self, now: Timestamp, outcome: Outcome) -> Option<Transition> {
        let now = self.see(now);
        self.tally(outcome, false);
        if self.mode != Mode::Automatic {
            return None;
        }
        match self.state {
            State::Closed => self.closed_outcome(now, outcome, false),
            State::Open => None,
            State::HalfOpen => {
                // The oldest live probe: the earliest expiry, the first admitted among equals.
                let mut oldest: Option<usize> = None;
                for (i, l) in self.leases.iter().enumerate() {
                    if l.expires_at > now
                        && oldest.is_none_or(|o| l.expires_at < self.leases[o].expires_at)
                    {
                        oldest = Some(i);
                    }
                }
                self.leases.remove(oldest?);
                self.probe_outcome(now, outcome, false)
            }
        }
    }

    fn isolate(&mut self, now: Timestamp) -> Option<Transition> {
        let now = self.see(now);
        self.mode = Mode::Isolated;
        if self.state == State::Open {
            self.generation += 1;
            return None;
        }
        // Isolation has no open period of its own: once it ends (by disabling), the breaker
        // probes on the next call. (The real breaker leaves `open_until` stale here; see
        // `isolated_breaker_survives_a_snapshot_round_trip`.)
        self.opened_at = now;
        self.open_until = now;
        self.stats.opened += 1;
        Some(self.go(State::Open, now))
    }

    fn reset(&mut self, now: Timestamp) -> Option<Transition> {
        let now = self.see(now);
        self.mode = Mode::Automatic;
        self.failed_rounds = 0;
        if self.state == State::Closed {
            self.since = self.history.len();
            self.generation += 1;
            return None;
        }
        Some(self.go(State::Closed, now))
    }

    fn set_disabled(&mut self, now: Timestamp, disabled: bool) {
        self.see(now);
        if disabled {
            self.mode = Mode::Disabled;
        } else if self.mode == Mode::Disabled {
            self.mode = Mode::Automatic;
        }
        self.generation += 1;
    }

    fn closed_outcome(&mut self, now: u64, outcome: Outcome, slow: bool) -> Option<Transition> {
        let failure = match outcome {
            Outcome::Success => false,
            Outcome::Failure => true,
            Outcome::Ignored => return None,
        };
        self.history.push(Call {
            at: now,
            failure,
            slow,
        });
        if self.rule_fires(now) {
            Some(self.open(now))
        } else {
            None
        }
    }

    /// Recomputes the trip rule from the calls of the current CLOSED period.
    fn rule_fires(&self, now: u64) -> bool {
        let calls = &self.history[self.since..];
        match self.config.trip {
            TripRule::ConsecutiveFailures { threshold } => {
                let run = calls.iter().rev().take_while(|c| c.failure).count();
                run >= threshold as usize
            }
            TripRule::FailuresInWindow {
                threshold,
                window_ms,
            } => {
                let recent = calls
                    .iter()
                    .filter(|c| c.failure && now - c.at < window_ms)
                    .count();
                recent >= threshold as usize
            }
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            } => {
                let (seen, needed) = in_window(calls, window, minimum_calls, now);
                let bad = seen.iter().filter(|c| c.failure).count();
                rate_reached(seen.len(), bad, needed, threshold_percent)
            }
            TripRule::SlowCallRate {
                threshold_percent,
                minimum_calls,
                window,
                ..
            } => {
                let (seen, needed) = in_window(calls, window, minimum_calls, now);
                let bad = seen.iter().filter(|c| c.slow).count();
                rate_reached(seen.len(), bad, needed, threshold_percent)
            }
        }
    }

    fn probe_outcome(&mut self, now: u64, outcome: Outcome, slow: bool) -> Option<Transition> {
        match outcome {
            Outcome::Ignored => None,
            Outcome::Success if !slow => {
                self.probe_successes += 1;
                if self.probe_successes >= self.config.half_open_success_threshold {
                    self.failed_rounds = 0;
                    Some(self.go(State::Closed, now))
                } else {
                    None
                }
            }
            // A failure, or (under a slow-call rule) a slow success: the round failed.
            _ => {
                self.failed_rounds += 1;
                Some(self.open(now))
            }
        }
    }

    fn open(&mut self, now: u64) -> Transition {
        let period = self.open_period();
        self.opened_at = now;
        self.open_until = now.saturating_add(period);
        self.stats.opened += 1;
        self.go(State::Open, now)
    }

    /// The base duration, times the factor once per failed round, capped, then jittered.
    fn open_period(&mut self) -> u64 {
        let c = self.config;
        let mut period = c.open_duration_ms as f64;
        for _ in 0..self.failed_rounds {
            period *= c.open_backoff_factor;
        }
        period = period.min(c.max_open_duration_ms as f64);
        if c.open_jitter > 0.0 {
            let u = self.rng.next_unit();
            period *= 1.0 + c.open_jitter * (2.0 * u - 1.0);
        }
        period as u64
    }

    fn go(&mut self, to: State, now: u64) -> Transition {
        let from = self.state;
        self.state = to;
        self.generation += 1;
        self.leases.clear();
        self.probe_successes = 0;
        if to != State::HalfOpen {
            self.since = self.history.len();
        }
        Transition {
            from,
            to,
            at: Timestamp(now),
        }
    }
}

/// The calls a rate window holds at `now`, and how many it must hold before the rate counts.
fn in_window(calls: &[Call], window: Window, minimum_calls: u32, now: u64) -> (Vec<Call>, usize) {
    match window {
        Window::Calls(n) => {
            let n = n as usize;
            let kept = calls[calls.len().saturating_sub(n)..].to_vec();
            (kept, (minimum_calls as usize).min(n))
        }
        Window::Millis(ms) => {
            // Ten buckets of `ms / 10` (at least 1 ms): a call counts while its bucket is one of
            // the ten newest.
            let width = (ms / 10).max(1);
            let kept = calls
                .iter()
                .copied()
                .filter(|c| now / width - c.at / width < 10)
                .collect();
            (kept, minimum_calls as usize)
        }
    }
}

fn rate_reached(calls: usize, bad: usize, needed: usize, threshold_percent: f64) -> bool {
    calls > 0 && calls >= needed && bad as f64 * 100.0 >= threshold_percent * calls as f64
}

// ----- traces -----

#[derive(Clone, Copy, Debug)]
enum Op {
    /// Move the clock forward.
    Advance(u64),
    /// Move the clock backward.
    Rewind(u64),
    Acquire,
    /// Report on the `pick`-th held permit; `keep` reports it again later too.
    Report {
        pick: usize,
        outcome: Outcome,
        keep: bool,
    },
    /// Let the slow-call limit (if any) pass, plus `extra` ms, then report.
    ReportSlow {
        pick: usize,
        failure: bool,
        extra: u64,
    },
    Record(Outcome),
    Isolate,
    Reset,
    SetDisabled(bool),
    /// Snapshot, then restore from it.
    RoundTrip,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        3 => Just(Outcome::Failure),
        1 => Just(Outcome::Ignored),
    ]
}

/// Which held permit to report on, counted from the newest: mostly one of the last few.
fn pick() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0usize..3, 1 => any::<usize>()]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => prop_oneof![6 => 0u64..20, 3 => 20u64..200, 1 => 200u64..3_000].prop_map(Op::Advance),
        2 => (1u64..300).prop_map(Op::Rewind),
        25 => Just(Op::Acquire),
        25 => (pick(), outcome(), prop::bool::weighted(0.1))
            .prop_map(|(pick, outcome, keep)| Op::Report { pick, outcome, keep }),
        5 => (pick(), any::<bool>(), 0u64..50)
            .prop_map(|(pick, failure, extra)| Op::ReportSlow { pick, failure, extra }),
        8 => outcome().prop_map(Op::Record),
        1 => Just(Op::Isolate),
        3 => Just(Op::Reset),
        2 => prop::bool::weighted(0.4).prop_map(Op::SetDisabled),
        3 => Just(Op::RoundTrip),
    ]
}

fn window() -> impl Strategy<Value = Window> {
    prop_oneof![
        (1u32..=8).prop_map(Window::Calls),
        (1u64..=40).prop_map(|k| Window::Millis(k * 10)),
        (1u64..=400).prop_map(Window::Millis),
    ]
}

fn percent() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(100.0),
        Just(50.0),
        Just(1.0),
        Just(33.3),
        0.1f64..=100.0,
    ]
}

fn trip() -> impl Strategy<Value = TripRule> {
    prop_oneof![
        (1u32..=4).prop_map(|threshold| TripRule::ConsecutiveFailures { threshold }),
        (1u32..=4, 1u64..=300).prop_map(|(threshold, window_ms)| TripRule::FailuresInWindow {
            threshold,
            window_ms
        }),
        (percent(), 1u32..=4, window()).prop_map(|(threshold_percent, minimum_calls, window)| {
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            }
        }),
        (percent(), 1u64..=100, 1u32..=4, window()).prop_map(
            |(threshold_percent, slow_call_ms, minimum_calls, window)| TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            }
        ),
    ]
}

fn config() -> impl Strategy<Value = BreakerConfig> {
    (
        trip(),
        prop_oneof![1 => Just(0u64), 6 => 1u64..=30, 2 => 31u64..=300],
        prop_oneof![Just(0.0), 0.0f64..0.99],
        prop_oneof![Just(1.0), Just(2.0), 1.0f64..4.0],
        0u64..=2_000,
        1u32..=3,
        1u32..=3,
        prop_oneof![3 => 1u64..=40, 1 => 41u64..=300],
        any::<u64>(),
    )
        .prop_map(
            |(trip, open, jitter, factor, headroom, probes, successes, timeout, seed)| {
                BreakerConfig::new()
                    .with_trip(trip)
                    .with_open_duration_ms(open)
                    .with_open_jitter(jitter)
                    .with_open_backoff(factor, open + headroom)
                    .with_half_open_max_probes(probes)
                    .with_half_open_success_threshold(successes)
                    .with_probe_timeout_ms(timeout)
                    .with_seed(seed)
            },
        )
}

fn start() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..1_000, 1_700_000_000_000u64..1_700_000_001_000]
}

// ----- the comparison -----

/// Every observable of `real` against the model, at clock reading `clock`.
fn same(real: &Breaker, model: &Reference, clock: u64, step: usize) -> Result<(), TestCaseError> {
    prop_assert_eq!(real.state(), model.state, "state() after step {}", step);
    for t in [clock, clock.saturating_sub(7), clock + 13, clock + 500] {
        prop_assert_eq!(
            real.state_at(Timestamp(t)),
            model.state_at(t),
            "state_at({}) after step {}",
            t,
            step
        );
    }
    prop_assert_eq!(real.mode(), model.mode, "mode() after step {}", step);
    prop_assert_eq!(
        real.generation(),
        model.generation,
        "generation() after step {}",
        step
    );
    prop_assert_eq!(
        real.probes_in_flight(),
        model.probes_in_flight(),
        "probes_in_flight() after step {}",
        step
    );
    prop_assert_eq!(
        real.half_open_successes(),
        model.probe_successes,
        "half_open_successes() after step {}",
        step
    );
    prop_assert_eq!(
        real.failed_probe_rounds(),
        model.failed_rounds,
        "failed_probe_rounds() after step {}",
        step
    );
    prop_assert_eq!(
        real.opened_at(),
        model.opened_at(),
        "opened_at() after step {}",
        step
    );
    prop_assert_eq!(
        real.open_until(),
        model.open_until(),
        "open_until() after step {}",
        step
    );
    prop_assert_eq!(real.stats(), &model.stats, "stats() after step {}", step);
    Ok(())
}

/// Runs `ops` on a real breaker and on the model, comparing after every step.
fn run(config: BreakerConfig, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut real = Breaker::new(config).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut model = Reference::new(config);
    let mut clock = start;
    let mut held: Vec<Permit> = Vec::new();
    for (step, &op) in ops.iter().enumerate() {
        match op {
            Op::Advance(ms) => clock += ms,
            Op::Rewind(ms) => clock = clock.saturating_sub(ms),
            Op::Acquire => {
                let t = Timestamp(clock);
                // `peek` answers what `acquire` will, and changes nothing.
                let before = real.snapshot();
                let peeked = real.peek(t);
                prop_assert_eq!(
                    real.snapshot(),
                    before,
                    "step {}: peek changed the state",
                    step
                );
                let admission = real.acquire(t);
                prop_assert_eq!(peeked, admission.result.map(|_| ()), "step {}: peek", step);
                prop_assert_eq!(admission, model.acquire(t), "step {}: {:?}", step, op);
                if let Ok(permit) = admission.result {
                    held.push(permit);
                }
            }
            Op::Report {
                pick,
                outcome,
                keep,
            } => {
                if !held.is_empty() {
                    let i = held.len() - 1 - pick % held.len();
                    let permit = if keep { held[i] } else { held.remove(i) };
                    let t = Timestamp(clock);
                    let got = real.report(t, permit, outcome);
                    let want = model.report(t, permit, outcome);
                    prop_assert_eq!(got, want, "step {}: {:?} with {:?}", step, op, permit);
                }
            }
            Op::ReportSlow {
                pick,
                failure,
                extra,
            } => {
                if !held.is_empty() {
                    let permit = held.remove(held.len() - 1 - pick % held.len());
                    let limit = config.trip.slow_call_ms().unwrap_or(0);
                    clock = clock.max(permit.issued_at.0) + limit + 1 + extra;
                    let outcome = if failure {
                        Outcome::Failure
                    } else {
                        Outcome::Success
                    };
                    let t = Timestamp(clock);
                    let got = real.report(t, permit, outcome);
                    let want = model.report(t, permit, outcome);
                    prop_assert_eq!(got, want, "step {}: {:?} with {:?}", step, op, permit);
                }
            }
            Op::Record(outcome) => {
                let t = Timestamp(clock);
                let got = real.record(t, outcome);
                prop_assert_eq!(got, model.record(t, outcome), "step {}: {:?}", step, op);
            }
            Op::Isolate => {
                let t = Timestamp(clock);
                let got = real.isolate(t);
                prop_assert_eq!(got, model.isolate(t), "step {}: {:?}", step, op);
            }
            Op::Reset => {
                let t = Timestamp(clock);
                let got = real.reset(t);
                prop_assert_eq!(got, model.reset(t), "step {}: {:?}", step, op);
            }
            Op::SetDisabled(disabled) => {
                real.set_disabled(Timestamp(clock), disabled);
                model.set_disabled(Timestamp(clock), disabled);
            }
            Op::RoundTrip => {
                let snapshot = real.snapshot();
                real = Breaker::restore(config, snapshot.clone())
                    .map_err(|e| TestCaseError::fail(format!("step {step}: restore: {e}")))?;
                prop_assert_eq!(real.snapshot(), snapshot, "step {}: round trip", step);
            }
        }
        same(&real, &model, clock, step)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn breaker_matches_the_reference_model(
        config in config(),
        start in start(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(config, start, &ops)?;
    }
}

// ----- regressions: subtle cases, written out -----

fn at(ms: u64) -> Timestamp {
    Timestamp(ms)
}

fn tripping_on_first_failure(open_ms: u64) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
        .with_open_duration_ms(open_ms)
}

#[test]
fn expired_probe_lease_frees_its_slot() {
    let config = tripping_on_first_failure(100).with_probe_timeout_ms(50);
    let mut breaker = Breaker::new(config).unwrap();
    assert!(breaker.record(at(10_000), Outcome::Failure).is_some());

    let lost = breaker.acquire(at(10_100));
    assert_eq!(lost.transition.map(|t| t.to), Some(State::HalfOpen));
    assert!(lost.result.is_ok(), "the first caller probes");

    let full = breaker.acquire(at(10_120)).result.unwrap_err();
    assert_eq!(full.reason, RejectReason::HalfOpenFull);
    assert_eq!(
        full.retry_after_ms, 30,
        "until the lost probe's lease runs out"
    );

    // The lost probe never reports; at the end of its lease the slot is free again.
    let probe = breaker.acquire(at(10_150)).result.unwrap();
    assert_eq!(probe.kind, PermitKind::Probe { id: 1 });
    assert_eq!(breaker.probes_in_flight(), 1);
    let closed = breaker.report(at(10_160), probe, Outcome::Success);
    assert_eq!(closed.map(|t| t.to), Some(State::Closed));
}

#[test]
fn stale_permit_is_ignored_after_a_transition() {
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
        .with_open_duration_ms(100);
    let mut breaker = Breaker::new(config).unwrap();
    let a = breaker.acquire(at(1_000)).result.unwrap();
    let b = breaker.acquire(at(1_000)).result.unwrap();
    let late = breaker.acquire(at(1_000)).result.unwrap();
    assert_eq!(breaker.report(at(1_001), a, Outcome::Failure), None);
    assert!(breaker.report(at(1_002), b, Outcome::Failure).is_some());

    let probe = breaker.acquire(at(1_102)).result.unwrap();
    assert_eq!(breaker.state(), State::HalfOpen);
    // A CLOSED-era permit reporting now neither fails the half-open round nor frees the slot.
    assert_eq!(breaker.report(at(1_103), late, Outcome::Failure), None);
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(breaker.stats().stale, 1);
    assert_eq!(
        breaker.stats().failures,
        3,
        "still counted as a failure reported"
    );
    assert_eq!(breaker.failed_probe_rounds(), 0);
    assert_eq!(breaker.probes_in_flight(), 1);
    let closed = breaker.report(at(1_104), probe, Outcome::Success);
    assert_eq!(closed.map(|t| t.to), Some(State::Closed));

    // A permit from before a reset is stale too, even though the state is CLOSED again.
    let before = breaker.acquire(at(1_105)).result.unwrap();
    assert_eq!(breaker.reset(at(1_106)), None);
    assert_eq!(breaker.report(at(1_107), before, Outcome::Failure), None);
    assert_eq!(breaker.stats().stale, 2);
}

#[test]
fn clock_going_backwards_means_no_time_passed() {
    let config = tripping_on_first_failure(1_000);
    let mut breaker = Breaker::new(config).unwrap();
    assert!(breaker.record(at(5_000), Outcome::Failure).is_some());
    assert_eq!(breaker.open_until(), Some(at(6_000)));

    // Reading 4 000 after 5 000: still 5 000 as far as the breaker is concerned.
    let rejected = breaker.acquire(at(4_000)).result.unwrap_err();
    assert_eq!(rejected.reason, RejectReason::Open);
    assert_eq!(rejected.retry_after_ms, 1_000);
    assert_eq!(breaker.state_at(at(4_000)), State::Open);
    assert_eq!(
        breaker
            .acquire(at(5_999))
            .result
            .unwrap_err()
            .retry_after_ms,
        1
    );

    assert_eq!(breaker.state_at(at(6_000)), State::HalfOpen);
    let probe = breaker.acquire(at(6_000)).result.unwrap();
    // Once 6 000 has been seen, an earlier reading still finds the period over.
    assert_eq!(breaker.state_at(at(0)), State::HalfOpen);
    let closed = breaker.report(at(10), probe, Outcome::Success).unwrap();
    assert_eq!(
        closed.at,
        at(6_000),
        "the transition happens at the latest time seen"
    );
}

#[test]
fn time_window_bucket_boundaries() {
    // Ten buckets of 10 ms: a call leaves the window 90 to 100 ms after it was recorded.
    let config = BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 100.0,
        minimum_calls: 2,
        window: Window::Millis(100),
    });

    // 1 019 is the last millisecond of bucket 101; at 1 110 (bucket 111) it has left.
    let mut breaker = Breaker::new(config).unwrap();
    assert_eq!(breaker.record(at(1_019), Outcome::Failure), None);
    assert_eq!(breaker.record(at(1_110), Outcome::Failure), None);
    assert!(breaker.record(at(1_111), Outcome::Failure).is_some());

    // 1 010 is the first millisecond of bucket 101; at 1 109 (bucket 110) it still counts.
    let mut breaker = Breaker::new(config).unwrap();
    assert_eq!(breaker.record(at(1_010), Outcome::Failure), None);
    assert!(breaker.record(at(1_109), Outcome::Failure).is_some());

    // ... and at 1 110 it has just left: 100 ms after it was recorded.
    let mut breaker = Breaker::new(config).unwrap();
    assert_eq!(breaker.record(at(1_010), Outcome::Failure), None);
    assert_eq!(breaker.record(at(1_110), Outcome::Failure), None);
}

// Three departures from the documentation that this model found, kept as regressions.

/// `isolate` from CLOSED or HALF_OPEN once set `opened_at` but left `open_until` from an
/// earlier trip (0 on a fresh breaker), so `Snapshot::check` rejected the breaker's own
/// snapshot as "open period ends before it starts". `restore` is documented to reject only
/// snapshots "no breaker can hold".
#[test]
fn isolated_breaker_survives_a_snapshot_round_trip() {
    let config = BreakerConfig::new();
    let mut breaker = Breaker::new(config).unwrap();
    assert!(breaker.isolate(at(1_000)).is_some());
    let restored = Breaker::restore(config, breaker.snapshot());
    assert!(restored.is_ok(), "{restored:?}");

    // Disabling ends isolation; the breaker stays OPEN and must still be restorable.
    breaker.set_disabled(at(1_001), true);
    let restored = Breaker::restore(config, breaker.snapshot());
    assert!(restored.is_ok(), "{restored:?}");
}

/// `probes_in_flight` is documented as "leases not yet expired as of the last call"; once only
/// `acquire` and `record` dropped expired leases, so after a `report` (or `set_disabled`) at a
/// time past a lease's expiry, the lease was still counted.
#[test]
fn probes_in_flight_forgets_leases_expired_before_the_last_call() {
    let config = tripping_on_first_failure(10)
        .with_half_open_max_probes(2)
        .with_probe_timeout_ms(50);
    let mut breaker = Breaker::new(config).unwrap();
    let stale = breaker.acquire(at(1_000)).result.unwrap();
    assert!(breaker.record(at(1_000), Outcome::Failure).is_some());
    let _lost = breaker.acquire(at(1_010)).result.unwrap();
    assert_eq!(breaker.probes_in_flight(), 1);

    // The last call is at 1 060, when the lost probe's lease has run out.
    assert_eq!(breaker.report(at(1_060), stale, Outcome::Failure), None);
    assert_eq!(breaker.probes_in_flight(), 0);
}

/// `record` in HALF_OPEN "settles the oldest probe in flight". Among probes admitted in the same
/// millisecond (equal lease expiry) the breaker once settled whichever `swap_remove` left first
/// in its list, which after an earlier report was not the oldest; the oldest probe's own report
/// then freed a second slot while a younger probe was still running, and more than
/// `half_open_max_probes` probes were admitted at once.
#[test]
fn record_settles_the_oldest_probe_among_equals() {
    let config = tripping_on_first_failure(10)
        .with_half_open_max_probes(3)
        .with_half_open_success_threshold(3)
        .with_probe_timeout_ms(100);
    let mut breaker = Breaker::new(config).unwrap();
    assert!(breaker.record(at(1_000), Outcome::Failure).is_some());
    let a = breaker.acquire(at(1_010)).result.unwrap();
    let b = breaker.acquire(at(1_010)).result.unwrap();
    let _c = breaker.acquire(at(1_010)).result.unwrap();

    assert_eq!(breaker.report(at(1_011), a, Outcome::Ignored), None);
    // Settles b, the oldest of b and c.
    assert_eq!(breaker.record(at(1_012), Outcome::Success), None);
    assert_eq!(breaker.half_open_successes(), 1);
    // b's own report finds its slot already settled; c is still running.
    assert_eq!(breaker.report(at(1_013), b, Outcome::Ignored), None);
    assert_eq!(breaker.probes_in_flight(), 1);

    assert!(breaker.acquire(at(1_014)).result.is_ok());
    assert!(breaker.acquire(at(1_014)).result.is_ok());
    let full = breaker.acquire(at(1_014)).result.unwrap_err();
    assert_eq!(
        full.reason,
        RejectReason::HalfOpenFull,
        "c and two new probes fill 3 slots"
    );
}
