//! `GET /metrics`, `GET /admin/breakers/<name>`, `POST /admin/breakers/<name>/isolate`,
//! `POST /admin/breakers/<name>/reset`, behind the `ADMIN_TOKEN` secret.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use super::http::{
    bearer, error_response, json_response, load_breakers, not_found, object_url, unauthorized,
};
use super::BINDING;
use crate::shared::admin::{target, Target, Verb};
pub use crate::shared::metrics::render_views as render_prometheus;
use crate::worker::config::Breakers;
use crate::worker::protocol::StateView;

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
            let verb = match method {
                Method::Get => Verb::Get,
                Method::Post => Verb::Post,
                _ => Verb::Other,
            };
            match target(rest, verb, configured) {
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
            Ok((200, text)) => match crate::shared::json::from_str::<StateView>(&text) {
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
    json_response(200, crate::shared::json::to_string(&views))
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
    let req = Request::new_with_init(&object_url(op, name), &init)?;
    let mut resp = stub.fetch_with_request(req).await?;
    let status = resp.status_code();
    Ok((status, resp.text().await?))
}
