//! The cost of one decision: `acquire(now)` + `report(now, permit, outcome)` on a healthy CLOSED
//! breaker, per trip rule; the rejection path of an OPEN breaker; and the retry policy's
//! `decide` / `backoff` per jitter. Peers in the same run: failsafe's consecutive-failures
//! breaker and recloser's failure-rate ring, so that a noisy machine still gives usable ratios.
//!
//! Workload: `now` advances 1 ms per call; every 16th call fails (6.25 %), which none of the rules
//! below trips on. Under the slow-call rule every 16th call (another one) takes 1.5 s, also 6.25 %.
//! Every benchmark checks afterwards that its breaker never left the state it was meant to stay in.
//!
//! On Linux the clock is the benchmark thread's CPU time, not wall time: on a shared machine a
//! descheduled thread would otherwise be billed for other processes' work. Single-threaded code
//! on an idle machine reads the same either way.
//!
//! Run with `cargo bench --bench decision`: about 70 s on an idle machine, longer on a loaded one
//! (each benchmark gets 2 s of CPU, not of wall time).

use std::hint::black_box;
use std::time::Duration;

use breakwater::{
    AttemptFailure, Breaker, BreakerConfig, Jitter, Outcome, RetryPolicy, SplitMix64, State,
    Timestamp, TripRule, Window,
};
use criterion::{criterion_group, criterion_main, Criterion};

#[cfg(target_os = "linux")]
type Meter = cpu::ThreadCpuTime;
#[cfg(not(target_os = "linux"))]
type Meter = criterion::measurement::WallTime;

/// Start of the simulated clock: 2023-11-14, so that the millisecond values are realistic.
const T0: u64 = 1_700_000_000_000;

/// Calls per cycle of the outcome pattern; call 0 of each cycle fails.
const CYCLE: u64 = 16;

/// A slow call under the slow-call rule takes this long (the rule's limit is 1 000 ms).
const SLOW_MS: u64 = 1_500;

fn rules() -> [(&'static str, TripRule); 5] {
    [
        (
            "consecutive_failures",
            TripRule::ConsecutiveFailures { threshold: 5 },
        ),
        (
            // At most 63 failures fall within any 1 000 ms here: never 100.
            "failures_in_window",
            TripRule::FailuresInWindow {
                threshold: 100,
                window_ms: 1_000,
            },
        ),
        (
            "failure_rate_calls",
            TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 20,
                window: Window::Calls(100),
            },
        ),
        (
            "failure_rate_millis",
            TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 20,
                window: Window::Millis(10_000),
            },
        ),
        (
            "slow_call_rate",
            TripRule::SlowCallRate {
                threshold_percent: 50.0,
                slow_call_ms: 1_000,
                minimum_calls: 20,
                window: Window::Calls(100),
            },
        ),
    ]
}

fn config(rule: TripRule) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(rule)
        .with_open_duration_ms(30_000)
}

fn decision_pair(c: &mut Criterion<Meter>) {
    let mut group = c.benchmark_group("pair");
    for (name, rule) in rules() {
        let mut breaker = Breaker::new(config(rule)).expect("valid configuration");
        let slow_rule = rule.slow_call_ms().is_some();
        let (mut now, mut i) = (T0, 0u64);
        group.bench_function(name, |b| {
            b.iter(|| {
                let phase = i % CYCLE;
                i += 1;
                let admission = breaker.acquire(black_box(Timestamp(now)));
                // A slow call reports 1.5 s after it was admitted; the others 1 ms later.
                now += if slow_rule && phase == CYCLE / 2 {
                    SLOW_MS
                } else {
                    1
                };
                let outcome = if phase == 0 {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                // Consume the decisions as a host does (is there a transition to emit?) rather
                // than copying whole structs out through `black_box`, which measures store
                // forwarding stalls of the copy, not the breaker.
                let reported = match admission.result {
                    Ok(permit) => {
                        breaker.report(black_box(Timestamp(now)), permit, black_box(outcome))
                    }
                    Err(_) => None,
                };
                admission.transition.is_some() | reported.is_some()
            })
        });
        assert_eq!(
            breaker.state(),
            State::Closed,
            "{name}: the workload tripped"
        );
        assert_eq!(breaker.stats().opened, 0, "{name}: the workload tripped");
        assert_eq!(breaker.stats().rejected, 0, "{name}: calls were rejected");
    }

    // The same scaffolding (clock, outcome pattern, `black_box`) with no breaker: what of each
    // figure above is the harness.
    {
        let (mut now, mut i) = (T0, 0u64);
        group.bench_function("harness_baseline", |b| {
            b.iter(|| {
                let phase = i % CYCLE;
                i += 1;
                let t = black_box(Timestamp(now));
                now += 1;
                let outcome = if phase == 0 {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                black_box(outcome) == Outcome::Failure && t.0 == 0
            })
        });
    }

    // Peer: failsafe-rs, consecutive failures (parking_lot mutex inside; no clock read while
    // CLOSED).
    {
        use failsafe::{backoff, failure_policy, Config};
        let policy =
            failure_policy::consecutive_failures(5, backoff::constant(Duration::from_secs(30)));
        let breaker = Config::new().failure_policy(policy).build();
        let mut i = 0u64;
        group.bench_function("peer_failsafe_consecutive_failures", |b| {
            b.iter(|| {
                let fail = black_box(i % CYCLE == 0);
                i += 1;
                if breaker.is_call_permitted() {
                    if fail {
                        breaker.on_error();
                    } else {
                        breaker.on_success();
                    }
                    true
                } else {
                    false
                }
            })
        });
        assert!(
            breaker.is_call_permitted(),
            "failsafe: the workload tripped"
        );
    }

    // Peer: recloser, a failure-rate ring of 100 calls (crossbeam-epoch pin + atomics). Its only
    // public entry point wraps the call, so the closure stands for the call itself.
    {
        let breaker = recloser::Recloser::custom()
            .error_rate(0.5)
            .closed_len(100)
            .open_wait(Duration::from_secs(30))
            .build();
        let mut i = 0u64;
        group.bench_function("peer_recloser_failure_rate_calls", |b| {
            b.iter(|| {
                let fail = black_box(i % CYCLE == 0);
                i += 1;
                breaker.call(|| if fail { Err(()) } else { Ok(()) }).is_ok()
            })
        });
        assert!(
            !matches!(
                breaker.call(|| Ok::<_, ()>(())),
                Err(recloser::Error::Rejected)
            ),
            "recloser: the workload tripped"
        );
    }
    group.finish();
}

fn rejection(c: &mut Criterion<Meter>) {
    let mut group = c.benchmark_group("rejected");
    // Open for a very long time, so `now` can advance through the whole run.
    let open_ms = 1 << 40;
    {
        let config = BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
            .with_open_duration_ms(open_ms)
            .with_open_backoff(1.0, open_ms);
        let mut breaker = Breaker::new(config).expect("valid configuration");
        let permit = breaker.acquire(Timestamp(T0)).result.expect("closed");
        let _ = breaker.report(Timestamp(T0), permit, Outcome::Failure);
        assert_eq!(breaker.state(), State::Open);
        let mut now = T0;
        group.bench_function("open_acquire", |b| {
            b.iter(|| {
                now += 1;
                let admission = breaker.acquire(black_box(Timestamp(now)));
                match admission.result {
                    Err(rejected) => rejected.retry_after_ms,
                    Ok(_) => 0,
                }
            })
        });
        assert_eq!(breaker.state(), State::Open, "the open period ended");
        assert_eq!(
            breaker.stats().admitted,
            1,
            "a call was admitted while open"
        );
    }

    // Peer: failsafe reads `Instant::now()` to test the open period on every call.
    {
        use failsafe::{backoff, failure_policy, Config};
        let policy = failure_policy::consecutive_failures(
            1,
            backoff::constant(Duration::from_secs(1 << 30)),
        );
        let breaker = Config::new().failure_policy(policy).build();
        breaker.on_error();
        assert!(!breaker.is_call_permitted(), "failsafe did not open");
        group.bench_function("peer_failsafe_open", |b| {
            b.iter(|| breaker.is_call_permitted())
        });
    }

    // Peer: recloser also reads `Instant::now()` when OPEN.
    {
        let breaker = recloser::Recloser::custom()
            .error_rate(0.5)
            .closed_len(2)
            .open_wait(Duration::from_secs(1 << 30))
            .build();
        // The ring must fill (two calls) before it reports a rate.
        for _ in 0..3 {
            let _ = breaker.call(|| Err::<(), ()>(()));
        }
        assert!(
            matches!(
                breaker.call(|| Ok::<_, ()>(())),
                Err(recloser::Error::Rejected)
            ),
            "recloser did not open"
        );
        group.bench_function("peer_recloser_open", |b| {
            b.iter(|| breaker.call(|| Ok::<_, ()>(())).is_err())
        });
    }
    group.finish();
}

fn jitters() -> [(&'static str, Jitter); 5] {
    [
        ("none", Jitter::None),
        ("full", Jitter::Full),
        ("equal", Jitter::Equal),
        ("decorrelated", Jitter::Decorrelated),
        ("proportional", Jitter::Proportional(0.3)),
    ]
}

fn retry(c: &mut Criterion<Meter>) {
    let mut group = c.benchmark_group("retry");
    let failure = AttemptFailure {
        retryable: true,
        retry_after_ms: None,
    };
    for (name, jitter) in jitters() {
        // Eight attempts, then a fresh logical call: the exponent cycles through 1..=7.
        let policy = RetryPolicy::new()
            .with_max_attempts(8)
            .with_base_delay_ms(100)
            .with_max_delay_ms(60_000)
            .with_jitter(jitter);
        policy.validate().expect("valid policy");
        let mut rng = SplitMix64::new(42);
        let mut now = T0;
        let mut state = policy.start(Timestamp(now));
        group.bench_function(format!("decide_{name}"), |b| {
            b.iter(|| {
                now += 1;
                if state.attempts >= 8 {
                    state = policy.start(Timestamp(now));
                }
                policy.decide(
                    &mut state,
                    black_box(Timestamp(now)),
                    black_box(failure),
                    &mut rng,
                    None,
                )
            })
        });
        let mut retry = 0u32;
        let mut previous = 0u64;
        group.bench_function(format!("backoff_{name}"), |b| {
            b.iter(|| {
                retry = retry % 7 + 1;
                previous = policy.backoff(black_box(retry), black_box(previous), &mut rng);
                previous
            })
        });
    }
    group.finish();
}

fn settings() -> Criterion<Meter> {
    // 21 benchmarks × (0.5 s warm-up + 2 s measurement + analysis) ≈ 70 s.
    Criterion::default()
        .with_measurement(Meter::default())
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .noise_threshold(0.05)
}

criterion_group! {
    name = benches;
    config = settings();
    targets = decision_pair, rejection, retry
}
criterion_main!(benches);

/// Thread CPU time as a criterion measurement, in nanoseconds.
#[cfg(target_os = "linux")]
mod cpu {
    use criterion::measurement::{Measurement, ValueFormatter};
    use criterion::Throughput;

    #[derive(Default)]
    pub struct ThreadCpuTime;

    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    impl Measurement for ThreadCpuTime {
        type Intermediate = u64;
        type Value = u64;
        fn start(&self) -> u64 {
            now_ns()
        }
        fn end(&self, start: u64) -> u64 {
            now_ns().saturating_sub(start)
        }
        fn add(&self, a: &u64, b: &u64) -> u64 {
            a + b
        }
        fn zero(&self) -> u64 {
            0
        }
        fn to_f64(&self, value: &u64) -> f64 {
            *value as f64
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            &Nanos
        }
    }

    struct Nanos;

    impl ValueFormatter for Nanos {
        fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
            let (divisor, unit) = if typical < 1e3 {
                (1.0, "ns")
            } else if typical < 1e6 {
                (1e3, "µs")
            } else if typical < 1e9 {
                (1e6, "ms")
            } else {
                (1e9, "s")
            };
            for v in values {
                *v /= divisor;
            }
            unit
        }
        fn scale_throughputs(
            &self,
            _typical: f64,
            throughput: &Throughput,
            values: &mut [f64],
        ) -> &'static str {
            let per_iteration = match *throughput {
                Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => {
                    n as f64
                }
                _ => 1.0,
            };
            for v in values {
                *v = per_iteration * 1e9 / *v;
            }
            "/s"
        }
        fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
            "ns"
        }
    }
}
