//! Scenarios the property test (`tests/shared_protocol.rs`) found at random, written out: each
//! broke the counting rule (never zero, never twice beyond `unverified_batches`) or liveness
//! until it was fixed — a first batch resent after its session was evicted, settings that did
//! not survive the record's JSON, a clock step not persisted, a renumbering over the numbers of a
//! report still on its way, a time window's buckets kept across a change of its length.
#![cfg(feature = "json")]

use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::protocol::{Batch, Counts, Exchange, ExchangeReply, MAX_CLIENTS};
use breakwater::shared::{Answer, Op};
use breakwater::shared::{
    Coordinator, LeaseClient, LeaseOptions, LocalTime, OnMismatch, SharedSpec,
};
use breakwater::{BreakerConfig, Outcome, State, Timestamp, TripRule, Window};

const MINUTE: u64 = 60_000;
const T0: u64 = 1_800_000_000_000;

fn spec() -> SharedSpec {
    SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
            .with_open_duration_ms(1_000)
            .with_probe_timeout_ms(2_000),
    )
    .with_lease_ms(500)
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

fn one(client: &str, session: u64, seq: u64, generation: u32) -> Exchange {
    Exchange {
        client: client.into(),
        session,
        batches: vec![Batch {
            seq,
            counts: vec![Counts {
                generation: Some(generation),
                successes: 1,
                ..Counts::default()
            }],
            probes: vec![],
        }],
    }
}

/// `MAX_CLIENTS` other sessions report once each, at `now`.
fn fleet(co: &mut Coordinator, now: u64) {
    for i in 0..MAX_CLIENTS as u64 {
        let _ = exchange(co, now, &one(&format!("f{i}"), 1, 1, 0), false);
    }
}

#[test]
fn a_first_batch_sent_again_after_its_session_was_forgotten_is_counted_as_unverified() {
    let mut co = Coordinator::fresh("upstream", spec()).unwrap();
    let first = one("a", 7, 1, 0);
    // Counted; the answer is lost.
    let _ = exchange(&mut co, T0, &first, false);
    // A larger fleet: "a" is forgotten while it may still send batch 1 again.
    fleet(&mut co, T0 + 1);
    assert!(co.view(t(T0 + 1)).counters.sessions_evicted_early > 0);
    let reply = exchange(&mut co, T0 + 2, &first, false);
    assert_eq!(reply.acked, [1]);
    let view = co.view(t(T0 + 2));
    // Counted twice (at least once: fine), so it must say that it may have been.
    assert_eq!(view.stats.successes, MAX_CLIENTS as u64 + 2);
    assert_eq!(view.counters.unverified_batches, 1);
}

#[test]
fn a_record_read_back_runs_under_the_settings_it_was_written_under() {
    let configured = SharedSpec::new(BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 14.547906203244807,
        minimum_calls: 1,
        window: Window::Calls(2),
    }));
    let co = Coordinator::fresh("upstream", configured).unwrap();
    let stored = co.record_json().unwrap();
    for on_mismatch in [OnMismatch::Adopt, OnMismatch::Install] {
        let back =
            Coordinator::load_json("upstream", configured, Some(&stored), on_mismatch).unwrap();
        let view = back.view(t(T0));
        assert_eq!(view.options_mismatch, None, "{on_mismatch:?}");
        assert_eq!(back.spec().fingerprint(), configured.fingerprint());
    }
}

#[test]
fn a_clock_step_back_is_kept_by_a_host_that_reloads_the_record() {
    let spec = spec();
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let g = co.breaker().generation();
    let mut trip = one("a", 1, 1, g);
    trip.batches[0].counts[0] = Counts {
        generation: Some(g),
        failures: 3,
        ..Counts::default()
    };
    let (_, step) = co.exchange(t(T0), &trip, ExchangeOp::Report).unwrap();
    assert!(step.changed);
    let mut stored = co.record_json().unwrap();
    assert_eq!(co.breaker().open_until(), Some(t(T0 + 1_000)));
    // The store fails over to a host whose clock is ten minutes behind. Every request loads the
    // record, takes one step, and writes the record back if the step says so.
    let behind = T0 - 10 * MINUTE;
    let mut state = State::Open;
    for ms in (0..=2_000).step_by(100) {
        let mut co =
            Coordinator::load_json("upstream", spec, Some(&stored), OnMismatch::Adopt).unwrap();
        let ask = Exchange {
            client: "b".into(),
            session: 1,
            batches: vec![],
        };
        let (reply, step) = co
            .exchange(t(behind + ms), &ask, ExchangeOp::Acquire)
            .unwrap();
        state = reply.lease.state;
        if step.changed {
            stored = co.record_json().unwrap();
        }
    }
    // The open period had 1 000 ms left when the clock was stepped: two seconds later a probe
    // has been granted (HALF_OPEN), or it has closed.
    assert_ne!(state, State::Open);
}

/// A client that reported batch 1, then was cut off long enough to number its batches more than
/// `MAX_SEQ_GAP` past it (batches that outlive the resend window are dropped).
fn cut_off(co: &mut Coordinator) -> (LeaseClient, u64) {
    let opts = LeaseOptions::new()
        .with_max_batch(50)
        .with_retry_unreachable_ms(200);
    let mut c = LeaseClient::new("a".into(), 9, opts).unwrap();
    let mut now = T0;
    let _ = c.record_untracked(lt(now), Outcome::Failure);
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    assert_eq!(reply.acked, [1]);
    loop {
        now += 20_000;
        let _ = c.record_untracked(lt(now), Outcome::Failure);
        let req = c.begin_flush(false).unwrap();
        c.on_answer(lt(now), Op::Report, Answer::Unreachable("down"));
        if req.batches[0].seq > 66 {
            return (c, now);
        }
    }
}

#[test]
fn after_a_long_outage_the_client_renumbers_and_is_counted_once() {
    let mut co = Coordinator::fresh("upstream", spec()).unwrap();
    let (mut c, now) = cut_off(&mut co);
    let failures = |co: &mut Coordinator| co.view(t(now)).stats.failures;
    let before = failures(&mut co);
    let held = c.unacknowledged();
    // Too far ahead: refused with the last applied number, nothing counted.
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(&mut co, now, &req, false);
    assert!(reply.acked.is_empty());
    assert!(reply.refused.iter().all(|r| r.last_applied == Some(1)));
    let session = c.session();
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    assert_eq!(c.unacknowledged(), held);
    // Renumbered from 1 in a new session (nothing on its way can carry those numbers), counted
    // once.
    let req = c.begin_flush(false).unwrap();
    assert_ne!(req.session, session);
    assert_eq!(req.batches[0].seq, 1);
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(failures(&mut co), before + held);
    // Sent again (a lost answer): not counted again.
    let _ = exchange(&mut co, now, &req, false);
    assert_eq!(failures(&mut co), before + held);
}

#[test]
fn a_request_abandoned_before_a_renumbering_does_not_count_its_batches_twice() {
    let mut co = Coordinator::fresh("upstream", spec()).unwrap();
    let (mut c, now) = cut_off(&mut co);
    let held = c.unacknowledged();
    let failures = |co: &mut Coordinator| co.view(t(now)).stats.failures;
    let before = failures(&mut co);
    // The host sends the report and gives up on it (a caller's time-out): it is still on its
    // way.
    let late = c.begin_flush(false).unwrap();
    c.abandon(lt(now));
    // The next report is refused for the gap; the client renumbers and is counted.
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(failures(&mut co), before + held);
    // The abandoned report arrives.
    let reply = exchange(&mut co, now + 1, &late, false);
    let view = co.view(t(now + 1));
    assert!(
        view.stats.failures == before + held || view.counters.unverified_batches > 0,
        "counted twice ({} failures, {} expected), unverified_batches {}, answer {:?}",
        view.stats.failures,
        before + held,
        view.counters.unverified_batches,
        reply
    );
}

#[test]
fn a_deploy_that_lengthens_the_time_window_does_not_keep_old_calls_in_it() {
    let rate = |ms| {
        SharedSpec::new(BreakerConfig::new().with_trip(TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 3,
            window: Window::Millis(ms),
        }))
    };
    let mut co = Coordinator::fresh("upstream", rate(1_000)).unwrap();
    let mut two = one("a", 1, 1, 0);
    two.batches[0].counts[0] = Counts {
        generation: Some(0),
        failures: 2,
        ..Counts::default()
    };
    // Two failures: under the minimum of three calls.
    let _ = exchange(&mut co, T0, &two, false);
    assert_eq!(co.breaker().state(), State::Closed);
    let stored = co.record_json().unwrap();
    // A deploy doubles the window; an hour later, one failure (in another bucket slot than the
    // old one's, which it would overwrite).
    let mut co =
        Coordinator::load_json("upstream", rate(2_000), Some(&stored), OnMismatch::Install)
            .unwrap();
    let mut late = one("b", 1, 1, 0);
    late.batches[0].counts[0] = Counts {
        generation: Some(0),
        failures: 1,
        ..Counts::default()
    };
    let _ = exchange(&mut co, T0 + 60 * MINUTE + 300, &late, false);
    // One call in the last two seconds: under the minimum, nothing to trip on.
    assert_eq!(co.breaker().state(), State::Closed);
}

#[test]
fn a_late_request_does_not_make_renumbered_batches_duplicates() {
    let mut co = Coordinator::fresh("upstream", spec()).unwrap();
    let opts = LeaseOptions::new()
        .with_max_batch(50)
        .with_retry_unreachable_ms(200);
    let mut c = LeaseClient::new("a".into(), 9, opts).unwrap();
    let mut now = T0;
    let failures = |co: &mut Coordinator| co.view(t(T0)).stats.failures;
    let _ = c.record_untracked(lt(now), Outcome::Failure);
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    // Batch 2 goes out and is held up on the way; the client gives up on it after
    // `request_deadline_ms`, and is cut off long enough to drop it and number far ahead.
    let _ = c.record_untracked(lt(now), Outcome::Failure);
    let late = c.begin_flush(false).unwrap();
    assert_eq!(late.batches[0].seq, 2);
    loop {
        now += 20_000;
        let _ = c.record_untracked(lt(now), Outcome::Failure);
        let req = c.begin_flush(false).unwrap();
        c.on_answer(lt(now), Op::Report, Answer::Unreachable("down"));
        if req.batches[0].seq > 66 {
            break;
        }
    }
    let held = c.unacknowledged();
    // Refused for the gap: renumbered, in a new session.
    let req = c.begin_flush(false).unwrap();
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    // The held-up request arrives (its batch 2 counts: the client had given it up), then the
    // renumbered batches.
    let _ = exchange(&mut co, now, &late, false);
    let counted = failures(&mut co);
    let req = c.begin_flush(false).unwrap();
    assert_ne!(req.session, late.session);
    let reply = exchange(&mut co, now, &req, false);
    c.on_answer(lt(now), Op::Report, Answer::Reply(&reply));
    assert_eq!(c.unacknowledged(), 0, "every batch acknowledged");
    assert_eq!(
        failures(&mut co),
        counted + held,
        "every acknowledged outcome counted"
    );
}

#[test]
fn every_batch_sent_again_with_a_forgotten_sessions_first_is_unverified() {
    // Batches 1 to 3 were counted, their answer lost; the session is then forgotten early and
    // the client sends the three again in one report: each may have been counted before.
    let mut co = Coordinator::fresh("upstream", spec()).unwrap();
    let mut three = one("a", 7, 1, 0);
    let b = three.batches[0].clone();
    three.batches = (1..=3).map(|seq| Batch { seq, ..b.clone() }).collect();
    let _ = exchange(&mut co, T0, &three, false);
    fleet(&mut co, T0 + 1);
    let before = co.view(t(T0 + 2)).counters.unverified_batches;
    let reply = exchange(&mut co, T0 + 2, &three, false);
    assert_eq!(reply.acked, [1, 2, 3]);
    assert_eq!(co.view(t(T0 + 2)).counters.unverified_batches, before + 3);
}
