//! A property test of the shared breaker as a distributed system: N lease clients and one
//! coordinator in one process, on a manual clock, over a network that loses, duplicates, delays
//! and reorders messages, with coordinator restarts from the last persisted record, failed
//! writes that are rolled back, client restarts (fresh names, or the same name in a new session)
//! and clients whose clocks are minutes off; and the operations a fleet lives through: deploys
//! that change the settings (adopted, as Redis-store instances do, or installed, as the Durable
//! Object does), refusals (401, 404, 429), reports the host abandoned, and clocks stepped back or
//! forward by 10 minutes on clients and on the coordinator. Among them, a hostile session (a
//! holder of the service token): forged batches within the protocol's limits (many successes,
//! failures and shed calls, random client names, sessions and numbers).
//!
//! After every step:
//! - no outcome is counted twice: the coordinator has counted at most the outcomes of the
//!   distinct batches ever sent, and a batch number never stands for two contents;
//! - never more live probes in the cluster than `half_open_max_probes`: probe tickets held by
//!   clients whose lease has not run out;
//! - every exchange a client builds passes the coordinator's checks, none of its batches is
//!   refused, and its JSON is at most 64 KiB.
//!
//! At the end, liveness, whatever came before: with a healthy upstream and a quiet network, once
//! time passes, every client is CLOSED and off its local breaker, though the hostile session
//! keeps reporting forged successes and shed calls.
#![cfg(feature = "json")]

use breakwater::shared::json;
use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::{Answer, Next, Op as Request};
use std::collections::{BTreeMap, VecDeque};

use breakwater::shared::protocol::{
    Batch, Counts, Exchange, ExchangeReply, MAX_BODY_BYTES, MAX_SEQ,
};
use breakwater::shared::{
    session_key, Coordinator, Decision, LeaseClient, LeaseOptions, LocalTime, OnMismatch, Record,
    SharedSpec, Ticket,
};
use breakwater::{BreakerConfig, Outcome, State, Timestamp, TripRule, Window, CLOCK_STEP_MS};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

#[derive(Clone, Copy, Debug)]
enum Fate {
    Deliver,
    LoseRequest,
    LoseReply,
    Duplicate,
    Delay,
    WriteFails,
    /// The coordinator refuses with this 4xx status (a rotated token, a name not deployed yet,
    /// a proxy's limit); nothing reaches it.
    Refused(u16),
    /// The request reaches the coordinator, but the host dropped it (a cancelled call): no
    /// answer is fed back, and the client is told with `abandon`.
    Abandon,
}

#[derive(Clone, Debug)]
enum Op {
    Advance(u64),
    Call {
        client: usize,
        hold: bool,
        fate: Fate,
    },
    Flush {
        client: usize,
        force: bool,
        fate: Fate,
    },
    Release {
        client: usize,
        outcome: Outcome,
    },
    DeliverDelayed {
        pick: usize,
    },
    Upstream(bool),
    Burst {
        client: usize,
        n: u32,
        failures: bool,
    },
    RestartCoordinator,
    RestartClient {
        client: usize,
        same_name: bool,
    },
    /// A deploy: the coordinator restarts from the record under the other settings, adopting
    /// the stored ones or installing its own.
    Deploy {
        adopt: bool,
    },
    /// An operator's reset (installs the configured settings).
    Reset,
    /// A client's clock is stepped by ±10 minutes.
    ClientClockStep {
        client: usize,
        forward: bool,
    },
    /// The coordinator's clock is stepped by ±10 minutes.
    CoordinatorClockStep {
        forward: bool,
    },
    /// A hostile session (a holder of the service token): one batch of forged counts within
    /// the protocol's limits, under any client name, session and number, of the current
    /// generation or not.
    Hostile(Forged),
}

#[derive(Clone, Copy, Debug)]
struct Forged {
    client: u32,
    session: u64,
    seq: u64,
    successes: u32,
    failures: u32,
    throttled: u32,
    current: bool,
}

const STEP_MS: i64 = 600_000;

struct Node {
    client: LeaseClient,
    offset: i64,
    /// Calls admitted and not reported yet: (ticket, coordinator time of the grant if a probe).
    /// A probe's grant: its time on the world's clock and on the coordinator's, and its
    /// generation. A probe is live while both clocks say its lease runs (a coordinator clock
    /// stepped forward ends it early there, and for good: the coordinator let the slot go, so
    /// a step back later does not revive it) and its round has not ended (a probe still running
    /// when the breaker closed is a call of the CLOSED breaker, not of the next round).
    held: Vec<(Ticket, Option<Granted>)>,
    restarts: u32,
    name: String,
}

/// When a probe was granted (the world's clock, the coordinator's) and its generation.
type Granted = (u64, u64, u32);

enum Pending {
    Acquire {
        node: usize,
        req: Exchange,
        generation: u32,
    },
    Report {
        node: usize,
        req: Exchange,
        generation: u32,
    },
}

struct World {
    /// The settings hosts are configured with now; `specs` holds both sides of a deploy.
    spec: SharedSpec,
    specs: [SharedSpec; 2],
    /// The coordinator's clock, off the world's by this much.
    co_offset: i64,
    /// The latest time the coordinator's breaker had seen at the last check.
    co_latest: u64,
    /// Sessions whose batches were renumbered after a gap refusal (a number may then stand
    /// for another content, of a batch that was never applied).
    renumbered: std::collections::BTreeSet<String>,
    now: u64,
    upstream_ok: bool,
    co: Coordinator,
    persisted: Option<String>,
    nodes: Vec<Node>,
    delayed: VecDeque<Pending>,
    /// `session~seq` → the batch's outcomes, as first sent.
    sent: BTreeMap<String, (u64, String)>,
    sent_outcomes: u64,
    /// Outcomes of batches the coordinator could not vouch for (see `step`).
    maybe_twice: u64,
    /// `session~seq` of every batch that reached the coordinator.
    delivered: std::collections::BTreeSet<String>,
    session_counter: u64,
}

fn local(now: u64, offset: i64) -> LocalTime {
    LocalTime(now.saturating_add_signed(offset))
}

impl World {
    fn new(spec: SharedSpec, offsets: &[i64]) -> World {
        // The other side of a deploy: one option changed.
        let other = SharedSpec::new(
            spec.breaker
                .with_open_duration_ms(spec.breaker.open_duration_ms * 2)
                .with_open_backoff(1.5, spec.breaker.open_duration_ms * 8),
        )
        .with_lease_ms(spec.lease_ms);
        let mut w = World {
            spec,
            specs: [spec, other],
            co_offset: 0,
            co_latest: 0,
            renumbered: Default::default(),
            now: 1_800_000_000_000,
            upstream_ok: true,
            co: Coordinator::fresh("upstream", spec).unwrap(),
            persisted: None,
            nodes: Vec::new(),
            delayed: VecDeque::new(),
            sent: BTreeMap::new(),
            sent_outcomes: 0,
            maybe_twice: 0,
            delivered: Default::default(),
            session_counter: 0,
        };
        for (i, &offset) in offsets.iter().enumerate() {
            let client = w.new_client(&format!("n{i}"));
            w.nodes.push(Node {
                client,
                offset,
                held: Vec::new(),
                restarts: 0,
                name: format!("n{i}"),
            });
        }
        w
    }

    fn new_client(&mut self, name: &str) -> LeaseClient {
        self.session_counter += 1;
        let opts = LeaseOptions::new()
            .with_max_batch(50)
            .with_retry_unreachable_ms(200)
            .with_local(
                BreakerConfig::new()
                    .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
                    .with_open_duration_ms(300)
                    .with_probe_timeout_ms(300),
            );
        LeaseClient::new(name.into(), self.session_counter, opts).unwrap()
    }

    fn outcome(&self) -> Outcome {
        if self.upstream_ok {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    }

    /// Checks a request the way the network would carry it, and remembers its batches.
    fn carry(&mut self, req: &Exchange) -> Result<(), TestCaseError> {
        let json = json::to_string(req);
        prop_assert!(json.len() <= MAX_BODY_BYTES, "{} bytes", json.len());
        prop_assert!(req.validate().is_ok(), "{:?}", req.validate());
        for b in &req.batches {
            prop_assert!(b.check().is_ok(), "{:?}", b.check());
            let key = format!(
                "{}~{}",
                session_key(&req.client, req.session).expect("a valid client"),
                b.seq
            );
            let content = json::to_string(b);
            let session = session_key(&req.client, req.session)
                .expect("a valid client")
                .to_string();
            match self.sent.get(&key) {
                Some((_, before)) if before == &content => {}
                Some(_) if self.renumbered.contains(&session) => {
                    // A renumbered batch took the number of one that was never applied.
                    let counted: u64 = b.counts.iter().map(|c| c.total()).sum();
                    self.sent_outcomes += counted;
                    self.sent.insert(key, (counted, content));
                }
                Some((_, before)) => prop_assert_eq!(before, &content, "batch {} changed", key),
                None => {
                    let counted: u64 = b.counts.iter().map(|c| c.total()).sum();
                    self.sent_outcomes += counted;
                    self.sent.insert(key, (counted, content));
                }
            }
        }
        Ok(())
    }

    /// Delivers `req` to the coordinator: one step, persisted if it changed something.
    fn step(
        &mut self,
        req: &Exchange,
        acquire: bool,
    ) -> Result<Option<ExchangeReply>, TestCaseError> {
        // A batch sent again to a coordinator that no longer knows its session (it forgot it,
        // or restarted from an older record) is counted again: at least once, never zero.
        let known = self.co.record().clients;
        let session = session_key(&req.client, req.session).expect("a valid client");
        if !known.contains_key(&session) {
            for b in &req.batches {
                let key = format!("{session}~{}", b.seq);
                if self.delivered.contains(&key) {
                    self.maybe_twice += b.counts.iter().map(|c| c.total()).sum::<u64>();
                }
            }
        }
        for b in &req.batches {
            self.delivered.insert(format!("{session}~{}", b.seq));
        }
        let result = self
            .co
            .exchange(self.co_now(), req, ExchangeOp::acquire_if(acquire));
        let (reply, step) = match result {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e:?}"))),
        };
        // The only refusal a client's own batches may meet: numbered too far ahead after many
        // were dropped, answered with the number to resume from.
        prop_assert!(
            reply.refused.iter().all(|r| r.last_applied.is_some()),
            "{:?}",
            reply.refused
        );
        if !reply.refused.is_empty() {
            self.renumbered.insert(
                session_key(&req.client, req.session)
                    .expect("a valid client")
                    .to_string(),
            );
        }
        if step.changed {
            self.persisted = Some(self.co.record_json().unwrap());
        }
        Ok(Some(reply))
    }

    fn co_now(&self) -> Timestamp {
        Timestamp(self.now.saturating_add_signed(self.co_offset))
    }

    fn restart_coordinator(&mut self) {
        self.restart_as(self.spec, OnMismatch::Install);
    }

    fn restart_as(&mut self, spec: SharedSpec, policy: OnMismatch) {
        self.co =
            Coordinator::load_json("upstream", spec, self.persisted.as_deref(), policy).unwrap();
        // A restart is not a clock step: the record's time is where the check starts again.
        self.co_latest = self.co.breaker().latest().0;
    }

    /// `fate` applied to one request from node `i`.
    fn send(
        &mut self,
        i: usize,
        req: Exchange,
        acquire: bool,
        fate: Fate,
    ) -> Result<Option<ExchangeReply>, TestCaseError> {
        self.carry(&req)?;
        match fate {
            Fate::Deliver => self.step(&req, acquire),
            Fate::LoseRequest => Ok(None),
            Fate::LoseReply => {
                self.step(&req, acquire)?;
                Ok(None)
            }
            Fate::Duplicate => {
                self.step(&req, acquire)?;
                self.step(&req, acquire)
            }
            Fate::WriteFails => {
                // The host could not store the step: it goes back to the stored record and
                // answers 503.
                let before = self.persisted.clone();
                self.step(&req, acquire)?;
                self.persisted = before;
                self.restart_coordinator();
                Ok(None)
            }
            Fate::Refused(_) => Ok(None),
            Fate::Abandon => {
                self.step(&req, acquire)?;
                let now = local(self.now, self.nodes[i].offset);
                self.nodes[i].client.abandon(now);
                Ok(None)
            }
            Fate::Delay => {
                let generation = self.nodes[i].restarts;
                self.delayed.push_back(if acquire {
                    Pending::Acquire {
                        node: i,
                        req,
                        generation,
                    }
                } else {
                    Pending::Report {
                        node: i,
                        req,
                        generation,
                    }
                });
                Ok(None)
            }
        }
    }

    fn on_acquired(&mut self, i: usize, reply: Option<ExchangeReply>, hold: bool, fate: Fate) {
        let now = local(self.now, self.nodes[i].offset);
        let outcome = self.outcome();
        let co_now = self.co_now().0;
        let node = &mut self.nodes[i];
        match reply {
            Some(reply) => {
                let generation = reply.permit.map_or(0, |p| p.generation);
                if let Next::Admit(ticket) =
                    node.client
                        .on_answer(now, Request::Acquire, Answer::Reply(&reply))
                {
                    let granted = ticket.is_probe().then_some((self.now, co_now, generation));
                    if hold {
                        node.held.push((ticket, granted));
                    } else {
                        let _ = node.client.record(now, ticket, outcome);
                    }
                }
            }
            None => {
                let answer = match fate {
                    Fate::Refused(status) => Answer::Refused {
                        status,
                        reason: "refused",
                    },
                    Fate::Abandon => return,
                    _ => Answer::Unreachable("lost"),
                };
                let _ = node.client.on_answer(now, Request::Acquire, answer);
            }
        }
    }

    fn call(&mut self, i: usize, hold: bool, fate: Fate) -> Result<(), TestCaseError> {
        let now = local(self.now, self.nodes[i].offset);
        let outcome = self.outcome();
        match self.nodes[i].client.admit(now) {
            Decision::Admit(ticket) => {
                if hold {
                    self.nodes[i].held.push((ticket, None));
                } else if self.nodes[i].client.record(now, ticket, outcome) {
                    self.flush(i, false, fate)?;
                }
            }
            Decision::Reject(_) => {}
            Decision::Acquire => {
                let req = self.nodes[i].client.acquire_request();
                let reply = self.send(i, req, true, fate)?;
                if !matches!(fate, Fate::Delay) {
                    self.on_acquired(i, reply, hold, fate);
                }
            }
            Decision::Refresh => {
                if !self.nodes[i].client.in_flight() {
                    self.flush(i, true, fate)?;
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self, i: usize, force: bool, fate: Fate) -> Result<(), TestCaseError> {
        let Some(req) = self.nodes[i].client.begin_flush(force) else {
            return Ok(());
        };
        let reply = self.send(i, req, false, fate)?;
        if !matches!(fate, Fate::Delay) {
            self.on_reported(i, reply, fate);
        }
        Ok(())
    }

    fn on_reported(&mut self, i: usize, reply: Option<ExchangeReply>, fate: Fate) {
        let now = local(self.now, self.nodes[i].offset);
        let node = &mut self.nodes[i];
        let answer = match (&reply, fate) {
            (Some(reply), _) => Answer::Reply(reply),
            (None, Fate::Refused(status)) => Answer::Refused {
                status,
                reason: "refused",
            },
            (None, Fate::Abandon) => return,
            (None, _) => Answer::Unreachable("lost"),
        };
        let _ = node.client.on_answer(now, Request::Report, answer);
    }

    fn deliver_delayed(&mut self, pick: usize) -> Result<(), TestCaseError> {
        if self.delayed.is_empty() {
            return Ok(());
        }
        let p = self.delayed.remove(pick % self.delayed.len()).unwrap();
        match p {
            Pending::Acquire {
                node,
                req,
                generation,
            } => {
                let reply = self.step(&req, true)?;
                // A restarted client no longer waits for this answer.
                if self.nodes[node].restarts == generation {
                    self.on_acquired(node, reply, false, Fate::Deliver);
                }
            }
            Pending::Report {
                node,
                req,
                generation,
            } => {
                let reply = self.step(&req, false)?;
                if self.nodes[node].restarts == generation {
                    self.on_reported(node, reply, Fate::Deliver);
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let n = self.nodes.len();
        match *op {
            Op::Advance(ms) => self.now += ms,
            Op::Call { client, hold, fate } => self.call(client % n, hold, fate)?,
            Op::Flush {
                client,
                force,
                fate,
            } => {
                if !self.nodes[client % n].client.in_flight() {
                    self.flush(client % n, force, fate)?
                }
            }
            Op::Release { client, outcome } => {
                let i = client % n;
                let now = local(self.now, self.nodes[i].offset);
                if let Some((ticket, _)) = self.nodes[i].held.pop() {
                    let _ = self.nodes[i].client.record(now, ticket, outcome);
                }
            }
            Op::DeliverDelayed { pick } => self.deliver_delayed(pick)?,
            Op::Upstream(ok) => self.upstream_ok = ok,
            Op::Burst {
                client,
                n: count,
                failures,
            } => {
                let i = client % n;
                let now = local(self.now, self.nodes[i].offset);
                for k in 0..count {
                    let outcome = if failures && k % 7 == 0 {
                        Outcome::Failure
                    } else {
                        Outcome::Success
                    };
                    let _ = self.nodes[i].client.record_untracked(now, outcome);
                }
            }
            Op::RestartCoordinator => self.restart_coordinator(),
            Op::RestartClient { client, same_name } => {
                let i = client % n;
                let name = if same_name {
                    self.nodes[i].name.clone()
                } else {
                    format!("{}r{}", self.nodes[i].name, self.nodes[i].restarts + 1)
                };
                let fresh = self.new_client(&name);
                let node = &mut self.nodes[i];
                node.client = fresh;
                node.held.clear();
                node.restarts += 1;
                node.name = name;
            }
            Op::Deploy { adopt } => {
                let next = if self.spec == self.specs[0] {
                    self.specs[1]
                } else {
                    self.specs[0]
                };
                self.spec = next;
                let policy = if adopt {
                    OnMismatch::Adopt
                } else {
                    OnMismatch::Install
                };
                self.restart_as(next, policy);
            }
            Op::Reset => {
                let step = self.co.reset(self.co_now());
                if step.changed {
                    self.persisted = Some(self.co.record_json().unwrap());
                }
            }
            Op::ClientClockStep { client, forward } => {
                let node = &mut self.nodes[client % n];
                node.offset += if forward { STEP_MS } else { -STEP_MS };
            }
            Op::CoordinatorClockStep { forward } => {
                self.co_offset += if forward { STEP_MS } else { -STEP_MS };
            }
            Op::Hostile(forged) => self.hostile(forged)?,
        }
        self.check()
    }

    /// A forged batch, straight to the coordinator: whatever it answers, nothing it counts may
    /// exceed what was sent.
    fn hostile(&mut self, f: Forged) -> Result<(), TestCaseError> {
        let generation = self.co.breaker().generation();
        let counts = Counts {
            generation: Some(if f.current {
                generation
            } else {
                generation.wrapping_add(1)
            }),
            successes: f.successes,
            failures: f.failures,
            ignored: 0,
            throttled: f.throttled,
        };
        self.sent_outcomes += counts.total();
        let req = Exchange {
            client: format!("h{}", f.client),
            session: f.session,
            batches: vec![Batch {
                seq: f.seq,
                counts: vec![counts],
                probes: Vec::new(),
            }],
        };
        let result = self.co.exchange(self.co_now(), &req, ExchangeOp::Report);
        let (_, step) = result.map_err(|e| TestCaseError::fail(format!("refused: {e:?}")))?;
        if step.changed {
            self.persisted = Some(self.co.record_json().unwrap());
        }
        Ok(())
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        let timeout = self.co.spec().breaker.probe_timeout_ms;
        // A coordinator that saw its clock stepped back (by more than `CLOCK_STEP_MS`) moved its
        // leases back with it, so that they keep the length they had left (`observe_time`): on
        // its clock, the leases it granted before end that much earlier. Stepped forward again,
        // the clock then ends them while their holders still count them, and a second probe
        // may be granted before the first reports: what a clock stepped back and forth costs,
        // since a step forward reads as time passing.
        let latest = self.co.breaker().latest().0;
        if latest.saturating_add(CLOCK_STEP_MS) < self.co_latest {
            let back = self.co_latest - latest;
            for (_, granted) in self.nodes.iter_mut().flat_map(|n| n.held.iter_mut()) {
                if let Some((_, co, _)) = granted {
                    if *co != 0 {
                        *co = co.saturating_sub(back);
                    }
                }
            }
        }
        self.co_latest = latest;
        // A lease the coordinator's clock has ended stays ended (its slot was let go): forget
        // its coordinator time, so that a clock stepped back later does not count it again.
        let co_now = self.co_now().0;
        for (_, granted) in self.nodes.iter_mut().flat_map(|n| n.held.iter_mut()) {
            if let Some((_, co, _)) = granted {
                if *co + timeout <= co_now {
                    *co = 0;
                }
            }
        }
        let view = self.co.breaker();
        let counted = self.co.record().counters.counted_outcomes;
        prop_assert!(
            counted <= self.sent_outcomes + self.maybe_twice,
            "counted {} outcomes, but only {} were ever sent (+ {} it could not vouch for)",
            counted,
            self.sent_outcomes,
            self.maybe_twice
        );
        let live: usize = self
            .nodes
            .iter()
            .flat_map(|n| n.held.iter())
            .filter(|(t, granted)| {
                t.is_probe()
                    && granted.is_some_and(|(g, co, generation)| {
                        g + timeout > self.now
                            && co + timeout > self.co_now().0
                            && generation == view.generation()
                    })
            })
            .count();
        prop_assert!(
            live <= self.co.spec().breaker.half_open_max_probes as usize,
            "{} live probes, limit {} (state {:?})",
            live,
            self.co.spec().breaker.half_open_max_probes,
            view.state()
        );
        Ok(())
    }

    /// Liveness, once the trouble stops (a quiet network): a failing upstream opens the shared
    /// breaker, and one lease later no client believes it CLOSED.
    fn fail_then_open(&mut self) -> Result<(), TestCaseError> {
        self.upstream_ok = false;
        let lease = self.co.spec().lease_ms;
        // Rounds long enough that 40 of them outlast five of a time window: the successes
        // counted before the upstream failed age out of it.
        let window = match self.co.spec().breaker.trip {
            TripRule::FailuresInWindow { window_ms, .. } => window_ms,
            TripRule::FailureRate {
                window: Window::Millis(ms),
                ..
            } => ms,
            _ => 0,
        };
        let round = (lease + 1).max(window / 8);
        let mut opened = false;
        for _ in 0..40 {
            self.now += round;
            for i in 0..self.nodes.len() {
                let now = local(self.now, self.nodes[i].offset);
                let held = std::mem::take(&mut self.nodes[i].held);
                for (ticket, _) in held {
                    let _ = self.nodes[i].client.record(now, ticket, Outcome::Failure);
                }
                // More calls than any generated rule needs within its window.
                for _ in 0..12 {
                    self.call(i, false, Fate::Deliver)?;
                    self.check()?;
                }
                self.flush(i, false, Fate::Deliver)?;
            }
            if self.co.breaker().state_at(self.co_now()) != State::Closed {
                opened = true;
                break;
            }
        }
        prop_assert!(
            opened,
            "a failing upstream never opened it: {:?} {:?}",
            self.co.breaker().stats(),
            self.co.record().counters
        );
        // One lease later every client has heard (each asks at least once per lease).
        self.now += lease + 1;
        for i in 0..self.nodes.len() {
            self.call(i, false, Fate::Deliver)?;
            self.check()?;
        }
        let believers: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| {
                let c = &self.nodes[i].client;
                c.known_state() == Some(State::Closed) && !c.deciding_locally()
            })
            .collect();
        if self.co.breaker().state() == State::Open {
            prop_assert!(
                believers.is_empty(),
                "clients {:?} still believe CLOSED one lease after it opened",
                believers
            );
        }
        Ok(())
    }

    /// Liveness, once the trouble stops (a quiet network): a failing upstream opens it (see
    /// `fail_then_open`); then a healthy upstream closes it, and every client ends CLOSED, off
    /// its local breaker.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        while !self.delayed.is_empty() {
            self.deliver_delayed(0)?;
        }
        let lease = self.co.spec().lease_ms;
        self.fail_then_open()?;
        self.upstream_ok = true;
        let c = &self.co.spec().breaker;
        let pause = c.max_open_duration_ms.max(c.probe_timeout_ms).max(lease) + 1_000;
        for round in 0..12 {
            self.now += pause;
            // A hostile session keeps reporting: forged successes and shed calls, which must
            // not keep the honest clients from closing.
            self.hostile(Forged {
                client: 0,
                session: 7,
                seq: round + 1,
                successes: 20_000,
                failures: 0,
                throttled: 20_000,
                current: true,
            })?;
            for i in 0..self.nodes.len() {
                let now = local(self.now, self.nodes[i].offset);
                let held = std::mem::take(&mut self.nodes[i].held);
                for (ticket, _) in held {
                    let _ = self.nodes[i].client.record(now, ticket, Outcome::Success);
                }
                for _ in 0..3 {
                    self.call(i, false, Fate::Deliver)?;
                    self.check()?;
                }
                self.flush(i, true, Fate::Deliver)?;
            }
            if self.nodes.iter().all(|n| {
                n.client.known_state() == Some(State::Closed) && !n.client.deciding_locally()
            }) {
                return Ok(());
            }
        }
        let states: Vec<_> = self
            .nodes
            .iter()
            .map(|n| (n.client.known_state(), n.client.deciding_locally()))
            .collect();
        Err(TestCaseError::fail(format!(
            "not every client closed: {states:?}, coordinator {:?}",
            self.co.breaker().state()
        )))
    }
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        12 => Just(Fate::Deliver),
        2 => Just(Fate::LoseRequest),
        2 => Just(Fate::LoseReply),
        2 => Just(Fate::Duplicate),
        2 => Just(Fate::Delay),
        1 => Just(Fate::WriteFails),
        1 => prop_oneof![Just(401u16), Just(404), Just(429)].prop_map(Fate::Refused),
        1 => Just(Fate::Abandon),
    ]
}

fn op(burst: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => prop_oneof![3 => 0u64..50, 2 => 50u64..600, 1 => 600u64..5_000].prop_map(Op::Advance),
        14 => (0usize..8, prop::bool::weighted(0.4), fate())
            .prop_map(|(client, hold, fate)| Op::Call { client, hold, fate }),
        3 => (0usize..8, any::<bool>(), fate()).prop_map(|(client, force, fate)| Op::Flush { client, force, fate }),
        3 => (0usize..8, prop_oneof![Just(Outcome::Success), Just(Outcome::Failure), Just(Outcome::Ignored)])
            .prop_map(|(client, outcome)| Op::Release { client, outcome }),
        3 => any::<usize>().prop_map(|pick| Op::DeliverDelayed { pick }),
        3 => prop::bool::weighted(0.6).prop_map(Op::Upstream),
        1 => (0usize..8, 0..burst, any::<bool>()).prop_map(|(client, n, failures)| Op::Burst { client, n, failures }),
        2 => Just(Op::RestartCoordinator),
        1 => (0usize..8, any::<bool>()).prop_map(|(client, same_name)| Op::RestartClient { client, same_name }),
        1 => any::<bool>().prop_map(|adopt| Op::Deploy { adopt }),
        1 => Just(Op::Reset),
        1 => (0usize..8, any::<bool>()).prop_map(|(client, forward)| Op::ClientClockStep { client, forward }),
        1 => any::<bool>().prop_map(|forward| Op::CoordinatorClockStep { forward }),
        2 => forged().prop_map(Op::Hostile),
    ]
}

fn forged() -> impl Strategy<Value = Forged> {
    (
        (
            0u32..50,
            0u64..=MAX_SEQ,
            prop_oneof![1u64..200, 1u64..=MAX_SEQ],
        ),
        (0u32..20_000, 0u32..20_000, 0u32..20_000, any::<bool>()),
    )
        .prop_map(
            |((client, session, seq), (successes, failures, throttled, current))| Forged {
                client,
                session,
                seq,
                successes,
                failures,
                throttled,
                current,
            },
        )
}

fn spec() -> impl Strategy<Value = SharedSpec> {
    let trip = prop_oneof![
        (1u32..5).prop_map(|threshold| TripRule::ConsecutiveFailures { threshold }),
        (1u32..5, 100u64..5_000).prop_map(|(threshold, window_ms)| TripRule::FailuresInWindow {
            threshold,
            window_ms
        }),
        (10.0f64..90.0, 1u32..10, 2u32..20).prop_map(|(p, minimum_calls, n)| {
            TripRule::FailureRate {
                threshold_percent: p,
                minimum_calls,
                window: Window::Calls(n),
            }
        }),
        (10.0f64..90.0, 1u32..10, 100u64..5_000).prop_map(|(p, minimum_calls, ms)| {
            TripRule::FailureRate {
                threshold_percent: p,
                minimum_calls,
                window: Window::Millis(ms),
            }
        }),
    ];
    (
        trip,
        50u64..2_000,
        50u64..3_000,
        1u32..4,
        1u32..3,
        20u64..1_000,
        any::<u64>(),
    )
        .prop_map(
            |(trip, open, probe_timeout, probes, successes, lease, seed)| {
                SharedSpec::new(
                    BreakerConfig::new()
                        .with_trip(trip)
                        .with_open_duration_ms(open)
                        .with_open_backoff(1.5, open * 4)
                        .with_open_jitter(0.2)
                        .with_probe_timeout_ms(probe_timeout)
                        .with_half_open_max_probes(probes)
                        .with_half_open_success_threshold(successes)
                        .with_seed(seed),
                )
                .with_lease_ms(lease)
            },
        )
}

fn offsets() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(
        prop_oneof![3 => Just(0i64), 1 => -600_000i64..600_000],
        1..5,
    )
}

fn run(spec: SharedSpec, offsets: Vec<i64>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut w = World::new(spec, &offsets);
    for op in &ops {
        w.apply(op)?;
    }
    w.settle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn the_shared_breaker_holds_under_loss_duplication_delay_and_restarts(
        spec in spec(),
        offsets in offsets(),
        ops in prop::collection::vec(op(200), 1..60),
    ) {
        run(spec, offsets, ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Long outages at high volume: bursts of up to 400 000 outcomes at once.
    #[test]
    fn millions_of_outcomes_stay_bounded_and_counted_once(
        spec in spec(),
        offsets in offsets(),
        ops in prop::collection::vec(op(400_000), 1..30),
    ) {
        run(spec, offsets, ops)?;
    }
}

#[test]
fn a_record_written_by_the_property_world_restores() {
    // The persisted form the property test restarts from is the one hosts store.
    let spec = SharedSpec::default();
    let mut w = World::new(spec, &[0, 0]);
    w.apply(&Op::Upstream(false)).unwrap();
    for _ in 0..10 {
        w.apply(&Op::Call {
            client: 0,
            hold: false,
            fate: Fate::Deliver,
        })
        .unwrap();
    }
    let record: Record = json::from_str(w.persisted.as_deref().unwrap()).unwrap();
    assert_eq!(record.snapshot.state, State::Open);
    w.settle().unwrap();
}
