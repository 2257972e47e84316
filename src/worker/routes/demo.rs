//! `/app/*`: a small demonstration app guarding calls to `DEMO_UPSTREAM` (the primary model)
//! through [`SharedBreaker`] (`DEMO_MODE = "shared"`, the default) or a per-isolate [`Breaker`]
//! (`DEMO_MODE = "local"`), for the end-to-end tests, measurements and the live demo. Off unless
//! `DEMO_UPSTREAM` is set.
//!
//! Each `/app/call` has a deadline, `DEMO_DEADLINE_MS` (default 10 s): the primary may use all of
//! it, and a call still unanswered then is abandoned and counts as a failure. When the breaker
//! refuses the call, or the primary fails, the app asks `DEMO_BACKUP` (a backup model, if set)
//! with whatever time is left. The answer says which of them answered (`answered_by`); `result`
//! is the primary's outcome (`ok`, `failed` or `rejected`).
//!
//! `/app/call?abandon_ms=N` is an app with a time-out of its own: it drops the guarded call
//! (admission and primary) after `N` ms, as a `select!` with a timer does, and answers
//! `{"result":"abandoned"}` without asking the backup.

use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;

use serde::Serialize;
use worker::{
    AbortController, Delay, Env, Fetch, Method, ObjectNamespace, Request, Response, Result,
};

use super::http::{error_response, json_response, load_breakers};
use super::BINDING;
use crate::breaker::{Breaker, Outcome, State};
use crate::clock::Timestamp;
use crate::host::facade::Error;
use crate::worker::client::{first, SharedBreaker};
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

/// Where `/app/call` goes, and how long it may take.
struct Targets {
    primary: String,
    backup: Option<String>,
    deadline_ms: u64,
}

/// `DEMO_DEADLINE_MS` when it is not set.
const DEFAULT_DEADLINE_MS: u64 = 10_000;

fn targets(env: &Env) -> core::result::Result<Targets, String> {
    let primary = env
        .var("DEMO_UPSTREAM")
        .map(|v| v.to_string())
        .map_err(|_| String::from("off"))?;
    let backup = env.var("DEMO_BACKUP").ok().map(|v| v.to_string());
    let deadline_ms = match env.var("DEMO_DEADLINE_MS") {
        Ok(v) => v
            .to_string()
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| String::from("DEMO_DEADLINE_MS: expected a positive integer"))?,
        Err(_) => DEFAULT_DEADLINE_MS,
    };
    Ok(Targets {
        primary,
        backup,
        deadline_ms,
    })
}

fn demo(env: &Env) -> core::result::Result<(Rc<DemoApp>, Targets), String> {
    let targets = targets(env)?;
    let name = env
        .var("DEMO_BREAKER")
        .map(|v| v.to_string())
        .map_err(|_| String::from("DEMO_BREAKER is not set"))?;
    let existing = DEMO.with(|d| d.borrow().clone());
    if let Some(app) = existing {
        return Ok((app, targets));
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
            .with_local(spec.breaker)
            .with_retry_unreachable_ms(spec.lease_ms);
        let shared = SharedBreaker::new(&name, options).map_err(|e| e.to_string())?;
        let log = events.clone();
        shared.on_event(move |_, e| {
            let text = match e {
                ClientEvent::StateChanged { to, .. } => format!("state:{to}"),
                ClientEvent::Local { .. } => String::from("local"),
                ClientEvent::Recovered => String::from("recovered"),
                ClientEvent::Dropped { outcomes, .. } => format!("dropped:{outcomes}"),
            };
            log.borrow_mut().push(text);
        });
        Guard::Shared(shared)
    };
    let app = Rc::new(DemoApp { guard, events });
    DEMO.with(|d| *d.borrow_mut() = Some(app.clone()));
    Ok((app, targets))
}

#[derive(Serialize)]
struct CallResult {
    result: &'static str,
    status: u16,
    retry_after_ms: u64,
    /// The primary did not answer before the deadline.
    timed_out: bool,
    /// `"primary"`, `"backup"`, or `None` when the user got no answer.
    answered_by: Option<&'static str>,
    state: Option<State>,
    fallback: bool,
    object_requests: u64,
}

/// Why a call to a model gave no usable answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallError {
    /// An error status (5xx or 429).
    Status(u16),
    /// No answer at all: a network error or a bad URL.
    Unreachable,
    /// No answer within the time it was given; the request was aborted.
    TimedOut,
}

impl CallError {
    fn status(self) -> u16 {
        match self {
            CallError::Status(s) => s,
            CallError::Unreachable | CallError::TimedOut => 0,
        }
    }
}

/// Calls `url`, giving up (and aborting the request) at `deadline`; past it, does not call.
async fn upstream_call(url: &str, deadline: Timestamp) -> core::result::Result<u16, CallError> {
    let url = worker::Url::parse(url).map_err(|_| CallError::Unreachable)?;
    let left = deadline.0.saturating_sub(now().0);
    if left == 0 {
        return Err(CallError::TimedOut);
    }
    let controller = AbortController::default();
    let signal = controller.signal();
    let call = async {
        let mut resp = Fetch::Url(url)
            .send_with_signal(&signal)
            .await
            .map_err(|_| CallError::Unreachable)?;
        let status = resp.status_code();
        let _ = resp.bytes().await;
        if status >= 500 || status == 429 {
            Err(CallError::Status(status))
        } else {
            Ok(status)
        }
    };
    let timer = Delay::from(core::time::Duration::from_millis(left));
    match first(call, timer).await {
        Some(result) => result,
        None => {
            controller.abort();
            Err(CallError::TimedOut)
        }
    }
}

/// A timeout is a failure like any other: the breaker opens on stalls as on 529s.
fn classify(r: &core::result::Result<u16, CallError>) -> Outcome {
    match r {
        Ok(s) if *s >= 400 => Outcome::Ignored,
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure,
    }
}

/// The primary, through the breaker.
async fn guarded_call(
    app: &DemoApp,
    ns: Option<&ObjectNamespace>,
    url: &str,
    deadline: Timestamp,
) -> Result<core::result::Result<u16, Error<CallError>>> {
    Ok(match (&app.guard, ns) {
        (Guard::Shared(b), Some(ns)) => {
            b.call_classified(ns, upstream_call(url, deadline), classify)
                .await
        }
        (Guard::Local(b), _) => {
            let admission = b.borrow_mut().acquire(now());
            match admission.result {
                Ok(permit) => {
                    let r = upstream_call(url, deadline).await;
                    let _ = b.borrow_mut().report(now(), permit, classify(&r));
                    r.map_err(Error::Inner)
                }
                Err(rej) => Err(Error::Rejected(rej)),
            }
        }
        (Guard::Shared(_), None) => return Err(worker::Error::RustError("no binding".into())),
    })
}

/// `/app/*`: the app of `DEMO_*` (404 when `DEMO_UPSTREAM` is not set), one route per path.
pub(super) async fn app(req: Request, env: &Env, parts: &[&str]) -> Result<Response> {
    let (app, targets) = match demo(env) {
        Ok(x) => x,
        Err(e) if e == "off" => return error_response(404, "not_found", "no such route"),
        Err(e) => return error_response(500, "misconfigured", &e),
    };
    let ns = match &app.guard {
        Guard::Shared(_) => Some(env.durable_object(BINDING)?),
        Guard::Local(_) => None,
    };
    match (parts, req.method()) {
        (["app", "call"], Method::Post) => app_call(&req, &app, ns.as_ref(), &targets).await,
        (["app", "bench"], Method::Post) => app_bench(&req, &app, ns.as_ref()).await,
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

/// The query parameter `key` of `req`, if it is there and reads as a `T`.
fn query<T: core::str::FromStr>(req: &Request, key: &str) -> Result<Option<T>> {
    Ok(req
        .url()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.parse::<T>().ok()))
}

/// `POST /app/call[?abandon_ms=N]`: the primary through the breaker, then the backup (if set)
/// when the breaker refused the call or the primary failed; dropped after `N` ms when asked.
async fn app_call(
    req: &Request,
    app: &DemoApp,
    ns: Option<&ObjectNamespace>,
    targets: &Targets,
) -> Result<Response> {
    let deadline = Timestamp(now().0.saturating_add(targets.deadline_ms));
    let abandon_ms = query::<u64>(req, "abandon_ms")?;
    let call = guarded_call(app, ns, &targets.primary, deadline);
    let result = match abandon_ms {
        Some(ms) => match first(call, Delay::from(core::time::Duration::from_millis(ms))).await {
            Some(result) => result?,
            None => return json_response(200, String::from(r#"{"result":"abandoned"}"#)),
        },
        None => call.await?,
    };
    let answered_by = match (&result, &targets.backup) {
        (Ok(_), _) => Some("primary"),
        (Err(_), Some(backup)) => upstream_call(backup, deadline).await.ok().map(|_| "backup"),
        (Err(_), None) => None,
    };
    let (state, requests) = app_state(app);
    let fallback = match &app.guard {
        Guard::Shared(b) => b.deciding_locally(),
        Guard::Local(_) => false,
    };
    let (result, status, retry_after_ms, timed_out) = match result {
        Ok(status) => ("ok", status, 0, false),
        Err(Error::Inner(e)) => ("failed", e.status(), 0, e == CallError::TimedOut),
        Err(Error::Rejected(r)) => ("rejected", 0, r.retry_after_ms, false),
    };
    let body = CallResult {
        result,
        status,
        retry_after_ms,
        timed_out,
        answered_by,
        state,
        fallback,
        object_requests: requests,
    };
    json_response(200, serde_json::to_string(&body).unwrap_or_default())
}

/// `POST /app/bench[?n=N]`: `N` calls (default 1 000, at most 10^6) that do nothing, through the
/// shared breaker; how many it admitted and refused.
async fn app_bench(req: &Request, app: &DemoApp, ns: Option<&ObjectNamespace>) -> Result<Response> {
    let n = query::<u32>(req, "n")?.unwrap_or(1_000).min(1_000_000);
    let (mut ok, mut rejected) = (0u32, 0u32);
    for _ in 0..n {
        let r = match (&app.guard, ns) {
            (Guard::Shared(b), Some(ns)) => b.call(ns, async { Ok::<(), ()>(()) }).await,
            _ => Ok(()),
        };
        if r.is_ok() {
            ok += 1;
        } else {
            rejected += 1;
        }
    }
    let (state, requests) = app_state(app);
    let body = serde_json::json!({ "ok": ok, "rejected": rejected, "state": state, "object_requests": requests });
    json_response(200, body.to_string())
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
        Guard::Shared(b) => (b.unacknowledged(), b.deciding_locally()),
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
