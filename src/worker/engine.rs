//! What the Durable Object does with a request, without the Durable Object: a breaker, the
//! clients' batch numbers, and the counters, driven by the protocol's messages with `now` passed
//! in. The object (see `object.rs`) only reads bodies, loads, calls this and persists.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::config::BreakerSpec;
use super::protocol::{
    Batch, Counts, Exchange, ExchangeReply, Lease, ObjectCounters, StateView, WirePermit,
    MAX_CLIENTS,
};
use crate::breaker::{Breaker, Mode, Outcome, Permit, PermitKind, State, Transition};
use crate::clock::Timestamp;
use crate::snapshot::Snapshot;

/// The storage key the record lives under.
pub const STORAGE_KEY: &str = "breaker";

/// What the object persists: the breaker's snapshot, the clients' last batch numbers and the
/// counters that should survive a restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The breaker.
    pub snapshot: Snapshot,
    /// Client id → (highest applied `seq`, last time seen).
    #[serde(default)]
    pub clients: BTreeMap<String, (u64, u64)>,
    /// Counters.
    #[serde(default)]
    pub counters: ObjectCounters,
}

/// One breaker as the object holds it.
#[derive(Debug)]
pub struct Engine {
    name: String,
    spec: BreakerSpec,
    breaker: Breaker,
    clients: BTreeMap<String, (u64, u64)>,
    counters: ObjectCounters,
    restore_error: Option<String>,
}

/// The result of a step: whether the persisted record changed, and the transitions to report
/// once it is stored.
#[derive(Debug, Default)]
pub struct Step {
    /// The record must be written.
    pub changed: bool,
    /// State changes, in order.
    pub transitions: Vec<Transition>,
}

impl Engine {
    /// A CLOSED breaker (first use, or a stored record that could not be read).
    pub fn fresh(name: &str, spec: BreakerSpec) -> Result<Self, String> {
        let breaker = Breaker::new(spec.breaker).map_err(|e| e.to_string())?;
        Ok(Engine {
            name: name.to_string(),
            spec,
            breaker,
            clients: BTreeMap::new(),
            counters: ObjectCounters::default(),
            restore_error: None,
        })
    }

    /// Restores from a stored record. Anything unreadable (not JSON, another format version, a
    /// snapshot that does not fit the configuration) gives a CLOSED breaker and the reason, kept
    /// for the state view and meant for the log; never a panic.
    pub fn load(name: &str, spec: BreakerSpec, stored: Option<&str>) -> Result<Self, String> {
        let Some(text) = stored else {
            return Self::fresh(name, spec);
        };
        let restored = serde_json::from_str::<Record>(text)
            .map_err(|e| format!("stored record is not readable: {e}"))
            .and_then(|mut record| {
                // The core's `isolate` leaves `open_until` behind `opened_at`, which its own
                // snapshot check then calls corrupt; an isolated breaker ignores `open_until`,
                // so line it up (see the report on the core).
                let snap = &mut record.snapshot;
                if snap.mode == Mode::Isolated
                    && snap.state == State::Open
                    && snap.open_until < snap.opened_at
                {
                    snap.open_until = snap.opened_at;
                }
                Breaker::restore(spec.breaker, record.snapshot)
                    .map(|b| (b, record.clients, record.counters))
                    .map_err(|e| format!("stored snapshot cannot be restored: {e}"))
            });
        match restored {
            Ok((breaker, clients, counters)) => Ok(Engine {
                name: name.to_string(),
                spec,
                breaker,
                clients,
                counters: ObjectCounters {
                    requests: 0,
                    acquires: 0,
                    reports: 0,
                    ..counters
                },
                restore_error: None,
            }),
            Err(reason) => {
                let mut engine = Self::fresh(name, spec)?;
                engine.restore_error = Some(reason);
                Ok(engine)
            }
        }
    }

    /// A CLOSED breaker standing in for a stored record that could not even be read.
    pub fn unreadable(name: &str, spec: BreakerSpec, reason: String) -> Result<Self, String> {
        let mut engine = Self::fresh(name, spec)?;
        engine.restore_error = Some(reason);
        Ok(engine)
    }

    /// Why the stored record was not restored, if it was not.
    pub fn restore_error(&self) -> Option<&str> {
        self.restore_error.as_deref()
    }

    /// The breaker.
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The record to persist, as JSON.
    pub fn record_json(&self) -> Result<String, String> {
        let record = Record {
            snapshot: self.breaker.snapshot(),
            clients: self.clients.clone(),
            counters: self.counters,
        };
        serde_json::to_string(&record).map_err(|e| e.to_string())
    }

    /// The lease a client gets at `now`.
    pub fn lease(&self, now: Timestamp) -> Lease {
        let b = &self.breaker;
        let state = b.state_at(now);
        let retry_after_ms = match (state, b.mode()) {
            (State::Open, Mode::Isolated) => self.spec.lease_ms,
            (State::Open, _) => b
                .open_until()
                .map(|t| t.0.saturating_sub(now.0).max(1))
                .unwrap_or(1),
            _ => 0,
        };
        Lease {
            state,
            mode: b.mode(),
            generation: b.generation(),
            lease_ms: self.spec.lease_ms,
            retry_after_ms,
            now: now.0,
        }
    }

    /// `/acquire` and `/report`: applies the batches (oldest first, each at most once per
    /// client), then, for `/acquire`, asks the breaker for a permit.
    pub fn exchange(
        &mut self,
        now: Timestamp,
        req: &Exchange,
        acquire: bool,
    ) -> (ExchangeReply, Step) {
        let mut step = Step::default();
        self.counters.requests = self.counters.requests.saturating_add(1);
        if acquire {
            self.counters.acquires = self.counters.acquires.saturating_add(1);
        } else {
            self.counters.reports = self.counters.reports.saturating_add(1);
        }
        let mut acked = Vec::with_capacity(req.batches.len());
        for batch in &req.batches {
            let last = self.clients.get(&req.client).map_or(0, |&(seq, _)| seq);
            if batch.seq <= last {
                self.counters.duplicate_batches = self.counters.duplicate_batches.saturating_add(1);
            } else {
                self.apply(now, batch, &mut step);
                self.remember(&req.client, batch.seq, now.0);
                self.counters.batches = self.counters.batches.saturating_add(1);
            }
            step.changed = true;
            acked.push(batch.seq);
        }
        let mut reply = ExchangeReply {
            lease: self.lease(now),
            permit: None,
            rejected: None,
            acked,
        };
        if acquire {
            let admission = self.breaker.acquire(now);
            step.changed = true;
            if let Some(t) = admission.transition {
                self.note(t, &mut step);
            }
            match admission.result {
                Ok(permit) => {
                    let probe = match permit.kind {
                        PermitKind::Probe { id } => {
                            self.counters.probes_granted =
                                self.counters.probes_granted.saturating_add(1);
                            Some(id)
                        }
                        PermitKind::Normal | PermitKind::Bypass => None,
                    };
                    reply.permit = Some(WirePermit {
                        generation: permit.generation,
                        probe,
                        issued_at: permit.issued_at.0,
                    });
                }
                Err(rejected) => reply.rejected = Some(rejected.into()),
            }
            reply.lease = self.lease(now);
        }
        (reply, step)
    }

    /// `/isolate`: forced OPEN until reset.
    pub fn isolate(&mut self, now: Timestamp) -> Step {
        let mut step = Step {
            changed: true,
            ..Step::default()
        };
        self.counters.requests = self.counters.requests.saturating_add(1);
        if let Some(t) = self.breaker.isolate(now) {
            self.note(t, &mut step);
        }
        step
    }

    /// `/reset`: CLOSED with clean counters.
    pub fn reset(&mut self, now: Timestamp) -> Step {
        let mut step = Step {
            changed: true,
            ..Step::default()
        };
        self.counters.requests = self.counters.requests.saturating_add(1);
        if let Some(t) = self.breaker.reset(now) {
            self.note(t, &mut step);
        }
        step
    }

    /// `/state`: nothing changes except the request counter.
    pub fn view(&mut self, now: Timestamp) -> StateView {
        self.counters.requests = self.counters.requests.saturating_add(1);
        let b = &self.breaker;
        StateView {
            name: self.name.clone(),
            lease: self.lease(now),
            opened_at: b.opened_at().map(|t| t.0),
            open_until: b.open_until().map(|t| t.0),
            probes_in_flight: b.probes_in_flight(),
            stats: *b.stats(),
            counters: self.counters,
            restore_error: self.restore_error.clone(),
        }
    }

    fn apply(&mut self, now: Timestamp, batch: &Batch, step: &mut Step) {
        for counts in &batch.counts {
            self.apply_counts(now, counts, step);
        }
        for p in &batch.probes {
            self.counters.probe_outcomes = self.counters.probe_outcomes.saturating_add(1);
            let permit = Permit {
                generation: p.generation,
                kind: PermitKind::Probe { id: p.id },
                issued_at: Timestamp(p.issued_at.min(now.0)),
            };
            if let Some(t) = self.breaker.report(now, permit, p.outcome.into()) {
                self.note(t, step);
            }
        }
    }

    /// Successes first, then ignored, then failures: a batch is sent when a failure happens,
    /// so its failures are the latest outcomes.
    fn apply_counts(&mut self, now: Timestamp, counts: &Counts, step: &mut Step) {
        // A generation the client never had (or `null`) is made stale on purpose.
        let generation = counts
            .generation
            .unwrap_or_else(|| self.breaker.generation().wrapping_add(1));
        let permit = Permit {
            generation,
            kind: PermitKind::Normal,
            issued_at: now,
        };
        self.counters.counted_outcomes = self
            .counters
            .counted_outcomes
            .saturating_add(counts.total());
        for (n, outcome) in [
            (counts.successes, Outcome::Success),
            (counts.ignored, Outcome::Ignored),
            (counts.failures, Outcome::Failure),
        ] {
            for _ in 0..n {
                if let Some(t) = self.breaker.report(now, permit, outcome) {
                    self.note(t, step);
                }
            }
        }
    }

    fn note(&mut self, t: Transition, step: &mut Step) {
        self.counters.note_incident(t.to, t.at.0);
        match t.to {
            State::HalfOpen => {
                self.counters.half_open_entered = self.counters.half_open_entered.saturating_add(1)
            }
            State::Closed => self.counters.closed = self.counters.closed.saturating_add(1),
            State::Open => {}
        }
        step.transitions.push(t);
    }

    fn remember(&mut self, client: &str, seq: u64, now: u64) {
        if !self.clients.contains_key(client) && self.clients.len() >= MAX_CLIENTS {
            // Forget the client seen longest ago.
            if let Some(oldest) = self
                .clients
                .iter()
                .min_by_key(|(_, &(_, seen))| seen)
                .map(|(k, _)| k.clone())
            {
                self.clients.remove(&oldest);
            }
        }
        self.clients.insert(client.to_string(), (seq, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::{BreakerConfig, TripRule};
    use crate::worker::protocol::{ProbeReport, WireOutcome};

    fn spec() -> BreakerSpec {
        BreakerSpec {
            breaker: BreakerConfig::new()
                .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
                .with_open_duration_ms(1_000),
            lease_ms: 500,
        }
    }

    fn batch(seq: u64, generation: u32, successes: u32, failures: u32) -> Batch {
        Batch {
            seq,
            counts: alloc::vec![Counts {
                generation: Some(generation),
                successes,
                failures,
                ignored: 0,
            }],
            probes: Vec::new(),
        }
    }

    fn exchange(client: &str, batches: Vec<Batch>) -> Exchange {
        Exchange {
            client: client.into(),
            batches,
        }
    }

    #[test]
    fn batched_failures_open_and_duplicates_count_once() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let t = Timestamp(10_000);
        let req = exchange("a", alloc::vec![batch(1, 0, 10, 3)]);
        let (reply, step) = e.exchange(t, &req, false);
        assert_eq!(reply.lease.state, State::Open);
        assert_eq!(reply.lease.retry_after_ms, 1_000);
        assert_eq!(reply.acked, [1]);
        assert_eq!(step.transitions.len(), 1);
        // Sent again after a lost answer: acknowledged, not counted.
        let (reply, _) = e.exchange(t, &req, false);
        assert_eq!(reply.acked, [1]);
        let view = e.view(t);
        assert_eq!(view.stats.successes, 10);
        assert_eq!(view.stats.failures, 3);
        assert_eq!(view.counters.duplicate_batches, 1);
    }

    #[test]
    fn exactly_one_probe_then_closes() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let (_, _) = e.exchange(
            Timestamp(0),
            &exchange("a", alloc::vec![batch(1, 0, 0, 3)]),
            false,
        );
        let later = Timestamp(1_000);
        let (first, _) = e.exchange(later, &exchange("a", Vec::new()), true);
        let permit = first.permit.unwrap();
        assert!(permit.probe.is_some());
        for client in ["b", "c", "d"] {
            let (other, _) = e.exchange(later, &exchange(client, Vec::new()), true);
            assert!(other.permit.is_none());
            assert_eq!(other.lease.state, State::HalfOpen);
        }
        let report = Batch {
            seq: 2,
            counts: Vec::new(),
            probes: alloc::vec![ProbeReport {
                generation: permit.generation,
                id: permit.probe.unwrap(),
                issued_at: permit.issued_at,
                outcome: WireOutcome::Success,
            }],
        };
        let (reply, _) = e.exchange(later, &exchange("a", alloc::vec![report]), false);
        assert_eq!(reply.lease.state, State::Closed);
        assert_eq!(e.view(later).counters.probes_granted, 1);
    }

    #[test]
    fn stale_generations_count_but_do_not_move_the_state() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let (_, _) = e.exchange(
            Timestamp(0),
            &exchange("a", alloc::vec![batch(1, 7, 0, 5)]),
            false,
        );
        assert_eq!(e.breaker().state(), State::Closed);
        assert_eq!(e.view(Timestamp(0)).stats.stale, 5);
        let unknown = Batch {
            seq: 2,
            counts: alloc::vec![Counts {
                generation: None,
                successes: 0,
                failures: 4,
                ignored: 0
            }],
            probes: Vec::new(),
        };
        let (_, _) = e.exchange(Timestamp(0), &exchange("a", alloc::vec![unknown]), false);
        assert_eq!(e.breaker().state(), State::Closed);
        assert_eq!(e.view(Timestamp(0)).stats.failures, 9);
    }

    #[test]
    fn record_round_trips_and_garbage_starts_closed() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let (_, _) = e.exchange(
            Timestamp(5),
            &exchange("a", alloc::vec![batch(1, 0, 0, 3)]),
            false,
        );
        let json = e.record_json().unwrap();
        let back = Engine::load("upstream", spec(), Some(&json)).unwrap();
        assert_eq!(back.breaker().state(), State::Open);
        assert_eq!(back.breaker().open_until(), Some(Timestamp(1_005)));
        assert!(back.restore_error().is_none());
        // The batch number survives too: a resend after the restart is not counted again.
        let mut back = back;
        let (reply, _) = back.exchange(
            Timestamp(6),
            &exchange("a", alloc::vec![batch(1, 0, 0, 3)]),
            false,
        );
        assert_eq!(reply.acked, [1]);
        assert_eq!(back.view(Timestamp(6)).stats.failures, 3);

        for garbage in ["", "{", "null", "{\"snapshot\":42}", "\u{0}\u{ff}"] {
            let e = Engine::load("upstream", spec(), Some(garbage)).unwrap();
            assert_eq!(e.breaker().state(), State::Closed);
            assert!(e.restore_error().is_some(), "{garbage:?}");
        }
        // A future format version.
        let future = json.replace("\"version\":1", "\"version\":99");
        let e = Engine::load("upstream", spec(), Some(&future)).unwrap();
        assert_eq!(e.breaker().state(), State::Closed);
        assert!(e.restore_error().unwrap().contains("version"));
    }

    #[test]
    fn isolate_and_reset() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let step = e.isolate(Timestamp(1));
        assert!(step.changed);
        let lease = e.lease(Timestamp(1));
        assert_eq!((lease.state, lease.mode), (State::Open, Mode::Isolated));
        assert_eq!(lease.retry_after_ms, 500);
        // An isolated breaker survives a restart.
        let json = e.record_json().unwrap();
        let back = Engine::load("upstream", spec(), Some(&json)).unwrap();
        assert!(back.restore_error().is_none(), "{:?}", back.restore_error());
        assert_eq!(back.breaker().mode(), Mode::Isolated);
        let mut e = back;
        let _ = e.reset(Timestamp(2));
        assert_eq!(e.lease(Timestamp(2)).state, State::Closed);
    }

    #[test]
    fn incidents_are_measured_from_opening_to_close_across_restarts() {
        let mut e = Engine::fresh("upstream", spec()).unwrap();
        let _ = e.isolate(Timestamp(1_000));
        assert_eq!(
            e.view(Timestamp(1_000)).counters.incident_since,
            Some(1_000)
        );
        let json = e.record_json().unwrap();
        let mut e = Engine::load("upstream", spec(), Some(&json)).unwrap();
        let _ = e.reset(Timestamp(21_000));
        let c = e.view(Timestamp(21_000)).counters;
        assert_eq!(c.incident_since, None);
        // 20 s: the `le="30"` bucket (index 3).
        assert_eq!(c.incidents, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(c.incident_ms, 20_000);
    }
}
