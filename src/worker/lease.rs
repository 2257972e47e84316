//! The client side of the protocol as a sans-IO state machine: the lease on the last known state,
//! the batches of outcomes, and the local fallback. The workers-rs client (`client.rs`) and the
//! JavaScript client (`js/shared.ts`) are shells around this logic: they read the clock, send the
//! [`Exchange`]s it produces, and feed the replies back.
//!
//! - CLOSED lease: admit locally until it runs out; outcomes wait in a batch. A failure (or a
//!   probe outcome) is sent at once, together with whatever successes are waiting; successes
//!   alone are sent when `max_batch` of them wait or with the lease renewal.
//! - OPEN lease: reject locally until the object's retry-after has passed.
//! - HALF_OPEN: every admission asks the object, which grants the probe permits.
//! - Object unreachable: a local breaker decides (or, fail-closed, everything is rejected) until
//!   `retry_unreachable_ms` has passed; the outcomes still wait in batches and are sent once the
//!   object answers again (counted as stale if the state moved on meanwhile).
//!
//! Only one report is in flight at a time; a batch whose answer was lost is sent again with the
//! same number, and the object counts it once.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use super::protocol::{
    Batch, Counts, Exchange, ExchangeReply, Lease, ProbeReport, MAX_BATCHES,
    MAX_GENERATIONS_PER_BATCH, MAX_PROBES_PER_BATCH,
};
use crate::breaker::{
    Breaker, BreakerConfig, Mode, Outcome, Permit, RejectReason, Rejected, State,
};
use crate::clock::Timestamp;
use crate::error::ConfigError;

/// How a client behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaseOptions {
    /// Send the waiting successes once this many outcomes wait. Default: 1 000.
    pub max_batch: u32,
    /// When the object cannot be reached, reject every call (true) instead of letting the local
    /// breaker decide (false). Default: false (fail-open).
    pub fail_closed: bool,
    /// How long to stay on the local fallback before trying the object again, in ms.
    /// Default: 1 000.
    pub retry_unreachable_ms: u64,
    /// The local breaker used while the object is unreachable. Default: [`BreakerConfig::new`].
    pub fallback: BreakerConfig,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl LeaseOptions {
    /// The defaults listed on each field.
    pub const fn new() -> Self {
        LeaseOptions {
            max_batch: 1_000,
            fail_closed: false,
            retry_unreachable_ms: 1_000,
            fallback: BreakerConfig::new(),
        }
    }
    /// Sets [`max_batch`](Self::max_batch).
    pub const fn with_max_batch(mut self, n: u32) -> Self {
        self.max_batch = n;
        self
    }
    /// Sets [`fail_closed`](Self::fail_closed).
    pub const fn with_fail_closed(mut self, fail_closed: bool) -> Self {
        self.fail_closed = fail_closed;
        self
    }
    /// Sets [`retry_unreachable_ms`](Self::retry_unreachable_ms).
    pub const fn with_retry_unreachable_ms(mut self, ms: u64) -> Self {
        self.retry_unreachable_ms = ms;
        self
    }
    /// Sets [`fallback`](Self::fallback).
    pub const fn with_fallback(mut self, config: BreakerConfig) -> Self {
        self.fallback = config;
        self
    }
}

/// Proof of admission, to report the outcome with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "report the outcome with this ticket"]
pub struct Ticket {
    kind: TicketKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TicketKind {
    /// Admitted on a CLOSED lease (or by an object permit while CLOSED).
    Lease { generation: Option<u32> },
    /// A half-open probe the object granted.
    Probe {
        generation: u32,
        id: u32,
        issued_at: u64,
    },
    /// Admitted by the local fallback breaker.
    Local {
        permit: Permit,
        generation: Option<u32>,
    },
}

impl Ticket {
    /// Whether this is a half-open probe granted by the object.
    pub fn is_probe(&self) -> bool {
        matches!(self.kind, TicketKind::Probe { .. })
    }
    /// Whether the local fallback admitted it.
    pub fn is_fallback(&self) -> bool {
        matches!(self.kind, TicketKind::Local { .. })
    }
}

/// What to do about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it, then [`LeaseClient::record`] its outcome with the ticket.
    Admit(Ticket),
    /// Do not run it.
    Reject(Rejected),
    /// Send [`LeaseClient::acquire_request`] to `/acquire`, then ask
    /// [`LeaseClient::on_acquire_reply`].
    Acquire,
    /// The CLOSED lease ran out: send [`LeaseClient::begin_flush`] (forced) to `/report`, then
    /// ask [`LeaseClient::admit`] again.
    Refresh,
}

/// Something a host should tell its listeners about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// The state this client acts on changed.
    StateChanged {
        /// The state before (none before the first answer).
        from: Option<State>,
        /// The state now.
        to: State,
    },
    /// The object could not be reached; the local fallback decides now.
    Fallback {
        /// What went wrong.
        reason: String,
    },
    /// The object answers again.
    Recovered,
}

#[derive(Clone, Copy, Debug)]
struct Known {
    state: State,
    mode: Mode,
    generation: u32,
    /// Local time until which the lease holds (CLOSED) or rejection lasts (OPEN).
    until: u64,
}

/// One isolate's view of a shared breaker.
#[derive(Debug)]
pub struct LeaseClient {
    id: String,
    opts: LeaseOptions,
    known: Option<Known>,
    pending: Vec<Counts>,
    pending_probes: Vec<ProbeReport>,
    outbox: Vec<Batch>,
    next_seq: u64,
    in_flight: bool,
    fallback_until: Option<u64>,
    local: Breaker,
    events: VecDeque<ClientEvent>,
    requests: u64,
}

impl LeaseClient {
    /// A client named `id` (1 to 64 ASCII letters, digits, `-`, `_`; unique per isolate).
    pub fn new(id: String, opts: LeaseOptions) -> Result<Self, ConfigError> {
        let local = Breaker::new(opts.fallback)?;
        Ok(LeaseClient {
            id,
            opts,
            known: None,
            pending: Vec::new(),
            pending_probes: Vec::new(),
            outbox: Vec::new(),
            next_seq: 1,
            in_flight: false,
            fallback_until: None,
            local,
            events: VecDeque::new(),
            requests: 0,
        })
    }

    /// The client's identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The state this client last learned, if any.
    pub fn known_state(&self) -> Option<State> {
        self.known.map(|k| k.state)
    }

    /// Whether the local fallback is deciding.
    pub fn in_fallback(&self) -> bool {
        self.fallback_until.is_some()
    }

    /// Requests sent to the object so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Outcomes not yet acknowledged by the object.
    pub fn unacknowledged(&self) -> u64 {
        let pending: u64 = self.pending.iter().map(Counts::total).sum();
        let outbox: u64 = self
            .outbox
            .iter()
            .map(|b| b.counts.iter().map(Counts::total).sum::<u64>() + b.probes.len() as u64)
            .sum();
        pending + outbox + self.pending_probes.len() as u64
    }

    /// The next event to report, oldest first.
    pub fn next_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// Decides about a call at `now` (local clock, ms).
    pub fn admit(&mut self, now: Timestamp) -> Decision {
        let now = now.0;
        if let Some(until) = self.fallback_until {
            if now < until || self.in_flight {
                return self.admit_locally(now, until);
            }
            return match self.known {
                Some(k) if k.state == State::Closed => Decision::Refresh,
                _ => Decision::Acquire,
            };
        }
        let Some(k) = self.known else {
            return Decision::Acquire;
        };
        if k.mode == Mode::Disabled {
            return if now < k.until || self.in_flight {
                Decision::Admit(self.lease_ticket())
            } else {
                Decision::Refresh
            };
        }
        match k.state {
            State::Closed if now < k.until || self.in_flight => {
                Decision::Admit(self.lease_ticket())
            }
            State::Closed => Decision::Refresh,
            State::Open if now < k.until => Decision::Reject(Rejected {
                reason: if k.mode == Mode::Isolated {
                    RejectReason::Isolated
                } else {
                    RejectReason::Open
                },
                retry_after_ms: (k.until - now).max(1),
            }),
            State::Open | State::HalfOpen => Decision::Acquire,
        }
    }

    /// What to send to `/acquire`. Carries no batches: reports travel on `/report` only, one at
    /// a time.
    pub fn acquire_request(&mut self) -> Exchange {
        self.requests += 1;
        Exchange {
            client: self.id.clone(),
            batches: Vec::new(),
        }
    }

    /// Feeds the object's answer to `/acquire`.
    pub fn on_acquire_reply(&mut self, now: Timestamp, reply: &ExchangeReply) -> Decision {
        self.on_lease(now.0, &reply.lease);
        if let Some(p) = reply.permit {
            let kind = match p.probe {
                Some(id) => TicketKind::Probe {
                    generation: p.generation,
                    id,
                    issued_at: p.issued_at,
                },
                None => TicketKind::Lease {
                    generation: Some(p.generation),
                },
            };
            return Decision::Admit(Ticket { kind });
        }
        let rejected = reply.rejected.map(Rejected::from).unwrap_or(Rejected {
            reason: RejectReason::Open,
            retry_after_ms: 1,
        });
        Decision::Reject(rejected)
    }

    /// Records how an admitted call ended. Returns whether a report should be sent now
    /// ([`flush_due`](Self::flush_due)).
    pub fn record(&mut self, now: Timestamp, ticket: Ticket, outcome: Outcome) -> bool {
        match ticket.kind {
            TicketKind::Lease { generation } => self.count(generation, outcome),
            TicketKind::Probe {
                generation,
                id,
                issued_at,
            } => self.pending_probes.push(ProbeReport {
                generation,
                id,
                issued_at,
                outcome: outcome.into(),
            }),
            TicketKind::Local { permit, generation } => {
                let _ = self.local.report(now, permit, outcome);
                self.count(generation, outcome);
            }
        }
        self.flush_due(now)
    }

    /// Records an outcome without a ticket (counted under the current lease).
    pub fn record_untracked(&mut self, now: Timestamp, outcome: Outcome) -> bool {
        let generation = self.known.map(|k| k.generation);
        self.count(generation, outcome);
        self.flush_due(now)
    }

    /// Whether a report should be sent now: a failure or a probe outcome waits, or `max_batch`
    /// outcomes do, and no report is in flight and the object is not known to be unreachable.
    pub fn flush_due(&self, now: Timestamp) -> bool {
        if self.in_flight || self.fallback_until.is_some_and(|u| now.0 < u) {
            return false;
        }
        let waiting: u64 = self.pending.iter().map(Counts::total).sum();
        !self.pending_probes.is_empty()
            || self.pending.iter().any(|c| c.failures > 0)
            || waiting >= u64::from(self.opts.max_batch)
    }

    /// Seals what waits into a numbered batch and returns the report to send to `/report` (every
    /// unacknowledged batch, oldest first). `None` when a report is already in flight, or when
    /// nothing waits and `force` (renew the lease anyway) is false.
    pub fn begin_flush(&mut self, force: bool) -> Option<Exchange> {
        if self.in_flight {
            return None;
        }
        let has_waiting = !self.pending.is_empty() || !self.pending_probes.is_empty();
        if has_waiting && self.outbox.len() < MAX_BATCHES {
            let take = self.pending_probes.len().min(MAX_PROBES_PER_BATCH);
            let probes: Vec<ProbeReport> = self.pending_probes.drain(..take).collect();
            self.outbox.push(Batch {
                seq: self.next_seq,
                counts: core::mem::take(&mut self.pending),
                probes,
            });
            self.next_seq += 1;
        }
        if self.outbox.is_empty() && !force {
            return None;
        }
        self.in_flight = true;
        self.requests += 1;
        Some(Exchange {
            client: self.id.clone(),
            batches: self.outbox.clone(),
        })
    }

    /// Feeds the object's answer to `/report`.
    pub fn on_flush_reply(&mut self, now: Timestamp, reply: &ExchangeReply) {
        self.in_flight = false;
        self.outbox.retain(|b| !reply.acked.contains(&b.seq));
        self.on_lease(now.0, &reply.lease);
    }

    /// The object could not be reached (network error, overload, an answer that is not the
    /// protocol's). `was_flush`: the failed request was the report from `begin_flush`.
    pub fn on_unreachable(&mut self, now: Timestamp, was_flush: bool, reason: String) {
        if was_flush {
            self.in_flight = false;
        }
        if self.fallback_until.is_none() {
            self.events.push_back(ClientEvent::Fallback { reason });
        }
        self.fallback_until = Some(now.0.saturating_add(self.opts.retry_unreachable_ms));
    }

    fn admit_locally(&mut self, now: u64, until: u64) -> Decision {
        if self.opts.fail_closed {
            return Decision::Reject(Rejected {
                reason: RejectReason::Open,
                retry_after_ms: until.saturating_sub(now).max(1),
            });
        }
        match self.local.acquire(Timestamp(now)).result {
            Ok(permit) => Decision::Admit(Ticket {
                kind: TicketKind::Local {
                    permit,
                    generation: self.known.map(|k| k.generation),
                },
            }),
            Err(r) => Decision::Reject(r),
        }
    }

    fn lease_ticket(&self) -> Ticket {
        Ticket {
            kind: TicketKind::Lease {
                generation: self.known.map(|k| k.generation),
            },
        }
    }

    fn on_lease(&mut self, now: u64, lease: &Lease) {
        let until = match (lease.state, lease.mode) {
            (_, Mode::Disabled) | (State::Closed, _) => now.saturating_add(lease.lease_ms),
            (State::Open, _) => now.saturating_add(lease.retry_after_ms.max(1)),
            (State::HalfOpen, _) => now,
        };
        let before = self.known.map(|k| k.state);
        if before != Some(lease.state) {
            self.events.push_back(ClientEvent::StateChanged {
                from: before,
                to: lease.state,
            });
        }
        self.known = Some(Known {
            state: lease.state,
            mode: lease.mode,
            generation: lease.generation,
            until,
        });
        if self.fallback_until.take().is_some() {
            self.events.push_back(ClientEvent::Recovered);
        }
    }

    fn count(&mut self, generation: Option<u32>, outcome: Outcome) {
        let idx = match self.pending.iter().position(|c| c.generation == generation) {
            Some(i) => i,
            None => {
                if self.pending.len() >= MAX_GENERATIONS_PER_BATCH && !self.pending.is_empty() {
                    // Outcomes of long-gone generations are stale whatever their number: fold the
                    // oldest entry into "no generation" to keep the batch bounded.
                    let oldest = self.pending.remove(0);
                    self.fold_stale(oldest);
                }
                self.pending.push(Counts {
                    generation,
                    ..Counts::default()
                });
                self.pending.len() - 1
            }
        };
        if let Some(c) = self.pending.get_mut(idx) {
            match outcome {
                Outcome::Success => c.successes = c.successes.saturating_add(1),
                Outcome::Failure => c.failures = c.failures.saturating_add(1),
                Outcome::Ignored => c.ignored = c.ignored.saturating_add(1),
            }
        }
    }

    fn fold_stale(&mut self, c: Counts) {
        if let Some(none) = self.pending.iter_mut().find(|p| p.generation.is_none()) {
            none.successes = none.successes.saturating_add(c.successes);
            none.failures = none.failures.saturating_add(c.failures);
            none.ignored = none.ignored.saturating_add(c.ignored);
        } else {
            self.pending.insert(
                0,
                Counts {
                    generation: None,
                    ..c
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::TripRule;
    use crate::worker::config::BreakerSpec;
    use crate::worker::engine::Engine;

    fn engine() -> Engine {
        Engine::fresh(
            "upstream",
            BreakerSpec {
                breaker: BreakerConfig::new()
                    .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
                    .with_open_duration_ms(1_000),
                lease_ms: 500,
            },
        )
        .unwrap()
    }

    /// Runs one call through `client` against `engine` the way a shell does.
    fn call(
        c: &mut LeaseClient,
        e: &mut Engine,
        now: u64,
        outcome: Outcome,
    ) -> Result<Ticket, Rejected> {
        let t = Timestamp(now);
        for _ in 0..3 {
            match c.admit(t) {
                Decision::Admit(ticket) => {
                    if c.record(t, ticket, outcome) {
                        flush(c, e, now, false);
                    }
                    return Ok(ticket);
                }
                Decision::Reject(r) => return Err(r),
                Decision::Acquire => {
                    let req = c.acquire_request();
                    let (reply, _) = e.exchange(t, &req, true);
                    match c.on_acquire_reply(t, &reply) {
                        Decision::Admit(ticket) => {
                            if c.record(t, ticket, outcome) {
                                flush(c, e, now, false);
                            }
                            return Ok(ticket);
                        }
                        Decision::Reject(r) => return Err(r),
                        _ => unreachable!(),
                    }
                }
                Decision::Refresh => flush(c, e, now, true),
            }
        }
        panic!("no decision")
    }

    fn flush(c: &mut LeaseClient, e: &mut Engine, now: u64, force: bool) {
        if let Some(req) = c.begin_flush(force) {
            let (reply, _) = e.exchange(Timestamp(now), &req, false);
            c.on_flush_reply(Timestamp(now), &reply);
        }
    }

    #[test]
    fn healthy_calls_cost_one_request_per_lease() {
        let mut e = engine();
        let mut c = LeaseClient::new("a".into(), LeaseOptions::new()).unwrap();
        for i in 0..1_000 {
            let _ = call(&mut c, &mut e, 1_000 + i / 10, Outcome::Success).unwrap();
        }
        // 100 ms of calls under a 500 ms lease: the first acquire, and one report once
        // `max_batch` (1 000) successes waited.
        assert_eq!(c.requests(), 2);
        flush(&mut c, &mut e, 2_000, true);
        assert_eq!(c.unacknowledged(), 0);
        let view = e.view(Timestamp(2_000));
        assert_eq!(view.stats.successes, 1_000);
    }

    #[test]
    fn failures_are_sent_at_once_and_a_trip_is_seen_by_the_reporter() {
        let mut e = engine();
        let mut c = LeaseClient::new("a".into(), LeaseOptions::new()).unwrap();
        for _ in 0..3 {
            let _ = call(&mut c, &mut e, 10, Outcome::Failure).unwrap();
        }
        assert_eq!(c.known_state(), Some(State::Open));
        let r = call(&mut c, &mut e, 10, Outcome::Success).unwrap_err();
        assert_eq!(r.reason, RejectReason::Open);
        assert_eq!(r.retry_after_ms, 1_000);
    }

    #[test]
    fn other_clients_see_the_trip_within_one_lease() {
        let mut e = engine();
        let mut a = LeaseClient::new("a".into(), LeaseOptions::new()).unwrap();
        let mut b = LeaseClient::new("b".into(), LeaseOptions::new()).unwrap();
        let _ = call(&mut b, &mut e, 0, Outcome::Success).unwrap();
        for _ in 0..3 {
            let _ = call(&mut a, &mut e, 100, Outcome::Failure).unwrap();
        }
        // b still holds its lease until 500, then renews and learns.
        assert!(call(&mut b, &mut e, 499, Outcome::Success).is_ok());
        assert!(call(&mut b, &mut e, 500, Outcome::Success).is_err());
        assert_eq!(b.known_state(), Some(State::Open));
    }

    #[test]
    fn one_probe_for_all_clients() {
        let mut e = engine();
        let mut clients: Vec<LeaseClient> = (0..8)
            .map(|i| LeaseClient::new(alloc::format!("c{i}"), LeaseOptions::new()).unwrap())
            .collect();
        for c in clients.iter_mut() {
            let _ = call(c, &mut e, 0, Outcome::Failure);
        }
        assert_eq!(e.breaker().state(), State::Open);
        // After the open period every client asks; one gets the probe (reported later).
        let mut probes = Vec::new();
        for (i, c) in clients.iter_mut().enumerate() {
            if c.admit(Timestamp(1_000)) == Decision::Refresh {
                // Clients that still held a CLOSED lease renew it first and learn OPEN→HALF_OPEN.
                flush(c, &mut e, 1_000, true);
            }
            match c.admit(Timestamp(1_000)) {
                Decision::Acquire => {
                    let req = c.acquire_request();
                    let (reply, _) = e.exchange(Timestamp(1_000), &req, true);
                    if let Decision::Admit(t) = c.on_acquire_reply(Timestamp(1_000), &reply) {
                        assert!(t.is_probe());
                        probes.push((i, t));
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(probes.len(), 1);
        let (i, t) = probes[0];
        let holder = &mut clients[i];
        assert!(holder.record(Timestamp(1_010), t, Outcome::Success));
        flush(holder, &mut e, 1_010, false);
        assert_eq!(e.breaker().state(), State::Closed);
        for c in clients.iter_mut() {
            assert!(call(c, &mut e, 1_020, Outcome::Success).is_ok());
        }
    }

    #[test]
    fn unreachable_object_falls_back_and_counts_arrive_later() {
        let mut e = engine();
        let mut c = LeaseClient::new("a".into(), LeaseOptions::new()).unwrap();
        let _ = call(&mut c, &mut e, 0, Outcome::Success).unwrap();
        while c.next_event().is_some() {}
        assert_eq!(c.admit(Timestamp(600)), Decision::Refresh);
        let req = c.begin_flush(true).unwrap();
        c.on_unreachable(Timestamp(600), true, "down".into());
        assert!(matches!(c.next_event(), Some(ClientEvent::Fallback { .. })));
        match c.admit(Timestamp(601)) {
            Decision::Admit(t) => {
                assert!(t.is_fallback());
                let _ = c.record(Timestamp(601), t, Outcome::Success);
            }
            other => panic!("{other:?}"),
        }
        // Fail-closed rejects instead.
        let mut closed =
            LeaseClient::new("b".into(), LeaseOptions::new().with_fail_closed(true)).unwrap();
        closed.on_unreachable(Timestamp(0), false, "down".into());
        assert!(matches!(closed.admit(Timestamp(1)), Decision::Reject(_)));
        // The lost report is sent again with the same number; the object counts it once.
        let (_, _) = e.exchange(Timestamp(600), &req, false);
        assert_eq!(c.admit(Timestamp(1_600)), Decision::Refresh);
        flush(&mut c, &mut e, 1_600, true);
        assert_eq!(c.next_event(), Some(ClientEvent::Recovered));
        assert_eq!(c.unacknowledged(), 0);
        assert_eq!(e.view(Timestamp(1_600)).stats.successes, 2);
    }
}
