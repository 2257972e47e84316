//! An axum gateway whose `/chat` route calls an LLM provider through reqwest, with one breaker
//! shared by every request and retries that honour Retry-After. The provider here is a fake on
//! 127.0.0.1 that goes down (529 Overloaded, as Anthropic answers it) and comes back; the
//! example drives the gateway through the outage, prints what it saw, and exits non-zero if the
//! breaker did not fail fast, serve the fallback, spare the provider and recover by itself.
//!
//! Run with `cargo run --example llm_gateway --features tower,reqwest-middleware`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State as Shared;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use breakwater::reqwest::{rejection, BreakerMiddleware};
use breakwater::{BreakerConfig, CircuitBreaker, RetryPolicy, State, SystemClock, TripRule};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

/// The fake provider: overloaded while `down`, counting the requests it gets.
#[derive(Clone, Default)]
struct Provider {
    down: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
}

async fn messages(Shared(p): Shared<Provider>) -> Response {
    p.requests.fetch_add(1, Ordering::SeqCst);
    if p.down.load(Ordering::SeqCst) {
        let status = StatusCode::from_u16(529).expect("529 is a status");
        return (status, [("content-type", "application/json")], OVERLOADED).into_response();
    }
    Json(
        serde_json::json!({ "type": "message", "content": [{ "type": "text", "text": "Hello!" }] }),
    )
    .into_response()
}

/// The gateway's state: the provider's address and the guarded client.
#[derive(Clone)]
struct Gateway {
    provider: String,
    client: ClientWithMiddleware,
}

/// `/chat`: the provider's answer, or a fallback while the circuit is open.
async fn chat(Shared(g): Shared<Gateway>) -> Response {
    match g.client.post(&g.provider).body("{}").send().await {
        Ok(r) if r.status().is_success() => (StatusCode::OK, "answer").into_response(),
        Ok(r) => (StatusCode::BAD_GATEWAY, format!("provider {}", r.status())).into_response(),
        Err(e) => match rejection(&e) {
            // Fail fast: a canned answer, and when to try again.
            Some(r) => (
                StatusCode::OK,
                [("retry-after-ms", r.retry_after_ms.to_string())],
                "fallback",
            )
                .into_response(),
            None => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
        },
    }
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port on 127.0.0.1");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serves") });
    addr
}

/// Sends `n` requests to the gateway from 16 tasks at once; counts answers, fallbacks, errors.
async fn burst(url: &str, n: usize) -> (usize, usize, usize) {
    let client = reqwest::Client::new();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_string());
            tokio::spawn(async move {
                let mut counts = (0, 0, 0);
                for _ in 0..n / 16 {
                    let text = match client.post(&url).send().await {
                        Ok(r) => r.text().await.unwrap_or_default(),
                        Err(_) => String::new(),
                    };
                    match text.as_str() {
                        "answer" => counts.0 += 1,
                        "fallback" => counts.1 += 1,
                        _ => counts.2 += 1,
                    }
                }
                counts
            })
        })
        .collect();
    let mut total = (0, 0, 0);
    for t in tasks {
        let (a, b, c) = t.await.unwrap_or_default();
        total = (total.0 + a, total.1 + b, total.2 + c);
    }
    total
}

#[tokio::main]
async fn main() {
    let provider = Provider::default();
    let provider_addr = serve(
        Router::new()
            .route("/v1/messages", post(messages))
            .with_state(provider.clone()),
    )
    .await;

    // Five failures within 10 s open the circuit for 1 s; one probe success closes it.
    let config = BreakerConfig::new()
        .with_trip(TripRule::FailuresInWindow {
            threshold: 5,
            window_ms: 10_000,
        })
        .with_open_duration_ms(1_000)
        .with_half_open_success_threshold(1);
    let mut breaker = CircuitBreaker::new("anthropic", config, SystemClock).expect("valid");
    let start = Instant::now();
    breaker.on_transition(move |name, t| {
        println!(
            "{:>6} ms  {name}: {} -> {}",
            start.elapsed().as_millis(),
            t.from,
            t.to
        );
    });
    let breaker = Arc::new(breaker);
    let retries = RetryPolicy::new()
        .with_max_attempts(2)
        .with_base_delay_ms(20);
    let middleware = BreakerMiddleware::new(Arc::clone(&breaker))
        .with_retry(retries, |ms| tokio::time::sleep(Duration::from_millis(ms)))
        .expect("a valid policy");
    let gateway = Gateway {
        provider: format!("http://{provider_addr}/v1/messages"),
        client: ClientBuilder::new(reqwest::Client::new())
            .with(middleware)
            .build(),
    };
    let gateway_addr = serve(Router::new().route("/chat", post(chat)).with_state(gateway)).await;
    let url = format!("http://{gateway_addr}/chat");

    let healthy = burst(&url, 160).await;
    println!("healthy:   {healthy:?} (answers, fallbacks, errors)");

    provider.down.store(true, Ordering::SeqCst);
    let before = provider.requests.load(Ordering::SeqCst);
    let outage = burst(&url, 1_600).await;
    let sent = provider.requests.load(Ordering::SeqCst) - before;
    println!("outage:    {outage:?}; the provider got {sent} of the gateway's 1600 requests");

    provider.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    // The first requests find it HALF_OPEN: one probe goes, the others get the fallback until
    // it has closed the circuit.
    let recovering = burst(&url, 160).await;
    println!("recovering: {recovering:?}");
    let recovered = burst(&url, 160).await;
    println!("recovered: {recovered:?}; breaker {}", breaker.state());

    let mut failed = Vec::new();
    if healthy != (160, 0, 0) {
        failed.push("not every call went through while healthy");
    }
    if outage.1 < 1_500 {
        failed.push("the breaker did not serve the fallback through the outage");
    }
    if sent > 100 {
        failed.push("the failing provider kept being called");
    }
    if recovering.2 > 0 || recovered != (160, 0, 0) || breaker.state() != State::Closed {
        failed.push("the breaker did not recover by itself");
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("FAILED: {f}");
        }
        std::process::exit(1);
    }
    println!("ok: failed fast, served the fallback, spared the provider, recovered");
}
