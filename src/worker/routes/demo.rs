//! `/app/*`: a small demonstration app guarding calls to `DEMO_UPSTREAM` through
//! [`SharedBreaker`] (`DEMO_MODE = "shared"`, the default) or a per-isolate [`Breaker`]
//! (`DEMO_MODE = "local"`), for the end-to-end tests and measurements. Off unless
//! `DEMO_UPSTREAM` is set.

use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;

use serde::Serialize;
use worker::{Env, Fetch, Method, Request, Response, Result};

use super::http::{error_response, json_response, load_breakers};
use super::BINDING;
use crate::breaker::{Breaker, Outcome, State};
use crate::clock::Timestamp;
use crate::error::Error;
use crate::worker::client::SharedBreaker;
use crate::worker::lease::{ClientEvent, LeaseOptions};

enum Guard {
    Shared(SharedBreaker),
    Local(Box<RefCell<Breaker>>),
}

struct DemoApp {
    guard: Guard,
    events: Rc<RefCell<Vec<String>>>,
}

std::thread_local! {
    static DEMO: RefCell<Option<Rc<DemoApp>>> = const { RefCell::new(None) };
}

fn demo(env: &Env) -> core::result::Result<(Rc<DemoApp>, String, String), String> {
    let upstream = env
        .var("DEMO_UPSTREAM")
        .map(|v| v.to_string())
        .map_err(|_| String::from("off"))?;
    let name = env
        .var("DEMO_BREAKER")
        .map(|v| v.to_string())
        .map_err(|_| String::from("DEMO_BREAKER is not set"))?;
    let existing = DEMO.with(|d| d.borrow().clone());
    if let Some(app) = existing {
        return Ok((app, upstream, name));
    }
    let breakers = load_breakers(env)?;
    let spec = breakers
        .get(&name)
        .copied()
        .ok_or_else(|| String::from("DEMO_BREAKER is not configured in BREAKERS"))?;
    let mode = env
        .var("DEMO_MODE")
        .map(|v| v.to_string())
        .unwrap_or_default();
    let fail_closed = env
        .var("DEMO_FAIL_CLOSED")
        .map(|v| v.to_string() == "true")
        .unwrap_or(false);
    let events = Rc::new(RefCell::new(Vec::new()));
    let guard = if mode == "local" {
        Guard::Local(Box::new(RefCell::new(
            Breaker::new(spec.breaker).map_err(|e| e.to_string())?,
        )))
    } else {
        let options = LeaseOptions::new()
            .with_fail_closed(fail_closed)
            .with_fallback(spec.breaker)
            .with_retry_unreachable_ms(spec.lease_ms);
        let shared = SharedBreaker::new(&name, options).map_err(|e| e.to_string())?;
        let log = events.clone();
        shared.on_event(move |_, e| {
            let text = match e {
                ClientEvent::StateChanged { to, .. } => format!("state:{to}"),
                ClientEvent::Fallback { .. } => String::from("fallback"),
                ClientEvent::Recovered => String::from("recovered"),
                ClientEvent::Dropped { outcomes, .. } => format!("dropped:{outcomes}"),
            };
            log.borrow_mut().push(text);
        });
        Guard::Shared(shared)
    };
    let app = Rc::new(DemoApp { guard, events });
    DEMO.with(|d| *d.borrow_mut() = Some(app.clone()));
    Ok((app, upstream, name))
}

#[derive(Serialize)]
struct CallResult {
    result: &'static str,
    status: u16,
    retry_after_ms: u64,
    state: Option<State>,
    fallback: bool,
    object_requests: u64,
}

async fn upstream_call(url: &str) -> core::result::Result<u16, u16> {
    let url = match worker::Url::parse(url) {
        Ok(u) => u,
        Err(_) => return Err(0),
    };
    match Fetch::Url(url).send().await {
        Ok(mut resp) => {
            let status = resp.status_code();
            let _ = resp.bytes().await;
            if status >= 500 || status == 429 {
                Err(status)
            } else {
                Ok(status)
            }
        }
        Err(_) => Err(0),
    }
}

fn classify(r: &core::result::Result<u16, u16>) -> Outcome {
    match r {
        Ok(s) if *s >= 400 => Outcome::Ignored,
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure,
    }
}

pub(super) async fn app(req: Request, env: &Env, parts: &[&str]) -> Result<Response> {
    let (app, upstream, _name) = match demo(env) {
        Ok(x) => x,
        Err(e) if e == "off" => return error_response(404, "not_found", "no such route"),
        Err(e) => return error_response(500, "misconfigured", &e),
    };
    let ns = match &app.guard {
        Guard::Shared(_) => Some(env.durable_object(BINDING)?),
        Guard::Local(_) => None,
    };
    match (parts, req.method()) {
        (["app", "call"], Method::Post) => {
            let (result, fallback) = match (&app.guard, &ns) {
                (Guard::Shared(b), Some(ns)) => {
                    let r = b
                        .call_classified(ns, upstream_call(&upstream), classify)
                        .await;
                    (r, b.in_fallback())
                }
                (Guard::Local(b), _) => {
                    let admission = b.borrow_mut().acquire(now());
                    let r = match admission.result {
                        Ok(permit) => {
                            let r = upstream_call(&upstream).await;
                            let _ = b.borrow_mut().report(now(), permit, classify(&r));
                            r.map_err(Error::Inner)
                        }
                        Err(rej) => Err(Error::Rejected(rej)),
                    };
                    (r, false)
                }
                _ => return error_response(500, "internal", "no binding"),
            };
            let (state, requests) = app_state(&app);
            let body = match result {
                Ok(status) => CallResult {
                    result: "ok",
                    status,
                    retry_after_ms: 0,
                    state,
                    fallback,
                    object_requests: requests,
                },
                Err(Error::Inner(status)) => CallResult {
                    result: "failed",
                    status,
                    retry_after_ms: 0,
                    state,
                    fallback,
                    object_requests: requests,
                },
                Err(Error::Rejected(r)) => CallResult {
                    result: "rejected",
                    status: 0,
                    retry_after_ms: r.retry_after_ms,
                    state,
                    fallback,
                    object_requests: requests,
                },
            };
            json_response(200, serde_json::to_string(&body).unwrap_or_default())
        }
        (["app", "bench"], Method::Post) => {
            let n = req
                .url()?
                .query_pairs()
                .find(|(k, _)| k == "n")
                .and_then(|(_, v)| v.parse::<u32>().ok())
                .unwrap_or(1_000)
                .min(1_000_000);
            let (mut ok, mut rejected) = (0u32, 0u32);
            for _ in 0..n {
                let r = match (&app.guard, &ns) {
                    (Guard::Shared(b), Some(ns)) => b.call(ns, async { Ok::<(), ()>(()) }).await,
                    _ => Ok(()),
                };
                if r.is_ok() {
                    ok += 1;
                } else {
                    rejected += 1;
                }
            }
            let (state, requests) = app_state(&app);
            let body = serde_json::json!({ "ok": ok, "rejected": rejected, "state": state, "object_requests": requests });
            json_response(200, body.to_string())
        }
        (["app", "flush"], Method::Post) => {
            if let (Guard::Shared(b), Some(ns)) = (&app.guard, &ns) {
                let _ = b.flush(ns).await;
            }
            app_stats(&app)
        }
        (["app", "stats"], Method::Get) => app_stats(&app),
        _ => error_response(404, "not_found", "no such route"),
    }
}

fn now() -> Timestamp {
    Timestamp(worker::Date::now().as_millis())
}

fn app_state(app: &DemoApp) -> (Option<State>, u64) {
    match &app.guard {
        Guard::Shared(b) => (b.known_state(), b.object_requests()),
        Guard::Local(b) => (Some(b.borrow().state_at(now())), 0),
    }
}

fn app_stats(app: &DemoApp) -> Result<Response> {
    let (state, requests) = app_state(app);
    let (unacked, fallback) = match &app.guard {
        Guard::Shared(b) => (b.unacknowledged(), b.in_fallback()),
        Guard::Local(_) => (0, false),
    };
    let body = serde_json::json!({
        "state": state,
        "object_requests": requests,
        "unacknowledged": unacked,
        "fallback": fallback,
        "events": app.events.borrow().clone(),
    });
    json_response(200, body.to_string())
}
