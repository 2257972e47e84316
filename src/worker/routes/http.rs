//! What every route shares: JSON answers, the bearer-token check, bounded bodies, `BREAKERS`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use worker::js_sys::{Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::ReadableStreamDefaultReader;
use worker::{Env, Headers, Request, Response, Result};

use crate::worker::config::{check_breakers, parse_breakers, Breakers};
use crate::worker::protocol::{ErrorReply, MAX_BODY_BYTES};

/// The URL of operation `op` on the object of breaker `name`: the name travels with every
/// request (`?breaker=`), for objects whose id does not carry it (see `object.rs`).
pub fn object_url(op: &str, name: &str) -> String {
    match worker::Url::parse_with_params(&format!("https://breaker/{op}"), [("breaker", name)]) {
        Ok(u) => u.to_string(),
        Err(_) => format!("https://breaker/{op}"),
    }
}

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

/// `404 not_found`: what a route that is off, or that does not exist, answers.
pub(super) fn not_found() -> Result<Response> {
    error_response(404, "not_found", "no such route")
}

/// `401 unauthorized` with `WWW-Authenticate: Bearer`.
pub(super) fn unauthorized() -> Result<Response> {
    let headers = Headers::new();
    headers.set("www-authenticate", "Bearer")?;
    Ok(
        error_response(401, "unauthorized", "a valid bearer token is required")?
            .with_headers(headers),
    )
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

/// Compares two byte strings in time that depends only on their lengths' maximum, not on where
/// they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= u64::from(x ^ y);
    }
    core::hint::black_box(diff) == 0
}

/// The secret `name` if it is set and not empty, and whether the request carries it as a bearer
/// token (constant-time comparison). `None`: the routes it guards are off.
pub(super) fn bearer(req: &Request, env: &Env, name: &str) -> Option<bool> {
    let secret = env.secret(name).ok()?.to_string();
    if secret.is_empty() {
        return None;
    }
    let given = req
        .headers()
        .get("authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    let token = bearer_token(&given).unwrap_or("");
    Some(constant_time_eq(token.as_bytes(), secret.as_bytes()))
}

/// The token of an `Authorization: Bearer <token>` header value. The scheme is matched without
/// regard to case and may be followed by several spaces (RFC 7235 `credentials`); `None` for
/// another scheme.
pub(super) fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    Some(token.trim_start_matches(' '))
}

/// The request's body as text, at most [`MAX_BODY_BYTES`]; `Ok(None)`: it is larger.
///
/// A declared `content-length` above the limit is refused before anything is read. Otherwise
/// the body is read as a stream, chunk by chunk, and reading stops (the stream is cancelled) as
/// soon as more than the limit has arrived, so a chunked body without a length is never
/// buffered whole. The bytes are decoded as UTF-8, invalid sequences replaced (as `text()`
/// does).
pub(super) async fn read_body(req: &mut Request) -> Result<Option<String>> {
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Ok(None);
    }
    let Some(stream) = req.inner().body() else {
        return Ok(Some(String::new()));
    };
    let mut body = BoundedBody::new(MAX_BODY_BYTES);
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    loop {
        let step = JsFuture::from(reader.read()).await?;
        let done = Reflect::get(&step, &JsValue::from_str("done"))?;
        if done.as_bool().unwrap_or(true) {
            break;
        }
        let chunk = Uint8Array::new(&Reflect::get(&step, &JsValue::from_str("value"))?);
        let fits = body.push_with(chunk.length() as usize, |into| chunk.copy_to(into));
        if !fits {
            // Stop the sender; the answer does not wait for the cancellation.
            let _ = reader.cancel();
            return Ok(None);
        }
    }
    Ok(Some(body.into_text()))
}

/// Bytes collected up to a limit.
pub(super) struct BoundedBody {
    bytes: Vec<u8>,
    limit: usize,
}

impl BoundedBody {
    pub(super) fn new(limit: usize) -> Self {
        BoundedBody {
            bytes: Vec::new(),
            limit,
        }
    }

    /// Appends a chunk of `len` bytes, written by `fill` into the space made for it; `false`
    /// (and nothing appended) if the total would exceed the limit.
    pub(super) fn push_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        let start = self.bytes.len();
        match start.checked_add(len) {
            Some(end) if end <= self.limit => {
                self.bytes.resize(end, 0);
                if let Some(space) = self.bytes.get_mut(start..end) {
                    fill(space);
                }
                true
            }
            _ => false,
        }
    }

    /// The bytes as text (invalid UTF-8 replaced).
    pub(super) fn into_text(self) -> String {
        match String::from_utf8(self.bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{bearer_token, constant_time_eq, BoundedBody};

    #[test]
    fn a_bounded_body_stops_at_the_limit() {
        let mut body = BoundedBody::new(10);
        assert!(body.push_with(4, |b| b.copy_from_slice(b"abcd")));
        assert!(body.push_with(6, |b| b.copy_from_slice(b"efghij")));
        // One byte more than the limit: refused, nothing appended, the fill never runs.
        assert!(!body.push_with(1, |_| panic!("filled past the limit")));
        assert!(!body.push_with(usize::MAX, |_| panic!("filled past the limit")));
        assert!(body.push_with(0, |_| {}));
        assert_eq!(body.into_text(), "abcdefghij");

        let mut body = BoundedBody::new(10);
        assert!(!body.push_with(11, |_| panic!("filled past the limit")));
        assert_eq!(body.into_text(), "");

        let mut body = BoundedBody::new(10);
        assert!(body.push_with(3, |b| b.copy_from_slice(&[b'a', 0xFF, b'b'])));
        assert_eq!(body.into_text(), "a\u{FFFD}b");
    }

    #[test]
    fn the_bearer_scheme_is_matched_without_case() {
        for header in [
            "Bearer t0k",
            "bearer t0k",
            "BEARER t0k",
            "bEaReR t0k",
            "Bearer   t0k",
        ] {
            assert_eq!(bearer_token(header), Some("t0k"), "{header}");
        }
        for header in ["Basic t0k", "Bearert0k", "t0k", "", "Bearer", "Bearer- t0k"] {
            assert_eq!(bearer_token(header), None, "{header}");
        }
        assert_eq!(bearer_token("Bearer "), Some(""));
    }

    #[test]
    fn constant_time_eq_compares_whole_strings() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }
}
