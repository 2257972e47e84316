//! The shared breaker's coordinator and lease client (`breakwater::shared`), natively: the
//! behaviours hosts rely on, and one test per way the earlier copies of this protocol let an
//! outage through (lost and forged probes, resent batches, leases stretched by slow answers,
//! settings that differ during a deploy).
#![cfg(feature = "serde")]

use breakwater::shared::json;
use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::protocol::{
    Batch, Counts, Exchange, ExchangeReply, ProbeReport, WireOutcome, MAX_BATCHES, MAX_BODY_BYTES,
    MAX_CLIENTS, MAX_SEQ,
};
use breakwater::shared::{Answer, Next, Op};
use breakwater::shared::{
    ClientEvent, Coordinator, Decision, LeaseClient, LeaseOptions, LocalTime, OnMismatch, Record,
    SharedSpec, Ticket,
};
use breakwater::{
    BreakerConfig, Mode, Outcome, RejectReason, Rejected, State, Timestamp, TripRule,
};

fn spec() -> SharedSpec {
    SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
            .with_open_duration_ms(1_000)
            .with_probe_timeout_ms(2_000),
    )
    .with_lease_ms(500)
}

fn coordinator(spec: SharedSpec) -> Coordinator {
    Coordinator::fresh("upstream", spec).unwrap()
}

fn client(id: &str) -> LeaseClient {
    LeaseClient::new(id.into(), 7, LeaseOptions::new()).unwrap()
}

fn t(ms: u64) -> Timestamp {
    Timestamp(ms)
}

/// A client's own clock.
fn lt(ms: u64) -> LocalTime {
    LocalTime(ms)
}

fn exchange(c: &mut Coordinator, now: u64, req: &Exchange, acquire: bool) -> ExchangeReply {
    c.exchange(t(now), req, ExchangeOp::acquire_if(acquire))
        .expect("a valid exchange")
        .0
}

fn counts(generation: u32, successes: u32, failures: u32) -> Counts {
    Counts {
        generation: Some(generation),
        successes,
        failures,
        ignored: 0,
        throttled: 0,
    }
}

fn batch(seq: u64, counts: Vec<Counts>, probes: Vec<ProbeReport>) -> Batch {
    Batch {
        seq,
        counts,
        probes,
    }
}

fn req(client: &str, session: u64, batches: Vec<Batch>) -> Exchange {
    Exchange {
        client: client.into(),
        session,
        batches,
    }
}

/// Runs one call through `c` against `co` the way a host does.
fn call(
    c: &mut LeaseClient,
    co: &mut Coordinator,
    now: u64,
    outcome: Outcome,
) -> Result<Ticket, Rejected> {
    for _ in 0..3 {
        match c.admit(lt(now)) {
            Decision::Admit(ticket) => {
                if c.record(lt(now), ticket, outcome) {
                    flush(c, co, now, false);
                }
                return Ok(ticket);
            }
            Decision::Reject(r) => return Err(r),
            Decision::Acquire => {
                let req = c.acquire_request();
                let reply = exchange(co, now, &req, true);
                match c.on_answer(lt(now), Op::Acquire, Answer::Reply(&reply)) {
                    Next::Admit(ticket) => {
                        if c.record(lt(now), ticket, outcome) {
                            flush(c, co, now, false);
                        }
                        return Ok(ticket);
                    }
                    Next::Reject(r) => return Err(r),
                    other => panic!("{other:?}"),
                }
            }
            Decision::Refresh => flush(c, co, now, true),
        }
    }
    panic!("no decision")
}

fn flush(c: &mut LeaseClient, co: &mut Coordinator, now: u64, force: bool) {
    if let Some(req) = c.begin_flush(force) {
        let reply = exchange(co, now, &req, false);
        c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    }
}

/// Opens `co` with three failures from a throwaway session.
fn trip(co: &mut Coordinator, now: u64) {
    let g = co.breaker().generation();
    let _ = exchange(
        co,
        now,
        &req("tripper", 1, vec![batch(1, vec![counts(g, 0, 3)], vec![])]),
        false,
    );
    assert_eq!(co.breaker().state(), State::Open);
}

/// After the open period: a probe permit for `client`/`session`.
fn probe(co: &mut Coordinator, now: u64, client: &str, session: u64) -> (u32, u32) {
    let reply = exchange(co, now, &req(client, session, vec![]), true);
    let p = reply.permit.expect("a permit");
    (p.generation, p.probe.expect("a probe"))
}

fn probe_report(seq: u64, (generation, id): (u32, u32), outcome: WireOutcome) -> Batch {
    batch(
        seq,
        vec![],
        vec![ProbeReport {
            generation,
            id,
            issued_at: 0,
            outcome,
        }],
    )
}

// ----- the coordinator -----

#[test]
fn batched_failures_open_and_a_resent_batch_counts_once() {
    let mut co = coordinator(spec());
    let r = req("a", 1, vec![batch(1, vec![counts(0, 10, 3)], vec![])]);
    let reply = exchange(&mut co, 10_000, &r, false);
    assert_eq!(reply.lease.state, State::Open);
    assert_eq!(reply.lease.retry_after_ms, 1_000);
    assert_eq!(reply.acked, [1]);
    let reply = exchange(&mut co, 10_000, &r, false);
    assert_eq!(reply.acked, [1]);
    let view = co.view(t(10_000));
    assert_eq!((view.stats.successes, view.stats.failures), (10, 3));
    assert_eq!(view.counters.duplicate_batches, 1);
}

#[test]
fn outcomes_of_another_generation_count_as_stale_and_never_move_the_state() {
    let mut co = coordinator(spec());
    let _ = exchange(
        &mut co,
        0,
        &req("a", 1, vec![batch(1, vec![counts(7, 0, 5)], vec![])]),
        false,
    );
    let unknown = Counts {
        generation: None,
        successes: 0,
        failures: 4,
        ignored: 0,
        throttled: 0,
    };
    let _ = exchange(
        &mut co,
        0,
        &req("a", 1, vec![batch(2, vec![unknown], vec![])]),
        false,
    );
    assert_eq!(co.breaker().state(), State::Closed);
    let stats = co.view(t(0)).stats;
    assert_eq!((stats.stale, stats.failures), (9, 9));
}

#[test]
fn what_follows_a_trip_in_the_same_batch_is_stale() {
    let mut co = coordinator(spec());
    // 3 failures trip; the counts are applied successes, ignored, failures.
    let c = Counts {
        generation: Some(0),
        successes: 2,
        failures: 5,
        ignored: 1,
        throttled: 0,
    };
    let _ = exchange(
        &mut co,
        0,
        &req("a", 1, vec![batch(1, vec![c], vec![])]),
        false,
    );
    let stats = co.view(t(0)).stats;
    assert_eq!(co.breaker().state(), State::Open);
    assert_eq!(
        (stats.successes, stats.failures, stats.ignored, stats.stale),
        (2, 5, 1, 2)
    );
}

#[test]
fn exactly_one_probe_for_every_client_then_closes() {
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let p = probe(&mut co, 1_000, "a", 1);
    for client in ["b", "c", "d"] {
        let other = exchange(&mut co, 1_000, &req(client, 1, vec![]), true);
        assert!(other.permit.is_none());
        assert_eq!(other.lease.state, State::HalfOpen);
    }
    let reply = exchange(
        &mut co,
        1_010,
        &req("a", 1, vec![probe_report(1, p, WireOutcome::Success)]),
        false,
    );
    assert_eq!(reply.lease.state, State::Closed);
    assert_eq!(co.view(t(1_010)).counters.probes_granted, 1);
}

#[test]
fn a_lost_probe_frees_its_slot_after_the_probe_timeout_and_no_sooner() {
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let _lost = probe(&mut co, 1_000, "a", 1);
    // Five instances keep asking while the probe's lease runs: none gets through.
    for (i, now) in [1_001, 1_500, 2_000, 2_500, 2_999].into_iter().enumerate() {
        let r = exchange(&mut co, now, &req(&format!("i{i}"), 1, vec![]), true);
        assert!(r.permit.is_none(), "at {now}");
        assert_eq!(r.rejected.unwrap().retry_after_ms, 3_000 - now);
    }
    // Then exactly one other gets the slot, and its success closes the breaker.
    let p = probe(&mut co, 3_000, "b", 1);
    let r = exchange(&mut co, 3_000, &req("c", 1, vec![]), true);
    assert!(r.permit.is_none());
    let reply = exchange(
        &mut co,
        3_001,
        &req("b", 1, vec![probe_report(1, p, WireOutcome::Success)]),
        false,
    );
    assert_eq!(reply.lease.state, State::Closed);
}

#[test]
fn a_late_report_of_an_expired_probe_still_counts_once() {
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let p = probe(&mut co, 1_000, "a", 1);
    let _ = probe(&mut co, 3_000, "b", 1);
    let r = exchange(
        &mut co,
        3_500,
        &req("a", 1, vec![probe_report(1, p, WireOutcome::Failure)]),
        false,
    );
    assert_eq!(
        r.lease.state,
        State::Open,
        "the slow probe's failure reopens"
    );
}

#[test]
fn a_probe_report_counts_for_the_probe_reported_not_the_oldest() {
    let two = SharedSpec::new(
        spec()
            .breaker
            .with_half_open_max_probes(2)
            .with_half_open_success_threshold(2),
    )
    .with_lease_ms(500);
    let mut co = coordinator(two);
    trip(&mut co, 0);
    let pa = probe(&mut co, 1_000, "a", 1);
    let pb = probe(&mut co, 1_001, "b", 1);
    // b's probe fails: OPEN again, whatever a's probe says afterwards.
    let r = exchange(
        &mut co,
        1_002,
        &req("b", 1, vec![probe_report(1, pb, WireOutcome::Failure)]),
        false,
    );
    assert_eq!(r.lease.state, State::Open);
    let r = exchange(
        &mut co,
        1_003,
        &req("a", 1, vec![probe_report(1, pa, WireOutcome::Success)]),
        false,
    );
    assert_eq!(r.lease.state, State::Open);
    assert_eq!(co.view(t(1_003)).counters.unmatched_probe_reports, 1);
}

#[test]
fn forged_and_repeated_probe_reports_are_not_counted() {
    let three =
        SharedSpec::new(spec().breaker.with_half_open_success_threshold(3)).with_lease_ms(500);
    let mut co = coordinator(three);
    trip(&mut co, 0);
    let p = probe(&mut co, 1_000, "a", 1);
    // The same success three times in one batch, a probe id never granted, and the real probe
    // reported from another session: one success in all.
    let mut b = probe_report(1, p, WireOutcome::Success);
    b.probes = vec![b.probes[0]; 3];
    b.probes.push(ProbeReport {
        generation: p.0,
        id: p.1 + 1,
        issued_at: 0,
        outcome: WireOutcome::Success,
    });
    let _ = exchange(&mut co, 1_001, &req("a", 1, vec![b]), false);
    let _ = exchange(
        &mut co,
        1_001,
        &req("a", 2, vec![probe_report(1, p, WireOutcome::Success)]),
        false,
    );
    let _ = exchange(
        &mut co,
        1_001,
        &req("mallory", 1, vec![probe_report(1, p, WireOutcome::Success)]),
        false,
    );
    assert_eq!(co.breaker().state(), State::HalfOpen);
    assert_eq!(co.breaker().half_open_successes(), 1);
    assert_eq!(co.view(t(1_001)).counters.unmatched_probe_reports, 5);
}

#[test]
fn a_resent_batch_counts_once_after_more_than_256_other_sessions() {
    let mut co = coordinator(spec());
    let first = req("a", 1, vec![batch(1, vec![counts(0, 5, 0)], vec![])]);
    let _ = exchange(&mut co, 0, &first, false);
    for i in 0..300 {
        let _ = exchange(
            &mut co,
            1 + i,
            &req(
                &format!("c{i}"),
                1,
                vec![batch(1, vec![counts(0, 1, 0)], vec![])],
            ),
            false,
        );
    }
    // The answer to `first` was lost: it comes again.
    let reply = exchange(&mut co, 400, &first, false);
    assert_eq!(reply.acked, [1]);
    assert_eq!(co.view(t(400)).stats.successes, 305);
}

#[test]
fn when_sessions_must_be_forgotten_early_unknown_resends_are_counted_at_least_once() {
    let mut co = coordinator(spec());
    let mut a = req("a", 1, vec![batch(1, vec![counts(0, 1, 0)], vec![])]);
    let _ = exchange(&mut co, 0, &a, false);
    a.batches = vec![batch(2, vec![counts(0, 1, 0)], vec![])];
    let _ = exchange(&mut co, 1, &a, false);
    for i in 0..MAX_CLIENTS as u64 {
        let _ = exchange(
            &mut co,
            2 + i,
            &req(
                &format!("c{i}"),
                1,
                vec![batch(1, vec![counts(0, 1, 0)], vec![])],
            ),
            false,
        );
    }
    let before = co.view(t(5_000)).stats.successes;
    // "a" was forgotten while it could still resend batch 2: it cannot tell, so it counts it
    // (never zero) and says so in `unverified_batches`.
    let reply = exchange(&mut co, 5_000, &a, false);
    assert_eq!(reply.acked, [2]);
    let view = co.view(t(5_000));
    assert_eq!(view.stats.successes, before + 1);
    // "a" was forgotten for the last of the 1 024 others, and remembering "a" again forgot one
    // more.
    assert_eq!(view.counters.sessions_evicted_early, 2);
    assert_eq!(view.counters.unverified_batches, 1);
}

#[test]
fn a_forged_batch_number_cannot_silence_a_client() {
    let mut co = coordinator(spec());
    let _ = exchange(
        &mut co,
        0,
        &req("a", 42, vec![batch(1, vec![counts(0, 1, 0)], vec![])]),
        false,
    );
    // Same name, other session: a session of its own. Same session, a huge jump: refused.
    let _ = exchange(
        &mut co,
        1,
        &req("a", 43, vec![batch(MAX_SEQ, vec![], vec![])]),
        false,
    );
    let reply = exchange(
        &mut co,
        1,
        &req("a", 42, vec![batch(MAX_SEQ, vec![], vec![])]),
        false,
    );
    assert_eq!(reply.refused.len(), 1);
    assert!(reply.acked.is_empty());
    let reply = exchange(
        &mut co,
        2,
        &req("a", 42, vec![batch(2, vec![counts(0, 1, 0)], vec![])]),
        false,
    );
    assert_eq!(reply.acked, [2]);
    assert_eq!(co.view(t(2)).stats.successes, 2);
    // Numbers past 2^53 are refused whole.
    assert!(co
        .exchange(
            t(3),
            &req("a", 42, vec![batch(MAX_SEQ + 1, vec![], vec![])]),
            ExchangeOp::Report
        )
        .is_err());
}

#[test]
fn a_restarted_client_reusing_its_name_is_counted_from_its_first_batch() {
    let mut co = coordinator(spec());
    for seq in 1..=20 {
        let _ = exchange(
            &mut co,
            seq,
            &req("web-1", 1, vec![batch(seq, vec![counts(0, 1, 0)], vec![])]),
            false,
        );
    }
    let reply = exchange(
        &mut co,
        100,
        &req("web-1", 2, vec![batch(1, vec![counts(0, 0, 1)], vec![])]),
        false,
    );
    assert_eq!(reply.acked, [1]);
    assert_eq!(co.view(t(100)).stats.failures, 1);
}

#[test]
fn a_batch_over_a_limit_is_refused_alone_and_the_others_apply() {
    let mut co = coordinator(spec());
    let too_many = batch(2, (0..9).map(|_| counts(0, 1, 0)).collect(), vec![]);
    let r = req(
        "a",
        1,
        vec![
            batch(1, vec![counts(0, 1, 0)], vec![]),
            too_many,
            batch(3, vec![counts(0, 1, 0)], vec![]),
        ],
    );
    let reply = exchange(&mut co, 0, &r, false);
    assert_eq!(reply.acked, [1, 3]);
    assert_eq!(reply.refused.len(), 1);
    assert_eq!(reply.refused[0].seq, 2);
    assert!(reply.refused[0].reason.contains("counts"));
    assert_eq!(co.view(t(0)).stats.successes, 2);
}

#[test]
fn nothing_is_persisted_for_rejections_or_plain_closed_permits() {
    let mut co = coordinator(spec());
    let (_, step) = co
        .exchange(t(0), &req("a", 1, vec![]), ExchangeOp::Acquire)
        .unwrap();
    assert!(!step.changed, "a CLOSED permit");
    trip(&mut co, 0);
    let (_, step) = co
        .exchange(t(10), &req("a", 1, vec![]), ExchangeOp::Acquire)
        .unwrap();
    assert!(!step.changed, "a rejection");
    let (_, step) = co
        .exchange(t(1_000), &req("a", 1, vec![]), ExchangeOp::Acquire)
        .unwrap();
    assert!(step.changed, "a probe grant");
}

#[test]
fn a_clock_reading_infinity_cannot_push_stored_times_past_2_pow_53() {
    let mut co = coordinator(spec());
    let _ = co.exchange(
        Timestamp(u64::MAX),
        &req("a", 1, vec![batch(1, vec![counts(0, 0, 3)], vec![])]),
        ExchangeOp::Report,
    );
    let json = json::to_string(&co.record());
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    fn max_number(v: &serde_json::Value) -> u64 {
        match v {
            serde_json::Value::Number(n) => n.as_u64().unwrap_or(0),
            serde_json::Value::Array(a) => a.iter().map(max_number).max().unwrap_or(0),
            serde_json::Value::Object(o) => o
                .iter()
                // The jitter generator's state and seed are 64-bit values, not times.
                .filter(|(k, _)| k.as_str() != "rng" && k.as_str() != "seed")
                .map(|(_, v)| max_number(v))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }
    assert!(max_number(&value) < 1 << 53, "{json}");
    let back = Coordinator::restore(
        "upstream",
        spec(),
        Some(json::from_str(&json).unwrap()),
        OnMismatch::Adopt,
    )
    .unwrap();
    assert!(back.restore_error().is_none());
    assert_eq!(back.breaker().state(), State::Open);
}

#[test]
fn record_round_trips_with_sessions_grants_and_an_isolation() {
    let mut co = coordinator(spec());
    trip(&mut co, 5);
    let p = probe(&mut co, 1_005, "a", 1);
    let json = json::to_string(&co.record());
    let mut back = Coordinator::restore(
        "upstream",
        spec(),
        Some(json::from_str(&json).unwrap()),
        OnMismatch::Install,
    )
    .unwrap();
    assert!(back.restore_error().is_none());
    assert_eq!(back.breaker().probes_in_flight(), 1);
    // The granted probe is still known, and the tripping batch still deduplicated.
    let r = exchange(
        &mut back,
        1_006,
        &req("tripper", 1, vec![batch(1, vec![counts(0, 0, 3)], vec![])]),
        false,
    );
    assert_eq!(r.acked, [1]);
    let r = exchange(
        &mut back,
        1_006,
        &req("a", 1, vec![probe_report(1, p, WireOutcome::Success)]),
        false,
    );
    assert_eq!(r.lease.state, State::Closed);
    let _ = back.isolate(t(2_000));
    let json = json::to_string(&back.record());
    let back = Coordinator::restore(
        "upstream",
        spec(),
        Some(json::from_str(&json).unwrap()),
        OnMismatch::Install,
    )
    .unwrap();
    assert_eq!(back.breaker().mode(), Mode::Isolated);
    assert!(!back.may_expire(), "an isolation never expires");
}

#[test]
fn settings_that_differ_never_wipe_the_shared_state() {
    let old = spec();
    let new = SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::FailuresInWindow {
                threshold: 10,
                window_ms: 60_000,
            })
            .with_open_duration_ms(5_000),
    )
    .with_lease_ms(500);
    let mut co = coordinator(old);
    let tripping = req("a", 1, vec![batch(1, vec![counts(0, 0, 3)], vec![])]);
    let _ = exchange(&mut co, 100, &tripping, false);
    let record: Record = json::from_str(&json::to_string(&co.record())).unwrap();

    // A new instance, adopting: runs under the stored settings, says so, keeps everything.
    let mut adopted =
        Coordinator::restore("upstream", new, Some(record.clone()), OnMismatch::Adopt).unwrap();
    assert_eq!(adopted.spec().fingerprint(), old.fingerprint());
    let view = adopted.view(t(200));
    let m = view.options_mismatch.clone().unwrap();
    assert_eq!(
        (m.stored, m.configured, m.resolution.as_str()),
        (old.fingerprint(), new.fingerprint(), "adopted")
    );
    assert_eq!(view.lease.state, State::Open);
    assert_eq!(view.open_until, Some(1_100));
    assert_eq!(exchange(&mut adopted, 200, &tripping, false).acked, [1]);
    assert_eq!(
        adopted.view(t(200)).stats.failures,
        3,
        "the resend is not counted twice"
    );
    // Its reset installs its own settings.
    let _ = adopted.reset(t(300));
    assert_eq!(adopted.spec().fingerprint(), new.fingerprint());
    assert!(adopted.view(t(300)).options_mismatch.is_none());

    // The only writer (a Durable Object), installing: the new settings, the state carried over.
    let mut installed =
        Coordinator::restore("upstream", new, Some(record), OnMismatch::Install).unwrap();
    assert_eq!(installed.spec().fingerprint(), new.fingerprint());
    let view = installed.view(t(200));
    assert_eq!(view.options_mismatch.unwrap().resolution, "installed");
    assert_eq!(
        (view.lease.state, view.open_until),
        (State::Open, Some(1_100))
    );
    assert_eq!(
        view.lease.generation,
        co.breaker().generation(),
        "clients admitted under either settings keep being counted"
    );
    assert_eq!(exchange(&mut installed, 200, &tripping, false).acked, [1]);
}

#[test]
fn unreadable_or_unfit_records_start_closed_and_say_why() {
    for garbage in ["", "{", "null", "{\"snapshot\":42}", "\u{0}\u{ff}"] {
        assert!(json::from_str::<Record>(garbage).is_err(), "{garbage:?}");
    }
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let mut record = co.record();
    record.snapshot.version = 99;
    let back = Coordinator::restore("upstream", spec(), Some(record), OnMismatch::Install).unwrap();
    assert_eq!(back.breaker().state(), State::Closed);
    assert!(back.restore_error().unwrap().contains("version"));
}

#[test]
fn incidents_are_measured_from_opening_to_close_across_restarts() {
    let mut co = coordinator(spec());
    let _ = co.isolate(t(1_000));
    assert_eq!(co.view(t(1_000)).counters.incident_since, Some(1_000));
    let record = co.record();
    let mut co =
        Coordinator::restore("upstream", spec(), Some(record), OnMismatch::Install).unwrap();
    let _ = co.reset(t(21_000));
    let c = co.view(t(21_000)).counters;
    assert_eq!(c.incident_since, None);
    assert_eq!(c.incidents, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(c.incident_ms, 20_000);
}

// ----- the lease client -----

#[test]
fn healthy_calls_cost_one_request_per_lease() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    for i in 0..1_000 {
        let _ = call(&mut c, &mut co, 1_000 + i / 10, Outcome::Success).unwrap();
    }
    // 100 ms of calls under a 500 ms lease: the first acquire, and one report once `max_batch`
    // (1 000) successes waited.
    assert_eq!(c.requests(), 2);
    flush(&mut c, &mut co, 2_000, true);
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(co.view(t(2_000)).stats.successes, 1_000);
}

#[test]
fn failures_are_sent_at_once_and_a_trip_is_seen_by_the_reporter() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    for _ in 0..3 {
        let _ = call(&mut c, &mut co, 10, Outcome::Failure).unwrap();
    }
    assert_eq!(c.known_state(), Some(State::Open));
    let r = call(&mut c, &mut co, 10, Outcome::Success).unwrap_err();
    assert_eq!((r.reason, r.retry_after_ms), (RejectReason::Open, 1_000));
}

#[test]
fn other_clients_see_the_trip_within_one_lease() {
    let mut co = coordinator(spec());
    let mut a = client("a");
    let mut b = client("b");
    let _ = call(&mut b, &mut co, 0, Outcome::Success).unwrap();
    for _ in 0..3 {
        let _ = call(&mut a, &mut co, 100, Outcome::Failure).unwrap();
    }
    assert!(call(&mut b, &mut co, 499, Outcome::Success).is_ok());
    assert!(call(&mut b, &mut co, 500, Outcome::Success).is_err());
    assert_eq!(b.known_state(), Some(State::Open));
}

#[test]
fn a_report_in_flight_does_not_stretch_the_lease() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    let _ = call(&mut c, &mut co, 0, Outcome::Success).unwrap();
    // A failure's report at 100 renews the lease until 600.
    let _ = call(&mut c, &mut co, 100, Outcome::Failure).unwrap();
    // Another failure: its report goes out at 200 and hangs.
    let ticket = match c.admit(lt(200)) {
        Decision::Admit(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(c.record(lt(200), ticket, Outcome::Failure));
    let _in_flight = c.begin_flush(false).unwrap();
    assert!(c.in_flight());
    assert!(matches!(c.admit(lt(599)), Decision::Admit(_)));
    // The lease ends at 600 whatever is in flight: the host must wait for the answer.
    assert_eq!(c.admit(lt(600)), Decision::Refresh);
    assert!(c.begin_flush(true).is_none());
}

#[test]
fn a_lease_runs_from_when_its_request_was_sent() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    assert_eq!(c.admit(lt(1_000)), Decision::Acquire);
    let req = c.acquire_request();
    // The answer arrives 400 ms later: 100 ms of the 500 ms lease are left.
    let reply = exchange(&mut co, 1_000, &req, true);
    assert!(matches!(
        c.on_answer(lt(1_400), Op::Acquire, Answer::Reply(&reply)),
        Next::Admit(_)
    ));
    assert!(matches!(c.admit(lt(1_499)), Decision::Admit(_)));
    assert_eq!(c.admit(lt(1_500)), Decision::Refresh);
}

#[test]
fn one_probe_for_all_clients() {
    let mut co = coordinator(spec());
    let mut clients: Vec<LeaseClient> = (0..8).map(|i| client(&format!("c{i}"))).collect();
    for c in clients.iter_mut() {
        let _ = call(c, &mut co, 0, Outcome::Failure);
    }
    assert_eq!(co.breaker().state(), State::Open);
    let mut probes = Vec::new();
    for (i, c) in clients.iter_mut().enumerate() {
        if c.admit(lt(1_000)) == Decision::Refresh {
            flush(c, &mut co, 1_000, true);
        }
        match c.admit(lt(1_000)) {
            Decision::Acquire => {
                let req = c.acquire_request();
                let reply = exchange(&mut co, 1_000, &req, true);
                if let Next::Admit(ticket) =
                    c.on_answer(lt(1_000), Op::Acquire, Answer::Reply(&reply))
                {
                    assert!(ticket.is_probe());
                    probes.push((i, ticket));
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(probes.len(), 1);
    let (i, ticket) = probes[0];
    assert!(clients[i].record(lt(1_010), ticket, Outcome::Success));
    flush(&mut clients[i], &mut co, 1_010, false);
    assert_eq!(co.breaker().state(), State::Closed);
    // The others keep their refusal (every slot taken) for one lease at most, without asking...
    let before: u64 = clients.iter().map(|c| c.requests()).sum();
    for (j, c) in clients.iter_mut().enumerate() {
        if j != i {
            assert!(call(c, &mut co, 1_020, Outcome::Success).is_err());
        }
    }
    assert_eq!(clients.iter().map(|c| c.requests()).sum::<u64>(), before);
    // ...then every one of them is CLOSED again.
    for c in clients.iter_mut() {
        assert!(call(c, &mut co, 1_000 + 500, Outcome::Success).is_ok());
    }
}

#[test]
fn unreachable_coordinator_falls_back_and_counts_arrive_later_once() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    let _ = call(&mut c, &mut co, 0, Outcome::Success).unwrap();
    while c.next_event().is_some() {}
    assert_eq!(c.admit(lt(600)), Decision::Refresh);
    let lost = c.begin_flush(true).unwrap();
    c.on_answer(lt(600), Op::Report, Answer::Unreachable("down"));
    assert!(matches!(c.next_event(), Some(ClientEvent::Local { .. })));
    match c.admit(lt(601)) {
        Decision::Admit(ticket) => {
            assert!(ticket.is_local());
            let _ = c.record(lt(601), ticket, Outcome::Success);
        }
        other => panic!("{other:?}"),
    }
    let mut closed =
        LeaseClient::new("b".into(), 1, LeaseOptions::new().with_fail_closed(true)).unwrap();
    closed.on_answer(lt(0), Op::Acquire, Answer::Unreachable("down"));
    assert!(matches!(closed.admit(lt(1)), Decision::Reject(_)));
    // The lost report did arrive; the resend carries it again with the same number.
    let _ = exchange(&mut co, 600, &lost, false);
    assert_eq!(c.admit(lt(1_600)), Decision::Refresh);
    flush(&mut c, &mut co, 1_600, true);
    assert_eq!(c.next_event(), Some(ClientEvent::Recovered));
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(co.view(t(1_600)).stats.successes, 2);
}

#[test]
fn the_local_breaker_trips_and_recovers_while_the_coordinator_is_unreachable() {
    let opts = LeaseOptions::new()
        .with_retry_unreachable_ms(100_000)
        .with_local(
            BreakerConfig::new()
                .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
                .with_open_duration_ms(1_000),
        );
    let mut c = LeaseClient::new("a".into(), 1, opts).unwrap();
    c.on_answer(lt(0), Op::Acquire, Answer::Unreachable("down"));
    for now in [1, 2] {
        let Decision::Admit(ticket) = c.admit(lt(now)) else {
            panic!()
        };
        let _ = c.record(lt(now), ticket, Outcome::Failure);
    }
    assert!(matches!(c.admit(lt(3)), Decision::Reject(_)));
    // An ignored probe (a 400, a cancel) frees the slot: the next call probes again.
    let Decision::Admit(probe) = c.admit(lt(1_002)) else {
        panic!()
    };
    let _ = c.record(lt(1_002), probe, Outcome::Ignored);
    let Decision::Admit(probe) = c.admit(lt(1_003)) else {
        panic!("locked shut after an ignored probe")
    };
    let _ = c.record(lt(1_003), probe, Outcome::Success);
    assert_eq!(c.local().state(), State::Closed);
    // A probe that never reports frees its slot after the probe timeout (30 s by default).
    for now in [2_000, 2_001] {
        let Decision::Admit(ticket) = c.admit(lt(now)) else {
            panic!()
        };
        let _ = c.record(lt(now), ticket, Outcome::Failure);
    }
    let Decision::Admit(_never_reported) = c.admit(lt(3_001)) else {
        panic!()
    };
    assert!(matches!(c.admit(lt(3_002)), Decision::Reject(_)));
    assert!(matches!(c.admit(lt(33_001)), Decision::Admit(_)));
}

#[test]
fn a_refused_batch_is_dropped_and_announced_never_resent() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    let _ = call(&mut c, &mut co, 0, Outcome::Success).unwrap();
    let Decision::Admit(ticket) = c.admit(lt(1)) else {
        panic!()
    };
    assert!(c.record(lt(1), ticket, Outcome::Failure));
    let sent = c.begin_flush(false).unwrap();
    assert_eq!(sent.batches.len(), 1);
    // A coordinator that will not take it (an older version with smaller limits, say).
    c.on_answer(
        lt(2),
        Op::Report,
        Answer::Refused {
            status: 413,
            reason: "object answered 413: body larger than 64 KiB",
        },
    );
    // The batch held the waiting success and the failure.
    assert_eq!(c.dropped(), 2);
    let events: Vec<ClientEvent> = core::iter::from_fn(|| c.next_event()).collect();
    assert!(events.iter().any(
        |e| matches!(e, ClientEvent::Dropped { outcomes: 2, reason } if reason.contains("413"))
    ));
    // A refusal is no outage of the upstream: the local breaker decides for a while.
    assert!(events.iter().any(|e| matches!(
        e,
        ClientEvent::Local {
            status: Some(413),
            ..
        }
    )));
    assert!(c.deciding_locally());
    assert_eq!(c.unacknowledged(), 0);
    // Refused batches listed in a reply are dropped too.
    let _ = call(&mut c, &mut co, 1_003, Outcome::Success).unwrap();
    assert!(!c.deciding_locally());
    let Decision::Admit(ticket) = c.admit(lt(1_003)) else {
        panic!()
    };
    assert!(c.record(lt(1_003), ticket, Outcome::Failure));
    let mut req = c.begin_flush(false).unwrap();
    // (Altered on the way, so that this coordinator refuses it.)
    req.batches[0].counts = vec![counts(0, 1, 0); 9];
    let reply = exchange(&mut co, 1_003, &req, false);
    assert_eq!(reply.refused.len(), 1);
    c.on_answer(lt(1_003), Op::Report, Answer::Reply(&reply));
    assert_eq!((c.dropped(), c.unacknowledged()), (4, 0));
}

#[test]
fn batches_older_than_the_resend_window_are_dropped() {
    let mut c = client("a");
    c.on_answer(lt(0), Op::Acquire, Answer::Unreachable("down"));
    let Decision::Admit(ticket) = c.admit(lt(1)) else {
        panic!()
    };
    let _ = c.record(lt(1), ticket, Outcome::Failure);
    let _ = c.begin_flush(false).unwrap();
    c.on_answer(lt(2), Op::Report, Answer::Unreachable("still down"));
    let _ = c.admit(lt(400_000));
    let req = c.begin_flush(true).unwrap();
    assert!(req.batches.is_empty());
    assert_eq!(c.dropped(), 1);
}

#[test]
fn a_long_outage_at_high_volume_never_builds_a_report_the_coordinator_refuses() {
    let mut co = coordinator(spec());
    let mut c = LeaseClient::new(
        "a".into(),
        1,
        LeaseOptions::new().with_retry_unreachable_ms(300_000),
    )
    .unwrap();
    let _ = call(&mut c, &mut co, 0, Outcome::Success).unwrap();
    c.on_answer(lt(1), Op::Acquire, Answer::Unreachable("down"));
    // 2 000 000 outcomes (a few failures among them) while the coordinator is unreachable.
    for i in 0..2_000_000u64 {
        let now = 2 + i / 10_000;
        match c.admit(lt(now)) {
            Decision::Admit(ticket) => {
                let outcome = if i % 100_000 == 0 {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                let _ = c.record(lt(now), ticket, outcome);
            }
            Decision::Reject(_) => {}
            other => panic!("{other:?}"),
        }
    }
    let mut sent = 0;
    let mut now = 300_000;
    while c.unacknowledged() > 0 && sent < 100 {
        let _ = c.admit(lt(now));
        let req = c.begin_flush(true).unwrap();
        let json = json::to_string(&req);
        assert!(json.len() <= MAX_BODY_BYTES, "{} bytes", json.len());
        assert!(req.batches.len() <= MAX_BATCHES);
        let reply = exchange(&mut co, now, &req, false);
        assert!(reply.refused.is_empty(), "{:?}", reply.refused);
        c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
        sent += 1;
        now += 1;
    }
    assert_eq!(c.unacknowledged(), 0);
    let stats = co.view(t(now)).stats;
    let counted = stats.successes + stats.failures + stats.ignored;
    // Dropped by the client (more than it keeps), or by the coordinator (past the session's
    // outcome budget): either way counted in a counter.
    let dropped = c.dropped() + co.view(t(now)).counters.outcomes_dropped;
    assert_eq!(
        counted + dropped,
        2_000_001,
        "every outcome counted once or dropped"
    );
    assert!(
        c.dropped() > 0,
        "more than a client keeps: some were given up, and said so"
    );
}

/// A record persisted before trip rules were tagged by `kind` (`{"consecutive_failures":
/// {"threshold": 3}}`) must not reset an OPEN breaker at the deploy that changes the spelling:
/// its state is restored under the configured settings.
#[cfg(feature = "json")]
#[test]
fn a_record_written_with_the_old_trip_spelling_keeps_its_state() {
    let mut co = coordinator(spec());
    trip(&mut co, 1_000);
    let json = co.record_json().unwrap();
    let current = r#""trip":{"kind":"consecutive_failures","threshold":3}"#;
    assert!(json.contains(current), "{json}");
    let old = json.replace(
        current,
        r#""trip":{"consecutive_failures":{"threshold":3}}"#,
    );

    for on_mismatch in [OnMismatch::Install, OnMismatch::Adopt] {
        let back = Coordinator::load_json("upstream", spec(), Some(&old), on_mismatch).unwrap();
        assert_eq!(back.restore_error(), None);
        assert_eq!(back.breaker().state(), State::Open);
        assert_eq!(back.breaker().generation(), co.breaker().generation());
        assert_eq!(back.spec(), &spec());
    }
    // Anything else unreadable in a record still gives a CLOSED breaker and the reason.
    let broken = json.replace(r#""snapshot":{"#, r#""snapshot":{"state":7,"#);
    let back =
        Coordinator::load_json("upstream", spec(), Some(&broken), OnMismatch::Install).unwrap();
    assert!(back.restore_error().is_some());
    assert_eq!(back.breaker().state(), State::Closed);
}

/// What a host does in the background after `admit_now`: sends the request it left, if any.
fn background(c: &mut LeaseClient, co: &mut Coordinator, now: u64) {
    match c.take_background() {
        Some(breakwater::shared::Background::Acquire) => {
            let req = c.acquire_request();
            let reply = exchange(co, now, &req, true);
            if c.on_answer(lt(now), Op::BackgroundAcquire, Answer::Reply(&reply)) == Next::Report {
                flush(c, co, now, false);
            }
        }
        Some(breakwater::shared::Background::Refresh) => flush(c, co, now, true),
        None => {}
    }
}

/// Seed 000's synchronous `isHealthy()`: `admit_now` never asks the host to wait. Before the first
/// lease the instance's own breaker admits (and the outcomes count under the lease once it is
/// here); the instance's failures block it at once, before the coordinator has answered; another
/// instance learns within one lease; after the open period the probe a background request
/// fetched waits for the next call, and (liveness) everybody is admitted again once it succeeds.
#[test]
fn admit_now_answers_at_once_blocks_the_failing_instance_at_once_and_recovers() {
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
        .with_open_duration_ms(1_000)
        .with_probe_timeout_ms(2_000);
    let mut co = coordinator(SharedSpec::new(config).with_lease_ms(500));
    let own = LeaseOptions::new().with_local(config);
    let mut a = LeaseClient::new("a".into(), 1, own).unwrap();
    let mut b = LeaseClient::new("b".into(), 2, own).unwrap();
    let now = 10_000;

    // No lease yet: admitted by the instance's own breaker, the acquire left for the background.
    let Decision::Admit(ticket) = a.admit_now(lt(now)) else {
        panic!("admitted before the first lease")
    };
    assert_eq!(
        a.take_background(),
        Some(breakwater::shared::Background::Acquire)
    );
    // While the first lease is on its way, a failure waits for it instead of being sent alone.
    let _ = a.acquire_request();
    assert!(!a.record(lt(now), ticket, Outcome::Failure));
    let reply = exchange(&mut co, now, &req("a", 1, vec![]), true);
    assert!(
        (a.on_answer(lt(now), Op::BackgroundAcquire, Answer::Reply(&reply)) == Next::Report),
        "the failure is due now"
    );
    flush(&mut a, &mut co, now, false);
    assert_eq!(
        co.breaker().stats().failures,
        1,
        "counted under the first lease"
    );

    // The second failure opens the instance's own breaker at once: refused before any answer.
    let Decision::Admit(ticket) = a.admit_now(lt(now)) else {
        panic!("admitted on the lease")
    };
    assert!(
        a.record(lt(now), ticket, Outcome::Failure),
        "a failure is sent at once"
    );
    let refused = a.admit_now(lt(now));
    assert!(
        matches!(refused, Decision::Reject(r) if r.reason == RejectReason::Open),
        "{refused:?}"
    );
    assert_eq!(a.state_at(lt(now)), State::Open);
    flush(&mut a, &mut co, now, false);
    assert_eq!(co.breaker().state(), State::Open);

    // b had a lease from before; within one lease it learns.
    let Decision::Admit(t0) = b.admit_now(lt(now - 100)) else {
        panic!()
    };
    background(&mut b, &mut co, now - 100);
    let _ = b.record(lt(now - 100), t0, Outcome::Success);
    let later = now + 500;
    let _ = b.admit_now(lt(later));
    background(&mut b, &mut co, later);
    assert!(matches!(b.admit_now(lt(later)), Decision::Reject(_)));
    assert_eq!(
        b.peek(lt(later)).map_err(|r| r.reason),
        Err(RejectReason::Open)
    );

    // After the open period: the first call is refused while the probe is fetched, the next one
    // takes it; its success closes the fleet's breaker, and both instances are admitted again.
    let healed = now + 1_100;
    assert!(matches!(a.admit_now(lt(healed)), Decision::Reject(_)));
    background(&mut a, &mut co, healed);
    let Decision::Admit(probe) = a.admit_now(lt(healed)) else {
        panic!("the parked probe")
    };
    assert!(probe.is_probe());
    assert!(a.record(lt(healed), probe, Outcome::Success));
    flush(&mut a, &mut co, healed, false);
    assert_eq!(co.breaker().state(), State::Closed);
    assert!(matches!(a.admit_now(lt(healed)), Decision::Admit(_)));
    let _ = b.admit_now(lt(healed + 500));
    background(&mut b, &mut co, healed + 500);
    assert!(matches!(b.admit_now(lt(healed + 500)), Decision::Admit(_)));
}

/// A probe a background request fetched and no call took is given back after
/// `PARKED_PERMIT_MS`, so that a quiet instance does not hold the fleet's only probe until the
/// coordinator's probe time-out.
#[test]
fn a_parked_probe_no_call_takes_is_given_back() {
    let mut co = coordinator(spec());
    let mut a = client("a");
    let mut b = client("b");
    let now = 10_000;
    trip(&mut co, now);
    let _ = a.admit_now(lt(now + 1_000));
    background(&mut a, &mut co, now + 1_000);
    assert_eq!(
        co.breaker().probes_in_flight(),
        1,
        "a holds the probe, parked"
    );
    // Nobody calls on a for a while: the parked probe is given back with the next report.
    let quiet = now + 1_000 + breakwater::shared::PARKED_PERMIT_MS;
    let _ = a.admit_now(lt(quiet));
    flush(&mut a, &mut co, quiet, true);
    assert_eq!(co.breaker().probes_in_flight(), 0, "given back as ignored");
    // b can probe now.
    let _ = b.admit_now(lt(quiet));
    background(&mut b, &mut co, quiet);
    assert!(matches!(b.admit_now(lt(quiet)), Decision::Admit(t) if t.is_probe()));
}

/// An instance's own breaker yields once the coordinator has heard everything it saw and still
/// says CLOSED (it counts other instances' successes, or runs other settings): its refusals last
/// one round trip at most.
#[test]
fn the_instances_own_breaker_yields_to_a_coordinator_that_heard_it() {
    let lenient = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 10 });
    let strict = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 2 });
    let mut co = coordinator(SharedSpec::new(lenient).with_lease_ms(500));
    let mut a = LeaseClient::new("a".into(), 1, LeaseOptions::new().with_local(strict)).unwrap();
    let now = 10_000;
    assert!(call(&mut a, &mut co, now, Outcome::Success).is_ok());
    assert!(call(&mut a, &mut co, now, Outcome::Failure).is_ok());
    let Decision::Admit(t) = a.admit(lt(now)) else {
        panic!()
    };
    assert!(a.record(lt(now), t, Outcome::Failure));
    assert!(
        matches!(a.admit(lt(now)), Decision::Reject(_)),
        "blocked at once"
    );
    flush(&mut a, &mut co, now, false);
    assert_eq!(co.breaker().state(), State::Closed);
    assert_eq!(a.state_at(lt(now)), State::Closed);
    assert!(
        matches!(a.admit(lt(now)), Decision::Admit(_)),
        "the fleet's view again"
    );
}

// ----- replies beyond the protocol's limits -----

const HOUR: u64 = breakwater::shared::MAX_LEASE_MS;

/// The answer to `c`'s first `/acquire`, as a transport that rewrites it delivers it.
fn forged_first_reply(
    c: &mut LeaseClient,
    co: &mut Coordinator,
    forge: impl FnOnce(&mut ExchangeReply),
) -> Next {
    assert_eq!(c.admit(lt(0)), Decision::Acquire);
    let req = c.acquire_request();
    let mut reply = exchange(co, 0, &req, true);
    forge(&mut reply);
    c.on_answer(lt(0), Op::Acquire, Answer::Reply(&reply))
}

#[test]
fn a_closed_lease_of_u64_max_ms_is_asked_again_within_the_hour() {
    let mut co = coordinator(spec());
    let mut c = client("a");
    let first = forged_first_reply(&mut c, &mut co, |r| r.lease.lease_ms = u64::MAX);
    let Next::Admit(ticket) = first else {
        panic!("{first:?}")
    };
    let _ = c.record(lt(0), ticket, Outcome::Success);
    // The fleet opens; this client goes on on its lease, for one hour at most.
    trip(&mut co, 1);
    let Decision::Admit(ticket) = c.admit(lt(HOUR - 1)) else {
        panic!("admitted on the lease")
    };
    let _ = c.record(lt(HOUR - 1), ticket, Outcome::Ignored);
    assert_eq!(c.admit(lt(HOUR)), Decision::Refresh);
    // It learns the fleet's state, probes, and the breaker closes (true answers from now on).
    assert!(call(&mut c, &mut co, HOUR, Outcome::Success).is_ok());
    assert_eq!(co.breaker().state(), State::Closed);
    assert_eq!(c.known_state(), Some(State::Closed));
    assert!(call(&mut c, &mut co, HOUR + 1, Outcome::Success).is_ok());
}

#[test]
fn an_open_refusal_of_u64_max_ms_is_asked_again_within_the_hour() {
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let mut c = client("a");
    let first = forged_first_reply(&mut c, &mut co, |r| {
        r.lease.lease_ms = u64::MAX;
        r.lease.retry_after_ms = u64::MAX;
        if let Some(rejected) = r.rejected.as_mut() {
            rejected.retry_after_ms = u64::MAX;
        }
    });
    let Next::Reject(r) = first else {
        panic!("{first:?}")
    };
    assert!(r.retry_after_ms <= breakwater::shared::protocol::MAX_RETRY_AFTER_MS);
    assert!(matches!(c.admit(lt(HOUR - 1)), Decision::Reject(_)));
    assert_eq!(c.admit(lt(HOUR)), Decision::Acquire);
    // The coordinator's true answer: a probe, which closes the breaker.
    assert!(call(&mut c, &mut co, HOUR, Outcome::Success).is_ok());
    assert_eq!(co.breaker().state(), State::Closed);
    assert!(call(&mut c, &mut co, HOUR + 1, Outcome::Success).is_ok());
}

// ----- a call dropped half-way -----

#[test]
fn a_dropped_probe_goes_back_to_the_fleet_at_once() {
    // The default probe time-out: 30 s of refusals for every client if the slot stayed taken.
    let mut co = coordinator(
        SharedSpec::new(
            BreakerConfig::new()
                .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
                .with_open_duration_ms(1_000),
        )
        .with_lease_ms(500),
    );
    trip(&mut co, 0);
    let (mut a, mut b) = (client("a"), client("b"));
    assert_eq!(a.admit(lt(1_000)), Decision::Acquire);
    let req = a.acquire_request();
    let reply = exchange(&mut co, 1_000, &req, true);
    let Next::Admit(probe) = a.on_answer(lt(1_000), Op::Acquire, Answer::Reply(&reply)) else {
        panic!("a probe")
    };
    assert!(probe.is_probe());
    // The app's own time-out drops the call: the host gives it back, in a report sent at once
    // whose answer nobody reads.
    let before = a.stats();
    let report = a.drop_call(lt(1_050), probe).expect("a report");
    let _unread = exchange(&mut co, 1_050, &report, false);
    assert_eq!(co.breaker().probes_in_flight(), 0, "the slot is free");
    assert!(!a.in_flight(), "nothing waits for that answer");
    assert_eq!(a.stats().ignored, before.ignored + 1);
    assert_eq!(
        (a.stats().successes, a.stats().failures),
        (before.successes, before.failures)
    );
    // Another client, calling every 100 ms for the probe time-out, probes at once and closes it.
    let refused = (0..300)
        .filter(|i| call(&mut b, &mut co, 1_100 + i * 100, Outcome::Success).is_err())
        .count();
    assert_eq!(refused, 0);
    assert_eq!(co.breaker().state(), State::Closed);
    // And the one that dropped its call is admitted again; its report went again, counted once.
    assert!(
        a.flush_due(lt(31_100)),
        "the unread report goes again at once"
    );
    assert!(call(&mut a, &mut co, 31_100, Outcome::Success).is_ok());
    flush(&mut a, &mut co, 31_100, true);
    assert_eq!(a.unacknowledged(), 0);
    assert_eq!(co.view(t(31_100)).counters.probe_outcomes, 2);
}

#[test]
fn a_dropped_probe_whose_report_is_lost_goes_back_with_the_next_request() {
    let mut co = coordinator(spec());
    trip(&mut co, 0);
    let mut a = client("a");
    assert_eq!(a.admit(lt(1_000)), Decision::Acquire);
    let req = a.acquire_request();
    let reply = exchange(&mut co, 1_000, &req, true);
    let Next::Admit(probe) = a.on_answer(lt(1_000), Op::Acquire, Answer::Reply(&reply)) else {
        panic!("a probe")
    };
    // The task that sent the report was cancelled before it left.
    let _lost = a.drop_call(lt(1_050), probe).expect("a report");
    assert_eq!(co.breaker().probes_in_flight(), 1);
    // The next call sends it first (a report is due), then probes, and closes the breaker.
    assert!(a.flush_due(lt(1_100)));
    flush(&mut a, &mut co, 1_100, false);
    assert_eq!(co.breaker().probes_in_flight(), 0);
    assert!(call(&mut a, &mut co, 1_100, Outcome::Success).is_ok());
    assert_eq!(co.breaker().state(), State::Closed);
}

/// The core bounds a call's wait on the coordinator: from `ADMIT_ROUNDS` on, `admit_again`
/// refuses (open, 1 ms) instead of asking again, whatever the client knows; before it, it decides
/// as `admit` does.
#[test]
fn a_call_that_waited_admit_rounds_is_refused_rather_than_held() {
    use breakwater::shared::ADMIT_ROUNDS;
    let mut c = client("a");
    assert_eq!(c.admit_again(lt(0), ADMIT_ROUNDS - 1), Decision::Acquire);
    assert_eq!(
        c.admit_again(lt(0), ADMIT_ROUNDS),
        Decision::Reject(Rejected {
            reason: RejectReason::Open,
            retry_after_ms: 1
        })
    );
    assert_eq!(c.stats().rejected, 1);
}

/// Reports go back to back at most `REPORT_ROUNDS` times: a failure recorded while each report
/// was on its way asks for one more, then the chain stops (and what waits goes with the next
/// call's report). Liveness: once the chain stopped, the next report sends what waited.
#[test]
fn reports_go_back_to_back_at_most_report_rounds_times() {
    use breakwater::shared::REPORT_ROUNDS;
    let mut co = coordinator(spec());
    let mut c = client("a");
    let t = lt(0);
    // The first lease, then a failure: a report is due.
    let Decision::Acquire = c.admit(t) else {
        panic!()
    };
    let req = c.acquire_request();
    let reply = exchange(&mut co, 0, &req, true);
    let Next::Admit(ticket) = c.on_answer(t, Op::Acquire, Answer::Reply(&reply)) else {
        panic!("admitted")
    };
    assert!(c.record(t, ticket, Outcome::Failure));
    let mut sent = 0;
    let mut next = Next::Report;
    // Bounded here too, so that a client that never stops fails rather than hangs.
    while next == Next::Report && sent < 10 {
        let req = c.begin_flush(false).expect("a report");
        sent += 1;
        // Another failure while it is on its way.
        assert!(!c.record_untracked(t, Outcome::Failure));
        let reply = exchange(&mut co, 0, &req, false);
        next = c.on_answer(t, Op::Report, Answer::Reply(&reply));
    }
    assert_eq!(sent, REPORT_ROUNDS);
    assert_eq!(next, Next::Idle);
    assert!(c.flush_due(t), "a failure still waits");
    let req = c
        .begin_flush(false)
        .expect("the waiting failure goes with the next report");
    assert_eq!(req.batches.len(), 1);
}

#[test]
fn refused_settings_name_their_field_and_value_apart_from_the_words() {
    let shared = |config: BreakerConfig| SharedSpec::new(config).validate().unwrap_err();
    let cases = [
        (
            shared(
                BreakerConfig::new()
                    .with_open_duration_ms(7_200_000)
                    .with_open_backoff(1.0, 7_200_000),
            ),
            Some("open_duration_ms"),
            "7200000 (a shared breaker accepts at most 3600000 ms, one hour)",
        ),
        (
            shared(BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
                threshold: 5,
                window_ms: 400 * 24 * 3_600_000,
            })),
            Some("trip.window_ms"),
            "34560000000 (a shared breaker accepts at most 31536000000 ms, one year)",
        ),
        (
            shared(BreakerConfig::new().with_open_jitter(2.0)),
            Some("open_jitter"),
            "2 (expected a fraction in [0, 1))",
        ),
        (
            SharedSpec::new(BreakerConfig::new())
                .with_lease_ms(0)
                .validate()
                .unwrap_err(),
            None,
            "0 (expected an integer in 1..=3600000)",
        ),
    ];
    for (error, field, refusal) in cases {
        assert_eq!(error.breaker_field(), field, "{error}");
        assert_eq!(error.refusal().to_string(), refusal);
        // The words say the same, with the field as the settings spell it.
        let words = error.to_string();
        assert!(words.ends_with(refusal), "{words}");
        assert!(words.contains(field.unwrap_or("`lease_ms`")), "{words}");
    }
}
