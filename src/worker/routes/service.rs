//! `POST /v1/acquire?breaker=<name>` and `POST /v1/report?breaker=<name>`: the object's protocol
//! over HTTPS for clients outside Cloudflare, behind the `SERVICE_TOKEN` secret.

use alloc::string::{String, ToString};

use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use super::http::{
    bearer, error_response, json_response, load_breakers, not_found, object_url, read_body,
    unauthorized,
};
use super::BINDING;
use crate::name::validate_name;

/// The body goes to the named breaker's object as it is (the object validates it), and its
/// answer comes back as it is.
pub(super) async fn service(mut req: Request, env: &Env, op: &str) -> Result<Response> {
    match bearer(&req, env, "SERVICE_TOKEN") {
        None => return not_found(),
        Some(false) => return unauthorized(),
        Some(true) => {}
    }
    if req.method() != Method::Post {
        return error_response(405, "method_not_allowed", "wrong method for this route");
    }
    let name = req.url().ok().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == "breaker")
            .map(|(_, v)| v.into_owned())
    });
    let Some(name) = name else {
        return error_response(
            400,
            "bad_request",
            "the `breaker` query parameter is required",
        );
    };
    let breakers = match load_breakers(env) {
        Ok(b) => b,
        Err(e) => {
            // A service client is not an operator: the reason goes to the log only.
            worker::console_error!("breakwater: {e}");
            return error_response(500, "misconfigured", "BREAKERS is not valid");
        }
    };
    if validate_name(&name).is_err() || !breakers.contains_key(name.as_str()) {
        return error_response(404, "not_found", "no breaker of that name is configured");
    }
    let Some(body) = read_body(&mut req).await? else {
        return error_response(413, "too_large", "the body is too large");
    };
    forward(env, &name, op, body).await
}

async fn forward(env: &Env, name: &str, op: &str, body: String) -> Result<Response> {
    let ns = env.durable_object(BINDING)?;
    let stub = ns.get_by_name(name)?;
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(worker::wasm_bindgen::JsValue::from_str(&body)));
    let inner = Request::new_with_init(&object_url(op, name), &init)?;
    match stub.fetch_with_request(inner).await {
        Ok(mut resp) => {
            let status = resp.status_code();
            json_response(status, resp.text().await?)
        }
        Err(_) => error_response(503, "unavailable", "breaker object unreachable"),
    }
}
