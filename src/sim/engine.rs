//! The discrete-event loop: one run of one strategy over simulated epoch milliseconds.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::vec::Vec;

use crate::breaker::{Breaker, Outcome, Permit, State};
use crate::clock::Timestamp;
use crate::retry::{
    AttemptFailure, Classifier, RetryBudget, RetryDecision, RetryPolicy, RetryState,
};
use crate::rng::{Random, SplitMix64};

use super::report::{StrategyReport, Timeline};
use super::scenario::{Arrival, Composition, Phase, PhaseKind, Scenario, Strategy, Upstream};
use super::SimError;

/// Width of a timeline bucket.
pub(crate) const BUCKET_MS: u64 = 1_000;
/// How long after the arrival window requests may still run before the run is cut.
pub(crate) const MAX_DRAIN_MS: u64 = 3_600_000;
/// A guard against scenarios that would take more than a few seconds.
const MAX_EVENTS: u64 = 200_000_000;

const STREAM_ARRIVALS: u64 = 0xA771_7A15_0000_0001;
const STREAM_UPSTREAM: u64 = 0x0B57_12EA_0000_0002;
const STREAM_RETRY: u64 = 0x2E72_1E5A_0000_0003;

/// One user request: when it arrived and which user sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ArrivalAt {
    pub at: u64,
    pub user: u32,
}

impl ArrivalAt {
    /// The instance serving the request: its user's, `user % instances`.
    pub fn instance(&self, instances: u32) -> usize {
        (self.user % instances.max(1)) as usize
    }
}

/// The user sending request number `i` of an `at_ms` or `arrivals_per_s` load: user `i % users`,
/// or, without `users`, a user of its own (so the requests go round robin over the instances).
fn user_of(i: u64, users: Option<u32>) -> u32 {
    match users {
        Some(u) => (i % u64::from(u.max(1))) as u32,
        None => (i % (u64::from(u32::MAX) + 1)) as u32,
    }
}

/// The arrival times of a scenario, the same for every strategy.
pub(crate) fn arrivals(s: &Scenario) -> Vec<ArrivalAt> {
    let mut rng = SplitMix64::new(s.seed ^ STREAM_ARRIVALS);
    let load = &s.load;
    let mut out = Vec::new();
    if let Some(at) = &load.at_ms {
        for (i, t) in at.iter().enumerate() {
            out.push(ArrivalAt {
                at: *t,
                user: user_of(i as u64, load.users),
            });
        }
    } else if let Some(rate) = load.arrivals_per_s {
        let mut t = 0.0f64;
        let mut i = 0u64;
        loop {
            t += gap_ms(load.arrival, rate, &mut rng);
            if t >= s.duration_ms as f64 {
                break;
            }
            out.push(ArrivalAt {
                at: t as u64,
                user: user_of(i, load.users),
            });
            i += 1;
        }
    } else if let Some(rate) = load.requests_per_user_per_s {
        let period = 1_000.0 / rate;
        for user in 0..load.users.unwrap_or(1) {
            let mut t = match load.arrival {
                Arrival::Poisson => gap_ms(Arrival::Poisson, rate, &mut rng),
                Arrival::Uniform => period * rng.next_unit(),
            };
            while t < s.duration_ms as f64 {
                out.push(ArrivalAt { at: t as u64, user });
                t += gap_ms(load.arrival, rate, &mut rng);
            }
        }
    }
    out.sort_unstable();
    out
}

fn gap_ms(arrival: Arrival, rate_per_s: f64, rng: &mut SplitMix64) -> f64 {
    let mean = 1_000.0 / rate_per_s;
    match arrival {
        Arrival::Uniform => mean,
        // 1 - u is in (0, 1], so the logarithm is finite.
        Arrival::Poisson => -(1.0 - rng.next_unit()).ln() * mean,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A request starts (index into the requests).
    Arrive(u32),
    /// A request makes its next attempt.
    Attempt(u32),
    /// The upstream finished serving a call.
    Served(u32),
    /// The upstream answered a call with an error status, and maybe a Retry-After (ms).
    ErrorReply {
        call: u32,
        status: u16,
        retry_after_ms: Option<u64>,
    },
    /// The client's timeout for a call.
    Timeout(u32),
    /// The current phase's minimum duration (or quiet period) may be over.
    PhaseEnd(u32),
    /// Record the breakers' state in the timeline.
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Succeeded,
    Failed,
    FailedFast,
}

#[derive(Clone, Debug)]
struct Req {
    arrival: u64,
    breaker: usize,
    budget: usize,
    retry: RetryState,
    upstream_calls: u32,
    permit: Option<Permit>,
    end: Option<(u64, End)>,
}

#[derive(Clone, Copy, Debug)]
struct Call {
    req: u32,
    waiting: bool,
    permit: Option<Permit>,
}

enum Answer {
    Success,
    /// What the client learned from a failed call: how the classifier judges it, and the
    /// server's Retry-After if it sent one.
    Failure {
        outcome: Outcome,
        retryable: bool,
        retry_after_ms: Option<u64>,
    },
}

struct Sim<'a> {
    s: &'a Scenario,
    strategy: Strategy,
    policy: RetryPolicy,
    classifier: Classifier,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    reqs: Vec<Req>,
    calls: Vec<Call>,
    breakers: Vec<Breaker>,
    budgets: Vec<RetryBudget>,
    upstream_rng: SplitMix64,
    retry_rng: SplitMix64,
    // upstream
    phase: usize,
    last_received: Option<u64>,
    busy: u32,
    queue: VecDeque<u32>,
    outage_start: Option<u64>,
    recovered_at: Option<u64>,
    // metrics
    timeline: Timeline,
    upstream_calls: u64,
    calls_in_outage: u64,
    wasted: u64,
    rejected_attempts: u64,
    throttled_attempts: u64,
    upstream_failures: u64,
    refused_healthy: f64,
}

/// Runs one strategy over the scenario.
pub(crate) fn run_strategy(
    s: &Scenario,
    strategy: Strategy,
    arrivals: &[ArrivalAt],
) -> Result<StrategyReport, SimError> {
    let instances = s.instances as usize;
    let breaker_count = match strategy {
        Strategy::BreakerPerInstance => instances,
        Strategy::SharedBreaker => 1,
        _ => 0,
    };
    let mut breakers = Vec::with_capacity(breaker_count);
    for i in 0..breaker_count {
        let config = s.breaker_config();
        let config = config.with_seed(config.seed.wrapping_add(i as u64));
        breakers.push(Breaker::new(config).map_err(|e| SimError::config("breaker", e))?);
    }
    let mut budgets = Vec::new();
    if let (Some(b), true) = (&s.budget, strategy.retries()) {
        for _ in 0..instances {
            budgets.push(b.budget().map_err(|e| SimError::config("", e))?);
        }
    }
    let policy = s.retry_policy();
    let mut sim = Sim {
        s,
        strategy,
        policy,
        classifier: Classifier::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        reqs: Vec::with_capacity(arrivals.len()),
        calls: Vec::new(),
        breakers,
        budgets,
        upstream_rng: SplitMix64::new(s.seed ^ STREAM_UPSTREAM),
        retry_rng: SplitMix64::new(s.seed ^ STREAM_RETRY),
        phase: 0,
        last_received: None,
        busy: 0,
        queue: VecDeque::new(),
        outage_start: None,
        recovered_at: None,
        timeline: Timeline::new(BUCKET_MS),
        upstream_calls: 0,
        calls_in_outage: 0,
        wasted: 0,
        rejected_attempts: 0,
        throttled_attempts: 0,
        upstream_failures: 0,
        refused_healthy: 0.0,
    };
    for (i, a) in arrivals.iter().enumerate() {
        let instance = a.instance(s.instances);
        sim.reqs.push(Req {
            arrival: a.at,
            breaker: match strategy {
                Strategy::BreakerPerInstance => instance,
                _ => 0,
            },
            budget: instance,
            retry: policy.start(Timestamp(a.at)),
            upstream_calls: 0,
            permit: None,
            end: None,
        });
        sim.push(a.at, Ev::Arrive(i as u32));
    }
    sim.enter_phase(0, 0);
    sim.push(0, Ev::Sample);
    sim.run();
    Ok(sim.report())
}

impl Sim<'_> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn run(&mut self) {
        let cutoff = self.s.duration_ms.saturating_add(MAX_DRAIN_MS);
        let mut events = 0u64;
        while let Some(Reverse((now, _, ev))) = self.heap.pop() {
            events += 1;
            if now > cutoff || events > MAX_EVENTS {
                break;
            }
            match ev {
                Ev::Arrive(r) => self.arrive(now, r),
                Ev::Attempt(r) => self.attempt(now, r),
                Ev::Served(c) => self.served(now, c),
                Ev::ErrorReply {
                    call,
                    status,
                    retry_after_ms,
                } => {
                    let v = self.classifier.classify_status(status, None);
                    self.deliver(
                        now,
                        call,
                        Answer::Failure {
                            outcome: v.outcome,
                            retryable: v.retryable,
                            retry_after_ms,
                        },
                    );
                }
                Ev::Timeout(c) => self.deliver(
                    now,
                    c,
                    Answer::Failure {
                        outcome: Outcome::Failure,
                        retryable: true,
                        retry_after_ms: None,
                    },
                ),
                Ev::PhaseEnd(p) => self.phase_end(now, p as usize),
                Ev::Sample => self.sample(now),
            }
        }
    }

    // ----- phases -----

    fn current_phase(&self) -> Option<&Phase> {
        self.s.upstream.phases.get(self.phase)
    }

    fn enter_phase(&mut self, now: u64, index: usize) {
        self.phase = index;
        let s = self.s;
        let phases = &s.upstream.phases;
        if let Some(p) = phases.get(index) {
            if p.is_outage() && self.outage_start.is_none() {
                self.outage_start = Some(now);
            }
            self.push(
                now.saturating_add(p.duration_ms),
                Ev::PhaseEnd(index as u32),
            );
        }
        let more_outage = phases.iter().skip(index).any(Phase::is_outage);
        if self.outage_start.is_some() && self.recovered_at.is_none() && !more_outage {
            self.recovered_at = Some(now);
        }
        self.dispatch(now);
    }

    fn phase_end(&mut self, now: u64, index: usize) {
        if index != self.phase {
            return;
        }
        if let Some(quiet) = self.current_phase().and_then(|p| p.until_quiet_ms) {
            let quiet_end = self.last_received.map_or(now, |t| t.saturating_add(quiet));
            if quiet_end > now {
                self.push(quiet_end, Ev::PhaseEnd(index as u32));
                return;
            }
        }
        self.enter_phase(now, index + 1);
    }

    // ----- the upstream -----

    fn receive(&mut self, now: u64, call: u32) {
        self.last_received = Some(now);
        self.upstream_calls += 1;
        self.timeline.add_call(now);
        if self.outage_start.is_some_and(|t| now >= t) && self.recovered_at.is_none() {
            self.calls_in_outage += 1;
        }
        let (p, status, retry_after_ms) = match self.current_phase() {
            Some(ph) => (
                ph.failure_probability(),
                ph.error_status(),
                ph.retry_after_ms,
            ),
            None => (0.0, 529, None),
        };
        let error_at = now.saturating_add(self.s.upstream.error_latency_ms);
        if p > 0.0 && (p >= 1.0 || self.upstream_rng.next_unit() < p) {
            let reply = Ev::ErrorReply {
                call,
                status,
                retry_after_ms,
            };
            self.push(error_at, reply);
            return;
        }
        if let Some(limit) = self.s.upstream.queue_limit {
            if self.queue.len() >= limit as usize {
                // A full queue sheds the call with a bare 529, whatever the phase.
                let reply = Ev::ErrorReply {
                    call,
                    status: 529,
                    retry_after_ms: None,
                };
                self.push(error_at, reply);
                return;
            }
        }
        self.queue.push_back(call);
        self.dispatch(now);
    }

    fn dispatch(&mut self, now: u64) {
        if self
            .current_phase()
            .is_some_and(|p| p.kind == PhaseKind::Stalled)
        {
            return;
        }
        let limit = match self.current_phase() {
            Some(p) if p.kind == PhaseKind::Overloaded => p.concurrency,
            _ => self.s.upstream.concurrency,
        }
        .unwrap_or(u32::MAX);
        while self.busy < limit {
            let Some(c) = self.queue.pop_front() else {
                break;
            };
            let abandoned = self.calls.get(c as usize).is_some_and(|call| !call.waiting);
            if abandoned && self.s.upstream.drop_abandoned {
                continue;
            }
            self.busy += 1;
            let service = first_token(&self.s.upstream, &mut self.upstream_rng);
            self.push(now.saturating_add(service), Ev::Served(c));
        }
    }

    fn served(&mut self, now: u64, c: u32) {
        self.busy = self.busy.saturating_sub(1);
        let waiting = self.calls.get(c as usize).is_some_and(|call| call.waiting);
        if waiting {
            self.deliver(now, c, Answer::Success);
        } else {
            self.wasted += 1;
        }
        self.dispatch(now);
    }

    // ----- the client -----

    fn arrive(&mut self, now: u64, r: u32) {
        if self.strategy.retries() {
            if let Some(req) = self.reqs.get(r as usize) {
                if let Some(b) = self.budgets.get_mut(req.budget) {
                    b.deposit(Timestamp(now));
                }
            }
        }
        self.attempt(now, r);
    }

    fn attempt(&mut self, now: u64, r: u32) {
        let Some(req) = self.reqs.get(r as usize) else {
            return;
        };
        let (bi, first) = (req.breaker, req.upstream_calls == 0);
        let mut permit = None;
        let gate = match self.s.composition {
            Composition::PerAttempt => true,
            Composition::PerRequest => first,
        };
        if self.strategy.has_breaker() && gate {
            let Some(breaker) = self.breakers.get_mut(bi) else {
                return;
            };
            let admission = breaker.acquire(Timestamp(now));
            match admission.result {
                Ok(p) => permit = Some(p),
                Err(rejected) => {
                    self.rejected_attempts += 1;
                    if rejected.reason == crate::breaker::RejectReason::Throttled {
                        self.throttled_attempts += 1;
                    }
                    // The chance this attempt would have been served well.
                    let p = self.current_phase().map_or(0.0, Phase::failure_probability);
                    self.refused_healthy += 1.0 - p;
                    self.timeline.add_rejected(now);
                    let end = if first { End::FailedFast } else { End::Failed };
                    self.finish(now, r, end, Outcome::Ignored);
                    return;
                }
            }
        }
        let c = self.calls.len() as u32;
        let per_attempt = self.s.composition == Composition::PerAttempt;
        self.calls.push(Call {
            req: r,
            waiting: true,
            permit: if per_attempt { permit } else { None },
        });
        if let Some(req) = self.reqs.get_mut(r as usize) {
            req.upstream_calls += 1;
            if !per_attempt && permit.is_some() {
                req.permit = permit;
            }
        }
        self.push(now.saturating_add(self.s.call_timeout_ms), Ev::Timeout(c));
        self.receive(now, c);
    }

    fn deliver(&mut self, now: u64, c: u32, result: Answer) {
        let Some(call) = self.calls.get_mut(c as usize) else {
            return;
        };
        if !call.waiting {
            return;
        }
        call.waiting = false;
        let (r, permit) = (call.req, call.permit);
        let outcome = match result {
            Answer::Success => Outcome::Success,
            Answer::Failure { outcome, .. } => outcome,
        };
        if outcome == Outcome::Failure {
            self.upstream_failures += 1;
        }
        if let (Some(permit), Some(req)) = (permit, self.reqs.get(r as usize)) {
            if let Some(b) = self.breakers.get_mut(req.breaker) {
                let _ = b.report(Timestamp(now), permit, outcome);
            }
        }
        match result {
            Answer::Success => self.finish(now, r, End::Succeeded, Outcome::Success),
            Answer::Failure {
                outcome,
                retryable,
                retry_after_ms,
            } => {
                if !self.strategy.retries() {
                    self.finish(now, r, End::Failed, outcome);
                    return;
                }
                let Some(req) = self.reqs.get_mut(r as usize) else {
                    return;
                };
                let budget = self.budgets.get_mut(req.budget);
                let decision = self.policy.decide(
                    &mut req.retry,
                    Timestamp(now),
                    AttemptFailure {
                        retryable,
                        retry_after_ms,
                    },
                    &mut self.retry_rng,
                    budget,
                );
                match decision {
                    RetryDecision::Retry { delay_ms, .. } => {
                        self.push(now.saturating_add(delay_ms), Ev::Attempt(r));
                    }
                    RetryDecision::GiveUp(_) => self.finish(now, r, End::Failed, outcome),
                }
            }
        }
    }

    /// Ends a request; under `breaker(retry(call))` the run's outcome goes to the breaker.
    fn finish(&mut self, now: u64, r: u32, end: End, outcome: Outcome) {
        let Some(req) = self.reqs.get_mut(r as usize) else {
            return;
        };
        if req.end.is_some() {
            return;
        }
        req.end = Some((now, end));
        if let Some(permit) = req.permit.take() {
            if let Some(b) = self.breakers.get_mut(req.breaker) {
                let _ = b.report(Timestamp(now), permit, outcome);
            }
        }
    }

    fn sample(&mut self, now: u64) {
        if !self.breakers.is_empty() {
            let t = Timestamp(now);
            let sum: f64 = self
                .breakers
                .iter()
                .map(|b| match b.state_at(t) {
                    State::Closed => 0.0,
                    State::HalfOpen => 0.5,
                    State::Open => 1.0,
                })
                .sum();
            self.timeline
                .set_breaker(now, sum / self.breakers.len() as f64);
        }
        // Keep sampling while anything else is pending, or until the arrival window ends.
        if !self.heap.is_empty() || now < self.s.duration_ms {
            self.push(now.saturating_add(BUCKET_MS), Ev::Sample);
        }
    }

    // ----- results -----

    fn report(self) -> StrategyReport {
        let s = self.s;
        let affected_latency = s.affected_latency();
        let mut latencies = Vec::with_capacity(self.reqs.len());
        let (mut ok, mut failed, mut fast, mut unfinished) = (0u64, 0u64, 0u64, 0u64);
        let mut last_affected_end: Option<u64> = None;
        let mut last_affected_arrival: Option<u64> = None;
        let recovered = self.recovered_at;
        for req in &self.reqs {
            let (end_at, end) = match req.end {
                Some(e) => e,
                None => {
                    unfinished += 1;
                    let cut = s.duration_ms.saturating_add(MAX_DRAIN_MS);
                    (cut.max(req.arrival), End::Failed)
                }
            };
            let latency = end_at.saturating_sub(req.arrival);
            latencies.push(latency);
            match end {
                End::Succeeded => ok += 1,
                End::Failed => failed += 1,
                End::FailedFast => fast += 1,
            }
            let affected = end != End::Succeeded || latency > affected_latency;
            if affected {
                let after_recovery = match recovered {
                    Some(r) => end_at > r,
                    None => true,
                };
                if after_recovery {
                    last_affected_end = Some(last_affected_end.map_or(end_at, |t| t.max(end_at)));
                }
                last_affected_arrival =
                    Some(last_affected_arrival.map_or(req.arrival, |t| t.max(req.arrival)));
            }
        }
        latencies.sort_unstable();
        let tail = (s.duration_ms / 10).clamp(1, 10_000);
        let still_affected_at_end =
            last_affected_arrival.is_some_and(|a| a.saturating_add(tail) >= s.duration_ms);
        let affected_after = match (self.outage_start, recovered) {
            (Some(_), Some(r)) => Some(last_affected_end.map_or(0, |t| t.saturating_sub(r))),
            _ => None,
        };
        let opened = self.breakers.iter().map(|b| b.stats().opened).sum();
        StrategyReport {
            strategy: self.strategy,
            requests: self.reqs.len() as u64,
            upstream_calls: self.upstream_calls,
            upstream_calls_during_outage: self.calls_in_outage,
            peak_upstream_calls_per_s: self.timeline.peak_calls(),
            wasted_calls: self.wasted,
            rejected_attempts: self.rejected_attempts,
            throttled_attempts: self.throttled_attempts,
            upstream_failures: self.upstream_failures,
            refused_healthy: self.refused_healthy.round() as u64,
            succeeded: ok,
            failed,
            failed_fast: fast,
            unfinished,
            latency_p50_ms: percentile(&latencies, 50.0),
            latency_p99_ms: percentile(&latencies, 99.0),
            outage_start_ms: self.outage_start,
            recovered_at_ms: recovered,
            affected_after_recovery_ms: affected_after,
            still_affected_at_end,
            breaker_opened: opened,
            timeline: self.timeline,
        }
    }
}

/// Nearest-rank percentile of sorted values; 0 for none.
/// One call's service time (in these scenarios the time to the first token): `latency_ms`, or
/// `slow_ms` for the heavy tail's share of calls, each spread by `latency_jitter`. The tail's draw
/// is made only when it has a share, so that scenarios without one replay as before.
pub(crate) fn first_token(u: &Upstream, rng: &mut SplitMix64) -> u64 {
    let slow = u.slow_share > 0.0 && rng.next_unit() < u.slow_share;
    let base = if slow { u.slow_ms } else { u.latency_ms } as f64;
    let spread = if u.latency_jitter > 0.0 {
        1.0 + u.latency_jitter * (2.0 * rng.next_unit() - 1.0)
    } else {
        1.0
    };
    (base * spread).max(0.0) as u64
}

pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted.len()) - 1;
    sorted.get(i).copied().unwrap_or(0)
}
