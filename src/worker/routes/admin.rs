//! `GET /metrics`, `GET /admin/breakers/<name>`, `POST /admin/breakers/<name>/isolate`,
//! `POST /admin/breakers/<name>/reset`, behind the `ADMIN_TOKEN` secret.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use super::http::{bearer, error_response, json_response, load_breakers, not_found, unauthorized};
use super::BINDING;
use crate::facade::validate_name;
use crate::metrics::{render_series, Buckets, Families, Series};
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

/// The objects' state in the Prometheus text format, written by [`crate::metrics`] with the
/// families an object has ([`Families::OBJECT`], counts since each object's record began):
/// `breakwater_state`, `breakwater_opened_total`, `breakwater_calls_total`,
/// `breakwater_incident_seconds`, plus `breakwater_probes_granted_total`.
/// `breakwater_fallbacks_total`, `breakwater_retries` and `breakwater_retry_delay_seconds` are
/// not here: fallbacks and retries happen in the callers (the `SharedCircuitBreaker` client,
/// `withRetry`), which the object never sees; expose them from the callers
/// (`breakwater/prometheus`, or `BreakerMetrics` in Rust).
pub fn render_prometheus(views: &[StateView]) -> String {
    let bounds = INCIDENT_BOUNDS_S.map(|b| b as f64);
    let series = views.iter().map(|v| {
        let incidents = &v.counters.incidents;
        let (counts, above) = incidents.split_at(bounds.len().min(incidents.len()));
        let buckets = Buckets {
            bounds: &bounds,
            counts,
            overflow: above.iter().fold(0u64, |a, n| a.saturating_add(*n)),
            sum: v.counters.incident_ms as f64 / 1_000.0,
        };
        let mut s = Series::from_stats(v.lease.state, &v.stats, buckets);
        s.probes_granted = Some(v.counters.probes_granted);
        (v.name.as_str(), s)
    });
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = render_series(Families::OBJECT, series, &mut out);
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

#[cfg(test)]
mod tests {
    use super::render_prometheus;
    use crate::worker::protocol::StateView;

    fn view(name: &str, state: &str, opened: u64, incidents: [u64; 11], ms: u64) -> StateView {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "lease": {"state": state, "mode": "automatic", "generation": 3, "lease_ms": 1000,
                      "retry_after_ms": 0, "now": 5},
            "opened_at": null, "open_until": null, "probes_in_flight": 0,
            "stats": {"admitted": 10, "rejected": 4, "successes": 7, "failures": 3, "ignored": 2,
                      "opened": opened},
            "counters": {"incidents": incidents, "incident_ms": ms,
                         "probes_granted": if opened > 0 { 5 } else { 0 }},
            "restore_error": null
        }))
        .unwrap()
    }

    /// The text the Worker wrote with its own writer before it rendered through
    /// `crate::metrics`, byte for byte (one incident of 1–5 s and one above 3600 s).
    #[test]
    fn renders_the_object_series_as_before() {
        let views = [
            view(
                "anthropic",
                "OPEN",
                2,
                [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                3_700_250,
            ),
            view("openai:gpt-4.1/chat", "HALF_OPEN", 0, [0; 11], 0),
        ];
        assert_eq!(render_prometheus(&views), EXPECTED);
        assert_eq!(render_prometheus(&[]), EXPECTED_EMPTY);
    }

    const EXPECTED: &str = "\
# TYPE breakwater_state gauge
breakwater_state{breaker=\"anthropic\",state=\"closed\"} 0
breakwater_state{breaker=\"anthropic\",state=\"open\"} 1
breakwater_state{breaker=\"anthropic\",state=\"half_open\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"closed\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"open\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"half_open\"} 1
# TYPE breakwater_opened_total counter
breakwater_opened_total{breaker=\"anthropic\"} 2
breakwater_opened_total{breaker=\"openai:gpt-4.1/chat\"} 0
# TYPE breakwater_calls_total counter
breakwater_calls_total{breaker=\"anthropic\",result=\"success\"} 7
breakwater_calls_total{breaker=\"anthropic\",result=\"failure\"} 3
breakwater_calls_total{breaker=\"anthropic\",result=\"ignored\"} 2
breakwater_calls_total{breaker=\"anthropic\",result=\"rejected\"} 4
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"success\"} 7
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"failure\"} 3
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"ignored\"} 2
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"rejected\"} 4
# TYPE breakwater_incident_seconds histogram
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"1\"} 0
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"5\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"10\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"30\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"60\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"120\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"300\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"600\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"1800\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"3600\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"+Inf\"} 2
breakwater_incident_seconds_sum{breaker=\"anthropic\"} 3700.25
breakwater_incident_seconds_count{breaker=\"anthropic\"} 2
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"1\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"5\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"10\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"30\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"60\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"120\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"300\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"600\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"1800\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"3600\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"+Inf\"} 0
breakwater_incident_seconds_sum{breaker=\"openai:gpt-4.1/chat\"} 0
breakwater_incident_seconds_count{breaker=\"openai:gpt-4.1/chat\"} 0
# TYPE breakwater_probes_granted_total counter
breakwater_probes_granted_total{breaker=\"anthropic\"} 5
breakwater_probes_granted_total{breaker=\"openai:gpt-4.1/chat\"} 0
";

    const EXPECTED_EMPTY: &str = "\
# TYPE breakwater_state gauge
# TYPE breakwater_opened_total counter
# TYPE breakwater_calls_total counter
# TYPE breakwater_incident_seconds histogram
# TYPE breakwater_probes_granted_total counter
";
}
