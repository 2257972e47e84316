//! Rust services: one breaker shared by every tokio task, the tower layer under axum and tower's
//! ServiceBuilder, the reqwest middleware with a real client, all against a fake provider on
//! 127.0.0.1 that answers on cue. The providers' error answers are the JSON transcripts of
//! tests/fixtures/llm (each names its source: the providers' API references, the SDKs' and the
//! AI SDK's recorded fixtures), read with Node (tests/common/llm.rs).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use breakwater::reqwest::{rejection, BreakerMiddleware};
use breakwater::tower::BreakerLayer;
use breakwater::{
    BreakerConfig, CircuitBreaker, Error, ManualClock, Outcome, PermitKind, Random, RejectReason,
    RetryPolicy, SplitMix64, State, SystemClock, Timestamp, Transition, TripRule,
};
use tokio::net::TcpListener;

#[path = "common/llm.rs"]
mod llm;
use tower::{Service, ServiceBuilder, ServiceExt};

// --- The fake provider ---

/// One answer of the fake provider.
#[derive(Clone, Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay_ms: u64,
}

impl Answer {
    fn status(status: u16) -> Self {
        Answer {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: format!(r#"{{"status":{status}}}"#),
            delay_ms: 0,
        }
    }
    fn slow(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }
    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
    fn body(mut self, body: &str) -> Self {
        self.body = body.into();
        self
    }
}

/// A provider that answers its cued answers in order, then its default one; counts requests.
#[derive(Clone)]
struct Provider {
    cued: Arc<Mutex<VecDeque<Answer>>>,
    default: Arc<Mutex<Answer>>,
    hits: Arc<AtomicUsize>,
}

impl Provider {
    fn new() -> Self {
        Provider {
            cued: Arc::default(),
            default: Arc::new(Mutex::new(Answer::status(200))),
            hits: Arc::default(),
        }
    }
    fn cue(&self, answers: impl IntoIterator<Item = Answer>) {
        self.cued.lock().unwrap().extend(answers);
    }
    fn always(&self, answer: Answer) {
        *self.default.lock().unwrap() = answer;
    }
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
    fn next(&self) -> Answer {
        self.hits.fetch_add(1, Ordering::SeqCst);
        let cued = self.cued.lock().unwrap().pop_front();
        cued.unwrap_or_else(|| self.default.lock().unwrap().clone())
    }

    /// The provider as an axum app.
    fn router(&self) -> Router {
        let me = self.clone();
        Router::new().fallback(move |_req: Request<Body>| {
            let answer = me.next();
            async move {
                if answer.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(answer.delay_ms)).await;
                }
                let mut response = Response::new(Body::from(answer.body));
                *response.status_mut() = StatusCode::from_u16(answer.status).unwrap();
                for (k, v) in &answer.headers {
                    response.headers_mut().insert(
                        HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        HeaderValue::from_str(v).unwrap(),
                    );
                }
                response
            }
        })
    }

    /// Serves it on 127.0.0.1; the server stops with the test's runtime.
    async fn serve(&self) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = self.router();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    }
}

fn transitions(breaker: &mut CircuitBreaker<SystemClock>) -> Arc<Mutex<Vec<Transition>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    breaker.on_transition(move |_, t| sink.lock().unwrap().push(t));
    seen
}

/// No sleeping in tests: the wait asked for is recorded, and 1 ms passes.
fn recording_sleep() -> (
    Arc<Mutex<Vec<u64>>>,
    impl Fn(u64) -> tokio::time::Sleep + Send + Sync,
) {
    let slept = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&slept);
    (slept, move |ms| {
        sink.lock().unwrap().push(ms);
        tokio::time::sleep(Duration::from_millis(1))
    })
}

// --- One breaker, 64 tasks ---

/// 64 tasks share one `Arc<CircuitBreaker>` and call the provider through reqwest. The provider
/// fails: the breaker opens once `threshold` failures are in (the calls already in flight may
/// still land, no new one is sent). It recovers: after the open period, exactly
/// `half_open_max_probes` probes are let through at once while the other tasks are refused,
/// and the first success closes the circuit; then every task's calls flow again. (With a
/// success threshold above 1, a probe's success frees its slot for another probe before the
/// circuit closes, so more than `half_open_max_probes` probes can run in all, never more at once.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_tasks_trip_at_the_threshold_probe_exactly_and_close() {
    const TASKS: usize = 64;
    const THRESHOLD: u32 = 5;
    const PROBES: u32 = 3;
    let provider = Provider::new();
    let addr = provider.serve().await;
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures {
            threshold: THRESHOLD,
        })
        .with_open_duration_ms(300)
        .with_half_open_max_probes(PROBES)
        .with_half_open_success_threshold(1);
    let mut breaker = CircuitBreaker::new("provider", config, SystemClock).unwrap();
    let seen = transitions(&mut breaker);
    let breaker = Arc::new(breaker);
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/messages");
    let probes = Arc::new(AtomicUsize::new(0));
    let full = Arc::new(AtomicUsize::new(0));

    // Run `rounds` calls on each of the 64 tasks; count (ok, failed, rejected).
    let run = |rounds: usize| {
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (breaker, client, url) = (Arc::clone(&breaker), client.clone(), url.clone());
                let (probes, full) = (Arc::clone(&probes), Arc::clone(&full));
                tokio::spawn(async move {
                    let mut counts = (0, 0, 0);
                    for _ in 0..rounds {
                        let guard = match breaker.admit() {
                            Ok(guard) => guard,
                            Err(r) => {
                                if r.reason == RejectReason::HalfOpenFull {
                                    full.fetch_add(1, Ordering::SeqCst);
                                }
                                counts.2 += 1;
                                tokio::time::sleep(Duration::from_millis(2)).await;
                                continue;
                            }
                        };
                        if matches!(guard.permit(), Some(p) if matches!(p.kind, PermitKind::Probe { .. })) {
                            probes.fetch_add(1, Ordering::SeqCst);
                        }
                        match client.post(&url).send().await {
                            Ok(resp) if resp.status().is_success() => {
                                guard.settle(Outcome::Success);
                                counts.0 += 1;
                            }
                            _ => {
                                guard.settle(Outcome::Failure);
                                counts.1 += 1;
                            }
                        }
                    }
                    counts
                })
            })
            .collect();
        async move {
            let mut total = (0, 0, 0);
            for t in tasks {
                let (a, b, c) = t.await.unwrap();
                total = (total.0 + a, total.1 + b, total.2 + c);
            }
            total
        }
    };

    // Healthy: everything goes through.
    assert_eq!(run(5).await, (TASKS * 5, 0, 0));

    // The outage: 529 for everyone.
    provider.always(Answer::status(529).slow(5));
    let before = provider.hits();
    let (ok, failed, rejected) = run(20).await;
    let sent = provider.hits() - before;
    assert_eq!(ok, 0);
    assert!(failed >= THRESHOLD as usize, "{failed} failures");
    assert!(
        sent < THRESHOLD as usize + TASKS,
        "{sent} requests reached the failing provider: at most the threshold plus those in flight"
    );
    assert_eq!(failed + rejected, TASKS * 20);
    assert_eq!(breaker.state(), State::Open);

    // The provider is back, slowly: the probes stay in flight while the others ask.
    provider.always(Answer::status(200).slow(150));
    tokio::time::sleep(Duration::from_millis(320)).await;
    let (ok, failed, _) = run(40).await;
    assert_eq!(failed, 0);
    assert!(
        ok > TASKS,
        "{ok} successes: the circuit closed and the calls flowed"
    );
    assert_eq!(breaker.state(), State::Closed);

    let states: Vec<State> = seen.lock().unwrap().iter().map(|t| t.to).collect();
    assert_eq!(states, [State::Open, State::HalfOpen, State::Closed]);
    assert_eq!(
        probes.load(Ordering::SeqCst),
        PROBES as usize,
        "probes admitted"
    );
    assert!(
        full.load(Ordering::SeqCst) > 0,
        "the other tasks were refused while they ran"
    );
    let stats = breaker.stats();
    assert_eq!(
        stats.admitted,
        stats.successes + stats.failures + stats.ignored,
        "every admitted call settled once"
    );
    assert_eq!(breaker.core().probes_in_flight(), 0);
}

// --- Cancellation ---

/// Calls on 64 tasks, cancelled at random until 10 000 admitted calls have been: by a
/// `tokio::time::timeout` shorter than the call, a `select!` lost to another branch, a spawned
/// task aborted, or a future dropped after one poll; the others complete, 20 % of them failures,
/// so the breaker keeps opening (2 ms open periods, no backoff) and running half-open probes,
/// some of which are cancelled too. Afterwards no permit is left: every admitted call settled
/// exactly once, and no probe slot is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_random_cancellations_leak_no_permit() {
    const CANCELLATIONS: usize = 10_000;
    const TASKS: u64 = 64;
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
        .with_open_duration_ms(2)
        .with_open_backoff(1.0, 2)
        .with_half_open_max_probes(3)
        .with_half_open_success_threshold(2);
    let breaker = Arc::new(CircuitBreaker::new("llm", config, SystemClock).unwrap());
    let cancelled = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (breaker, cancelled) = (Arc::clone(&breaker), Arc::clone(&cancelled));
            tokio::spawn(async move {
                let mut rng = SplitMix64::new(task);
                // (A bound, in case cancellations stopped happening.)
                for _ in 0..20_000 {
                    // Only a dropped guard settles as ignored here: the count of admitted calls
                    // that were cancelled.
                    if breaker.stats().ignored >= CANCELLATIONS as u64 {
                        break;
                    }
                    let r = rng.next_u64();
                    let work_ms = 1 + r % 4;
                    let fails = (r >> 16) % 10 < 2;
                    let call = {
                        let breaker = Arc::clone(&breaker);
                        async move {
                            breaker
                                .call_async(async move {
                                    tokio::time::sleep(Duration::from_millis(work_ms)).await;
                                    if fails {
                                        Err("529")
                                    } else {
                                        Ok(())
                                    }
                                })
                                .await
                        }
                    };
                    let budget = Duration::from_millis((r >> 24) % 5);
                    let gave_up = match (r >> 40) % 5 {
                        0 => tokio::time::timeout(budget, call).await.is_err(),
                        1 => tokio::select! {
                            _ = call => false,
                            _ = tokio::time::sleep(budget) => true,
                        },
                        2 => {
                            let handle = tokio::spawn(call);
                            tokio::time::sleep(budget).await;
                            handle.abort();
                            handle.await.is_err()
                        }
                        3 => {
                            let mut call = std::pin::pin!(call);
                            let polled = futures_poll_once(call.as_mut()).await;
                            polled.is_none()
                        }
                        _ => {
                            let _ = call.await;
                            false
                        }
                    };
                    if gave_up {
                        cancelled.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let stats = breaker.stats();
    let gave_up = cancelled.load(Ordering::Relaxed);
    eprintln!("callers gave up {gave_up} times; {stats:?}");
    assert!(stats.ignored >= CANCELLATIONS as u64, "{stats:?}");
    assert!(
        stats.opened > 10,
        "the breaker opened {} times",
        stats.opened
    );
    assert_eq!(
        stats.admitted,
        stats.successes + stats.failures + stats.ignored,
        "{stats:?}: an admitted call was never settled, or settled twice"
    );
    assert_eq!(breaker.core().probes_in_flight(), 0, "a probe slot leaked");
    // Liveness: with the trouble gone, the next calls are admitted and close the circuit.
    tokio::time::sleep(Duration::from_millis(2)).await;
    for _ in 0..2 {
        breaker.call_async(async { Ok::<_, ()>(()) }).await.unwrap();
    }
    assert_eq!(breaker.state(), State::Closed);
}

/// Polls a future once; `Some` if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(mut f: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

// --- The tower layer ---

fn open_after(failures: u32) -> BreakerConfig {
    BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures {
            threshold: failures,
        })
        .with_open_duration_ms(60_000)
}

fn request() -> Request<Body> {
    Request::post("/v1/messages").body(Body::empty()).unwrap()
}

/// One request through a tower service, once it is ready.
async fn send<S: Service<Request<Body>>>(svc: &mut S) -> Result<S::Response, S::Error> {
    ServiceExt::<Request<Body>>::ready(svc)
        .await?
        .call(request())
        .await
}

/// The provider's axum app under `ServiceBuilder` with the breaker's layer: a 529 response opens
/// the breaker (it is an `Ok` response, counted by its status), a 400 does not count, and OPEN
/// answers from `call` with the time to wait, while `poll_ready` stays ready.
#[tokio::test]
async fn the_tower_layer_counts_responses_by_status_and_refuses_from_call() {
    let provider = Provider::new();
    let clock = ManualClock::new(Timestamp(1_700_000_000_000));
    let breaker = Arc::new(CircuitBreaker::new("anthropic", open_after(2), clock.clone()).unwrap());
    let mut svc = ServiceBuilder::new()
        .layer(BreakerLayer::new(Arc::clone(&breaker)))
        .service(provider.router());

    provider.cue((0..5).map(|_| Answer::status(400)));
    for _ in 0..5 {
        let r = send(&mut svc).await.unwrap();
        assert_eq!(r.status(), 400);
    }
    assert_eq!(
        breaker.state(),
        State::Closed,
        "a 400 is the caller's fault"
    );
    assert_eq!(breaker.stats().ignored, 5);

    provider.cue([Answer::status(529), Answer::status(529)]);
    for _ in 0..2 {
        let r = send(&mut svc).await.unwrap();
        assert_eq!(
            r.status(),
            529,
            "the caller still sees the provider's answer"
        );
    }
    assert_eq!(breaker.state(), State::Open);

    clock.advance(15_000);
    let hits = provider.hits();
    let ready = ServiceExt::<Request<Body>>::ready(&mut svc).await;
    assert!(ready.is_ok(), "poll_ready does not report the open circuit");
    match ready.unwrap().call(request()).await {
        Err(Error::Rejected(r)) => {
            assert_eq!(r.reason, RejectReason::Open);
            assert_eq!(r.retry_after_ms, 45_000);
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(provider.hits(), hits, "nothing was sent");

    // Liveness: after the open period a probe goes through and closes it.
    clock.advance(45_000);
    let r = send(&mut svc).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
}

/// The layer on an axum `Router` in one line (`answer_503`): the handlers' 529s open the
/// breaker, an OPEN circuit answers 503 with `Retry-After` without running the handler, served
/// over real HTTP on 127.0.0.1, and (liveness) the route answers again after the open period.
#[tokio::test]
async fn the_tower_layer_goes_on_an_axum_router_in_one_line_and_answers_503() {
    let provider = Provider::new();
    let clock = ManualClock::new(Timestamp(1_700_000_000_000));
    let breaker = Arc::new(CircuitBreaker::new("anthropic", open_after(2), clock.clone()).unwrap());
    // The gateway: its handler calls the provider; the breaker guards the route.
    let app = provider
        .router()
        .layer(BreakerLayer::new(Arc::clone(&breaker)).answer_503());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();
    let get = || http.post(format!("http://{addr}/v1/messages")).send();

    provider.cue([Answer::status(529), Answer::status(529)]);
    for _ in 0..2 {
        assert_eq!(get().await.unwrap().status(), 529);
    }
    assert_eq!(breaker.state(), State::Open);
    let hits = provider.hits();
    clock.advance(10_500);
    let refused = get().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "50", "49.5 s rounded up");
    assert_eq!(provider.hits(), hits, "the handler did not run");

    clock.advance(50_000);
    assert_eq!(get().await.unwrap().status(), 200);
    assert_eq!(breaker.state(), State::Closed);
    server.abort();
}

/// A time-out inside the layer (`tower::timeout`) is a failure; a caller that drops the response
/// future while the provider hangs settles the call as ignored, freeing the probe slot at once.
#[tokio::test]
async fn the_tower_layer_counts_timeouts_and_forgets_dropped_calls() {
    let provider = Provider::new();
    let clock = ManualClock::new(Timestamp(1_700_000_000_000));
    let breaker = Arc::new(CircuitBreaker::new("openai", open_after(1), clock.clone()).unwrap());
    let mut svc = ServiceBuilder::new()
        .layer(BreakerLayer::new(Arc::clone(&breaker)))
        .timeout(Duration::from_millis(50))
        .service(provider.router());

    provider.cue([Answer::status(200).slow(500)]);
    let r = send(&mut svc).await;
    assert!(matches!(r, Err(Error::Inner(_))), "{r:?}");
    assert_eq!(breaker.state(), State::Open, "the time-out counted");

    clock.advance(60_000);
    provider.cue([Answer::status(200).slow(10_000)]);
    let probe = ServiceExt::<Request<Body>>::ready(&mut svc)
        .await
        .unwrap()
        .call(request());
    assert!(tokio::time::timeout(Duration::from_millis(20), probe)
        .await
        .is_err());
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(
        breaker.core().probes_in_flight(),
        0,
        "the dropped probe freed its slot"
    );
    let r = send(&mut svc).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
}

/// The layer's counting overridden: here every 4xx counts too.
#[tokio::test]
async fn the_tower_layer_counts_as_told() {
    let provider = Provider::new();
    let clock = ManualClock::new(Timestamp(0));
    let breaker = Arc::new(CircuitBreaker::new("tool", open_after(1), clock).unwrap());
    let layer = BreakerLayer::new(Arc::clone(&breaker)).classify_with(|status, _| {
        if status >= 400 {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    });
    let svc = ServiceBuilder::new()
        .layer(layer)
        .service(provider.router());
    provider.cue([Answer::status(404)]);
    let r = svc.oneshot(request()).await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(breaker.state(), State::Open);
}

// --- The reqwest middleware ---

fn client(middleware: BreakerMiddleware<SystemClock>) -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build()
}

fn breaker(failures: u32) -> Arc<CircuitBreaker<SystemClock>> {
    Arc::new(CircuitBreaker::new("openai", open_after(failures), SystemClock).unwrap())
}

#[tokio::test]
async fn the_middleware_opens_on_529_ignores_400_and_refuses_without_sending() {
    let provider = Provider::new();
    let url = format!("http://{}/v1/chat/completions", provider.serve().await);
    let b = breaker(2);
    let http = client(BreakerMiddleware::new(Arc::clone(&b)));

    provider.cue((0..4).map(|_| Answer::status(400)));
    for _ in 0..4 {
        assert_eq!(http.post(&url).send().await.unwrap().status(), 400);
    }
    assert_eq!(b.state(), State::Closed);

    provider.cue([Answer::status(529), Answer::status(529)]);
    for _ in 0..2 {
        assert_eq!(http.post(&url).send().await.unwrap().status(), 529);
    }
    assert_eq!(b.state(), State::Open);
    let hits = provider.hits();
    let err = http.post(&url).send().await.unwrap_err();
    let r = rejection(&err).expect("the breaker's refusal");
    assert!(r.retry_after_ms > 59_000, "{r:?}");
    assert_eq!(provider.hits(), hits, "an open circuit sends nothing");

    // A refused connection is a failure too.
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    let b = breaker(1);
    let http = client(BreakerMiddleware::new(Arc::clone(&b)));
    assert!(http.get(&dead_url).send().await.is_err());
    assert_eq!(b.state(), State::Open);
}

/// Retry-After is honoured: the wait asked of the runtime is the server's (12 s, longer than the
/// backoff), `retry-after-ms` is read first, and a wait longer than `max_retry_after_ms` is not
/// waited at all. `x-should-retry: false` stops the retries of a 503.
#[tokio::test]
async fn the_middleware_retries_after_what_the_server_asks() {
    let provider = Provider::new();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    let b = breaker(100);
    let (slept, sleep) = recording_sleep();
    let policy = RetryPolicy::new()
        .with_base_delay_ms(100)
        .with_max_attempts(4);
    let http = client(
        BreakerMiddleware::new(Arc::clone(&b))
            .with_retry(policy, sleep)
            .unwrap(),
    );

    provider.cue([
        Answer::status(429).header("retry-after", "12"),
        Answer::status(529)
            .header("retry-after-ms", "1500")
            .header("retry-after", "30"),
        Answer::status(200).body(r#"{"ok":true}"#),
    ]);
    let r = http.post(&url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), r#"{"ok":true}"#);
    assert_eq!(*slept.lock().unwrap(), [12_000, 1_500]);
    assert_eq!(provider.hits(), 3);

    slept.lock().unwrap().clear();
    provider.cue([Answer::status(429).header("retry-after", "3600")]);
    assert_eq!(http.post(&url).send().await.unwrap().status(), 429);
    assert!(
        slept.lock().unwrap().is_empty(),
        "an hour is past max_retry_after_ms"
    );
    assert_eq!(provider.hits(), 4);

    provider.cue([Answer::status(503).header("x-should-retry", "false")]);
    assert_eq!(http.post(&url).send().await.unwrap().status(), 503);
    assert_eq!(provider.hits(), 5, "the server said not to retry");

    provider.cue([
        Answer::status(400).header("x-should-retry", "true"),
        Answer::status(200),
    ]);
    assert_eq!(http.post(&url).send().await.unwrap().status(), 200);
    assert_eq!(provider.hits(), 7, "the server said to retry");

    // A body that cannot be copied (a stream) is sent once.
    provider.cue([Answer::status(503)]);
    let stream = futures_stream_body();
    let r = http.post(&url).body(stream).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(provider.hits(), 8);
}

fn futures_stream_body() -> reqwest::Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tokio::spawn(async move {
        let _ = tx.send(Ok(b"{}".to_vec())).await;
    });
    reqwest::Body::wrap(ChannelBody(rx))
}

/// A streaming request body (an `http_body::Body` over a channel).
struct ChannelBody(tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>);

impl http_body::Body for ChannelBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(|v| http_body::Frame::data(bytes::Bytes::from(v)))))
    }
}

/// A request the caller gives up on while the provider hangs settles as ignored.
#[tokio::test]
async fn the_middleware_forgets_a_request_its_caller_dropped() {
    let provider = Provider::new();
    let url = format!("http://{}/v1/messages", provider.serve().await);
    let b = breaker(1);
    let http = client(BreakerMiddleware::new(Arc::clone(&b)));
    provider.cue([Answer::status(200).slow(5_000)]);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), http.post(&url).send())
            .await
            .is_err()
    );
    let stats = b.stats();
    assert_eq!((stats.admitted, stats.ignored, stats.failures), (1, 1, 0));
    assert_eq!(b.state(), State::Closed);
}

// --- The providers' own answers ---

/// Every JSON error answer of tests/fixtures/llm (status, headers, body), by name.
fn corpus() -> Vec<(String, Answer)> {
    llm::corpus()
        .iter()
        .filter(|t| t.get("body").is_some())
        .map(|t| {
            let headers = t["headers"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            let answer = Answer {
                status: t["status"].as_u64().unwrap() as u16,
                headers,
                body: t["body"].as_str().unwrap().to_string(),
                delay_ms: 0,
            };
            (t["name"].as_str().unwrap().to_string(), answer)
        })
        .collect()
}

/// Each provider answer through a real reqwest client and the middleware, 3 attempts allowed:
/// retried (3 requests) or not (1), counted by the breaker or not — as the JavaScript layer
/// takes the same answers through the official SDKs (tests/js/llm-errors.test.mjs).
#[tokio::test]
async fn the_providers_error_answers_are_retried_and_counted_by_the_llm_rules() {
    // (name, retried, counted)
    let expected: &[(&str, bool, bool)] = &[
        ("anthropicBilling402", false, true),
        ("anthropicConflict409", true, true),
        ("anthropicCreditBalance400", false, true),
        ("anthropicOverloaded529", true, true),
        ("anthropicPromptTooLong400", false, false),
        ("anthropicPrefillRefused400", false, false),
        ("anthropicRateLimit429", true, true),
        ("anthropicSpendCap429", false, true),
        ("anthropicSpendLimit400", false, true),
        ("openaiBillingHardLimit400", false, true),
        ("openaiBillingNotActive429", false, true),
        ("openaiConflict409", true, true),
        ("openaiContentPolicyViolation400", false, false),
        ("openaiContextLengthExceeded400", false, false),
        ("openaiCreditBalanceExhausted429", false, true),
        ("openaiInsufficientQuota429", false, true),
        ("openaiInvalidPrompt400", false, false),
        ("openaiOrganizationSpendLimit429", false, true),
        ("openaiProjectSpendLimit429", false, true),
        ("openaiRateLimit429", true, true),
        ("gemini429PerDay", false, true),
        ("gemini429PerMinute", true, true),
    ];
    let corpus = corpus();
    let mut names: Vec<&str> = corpus.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let mut listed: Vec<&str> = expected.iter().map(|e| e.0).collect();
    listed.sort_unstable();
    assert_eq!(
        names, listed,
        "every JSON answer of the corpus has its expectation here"
    );

    let provider = Provider::new();
    let url = format!("http://{}/v1/any", provider.serve().await);
    let mut wrong = Vec::new();
    for (name, answer) in &corpus {
        let &(_, retried, counted) = expected.iter().find(|e| e.0 == name).unwrap();
        let b = breaker(1);
        let http = client(BreakerMiddleware::new(Arc::clone(&b)));
        // A breaker that opens on one failure would refuse the retries: retry on a second one.
        let policy = RetryPolicy::new().with_max_attempts(3);
        let b2 = Arc::new(CircuitBreaker::new("openai", open_after(1000), SystemClock).unwrap());
        let http2 = client(
            BreakerMiddleware::new(Arc::clone(&b2))
                .with_retry(policy, recording_sleep().1)
                .unwrap(),
        );

        provider.cue([answer.clone()]);
        let r = http.post(&url).send().await;
        let was_counted = b.stats().failures == 1;
        let body_intact = match r {
            Ok(resp) => resp.text().await.unwrap() == answer.body,
            Err(_) => false,
        };
        let before = provider.hits();
        provider.cue([answer.clone(), answer.clone(), answer.clone()]);
        let _ = http2.post(&url).send().await;
        let requests = provider.hits() - before;
        provider.cued.lock().unwrap().clear();
        let was_retried = requests == 3;
        if (was_retried, was_counted, body_intact) != (retried, counted, true) {
            wrong.push(format!(
                "{name}: retried {was_retried} ({requests} requests), counted {was_counted}, body intact {body_intact}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
