//! A provider outage replayed on a manual clock, with and without a breaker.
//!
//! 40 users each send a request every 2 s for 4 minutes. The provider answers 529 from 0:30 to
//! 2:00 (90 s). Every request retries up to 4 attempts (1, 2, 4 s apart). Without a breaker each
//! request spends its full retry chain against a provider that is down; with one, requests fail
//! fast while it is open and a single probe finds the provider back.
//!
//! Run: `cargo run --example outage`

use breakwater::{
    AttemptFailure, Breaker, BreakerConfig, Jitter, Outcome, RetryDecision, RetryPolicy,
    SplitMix64, State, Timestamp, TripRule,
};

const USERS: u64 = 40;
const PERIOD_MS: u64 = 2_000;
const END_MS: u64 = 240_000;
const OUTAGE: (u64, u64) = (30_000, 120_000);

fn provider_up(t: u64) -> bool {
    !(OUTAGE.0..OUTAGE.1).contains(&t)
}

struct Tally {
    upstream_calls: u64,
    failed_fast: u64,
    served: u64,
    failed: u64,
    last_failure_ms: u64,
}

fn run(mut breaker: Option<Breaker>) -> Tally {
    let policy = RetryPolicy::new()
        .with_max_attempts(4)
        .with_base_delay_ms(1_000)
        .with_jitter(Jitter::None);
    let mut rng = SplitMix64::new(7);
    let mut tally = Tally {
        upstream_calls: 0,
        failed_fast: 0,
        served: 0,
        failed: 0,
        last_failure_ms: 0,
    };
    let mut last_state = State::Closed;
    for start in (0..END_MS).step_by((PERIOD_MS / USERS) as usize) {
        let now = Timestamp(start);
        let permit = match breaker.as_mut().map(|b| b.acquire(now)) {
            Some(admission) => match admission.result {
                Ok(p) => Some(p),
                Err(_) => {
                    tally.failed_fast += 1;
                    tally.last_failure_ms = start;
                    continue;
                }
            },
            None => None,
        };
        // One request: its attempts and backoff, on simulated time.
        let mut state = policy.start(now);
        let mut t = start;
        let ok = loop {
            tally.upstream_calls += 1;
            if provider_up(t) {
                break true;
            }
            let failure = AttemptFailure {
                retryable: true,
                retry_after_ms: None,
            };
            match policy.decide(&mut state, Timestamp(t), failure, &mut rng, None) {
                RetryDecision::Retry { delay_ms, .. } => t += delay_ms,
                RetryDecision::GiveUp(_) => break false,
            }
        };
        if ok {
            tally.served += 1;
        } else {
            tally.failed += 1;
            tally.last_failure_ms = t;
        }
        if let (Some(b), Some(p)) = (breaker.as_mut(), permit) {
            let outcome = if ok { Outcome::Success } else { Outcome::Failure };
            let _ = b.report(Timestamp(t), p, outcome);
            if b.state() != last_state {
                println!("  {:>6.1} s  breaker {} -> {}", t as f64 / 1e3, last_state, b.state());
                last_state = b.state();
            }
        }
    }
    tally
}

fn main() {
    println!(
        "{USERS} users, one request each every {} s, provider down {}–{} s, 4 attempts per request\n",
        PERIOD_MS / 1_000,
        OUTAGE.0 / 1_000,
        OUTAGE.1 / 1_000
    );
    let none = run(None);
    println!("with a breaker (5 consecutive failures, 30 s open):");
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 5 })
        .with_open_duration_ms(30_000);
    let Ok(breaker) = Breaker::new(config) else {
        eprintln!("invalid configuration");
        std::process::exit(2);
    };
    let with = run(Some(breaker));
    println!(
        "\n{:<16}{:>15}{:>13}{:>9}{:>9}{:>22}",
        "", "upstream calls", "failed fast", "served", "failed", "last user failure (s)"
    );
    for (name, t) in [("no breaker", &none), ("breaker", &with)] {
        println!(
            "{:<16}{:>15}{:>13}{:>9}{:>9}{:>22.1}",
            name,
            t.upstream_calls,
            t.failed_fast,
            t.served,
            t.failed,
            t.last_failure_ms as f64 / 1e3
        );
    }
    println!(
        "\nThe breaker spared the provider {} calls ({:.0} %).",
        none.upstream_calls - with.upstream_calls,
        100.0 * (none.upstream_calls - with.upstream_calls) as f64 / none.upstream_calls as f64
    );
}
