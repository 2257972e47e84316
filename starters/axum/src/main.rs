//! An axum service whose `POST /api/summarize` calls an Anthropic-format provider through
//! reqwest, guarded by breakwater:
//!
//! - the provider's breaker (`anthropic`) in the reqwest client's `BreakerMiddleware`: it sees
//!   every attempt, retries 529/429/5xx with backoff (honouring `retry-after`), and refuses at
//!   once while the provider is down;
//! - the route's breaker (`summarize`) in a `BreakerLayer` on the router: it counts the route's
//!   own answers (5xx are failures) and, while OPEN, answers 503 + Retry-After before the handler
//!   runs.
//!
//! A provider failure that survives the retries (a final 529) is an error answer, 503 with
//! Retry-After, never served as the provider's answer.
//!
//! Environment: ANTHROPIC_BASE_URL (default https://api.anthropic.com, without /v1),
//! ANTHROPIC_API_KEY, BIND (default 127.0.0.1:3000), BREAKER_OPEN_MS (default 30000).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use breakwater::reqwest::{rejection, BreakerMiddleware};
use breakwater::tower::BreakerLayer;
use breakwater::{BreakerConfig, CircuitBreaker, RetryPolicy, SystemClock, TripRule};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Clone)]
struct App {
    client: ClientWithMiddleware,
    messages_url: String,
    api_key: String,
}

#[derive(Deserialize)]
struct Summarize {
    text: String,
}

/// A 503 with `Retry-After` (whole seconds, at least 1) and a JSON error.
fn unavailable(retry_after_ms: u64, error: &str) -> Response {
    let seconds = retry_after_ms.div_ceil(1000).max(1);
    let headers = [(header::RETRY_AFTER, seconds.to_string())];
    (StatusCode::SERVICE_UNAVAILABLE, headers, Json(json!({ "error": error }))).into_response()
}

async fn summarize(State(app): State<App>, Json(req): Json<Summarize>) -> Response {
    let body = json!({
        "model": "claude-haiku-4-5",
        "max_tokens": 300,
        "messages": [{ "role": "user", "content": format!("Summarize in two sentences:\n\n{}", req.text) }],
    });
    let sent = app
        .client
        .post(&app.messages_url)
        .header("x-api-key", &app.api_key)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await;
    match sent {
        Ok(reply) if reply.status().is_success() => match reply.json::<Value>().await {
            Ok(message) => {
                let summary = message["content"][0]["text"].as_str().unwrap_or_default();
                Json(json!({ "summary": summary })).into_response()
            }
            Err(e) => (StatusCode::BAD_GATEWAY, Json(json!({ "error": e.to_string() }))).into_response(),
        },
        // The provider's answer after the last retry: a 529 (or 429, 5xx) the breaker counted.
        // It is not the provider's answer to serve: say when to come back (the provider's
        // Retry-After, if it sent one).
        Ok(reply) if reply.status().as_u16() == 529 || reply.status().as_u16() == 429 || reply.status().is_server_error() => {
            let retry_after_ms = reply
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
                .map_or(5_000, |s| s * 1000);
            unavailable(retry_after_ms, &format!("the provider answered {} after retries", reply.status().as_u16()))
        }
        // A 4xx: this request's problem (a bad key, a prompt too long), not an outage.
        Ok(reply) => {
            let status = reply.status().as_u16();
            (StatusCode::BAD_GATEWAY, Json(json!({ "error": format!("the provider answered {status}") }))).into_response()
        }
        Err(e) => match rejection(&e) {
            // The provider's breaker is OPEN: refused at once, no request sent.
            Some(r) => unavailable(r.retry_after_ms, "the provider is unavailable; failing fast"),
            // A transport error (connection refused, reset) after the retries.
            None => unavailable(5_000, &format!("the provider could not be reached: {e}")),
        },
    }
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = env("ANTHROPIC_BASE_URL", "https://api.anthropic.com");
    let base = base.trim_end_matches('/').trim_end_matches("/v1");
    let open_ms: u64 = env("BREAKER_OPEN_MS", "30000").parse()?;

    // 5 failures within a minute open a breaker; after `open_ms` one probe; 2 successes close it.
    let config = BreakerConfig::new()
        .with_trip(TripRule::FailuresInWindow { threshold: 5, window_ms: 60_000 })
        .with_open_duration_ms(open_ms)
        .with_half_open_success_threshold(2);

    // The provider's breaker, with up to 3 attempts per request.
    let anthropic = Arc::new(CircuitBreaker::new("anthropic", config, SystemClock)?);
    let retries = RetryPolicy::new().with_max_attempts(3).with_base_delay_ms(200).with_max_delay_ms(2_000);
    let middleware = BreakerMiddleware::new(Arc::clone(&anthropic))
        .with_retry(retries, |ms| tokio::time::sleep(Duration::from_millis(ms)))?;
    let client = ClientBuilder::new(reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?)
        .with(middleware)
        .build();

    // The route's breaker: its 5xx answers count; while OPEN, a 503 + Retry-After up front.
    let route = Arc::new(CircuitBreaker::new("summarize", config, SystemClock)?);

    let app = App {
        client,
        messages_url: format!("{base}/v1/messages"),
        api_key: env("ANTHROPIC_API_KEY", ""),
    };
    let router = Router::new()
        .route("/api/summarize", post(summarize))
        .layer(BreakerLayer::new(route).answer_503())
        .with_state(app);

    let bind = env("BIND", "127.0.0.1:3000");
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
