//! The shared breaker through the operations a fleet lives through, one scenario each, driven
//! the way the hosts drive the core: a rolling deploy that changes one option (Redis-style
//! instances, each restoring the coordinator from the stored record), a fleet larger than the
//! coordinator's session table, a coordinator outage longer than every window, a rotated token
//! (401 on renewal), clock steps on either side, a probe in progress watched by many clients,
//! and a report the host dropped. Each checks the safety rule it concerns and that the breaker
//! recovers by itself once the trouble stops.
#![cfg(feature = "json")]

use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::protocol::{Exchange, ExchangeReply, StateView, MAX_CLIENTS};
use breakwater::shared::{Answer as CoreAnswer, Next, Op};
use breakwater::shared::{
    ClientEvent, Coordinator, Decision, LeaseClient, LeaseOptions, LocalTime, OnMismatch,
    SharedSpec,
};
use breakwater::{BreakerConfig, Outcome, RejectReason, Rejected, State, Timestamp, TripRule};

const T0: u64 = 1_800_000_000_000;

fn spec(open_ms: u64) -> SharedSpec {
    SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
            .with_open_duration_ms(open_ms)
            .with_probe_timeout_ms(30_000),
    )
    .with_lease_ms(1_000)
}

/// What a transport hands back.
enum Answer {
    Reply(ExchangeReply),
    Refused(u16),
    Unreachable,
}

/// A record in a store, and a coordinator restored from it for every request, as each instance
/// of the Redis store does (`OnMismatch::Adopt`), or as the only writer does (`Install`).
struct Store {
    record: Option<String>,
    requests: u64,
}

impl Store {
    fn new() -> Self {
        Store {
            record: None,
            requests: 0,
        }
    }

    fn load(&self, spec: SharedSpec, policy: OnMismatch) -> Coordinator {
        Coordinator::load_json("upstream", spec, self.record.as_deref(), policy).unwrap()
    }

    fn exchange(&mut self, spec: SharedSpec, now: u64, req: &Exchange, acquire: bool) -> Answer {
        self.requests += 1;
        let mut co = self.load(spec, OnMismatch::Adopt);
        let op = ExchangeOp::acquire_if(acquire);
        let (reply, step) = co.exchange(Timestamp(now), req, op).unwrap();
        if step.changed {
            self.record = Some(co.record_json().unwrap());
        }
        Answer::Reply(reply)
    }

    fn view(&self, now: u64) -> StateView {
        self.load(spec(1_000), OnMismatch::Adopt)
            .view(Timestamp(now))
    }
}

fn client(name: &str, session: u64) -> LeaseClient {
    LeaseClient::new(name.into(), session, LeaseOptions::new()).unwrap()
}

/// Sends whatever waits (`force`: renew the lease anyway) through `send`.
fn report(
    c: &mut LeaseClient,
    now: u64,
    force: bool,
    send: &mut dyn FnMut(&Exchange, bool) -> Answer,
) {
    let Some(req) = c.begin_flush(force) else {
        return;
    };
    let now = LocalTime(now);
    let refused;
    let answer = match send(&req, false) {
        Answer::Reply(r) => {
            let _ = c.on_answer(now, Op::Report, CoreAnswer::Reply(&r));
            return;
        }
        Answer::Refused(status) => {
            refused = format!("answered {status}");
            CoreAnswer::Refused {
                status,
                reason: &refused,
            }
        }
        Answer::Unreachable => CoreAnswer::Unreachable("unreachable"),
    };
    let _ = c.on_answer(now, Op::Report, answer);
}

/// One call at `now` that ends with `outcome` if admitted: `Ok(true)` when it reached the
/// upstream.
fn call(
    c: &mut LeaseClient,
    now: u64,
    outcome: Outcome,
    send: &mut dyn FnMut(&Exchange, bool) -> Answer,
) -> Result<(), Rejected> {
    let at = LocalTime(now);
    for _ in 0..4 {
        let ticket = match c.admit(at) {
            Decision::Admit(ticket) => ticket,
            Decision::Reject(r) => return Err(r),
            Decision::Refresh => {
                report(c, now, true, send);
                continue;
            }
            Decision::Acquire => {
                let req = c.acquire_request();
                match send(&req, true) {
                    Answer::Reply(r) => match c.on_answer(at, Op::Acquire, CoreAnswer::Reply(&r)) {
                        Next::Admit(ticket) => ticket,
                        Next::Reject(r) => return Err(r),
                        _ => continue,
                    },
                    Answer::Refused(status) => {
                        let _ = c.on_answer(
                            at,
                            Op::Acquire,
                            CoreAnswer::Refused {
                                status,
                                reason: &format!("answered {status}"),
                            },
                        );
                        continue;
                    }
                    Answer::Unreachable => {
                        let _ =
                            c.on_answer(at, Op::Acquire, CoreAnswer::Unreachable("unreachable"));
                        continue;
                    }
                }
            }
        };
        if c.record(at, ticket, outcome) {
            report(c, now, false, send);
        }
        return Ok(());
    }
    Err(Rejected {
        reason: RejectReason::Open,
        retry_after_ms: 1,
    })
}

#[test]
fn a_rolling_deploy_that_changes_one_option_trips_and_closes() {
    // Three instances, two of them already on the new open period: each restores the
    // coordinator from the record for every request. Once, this moved the generation on every
    // read by a mismatching instance: 50 failures in a row left it CLOSED, and from OPEN 30
    // successful probes left it HALF_OPEN for good.
    let specs = [spec(1_000), spec(1_500), spec(1_500)];
    let mut store = Store::new();
    let mut clients: Vec<LeaseClient> = (0..3).map(|i| client(&format!("i{i}"), 1 + i)).collect();
    let mut now = T0;
    let mut reached = 0;
    for n in 0..50 {
        let i = n % 3;
        let s = specs[i];
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        if call(&mut clients[i], now, Outcome::Failure, &mut send).is_ok() {
            reached += 1;
        }
        now += 10;
    }
    let view = store.view(now);
    assert_eq!(view.lease.state, State::Open, "{view:?}");
    assert!(view.stats.failures >= 3);
    // Threshold 3, plus what the two other instances admitted on their CLOSED lease before
    // their next exchange told them.
    assert!(
        reached <= 3 + 2,
        "{reached} failing calls reached the upstream"
    );
    assert!(
        view.lease.generation <= 2,
        "generation {}",
        view.lease.generation
    );

    // The upstream recovers: after the open period (the stored one, 1 000 ms), one probe closes
    // it, and every instance is CLOSED within one lease.
    now += 1_600;
    for round in 0..30 {
        for (i, c) in clients.iter_mut().enumerate() {
            let s = specs[i];
            let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
            let _ = call(c, now, Outcome::Success, &mut send);
        }
        now += 100;
        if round > 12 {
            break;
        }
    }
    assert_eq!(store.view(now).lease.state, State::Closed);
    for c in &clients {
        assert_eq!(c.known_state(), Some(State::Closed));
    }
}

#[test]
fn a_fleet_larger_than_the_session_table_is_counted() {
    // 1 100 instances (a burst of cold starts) have each reported once; then each reports one
    // failure. Once, every one of those failures found its session evicted by the others and
    // was acknowledged without being counted: 1 100 failures, CLOSED.
    let n = MAX_CLIENTS as u64 + 76;
    let s = spec(30_000);
    let mut store = Store::new();
    let mut fleet: Vec<LeaseClient> = (0..n)
        .map(|i| {
            let opts = LeaseOptions::new().with_max_batch(1);
            LeaseClient::new(format!("fn-{i}"), 1 + i, opts).unwrap()
        })
        .collect();
    let now = T0;
    for c in fleet.iter_mut() {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        call(c, now, Outcome::Success, &mut send).unwrap();
    }
    let mut rejected = 0;
    for c in fleet.iter_mut() {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now + 5, req, acq);
        if call(c, now + 5, Outcome::Failure, &mut send).is_err() {
            rejected += 1;
        }
    }
    let view = store.view(now + 5);
    assert_eq!(view.lease.state, State::Open, "{:?}", view.counters);
    // Every instance's failure was counted: the three that tripped it, the rest as stale (they
    // were admitted under the CLOSED generation).
    assert_eq!(view.stats.failures, n, "{:?}", view.stats);
    assert_eq!(view.stats.stale, n - 3, "{:?}", view.stats);
    // Those admitted after the trip learn it at their next lease.
    assert_eq!(rejected, 0);
    let later = now + 2_000;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, later, req, acq);
    assert!(call(&mut fleet[0], later, Outcome::Success, &mut send).is_err());
}

#[test]
fn after_a_coordinator_outage_longer_than_every_window_the_client_is_counted_again() {
    // 25 minutes without the coordinator, a call every 2 s with 2 % failures: the client seals
    // batches it cannot send and drops the oldest, so its numbers run far past the last one the
    // coordinator applied. Once, every later batch was refused for it, for good.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut c = client("survivor", 42);
    let mut now = T0;
    {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        call(&mut c, now, Outcome::Success, &mut send).unwrap();
        report(&mut c, now, true, &mut send);
    }
    assert_eq!(
        store.view(now).sessions,
        1,
        "the coordinator knows the session"
    );
    let mut down = |_: &Exchange, _: bool| Answer::Unreachable;
    for n in 0..750 {
        now += 2_000;
        let outcome = if n % 50 == 49 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        let _ = call(&mut c, now, outcome, &mut down);
    }
    assert!(
        c.dropped() > 0,
        "the outage was long enough to drop batches"
    );
    // The coordinator is back; then the upstream fails hard (a call every 100 ms).
    now += 1_000;
    let mut reached = 0;
    for _ in 0..20 {
        now += 100;
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        if call(&mut c, now, Outcome::Failure, &mut send).is_ok() {
            reached += 1;
        }
    }
    let view = store.view(now);
    assert_eq!(view.lease.state, State::Open, "{:?}", view.counters);
    assert!(
        reached <= 3 + 3,
        "{reached} failing calls reached the upstream"
    );
    assert!(
        view.counters.refused_batches >= 1,
        "the gap was refused once"
    );
    assert_eq!(c.known_state(), Some(State::Open));
    // The outage's own outcomes that survived in the outbox were counted too.
    assert!(view.stats.successes > 1, "{:?}", view.stats);
}

#[test]
fn a_rotated_token_sends_clients_to_their_local_breaker_not_to_rejection() {
    // Healthy, then every request answers 401. Once, each call asked again and was rejected
    // while the state said CLOSED: 6 of 100 calls admitted, 565 requests.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut c = client("app", 9);
    let mut now = T0;
    let mut requests = 0u64;
    {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        call(&mut c, now, Outcome::Success, &mut send).unwrap();
    }
    let mut admitted = 0;
    let mut refusing = |_: &Exchange, _: bool| {
        requests += 1;
        Answer::Refused(401)
    };
    for _ in 0..100 {
        now += 50;
        if call(&mut c, now, Outcome::Success, &mut refusing).is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 100);
    // 5 s of calls: about one request per retry_unreachable_ms (1 s).
    assert!(requests <= 7, "{requests} requests");
    let events: Vec<ClientEvent> = core::iter::from_fn(|| c.next_event()).collect();
    let fallback = events
        .iter()
        .find(|e| {
            matches!(
                e,
                ClientEvent::Local {
                    status: Some(401),
                    ..
                }
            )
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    // A configuration mistake, which hosts say once, in words.
    assert!(fallback
        .misconfiguration()
        .is_some_and(|hint| hint.contains("SERVICE_TOKEN")));
    // The token is fixed: back on the coordinator's lease, nothing lost.
    now += 1_000;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
    call(&mut c, now, Outcome::Success, &mut send).unwrap();
    report(&mut c, now, true, &mut send);
    assert!(!c.deciding_locally());
    assert_eq!(c.unacknowledged(), 0);
    assert_eq!(store.view(now).stats.successes, 102);
}

#[test]
fn a_client_clock_stepped_back_does_not_stretch_an_open_lease() {
    // A 1 s OPEN lease, then the client's clock is stepped back 10 minutes (an NTP correction).
    // Once, the client kept its highest reading and rejected every call for 601 s.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut c = client("app", 3);
    let mut now = T0;
    for _ in 0..3 {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        let _ = call(&mut c, now, Outcome::Failure, &mut send);
        now += 1;
    }
    assert_eq!(c.known_state(), Some(State::Open));
    let skew = 600_000;
    // The client's clock now reads 10 minutes less: as far as it can tell, no time passed at
    // the step, so it still rejects for what was left of the lease...
    now += 100;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
    let r = call(&mut c, now - skew, Outcome::Success, &mut send).unwrap_err();
    assert!(
        r.retry_after_ms <= 1_000,
        "retry after {} ms",
        r.retry_after_ms
    );
    // ...and then asks again: a second later on its new clock, not 601 s later.
    now += 1_000;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
    call(&mut c, now - skew, Outcome::Success, &mut send).expect("the probe is admitted");
    assert_eq!(store.view(now).lease.state, State::Closed);
    assert_eq!(c.known_state(), Some(State::Closed));
}

#[test]
fn a_coordinator_clock_stepped_back_keeps_the_open_period_short() {
    // The coordinator trips at T0, then its clock reads 10 minutes less (a failover to a
    // replica whose clock is behind, a store without a clock of its own). Once, clients were
    // told to come back in 600 992 ms for a 1 000 ms open period.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut c = client("app", 3);
    for k in 0..3 {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, T0 + k, req, acq);
        let _ = call(&mut c, T0 + k, Outcome::Failure, &mut send);
    }
    let back = T0 - 600_000;
    let mut other = client("other", 4);
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, back, req, acq);
    let r = call(&mut other, back, Outcome::Success, &mut send).unwrap_err();
    assert!(
        r.retry_after_ms <= 1_000,
        "retry after {} ms",
        r.retry_after_ms
    );
    let later = back + 1_000;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, later, req, acq);
    call(&mut other, later, Outcome::Success, &mut send).expect("the probe is admitted");
    assert_eq!(store.view(later).lease.state, State::Closed);
}

#[test]
fn during_a_probe_each_client_asks_once_per_lease_not_once_per_call() {
    // One instance holds the only probe for 30 s; eight others call every 100 ms. Once, every
    // one of their calls asked the coordinator (2 500 calls, 2 500 requests): a Durable
    // Object is single-threaded, so under a fleet's call rate it timed out and everyone fell
    // back to their CLOSED local breakers just as the upstream recovered.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut holder = client("holder", 1);
    let mut now = T0;
    for _ in 0..3 {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        let _ = call(&mut holder, now, Outcome::Failure, &mut send);
    }
    now += 1_000;
    let req = holder.acquire_request();
    let Answer::Reply(reply) = store.exchange(s, now, &req, true) else {
        unreachable!()
    };
    let Next::Admit(probe) =
        holder.on_answer(LocalTime(now), Op::Acquire, CoreAnswer::Reply(&reply))
    else {
        panic!("{reply:?}")
    };
    assert!(probe.is_probe());
    let before = store.requests;
    let mut others: Vec<LeaseClient> = (0..8).map(|i| client(&format!("o{i}"), 10 + i)).collect();
    let mut admitted = 0;
    for _ in 0..290 {
        now += 100;
        for c in others.iter_mut() {
            let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
            if call(c, now, Outcome::Success, &mut send).is_ok() {
                admitted += 1;
            }
        }
    }
    let per_client = (store.requests - before) as f64 / 8.0;
    assert_eq!(admitted, 0, "the probe's slot was the only one");
    // 29 s at one request per lease (1 s), not 290.
    assert!(per_client <= 31.0, "{per_client} requests per client");
    // The probe's lease runs out (30 s): the next caller probes, and it closes.
    now += 1_100;
    let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
    call(&mut others[0], now, Outcome::Success, &mut send).unwrap();
    assert_eq!(store.view(now).lease.state, State::Closed);
}

#[test]
fn a_report_the_host_dropped_never_wedges_the_client() {
    // A caller's own time-out dropped the future carrying a report: no answer will be fed
    // back. Once, every later call waited for it, and no report was ever sent again.
    let s = spec(1_000);
    let mut store = Store::new();
    let mut now = T0;
    for abandon in [true, false] {
        let mut c = client(if abandon { "told" } else { "silent" }, 5);
        {
            let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
            call(&mut c, now, Outcome::Success, &mut send).unwrap();
        }
        let Decision::Admit(ticket) = c.admit(LocalTime(now)) else {
            panic!()
        };
        assert!(c.record(LocalTime(now), ticket, Outcome::Failure));
        let dropped = c.begin_flush(false).unwrap();
        // It reached the coordinator; the answer went nowhere.
        let _ = store.exchange(s, now, &dropped, false);
        if abandon {
            c.abandon(LocalTime(now));
        }
        // The lease runs out; a call must neither wait for that answer nor be rejected.
        now += 1_500;
        if !abandon {
            // Within the report's deadline the host is told to wait for it...
            assert_eq!(c.admit(LocalTime(now)), Decision::Refresh);
            assert!(c.in_flight());
            // ...and past it, the client goes on without it.
            now += 10_000;
        }
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        call(&mut c, now, Outcome::Success, &mut send).expect("admitted");
        now += 1_100;
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, now, req, acq);
        report(&mut c, now, true, &mut send);
        assert!(!c.in_flight());
        assert_eq!(
            c.unacknowledged(),
            0,
            "the dropped report's batch was sent again"
        );
    }
    // Each failure was counted once, though its batch arrived twice.
    let view = store.view(now);
    assert_eq!(view.stats.failures, 2);
    assert_eq!(view.counters.duplicate_batches, 2);
}

#[test]
fn a_rollback_leaves_a_newer_versions_record_alone_until_reset() {
    // A newer version wrote the record (here: OPEN, snapshot version 2), then the deploy was
    // rolled back. Once, the older version replaced it with a fresh CLOSED record at its first
    // step: a rollback ended an outage.
    let s = spec(60_000);
    let mut store = Store::new();
    let mut c = client("app", 1);
    for k in 0..3 {
        let mut send = |req: &Exchange, acq: bool| store.exchange(s, T0 + k, req, acq);
        let _ = call(&mut c, T0 + k, Outcome::Failure, &mut send);
    }
    let ours = store.record.clone().unwrap();
    let readable = ours.replace("\"version\":1,", "\"version\":2,");
    // A newer version may also write what this one cannot parse at all.
    let unreadable = readable.replace("\"state\":\"OPEN\"", "\"state\":\"THROTTLED\"");
    assert_ne!(readable, ours);
    assert_ne!(unreadable, readable);
    for newer in [readable, unreadable] {
        let mut co =
            Coordinator::load_json("upstream", s, Some(&newer), OnMismatch::Install).unwrap();
        let why = co
            .unavailable()
            .expect("a newer version's record is not served");
        assert!(why.contains("newer version"), "{why}");
        assert!(!co.must_rewrite());
        assert!(co.view(Timestamp(T0 + 10)).restore_error.is_some());
        // An operator's reset replaces it, and it is served again.
        let step = co.reset(Timestamp(T0 + 20));
        assert!(step.changed);
        assert_eq!(co.unavailable(), None);
        let rewritten = co.record_json().unwrap();
        assert!(rewritten.contains("\"version\":1,"), "{rewritten}");
    }
    // A record that is merely damaged is still replaced at the next step, as before.
    let co = Coordinator::load_json(
        "upstream",
        s,
        Some("{\"snapshot\":42}"),
        OnMismatch::Install,
    )
    .unwrap();
    assert_eq!(co.unavailable(), None);
    assert!(co.must_rewrite());
}

#[test]
fn only_refusals_that_mean_a_configuration_mistake_are_called_one() {
    let fallback = |status| ClientEvent::Local {
        reason: String::from("answered"),
        status,
    };
    for status in [401, 403, 404, 409] {
        assert!(
            fallback(Some(status)).misconfiguration().is_some(),
            "{status}"
        );
    }
    // A proxy's 429, a body refused, an unreachable coordinator: not configuration.
    for status in [Some(429), Some(400), Some(413), None] {
        assert_eq!(fallback(status).misconfiguration(), None, "{status:?}");
    }
    assert_eq!(ClientEvent::Recovered.misconfiguration(), None);
}

/// Eight small instances, each too quiet for a throttle of its own (12 calls per two-minute
/// window, under `minimum_requests`), against an upstream that fails 80 % of the calls for three
/// minutes, then recovers. Shared, the coordinator counts the fleet's requests and accepts from
/// the batches it already receives and every lease carries the fleet's probability: each
/// instance sheds its share locally. Object requests per call stay what they were without the
/// throttle, and (liveness) the shedding stops by itself after the recovery.
#[test]
fn a_degraded_upstream_is_shed_across_the_fleet_and_the_shedding_stops_by_itself() {
    use breakwater::{Breaker, Throttle, Window};

    let rule = TripRule::FailureRate {
        threshold_percent: 100.0,
        minimum_calls: 1_000,
        window: Window::Calls(1_000),
    };
    let base = BreakerConfig::new().with_trip(rule);
    let throttled = base.with_throttle(Throttle::new());
    let degraded_until = T0 + 180_000;
    let end = T0 + 600_000;
    // The upstream's answer to call `n` at `now`: 80 % failures while degraded.
    let outcome = |n: u64, now: u64| {
        if now < degraded_until && n % 5 != 0 {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    };

    // Shared: one store, eight lease clients.
    let run_shared = |config: BreakerConfig| {
        let spec = SharedSpec::new(config).with_lease_ms(1_000);
        let mut store = Store::new();
        let mut clients: Vec<LeaseClient> = (0..8)
            .map(|i| client(&format!("app-{i}"), 1 + i as u64))
            .collect();
        let (mut shed, mut calls, mut last_shed) = (vec![0u32; 8], 0u64, 0u64);
        let mut n = 0u64;
        let mut now = T0;
        while now < end {
            for (i, c) in clients.iter_mut().enumerate() {
                // Each instance calls once every 10 s, the eight spread over the 10 s.
                if (now - T0) % 10_000 != i as u64 * 1_250 {
                    continue;
                }
                n += 1;
                calls += 1;
                let mut send =
                    |req: &Exchange, acquire: bool| store.exchange(spec, now, req, acquire);
                match call(c, now, outcome(n, now), &mut send) {
                    Err(r) if r.reason == RejectReason::Throttled => {
                        shed[i] += 1;
                        last_shed = now;
                    }
                    Err(r) => panic!("refused {r:?}"),
                    Ok(()) => {}
                }
                report(c, now, false, &mut send);
            }
            now += 250;
        }
        (shed, calls, store.requests, last_shed)
    };
    let (shed, calls, requests, last_shed) = run_shared(throttled);
    let (none, calls_without, requests_without, _) = run_shared(base);
    assert_eq!(calls, calls_without);
    assert!(none.iter().all(|&s| s == 0));
    // Every instance shed its share of the doomed calls, though none alone saw enough of them.
    assert!(shed.iter().all(|&s| s >= 3), "shed per instance {shed:?}");
    // No extra round trip: the probability rides on the leases and batches there already.
    assert!(
        requests <= requests_without,
        "object requests {requests} with the throttle, {requests_without} without ({calls} calls)"
    );
    // Liveness: nothing shed two windows after the recovery.
    assert!(
        last_shed < degraded_until + 240_000,
        "last shed {} s after the recovery",
        (last_shed - degraded_until) / 1_000
    );

    // Alone, each instance's own throttle never reaches its minimum of requests: nothing shed.
    let mut alone = Breaker::new(throttled).unwrap();
    let mut n = 0u64;
    let mut local_shed = 0;
    for k in 0..(end - T0) / 10_000 {
        let now = Timestamp(T0 + k * 10_000);
        n += 1;
        match alone.acquire(now).result {
            Ok(p) => {
                let _ = alone.report(now, p, outcome(n * 8, now.0));
            }
            Err(_) => local_shed += 1,
        }
    }
    assert_eq!(local_shed, 0);
    println!(
        "fleet of 8: shed {shed:?} of {calls} calls; object requests {requests} (without the \
         throttle {requests_without}); last shed {} s after the recovery",
        (last_shed - degraded_until) / 1_000
    );
}
