//! The routes' I/O: the core decides ([`crate::shared::routes::plan`]), this reads what it asks
//! (headers, the body as a bounded stream, the served names) and calls the objects.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use super::http::{answer_response, json_response, load_breakers, read_body, verb};
use super::BINDING;
pub use crate::shared::metrics::render_views as render_prometheus;
use crate::shared::routes::{plan, Body, HttpError, ObjectOp, Plan, RouteRequest, Secrets};
use crate::worker::protocol::StateView;
use crate::worker::url::object_url;

/// Answers a request for `/metrics`, `/admin/*` or `/v1/*`, and 404 for any other path.
pub(super) async fn serve(mut req: Request, env: &Env) -> Result<Response> {
    let path = req.path();
    let url = req.url()?;
    let query = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    let breaker = query("breaker");
    let headers = req.headers();
    let authorization = headers.get("authorization")?;
    let content_length = headers.get("content-length")?;
    let secret = |name: &str| env.secret(name).ok().map(|s| s.to_string());
    let (admin, service) = (secret("ADMIN_TOKEN"), secret("SERVICE_TOKEN"));
    let request = RouteRequest {
        method: verb(&req.method()),
        path: &path,
        breaker: breaker.as_deref(),
        prometheus: query("format").as_deref() == Some("prometheus"),
        authorization: authorization.as_deref(),
        content_length: content_length.as_deref(),
    };
    let secrets = Secrets {
        admin: admin.as_deref(),
        service: service.as_deref(),
    };
    let names = || load_breakers(env).map(|b| b.keys().cloned().collect::<Vec<String>>());
    match plan(&request, &secrets, names) {
        Plan::Pass => answer_response(&HttpError::NoSuchRoute.answer()),
        Plan::Answer(answer) => {
            if let Some(why) = &answer.log {
                worker::console_error!("breakwater: {why}");
            }
            answer_response(&answer)
        }
        Plan::Metrics { prometheus, names } => metrics(env, &names, prometheus).await,
        Plan::Status { names } => status(env, &names).await,
        Plan::Object { name, op, body } => {
            let body = match body {
                Body::None => None,
                // A protocol message, or a reset's settings: the object reads either.
                Body::Exchange | Body::Settings => match read_body(&mut req).await? {
                    Ok(text) => Some(text),
                    Err(e) => return answer_response(&e.answer()),
                },
            };
            match object_call(env, &name, op, body).await {
                Ok((status, text)) => json_response(status, text),
                Err(_) => answer_response(&HttpError::Unreachable.answer()),
            }
        }
    }
}

/// Every named breaker's `/state`, or the answer to give instead.
async fn views(
    env: &Env,
    names: &[String],
) -> Result<core::result::Result<Vec<StateView>, Response>> {
    let mut views: Vec<StateView> = Vec::new();
    for name in names {
        let refusal = match object_call(env, name, ObjectOp::State, None).await {
            Ok((200, text)) => match crate::shared::json::from_str::<StateView>(&text) {
                Ok(v) => {
                    views.push(v);
                    continue;
                }
                Err(_) => answer_response(&HttpError::BadGateway.answer()),
            },
            Ok((status, text)) => json_response(status, text),
            Err(_) => answer_response(&HttpError::Unreachable.answer()),
        };
        return Ok(Err(refusal?));
    }
    Ok(Ok(views))
}

async fn status(env: &Env, names: &[String]) -> Result<Response> {
    let views = match views(env, names).await? {
        Ok(v) => v,
        Err(refusal) => return Ok(refusal),
    };
    let now = worker::Date::now().as_millis();
    let headers = Headers::new();
    for (name, value) in crate::shared::status::HEADERS {
        headers.set(name, value)?;
    }
    let page = crate::shared::status::render(&views, now);
    Ok(Response::ok(page)?.with_headers(headers))
}

async fn metrics(env: &Env, names: &[String], prometheus: bool) -> Result<Response> {
    let views = match views(env, names).await? {
        Ok(v) => v,
        Err(refusal) => return Ok(refusal),
    };
    if prometheus {
        let headers = Headers::new();
        headers.set("content-type", "text/plain; version=0.0.4")?;
        return Ok(Response::ok(render_prometheus(&views))?.with_headers(headers));
    }
    json_response(200, crate::shared::json::to_string(&views))
}

/// Operation `op` on the named breaker's object: its status and body. Nothing of the request's
/// headers is forwarded (a service client's settings header least of all).
async fn object_call(
    env: &Env,
    name: &str,
    op: ObjectOp,
    body: Option<String>,
) -> Result<(u16, String)> {
    let ns = env.durable_object(BINDING)?;
    let stub = ns.get_by_name(name)?;
    let headers = Headers::new();
    if body.is_some() {
        headers.set("content-type", "application/json")?;
    }
    let mut init = RequestInit::new();
    init.with_method(match op.verb() {
        crate::shared::admin::Verb::Get => Method::Get,
        _ => Method::Post,
    })
    .with_headers(headers);
    if let Some(body) = body {
        init.with_body(Some(worker::wasm_bindgen::JsValue::from_str(&body)));
    }
    let inner = Request::new_with_init(&object_url(op.path(), name), &init)?;
    let mut resp = stub.fetch_with_request(inner).await?;
    let status = resp.status_code();
    Ok((status, resp.text().await?))
}
