//! The shared breaker's HTTP routes, decided once for the Rust Worker and `breakwater/cloudflare`
//! (through wasm): which route a request is, which token it needs and whether it carries it,
//! which breaker and operation it asks, how much of its body may be read, and what every refusal
//! answers. Sans-IO: the hosts read headers and body chunks, call objects and write answers;
//! nothing they decide is written there.
//!
//! What each token may do (the trust model, README "Who may do what"):
//!
//! - `SERVICE_TOKEN`: `POST /v1/acquire` and `/v1/report` on the configured names, under the
//!   settings the breaker runs under. Its `breakwater-settings` header is never forwarded, so a
//!   service client cannot choose or change settings; the coordinator bounds what its reports
//!   may move.
//! - `ADMIN_TOKEN`: `GET /metrics`, `GET /admin/status` (the status page, [`super::status`]),
//!   `GET /admin/breakers/<name>`, `POST .../isolate` and
//!   `.../reset`; a reset may name the settings to install in its body (the settings JSON of
//!   `BREAKERS`), refused where `BREAKERS` pins them.
//! - The Worker's own code (its clients hold the object's binding, no token): everything, and
//!   its clients' settings are the object's when `BREAKERS` declares none.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::admin::{target, Target, Verb};
use super::json;
use super::protocol::{ErrorReply, MAX_BODY_BYTES};
use super::spec::SharedSpec;
use crate::name::validate_name;

/// A refusal the routes or the object answer without taking a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// 404: not one of the routes (or a route that is off).
    NoSuchRoute,
    /// 401, with `WWW-Authenticate: Bearer`: the token is missing or wrong.
    Unauthorized,
    /// 405 at the routes.
    WrongMethod,
    /// 400: `/v1/*` without `?breaker=`.
    BreakerRequired,
    /// 404: a name the routes do not serve.
    UnknownBreaker,
    /// 404: the routes serve no name at all (neither `BREAKERS` nor the host's list names one).
    NoBreakers,
    /// 413: a body over [`MAX_BODY_BYTES`], declared or read.
    TooLarge,
    /// 400: a `content-length` that is not a number, or a body that could not be read.
    UnreadableBody,
    /// 503: the object did not answer.
    Unreachable,
    /// 502: the object's answer could not be read.
    BadGateway,
    /// 404 at the object: not one of its operations.
    UnknownOperation,
    /// 405 at the object.
    ObjectMethod,
    /// 409 at the object: a reset named settings, and `BREAKERS` pins them.
    SettingsPinned,
    /// 503 at the object: the step's record could not be stored (the step is undone).
    Storage,
    /// 500 at the object: something failed; nothing was changed.
    Internal,
}

impl HttpError {
    /// The HTTP status.
    pub const fn status(self) -> u16 {
        match self {
            HttpError::NoSuchRoute
            | HttpError::UnknownBreaker
            | HttpError::NoBreakers
            | HttpError::UnknownOperation => 404,
            HttpError::Unauthorized => 401,
            HttpError::WrongMethod | HttpError::ObjectMethod => 405,
            HttpError::BreakerRequired | HttpError::UnreadableBody => 400,
            HttpError::TooLarge => 413,
            HttpError::Unreachable | HttpError::Storage => 503,
            HttpError::BadGateway => 502,
            HttpError::SettingsPinned => 409,
            HttpError::Internal => 500,
        }
    }

    /// The stable code of the answer's `error` field.
    pub const fn code(self) -> &'static str {
        match self {
            HttpError::NoSuchRoute
            | HttpError::UnknownBreaker
            | HttpError::NoBreakers
            | HttpError::UnknownOperation => "not_found",
            HttpError::Unauthorized => "unauthorized",
            HttpError::WrongMethod | HttpError::ObjectMethod => "method_not_allowed",
            HttpError::BreakerRequired | HttpError::UnreadableBody => "bad_request",
            HttpError::TooLarge => "payload_too_large",
            HttpError::Unreachable => "unavailable",
            HttpError::BadGateway => "bad_gateway",
            HttpError::SettingsPinned => "conflict",
            HttpError::Storage => "storage",
            HttpError::Internal => "internal",
        }
    }

    /// The answer's `message`.
    pub const fn message(self) -> &'static str {
        match self {
            HttpError::NoSuchRoute => "no such route",
            HttpError::Unauthorized => "a valid bearer token is required",
            HttpError::WrongMethod => "wrong method for this route",
            HttpError::BreakerRequired => "the `breaker` query parameter is required",
            HttpError::UnknownBreaker => {
                "no breaker of that name is configured (the served names are those of BREAKERS, \
                 or of the `names` option of breakerRoutes)"
            }
            HttpError::NoBreakers => {
                "no breakers are configured: list them in the `names` option of breakerRoutes, \
                 or declare them in BREAKERS"
            }
            HttpError::TooLarge => "body larger than 64 KiB (65536 bytes)",
            HttpError::UnreadableBody => "unreadable body",
            HttpError::Unreachable => "breaker object unreachable",
            HttpError::BadGateway => "unreadable object answer",
            HttpError::UnknownOperation => "unknown operation",
            HttpError::ObjectMethod => "use POST (or GET for /state)",
            HttpError::SettingsPinned => {
                "BREAKERS pins this breaker's settings: change them there, not in a reset"
            }
            HttpError::Storage => "the new state could not be stored",
            HttpError::Internal => "the breaker object failed; state unchanged",
        }
    }

    /// The whole answer.
    pub fn answer(self) -> Answer {
        Answer::new(self.status(), self.code(), self.message())
    }
}

/// An answer the host writes as it is: a JSON `{"error", "message"}` body with this status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The `error` field.
    pub code: &'static str,
    /// The `message` field.
    pub message: String,
    /// Whether the answer carries `WWW-Authenticate: Bearer`.
    pub challenge: bool,
    /// What the host logs as an error, when the answer hides it (a service client is not told
    /// why `BREAKERS` is invalid).
    pub log: Option<String>,
}

impl Answer {
    fn new(status: u16, code: &'static str, message: &str) -> Self {
        Answer {
            status,
            code,
            message: message.to_string(),
            challenge: status == 401,
            log: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        json::to_string(&ErrorReply {
            error: self.code.to_string(),
            message: self.message.clone(),
        })
    }
}

/// One of the object's operations, each at `/<op>?breaker=<name>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectOp {
    /// `POST /acquire`.
    Acquire,
    /// `POST /report`.
    Report,
    /// `GET` (or `POST`) `/state`.
    State,
    /// `POST /isolate`.
    Isolate,
    /// `POST /reset`.
    Reset,
}

impl ObjectOp {
    /// The path segment.
    pub const fn path(self) -> &'static str {
        match self {
            ObjectOp::Acquire => "acquire",
            ObjectOp::Report => "report",
            ObjectOp::State => "state",
            ObjectOp::Isolate => "isolate",
            ObjectOp::Reset => "reset",
        }
    }

    /// `GET` for `/state`, `POST` for the others: what the routes send.
    pub const fn verb(self) -> Verb {
        match self {
            ObjectOp::State => Verb::Get,
            _ => Verb::Post,
        }
    }

    /// Whether the operation is a step of the protocol (its body is an `Exchange`).
    pub const fn is_exchange(self) -> bool {
        matches!(self, ObjectOp::Acquire | ObjectOp::Report)
    }

    /// The operation the object is asked at `path` (`/acquire`, …) with `method`.
    pub fn at(path: &str, method: Verb) -> Result<ObjectOp, HttpError> {
        let op = match path.trim_start_matches('/') {
            "acquire" => ObjectOp::Acquire,
            "report" => ObjectOp::Report,
            "state" => ObjectOp::State,
            "isolate" => ObjectOp::Isolate,
            "reset" => ObjectOp::Reset,
            _ => return Err(HttpError::UnknownOperation),
        };
        let allowed = match op {
            ObjectOp::State => matches!(method, Verb::Get | Verb::Post),
            _ => method == Verb::Post,
        };
        if allowed {
            Ok(op)
        } else {
            Err(HttpError::ObjectMethod)
        }
    }
}

/// What a request's body is, for the host that forwards it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// None is read or forwarded.
    None,
    /// A protocol message, read up to [`MAX_BODY_BYTES`] and forwarded as it is (the object
    /// checks it).
    Exchange,
    /// A reset's optional settings, read up to [`MAX_BODY_BYTES`] and forwarded as they are:
    /// the object reads them with [`reset_settings`].
    Settings,
}

/// What the host does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not one of these routes, or one whose token is not set (the group is off): the host's
    /// own handler goes on (`breakerRoutes` answers `null`; the Rust Worker answers
    /// [`HttpError::NoSuchRoute`]).
    Pass,
    /// Answer this, now.
    Answer(Answer),
    /// `GET /metrics`: every served breaker's `/state`, as JSON or the Prometheus text.
    Metrics {
        /// `?format=prometheus`.
        prometheus: bool,
        /// The breakers, in order.
        names: Vec<String>,
    },
    /// `GET /admin/status`: every served breaker's `/state`, rendered by
    /// [`status::render`](super::status::render) and answered as `text/html` with
    /// [`status::CSP`](super::status::CSP).
    Status {
        /// The breakers, in order.
        names: Vec<String>,
    },
    /// Call the named breaker's object.
    Object {
        /// The breaker.
        name: String,
        /// The operation.
        op: ObjectOp,
        /// What to read of the request's body.
        body: Body,
    },
}

/// What the routes read of a request (the mount prefix already removed from `path`).
#[derive(Clone, Copy, Debug)]
pub struct RouteRequest<'a> {
    /// The method.
    pub method: Verb,
    /// The path below the mount point (`/v1/report`, `/metrics`, …).
    pub path: &'a str,
    /// The `breaker` query parameter, decoded.
    pub breaker: Option<&'a str>,
    /// Whether the query asks `format=prometheus`.
    pub prometheus: bool,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The `content-length` header.
    pub content_length: Option<&'a str>,
}

/// The two secrets; `None` or empty: that group of routes is off.
#[derive(Clone, Copy, Debug, Default)]
pub struct Secrets<'a> {
    /// `ADMIN_TOKEN`: `/metrics` and `/admin/*`.
    pub admin: Option<&'a str>,
    /// `SERVICE_TOKEN`: `/v1/acquire` and `/v1/report`.
    pub service: Option<&'a str>,
}

/// Which route a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// `/metrics`.
    Metrics,
    /// `/admin/status`.
    Status,
    /// `/admin/breakers/<rest>`, the rest as it came (percent-encoded).
    Breaker(&'a str),
    /// Another path under `/admin`.
    OtherAdmin,
    /// `/v1/acquire` or `/v1/report`.
    Service(ObjectOp),
    /// Not one of these routes.
    None,
}

impl<'a> Route<'a> {
    /// The route of `path` (below the mount point; leading slashes ignored).
    pub fn of(path: &'a str) -> Self {
        let path = path.trim_start_matches('/');
        if path == "metrics" {
            return Route::Metrics;
        }
        if path == "admin/status" {
            return Route::Status;
        }
        if let Some(rest) = path.strip_prefix("admin/breakers/") {
            return Route::Breaker(rest);
        }
        if path == "admin" || path.starts_with("admin/") {
            return Route::OtherAdmin;
        }
        match path {
            "v1/acquire" => Route::Service(ObjectOp::Acquire),
            "v1/report" => Route::Service(ObjectOp::Report),
            _ => Route::None,
        }
    }
}

/// Decides what to do with a request: the route, its token, then (only for a caller that holds
/// it) the served names, read by `names` (the `BREAKERS` variable, or a list the host was
/// given; `Err`: why they cannot be read).
pub fn plan(
    req: &RouteRequest<'_>,
    secrets: &Secrets<'_>,
    names: impl FnOnce() -> Result<Vec<String>, String>,
) -> Plan {
    let route = Route::of(req.path);
    let secret = match route {
        Route::None => return Plan::Pass,
        Route::Service(_) => secrets.service,
        _ => secrets.admin,
    };
    match authorize(req.authorization, secret) {
        None => return Plan::Pass,
        Some(false) => return Plan::Answer(HttpError::Unauthorized.answer()),
        Some(true) => {}
    }
    match names() {
        Ok(names) => routed(req, route, names).unwrap_or_else(|e| Plan::Answer(e.answer())),
        Err(why) => misconfigured(route, why),
    }
}

/// The answer when the served names cannot be read. An operator holds the admin token: tell it
/// what is wrong; a service client is not one, and reads a generic line. Both are logged.
fn misconfigured(route: Route<'_>, why: String) -> Plan {
    let shown = match route {
        Route::Service(_) => String::from("BREAKERS is not valid"),
        _ => why.clone(),
    };
    let mut answer = Answer::new(500, "misconfigured", &shown);
    answer.log = Some(why);
    Plan::Answer(answer)
}

/// What an authorized request to `route` asks of the breakers served (`names`), or the refusal.
fn routed(req: &RouteRequest<'_>, route: Route<'_>, names: Vec<String>) -> Result<Plan, HttpError> {
    // Serving nothing is a configuration left out (`breakerRoutes` without `names`, no
    // `BREAKERS`), not a request for a breaker that does not exist: say which. The status page
    // says it in its own words (a store's `statusPage` may well be given no breaker).
    if names.is_empty() && route != Route::Status {
        return Err(HttpError::NoBreakers);
    }
    let served = |n: &str| validate_name(n).is_ok() && names.iter().any(|k| k == n);
    match route {
        Route::Service(op) => service_call(req, op, served),
        Route::Metrics if req.method == Verb::Get => Ok(Plan::Metrics {
            prometheus: req.prometheus,
            names,
        }),
        Route::Status if req.method == Verb::Get => Ok(Plan::Status { names }),
        Route::Metrics | Route::Status => Err(HttpError::WrongMethod),
        Route::Breaker(rest) => admin_call(req, rest, served),
        Route::OtherAdmin | Route::None => Err(HttpError::NoSuchRoute),
    }
}

/// `POST /v1/acquire` or `/v1/report` on a served breaker: its protocol message, forwarded.
fn service_call(
    req: &RouteRequest<'_>,
    op: ObjectOp,
    served: impl Fn(&str) -> bool,
) -> Result<Plan, HttpError> {
    if req.method != Verb::Post {
        return Err(HttpError::WrongMethod);
    }
    let name = req.breaker.ok_or(HttpError::BreakerRequired)?;
    if !served(name) {
        return Err(HttpError::UnknownBreaker);
    }
    check_length(req.content_length)?;
    Ok(Plan::Object {
        name: name.to_string(),
        op,
        body: Body::Exchange,
    })
}

/// `/admin/breakers/<rest>`: a served breaker's state, or an action on it (a reset may carry
/// settings).
fn admin_call(
    req: &RouteRequest<'_>,
    rest: &str,
    served: impl Fn(&str) -> bool,
) -> Result<Plan, HttpError> {
    match target(rest, req.method, served) {
        Target::View(name) => Ok(Plan::Object {
            name,
            op: ObjectOp::State,
            body: Body::None,
        }),
        Target::Act(name, op) => {
            let (op, body) = if op == "reset" {
                (ObjectOp::Reset, Body::Settings)
            } else {
                (ObjectOp::Isolate, Body::None)
            };
            check_length(req.content_length)?;
            Ok(Plan::Object { name, op, body })
        }
        Target::WrongMethod => Err(HttpError::WrongMethod),
        Target::Unknown => Err(HttpError::UnknownBreaker),
    }
}

/// The breaker an object holds: the name its id carries or the first one a request named
/// (`kept`), else the one this request names (`asked`, `?breaker=`), which must then be the same.
/// An id made by `idFromName` does not always carry its name (`wrangler dev` addresses an object
/// in another process by `id.toString()`), so clients send it too.
pub fn object_name(kept: Option<&str>, asked: Option<&str>) -> Result<String, Answer> {
    let name = match (kept, asked) {
        (Some(kept), Some(asked)) if kept != asked => {
            // Quoted, not `{:?}` (whose escaping tables would cost the wasm module kilobytes);
            // the answer's JSON escapes whatever the request sent.
            let message =
                alloc::format!("this object holds the breaker \"{kept}\", not \"{asked}\"");
            return Err(Answer::new(409, "conflict", &message));
        }
        (Some(name), _) | (None, Some(name)) => name,
        (None, None) => {
            return Err(Answer::new(
                404,
                "not_found",
                "object has no name: address it with idFromName(name) and send ?breaker=<name>",
            ))
        }
    };
    if validate_name(name).is_err() {
        return Err(Answer::new(404, "not_found", "not a breaker name"));
    }
    Ok(name.to_string())
}

/// A declared `content-length`: refused above [`MAX_BODY_BYTES`], or when it is not a number.
pub fn check_length(content_length: Option<&str>) -> Result<(), HttpError> {
    match content_length.map(|v| v.trim_ascii().parse::<u64>()) {
        None => Ok(()),
        Some(Ok(n)) if n <= MAX_BODY_BYTES as u64 => Ok(()),
        Some(Ok(_)) => Err(HttpError::TooLarge),
        Some(Err(_)) => Err(HttpError::UnreadableBody),
    }
}

/// The settings a reset names in its body (the settings JSON of a `BREAKERS` entry), as the
/// settings JSON the object installs: `Ok(None)` for an empty body (the reset keeps the settings
/// the breaker runs under), `Err` naming the field and the value. Where `BREAKERS` pins the
/// breaker's settings (`pinned`), a reset may only name those ([`HttpError::SettingsPinned`]).
pub fn reset_settings(body: &str, pinned: Option<&SharedSpec>) -> Result<Option<String>, Answer> {
    if body.trim_ascii().is_empty() {
        return Ok(None);
    }
    let checked = json::from_str::<SharedSpec>(body)
        .map_err(|e| e.to_string())
        .and_then(|spec| spec.validate().map(|()| spec).map_err(|e| e.to_string()));
    match checked {
        Ok(spec) if pinned.is_some_and(|p| *p != spec) => Err(HttpError::SettingsPinned.answer()),
        Ok(spec) => Ok(Some(json::to_string(&spec))),
        Err(why) => {
            let message = alloc::format!("invalid settings in the reset's body: {why}");
            Err(Answer::new(400, "bad_request", &message))
        }
    }
}

/// Whether `authorization` carries `secret` as a bearer token (compared in constant time);
/// `None` when the secret is not set or empty (the routes it guards are off).
pub fn authorize(authorization: Option<&str>, secret: Option<&str>) -> Option<bool> {
    let secret = secret.filter(|s| !s.is_empty())?;
    let token = authorization.and_then(bearer_token).unwrap_or("");
    Some(constant_time_eq(
        token.trim_ascii().as_bytes(),
        secret.as_bytes(),
    ))
}

/// The token of an `Authorization: Bearer <token>` header value. The scheme is matched without
/// regard to case (RFC 7235) and may be followed by spaces or tabs; `None` for another scheme.
pub fn bearer_token(header: &str) -> Option<&str> {
    let header = header.trim_ascii_start();
    let split = header.find([' ', '\t'])?;
    let (scheme, token) = header.split_at(split);
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    Some(token.trim_start_matches([' ', '\t']))
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

/// A request body collected chunk by chunk up to [`MAX_BODY_BYTES`]: the host reads its stream
/// and stops (cancels it) at the first chunk refused, so a body without a declared length is
/// never buffered whole.
#[derive(Debug)]
pub struct BoundedBody {
    bytes: Vec<u8>,
    limit: usize,
}

impl Default for BoundedBody {
    fn default() -> Self {
        BoundedBody::new(MAX_BODY_BYTES)
    }
}

impl BoundedBody {
    /// At most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        BoundedBody {
            bytes: Vec::new(),
            limit,
        }
    }

    /// Appends `chunk`; `false` (and nothing appended) if the total would exceed the limit.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        self.push_with(chunk.len(), |into| into.copy_from_slice(chunk))
    }

    /// Appends a chunk of `len` bytes written by `fill` into the space made for it (a host's
    /// buffer copied in without an intermediate one); `false`, nothing appended and `fill` not
    /// called, if the total would exceed the limit.
    pub fn push_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> bool {
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

    /// Bytes collected so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing was collected.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The bytes as text (invalid UTF-8 replaced, as `Request.text()` does).
    pub fn into_text(self) -> String {
        match String::from_utf8(self.bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const ADMIN: &str = "admin-secret";
    const SERVICE: &str = "service-secret";

    fn req<'a>(method: Verb, path: &'a str, auth: Option<&'a str>) -> RouteRequest<'a> {
        RouteRequest {
            method,
            path,
            breaker: Some("a"),
            prometheus: false,
            authorization: auth,
            content_length: None,
        }
    }

    fn both() -> Secrets<'static> {
        Secrets {
            admin: Some(ADMIN),
            service: Some(SERVICE),
        }
    }

    fn names() -> Result<Vec<String>, String> {
        Ok(vec![String::from("a"), String::from("b/c")])
    }

    fn status(p: &Plan) -> u16 {
        match p {
            Plan::Answer(a) => a.status,
            _ => 0,
        }
    }

    #[test]
    fn paths_map_to_routes() {
        assert_eq!(Route::of("/metrics"), Route::Metrics);
        assert_eq!(Route::of("/metrics/"), Route::None);
        assert_eq!(Route::of("/admin/breakers/a"), Route::Breaker("a"));
        assert_eq!(Route::of("/admin/breakers/a%2Fb"), Route::Breaker("a%2Fb"));
        assert_eq!(Route::of("/admin/breakers"), Route::OtherAdmin);
        assert_eq!(Route::of("/admin"), Route::OtherAdmin);
        assert_eq!(Route::of("/administrator"), Route::None);
        assert_eq!(Route::of("/v1/acquire"), Route::Service(ObjectOp::Acquire));
        assert_eq!(Route::of("/v1/report"), Route::Service(ObjectOp::Report));
        assert_eq!(Route::of("/v1/steal"), Route::None);
        assert_eq!(Route::of("/"), Route::None);
    }

    #[test]
    fn serving_no_name_says_which_option_is_missing() {
        // `breakerRoutes(request, env, { prefix })` with neither `names` nor `BREAKERS`: every
        // route a token opens says what is missing, rather than "no breaker of that name".
        let none = || Ok(Vec::new());
        let admin = "Bearer admin-secret";
        for (method, path, token) in [
            (Verb::Get, "/metrics", admin),
            (Verb::Get, "/admin/breakers/a", admin),
            (Verb::Post, "/admin/breakers/a/reset", admin),
            (Verb::Post, "/v1/acquire", "Bearer service-secret"),
        ] {
            let Plan::Answer(a) = plan(&req(method, path, Some(token)), &both(), none) else {
                panic!("{path}: not refused");
            };
            assert_eq!((a.status, a.code), (404, "not_found"), "{path}");
            assert!(
                a.message.contains("`names` option of breakerRoutes"),
                "{path}: {}",
                a.message
            );
            assert!(a.message.contains("BREAKERS"), "{path}: {}", a.message);
        }
        // The status page answers, and says it in its words (see status.rs).
        let r = req(Verb::Get, "/admin/status", Some(admin));
        assert_eq!(plan(&r, &both(), none), Plan::Status { names: Vec::new() });
        // Without the token, nothing is said about the configuration.
        let r = req(Verb::Get, "/metrics", Some("Bearer nope"));
        assert_eq!(status(&plan(&r, &both(), none)), 401);
        // A name outside a list that is set still says where the list comes from.
        let r = req(Verb::Get, "/admin/breakers/zzz", Some(admin));
        let Plan::Answer(a) = plan(&r, &both(), names) else {
            panic!("an unserved name is refused");
        };
        assert!(a
            .message
            .starts_with("no breaker of that name is configured"));
        assert!(a.message.contains("`names` option of breakerRoutes"));
    }

    #[test]
    fn each_token_opens_its_own_routes_only() {
        let s = both();
        let service = "Bearer service-secret";
        let admin = "bearer admin-secret";
        let p = plan(&req(Verb::Post, "/v1/report", Some(service)), &s, names);
        assert_eq!(
            p,
            Plan::Object {
                name: String::from("a"),
                op: ObjectOp::Report,
                body: Body::Exchange
            }
        );
        // The service token opens no admin route, and the admin token no service route.
        for path in ["/metrics", "/admin/breakers/a", "/admin/breakers/a/reset"] {
            for method in [Verb::Get, Verb::Post] {
                assert_eq!(
                    status(&plan(&req(method, path, Some(service)), &s, names)),
                    401
                );
            }
        }
        assert_eq!(
            status(&plan(
                &req(Verb::Post, "/v1/acquire", Some(admin)),
                &s,
                names
            )),
            401
        );
        let a = plan(
            &req(Verb::Post, "/admin/breakers/a/reset", Some(admin)),
            &s,
            names,
        );
        assert_eq!(
            a,
            Plan::Object {
                name: String::from("a"),
                op: ObjectOp::Reset,
                body: Body::Settings
            }
        );
        let Plan::Answer(no) = plan(&req(Verb::Get, "/metrics", None), &s, names) else {
            panic!("no token, no metrics");
        };
        assert_eq!(
            (no.status, no.code, no.challenge),
            (401, "unauthorized", true)
        );
    }

    #[test]
    fn a_group_without_its_secret_is_off_and_names_are_read_after_the_token() {
        let off = Secrets {
            admin: Some(""),
            service: None,
        };
        let unread = || -> Result<Vec<String>, String> { panic!("names read") };
        for path in ["/metrics", "/v1/report", "/admin/x", "/elsewhere"] {
            assert_eq!(
                plan(&req(Verb::Post, path, Some("Bearer x")), &off, unread),
                Plan::Pass
            );
        }
        let wrong = plan(
            &req(Verb::Get, "/metrics", Some("Bearer nope")),
            &both(),
            unread,
        );
        assert_eq!(status(&wrong), 401);
    }

    #[test]
    fn invalid_breakers_are_explained_to_the_operator_only() {
        let bad = || Err(String::from("BREAKERS[\"a\"]: invalid `lease_ms`: 0"));
        let Plan::Answer(a) = plan(
            &req(Verb::Get, "/metrics", Some("Bearer admin-secret")),
            &both(),
            bad,
        ) else {
            panic!("an answer");
        };
        assert_eq!((a.status, a.code), (500, "misconfigured"));
        assert!(a.message.contains("lease_ms"), "{}", a.message);
        let Plan::Answer(s) = plan(
            &req(Verb::Post, "/v1/report", Some("Bearer service-secret")),
            &both(),
            bad,
        ) else {
            panic!("an answer");
        };
        assert_eq!(s.message, "BREAKERS is not valid");
        assert!(s.log.as_deref().is_some_and(|l| l.contains("lease_ms")));
    }

    #[test]
    fn service_requests_are_checked_before_their_body() {
        let s = both();
        let auth = Some("Bearer service-secret");
        let mut r = req(Verb::Get, "/v1/report", auth);
        assert_eq!(status(&plan(&r, &s, names)), 405);
        r.method = Verb::Post;
        r.breaker = None;
        assert_eq!(status(&plan(&r, &s, names)), 400);
        for unknown in ["zzz", "bad name", ""] {
            r.breaker = Some(unknown);
            assert_eq!(status(&plan(&r, &s, names)), 404, "{unknown}");
        }
        r.breaker = Some("b/c");
        r.content_length = Some("65537");
        assert_eq!(status(&plan(&r, &s, names)), 413);
        r.content_length = Some("lots");
        assert_eq!(status(&plan(&r, &s, names)), 400);
        r.content_length = Some("65536");
        assert!(matches!(plan(&r, &s, names), Plan::Object { .. }));
    }

    #[test]
    fn the_object_knows_its_operations_and_methods() {
        assert_eq!(ObjectOp::at("/acquire", Verb::Post), Ok(ObjectOp::Acquire));
        assert_eq!(ObjectOp::at("/state", Verb::Get), Ok(ObjectOp::State));
        assert_eq!(ObjectOp::at("/state", Verb::Post), Ok(ObjectOp::State));
        assert_eq!(
            ObjectOp::at("/report", Verb::Get),
            Err(HttpError::ObjectMethod)
        );
        assert_eq!(
            ObjectOp::at("/state", Verb::Other),
            Err(HttpError::ObjectMethod)
        );
        assert_eq!(
            ObjectOp::at("/explode", Verb::Post),
            Err(HttpError::UnknownOperation)
        );
        for op in [
            ObjectOp::Acquire,
            ObjectOp::Report,
            ObjectOp::State,
            ObjectOp::Isolate,
            ObjectOp::Reset,
        ] {
            assert_eq!(ObjectOp::at(op.path(), op.verb()), Ok(op));
        }
    }

    #[test]
    fn an_object_keeps_the_first_name_it_serves() {
        assert_eq!(object_name(Some("a"), Some("a")), Ok(String::from("a")));
        assert_eq!(object_name(Some("a"), None), Ok(String::from("a")));
        assert_eq!(object_name(None, Some("b/c")), Ok(String::from("b/c")));
        let other = object_name(Some("a"), Some("b"))
            .err()
            .map(|a| (a.status, a.message));
        assert_eq!(
            other,
            Some((
                409,
                String::from("this object holds the breaker \"a\", not \"b\"")
            ))
        );
        assert_eq!(object_name(None, None).err().map(|a| a.status), Some(404));
        assert_eq!(
            object_name(None, Some("bad name")).err().map(|a| a.status),
            Some(404)
        );
    }

    #[test]
    fn a_reset_names_settings_or_keeps_them() {
        assert_eq!(reset_settings("", None), Ok(None));
        assert_eq!(reset_settings("  \n", None), Ok(None));
        let body = r#"{"lease_ms": 500, "breaker": {"open_duration_ms": 1000}}"#;
        let named = reset_settings(body, None);
        let json = named.ok().flatten().unwrap_or_default();
        assert!(json.contains("\"lease_ms\":500"), "{json}");
        let bad = reset_settings(r#"{"lease_ms": 0}"#, None)
            .err()
            .map(|a| (a.status, a.message));
        let (status, message) = bad.unwrap_or_default();
        assert_eq!(status, 400);
        assert!(
            message.contains("lease_ms") && message.contains('0'),
            "{message}"
        );
        assert!(reset_settings("not json", None).is_err());
        // Pinned: only the pinned settings, or none.
        let pinned = SharedSpec::new(crate::BreakerConfig::new()).with_lease_ms(500);
        let other = reset_settings(body, Some(&pinned)).err().map(|a| a.status);
        assert_eq!(other, Some(409));
        let same = reset_settings(r#"{"lease_ms": 500}"#, Some(&pinned));
        assert!(matches!(same, Ok(Some(_))), "{same:?}");
        assert_eq!(reset_settings("", Some(&pinned)), Ok(None));
    }

    #[test]
    fn a_bounded_body_stops_at_the_limit() {
        let mut body = BoundedBody::new(10);
        assert!(body.push(b"abcd"));
        assert!(body.push(b"efghij"));
        assert!(!body.push_with(1, |_| panic!("filled past the limit")));
        assert!(!body.push_with(usize::MAX, |_| panic!("filled past the limit")));
        assert!(body.push(b""));
        assert_eq!(body.len(), 10);
        assert_eq!(body.into_text(), "abcdefghij");
        let mut body = BoundedBody::new(10);
        assert!(body.push(&[b'a', 0xFF, b'b']));
        assert_eq!(body.into_text(), "a\u{FFFD}b");
        assert_eq!(BoundedBody::default().limit, MAX_BODY_BYTES);
        // The refusal's words say the limit it enforces.
        let words = HttpError::TooLarge.message();
        assert!(
            words.contains(&alloc::format!("({MAX_BODY_BYTES} bytes)")),
            "{words}"
        );
        assert!(
            words.contains(&alloc::format!("{} KiB", MAX_BODY_BYTES / 1024)),
            "{words}"
        );
    }

    #[test]
    fn the_bearer_scheme_is_matched_without_case() {
        for header in [
            "Bearer t0k",
            "bearer t0k",
            "BEARER t0k",
            "Bearer   t0k",
            "Bearer\tt0k",
        ] {
            assert_eq!(bearer_token(header), Some("t0k"), "{header}");
        }
        for header in ["Basic t0k", "Bearert0k", "t0k", "", "Bearer", "Bearer- t0k"] {
            assert_eq!(bearer_token(header), None, "{header}");
        }
        assert_eq!(authorize(Some("Bearer t0k "), Some("t0k")), Some(true));
        assert_eq!(authorize(Some("Bearer t0k"), Some("t0K")), Some(false));
        assert_eq!(authorize(None, Some("t0k")), Some(false));
        assert_eq!(authorize(Some("Bearer "), Some("t0k")), Some(false));
        assert_eq!(authorize(Some("Bearer t0k"), None), None);
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
