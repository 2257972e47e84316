//! The built-in `degraded` scenario (a minute of 30 % 529s, 40 users on 4 instances, 3 attempts
//! per request) under each breaker configuration: no breaker, a consecutive-failures breaker, a
//! failure-rate breaker, and the adaptive throttle at several multipliers and windows, each per
//! instance ("local") and shared by the four instances (what the fleet-wide lease gives). Every
//! number is deterministic under the scenario's seed; `cargo test --features sim --test
//! sim_throttle -- --nocapture` prints the table.
#![cfg(feature = "sim")]

use breakwater::sim::{self, Strategy, StrategyReport};
use breakwater::{BreakerConfig, Throttle, TripRule, Window};

const RATE_50: TripRule = TripRule::FailureRate {
    threshold_percent: 50.0,
    minimum_calls: 20,
    window: Window::Millis(60_000),
};

/// Runs the `degraded` scenario with `breaker`; answers retry-only and the two breaker
/// strategies (per instance, shared).
fn run(breaker: BreakerConfig) -> (StrategyReport, StrategyReport, StrategyReport) {
    run_in("degraded", breaker)
}

fn run_in(
    scenario: &str,
    breaker: BreakerConfig,
) -> (StrategyReport, StrategyReport, StrategyReport) {
    let mut s = sim::builtin(scenario).expect("built in");
    s.breaker = breaker.with_seed(s.breaker.seed);
    let r = sim::run(&s).unwrap();
    let get = |st| r.get(st).unwrap().clone();
    (
        get(Strategy::RetryOnly),
        get(Strategy::BreakerPerInstance),
        get(Strategy::SharedBreaker),
    )
}

fn base(trip: TripRule) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(trip)
        .with_open_duration_ms(30_000)
}

fn throttle(multiplier: f64, window_ms: u64) -> BreakerConfig {
    base(RATE_50).with_throttle(Throttle {
        multiplier,
        window_ms,
        ..Throttle::new()
    })
}

/// The last second in which anything was refused, from the per-second timeline.
fn last_refusal_s(r: &StrategyReport) -> Option<u64> {
    let t = &r.timeline;
    t.rejected
        .iter()
        .rposition(|&n| n > 0)
        .map(|i| i as u64 * t.bucket_ms / 1_000)
}

fn row(name: &str, r: &StrategyReport) {
    println!(
        "{name:<42} {:>6} {:>6} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6} {:>7}",
        r.upstream_calls,
        r.upstream_failures,
        r.succeeded,
        r.failed,
        r.failed_fast,
        r.refused_healthy,
        r.breaker_opened,
        r.latency_p99_ms,
        last_refusal_s(r).map_or("-".into(), |s| s.to_string()),
    );
}

#[test]
fn the_degraded_scenario_under_each_breaker() {
    println!(
        "{:<42} {:>6} {:>6} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6} {:>7}",
        "configuration",
        "calls",
        "doomed",
        "ok",
        "failed",
        "backup",
        "refused",
        "opened",
        "p99",
        "last(s)"
    );
    let (retry_only, _, _) = run(base(RATE_50));
    row("no breaker (retries)", &retry_only);
    let recovered_s = retry_only.recovered_at_ms.unwrap() / 1_000;
    assert_eq!(recovered_s, 120);

    // A consecutive rule trips on runs of five 529s: it spares the upstream the most, and flaps.
    let (_, local, shared) = run(base(TripRule::ConsecutiveFailures { threshold: 5 }));
    row("consecutive 5, local", &local);
    row("consecutive 5, shared", &shared);
    assert!(local.breaker_opened > 4, "{}", local.breaker_opened);
    assert!(shared.upstream_failures < retry_only.upstream_failures / 4);
    let consecutive = shared;

    // A failure-rate rule at 50 % never trips at 30 %: every doomed call goes through.
    let (_, local, shared) = run(base(RATE_50));
    row("failure rate 50 %, local", &local);
    row("failure rate 50 %, shared", &shared);
    assert_eq!(local.rejected_attempts + shared.rejected_attempts, 0);
    assert_eq!(shared.upstream_failures, retry_only.upstream_failures);

    // The SRE throttle at its published K = 2 sheds only below 50 % accepts: nothing here.
    for window in [120_000, 30_000] {
        let (_, local, shared) = run(throttle(2.0, window));
        row(
            &format!("throttle K 2, {} s, local", window / 1_000),
            &local,
        );
        row(
            &format!("throttle K 2, {} s, shared", window / 1_000),
            &shared,
        );
        assert_eq!(local.throttled_attempts + shared.throttled_attempts, 0);
    }

    // Lower multipliers shed: fewer doomed calls than the rules that do not trip, about as many
    // healthy calls refused as the doomed ones spared are worth, never opening, and (liveness)
    // nothing shed three windows after the recovery. The shedding outlives the outage: refused
    // calls count as requests and only the admitted ones' successes pull `p` down, so with K
    // close to 1 it takes two to three windows to die out.
    for (k, window) in [(1.2, 30_000)] {
        let (_, local, shared) = run(throttle(k, window));
        row(
            &format!("throttle K {k}, {} s, local", window / 1_000),
            &local,
        );
        row(
            &format!("throttle K {k}, {} s, shared", window / 1_000),
            &shared,
        );
        for r in [&local, &shared] {
            assert!(r.throttled_attempts > 0);
            assert_eq!(r.throttled_attempts, r.rejected_attempts);
            assert_eq!(r.breaker_opened, 0);
            assert!(r.upstream_failures < retry_only.upstream_failures);
            assert!(r.upstream_failures > consecutive.upstream_failures);
            let last = last_refusal_s(r).unwrap();
            assert!(
                last <= recovered_s + 3 * window / 1_000,
                "K {k}, {window} ms: last refusal at {last} s"
            );
        }
    }

    // With the default two-minute window a one-minute degradation is diluted by the healthy
    // minute before it: K 1.2 sheds almost nothing during the outage, and what it sheds comes
    // after the recovery.
    let (_, local, shared) = run(throttle(1.2, 120_000));
    row("throttle K 1.2, 120 s, local", &local);
    row("throttle K 1.2, 120 s, shared", &shared);
    for r in [&local, &shared] {
        assert!(r.upstream_failures + 10 > retry_only.upstream_failures);
        assert!(last_refusal_s(r).unwrap() > recovered_s + 30);
    }

    // The price of a multiplier close to 1: in a healthy steady state the shed share q becomes
    // K·q − (K − 1) one window later, so it dies out only as fast as (1 − q) grows by K per
    // window. At K 1.1 the throttle, having shed some 40 % at the end of the outage, is still
    // shedding healthy calls two minutes (four windows) after the recovery.
    let (_, local, shared) = run(throttle(1.1, 30_000));
    row("throttle K 1.1, 30 s, local", &local);
    row("throttle K 1.1, 30 s, shared", &shared);
    for r in [&local, &shared] {
        assert!(r.upstream_failures < retry_only.upstream_failures);
        assert!(last_refusal_s(r).unwrap() >= recovered_s + 110);
    }
}

/// The built-in `overloaded` scenario: for a minute the provider serves 28 calls at once, queues
/// 10 and answers 529 past them, so its errors come from the load (retries make them worse).
/// Here the throttle earns its keep: against the failure-rate breaker, fewer doomed calls, fewer
/// healthy calls refused, more requests answered, and it never opens; the consecutive rule still
/// spares the upstream most, at four times the refusals.
#[test]
fn the_overloaded_scenario_under_each_breaker() {
    println!(
        "{:<42} {:>6} {:>6} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6} {:>7}",
        "configuration (overloaded)",
        "calls",
        "doomed",
        "ok",
        "failed",
        "backup",
        "refused",
        "opened",
        "p99",
        "last(s)"
    );
    let (retry_only, _, _) = run_in("overloaded", base(RATE_50));
    row("no breaker (retries)", &retry_only);
    let recovered_s = retry_only.recovered_at_ms.unwrap() / 1_000;
    let (_, c_local, c_shared) = run_in(
        "overloaded",
        base(TripRule::ConsecutiveFailures { threshold: 5 }),
    );
    row("consecutive 5, local", &c_local);
    row("consecutive 5, shared", &c_shared);
    let (_, r_local, r_shared) = run_in("overloaded", base(RATE_50));
    row("failure rate 50 %, local", &r_local);
    row("failure rate 50 %, shared", &r_shared);
    let (_, t_local, t_shared) = run_in("overloaded", throttle(1.5, 30_000));
    row("rate 50 % + throttle K 1.5, 30 s, local", &t_local);
    row("rate 50 % + throttle K 1.5, 30 s, shared", &t_shared);
    for (t, r) in [(&t_local, &r_local), (&t_shared, &r_shared)] {
        assert!(t.throttled_attempts > 0);
        assert!(
            t.upstream_failures < r.upstream_failures,
            "doomed {} vs {}",
            t.upstream_failures,
            r.upstream_failures
        );
        assert!(t.upstream_failures < retry_only.upstream_failures);
        assert!(
            t.refused_healthy < r.refused_healthy,
            "refused {} vs {}",
            t.refused_healthy,
            r.refused_healthy
        );
        assert!(t.succeeded > r.succeeded);
        assert_eq!(t.breaker_opened, 0);
        assert!(last_refusal_s(t).unwrap() <= recovered_s + 90);
    }
    // The consecutive rule: the fewest doomed calls, at several times the refusals.
    assert!(c_shared.upstream_failures < t_shared.upstream_failures);
    assert!(c_shared.refused_healthy > 3 * t_shared.refused_healthy);
}
