//! A holder of the service token can send any message the protocol allows. What such a session
//! must not be able to do: pick settings the fleet cannot recover from (every accepted setting
//! closes within a bounded time once the upstream heals), poison the fleet's throttle with shed
//! calls it never had, or grow the stored record without bound.
#![cfg(feature = "json")]

use breakwater::shared::protocol::{Batch, Counts, Exchange, MAX_CLIENTS, MAX_SEQ};
use breakwater::shared::spec::{MAX_SHARED_OPEN_MS, MAX_SHARED_WINDOW_CALLS};
use breakwater::shared::{Coordinator, SharedSpec};
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
        let e = spec.validate().unwrap_err();
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
    let (reply, _) = co.exchange(now, &honest, false).unwrap();
    assert_eq!(reply.lease.throttle_ppm, 0);
    let forged: Vec<Batch> = (1..=16)
        .map(|seq| batch(seq, vec![counts(0, 0, 0, 62_500)]))
        .collect();
    let (reply, _) = co
        .exchange(now, &exchange("mallory", 9, forged), false)
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
    let (reply, _) = co.exchange(now, &degraded, false).unwrap();
    let p = f64::from(reply.lease.throttle_ppm) / 1e6;
    assert!(p > 0.35 && p < 0.45, "{p}");
    // A client admitted 60 calls and shed 40 (p / (1 − p) ≈ 0.66 per admitted call).
    let honest = exchange("b", 1, vec![batch(1, vec![counts(0, 18, 42, 40)])]);
    co.exchange(now, &honest, false).unwrap();
    assert_eq!(co.breaker().stats().throttled, 40);
    assert_eq!(co.view(now).counters.sheds_dropped, 0);
    // The same client claiming a thousand sheds for those 60 calls is held to what it could
    // have shed.
    let greedy = exchange("b", 1, vec![batch(2, vec![counts(0, 18, 42, 1_000)])]);
    co.exchange(now, &greedy, false).unwrap();
    let counted = co.breaker().stats().throttled - 40;
    assert!(counted > 40 && counted < 200, "{counted}");
    assert_eq!(co.view(now).counters.sheds_dropped, 1_000 - counted);
}

// ---- the record's size ----

/// The largest record hostile sessions can make under `spec`: every session slot taken by a
/// 64-character client with the largest numbers, and the trip rule's memory full.
fn largest_record(spec: SharedSpec) -> usize {
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
    let mut seq = 0;
    let mut left = memory;
    while left > 0 {
        let batches: Vec<Batch> = (0..16)
            .map_while(|_| {
                (left > 0).then(|| {
                    let n = left.min(60_000);
                    left -= n;
                    seq += 1;
                    let c = match spec.breaker.trip {
                        TripRule::FailuresInWindow { .. } => counts(0, 0, n, 0),
                        _ => counts(0, n - n / 100, n / 100, 0),
                    };
                    batch(seq, vec![c])
                })
            })
            .collect();
        co.exchange(now, &exchange("filler", 1, batches), false)
            .unwrap();
    }
    assert_eq!(co.breaker().state(), State::Closed);
    for i in 0..MAX_CLIENTS + 10 {
        let client = format!("{:x<64}", i);
        let e = exchange(&client, MAX_SEQ - i as u64, vec![batch(MAX_SEQ, vec![])]);
        co.exchange(now, &e, false).unwrap();
    }
    co.record_json().unwrap().len()
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
    co.exchange(Timestamp(now), &e, false).unwrap();
    assert_eq!(co.breaker().state(), State::Open);
    let mut largest = 0;
    for round in 0..4u64 {
        now += 1_001;
        for i in 0..MAX_CLIENTS as u64 + 10 {
            let client = format!("{:x<64}", round * 10_000 + i);
            let e = exchange(&client, MAX_SEQ - i, vec![batch(MAX_SEQ, vec![])]);
            co.exchange(Timestamp(now), &e, true).unwrap();
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
    let e = exchange("a", 1, vec![batch(1, vec![counts(0, 0, n - 1, 0)])]);
    co.exchange(now, &e, false).unwrap();
    assert_eq!(co.breaker().state(), State::Closed);
    let e = exchange("a", 1, vec![batch(2, vec![counts(0, 0, 1, 0)])]);
    co.exchange(now, &e, false).unwrap();
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
            .unwrap_err();
        let value = (at + 1).to_string();
        assert!(e.contains("breaker.trip.") && e.contains(&value), "{e}");
    }
}
