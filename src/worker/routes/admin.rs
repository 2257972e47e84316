//! `GET /metrics`, `GET /admin/breakers/<name>`, `POST /admin/breakers/<name>/isolate`,
//! `POST /admin/breakers/<name>/reset`, behind the `ADMIN_TOKEN` secret.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use super::http::{bearer, error_response, json_response, load_breakers, not_found, unauthorized};
use super::BINDING;
use crate::breaker::State;
use crate::facade::validate_name;
use crate::worker::config::Breakers;
use crate::worker::protocol::{StateView, INCIDENT_BOUNDS_S};

pub(super) async fn admin(req: Request, env: &Env, parts: &[&str]) -> Result<Response> {
    // Without the secret these routes are off.
    match bearer(&req, env, "ADMIN_TOKEN") {
        None => return not_found(),
        Some(false) => return unauthorized(),
        Some(true) => {}
    }
    let breakers = match load_breakers(env) {
        Ok(b) => b,
        Err(e) => {
            worker::console_error!("breakwater: {e}");
            return error_response(500, "misconfigured", "BREAKERS is not valid");
        }
    };
    let method = req.method();
    match (parts, method) {
        (["metrics"], Method::Get) => {
            let mut views: Vec<StateView> = Vec::new();
            for name in breakers.keys() {
                match object_call(env, name, "state", Method::Get).await {
                    Ok((200, text)) => match serde_json::from_str::<StateView>(&text) {
                        Ok(v) => views.push(v),
                        Err(_) => {
                            return error_response(502, "bad_gateway", "unreadable object answer")
                        }
                    },
                    Ok((status, text)) => return json_response(status, text),
                    Err(_) => {
                        return error_response(503, "unavailable", "breaker object unreachable")
                    }
                }
            }
            let prometheus = req
                .url()
                .map(|u| {
                    u.query_pairs()
                        .any(|(k, v)| k == "format" && v == "prometheus")
                })
                .unwrap_or(false);
            if prometheus {
                let headers = Headers::new();
                headers.set("content-type", "text/plain; version=0.0.4")?;
                return Ok(Response::ok(render_prometheus(&views))?.with_headers(headers));
            }
            let body = serde_json::to_string(&views)
                .map_err(|e| worker::Error::RustError(e.to_string()))?;
            json_response(200, body)
        }
        (["admin", "breakers", name], Method::Get) => {
            forward(env, &breakers, name, "state", Method::Get).await
        }
        (["admin", "breakers", name, op @ ("isolate" | "reset")], Method::Post) => {
            forward(env, &breakers, name, op, Method::Post).await
        }
        (["metrics"], _)
        | (["admin", "breakers", _], _)
        | (["admin", "breakers", _, "isolate" | "reset"], _) => {
            error_response(405, "method_not_allowed", "wrong method for this route")
        }
        _ => error_response(404, "not_found", "no such route"),
    }
}

/// The objects' state in the Prometheus text format, with the series names of
/// `breakwater::metrics` (counts since each object's record began): `breakwater_state`,
/// `breakwater_opened_total`, `breakwater_calls_total`, `breakwater_incident_seconds`, plus
/// `breakwater_probes_granted_total`. `breakwater_fallbacks_total`, `breakwater_retries` and
/// `breakwater_retry_delay_seconds` are not here: fallbacks and retries happen in the callers
/// (the `SharedCircuitBreaker` client, `withRetry`), which the object never sees; expose them
/// from the callers (`breakwater/prometheus`, or `BreakerMetrics` in Rust).
pub fn render_prometheus(views: &[StateView]) -> String {
    use core::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "# TYPE breakwater_state gauge");
    for v in views {
        for (state, label) in [
            (State::Closed, "closed"),
            (State::Open, "open"),
            (State::HalfOpen, "half_open"),
        ] {
            let on = u8::from(v.lease.state == state);
            let _ = writeln!(
                out,
                "breakwater_state{{breaker=\"{}\",state=\"{label}\"}} {on}",
                v.name
            );
        }
    }
    let _ = writeln!(out, "# TYPE breakwater_opened_total counter");
    for v in views {
        let _ = writeln!(
            out,
            "breakwater_opened_total{{breaker=\"{}\"}} {}",
            v.name, v.stats.opened
        );
    }
    let _ = writeln!(out, "# TYPE breakwater_calls_total counter");
    for v in views {
        for (result, n) in [
            ("success", v.stats.successes),
            ("failure", v.stats.failures),
            ("ignored", v.stats.ignored),
            ("rejected", v.stats.rejected),
        ] {
            let _ = writeln!(
                out,
                "breakwater_calls_total{{breaker=\"{}\",result=\"{result}\"}} {n}",
                v.name
            );
        }
    }
    let _ = writeln!(out, "# TYPE breakwater_incident_seconds histogram");
    for v in views {
        let c = &v.counters;
        let mut acc = 0u64;
        for (bound, n) in INCIDENT_BOUNDS_S.iter().zip(c.incidents.iter()) {
            acc = acc.saturating_add(*n);
            let _ = writeln!(
                out,
                "breakwater_incident_seconds_bucket{{breaker=\"{}\",le=\"{bound}\"}} {acc}",
                v.name
            );
        }
        let count = c.incidents.iter().fold(0u64, |a, n| a.saturating_add(*n));
        let _ = writeln!(
            out,
            "breakwater_incident_seconds_bucket{{breaker=\"{}\",le=\"+Inf\"}} {count}",
            v.name
        );
        let _ = writeln!(
            out,
            "breakwater_incident_seconds_sum{{breaker=\"{}\"}} {}",
            v.name,
            c.incident_ms as f64 / 1_000.0
        );
        let _ = writeln!(
            out,
            "breakwater_incident_seconds_count{{breaker=\"{}\"}} {count}",
            v.name
        );
    }
    let _ = writeln!(out, "# TYPE breakwater_probes_granted_total counter");
    for v in views {
        let _ = writeln!(
            out,
            "breakwater_probes_granted_total{{breaker=\"{}\"}} {}",
            v.name, v.counters.probes_granted
        );
    }
    out
}

async fn forward(
    env: &Env,
    breakers: &Breakers,
    name: &str,
    op: &str,
    method: Method,
) -> Result<Response> {
    if validate_name(name).is_err() || !breakers.contains_key(name) {
        return error_response(404, "not_found", "no breaker of that name is configured");
    }
    match object_call(env, name, op, method).await {
        Ok((status, text)) => json_response(status, text),
        Err(_) => error_response(503, "unavailable", "breaker object unreachable"),
    }
}

async fn object_call(env: &Env, name: &str, op: &str, method: Method) -> Result<(u16, String)> {
    let ns = env.durable_object(BINDING)?;
    let stub = ns.get_by_name(name)?;
    let mut init = RequestInit::new();
    init.with_method(method);
    let req = Request::new_with_init(&format!("https://breaker/{op}"), &init)?;
    let mut resp = stub.fetch_with_request(req).await?;
    let status = resp.status_code();
    Ok((status, resp.text().await?))
}
