//! The shared protocol's JSON (`breakwater::shared::json`), the one codec of the messages and the
//! coordinator's records, which every host reads and writes them with. Their spelling is the one
//! src/shared/wire.rs documents, which serde's derive gave them when earlier versions wrote them
//! with serde_json: records and messages outlive deploys, and hosts of two versions meet during
//! one.
//!
//! - Round trip: for random messages, records and settings, the codec reads back what it wrote
//!   to the same value (floats to the same bits).
//! - Spelling: what it writes is JSON that serde_json reads (as a `Value`), and byte for byte the
//!   documented spelling, written out here by hand: the field names in their order, fields left
//!   out when wire.rs says so, and every number and string as serde_json writes it.
//! - Layout: it reads the same document as serde_json writes it otherwise (keys sorted,
//!   pretty-printed, keys reversed with spaces) to the same value (serde_json reads some floats
//!   a bit or two off, which `Coordinator::load_json` allows for). A written text with a
//!   character dropped, doubled or replaced: the codec takes it only if it is JSON, and then
//!   reads what it reads from that document as serde_json writes it.
//! - The same documents accepted and refused as serde's derive did: tricky ones by hand.
//! - The settings, snapshots and breaker configurations keep their serde derives (users
//!   configure and persist them with serde): for them both still write the same text, each reads
//!   what the other wrote, and both readers take the same mutations of written texts.
#![cfg(feature = "json")]

use std::collections::BTreeMap;
use std::fmt::Debug;

use breakwater::shared::json::{self, Wire};
use breakwater::shared::protocol::{
    Change, ErrorReply, Lease, Minute, ObjectCounters, OptionsMismatch, StateView, WirePermit,
    WireReason, WireRejected,
};
use breakwater::shared::{
    session_key, Batch, Counts, Exchange, ExchangeReply, Grant, ProbeReport, Record, Refusal,
    SessionKey, SharedSpec, WireOutcome,
};
use breakwater::Snapshot;
use breakwater::{
    BreakerConfig, Mode, State, Stats, Throttle, ThrottleBucket, ThrottleWindow, TripRule, Window,
};
use breakwater::{Bucket, Counter, ProbeLease};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

// ---- values ----

fn int() -> impl Strategy<Value = u64> {
    prop_oneof![0..10u64, any::<u64>(), Just(u64::MAX), Just(1 << 53)]
}

fn small() -> impl Strategy<Value = u32> {
    prop_oneof![0..10u32, any::<u32>()]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.1),
        Just(0.0),
        Just(-0.0),
        Just(2.0),
        Just(50.0),
        Just(1e-7),
        Just(1e21),
        (0..1000u32).prop_map(|n| f64::from(n) / 7.0),
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,8}",
        any::<String>(),
        Just("quote \" backslash \\ newline \n tab \t nul \u{0} del \u{7f} é 𝄞 \u{2028}".into()),
    ]
}

fn client() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,12}"
}

fn state() -> impl Strategy<Value = State> {
    prop_oneof![
        Just(State::Closed),
        Just(State::Open),
        Just(State::HalfOpen)
    ]
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Automatic),
        Just(Mode::Isolated),
        Just(Mode::Disabled)
    ]
}

fn outcome() -> impl Strategy<Value = WireOutcome> {
    prop_oneof![
        Just(WireOutcome::Success),
        Just(WireOutcome::Failure),
        Just(WireOutcome::Ignored)
    ]
}

fn exchange() -> BoxedStrategy<Exchange> {
    let counts = (
        proptest::option::of(small()),
        small(),
        small(),
        small(),
        prop_oneof![Just(0u32), small()],
    )
        .prop_map(
            |(generation, successes, failures, ignored, throttled)| Counts {
                generation,
                successes,
                failures,
                ignored,
                throttled,
            },
        );
    let probe =
        (small(), small(), int(), outcome()).prop_map(|(generation, id, issued_at, outcome)| {
            ProbeReport {
                generation,
                id,
                issued_at,
                outcome,
            }
        });
    let batch = (
        int(),
        proptest::collection::vec(counts, 0..3),
        proptest::collection::vec(probe, 0..3),
    )
        .prop_map(|(seq, counts, probes)| Batch {
            seq,
            counts,
            probes,
        });
    (text(), int(), proptest::collection::vec(batch, 0..3))
        .prop_map(|(client, session, batches)| Exchange {
            client,
            session,
            batches,
        })
        .boxed()
}

fn lease() -> impl Strategy<Value = Lease> {
    (
        (state(), mode(), small(), int(), int(), int()),
        prop_oneof![Just(0u32), small()],
    )
        .prop_map(
            |((state, mode, generation, lease_ms, retry_after_ms, now), throttle_ppm)| Lease {
                state,
                mode,
                generation,
                lease_ms,
                retry_after_ms,
                now,
                throttle_ppm,
            },
        )
}

fn reply() -> BoxedStrategy<ExchangeReply> {
    let permit = (small(), proptest::option::of(small()), int()).prop_map(
        |(generation, probe, issued_at)| WirePermit {
            generation,
            probe,
            issued_at,
        },
    );
    let reason = prop_oneof![
        Just(WireReason::Open),
        Just(WireReason::HalfOpenFull),
        Just(WireReason::Isolated),
        Just(WireReason::Throttled),
        Just(WireReason::Full)
    ];
    let rejected = (reason, int()).prop_map(|(reason, retry_after_ms)| WireRejected {
        reason,
        retry_after_ms,
    });
    let refusal =
        (int(), text(), proptest::option::of(int())).prop_map(|(seq, reason, last_applied)| {
            Refusal {
                seq,
                reason,
                last_applied,
            }
        });
    (
        lease(),
        proptest::option::of(permit),
        proptest::option::of(rejected),
        proptest::collection::vec(int(), 0..4),
        proptest::collection::vec(refusal, 0..3),
    )
        .prop_map(|(lease, permit, rejected, acked, refused)| ExchangeReply {
            lease,
            permit,
            rejected,
            acked,
            refused,
        })
        .boxed()
}

fn stats() -> BoxedStrategy<Stats> {
    proptest::array::uniform9(int())
        .prop_map(|v| Stats {
            admitted: v[0],
            rejected: v[1],
            successes: v[2],
            failures: v[3],
            ignored: v[4],
            stale: v[5],
            slow: v[6],
            opened: v[7],
            throttled: v[8],
        })
        .boxed()
}

fn counters() -> BoxedStrategy<ObjectCounters> {
    (
        proptest::array::uniform14(int()),
        proptest::option::of(int()),
        proptest::array::uniform11(int()),
        (int(), int(), int(), int()),
    )
        .prop_map(
            |(
                v,
                incident_since,
                incidents,
                (incident_ms, sheds_dropped, outcomes_dropped, requests_refused),
            )| ObjectCounters {
                requests: v[0],
                acquires: v[1],
                reports: v[2],
                batches: v[3],
                duplicate_batches: v[4],
                refused_batches: v[5],
                unverified_batches: v[6],
                sessions_evicted_early: v[7],
                unmatched_probe_reports: v[8],
                counted_outcomes: v[9],
                probe_outcomes: v[10],
                probes_granted: v[11],
                half_open_entered: v[12],
                closed: v[13],
                incident_since,
                incidents,
                incident_ms,
                sheds_dropped,
                outcomes_dropped,
                requests_refused,
            },
        )
        .boxed()
}

fn view() -> BoxedStrategy<StateView> {
    let mismatch =
        (int(), int(), text()).prop_map(|(stored, configured, resolution)| OptionsMismatch {
            stored,
            configured,
            resolution,
        });
    (
        (
            text(),
            lease(),
            proptest::option::of(int()),
            proptest::option::of(int()),
        ),
        (
            0..100usize,
            stats(),
            counters(),
            proptest::option::of(text()),
        ),
        (int(), proptest::option::of(mismatch), 0..2000usize),
        (
            text(),
            proptest::collection::vec(change(), 0..4),
            proptest::collection::vec(minute(), 0..4),
        ),
    )
        .prop_map(
            |(
                (name, lease, opened_at, open_until),
                (probes_in_flight, stats, counters, restore_error),
                (options, options_mismatch, sessions),
                (settings, transitions, minutes),
            )| StateView {
                name,
                lease,
                opened_at,
                open_until,
                probes_in_flight,
                stats,
                counters,
                restore_error,
                options,
                options_mismatch,
                sessions,
                settings,
                transitions,
                minutes,
            },
        )
        .boxed()
}

fn change() -> impl Strategy<Value = Change> {
    (state(), state(), int()).prop_map(|(from, to, at)| Change { from, to, at })
}

fn minute() -> impl Strategy<Value = Minute> {
    (int(), int(), int(), int(), int()).prop_map(|(at, calls, failures, refused, shed)| Minute {
        at,
        calls,
        failures,
        refused,
        shed,
    })
}

fn window() -> impl Strategy<Value = Window> {
    prop_oneof![
        small().prop_map(Window::Calls),
        int().prop_map(Window::Millis)
    ]
}

fn trip() -> BoxedStrategy<TripRule> {
    prop_oneof![
        small().prop_map(|threshold| TripRule::ConsecutiveFailures { threshold }),
        (small(), int()).prop_map(|(threshold, window_ms)| TripRule::FailuresInWindow {
            threshold,
            window_ms
        }),
        (float(), small(), window()).prop_map(|(threshold_percent, minimum_calls, window)| {
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            }
        }),
        (float(), int(), small(), window()).prop_map(
            |(threshold_percent, slow_call_ms, minimum_calls, window)| TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            }
        ),
    ]
    .boxed()
}

fn spec() -> BoxedStrategy<SharedSpec> {
    (
        (trip(), int(), float(), float(), int()),
        (small(), small(), int(), int(), int()),
        proptest::option::of((float(), int(), small(), float())),
    )
        .prop_map(
            |(
                (trip, open_duration_ms, open_jitter, open_backoff_factor, max_open_duration_ms),
                (half_open_max_probes, half_open_success_threshold, probe_timeout_ms, seed, lease),
                throttle,
            )| {
                let mut c = BreakerConfig::new();
                c.trip = trip;
                c.open_duration_ms = open_duration_ms;
                c.open_jitter = open_jitter;
                c.open_backoff_factor = open_backoff_factor;
                c.max_open_duration_ms = max_open_duration_ms;
                c.half_open_max_probes = half_open_max_probes;
                c.half_open_success_threshold = half_open_success_threshold;
                c.probe_timeout_ms = probe_timeout_ms;
                c.seed = seed;
                c.throttle = throttle.map(
                    |(multiplier, window_ms, minimum_requests, max_rejection_probability)| {
                        Throttle {
                            multiplier,
                            window_ms,
                            minimum_requests,
                            max_rejection_probability,
                        }
                    },
                );
                SharedSpec::new(c).with_lease_ms(lease)
            },
        )
        .boxed()
}

fn counter() -> BoxedStrategy<Counter> {
    prop_oneof![
        small().prop_map(|failures| Counter::Consecutive { failures }),
        (proptest::collection::vec(int(), 0..4), small())
            .prop_map(|(times, head)| Counter::FailureTimes { times, head }),
        (
            proptest::collection::vec(any::<u8>(), 0..6),
            small(),
            small(),
            small()
        )
            .prop_map(|(ring, head, failures, slow)| Counter::Calls {
                ring,
                head,
                failures,
                slow
            }),
        proptest::collection::vec(
            (int(), small(), small(), small()).prop_map(|(index, calls, failures, slow)| {
                Bucket {
                    index,
                    calls,
                    failures,
                    slow,
                }
            }),
            0..3
        )
        .prop_map(|buckets| Counter::Buckets { buckets }),
    ]
    .boxed()
}

fn snapshot() -> BoxedStrategy<Snapshot> {
    (
        (small(), state(), mode(), small(), int(), int(), int()),
        (
            small(),
            small(),
            proptest::collection::vec(
                (small(), int()).prop_map(|(id, expires_at)| ProbeLease { id, expires_at }),
                0..3,
            ),
            small(),
            counter(),
            int(),
            stats(),
        ),
        proptest::collection::vec(
            // A bucket that holds no call is the default one (the breaker never writes an
            // index without a count): a window of such buckets is empty and left out.
            (int(), small(), small()).prop_map(|(index, requests, accepts)| ThrottleBucket {
                index: if (requests | accepts) == 0 { 0 } else { index },
                requests,
                accepts,
            }),
            0..3,
        )
        .prop_map(|bs| {
            let mut w = ThrottleWindow::default();
            for (slot, b) in bs.into_iter().enumerate() {
                w.buckets[slot * 5] = b;
            }
            w
        }),
    )
        .prop_map(
            |(
                (version, state, mode, generation, last_now, opened_at, open_until),
                (
                    failed_probe_rounds,
                    half_open_successes,
                    probes,
                    next_probe_id,
                    counter,
                    rng,
                    stats,
                ),
                throttle,
            )| Snapshot {
                version,
                state,
                mode,
                generation,
                last_now,
                opened_at,
                open_until,
                failed_probe_rounds,
                half_open_successes,
                probes,
                next_probe_id,
                counter,
                rng,
                stats,
                throttle,
            },
        )
        .boxed()
}

fn session() -> impl Strategy<Value = breakwater::shared::SessionKey> {
    (client(), int().prop_map(|s| s % (1 << 53)))
        .prop_map(|(c, s)| session_key(&c, s).expect("a valid client"))
}

fn record() -> BoxedStrategy<Record> {
    let key = session();
    let grant =
        (small(), small(), session(), int()).prop_map(|(generation, id, session, issued_at)| {
            Grant {
                generation,
                id,
                session,
                issued_at,
            }
        });
    (
        proptest::option::of(spec()),
        snapshot(),
        proptest::collection::btree_map(key, (int(), int()), 0..4),
        proptest::collection::vec(int(), 0..4),
        proptest::collection::vec(grant, 0..3),
        counters(),
        int(),
        proptest::collection::vec(change(), 0..3),
        proptest::collection::vec(proptest::array::uniform5(int()), 0..3),
    )
        .prop_map(
            |(
                spec,
                snapshot,
                clients,
                spent_ms,
                grants,
                counters,
                unverifiable_until,
                transitions,
                marks,
            )| Record {
                spec,
                snapshot,
                clients: clients.into_iter().collect::<BTreeMap<_, _>>(),
                spent_ms,
                grants,
                counters,
                unverifiable_until,
                transitions,
                marks,
            },
        )
        .boxed()
}

// ---- the documented spelling, written out by hand ----

/// A JSON document as src/shared/wire.rs spells a value: objects with their fields in order,
/// and every number and string written by serde_json.
enum Doc {
    Object(Vec<(String, Doc)>),
    Array(Vec<Doc>),
    /// Written by serde_json.
    Leaf(String),
}

impl Doc {
    /// Compact, as serde_json writes.
    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Doc::Object(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
            Doc::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Doc::Leaf(text) => out.push_str(text),
        }
    }
}

/// A number, a string or `null`, as serde_json writes it (and the types that keep their serde
/// derives, whole).
fn leaf<T: Serialize + ?Sized>(v: &T) -> Doc {
    Doc::Leaf(serde_json::to_string(v).unwrap())
}

/// `null` when `None` (the modes `opt` and `readable`, and `or` of an `Option`).
fn opt<T>(v: &Option<T>, f: impl Fn(&T) -> Doc) -> Doc {
    v.as_ref().map_or_else(|| leaf(&()), f)
}

fn list<T>(items: &[T], f: impl Fn(&T) -> Doc) -> Doc {
    Doc::Array(items.iter().map(f).collect())
}

/// An object's fields, in the order wire.rs lists them.
struct Fields(Vec<(String, Doc)>);

impl Fields {
    fn new() -> Self {
        Fields(Vec::new())
    }
    /// Always written (`req`, `opt`, `or`).
    fn with(mut self, k: &str, v: Doc) -> Self {
        self.0.push((k.into(), v));
        self
    }
    /// Written unless left out (`skip`, `skip_empty`, `skip_zero`).
    fn unless(self, left_out: bool, k: &str, v: impl FnOnce() -> Doc) -> Self {
        if left_out {
            self
        } else {
            self.with(k, v())
        }
    }
    fn doc(self) -> Doc {
        Doc::Object(self.0)
    }
}

fn state_doc(s: &State) -> Doc {
    leaf(match s {
        State::Closed => "CLOSED",
        State::Open => "OPEN",
        State::HalfOpen => "HALF_OPEN",
    })
}

fn mode_doc(m: &Mode) -> Doc {
    leaf(match m {
        Mode::Automatic => "automatic",
        Mode::Isolated => "isolated",
        Mode::Disabled => "disabled",
    })
}

fn outcome_doc(o: &WireOutcome) -> Doc {
    leaf(match o {
        WireOutcome::Success => "success",
        WireOutcome::Failure => "failure",
        WireOutcome::Ignored => "ignored",
    })
}

fn reason_doc(r: &WireReason) -> Doc {
    leaf(match r {
        WireReason::Open => "open",
        WireReason::HalfOpenFull => "half_open_full",
        WireReason::Isolated => "isolated",
        WireReason::Throttled => "throttled",
        WireReason::Full => "full",
    })
}

fn counts_doc(c: &Counts) -> Doc {
    Fields::new()
        .with("generation", opt(&c.generation, leaf))
        .with("successes", leaf(&c.successes))
        .with("failures", leaf(&c.failures))
        .with("ignored", leaf(&c.ignored))
        .unless(c.throttled == 0, "throttled", || leaf(&c.throttled))
        .doc()
}

fn probe_report_doc(p: &ProbeReport) -> Doc {
    Fields::new()
        .with("generation", leaf(&p.generation))
        .with("id", leaf(&p.id))
        .with("issued_at", leaf(&p.issued_at))
        .with("outcome", outcome_doc(&p.outcome))
        .doc()
}

fn batch_doc(b: &Batch) -> Doc {
    Fields::new()
        .with("seq", leaf(&b.seq))
        .with("counts", list(&b.counts, counts_doc))
        .with("probes", list(&b.probes, probe_report_doc))
        .doc()
}

fn exchange_doc(e: &Exchange) -> Doc {
    Fields::new()
        .with("client", leaf(&e.client))
        .with("session", leaf(&e.session))
        .with("batches", list(&e.batches, batch_doc))
        .doc()
}

fn lease_doc(l: &Lease) -> Doc {
    Fields::new()
        .with("state", state_doc(&l.state))
        .with("mode", mode_doc(&l.mode))
        .with("generation", leaf(&l.generation))
        .with("lease_ms", leaf(&l.lease_ms))
        .with("retry_after_ms", leaf(&l.retry_after_ms))
        .with("now", leaf(&l.now))
        .unless(l.throttle_ppm == 0, "throttle_ppm", || {
            leaf(&l.throttle_ppm)
        })
        .doc()
}

fn permit_doc(p: &WirePermit) -> Doc {
    Fields::new()
        .with("generation", leaf(&p.generation))
        .with("probe", opt(&p.probe, leaf))
        .with("issued_at", leaf(&p.issued_at))
        .doc()
}

fn rejected_doc(r: &WireRejected) -> Doc {
    Fields::new()
        .with("reason", reason_doc(&r.reason))
        .with("retry_after_ms", leaf(&r.retry_after_ms))
        .doc()
}

fn refusal_doc(r: &Refusal) -> Doc {
    Fields::new()
        .with("seq", leaf(&r.seq))
        .with("reason", leaf(&r.reason))
        .unless(r.last_applied.is_none(), "last_applied", || {
            opt(&r.last_applied, leaf)
        })
        .doc()
}

fn reply_doc(r: &ExchangeReply) -> Doc {
    Fields::new()
        .with("lease", lease_doc(&r.lease))
        .unless(r.permit.is_none(), "permit", || opt(&r.permit, permit_doc))
        .unless(r.rejected.is_none(), "rejected", || {
            opt(&r.rejected, rejected_doc)
        })
        .with("acked", list(&r.acked, leaf))
        .unless(r.refused.is_empty(), "refused", || {
            list(&r.refused, refusal_doc)
        })
        .doc()
}

fn counters_doc(c: &ObjectCounters) -> Doc {
    Fields::new()
        .with("requests", leaf(&c.requests))
        .with("acquires", leaf(&c.acquires))
        .with("reports", leaf(&c.reports))
        .with("batches", leaf(&c.batches))
        .with("duplicate_batches", leaf(&c.duplicate_batches))
        .with("refused_batches", leaf(&c.refused_batches))
        .with("unverified_batches", leaf(&c.unverified_batches))
        .with("sessions_evicted_early", leaf(&c.sessions_evicted_early))
        .with("unmatched_probe_reports", leaf(&c.unmatched_probe_reports))
        .with("counted_outcomes", leaf(&c.counted_outcomes))
        .with("probe_outcomes", leaf(&c.probe_outcomes))
        .with("probes_granted", leaf(&c.probes_granted))
        .with("half_open_entered", leaf(&c.half_open_entered))
        .with("closed", leaf(&c.closed))
        .with("incident_since", opt(&c.incident_since, leaf))
        .with("incidents", list(&c.incidents, leaf))
        .with("incident_ms", leaf(&c.incident_ms))
        .unless(c.sheds_dropped == 0, "sheds_dropped", || {
            leaf(&c.sheds_dropped)
        })
        .unless(c.outcomes_dropped == 0, "outcomes_dropped", || {
            leaf(&c.outcomes_dropped)
        })
        .unless(c.requests_refused == 0, "requests_refused", || {
            leaf(&c.requests_refused)
        })
        .doc()
}

fn change_doc(c: &Change) -> Doc {
    Fields::new()
        .with("from", state_doc(&c.from))
        .with("to", state_doc(&c.to))
        .with("at", leaf(&c.at))
        .doc()
}

fn minute_doc(m: &Minute) -> Doc {
    Fields::new()
        .with("at", leaf(&m.at))
        .with("calls", leaf(&m.calls))
        .with("failures", leaf(&m.failures))
        .with("refused", leaf(&m.refused))
        .with("shed", leaf(&m.shed))
        .doc()
}

fn mismatch_doc(m: &OptionsMismatch) -> Doc {
    Fields::new()
        .with("stored", leaf(&m.stored))
        .with("configured", leaf(&m.configured))
        .with("resolution", leaf(&m.resolution))
        .doc()
}

fn view_doc(v: &StateView) -> Doc {
    Fields::new()
        .with("name", leaf(&v.name))
        .with("lease", lease_doc(&v.lease))
        .with("opened_at", opt(&v.opened_at, leaf))
        .with("open_until", opt(&v.open_until, leaf))
        .with("probes_in_flight", leaf(&v.probes_in_flight))
        // The core's `Stats` keeps its serde derive.
        .with("stats", leaf(&v.stats))
        .with("counters", counters_doc(&v.counters))
        .with("restore_error", opt(&v.restore_error, leaf))
        .with("options", leaf(&v.options))
        .with("options_mismatch", opt(&v.options_mismatch, mismatch_doc))
        .with("sessions", leaf(&v.sessions))
        .with("settings", leaf(&v.settings))
        .with("transitions", list(&v.transitions, change_doc))
        .with("minutes", list(&v.minutes, minute_doc))
        .doc()
}

fn error_reply_doc(e: &ErrorReply) -> Doc {
    Fields::new()
        .with("error", leaf(&e.error))
        .with("message", leaf(&e.message))
        .doc()
}

/// `client~session`.
fn session_text(k: &SessionKey) -> String {
    format!("{}~{}", k.client().as_str(), k.session())
}

fn grant_doc(g: &Grant) -> Doc {
    Fields::new()
        .with("generation", leaf(&g.generation))
        .with("id", leaf(&g.id))
        .with("session", leaf(&session_text(&g.session)))
        .with("issued_at", leaf(&g.issued_at))
        .doc()
}

fn record_doc(r: &Record) -> Doc {
    let clients = r
        .clients
        .iter()
        .map(|(k, (seq, at))| (session_text(k), list(&[*seq, *at], leaf)))
        .collect();
    Fields::new()
        // The settings and the snapshot keep their serde derives.
        .with("spec", opt(&r.spec, leaf))
        .with("snapshot", leaf(&r.snapshot))
        .with("clients", Doc::Object(clients))
        .unless(r.spent_ms.is_empty(), "spent_ms", || {
            list(&r.spent_ms, leaf)
        })
        .with("grants", list(&r.grants, grant_doc))
        .with("counters", counters_doc(&r.counters))
        .with("unverifiable_until", leaf(&r.unverifiable_until))
        .unless(r.transitions.is_empty(), "transitions", || {
            list(&r.transitions, change_doc)
        })
        .unless(r.marks.is_empty(), "marks", || {
            list(&r.marks, |m| list(m, leaf))
        })
        .doc()
}

// ---- checks ----

/// `value` laid out as serde_json lays it out otherwise than the codec: keys sorted, compact;
/// pretty-printed; and keys in reverse order, with spaces around every token.
fn layouts(value: &Value) -> [String; 3] {
    fn reversed(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                out.push_str("{ ");
                for (i, (k, x)) in m.iter().rev().enumerate() {
                    if i > 0 {
                        out.push_str(" , ");
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(" : ");
                    reversed(x, out);
                }
                out.push_str(" }");
            }
            Value::Array(a) => {
                out.push_str("[ ");
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" , ");
                    }
                    reversed(x, out);
                }
                out.push_str(" ]");
            }
            leaf => out.push_str(&serde_json::to_string(leaf).unwrap()),
        }
    }
    let mut spaced = String::new();
    reversed(value, &mut spaced);
    [
        serde_json::to_string(value).unwrap(),
        serde_json::to_string_pretty(value).unwrap(),
        spaced,
    ]
}

/// The codec writes `v` as `doc` spells it, byte for byte; that is JSON serde_json reads; the
/// codec reads it back exactly, and reads the same document laid out otherwise by serde_json
/// back to `v` (`same`: serde_json reads a float through a shortcut, one bit off at times).
fn spelled<T>(v: &T, doc: Doc, same: impl Fn(&T, &T) -> bool) -> Result<(), TestCaseError>
where
    T: Wire + PartialEq + Debug,
{
    let ours = json::to_string(v);
    prop_assert_eq!(&ours, &doc.text());
    let back: T = json::from_str(&ours).map_err(|e| TestCaseError::fail(format!("{e}: {ours}")))?;
    prop_assert_eq!(&back, v, "read back exactly: {}", ours);
    let value: Value = serde_json::from_str(&ours)
        .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {ours}")))?;
    for text in layouts(&value) {
        let read: T =
            json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert!(same(&read, v), "{text}\n{read:?}\n{v:?}");
    }
    Ok(())
}

/// For the types that keep their serde derives: both write the same bytes, and each reads back
/// what either wrote.
fn agree<T>(v: &T, same: impl Fn(&T, &T) -> bool) -> Result<(), TestCaseError>
where
    T: Wire + Serialize + DeserializeOwned + PartialEq + Debug,
{
    let ours = json::to_string(v);
    let theirs = serde_json::to_string(v).unwrap();
    prop_assert_eq!(&ours, &theirs);
    let back: T =
        json::from_str(&theirs).map_err(|e| TestCaseError::fail(format!("{e}: {theirs}")))?;
    prop_assert_eq!(&back, v, "read back exactly: {}", theirs);
    let by_serde: T = serde_json::from_str(&ours).unwrap();
    prop_assert!(same(&by_serde, v), "{by_serde:?}\n{v:?}");
    Ok(())
}

/// A few units in the last place apart (what serde_json's reading may cost, most for large
/// exponents and subnormals).
fn near(a: f64, b: f64) -> bool {
    a == b
        || (a.is_sign_negative() == b.is_sign_negative() && a.to_bits().abs_diff(b.to_bits()) <= 64)
}

fn near_specs(a: &SharedSpec, b: &SharedSpec) -> bool {
    let floats = |s: &SharedSpec| {
        let c = &s.breaker;
        let t = match c.trip {
            TripRule::FailureRate {
                threshold_percent, ..
            }
            | TripRule::SlowCallRate {
                threshold_percent, ..
            } => threshold_percent,
            _ => 0.0,
        };
        let (k, max) = c
            .throttle
            .map_or((0.0, 0.0), |t| (t.multiplier, t.max_rejection_probability));
        [c.open_jitter, c.open_backoff_factor, t, k, max]
    };
    let blank = |s: &SharedSpec| {
        let mut s = *s;
        s.breaker.open_jitter = 0.0;
        s.breaker.open_backoff_factor = 0.0;
        if let Some(t) = &mut s.breaker.throttle {
            t.multiplier = 0.0;
            t.max_rejection_probability = 0.0;
        }
        if let TripRule::FailureRate {
            threshold_percent, ..
        }
        | TripRule::SlowCallRate {
            threshold_percent, ..
        } = &mut s.breaker.trip
        {
            *threshold_percent = 0.0;
        }
        s
    };
    blank(a) == blank(b) && floats(a).iter().zip(floats(b)).all(|(x, y)| near(*x, y))
}

fn near_records(a: &Record, b: &Record) -> bool {
    let (mut x, mut y) = (a.clone(), b.clone());
    let specs = match (x.spec.take(), y.spec.take()) {
        (Some(p), Some(q)) => near_specs(&p, &q),
        (p, q) => p == q,
    };
    specs && x == y
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn exchanges_are_spelled_as_documented(v in exchange()) {
        spelled(&v, exchange_doc(&v), PartialEq::eq)?;
    }

    #[test]
    fn replies_are_spelled_as_documented(v in reply()) {
        spelled(&v, reply_doc(&v), PartialEq::eq)?;
    }

    #[test]
    fn state_views_are_spelled_as_documented(v in view()) {
        spelled(&v, view_doc(&v), PartialEq::eq)?;
    }

    #[test]
    fn records_are_spelled_as_documented(v in record()) {
        spelled(&v, record_doc(&v), near_records)?;
    }

    #[test]
    fn error_replies_are_spelled_as_documented(error in text(), message in text()) {
        let v = ErrorReply { error, message };
        spelled(&v, error_reply_doc(&v), PartialEq::eq)?;
    }

    #[test]
    fn settings_are_spelled_alike(v in spec()) {
        agree(&v, near_specs)?;
        spelled(&v, leaf(&v), near_specs)?;
    }

    #[test]
    fn snapshots_are_spelled_alike(v in snapshot()) {
        agree(&v, PartialEq::eq)?;
        spelled(&v, leaf(&v), PartialEq::eq)?;
    }

    /// A character dropped, doubled or replaced in a written message: the codec takes only JSON,
    /// and reads from it what it reads from the same document as serde_json writes it.
    #[test]
    fn mutations_of_exchanges_are_read_as_json(v in exchange(), m in mutation()) {
        if let Some(t) = m.apply(json::to_string(&v)) {
            reads_as_json::<Exchange>(&t, PartialEq::eq)?;
        }
    }

    #[test]
    fn mutations_of_records_are_read_as_json(v in record(), m in mutation()) {
        if let Some(t) = m.apply(json::to_string(&v)) {
            reads_as_json::<Record>(&t, near_records)?;
        }
    }

    #[test]
    fn both_readers_take_the_same_mutations_of_settings(v in spec(), m in mutation()) {
        if let Some(t) = m.apply(json::to_string(&v)) {
            same_reading::<SharedSpec>(&t, near_specs)?;
            reads_as_json::<SharedSpec>(&t, near_specs)?;
        }
    }

    #[test]
    fn both_readers_take_the_same_mutations_of_snapshots(v in snapshot(), m in mutation()) {
        if let Some(t) = m.apply(json::to_string(&v)) {
            same_reading::<Snapshot>(&t, PartialEq::eq)?;
            reads_as_json::<Snapshot>(&t, PartialEq::eq)?;
        }
    }

    #[test]
    fn floats_are_written_as_serde_json_writes_them_and_read_exactly(
        x in any::<f64>().prop_filter("finite", |x| x.is_finite()),
    ) {
        let text = serde_json::to_string(&x).unwrap();
        let spec = SharedSpec::new(BreakerConfig::new().with_open_jitter(x));
        let written = json::to_string(&spec);
        prop_assert!(written.contains(&format!("\"open_jitter\":{text},")), "{written}");
        let ours: SharedSpec = json::from_str(&written).unwrap();
        prop_assert_eq!(ours.breaker.open_jitter.to_bits(), x.to_bits());
    }
}

/// One character of a text dropped, doubled or replaced.
#[derive(Clone, Debug)]
struct Mutation {
    at: prop::sample::Index,
    how: u8,
    with: u8,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let with = prop::sample::select(b" \t\n,:{}[]\"\\-+.0123456789eEnultrfa/bux".to_vec());
    (any::<prop::sample::Index>(), 0..3u8, with).prop_map(|(at, how, with)| Mutation {
        at,
        how,
        with,
    })
}

impl Mutation {
    fn apply(&self, text: String) -> Option<String> {
        let mut b = text.into_bytes();
        let i = self.at.index(b.len());
        match self.how {
            0 => {
                b.remove(i);
            }
            1 => b.insert(i, b[i]),
            _ => b[i] = self.with,
        }
        String::from_utf8(b).ok()
    }
}

/// For the types that keep their serde derives: both readers accept the same texts, and read
/// the same values from them.
fn same_reading<T>(text: &str, same: impl Fn(&T, &T) -> bool) -> Result<(), TestCaseError>
where
    T: Wire + DeserializeOwned + Debug,
{
    match (json::from_str::<T>(text), serde_json::from_str::<T>(text)) {
        (Ok(a), Ok(b)) => prop_assert!(same(&b, &a), "{text}\nours: {a:?}\nserde: {b:?}"),
        (Err(_), Err(_)) => {}
        (a, b) => prop_assert!(false, "{text}\nours: {a:?}\nserde: {b:?}"),
    }
    Ok(())
}

/// The codec takes `text` only if it is JSON (serde_json reads it as a `Value`), and then reads
/// from it what it reads from that document as serde_json writes it, in every layout.
fn reads_as_json<T>(text: &str, same: impl Fn(&T, &T) -> bool) -> Result<(), TestCaseError>
where
    T: Wire + Debug,
{
    let Ok(ours) = json::from_str::<T>(text) else {
        return Ok(());
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        TestCaseError::fail(format!("read what is not JSON ({e}): {text}\n{ours:?}"))
    })?;
    for other in layouts(&value) {
        let read = json::from_str::<T>(&other);
        prop_assert!(
            read.as_ref().is_ok_and(|r| same(r, &ours)),
            "{text}\nas {other}\nours: {ours:?}\nthen: {read:?}"
        );
    }
    Ok(())
}

/// What serde's derive did with `text` (accepted it or refused it), the codec does; and it reads
/// it as JSON.
fn judged<T>(text: &str, accepted: bool, same: impl Fn(&T, &T) -> bool)
where
    T: Wire + Debug,
{
    let ours = json::from_str::<T>(text);
    assert_eq!(ours.is_ok(), accepted, "{text}: {ours:?}");
    reads_as_json::<T>(text, same).unwrap();
}

const OK: bool = true;
const NO: bool = false;

/// Documents chosen to hit each rule of the grammar and of the types. Messages and records: the
/// codec accepts and refuses each as serde's derive did (`OK` or `NO`), and reads it as JSON.
/// Settings and snapshots: both readers agree on each.
#[test]
fn tricky_documents_are_read_as_before() {
    let exchanges = [
        (r#"{"client":"a"}"#, OK),
        (r#" {"client" : "a" , "session" : 3 } "#, OK),
        (r#"{"client":"a","session":1,"batches":[]}"#, OK),
        (r#"{"client":"a","surprise":1}"#, NO),
        (r#"{"client":"a","client":"b"}"#, NO),
        (r#"{"session":1}"#, NO),
        (r#"{"client":"a","batches":[{"seq":"1"}]}"#, NO),
        (r#"{"client":"a","batches":[{"seq":1.0}]}"#, NO),
        (r#"{"client":"a","batches":[{"seq":1e0}]}"#, NO),
        (r#"{"client":"a","batches":[{"seq":-1}]}"#, NO),
        (r#"{"client":"a","batches":[{"seq":-0}]}"#, NO),
        (r#"{"client":"a","batches":[{"seq":01}]}"#, NO),
        (
            r#"{"client":"a","batches":[{"seq":18446744073709551615}]}"#,
            OK,
        ),
        (
            r#"{"client":"a","batches":[{"seq":18446744073709551616}]}"#,
            NO,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"counts":[{"generation":4294967296}]}]}"#,
            NO,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"counts":[{"generation":null}]}]}"#,
            OK,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"counts":[{"successes":null}]}]}"#,
            NO,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"probes":[{"generation":1,"id":0,"outcome":"won"}]}]}"#,
            NO,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"probes":[{"generation":1,"id":0,"outcome":{"success":null}}]}]}"#,
            OK,
        ),
        (
            r#"{"client":"a","batches":[{"seq":1,"probes":[{"generation":1,"id":0,"outcome":"success","x":1}]}]}"#,
            NO,
        ),
        (r#"{"client":"a","batches":[1,]}"#, NO),
        (r#"{"client":"a",}"#, NO),
        (r#"{"client":"a"} x"#, NO),
        (r#"{"client":"a"}}"#, NO),
        (
            r#"{"client":"\u0061\n\"\\\/\b\f\r\t\u00e9\ud834\udd1e"}"#,
            OK,
        ),
        (r#"{"client":"\ud834"}"#, NO),
        (r#"{"client":"\ud834\u0041"}"#, NO),
        (r#"{"client":"\udd1e"}"#, NO),
        (r#"{"client":"\x"}"#, NO),
        (r#"{"client":"\u12"}"#, NO),
        ("{\"client\":\"a\u{1}\"}", NO),
        ("{\"client\":\"a\u{7f}é\"}", OK),
        ("\u{feff}{\"client\":\"a\"}", NO),
        (r#"{"client":"a","batches":[{"seq":1}],"session":null}"#, NO),
        (
            r#"{"client":"a","x":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}"#,
            NO,
        ),
        (r#""a""#, NO),
        ("", NO),
        ("nul", NO),
        (r#"{"client":tru}"#, NO),
        (r#"{"client":"a","session":1.5e3}"#, NO),
        (r#"{"client":"a","session":1E3}"#, NO),
        (r#"{"client":"a","session":1.}"#, NO),
        (r#"{"client":"a","session":.5}"#, NO),
        (r#"{"client":"a","session":-}"#, NO),
        (r#"{"client":"a","session":1e}"#, NO),
        (r#"{"client":"a","session":1e+}"#, NO),
        (r#"{"client":"a","session":+1}"#, NO),
    ];
    for (t, accepted) in exchanges {
        judged::<Exchange>(t, accepted, PartialEq::eq);
    }
    // What the strings above read as.
    let e: Exchange =
        json::from_str(r#"{"client":"\u0061\n\"\\\/\b\f\r\t\u00e9\ud834\udd1e"}"#).unwrap();
    assert_eq!(e.client, "a\n\"\\/\u{8}\u{c}\r\té𝄞");
    // The one known difference: serde's derive also read a struct from an array of its fields
    // in order. No version wrote one; this reader refuses it.
    assert!(serde_json::from_str::<SharedSpec>("[{},500]").is_ok());
    assert!(json::from_str::<SharedSpec>("[{},500]").is_err());
    assert!(json::from_str::<Exchange>(r#"["a"]"#).is_err());
    let deep = |n: usize| {
        format!(
            "{{\"client\":\"a\",\"x\":{}{}}}",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    for n in [125, 126, 127, 128, 200] {
        judged::<Exchange>(&deep(n), NO, PartialEq::eq);
    }
    let specs = [
        "{}",
        r#"{"lease_ms":500,"breaker":{}}"#,
        r#"{"leese_ms":1}"#,
        r#"{"breaker":{"open_duration":1}}"#,
        r#"{"breaker":{"open_jitter":0.1,"open_backoff_factor":2}}"#,
        r#"{"breaker":{"open_jitter":1e-400}}"#,
        r#"{"breaker":{"open_jitter":1e400}}"#,
        r#"{"breaker":{"open_jitter":-0}}"#,
        r#"{"breaker":{"open_jitter":null}}"#,
        r#"{"breaker":{"trip":{"kind":"consecutive_failures","threshold":3}}}"#,
        r#"{"breaker":{"trip":{"threshold":3,"kind":"consecutive_failures"}}}"#,
        r#"{"breaker":{"trip":{"kind":"consecutive_failures"}}}"#,
        r#"{"breaker":{"trip":{"kind":"consecutive_failures","threshold":3,"window_ms":1}}}"#,
        r#"{"breaker":{"trip":{"kind":"consecutive_failures","kind":"consecutive_failures","threshold":3}}}"#,
        r#"{"breaker":{"trip":{"kind":"sometimes"}}}"#,
        r#"{"breaker":{"trip":{"kind":3}}}"#,
        r#"{"breaker":{"trip":{"consecutive_failures":{"threshold":3}}}}"#,
        r#"{"breaker":{"trip":"consecutive_failures"}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20,"window":{"millis":60000}}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":12.5,"minimum_calls":20,"window":{"calls":100}}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20,"window":{"seconds":1}}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20,"window":{"calls":1,"millis":2}}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20,"window":{}}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20,"window":"calls"}}}"#,
        r#"{"breaker":{"trip":{"kind":"failure_rate","threshold_percent":50,"minimum_calls":20.0,"window":{"calls":1}}}}"#,
        r#"{"breaker":{"trip":{"kind":"slow_call_rate","threshold_percent":50,"slow_call_ms":5,"minimum_calls":20,"window":{"calls":100}}}}"#,
        r#"{"breaker":{"seed":7092456218519577972}}"#,
    ];
    for t in specs {
        same_reading::<SharedSpec>(t, near_specs).unwrap();
        reads_as_json::<SharedSpec>(t, near_specs).unwrap();
    }
    let snapshot = r#"{"version":1,"state":"OPEN","mode":"automatic","generation":2,"last_now":5,"opened_at":5,"open_until":9,"failed_probe_rounds":0,"half_open_successes":0,"probes":[],"next_probe_id":0,"counter":{"consecutive":{"failures":3}},"rng":18446744073709551615,"stats":{}}"#;
    let snapshots = [
        (snapshot.to_string(), OK),
        (
            snapshot.replace(
                r#""counter":{"consecutive":{"failures":3}}"#,
                r#""counter":{"consecutive":{"failures":3},"calls":{}}"#,
            ),
            NO,
        ),
        (
            snapshot.replace(r#"{"consecutive":{"failures":3}}"#, r#""consecutive""#),
            NO,
        ),
        (
            snapshot.replace(
                r#"{"consecutive":{"failures":3}}"#,
                r#"{"calls":{"ring":[1,256],"head":0,"failures":0,"slow":0}}"#,
            ),
            NO,
        ),
        (
            snapshot.replace(r#""state":"OPEN""#, r#""state":{"OPEN":null}"#),
            OK,
        ),
        (
            snapshot.replace(r#""state":"OPEN""#, r#""state":"open""#),
            NO,
        ),
        (snapshot.replace(r#""rng":18446744073709551615,"#, ""), NO),
    ];
    for (t, accepted) in &snapshots {
        same_reading::<Snapshot>(t, PartialEq::eq).unwrap();
        reads_as_json::<Snapshot>(t, PartialEq::eq).unwrap();
        // In a record, as it is stored.
        judged::<Record>(&format!(r#"{{"snapshot":{t}}}"#), *accepted, near_records);
    }
    let records = [
        (format!(r#"{{"snapshot":{snapshot}}}"#), OK),
        (format!(r#"{{"spec":null,"snapshot":{snapshot}}}"#), OK),
        (
            format!(
                r#"{{"spec":{{"breaker":{{"trip":{{"consecutive_failures":{{"threshold":3}}}}}}}},"snapshot":{snapshot}}}"#
            ),
            OK,
        ),
        (
            format!(r#"{{"spec":7,"snapshot":{snapshot},"newer":true}}"#),
            OK,
        ),
        (
            format!(
                r#"{{"snapshot":{snapshot},"clients":{{"a~1":[1,2],"b~2":[3,4],"a~1":[5,6]}}}}"#
            ),
            OK,
        ),
        (
            format!(r#"{{"snapshot":{snapshot},"clients":{{"a":[1,2]}}}}"#),
            NO,
        ),
        (
            format!(r#"{{"snapshot":{snapshot},"clients":{{"a~1":[1]}}}}"#),
            NO,
        ),
        (
            format!(r#"{{"snapshot":{snapshot},"clients":{{"a~1":[1,2,3]}}}}"#),
            NO,
        ),
        (
            format!(r#"{{"snapshot":{snapshot},"counters":{{"incidents":[1,2,3]}}}}"#),
            NO,
        ),
        (
            format!(r#"{{"snapshot":{snapshot},"counters":{{"closed":1,"future":2}}}}"#),
            OK,
        ),
        // A snapshot where a record belongs.
        (snapshot.to_string(), NO),
    ];
    for (t, accepted) in &records {
        judged::<Record>(t, *accepted, near_records);
    }
    // What they read as: an unreadable spec is none; a session key's last entry wins.
    let r: Record = json::from_str(&records[3].0).unwrap();
    assert_eq!(r.spec, None);
    let r: Record = json::from_str(&records[4].0).unwrap();
    let clients: Vec<_> = r
        .clients
        .iter()
        .map(|(k, v)| (session_text(k), *v))
        .collect();
    assert_eq!(
        clients,
        [("a~1".to_string(), (5, 6)), ("b~2".into(), (3, 4))]
    );
    // Nesting: a record passes over a field it does not know, as deep as serde_json reads.
    for n in [125, 126, 127, 128, 200] {
        let t = format!(
            r#"{{"snapshot":{snapshot},"x":{}{}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        );
        let by_serde_json = serde_json::from_str::<Value>(&t).is_ok();
        judged::<Record>(&t, by_serde_json, near_records);
    }
}

/// What the reader says names the field, the value and the place.
#[test]
fn mistakes_name_the_field_and_the_place() {
    let e = json::from_str::<Exchange>(r#"{"client":"a","batches":[{"seq":"1"}]}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid type: string, expected u64 at `batches[0].seq`"
    );
    let e = json::from_str::<SharedSpec>(r#"{"breaker":{"trip":{"kind":"x"}}}"#).unwrap_err();
    assert!(e.to_string().contains("unknown variant `x`"), "{e}");
    assert!(e.to_string().ends_with("at `breaker.trip.kind`"), "{e}");
    let e = json::from_str::<Exchange>("{\"client\":\"a\",\n  \"session\": 01}").unwrap_err();
    assert_eq!(e.to_string(), "invalid number at line 2 column 15");
}

/// tests/conformance/wire.json holds texts as serde_json wrote them; the packaged wasm must
/// give each back byte for byte (tests/js/shared-wire.test.mjs), and so must the core.
#[test]
fn the_wire_file_holds_what_serde_json_wrote_and_the_core_writes_it_back() {
    use breakwater::shared::{Coordinator, OnMismatch};

    let file: Value = serde_json::from_str(include_str!("conformance/wire.json")).unwrap();
    for text in file["specs"].as_array().unwrap() {
        let text = text.as_str().unwrap();
        let spec: SharedSpec = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&spec).unwrap(), text);
        assert_eq!(
            json::to_string(&json::from_str::<SharedSpec>(text).unwrap()),
            text
        );
    }
    for case in file["records"].as_array().unwrap() {
        let (spec, text) = (
            case["spec"].as_str().unwrap(),
            case["record"].as_str().unwrap(),
        );
        let record: Record = json::from_str(text).unwrap();
        assert_eq!(json::to_string(&record), text);
        assert_eq!(record_doc(&record).text(), text);
        let spec: SharedSpec = json::from_str(spec).unwrap();
        let co = Coordinator::load_json("upstream", spec, Some(text), OnMismatch::Install).unwrap();
        assert_eq!(co.restore_error(), None);
        assert_eq!(co.record_json().unwrap(), text);
    }
}
