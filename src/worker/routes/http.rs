//! What the routes' I/O shares: JSON answers, `BREAKERS`, the body read as a bounded stream.

use alloc::format;
use alloc::string::{String, ToString};

use worker::js_sys::{Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::ReadableStreamDefaultReader;
use worker::{Env, Headers, Method, Request, Response, Result};

use crate::shared::admin::Verb;
use crate::shared::routes::{check_length, Answer, BoundedBody, HttpError};
use crate::worker::config::{check_breakers, parse_breakers, Breakers};
use crate::worker::protocol::ErrorReply;

/// A JSON answer.
pub fn json_response(status: u16, body: String) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::ok(body)?
        .with_status(status)
        .with_headers(headers))
}

/// A JSON error answer: `{"error": code, "message": message}`.
pub fn error_response(status: u16, code: &str, message: &str) -> Result<Response> {
    let body = crate::shared::json::to_string(&ErrorReply {
        error: code.to_string(),
        message: message.to_string(),
    });
    json_response(status, body)
}

/// A refusal the core decided, as an answer.
pub fn answer_response(answer: &Answer) -> Result<Response> {
    let resp = json_response(answer.status, answer.body())?;
    if !answer.challenge {
        return Ok(resp);
    }
    let headers = resp.headers().clone();
    headers.set("www-authenticate", "Bearer")?;
    Ok(resp.with_headers(headers))
}

/// The request's method, as the core's routes read it.
pub(super) fn verb(method: &Method) -> Verb {
    match method {
        Method::Get => Verb::Get,
        Method::Post => Verb::Post,
        _ => Verb::Other,
    }
}

/// The configured breakers (`BREAKERS`, a JSON object or a string holding one).
pub fn load_breakers(env: &Env) -> core::result::Result<Breakers, String> {
    if let Ok(var) = env.var("BREAKERS") {
        return parse_breakers(&var.to_string());
    }
    match env.object_var::<Breakers>("BREAKERS") {
        Ok(map) => {
            check_breakers(&map)?;
            Ok(map)
        }
        Err(e) => Err(format!("BREAKERS is missing or not valid: {e}")),
    }
}

/// The request's body as text, at most the protocol's limit (the core's [`BoundedBody`]);
/// `Ok(Err(_))`: it is larger, or unreadable.
///
/// A declared `content-length` above the limit is refused before anything is read. Otherwise
/// the body is read as a stream, chunk by chunk, and reading stops (the stream is cancelled) as
/// soon as more than the limit has arrived, so a chunked body without a length is never
/// buffered whole. The bytes are decoded as UTF-8, invalid sequences replaced (as `text()`
/// does).
pub async fn read_body(req: &mut Request) -> Result<core::result::Result<String, HttpError>> {
    let declared = req.headers().get("content-length")?;
    if let Err(e) = check_length(declared.as_deref()) {
        return Ok(Err(e));
    }
    let Some(stream) = req.inner().body() else {
        return Ok(Ok(String::new()));
    };
    let mut body = BoundedBody::default();
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    loop {
        let Ok(step) = JsFuture::from(reader.read()).await else {
            return Ok(Err(HttpError::UnreadableBody));
        };
        let done = Reflect::get(&step, &JsValue::from_str("done"))?;
        if done.as_bool().unwrap_or(true) {
            break;
        }
        let chunk = Uint8Array::new(&Reflect::get(&step, &JsValue::from_str("value"))?);
        let fits = body.push_with(chunk.length() as usize, |into| chunk.copy_to(into));
        if !fits {
            // Stop the sender; the answer does not wait for the cancellation.
            let _ = reader.cancel();
            return Ok(Err(HttpError::TooLarge));
        }
    }
    Ok(Ok(body.into_text()))
}
