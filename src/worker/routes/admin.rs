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

/// Which admin route a request is for.
pub(super) enum Path<'a> {
    /// `/metrics`.
    Metrics,
    /// `/admin/breakers/<rest>`, the rest still percent-encoded.
    Breaker(&'a str),
    /// Another path under `/admin`.
    Other,
}

pub(super) async fn admin(req: Request, env: &Env, path: Path<'_>) -> Result<Response> {
    // Without the secret these routes are off.
    match bearer(&req, env, "ADMIN_TOKEN") {
        None => return not_found(),
        Some(false) => return unauthorized(),
        Some(true) => {}
    }
    let breakers = match load_breakers(env) {
        Ok(b) => b,
        Err(e) => {
            // The caller holds the admin token: tell it what is wrong (the field and value),
            // not only the log.
            worker::console_error!("breakwater: {e}");
            return error_response(500, "misconfigured", &e);
        }
    };
    let method = req.method();
    match path {
        Path::Metrics if method == Method::Get => metrics(&req, env, &breakers).await,
        Path::Metrics => method_not_allowed(),
        Path::Breaker(rest) => {
            let configured = |name: &str| breakers.contains_key(name);
            match target(rest, &method, configured) {
                Target::View(name) => forward(env, &name, "state", Method::Get).await,
                Target::Act(name, op) => forward(env, &name, op, Method::Post).await,
                Target::WrongMethod => method_not_allowed(),
                Target::Unknown => {
                    error_response(404, "not_found", "no breaker of that name is configured")
                }
            }
        }
        Path::Other => not_found(),
    }
}

fn method_not_allowed() -> Result<Response> {
    error_response(405, "method_not_allowed", "wrong method for this route")
}

async fn metrics(req: &Request, env: &Env, breakers: &Breakers) -> Result<Response> {
    let mut views: Vec<StateView> = Vec::new();
    for name in breakers.keys() {
        match object_call(env, name, "state", Method::Get).await {
            Ok((200, text)) => match serde_json::from_str::<StateView>(&text) {
                Ok(v) => views.push(v),
                Err(_) => return error_response(502, "bad_gateway", "unreadable object answer"),
            },
            Ok((status, text)) => return json_response(status, text),
            Err(_) => return error_response(503, "unavailable", "breaker object unreachable"),
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
    let body =
        serde_json::to_string(&views).map_err(|e| worker::Error::RustError(e.to_string()))?;
    json_response(200, body)
}

/// What `/admin/breakers/<rest>` addresses, given the method and the configured names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// `GET`: the named breaker's state.
    View(String),
    /// `POST .../isolate` or `POST .../reset` on the named breaker.
    Act(String, &'static str),
    /// A configured breaker, or an action on one, with the wrong method.
    WrongMethod,
    /// No configured breaker by that name.
    Unknown,
}

/// Resolves the rest of the path after `/admin/breakers/` (as it came, percent-encoded).
///
/// The whole rest is the name (percent-decoded, so names with `/` can be written as they are or
/// with `%2F`). Only `POST` strips a final `/isolate` or `/reset` (a literal one, not `%2F`
/// -encoded) and acts on the name before it; `GET` never does: `GET .../a/reset` views the
/// breaker `a/reset`. A configured name with the wrong method, or a `GET` of `<name>/isolate`
/// for a configured `<name>`, is [`Target::WrongMethod`].
pub(super) fn target(rest: &str, method: &Method, configured: impl Fn(&str) -> bool) -> Target {
    let known = |encoded: &str| {
        percent_decode(encoded).filter(|n| validate_name(n).is_ok() && configured(n))
    };
    let action = rest.rsplit_once('/').and_then(|(name, op)| match op {
        "isolate" => Some((name, "isolate")),
        "reset" => Some((name, "reset")),
        _ => None,
    });
    if *method == Method::Post {
        if let Some((name, op)) = action {
            if let Some(name) = known(name) {
                return Target::Act(name, op);
            }
        }
        return match known(rest) {
            Some(_) => Target::WrongMethod,
            None => Target::Unknown,
        };
    }
    if let Some(name) = known(rest) {
        return match method {
            Method::Get => Target::View(name),
            _ => Target::WrongMethod,
        };
    }
    match action.and_then(|(name, _)| known(name)) {
        Some(_) => Target::WrongMethod,
        None => Target::Unknown,
    }
}

/// Decodes `%XX` escapes; `None` if an escape is malformed or the result is not UTF-8.
pub(super) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = core::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
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

async fn forward(env: &Env, name: &str, op: &str, method: Method) -> Result<Response> {
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
    use super::{percent_decode, render_prometheus, target, Target};
    use crate::worker::protocol::StateView;
    use alloc::string::String;
    use worker::Method;

    fn resolve(rest: &str, method: Method) -> Target {
        let configured = ["a", "a/reset", "openai:gpt-4.1/chat", "x/isolate"];
        target(rest, &method, |n| configured.contains(&n))
    }

    fn sees(name: &str) -> Target {
        Target::View(String::from(name))
    }

    fn act(name: &str, op: &'static str) -> Target {
        Target::Act(String::from(name), op)
    }

    #[test]
    fn the_rest_of_the_path_is_the_name() {
        assert_eq!(resolve("a", Method::Get), sees("a"));
        assert_eq!(
            resolve("openai:gpt-4.1/chat", Method::Get),
            sees("openai:gpt-4.1/chat")
        );
        assert_eq!(
            resolve("openai%3Agpt-4.1%2Fchat", Method::Get),
            sees("openai:gpt-4.1/chat")
        );
        assert_eq!(
            resolve("openai:gpt-4.1/chat/isolate", Method::Post),
            act("openai:gpt-4.1/chat", "isolate")
        );
        assert_eq!(
            resolve("openai:gpt-4.1%2fchat/reset", Method::Post),
            act("openai:gpt-4.1/chat", "reset")
        );
    }

    #[test]
    fn only_post_strips_the_action() {
        // GET of `a/reset` views the breaker `a/reset`; POST resets `a`.
        assert_eq!(resolve("a/reset", Method::Get), sees("a/reset"));
        assert_eq!(resolve("a/reset", Method::Post), act("a", "reset"));
        // An encoded slash is part of the name: POST on a view is the wrong method.
        assert_eq!(resolve("a%2Freset", Method::Post), Target::WrongMethod);
        assert_eq!(resolve("a%2Freset", Method::Get), sees("a/reset"));
        // `x/isolate` is configured, `x` is not: reset it with `.../x/isolate/reset`.
        assert_eq!(resolve("x/isolate", Method::Get), sees("x/isolate"));
        assert_eq!(resolve("x/isolate", Method::Post), Target::WrongMethod);
        assert_eq!(
            resolve("x/isolate/reset", Method::Post),
            act("x/isolate", "reset")
        );
    }

    #[test]
    fn wrong_methods_and_unknown_names() {
        assert_eq!(resolve("a", Method::Delete), Target::WrongMethod);
        assert_eq!(resolve("a", Method::Post), Target::WrongMethod);
        assert_eq!(resolve("a/isolate", Method::Get), Target::WrongMethod);
        assert_eq!(resolve("a/explode", Method::Post), Target::Unknown);
        assert_eq!(resolve("b", Method::Get), Target::Unknown);
        assert_eq!(resolve("b/reset", Method::Post), Target::Unknown);
        assert_eq!(resolve("", Method::Get), Target::Unknown);
        assert_eq!(resolve("/reset", Method::Post), Target::Unknown);
        assert_eq!(resolve("a/", Method::Get), Target::Unknown);
        assert_eq!(resolve("bad%20name", Method::Get), Target::Unknown);
        assert_eq!(resolve("a%ZZ", Method::Get), Target::Unknown);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Fb%3ac").as_deref(), Some("a/b:c"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        for bad in ["%", "%2", "a%G0", "%%41", "%FF", "%2F%"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

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
