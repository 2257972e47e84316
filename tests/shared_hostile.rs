//! A holder of the service token can send any message the protocol allows. What such a session
//! must not be able to do: pick settings the fleet cannot recover from (every accepted setting
//! closes within a bounded time once the upstream heals), poison the fleet's throttle with shed
//! calls it never had, grow the stored record without bound, or weigh more than one busy
//! process: its outcomes and its requests are bounded per session.
#![cfg(feature = "json")]

use breakwater::shared::json;
use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::protocol::{
    Batch, Counts, Exchange, ExchangeError, ProbeReport, WireOutcome, MAX_CLIENTS, MAX_SEQ,
    MAX_SESSION_OUTCOMES_PER_S, MAX_SESSION_REQUESTS_PER_S, SESSION_OUTCOME_BURST,
    SESSION_REQUEST_BURST,
};
use breakwater::shared::spec::{MAX_SHARED_OPEN_MS, MAX_SHARED_WINDOW_CALLS};
use breakwater::shared::{Answer, Next, Op};
use breakwater::shared::{Coordinator, SharedSpec};
use breakwater::shared::{Decision, LeaseClient, LeaseOptions, LocalTime, OnMismatch, Record};
use breakwater::{
    Breaker, BreakerConfig, Outcome, State, Throttle, Timestamp, TripRule, Window,
    MAX_HALF_OPEN_PROBES, MAX_HALF_OPEN_SUCCESSES,
};

const T0: u64 = 1_800_000_000_000;

fn exchange(client: &str, session: u64, batches: Vec<Batch>) -> Exchange {
    Exchange {
        client: client.into(),
        session,
        batches,
    }
}

fn counts(generation: u32, successes: u32, failures: u32, throttled: u32) -> Counts {
    Counts {
        generation: Some(generation),
        successes,
        failures,
        ignored: 0,
        throttled,
    }
}

fn batch(seq: u64, counts: Vec<Counts>) -> Batch {
    Batch {
        seq,
        counts,
        probes: Vec::new(),
    }
}

// ---- every accepted setting closes ----

#[test]
fn a_probe_success_threshold_is_at_most_100() {
    let at = BreakerConfig::new().with_half_open_success_threshold(MAX_HALF_OPEN_SUCCESSES);
    assert!(at.validate().is_ok());
    let over = at.with_half_open_success_threshold(MAX_HALF_OPEN_SUCCESSES + 1);
    let e = over.validate().unwrap_err().to_string();
    assert!(
        e.contains("half_open_success_threshold") && e.contains("101") && e.contains("1..=100"),
        "{e}"
    );
    let e = BreakerConfig::new()
        .with_half_open_success_threshold(u32::MAX)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("4294967295"), "{e}");
}

#[test]
fn a_shared_open_period_and_probe_timeout_are_at_most_one_hour() {
    let hour = MAX_SHARED_OPEN_MS;
    let at = SharedSpec::new(
        BreakerConfig::new()
            .with_open_duration_ms(hour)
            .with_open_backoff(2.0, hour)
            .with_probe_timeout_ms(hour),
    );
    assert_eq!(at.validate(), Ok(()));
    for (field, spec) in [
        (
            "breaker.open_duration_ms",
            SharedSpec::new(
                at.breaker
                    .with_open_duration_ms(hour + 1)
                    .with_open_backoff(2.0, hour + 1),
            ),
        ),
        (
            "breaker.max_open_duration_ms",
            SharedSpec::new(at.breaker.with_open_backoff(2.0, hour + 1)),
        ),
        (
            "breaker.probe_timeout_ms",
            SharedSpec::new(at.breaker.with_probe_timeout_ms(hour + 1)),
        ),
    ] {
        let e = spec.validate().unwrap_err().to_string();
        assert!(
            e.contains(field) && e.contains("3600001") && e.contains("3600000"),
            "{field}: {e}"
        );
    }
    // A year, as accepted before.
    let year = SharedSpec::new(
        BreakerConfig::new()
            .with_open_duration_ms(365 * 24 * 3_600_000)
            .with_open_backoff(1.0, 365 * 24 * 3_600_000),
    );
    assert!(year.validate().is_err());
}

/// The slowest recovery the settings allow: the longest open period, the widest jitter, the
/// steepest backoff, one probe at a time, the most successes to close, the longest probe
/// timeout. After many failed rounds, once the upstream heals, the shared breaker closes within
/// `max_open × (1 + jitter)` plus one probe round per success needed.
#[test]
fn the_slowest_accepted_settings_close_within_two_hours_of_healing() {
    let hour = MAX_SHARED_OPEN_MS;
    let spec = SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
            .with_open_duration_ms(hour)
            .with_open_backoff(1e9, hour)
            .with_open_jitter(0.999_999)
            .with_half_open_max_probes(1)
            .with_half_open_success_threshold(MAX_HALF_OPEN_SUCCESSES)
            .with_probe_timeout_ms(hour)
            .with_seed(7),
    )
    .with_lease_ms(1);
    spec.validate().unwrap();
    let mut b = Breaker::new(spec.breaker).unwrap();
    let mut now = T0;
    let fail = |b: &mut Breaker, now: u64| {
        let p = b.acquire(Timestamp(now)).result.unwrap();
        let _ = b.report(Timestamp(now), p, Outcome::Failure);
    };
    fail(&mut b, now);
    // Twenty failed probe rounds: the backoff is at its ceiling.
    for _ in 0..20 {
        now = b.open_until().unwrap().0;
        fail(&mut b, now);
        assert_eq!(b.state(), State::Open);
    }
    let healed = now;
    // The upstream is healthy from now on: ask every second, as a lease client would.
    let mut closed_at = None;
    while now <= healed + 3 * hour {
        now += 1_000;
        if let Ok(p) = b.acquire(Timestamp(now)).result {
            let _ = b.report(Timestamp(now), p, Outcome::Success);
        }
        if b.state() == State::Closed {
            closed_at = Some(now);
            break;
        }
    }
    let closed_at = closed_at.expect("closes after the upstream heals");
    let bound = 2 * hour + u64::from(MAX_HALF_OPEN_SUCCESSES) * 1_000;
    assert!(
        closed_at - healed <= bound,
        "closed {} ms after healing (bound {bound})",
        closed_at - healed
    );
    println!(
        "slowest accepted settings: closed {} s after healing",
        (closed_at - healed) / 1_000
    );
}

// ---- throttle poisoning ----

fn throttled_spec() -> SharedSpec {
    SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 20,
                window: Window::Millis(60_000),
            })
            .with_throttle(Throttle::new()),
    )
}

/// An honest client reports 400 successes; a forged report claims a million shed calls (16
/// batches of 62 500). Before, every client was then told to shed 80 % of its calls for the
/// whole throttle window, with the breaker CLOSED.
#[test]
fn a_forged_report_of_shed_calls_does_not_throttle_a_healthy_fleet() {
    let mut co = Coordinator::fresh("upstream", throttled_spec()).unwrap();
    let now = Timestamp(T0);
    let honest = exchange("honest", 1, vec![batch(1, vec![counts(0, 400, 0, 0)])]);
    let (reply, _) = co.exchange(now, &honest, ExchangeOp::Report).unwrap();
    assert_eq!(reply.lease.throttle_ppm, 0);
    let forged: Vec<Batch> = (1..=16)
        .map(|seq| batch(seq, vec![counts(0, 0, 0, 62_500)]))
        .collect();
    let (reply, _) = co
        .exchange(now, &exchange("mallory", 9, forged), ExchangeOp::Report)
        .unwrap();
    assert_eq!(reply.refused, vec![]);
    println!(
        "throttle after a forged million shed calls: {} ppm",
        reply.lease.throttle_ppm
    );
    assert_eq!(reply.lease.state, State::Closed);
    assert_eq!(reply.lease.throttle_ppm, 0, "a healthy fleet sheds nothing");
    assert_eq!(co.view(now).counters.sheds_dropped, 1_000_000);
    assert_eq!(co.breaker().stats().throttled, 0);
}

/// Liveness beside it: a failing upstream still throttles the fleet, and the shed calls of an
/// honest client under that throttle still count.
#[test]
fn shed_calls_under_a_throttle_still_count() {
    let spec = SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures {
                threshold: 1_000_000,
            })
            .with_throttle(Throttle::new()),
    );
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let now = Timestamp(T0);
    // 30 % of calls succeed: p = (100 − 2 × 30) / 101 ≈ 0.40.
    let degraded = exchange("a", 1, vec![batch(1, vec![counts(0, 30, 70, 0)])]);
    let (reply, _) = co.exchange(now, &degraded, ExchangeOp::Report).unwrap();
    let p = f64::from(reply.lease.throttle_ppm) / 1e6;
    assert!(p > 0.35 && p < 0.45, "{p}");
    // A client admitted 60 calls and shed 40 (p / (1 − p) ≈ 0.66 per admitted call).
    let honest = exchange("b", 1, vec![batch(1, vec![counts(0, 18, 42, 40)])]);
    co.exchange(now, &honest, ExchangeOp::Report).unwrap();
    assert_eq!(co.breaker().stats().throttled, 40);
    assert_eq!(co.view(now).counters.sheds_dropped, 0);
    // The same client claiming a thousand sheds for those 60 calls is held to what it could
    // have shed.
    let greedy = exchange("b", 1, vec![batch(2, vec![counts(0, 18, 42, 1_000)])]);
    co.exchange(now, &greedy, ExchangeOp::Report).unwrap();
    let counted = co.breaker().stats().throttled - 40;
    assert!(counted > 40 && counted < 200, "{counted}");
    assert_eq!(co.view(now).counters.sheds_dropped, 1_000 - counted);
}

// ---- the record's size ----

/// The largest record hostile sessions can make under `spec`: every session slot taken by a
/// 64-character client with the largest numbers, and the trip rule's memory full.
fn largest_record(spec: SharedSpec) -> usize {
    largest(spec).record_json().unwrap().len()
}

/// The coordinator holding [`largest_record`].
fn largest(spec: SharedSpec) -> Coordinator {
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let now = Timestamp(T0);
    let memory = match spec.breaker.trip {
        TripRule::FailuresInWindow { threshold, .. } => threshold - 1,
        TripRule::FailureRate {
            window: Window::Calls(n),
            ..
        } => n,
        _ => 0,
    };
    // The rule's memory, filled without tripping: failures one at a time, each alone in its
    // batch for the count window (one failure between successes keeps a rate low).
    // Each batch from a session of its own, within a session's outcome budget.
    let mut session = 0;
    let mut left = memory;
    while left > 0 {
        let n = left.min(SESSION_OUTCOME_BURST as u32);
        left -= n;
        session += 1;
        let c = match spec.breaker.trip {
            TripRule::FailuresInWindow { .. } => counts(0, 0, n, 0),
            _ => counts(0, n - n / 100, n / 100, 0),
        };
        co.exchange(
            now,
            &exchange("filler", session, vec![batch(1, vec![c])]),
            ExchangeOp::Report,
        )
        .unwrap();
    }
    assert_eq!(co.view(now).counters.outcomes_dropped, 0);
    assert_eq!(co.breaker().state(), State::Closed);
    // Every session spends its whole outcome budget, so that the record keeps the most.
    let spend = vec![counts(0, SESSION_OUTCOME_BURST as u32, 0, 0)];
    for i in 0..MAX_CLIENTS + 10 {
        let client = format!("{:x<64}", i);
        let e = exchange(
            &client,
            MAX_SEQ - i as u64,
            vec![batch(MAX_SEQ, spend.clone())],
        );
        co.exchange(now, &e, ExchangeOp::Report).unwrap();
    }
    co
}

/// The largest record under the largest settings a shared breaker accepts.
const MAX_RECORD_BYTES: usize = 320 * 1024;

#[test]
fn hostile_sessions_cannot_grow_the_record_past_its_bound() {
    let rules = [
        TripRule::FailuresInWindow {
            threshold: MAX_SHARED_WINDOW_CALLS,
            window_ms: 3_600_000,
        },
        TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 1,
            window: Window::Calls(MAX_SHARED_WINDOW_CALLS),
        },
    ];
    for trip in rules {
        let spec = SharedSpec::new(
            BreakerConfig::new()
                .with_trip(trip)
                .with_half_open_max_probes(MAX_HALF_OPEN_PROBES),
        );
        let bytes = largest_record(spec);
        println!("largest record under {trip:?}: {bytes} bytes");
        assert!(bytes <= MAX_RECORD_BYTES, "{bytes} bytes under {trip:?}");
    }
}

/// Half-open, with the most probes a breaker allows: hostile sessions take every probe, let
/// them time out and take them again, so that the grants kept for late reports fill up too.
#[test]
fn hostile_probe_grants_cannot_grow_the_record_past_its_bound() {
    let spec = SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
            .with_open_duration_ms(1_000)
            .with_probe_timeout_ms(1_000)
            .with_half_open_max_probes(MAX_HALF_OPEN_PROBES),
    );
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let mut now = T0;
    let e = exchange("a", 1, vec![batch(1, vec![counts(0, 0, 1, 0)])]);
    co.exchange(Timestamp(now), &e, ExchangeOp::Report).unwrap();
    assert_eq!(co.breaker().state(), State::Open);
    let mut largest = 0;
    for round in 0..4u64 {
        now += 1_001;
        for i in 0..MAX_CLIENTS as u64 + 10 {
            let client = format!("{:x<64}", round * 10_000 + i);
            let e = exchange(&client, MAX_SEQ - i, vec![batch(MAX_SEQ, vec![])]);
            co.exchange(Timestamp(now), &e, ExchangeOp::Acquire)
                .unwrap();
        }
        assert_eq!(co.breaker().state(), State::HalfOpen);
        largest = largest.max(co.record_json().unwrap().len());
    }
    println!("largest half-open record: {largest} bytes");
    assert!(largest <= MAX_RECORD_BYTES, "{largest} bytes");
}

/// Beside the bound: the largest window a shared breaker accepts still trips on its threshold.
#[test]
fn the_largest_shared_window_still_trips() {
    let spec = SharedSpec::new(BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: MAX_SHARED_WINDOW_CALLS,
        window_ms: 60_000,
    }));
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let now = Timestamp(T0);
    let n = MAX_SHARED_WINDOW_CALLS;
    // From sessions of their own, each within its outcome budget.
    let mut left = n - 1;
    let mut session = 0;
    while left > 0 {
        let k = left.min(SESSION_OUTCOME_BURST as u32);
        left -= k;
        session += 1;
        let e = exchange("a", session, vec![batch(1, vec![counts(0, 0, k, 0)])]);
        co.exchange(now, &e, ExchangeOp::Report).unwrap();
    }
    assert_eq!(co.breaker().state(), State::Closed);
    let e = exchange("a", session + 1, vec![batch(1, vec![counts(0, 0, 1, 0)])]);
    co.exchange(now, &e, ExchangeOp::Report).unwrap();
    assert_eq!(co.view(now).counters.outcomes_dropped, 0);
    assert_eq!(co.breaker().state(), State::Open);
}

#[test]
fn a_shared_window_is_at_most_max_shared_window_calls() {
    let at = MAX_SHARED_WINDOW_CALLS;
    for (trip, over) in [
        (
            TripRule::FailuresInWindow {
                threshold: at,
                window_ms: 60_000,
            },
            TripRule::FailuresInWindow {
                threshold: at + 1,
                window_ms: 60_000,
            },
        ),
        (
            TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 1,
                window: Window::Calls(at),
            },
            TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 1,
                window: Window::Calls(at + 1),
            },
        ),
    ] {
        assert_eq!(
            SharedSpec::new(BreakerConfig::new().with_trip(trip)).validate(),
            Ok(())
        );
        let e = SharedSpec::new(BreakerConfig::new().with_trip(over))
            .validate()
            .unwrap_err()
            .to_string();
        let value = (at + 1).to_string();
        assert!(e.contains("breaker.trip.") && e.contains(&value), "{e}");
    }
}

// ---- one session's weight ----

fn rate_spec() -> SharedSpec {
    SharedSpec::new(BreakerConfig::new().with_trip(TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 100,
        window: Window::Millis(10_000),
    }))
}

/// The failure rate the coordinator has counted, in %.
fn failure_rate(co: &Coordinator) -> f64 {
    let s = co.breaker().stats();
    100.0 * s.failures as f64 / (s.successes + s.failures).max(1) as f64
}

/// The upstream fails: ten honest processes report 200 failures a second each (a batch of 20
/// every 100 ms). A hostile session forges a full batch of 62 500 successes every 100 ms.
/// Before, the coordinator counted 0.3 % failures and the failure-rate rule stayed CLOSED;
/// with the session's outcome budget it counts past 50 % and opens. Then the upstream heals
/// and the hostile session stops: the breaker closes.
#[test]
fn a_session_forging_successes_cannot_hold_a_failing_breaker_closed() {
    let mut co = Coordinator::fresh("upstream", rate_spec()).unwrap();
    let mut now = T0;
    let mut seq = 0;
    let mut opened_at = None;
    while now < T0 + 30_000 {
        now += 100;
        seq += 1;
        let g = co.breaker().generation();
        let forged = exchange(
            "mallory",
            9,
            vec![batch(seq, vec![counts(g, 62_500, 0, 0)])],
        );
        co.exchange(Timestamp(now), &forged, ExchangeOp::Report)
            .unwrap();
        for i in 0..10 {
            let e = exchange(
                &format!("h{i}"),
                1,
                vec![batch(seq, vec![counts(g, 0, 20, 0)])],
            );
            co.exchange(Timestamp(now), &e, ExchangeOp::Report).unwrap();
        }
        if co.breaker().state() == State::Open {
            opened_at = Some(now);
            break;
        }
    }
    println!(
        "failure rate counted with a forging session: {:.1} % ({} outcomes dropped)",
        failure_rate(&co),
        co.view(Timestamp(now)).counters.outcomes_dropped
    );
    let opened_at = opened_at.expect("the failing upstream opens the breaker");
    println!("opened after {} ms", opened_at - T0);
    assert!(failure_rate(&co) >= 50.0);
    assert!(co.view(Timestamp(now)).counters.outcomes_dropped > 0);

    // The upstream heals; the hostile session stops. Honest clients ask every 100 ms, run the
    // probes they are granted, and report successes.
    let healed = now;
    let mut seqs = [seq; 10];
    while co.breaker().state_at(Timestamp(now)) != State::Closed && now < healed + 600_000 {
        now += 100;
        for (i, seq) in seqs.iter_mut().enumerate() {
            let client = format!("h{i}");
            let (reply, _) = co
                .exchange(
                    Timestamp(now),
                    &exchange(&client, 1, vec![]),
                    ExchangeOp::Acquire,
                )
                .unwrap();
            let Some(permit) = reply.permit else {
                continue;
            };
            *seq += 1;
            let report = match permit.probe {
                Some(id) => Batch {
                    seq: *seq,
                    counts: vec![],
                    probes: vec![ProbeReport {
                        generation: permit.generation,
                        id,
                        issued_at: permit.issued_at,
                        outcome: WireOutcome::Success,
                    }],
                },
                None => batch(*seq, vec![counts(permit.generation, 20, 0, 0)]),
            };
            co.exchange(
                Timestamp(now),
                &exchange(&client, 1, vec![report]),
                ExchangeOp::Report,
            )
            .unwrap();
        }
    }
    assert_eq!(co.breaker().state_at(Timestamp(now)), State::Closed);
    println!("closed {} ms after healing", now - healed);
}

/// Beside it: a busy honest process, 500 calls a second for a minute (one in ten failing, each
/// failure reported at once, the coordinator answering at once), has no outcome dropped and no
/// request refused: every outcome is counted.
#[test]
fn a_busy_honest_client_is_counted_whole_and_never_refused() {
    let mut co = Coordinator::fresh("upstream", rate_spec()).unwrap();
    let mut c = LeaseClient::new("busy".into(), 1, LeaseOptions::new()).unwrap();
    let send = |co: &mut Coordinator, req: &Exchange, now: u64, acquire: bool| {
        co.exchange(Timestamp(now), req, ExchangeOp::acquire_if(acquire))
            .unwrap_or_else(|e| panic!("refused at {now}: {e}"))
            .0
    };
    let mut calls = 0u64;
    for i in 0..30_000u64 {
        let now = T0 + i * 2;
        let outcome = if i % 10 == 0 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        let ticket = loop {
            match c.admit(LocalTime(now)) {
                Decision::Admit(ticket) => break ticket,
                Decision::Acquire => {
                    let req = c.acquire_request();
                    let reply = send(&mut co, &req, now, true);
                    if let Next::Admit(ticket) =
                        c.on_answer(LocalTime(now), Op::Acquire, Answer::Reply(&reply))
                    {
                        break ticket;
                    }
                }
                Decision::Refresh => {
                    let req = c.begin_flush(true).unwrap();
                    let reply = send(&mut co, &req, now, false);
                    c.on_answer(LocalTime(now), Op::Report, Answer::Reply(&reply));
                }
                Decision::Reject(r) => panic!("rejected at {now}: {r:?}"),
            }
        };
        calls += 1;
        if c.record(LocalTime(now), ticket, outcome) {
            let req = c.begin_flush(false).unwrap();
            let reply = send(&mut co, &req, now, false);
            c.on_answer(LocalTime(now), Op::Report, Answer::Reply(&reply));
        }
    }
    let now = T0 + 60_000;
    let req = c.begin_flush(true).unwrap();
    let reply = send(&mut co, &req, now, false);
    c.on_answer(LocalTime(now), Op::Report, Answer::Reply(&reply));
    let view = co.view(Timestamp(now));
    let s = view.stats;
    println!(
        "busy honest client: {} requests for {calls} calls in 60 s",
        view.counters.reports + view.counters.acquires
    );
    assert_eq!(view.counters.outcomes_dropped, 0);
    assert_eq!(view.counters.requests_refused, 0);
    assert_eq!(c.dropped(), 0);
    assert_eq!(s.successes + s.failures + s.ignored, calls);
    assert_eq!(co.breaker().state(), State::Closed);
}

/// A session sending requests as fast as it likes is served its burst, then refused (429)
/// until its rate allows again; a refusal changes nothing in the record but a counter.
#[test]
fn a_session_sending_requests_as_fast_as_it_likes_is_refused_and_changes_nothing() {
    let mut co = Coordinator::fresh("upstream", rate_spec()).unwrap();
    let now = Timestamp(T0);
    let mut served = 0;
    let mut refused = None;
    for seq in 1..=1_000 {
        let e = exchange("mallory", 9, vec![batch(seq, vec![counts(0, 1, 0, 0)])]);
        match co.exchange(now, &e, ExchangeOp::Report) {
            Ok(_) => served += 1,
            Err(e) => {
                refused = Some((seq, e));
                break;
            }
        }
    }
    assert_eq!(served, SESSION_REQUEST_BURST);
    let (seq, e) = refused.expect("refused past its burst");
    let ExchangeError::TooManyRequests { retry_after_ms } = e else {
        panic!("{e}");
    };
    assert_eq!(e.status(), 429);
    assert!(e.to_string().contains("send again in"), "{e}");
    assert!((1..=1_000 / MAX_SESSION_REQUESTS_PER_S).contains(&retry_after_ms));
    // Refused again: nothing applied, nothing else changed.
    let mut before = co.record();
    let again = exchange("mallory", 9, vec![batch(seq, vec![counts(0, 1, 0, 0)])]);
    assert!(co.exchange(now, &again, ExchangeOp::Report).is_err());
    let mut after = co.record();
    assert_eq!(
        after.counters.requests_refused,
        before.counters.requests_refused + 1
    );
    before.counters = Default::default();
    after.counters = Default::default();
    assert_eq!(before, after);
    // Another session is served meanwhile, and this one after its retry-after.
    assert!(co
        .exchange(now, &exchange("honest", 1, vec![]), ExchangeOp::Acquire)
        .is_ok());
    let later = Timestamp(T0 + retry_after_ms);
    let (reply, _) = co.exchange(later, &again, ExchangeOp::Report).unwrap();
    assert_eq!(reply.acked, vec![seq]);
}

/// Beside it: a session at its sustained rate, after its burst is spent, is always served.
#[test]
fn a_session_at_the_sustained_request_rate_is_always_served() {
    let mut co = Coordinator::fresh("upstream", rate_spec()).unwrap();
    let every = 1_000 / MAX_SESSION_REQUESTS_PER_S;
    for i in 0..SESSION_REQUEST_BURST {
        co.exchange(
            Timestamp(T0),
            &exchange("a", 1, vec![]),
            ExchangeOp::Acquire,
        )
        .unwrap_or_else(|e| panic!("burst request {i}: {e}"));
    }
    for i in 1..=6_000 {
        let now = Timestamp(T0 + i * every);
        co.exchange(now, &exchange("a", 1, vec![]), ExchangeOp::Acquire)
            .unwrap_or_else(|e| panic!("request {i} at the sustained rate: {e}"));
    }
    assert_eq!(co.view(Timestamp(T0)).counters.requests_refused, 0);
}

/// A lease client told 429 keeps acting on its lease, sends nothing until
/// `retry_unreachable_ms` has passed (no storm of reports, no switch to its local breaker), and
/// its outcomes are counted afterwards.
#[test]
fn a_lease_client_told_429_keeps_its_lease_and_holds_its_reports() {
    let mut co = Coordinator::fresh("upstream", rate_spec()).unwrap();
    let opts = LeaseOptions::new().with_retry_unreachable_ms(500);
    let mut c = LeaseClient::new("a".into(), 1, opts).unwrap();
    let now = T0;
    assert_eq!(c.admit(LocalTime(now)), Decision::Acquire);
    let req = c.acquire_request();
    let (reply, _) = co
        .exchange(Timestamp(now), &req, ExchangeOp::Acquire)
        .unwrap();
    let Next::Admit(ticket) = c.on_answer(LocalTime(now), Op::Acquire, Answer::Reply(&reply))
    else {
        panic!("admitted");
    };
    assert!(c.record(LocalTime(now), ticket, Outcome::Failure));
    let _ = c.begin_flush(false).unwrap();
    let _ = c.on_answer(
        LocalTime(now + 1),
        Op::Report,
        Answer::Refused {
            status: 429,
            reason: "object answered 429: too_many_requests",
        },
    );
    while let Some(e) = c.next_event() {
        assert!(
            !matches!(e, breakwater::shared::ClientEvent::Local { .. }),
            "{e:?}"
        );
    }
    // Within the lease: admitted under it, not by the local breaker; nothing sent.
    let Decision::Admit(t) = c.admit(LocalTime(now + 2)) else {
        panic!("admitted under the lease");
    };
    assert!(!t.is_local());
    assert!(!c.record(LocalTime(now + 2), t, Outcome::Failure));
    assert!(!c.flush_due(LocalTime(now + 400)));
    assert!(c.flush_due(LocalTime(now + 501)));
    let req = c.begin_flush(false).unwrap();
    let (reply, _) = co
        .exchange(Timestamp(now + 501), &req, ExchangeOp::Report)
        .unwrap();
    c.on_answer(LocalTime(now + 501), Op::Report, Answer::Reply(&reply));
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(co.breaker().stats().failures, 2);
}

/// A session's spent budget survives a restart (a restored record does not refill it); a
/// record written before budgets were kept reads with every budget whole, and a record with
/// no budget spent is written as before.
#[test]
fn a_spent_budget_is_stored_and_an_old_record_reads_whole() {
    let spec = rate_spec();
    let mut co = Coordinator::fresh("upstream", spec).unwrap();
    let now = Timestamp(T0);
    let burst = SESSION_OUTCOME_BURST as u32;
    let e = exchange("mallory", 9, vec![batch(1, vec![counts(0, burst, 0, 0)])]);
    co.exchange(now, &e, ExchangeOp::Report).unwrap();
    assert_eq!(co.breaker().stats().successes, u64::from(burst));
    let json = co.record_json().unwrap();
    assert!(json.contains(r#""spent_ms":[5000]"#), "{json}");
    let more = exchange("mallory", 9, vec![batch(2, vec![counts(0, 1_000, 0, 0)])]);

    let mut restored =
        Coordinator::load_json("upstream", spec, Some(&json), OnMismatch::Install).unwrap();
    restored.exchange(now, &more, ExchangeOp::Report).unwrap();
    assert_eq!(restored.breaker().stats().successes, u64::from(burst));
    assert_eq!(restored.view(now).counters.outcomes_dropped, 1_000);
    // A second later the session has a second's worth again.
    let second = exchange("mallory", 9, vec![batch(3, vec![counts(0, 2_000, 0, 0)])]);
    let a_second_later = Timestamp(T0 + 1_000);
    restored
        .exchange(a_second_later, &second, ExchangeOp::Report)
        .unwrap();
    assert_eq!(
        restored.breaker().stats().successes,
        u64::from(burst) + MAX_SESSION_OUTCOMES_PER_S
    );

    // The same record as the previous version wrote it: no `spent_ms`.
    let mut record: Record = json::from_str(&json).unwrap();
    record.spent_ms.clear();
    let old = json::to_string(&record);
    assert!(!old.contains("spent_ms"));
    let mut whole =
        Coordinator::load_json("upstream", spec, Some(&old), OnMismatch::Install).unwrap();
    whole.exchange(now, &more, ExchangeOp::Report).unwrap();
    assert_eq!(whole.breaker().stats().successes, u64::from(burst) + 1_000);
    assert_eq!(whole.view(now).counters.outcomes_dropped, 0);

    // Sessions with whole budgets: written without `spent_ms`, as before.
    let mut quiet = Coordinator::fresh("upstream", spec).unwrap();
    quiet
        .exchange(
            now,
            &exchange("a", 1, vec![batch(1, vec![])]),
            ExchangeOp::Report,
        )
        .unwrap();
    let json = quiet.record_json().unwrap();
    assert!(
        json.contains(r#""a~1":[1,"#) && !json.contains("spent_ms"),
        "{json}"
    );
}

/// What the costliest request costs an object holding the largest record: restoring it (the
/// first request after an eviction), then one exchange carrying the most the protocol allows
/// (16 batches of 8 generations) from a session it does not know, and writing the record back.
/// Printed for the record (run with `--release --nocapture`), not asserted: times are the
/// benchmarks' business.
#[test]
fn the_costliest_request_on_the_largest_record_is_measured() {
    let spec = SharedSpec::new(BreakerConfig::new().with_trip(TripRule::FailuresInWindow {
        threshold: MAX_SHARED_WINDOW_CALLS,
        window_ms: 3_600_000,
    }));
    let json = largest(spec).record_json().unwrap();
    let batches: Vec<Batch> = (1..=16)
        .map(|seq| batch(seq, (0..8).map(|g| counts(g, 300, 0, 0)).collect()))
        .collect();
    let e = exchange("costly", 7, batches);
    let runs = 20;
    let started = std::time::Instant::now();
    let mut written = 0;
    for _ in 0..runs {
        let mut co =
            Coordinator::load_json("upstream", spec, Some(&json), OnMismatch::Install).unwrap();
        co.exchange(Timestamp(T0 + 1), &e, ExchangeOp::Report)
            .unwrap();
        written = co.record_json().unwrap().len();
    }
    let each = started.elapsed() / runs;
    println!(
        "largest record {} bytes: restore + the costliest exchange + write {} bytes: {each:?}",
        json.len(),
        written
    );
    assert!(
        written >= json.len() - 1_024,
        "the record kept what it held"
    );
}
