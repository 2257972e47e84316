//! The circuit breaker as a sans-IO state machine.
//!
//! ```text
//!            trip rule fires                 open period elapsed
//!   CLOSED ───────────────────▶ OPEN ─────────────────────────────▶ HALF_OPEN
//!     ▲                          ▲          (on the next acquire)       │
//!     │                          └──────────── a probe fails ───────────┤
//!     └──────────────── `half_open_success_threshold` probes succeed ───┘
//! ```
//!
//! Every method takes `now`; none reads a clock, sleeps or allocates on the hot path. Mutators
//! return the [`Transition`] they caused, so a host can emit its events after it has stored the
//! new state. A call is admitted with a [`Permit`], and reports its outcome with that permit:
//! a permit from before a transition (an older *generation*) is ignored, and a half-open probe
//! permit is a lease that frees its slot after `probe_timeout_ms` even if it never reports.
//!
//! With a [`Throttle`] configured, a CLOSED breaker also sheds a degraded upstream's excess: each
//! call is refused ([`RejectReason::Throttled`]) with the probability of Google SRE's
//! client-side throttling over a window of requests and accepts (`throttle.rs`), drawn from the
//! breaker's seeded generator. The state does not change; the trip rule still opens the breaker
//! on a hard outage, and entering CLOSED or OPEN empties the window.

mod config;
mod throttle;
pub(crate) mod window;

pub use config::{
    BreakerConfig, FastPath, Throttle, TripRule, Window, CLOCK_STEP_MS, MAX_COUNT, MAX_DURATION_MS,
    MAX_HALF_OPEN_PROBES, MAX_HALF_OPEN_SUCCESSES, MAX_WINDOW_CALLS, THROTTLE_BUCKETS,
    TIME_WINDOW_BUCKETS,
};
pub use throttle::{throttle_probability, ThrottleBucket, ThrottleWindow};
pub use window::{Bucket, Counter};

use alloc::vec::Vec;
use core::fmt;

use crate::clock::Timestamp;
use crate::error::ConfigError;
use crate::rng::{Random, SplitMix64};
use window::Sample;

/// The three states of a breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "SCREAMING_SNAKE_CASE"))]
pub enum State {
    /// Calls flow; outcomes feed the trip rule.
    Closed,
    /// Calls are rejected until the open period ends (or, when isolated, until reset).
    Open,
    /// A limited number of probe calls test whether the upstream is back.
    HalfOpen,
}

impl State {
    /// `"CLOSED"`, `"OPEN"` or `"HALF_OPEN"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Open => "OPEN",
            State::HalfOpen => "HALF_OPEN",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Manual overrides of the automatic behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Mode {
    /// The trip rule and the open period decide.
    Automatic,
    /// Forced OPEN until [`Breaker::reset`]: every call is rejected.
    Isolated,
    /// Every call is admitted and counted in the statistics, but the state never changes.
    Disabled,
}

/// A state change, reported by the mutator that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a transition should be stored and then reported"]
pub struct Transition {
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// When it happened.
    pub at: Timestamp,
}

/// What kind of admission a permit stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermitKind {
    /// An ordinary call while CLOSED.
    Normal,
    /// A half-open probe, holding slot `id` until it reports or its lease expires.
    Probe {
        /// The probe slot's identifier.
        id: u32,
    },
    /// Admitted because the breaker is disabled; counted in the statistics only.
    Bypass,
}

/// Proof of admission. Report the call's outcome with it, once; it is small and `Copy`.
///
/// A probe permit reported after its lease ran out still counts (a slow probe is still news of
/// the upstream) unless the breaker changed state meanwhile; reporting the same permit twice
/// counts twice, so hosts must not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "report the outcome with this permit, or a half-open slot stays taken until its lease expires"]
pub struct Permit {
    /// The breaker's generation when the permit was issued.
    pub generation: u32,
    /// What was granted.
    pub kind: PermitKind,
    /// When it was issued (to measure slow calls).
    pub issued_at: Timestamp,
}

/// Why a call was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// OPEN: the open period has not ended.
    Open,
    /// HALF_OPEN with every probe slot taken.
    HalfOpenFull,
    /// Isolated by hand.
    Isolated,
    /// CLOSED, but shed by the adaptive throttle (see [`Throttle`]).
    Throttled,
    /// Every slot of a concurrency limit taken, and no room (or no time left) in its queue
    /// (see [`Bulkhead`](crate::bulkhead::Bulkhead)).
    Full,
}

/// A refusal, saying when asking again may succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Why.
    pub reason: RejectReason,
    /// Milliseconds until asking again may be admitted: the rest of the open period, the time
    /// until the oldest probe's lease runs out, or (isolated) the configured open duration as a
    /// hint; throttled, the time until the throttle's window moves on by one bucket (when the
    /// odds change). Never zero: at least 1.
    pub retry_after_ms: u64,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            RejectReason::Open => "circuit open",
            RejectReason::HalfOpenFull => "circuit half-open and every probe slot is taken",
            RejectReason::Isolated => "circuit isolated",
            RejectReason::Throttled => "circuit throttled: shedding a degraded upstream's excess",
            RejectReason::Full => "too many calls in flight and no room to wait",
        };
        write!(f, "{why}; retry after {} ms", self.retry_after_ms)
    }
}

impl core::error::Error for Rejected {}

/// What [`Breaker::acquire`] decided, and the transition that deciding caused (OPEN → HALF_OPEN
/// when the open period has elapsed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Admission {
    /// The permit, or why not.
    pub result: Result<Permit, Rejected>,
    /// The lazy OPEN → HALF_OPEN transition, if this call made it.
    pub transition: Option<Transition>,
}

/// How a call ended, as the breaker should count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The upstream answered well.
    Success,
    /// The upstream failed (5xx, 429, 529, timeout, network error…).
    Failure,
    /// Neither: the call says nothing about the upstream's health (a 400, a cancelled request).
    /// It only frees the permit's probe slot.
    Ignored,
}

/// What a host may count alone for now ([`Breaker::quiet`]): while the breaker is CLOSED and
/// automatic, the next `successes` successes (neither failed nor, under a slow-call rule, slow)
/// reported before `until` change nothing but counts. The host counts them and hands them over
/// at once ([`Breaker::record_quiet`]) before anything else reaches the breaker: a failure, an
/// ignored call, any read of its state or counts, or the first call at or after `until`.
///
/// An answer that every success is quiet, at any time ([`Quiet::FREE`]: the consecutive and
/// failures-in-a-window rules, and a call window past its minimum) holds until the breaker leaves
/// CLOSED or automatic mode: a host need not ask again after a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quiet {
    /// How many successes; 0 when every report must reach the breaker.
    pub successes: u32,
    /// Until when (exclusive): `Timestamp(u64::MAX)` when time does not matter.
    pub until: Timestamp,
    /// The slow-call rule's threshold: a success longer than this (from its permit's
    /// `issued_at`) is not quiet. `u64::MAX` under the other rules.
    pub slow_call_ms: u64,
}

impl Quiet {
    /// Nothing may be counted alone.
    pub const NONE: Quiet = Quiet {
        successes: 0,
        until: Timestamp(0),
        slow_call_ms: 0,
    };

    /// Every success is quiet, whenever it ends.
    pub const FREE: Quiet = Quiet {
        successes: u32::MAX,
        until: Timestamp(u64::MAX),
        slow_call_ms: u64::MAX,
    };

    /// Whether a success admitted at `issued_at` and ended at `now` is quiet (given that fewer
    /// than `successes` were counted alone since this answer).
    #[inline]
    pub const fn admits(&self, issued_at: Timestamp, now: Timestamp) -> bool {
        self.successes > 0
            && now.0 < self.until.0
            && now.0.saturating_sub(issued_at.0) <= self.slow_call_ms
    }
}

/// Running totals since the breaker was built (or restored). Saturating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct Stats {
    /// Calls admitted.
    pub admitted: u64,
    /// Calls rejected.
    pub rejected: u64,
    /// Successes reported.
    pub successes: u64,
    /// Failures reported.
    pub failures: u64,
    /// Outcomes reported as [`Outcome::Ignored`].
    pub ignored: u64,
    /// Reports that came with a permit from an earlier generation and were not counted.
    pub stale: u64,
    /// Slow calls reported (only under a slow-call rule).
    pub slow: u64,
    /// Times the breaker opened (from CLOSED or HALF_OPEN, or by isolation).
    pub opened: u64,
    /// Of the rejected calls, those the adaptive throttle shed.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "is_zero"))]
    pub throttled: u64,
}

#[cfg(feature = "serde")]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An in-flight half-open probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProbeLease {
    /// The slot's identifier, carried by the permit.
    pub id: u32,
    /// When the lease runs out, in ms since the epoch.
    pub expires_at: u64,
}

/// The circuit breaker state machine.
///
/// ```
/// use breakwater::{Breaker, BreakerConfig, Outcome, State, Timestamp, TripRule};
///
/// let config = BreakerConfig::new()
///     .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
///     .with_open_duration_ms(1_000);
/// let mut breaker = Breaker::new(config).unwrap();
/// let t = Timestamp(10_000);
///
/// for _ in 0..2 {
///     let permit = breaker.acquire(t).result.unwrap();
///     let _ = breaker.report(t, permit, Outcome::Failure);
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let rejected = breaker.acquire(t).result.unwrap_err();
/// assert_eq!(rejected.retry_after_ms, 1_000);
///
/// // A second later the next caller becomes the probe, and its success closes the circuit.
/// let later = Timestamp(11_000);
/// let probe = breaker.acquire(later);
/// assert_eq!(probe.transition.unwrap().to, State::HalfOpen);
/// let closed = breaker.report(later, probe.result.unwrap(), Outcome::Success);
/// assert_eq!(closed.unwrap().to, State::Closed);
/// ```
#[derive(Debug)]
pub struct Breaker {
    pub(crate) config: BreakerConfig,
    pub(crate) state: State,
    pub(crate) mode: Mode,
    pub(crate) generation: u32,
    pub(crate) last_now: u64,
    pub(crate) opened_at: u64,
    pub(crate) open_until: u64,
    pub(crate) failed_probe_rounds: u32,
    pub(crate) half_open_successes: u32,
    pub(crate) probes: Vec<ProbeLease>,
    pub(crate) next_probe_id: u32,
    pub(crate) counter: Counter,
    pub(crate) bucket_cache: window::WindowCache,
    pub(crate) throttle: ThrottleWindow,
    pub(crate) rng: SplitMix64,
    pub(crate) stats: Stats,
}

impl Clone for Breaker {
    /// A copy with the same reserved capacity, so that the copy does not allocate on its hot
    /// path either.
    fn clone(&self) -> Self {
        let mut counter = self.counter.clone();
        counter.reserve_for(&self.config.trip);
        let mut probes = Vec::with_capacity(self.config.half_open_max_probes as usize);
        probes.extend_from_slice(&self.probes);
        Breaker {
            config: self.config,
            state: self.state,
            mode: self.mode,
            generation: self.generation,
            last_now: self.last_now,
            opened_at: self.opened_at,
            open_until: self.open_until,
            failed_probe_rounds: self.failed_probe_rounds,
            half_open_successes: self.half_open_successes,
            probes,
            next_probe_id: self.next_probe_id,
            counter,
            bucket_cache: window::WindowCache::default(),
            throttle: self.throttle,
            rng: self.rng,
            stats: self.stats,
        }
    }
}

impl Breaker {
    /// A CLOSED breaker, or the first configuration field out of range.
    pub fn new(config: BreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Breaker {
            counter: Counter::for_rule(&config.trip),
            bucket_cache: window::WindowCache::default(),
            throttle: ThrottleWindow::default(),
            probes: Vec::with_capacity(config.half_open_max_probes as usize),
            rng: SplitMix64::new(config.seed),
            config,
            state: State::Closed,
            mode: Mode::Automatic,
            generation: 0,
            last_now: 0,
            opened_at: 0,
            open_until: 0,
            failed_probe_rounds: 0,
            half_open_successes: 0,
            next_probe_id: 0,
            stats: Stats::default(),
        })
    }

    /// The configuration it runs under.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// The state as last computed. An OPEN breaker whose period has elapsed still reads OPEN
    /// until the next [`acquire`](Self::acquire); see [`state_at`](Self::state_at).
    pub fn state(&self) -> State {
        self.state
    }

    /// The state a call at `now` would find: HALF_OPEN for an OPEN breaker whose open period
    /// has ended (unless isolated). Does not change anything.
    pub fn state_at(&self, now: Timestamp) -> State {
        if self.state == State::Open
            && self.mode != Mode::Isolated
            && now.0.max(self.last_now) >= self.open_until
        {
            State::HalfOpen
        } else {
            self.state
        }
    }

    /// The manual mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Running totals.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Bumped by every transition; permits from older generations are ignored.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// When the breaker last opened, if it is OPEN.
    pub fn opened_at(&self) -> Option<Timestamp> {
        (self.state == State::Open).then_some(Timestamp(self.opened_at))
    }

    /// When the current open period ends, if OPEN and not isolated.
    pub fn open_until(&self) -> Option<Timestamp> {
        (self.state == State::Open && self.mode != Mode::Isolated)
            .then_some(Timestamp(self.open_until))
    }

    /// Half-open probes currently holding a slot (leases not yet expired as of the last call).
    pub fn probes_in_flight(&self) -> usize {
        self.probes.len()
    }

    /// Successful probes so far in this half-open round.
    pub fn half_open_successes(&self) -> u32 {
        self.half_open_successes
    }

    /// Consecutive half-open rounds that failed (the exponent of the open-period backoff).
    pub fn failed_probe_rounds(&self) -> u32 {
        self.failed_probe_rounds
    }

    /// The latest time the breaker has seen (see [`observe_time`](Self::observe_time)).
    pub fn latest(&self) -> Timestamp {
        Timestamp(self.last_now)
    }

    /// Lets time pass to `now` without a call: probe leases that ran out free their slots, and a
    /// clock stepped back by more than [`CLOCK_STEP_MS`] moves the breaker's times back with it
    /// (readings less far behind mean no time passed). Every other method does this first.
    pub fn observe_time(&mut self, now: Timestamp) -> Timestamp {
        Timestamp(self.observe(now))
    }

    /// Asks to run one call at `now`.
    #[inline]
    pub fn acquire(&mut self, now: Timestamp) -> Admission {
        let now = self.observe(now);
        // The common case first: a healthy, automatic breaker admits at once.
        if self.state == State::Closed && self.mode == Mode::Automatic {
            if let Some(throttle) = self.config.throttle_rule() {
                if let Some(rejected) = self.shed(now, &throttle) {
                    return Admission {
                        result: Err(rejected),
                        transition: None,
                    };
                }
            }
            self.stats.admitted = self.stats.admitted.saturating_add(1);
            return Admission {
                result: Ok(self.permit(now, PermitKind::Normal)),
                transition: None,
            };
        }
        self.acquire_slow(now)
    }

    /// The adaptive throttle's refusal probability at `now`: 0 without a [`Throttle`], outside
    /// CLOSED, or below its minimum of requests.
    pub fn throttle_probability(&self, now: Timestamp) -> f64 {
        match self.config.throttle_rule() {
            Some(t) if self.state == State::Closed && self.mode == Mode::Automatic => {
                let (requests, accepts) = self
                    .throttle
                    .totals(now.0.max(self.last_now), t.bucket_ms());
                throttle_probability(requests, accepts, &t)
            }
            _ => 0.0,
        }
    }

    /// Counts `n` calls shed elsewhere under this breaker's throttle (a shared breaker's clients
    /// shed locally, with the probability their lease carries): requests of the window, and
    /// throttled refusals in the statistics. Nothing without a throttle, or outside CLOSED.
    pub fn record_throttled(&mut self, now: Timestamp, n: u32) {
        let now = self.observe(now);
        let Some(throttle) = self.config.throttle_rule() else {
            return;
        };
        if n == 0 || self.state != State::Closed || self.mode != Mode::Automatic {
            return;
        }
        self.throttle.add(now, throttle.bucket_ms(), n, 0);
        self.stats.throttled = self.stats.throttled.saturating_add(n.into());
        self.stats.rejected = self.stats.rejected.saturating_add(n.into());
    }

    /// The throttle's memory (requests and accepts per bucket).
    pub fn throttle_window(&self) -> &ThrottleWindow {
        &self.throttle
    }

    /// What [`acquire`](Self::acquire) would answer at `now`, taking nothing: `Ok(())` when a
    /// call would be admitted, the refusal otherwise. A throttled breaker reads as admitting
    /// (whether a call is shed is a draw). For gatekeeping (a proxy that answers 503
    /// while the upstream is known to be down) without spending a half-open probe or counting a
    /// rejection. An OPEN breaker whose period has elapsed reads as admitting (a probe is free).
    pub fn peek(&self, now: Timestamp) -> Result<(), Rejected> {
        match self.refusal(now.0.max(self.last_now)) {
            None => Ok(()),
            Some((reason, retry_after_ms)) => Err(Rejected {
                reason,
                retry_after_ms: retry_after_ms.max(1),
            }),
        }
    }

    /// The one decision behind [`acquire`](Self::acquire) and [`peek`](Self::peek): why a call at
    /// `now` would be refused, and for how long, or `None` when it would be admitted.
    fn refusal(&self, now: u64) -> Option<(RejectReason, u64)> {
        match (self.mode, self.state) {
            (Mode::Disabled, _) | (Mode::Automatic, State::Closed) => None,
            (Mode::Isolated, _) => Some((RejectReason::Isolated, self.config.open_duration_ms)),
            (Mode::Automatic, State::Open) => {
                // Once the period has elapsed the next call becomes the first probe.
                (now < self.open_until).then(|| (RejectReason::Open, self.open_until - now))
            }
            (Mode::Automatic, State::HalfOpen) => {
                let live = self.probes.iter().filter(|p| p.expires_at > now);
                if live.clone().count() < self.config.half_open_max_probes as usize {
                    None
                } else {
                    let soonest = live.map(|p| p.expires_at).min().unwrap_or(now + 1);
                    Some((RejectReason::HalfOpenFull, soonest.saturating_sub(now)))
                }
            }
        }
    }

    #[cold]
    fn acquire_slow(&mut self, now: u64) -> Admission {
        if let Some((reason, retry_after_ms)) = self.refusal(now) {
            return Admission {
                result: Err(self.reject(reason, retry_after_ms)),
                transition: None,
            };
        }
        self.stats.admitted = self.stats.admitted.saturating_add(1);
        let (kind, transition) = match (self.mode, self.state) {
            (Mode::Disabled, _) => (PermitKind::Bypass, None),
            (_, State::Closed) => (PermitKind::Normal, None),
            (_, state) => {
                // OPEN with its period elapsed (`refusal` said so) turns HALF_OPEN here; HALF_OPEN
                // has a free slot.
                let transition = (state == State::Open).then(|| self.enter(State::HalfOpen, now));
                let id = self.next_probe_id;
                self.next_probe_id = self.next_probe_id.wrapping_add(1);
                self.probes.push(ProbeLease {
                    id,
                    expires_at: now.saturating_add(self.config.probe_timeout_ms),
                });
                (PermitKind::Probe { id }, transition)
            }
        };
        Admission {
            result: Ok(self.permit(now, kind)),
            transition,
        }
    }

    /// Reports how an admitted call ended.
    #[inline]
    pub fn report(
        &mut self,
        now: Timestamp,
        permit: Permit,
        outcome: Outcome,
    ) -> Option<Transition> {
        let now = self.observe(now);
        let slow = match self.config.trip.slow_call_ms() {
            Some(limit) => now.saturating_sub(permit.issued_at.0) > limit,
            None => false,
        };
        self.count_outcome(outcome, slow);
        if permit.kind == PermitKind::Bypass || self.mode != Mode::Automatic {
            return None;
        }
        if permit.generation != self.generation {
            self.stats.stale = self.stats.stale.saturating_add(1);
            return None;
        }
        match (self.state, permit.kind) {
            (State::Closed, PermitKind::Normal) => self.record_closed(now, outcome, slow),
            (State::HalfOpen, PermitKind::Probe { id }) => {
                self.settle_probe(now, id, outcome, slow)
            }
            // Same generation always means the same state as when the permit was issued.
            _ => None,
        }
    }

    /// Reports an outcome without a permit (the `isHealthy()` / `recordSuccess()` pattern).
    /// While CLOSED it counts toward the trip rule; while HALF_OPEN it settles the oldest probe in
    /// flight, if any; otherwise it only counts in the statistics. Never slow.
    pub fn record(&mut self, now: Timestamp, outcome: Outcome) -> Option<Transition> {
        let now = self.observe(now);
        self.count_outcome(outcome, false);
        if self.mode != Mode::Automatic {
            return None;
        }
        match self.state {
            State::Closed => self.record_closed(now, outcome, false),
            State::HalfOpen => {
                // The oldest: the earliest lease, the first admitted among equals.
                let oldest = self.probes.iter().min_by_key(|p| p.expires_at)?.id;
                self.release_probe(oldest);
                self.record_probe(now, outcome, false)
            }
            State::Open => None,
        }
    }

    /// What the host may count alone from now on ([`Quiet`]): [`Quiet::NONE`] unless CLOSED,
    /// automatic and under a configuration whose host may admit alone (its
    /// [`fast_path`](BreakerConfig::fast_path) holds [`FastPath::ADMIT`]: not under a throttle,
    /// which decides every call). The trip rule answers: successes never open the consecutive and
    /// failures-in-a-window rules; a rate rule's success may when it brings its window to the
    /// minimum of calls, and a time window's successes are quiet until its current bucket ends
    /// (none before a call entered it).
    #[inline(never)]
    pub fn quiet(&self) -> Quiet {
        if self.state != State::Closed || self.mode != Mode::Automatic || !self.config.host_admits()
        {
            return Quiet::NONE;
        }
        let (successes, until) = self.counter.quiet(&self.bucket_cache, self.last_now);
        Quiet {
            successes,
            until: Timestamp(until),
            slow_call_ms: self.config.trip.slow_call_ms().unwrap_or(u64::MAX),
        }
    }

    /// Hands over what the host counted alone under [`quiet`](Self::quiet): `admitted`
    /// admissions of a CLOSED permit (counted in the statistics only) and `successes` quiet
    /// successes, recorded in the bucket the answer was for (at `now`, or at the last
    /// millisecond before its `until` if `now` is past it). `now`: the latest time of the calls
    /// handed over, or any later one. Equivalent to as many calls of
    /// [`acquire`](Self::acquire) and [`report`](Self::report). Successes handed over when the
    /// breaker is no longer CLOSED count as stale.
    pub fn record_quiet(
        &mut self,
        now: Timestamp,
        admitted: u64,
        successes: u64,
    ) -> Option<Transition> {
        self.stats.admitted = self.stats.admitted.saturating_add(admitted);
        let quiet = self.quiet();
        let latest = self.observe(now);
        if successes == 0 {
            return None;
        }
        if quiet == Quiet::NONE {
            self.count_stale(u32::try_from(successes).unwrap_or(u32::MAX), 0, 0);
            return None;
        }
        // In the bucket the answer was for, even when handed over after it ended.
        let now = latest.min(quiet.until.0.saturating_sub(1));
        let first = successes.min(self.counter.one_by_one(&self.config.trip));
        self.stats.successes = self.stats.successes.saturating_add(successes);
        for _ in 0..first {
            if let Some(t) = self.record_closed(now, Outcome::Success, false) {
                return Some(t);
            }
        }
        self.counter
            .add_successes(successes - first, &self.bucket_cache)
            .then(|| self.trip(now))
    }

    /// Counts outcomes that arrive too late to matter (their generation has passed) in one step:
    /// they land in the statistics as reported and stale, as [`report`](Self::report) would
    /// count each of them with an old permit.
    pub(crate) fn count_stale(&mut self, successes: u32, failures: u32, ignored: u32) {
        let s = &mut self.stats;
        s.successes = s.successes.saturating_add(successes.into());
        s.failures = s.failures.saturating_add(failures.into());
        s.ignored = s.ignored.saturating_add(ignored.into());
        let total = u64::from(successes) + u64::from(failures) + u64::from(ignored);
        s.stale = s.stale.saturating_add(total);
    }

    /// Forces the breaker OPEN until [`reset`](Self::reset); every call is rejected.
    pub fn isolate(&mut self, now: Timestamp) -> Option<Transition> {
        let now = self.observe(now);
        self.mode = Mode::Isolated;
        if self.state == State::Open {
            // Already open: only the mode changes, but older permits must not count any more.
            self.generation = self.generation.wrapping_add(1);
            return None;
        }
        // The open period of an isolation ends "now": once released by `set_disabled`, the next
        // call probes at once.
        self.opened_at = now;
        self.open_until = now;
        self.stats.opened = self.stats.opened.saturating_add(1);
        Some(self.enter(State::Open, now))
    }

    /// Back to CLOSED with empty counters and automatic mode, from anything (ends isolation and
    /// disabling, clears the open-period backoff).
    pub fn reset(&mut self, now: Timestamp) -> Option<Transition> {
        let now = self.observe(now);
        self.mode = Mode::Automatic;
        self.failed_probe_rounds = 0;
        if self.state == State::Closed {
            self.counter.clear();
            self.bucket_cache.invalidate();
            self.generation = self.generation.wrapping_add(1);
            return None;
        }
        Some(self.enter(State::Closed, now))
    }

    /// Disables (every call admitted, nothing changes state) or re-enables the breaker.
    /// Re-enabling resumes from the state it had; disabling ends isolation.
    pub fn set_disabled(&mut self, now: Timestamp, disabled: bool) {
        self.observe(now);
        self.mode = match (disabled, self.mode) {
            (true, _) => Mode::Disabled,
            (false, Mode::Disabled) => Mode::Automatic,
            (false, other) => other,
        };
        self.generation = self.generation.wrapping_add(1);
    }

    // ----- internals -----

    /// Clamps a clock that went backwards: no time passed.
    #[inline]
    fn observe(&mut self, now: Timestamp) -> u64 {
        if now.0 > self.last_now {
            self.last_now = now.0;
            if !self.probes.is_empty() {
                self.expire_leases();
            }
        } else if now.0.saturating_add(CLOCK_STEP_MS) < self.last_now {
            self.step_back(now.0);
        }
        self.last_now
    }

    /// The clock was stepped back (an NTP correction, a failover to a host whose clock is
    /// behind): every time the breaker holds moves back with it, so an open period, a probe's
    /// lease and a failure window keep the length they had left instead of lasting as long as
    /// the step. A time-bucketed rate window and the throttle's window start empty (their
    /// buckets are indexed by absolute time).
    #[cold]
    fn step_back(&mut self, now: u64) {
        let back = self.last_now - now;
        self.opened_at = self.opened_at.saturating_sub(back);
        self.open_until = self.open_until.saturating_sub(back);
        for p in &mut self.probes {
            p.expires_at = p.expires_at.saturating_sub(back);
        }
        match &mut self.counter {
            Counter::FailureTimes { times, .. } => {
                for t in times.iter_mut() {
                    *t = t.saturating_sub(back);
                }
            }
            c @ Counter::Buckets { .. } => c.clear(),
            Counter::Consecutive { .. } | Counter::Calls { .. } => {}
        }
        self.bucket_cache = window::WindowCache::default();
        self.throttle.clear();
        self.last_now = now;
    }

    /// Frees the slots of probes whose lease ran out.
    #[cold]
    fn expire_leases(&mut self) {
        let now = self.last_now;
        self.probes.retain(|p| p.expires_at > now);
    }

    /// The throttle's draw for one CLOSED call: the refusal, counted as a request, or `None` to
    /// admit it.
    fn shed(&mut self, now: u64, throttle: &Throttle) -> Option<Rejected> {
        let bucket_ms = throttle.bucket_ms();
        let (requests, accepts) = self.throttle.totals(now, bucket_ms);
        let p = throttle_probability(requests, accepts, throttle);
        if p == 0.0 || self.rng.next_unit() >= p {
            return None;
        }
        self.throttle.add(now, bucket_ms, 1, 0);
        self.stats.throttled = self.stats.throttled.saturating_add(1);
        Some(self.reject(RejectReason::Throttled, bucket_ms - now % bucket_ms))
    }

    #[inline]
    fn permit(&self, now: u64, kind: PermitKind) -> Permit {
        Permit {
            generation: self.generation,
            kind,
            issued_at: Timestamp(now),
        }
    }

    #[inline]
    fn reject(&mut self, reason: RejectReason, retry_after_ms: u64) -> Rejected {
        self.stats.rejected = self.stats.rejected.saturating_add(1);
        Rejected {
            reason,
            retry_after_ms: retry_after_ms.max(1),
        }
    }

    #[inline]
    fn count_outcome(&mut self, outcome: Outcome, slow: bool) {
        let s = &mut self.stats;
        match outcome {
            Outcome::Success => s.successes = s.successes.saturating_add(1),
            Outcome::Failure => s.failures = s.failures.saturating_add(1),
            Outcome::Ignored => s.ignored = s.ignored.saturating_add(1),
        }
        if slow && outcome != Outcome::Ignored {
            s.slow = s.slow.saturating_add(1);
        }
    }

    #[inline]
    fn record_closed(&mut self, now: u64, outcome: Outcome, slow: bool) -> Option<Transition> {
        let failure = match outcome {
            Outcome::Success => false,
            Outcome::Failure => true,
            Outcome::Ignored => return None,
        };
        if let Some(throttle) = &self.config.throttle_rule() {
            self.throttle
                .add(now, throttle.bucket_ms(), 1, u32::from(!failure));
        }
        if self.counter.record(
            &self.config.trip,
            now,
            Sample { failure, slow },
            &mut self.bucket_cache,
        ) {
            Some(self.trip(now))
        } else {
            None
        }
    }

    #[cold]
    fn settle_probe(
        &mut self,
        now: u64,
        id: u32,
        outcome: Outcome,
        slow: bool,
    ) -> Option<Transition> {
        self.release_probe(id);
        self.record_probe(now, outcome, slow)
    }

    /// Frees probe slot `id`, keeping the others in admission order (no panicking `remove`).
    fn release_probe(&mut self, id: u32) {
        let mut found = false;
        self.probes.retain(|p| {
            let keep = found || p.id != id;
            found |= !keep;
            keep
        });
    }

    #[cold]
    fn record_probe(&mut self, now: u64, outcome: Outcome, slow: bool) -> Option<Transition> {
        match outcome {
            Outcome::Ignored => None,
            // Under a slow-call rule a slow probe means the upstream is not back yet.
            Outcome::Failure => {
                self.failed_probe_rounds = self.failed_probe_rounds.saturating_add(1);
                Some(self.trip(now))
            }
            Outcome::Success if slow => {
                self.failed_probe_rounds = self.failed_probe_rounds.saturating_add(1);
                Some(self.trip(now))
            }
            Outcome::Success => {
                self.half_open_successes = self.half_open_successes.saturating_add(1);
                if self.half_open_successes >= self.config.half_open_success_threshold {
                    self.failed_probe_rounds = 0;
                    Some(self.enter(State::Closed, now))
                } else {
                    None
                }
            }
        }
    }

    /// Opens, drawing the length of this open period.
    #[cold]
    fn trip(&mut self, now: u64) -> Transition {
        let period = self.open_period();
        self.opened_at = now;
        self.open_until = now.saturating_add(period);
        self.stats.opened = self.stats.opened.saturating_add(1);
        self.enter(State::Open, now)
    }

    /// The open period: the base duration grown by the backoff factor per failed half-open round,
    /// capped, then spread by the jitter.
    fn open_period(&mut self) -> u64 {
        let c = &self.config;
        let mut period = c.open_duration_ms as f64;
        let cap = c.max_open_duration_ms as f64;
        if c.open_backoff_factor > 1.0 {
            for _ in 0..self.failed_probe_rounds.min(2_048) {
                period *= c.open_backoff_factor;
                if period >= cap {
                    break;
                }
            }
            if period > cap {
                period = cap;
            }
        }
        if c.open_jitter > 0.0 {
            let u = self.rng.next_unit(); // [0, 1)
            period *= 1.0 + c.open_jitter * (2.0 * u - 1.0);
        }
        // Finite and non-negative by construction; `as` saturates regardless.
        period as u64
    }

    /// Moves to `to`, starting a new generation and clearing what the new state starts without.
    fn enter(&mut self, to: State, now: u64) -> Transition {
        let from = self.state;
        self.state = to;
        self.generation = self.generation.wrapping_add(1);
        self.probes.clear();
        self.half_open_successes = 0;
        if to == State::Closed || to == State::Open {
            self.counter.clear();
            self.bucket_cache.invalidate();
            self.throttle.clear();
        }
        Transition {
            from,
            to,
            at: Timestamp(now),
        }
    }
}
