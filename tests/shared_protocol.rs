//! A property test of the shared breaker as a distributed system: N lease clients and one
//! coordinator in one process, on a manual clock, over a network that loses, duplicates, delays
//! and reorders messages, with coordinator restarts from the last persisted record, failed
//! writes that are rolled back, client restarts (fresh names, or the same name in a new session)
//! and clients whose clocks are minutes off.
//!
//! After every step:
//! - no outcome is counted twice: the coordinator has counted at most the outcomes of the
//!   distinct batches ever sent, and a batch number never stands for two contents;
//! - never more live probes in the cluster than `half_open_max_probes`: probe tickets held by
//!   clients whose lease has not run out;
//! - every exchange a client builds passes the coordinator's checks, none of its batches is
//!   refused, and its JSON is at most 64 KiB.
//!
//! At the end, liveness: with a healthy upstream and a quiet network, once time passes, every
//! client is CLOSED and off its local breaker.
#![cfg(feature = "json")]

use std::collections::{BTreeMap, VecDeque};

use breakwater::shared::protocol::{Exchange, ExchangeReply, MAX_BODY_BYTES};
use breakwater::shared::{
    session_key, Coordinator, Decision, LeaseClient, LeaseOptions, OnMismatch, Record, SharedSpec,
    Ticket,
};
use breakwater::{BreakerConfig, Outcome, State, Timestamp, TripRule, Window};
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
}

struct Node {
    client: LeaseClient,
    offset: i64,
    /// Calls admitted and not reported yet: (ticket, coordinator time of the grant if a probe).
    held: Vec<(Ticket, Option<u64>)>,
    restarts: u32,
    name: String,
}

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
    spec: SharedSpec,
    now: u64,
    upstream_ok: bool,
    co: Coordinator,
    persisted: Option<String>,
    nodes: Vec<Node>,
    delayed: VecDeque<Pending>,
    /// `session~seq` → the batch's outcomes, as first sent.
    sent: BTreeMap<String, (u64, String)>,
    sent_outcomes: u64,
    session_counter: u64,
}

fn local(now: u64, offset: i64) -> Timestamp {
    Timestamp(now.saturating_add_signed(offset))
}

impl World {
    fn new(spec: SharedSpec, offsets: &[i64]) -> World {
        let mut w = World {
            spec,
            now: 1_800_000_000_000,
            upstream_ok: true,
            co: Coordinator::fresh("upstream", spec).unwrap(),
            persisted: None,
            nodes: Vec::new(),
            delayed: VecDeque::new(),
            sent: BTreeMap::new(),
            sent_outcomes: 0,
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
            .with_fallback(
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
        let json = serde_json::to_string(req).unwrap();
        prop_assert!(json.len() <= MAX_BODY_BYTES, "{} bytes", json.len());
        prop_assert!(req.validate().is_ok(), "{:?}", req.validate());
        for b in &req.batches {
            prop_assert!(b.check().is_ok(), "{:?}", b.check());
            let key = format!("{}~{}", session_key(&req.client, req.session), b.seq);
            let content = serde_json::to_string(b).unwrap();
            match self.sent.get(&key) {
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
        let result = self.co.exchange(Timestamp(self.now), req, acquire);
        let (reply, step) = match result {
            Ok(r) => r,
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e:?}"))),
        };
        prop_assert!(reply.refused.is_empty(), "{:?}", reply.refused);
        if step.changed {
            self.persisted = Some(self.co.record_json().unwrap());
        }
        Ok(Some(reply))
    }

    fn restart_coordinator(&mut self) {
        self.co = Coordinator::load_json(
            "upstream",
            self.spec,
            self.persisted.as_deref(),
            OnMismatch::Install,
        )
        .unwrap();
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

    fn on_acquired(&mut self, i: usize, reply: Option<ExchangeReply>, hold: bool) {
        let now = local(self.now, self.nodes[i].offset);
        let outcome = self.outcome();
        let node = &mut self.nodes[i];
        match reply {
            Some(reply) => {
                if let Decision::Admit(ticket) = node.client.on_acquire_reply(now, &reply) {
                    let granted = ticket.is_probe().then_some(self.now);
                    if hold {
                        node.held.push((ticket, granted));
                    } else {
                        let _ = node.client.record(now, ticket, outcome);
                    }
                }
            }
            None => node.client.on_unreachable(now, false, "lost".into()),
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
                    self.on_acquired(i, reply, hold);
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
            self.on_reported(i, reply);
        }
        Ok(())
    }

    fn on_reported(&mut self, i: usize, reply: Option<ExchangeReply>) {
        let now = local(self.now, self.nodes[i].offset);
        let node = &mut self.nodes[i];
        match reply {
            Some(reply) => node.client.on_flush_reply(now, &reply),
            None => node.client.on_unreachable(now, true, "lost".into()),
        }
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
                    self.on_acquired(node, reply, false);
                }
            }
            Pending::Report {
                node,
                req,
                generation,
            } => {
                let reply = self.step(&req, false)?;
                if self.nodes[node].restarts == generation {
                    self.on_reported(node, reply);
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
        }
        self.check()
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let view = self.co.breaker();
        let counted = self.co.record().counters.counted_outcomes;
        prop_assert!(
            counted <= self.sent_outcomes,
            "counted {} outcomes, but only {} were ever sent",
            counted,
            self.sent_outcomes
        );
        let timeout = self.spec.breaker.probe_timeout_ms;
        let live: usize = self
            .nodes
            .iter()
            .flat_map(|n| n.held.iter())
            .filter(|(t, granted)| t.is_probe() && granted.is_some_and(|g| g + timeout > self.now))
            .count();
        prop_assert!(
            live <= self.spec.breaker.half_open_max_probes as usize,
            "{} live probes, limit {} (state {:?})",
            live,
            self.spec.breaker.half_open_max_probes,
            view.state()
        );
        Ok(())
    }

    /// A healthy upstream and a quiet network: every client ends CLOSED.
    fn settle(&mut self) -> Result<(), TestCaseError> {
        self.upstream_ok = true;
        while !self.delayed.is_empty() {
            self.deliver_delayed(0)?;
        }
        let c = &self.spec.breaker;
        let pause = c
            .max_open_duration_ms
            .max(c.probe_timeout_ms)
            .max(self.spec.lease_ms)
            + 1_000;
        for _ in 0..12 {
            self.now += pause;
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
            if self
                .nodes
                .iter()
                .all(|n| n.client.known_state() == Some(State::Closed) && !n.client.in_fallback())
            {
                return Ok(());
            }
        }
        let states: Vec<_> = self
            .nodes
            .iter()
            .map(|n| (n.client.known_state(), n.client.in_fallback()))
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
    ]
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
    let record: Record = serde_json::from_str(w.persisted.as_deref().unwrap()).unwrap();
    assert_eq!(record.snapshot.state, State::Open);
    w.settle().unwrap();
}
