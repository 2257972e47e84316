//! The cost of the Rust facade, beside its peers in the same run:
//!
//! - `uncontended`: one thread. The core's decision pair (`acquire` + `report` on a CLOSED
//!   breaker), the facade's `CircuitBreaker::call` around the same (its clock read twice, its
//!   critical section taken twice) on a `ManualClock` and on the `SystemClock`, and
//!   `call_async` on a future that is ready at once.
//! - `contended`: `call_async` from 8 tokio tasks on a 2-thread runtime sharing one breaker,
//!   against failsafe's futures `CircuitBreaker::call` (`StateMachine`, `Clone + Send + Sync`)
//!   and recloser's `AsyncRecloser::call`, per call. Every call succeeds; no breaker trips.
//!
//! Wall time (threads are the point here). Run with `cargo bench --bench services --features
//! tower`: about 40 s.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use breakwater::{
    Breaker, BreakerConfig, CircuitBreaker, ManualClock, Outcome, SystemClock, Timestamp,
};
use criterion::{criterion_group, criterion_main, Criterion};

const TASKS: u64 = 8;

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("uncontended");
    {
        let mut core = Breaker::new(BreakerConfig::new()).unwrap();
        let mut now = 1_700_000_000_000u64;
        group.bench_function("core_decision_pair", |b| {
            b.iter(|| {
                now += 1;
                let t = Timestamp(black_box(now));
                let permit = core.acquire(t).result.unwrap();
                core.report(t, permit, black_box(Outcome::Success))
            })
        });
    }
    {
        // Under consecutive failures (the default rule) a CLOSED success reads no clock at all, so
        // the clock makes no difference here; a failure or another rule reads it twice.
        let clock = ManualClock::new(Timestamp(1_700_000_000_000));
        let breaker = CircuitBreaker::new("llm", BreakerConfig::new(), clock).unwrap();
        group.bench_function("facade_call_manual_clock", |b| {
            b.iter(|| breaker.call(|| Ok::<_, ()>(black_box(1))))
        });
    }
    {
        // The operating system's clock (`SystemTime::now`).
        let breaker = CircuitBreaker::new("llm", BreakerConfig::new(), SystemClock).unwrap();
        group.bench_function("facade_call_system_clock", |b| {
            b.iter(|| breaker.call(|| Ok::<_, ()>(black_box(1))))
        });
        group.bench_function("facade_call_async_system_clock", |b| {
            b.iter(|| ready(breaker.call_async(async { Ok::<_, ()>(black_box(1)) })))
        });
    }
    group.finish();
}

/// The output of a future that is ready at its first poll (no runtime in the measurement).
fn ready<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => unreachable!("the guarded future is ready at once"),
    }
}

/// Runs `iters` calls made by `call`, split over 8 tasks on a 2-thread runtime; the wall time.
fn on_8_tasks<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, call: F) -> Duration
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    rt.block_on(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let call = call.clone();
                let n = iters / TASKS + u64::from(t < iters % TASKS);
                tokio::spawn(async move {
                    let mut ok = 0u64;
                    for _ in 0..n {
                        ok += u64::from(call().await);
                        // Interleave the tasks as a busy service does.
                        tokio::task::yield_now().await;
                    }
                    ok
                })
            })
            .collect();
        let mut ok = 0;
        for t in tasks {
            ok += t.await.unwrap();
        }
        assert_eq!(ok, iters, "every call was admitted and succeeded");
        start.elapsed()
    })
}

fn contended(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("contended_8_tasks_2_threads");

    let breaker = Arc::new(CircuitBreaker::new("llm", BreakerConfig::new(), SystemClock).unwrap());
    group.bench_function("breakwater_call_async", |b| {
        b.iter_custom(|iters| {
            let breaker = Arc::clone(&breaker);
            on_8_tasks(&rt, iters, move || {
                let breaker = Arc::clone(&breaker);
                async move {
                    breaker
                        .call_async(async { Ok::<_, ()>(black_box(1)) })
                        .await
                        .is_ok()
                }
            })
        })
    });

    {
        use failsafe::futures::CircuitBreaker as _;
        let failsafe = failsafe::Config::new().build();
        group.bench_function("peer_failsafe_call", |b| {
            b.iter_custom(|iters| {
                let failsafe = failsafe.clone();
                on_8_tasks(&rt, iters, move || {
                    let failsafe = failsafe.clone();
                    async move {
                        failsafe
                            .call(async { Ok::<_, ()>(black_box(1)) })
                            .await
                            .is_ok()
                    }
                })
            })
        });
    }

    {
        let recloser = Arc::new(recloser::AsyncRecloser::from(recloser::Recloser::default()));
        group.bench_function("peer_recloser_call", |b| {
            b.iter_custom(|iters| {
                let recloser = Arc::clone(&recloser);
                on_8_tasks(&rt, iters, move || {
                    let recloser = Arc::clone(&recloser);
                    async move {
                        recloser
                            .call(async { Ok::<_, ()>(black_box(1)) })
                            .await
                            .is_ok()
                    }
                })
            })
        });
    }
    group.finish();
}

fn settings() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(40)
}

criterion_group! {
    name = benches;
    config = settings();
    targets = uncontended, contended
}
criterion_main!(benches);
