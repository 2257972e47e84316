// The coordinator's boundary (feature `wasm-coordinator`): handles on the core's coordinator,
// and what `breakwater/cloudflare`'s object and routes ask of the core (`breakers()`,
// `admin_target()`, `views_prometheus()`), for `breakwater/store` and `breakwater/cloudflare`.
// Built as a module of its own (`breakwater_coordinator.wasm`), loaded through the hidden
// `breakwater/coordinator`: only a store or a Worker hosting the object runs a coordinator. The
// feature enables `wasm-shared`, so the module also exports the lease client
// (src/wasm/shared.rs): such a host runs clients too (a `StoreCircuitBreaker` is one) and loads
// this module alone, not the lease client's as well. The code is the core's (src/shared/); this
// file only chooses what the module exports.
//
// Encodings (owned by js/src/hosts/store.ts and js/src/hosts/cloudflare.ts, named in src/wasm/layout.rs):
// `layout::state` codes, `layout::verb` methods, transitions laid out as `layout::step`; the
// protocol's JSON passed as strings in both directions. Text answers, as src/wasm/shared.rs's:
// `""` for none, `undefined` for an input that cannot be read, and `"!"` before the words of a
// refusal meant for a person (`breakers`: which breaker, field and value of `BREAKERS`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use super::layout::{body as rb, http, plan as rp, step, verb as vb};
use super::{state_code, ts};

use crate::shared::json;
use crate::shared::protocol::{ErrorReply, Exchange, ExchangeOp};
use crate::shared::{Coordinator, OnMismatch, SharedSpec, Step};

#[wasm_bindgen]
pub struct WasmCoordinator {
    inner: Coordinator,
    step: Step,
    status: u16,
}

fn error_json(code: &str, message: &str) -> String {
    json::to_string(&ErrorReply {
        error: code.into(),
        message: message.into(),
    })
}

// "" when the settings JSON is valid, else why.
#[wasm_bindgen]
pub fn check_spec(spec: &str) -> String {
    match json::from_str::<SharedSpec>(spec) {
        Ok(s) => s
            .validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default(),
        Err(e) => format!("invalid settings: {e}"),
    }
}

// A `BREAKERS` document (the Worker's variable: a JSON object of name → settings), read by the
// core's parser: with `name` "", the names it declares, one per line; else that breaker's
// settings JSON, or "" when it declares no such name. `"!why"` when the document is invalid
// (the reason names the breaker, the field and the value).
#[wasm_bindgen]
pub fn breakers(text: &str, name: &str) -> String {
    let list = match crate::shared::spec::read_breakers(text) {
        Ok(l) => l,
        Err(e) => return format!("!{e}"),
    };
    if name.is_empty() {
        let names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
        return names.join("\n");
    }
    list.iter()
        .find(|(n, _)| n == name)
        .map(|(_, spec)| json::to_string(spec))
        .unwrap_or_default()
}

// The settings JSON a stored record runs under, or "" when it holds none (or none readable).
#[wasm_bindgen]
pub fn stored_spec(record: &str) -> String {
    json::from_str::<crate::shared::Record>(record)
        .ok()
        .and_then(|r| r.spec)
        .filter(|spec| spec.validate().is_ok())
        .map(|spec| json::to_string(&spec))
        .unwrap_or_default()
}

// What the routes do with a request (`crate::shared::routes::plan`): `verb` a `layout::verb`,
// `path` below the mount point; the served names are `names` (one per line) when given, else
// those `BREAKERS` (`breakers`, its text) declares, read only once the token is checked.
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen]
pub fn route(
    verb: u32,
    path: &str,
    breaker: Option<String>,
    prometheus: bool,
    authorization: Option<String>,
    content_length: Option<String>,
    admin: Option<String>,
    service: Option<String>,
    names: Option<String>,
    breakers: Option<String>,
) -> WasmRoute {
    use crate::shared::routes::{plan, Body, Plan, RouteRequest, Secrets};
    let req = RouteRequest {
        method: method_of(verb),
        path,
        breaker: breaker.as_deref(),
        prometheus,
        authorization: authorization.as_deref(),
        content_length: content_length.as_deref(),
    };
    let secrets = Secrets {
        admin: admin.as_deref(),
        service: service.as_deref(),
    };
    let served = move || match (names, breakers) {
        (Some(list), _) => Ok(list
            .split('\n')
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect()),
        (None, Some(text)) => crate::shared::spec::read_breakers(&text)
            .map(|l| l.into_iter().map(|(n, _)| n).collect()),
        (None, None) => Ok(Vec::new()),
    };
    let mut r = WasmRoute::default();
    match plan(&req, &secrets, served) {
        Plan::Pass => r.kind = rp::PASS,
        Plan::Answer(a) => r = WasmRoute::answer(&a),
        Plan::Metrics { prometheus, names } => {
            r.kind = rp::METRICS;
            r.prometheus = prometheus;
            r.names = names.join("\n");
        }
        Plan::Status { names } => {
            r.kind = rp::STATUS;
            r.names = names.join("\n");
        }
        Plan::Object { name, op, body } => {
            r.kind = rp::OBJECT;
            r.name = name;
            r.op = op.path().into();
            r.get = op.verb() == crate::shared::admin::Verb::Get;
            r.body = match body {
                Body::None => rb::NONE,
                Body::Exchange => rb::EXCHANGE,
                Body::Settings => rb::SETTINGS,
            };
        }
    }
    r
}

fn method_of(verb: u32) -> crate::shared::admin::Verb {
    use crate::shared::admin::Verb;
    match verb {
        vb::GET => Verb::Get,
        vb::POST => Verb::Post,
        _ => Verb::Other,
    }
}

// A refusal the host meets while doing what a plan says (`code`: a `layout::http`): a body too
// large or unreadable, an object unreachable or unreadable, a reset naming settings `BREAKERS`
// pins.
#[wasm_bindgen]
pub fn refusal(code: u32) -> WasmRoute {
    use crate::shared::routes::HttpError;
    let e = match code {
        http::TOO_LARGE => HttpError::TooLarge,
        http::UNREACHABLE => HttpError::Unreachable,
        http::BAD_GATEWAY => HttpError::BadGateway,
        http::SETTINGS_PINNED => HttpError::SettingsPinned,
        http::STORAGE => HttpError::Storage,
        http::INTERNAL => HttpError::Internal,
        http::UNKNOWN_BREAKER => HttpError::UnknownBreaker,
        http::NO_SUCH_ROUTE => HttpError::NoSuchRoute,
        _ => HttpError::UnreadableBody,
    };
    WasmRoute::answer(&e.answer())
}

// The object's side of a request (`crate::shared::routes::ObjectOp::at`): the operation at
// `path` with `verb`, as `op` of a `layout::plan::OBJECT` route, or the refusal.
#[wasm_bindgen]
pub fn object_op(path: &str, verb: u32) -> WasmRoute {
    match crate::shared::routes::ObjectOp::at(path, method_of(verb)) {
        Ok(op) => WasmRoute {
            kind: rp::OBJECT,
            op: op.path().into(),
            ..WasmRoute::default()
        },
        Err(e) => WasmRoute::answer(&e.answer()),
    }
}

// A reset's body (`crate::shared::routes::reset_settings`), `pinned` the settings JSON
// `BREAKERS` pins: `layout::plan::OBJECT` with the
// settings it names in `settings` ("" for none), or the refusal naming the field.
#[wasm_bindgen]
pub fn reset_settings(body: &str, pinned: Option<String>) -> WasmRoute {
    let pinned = pinned.and_then(|p| json::from_str::<SharedSpec>(&p).ok());
    match crate::shared::routes::reset_settings(body, pinned.as_ref()) {
        Ok(settings) => WasmRoute {
            kind: rp::OBJECT,
            settings: settings.unwrap_or_default(),
            ..WasmRoute::default()
        },
        Err(a) => WasmRoute::answer(&a),
    }
}

// What a host does next, read through getters: `kind` a `layout::plan`; for `ANSWER` the whole
// answer (`status`, `body` JSON, `challenge`: add `WWW-Authenticate: Bearer`, `log`: log this
// as an error); for `METRICS` `prometheus` and `names` (one per line); for `OBJECT` the `name`,
// `op` (its path), `get` (else POST) and `body` (a `layout::body`).
#[wasm_bindgen]
#[derive(Default)]
pub struct WasmRoute {
    kind: u32,
    status: u16,
    body_json: String,
    challenge: bool,
    log: String,
    prometheus: bool,
    names: String,
    name: String,
    op: String,
    get: bool,
    body: u32,
    settings: String,
}

impl WasmRoute {
    fn answer(a: &crate::shared::routes::Answer) -> Self {
        WasmRoute {
            kind: rp::ANSWER,
            status: a.status,
            body_json: a.body(),
            challenge: a.challenge,
            log: a.log.clone().unwrap_or_default(),
            ..WasmRoute::default()
        }
    }
}

#[wasm_bindgen]
impl WasmRoute {
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> u32 {
        self.kind
    }
    #[wasm_bindgen(getter)]
    pub fn status(&self) -> u16 {
        self.status
    }
    #[wasm_bindgen(getter, js_name = "answer")]
    pub fn body_json(&self) -> String {
        self.body_json.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn challenge(&self) -> bool {
        self.challenge
    }
    #[wasm_bindgen(getter)]
    pub fn log(&self) -> String {
        self.log.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn prometheus(&self) -> bool {
        self.prometheus
    }
    #[wasm_bindgen(getter)]
    pub fn names(&self) -> String {
        self.names.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn op(&self) -> String {
        self.op.clone()
    }
    #[wasm_bindgen(getter)]
    pub fn get(&self) -> bool {
        self.get
    }
    #[wasm_bindgen(getter)]
    pub fn body(&self) -> u32 {
        self.body
    }
    #[wasm_bindgen(getter)]
    pub fn settings(&self) -> String {
        self.settings.clone()
    }
}

// A request body read chunk by chunk up to the protocol's limit
// (`crate::shared::routes::BoundedBody`): `push` answers false, and keeps nothing of the chunk,
// once the limit would be passed; the host then cancels the stream.
#[wasm_bindgen]
pub struct WasmBody(crate::shared::routes::BoundedBody);

#[wasm_bindgen]
impl WasmBody {
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> WasmBody {
        WasmBody(crate::shared::routes::BoundedBody::default())
    }
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        self.0.push(chunk)
    }
    // The bytes (the host decodes them, invalid UTF-8 replaced); the body is emptied.
    pub fn bytes(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.0).into_bytes()
    }
}

// The breaker an object holds (`crate::shared::routes::object_name`): `layout::plan::OBJECT` with
// the `name`, or the refusal.
#[wasm_bindgen]
pub fn object_name(kept: Option<String>, asked: Option<String>) -> WasmRoute {
    match crate::shared::routes::object_name(kept.as_deref(), asked.as_deref()) {
        Ok(name) => WasmRoute {
            kind: rp::OBJECT,
            name,
            ..WasmRoute::default()
        },
        Err(a) => WasmRoute::answer(&a),
    }
}

// A declared `content-length` (`crate::shared::routes::check_length`): `layout::plan::PASS`
// when it may be read, else the refusal.
#[wasm_bindgen]
pub fn check_length(content_length: Option<String>) -> WasmRoute {
    match crate::shared::routes::check_length(content_length.as_deref()) {
        Ok(()) => WasmRoute::default(),
        Err(e) => WasmRoute::answer(&e.answer()),
    }
}

// The record's storage key (`crate::shared::coordinator::STORAGE_KEY`), for the object.
#[wasm_bindgen]
pub fn storage_key() -> String {
    crate::shared::coordinator::STORAGE_KEY.into()
}

// The objects' `/metrics` in the Prometheus text format, from their `/state` views (a JSON
// array); `undefined` when the views are unreadable.
#[wasm_bindgen]
pub fn views_prometheus(views: &str) -> Option<String> {
    crate::shared::metrics::render_views_json(views)
}

// The status page (`crate::shared::status`) for the `/state` views (a JSON array) at `now` (ms
// since the epoch); `undefined` when the views are unreadable.
#[wasm_bindgen]
pub fn status_page(views: &str, now: f64) -> Option<String> {
    crate::shared::status::render_json(views, ts(now).0)
}

// The status page's response headers, `name: value` a line.
#[wasm_bindgen]
pub fn status_headers() -> String {
    let mut out = String::new();
    for (name, value) in crate::shared::status::HEADERS {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    }
    out
}

#[wasm_bindgen]
impl WasmCoordinator {
    // The coordinator for a stored record (`undefined` or "" when there is none), running under
    // `spec` (JSON; `undefined` when invalid: `check_spec` says why). `adopt`: with settings that
    // differ from the record's, keep the record's (else install these).
    pub fn create(
        name: &str,
        spec: &str,
        record: Option<String>,
        adopt: bool,
    ) -> Option<WasmCoordinator> {
        let spec = json::from_str::<SharedSpec>(spec).ok()?;
        let record = record.filter(|r| !r.is_empty());
        let policy = if adopt {
            OnMismatch::Adopt
        } else {
            OnMismatch::Install
        };
        let inner = Coordinator::load_json(name, spec, record.as_deref(), policy).ok()?;
        Some(WasmCoordinator {
            inner,
            step: Step::default(),
            status: 200,
        })
    }

    // `/acquire` (true) or `/report`: the reply JSON, or `{"error":"bad_request",…}`.
    pub fn exchange(&mut self, now: f64, req: &str, acquire: bool) -> String {
        let op = ExchangeOp::acquire_if(acquire);
        self.step = Step::default();
        self.status = 400;
        let req = match json::from_str::<Exchange>(req) {
            Ok(r) => r,
            Err(e) => return error_json("bad_request", &format!("invalid JSON: {e}")),
        };
        if let Some(why) = self.inner.unavailable() {
            self.status = 503;
            return error_json("unavailable", why);
        }
        match self.inner.exchange(ts(now), &req, op) {
            Ok((reply, step)) => {
                self.step = step;
                self.status = 200;
                json::to_string(&reply)
            }
            Err(e) => {
                self.status = e.status();
                error_json(e.code(), &e.to_string())
            }
        }
    }

    // The HTTP status of the last `exchange`'s answer: 200, 400 (`bad_request`: nothing
    // changed), 429 (`too_many_requests`: the session sent too many requests; nothing changed
    // but a counter, kept in memory) or 503 (`unavailable`: a newer version's record, left as
    // it is).
    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn isolate(&mut self, now: f64) {
        self.step = self.inner.isolate(ts(now));
    }

    pub fn reset(&mut self, now: f64) {
        self.step = self.inner.reset(ts(now));
    }

    pub fn view(&mut self, now: f64) -> String {
        json::to_string(&self.inner.counted_view(ts(now)))
    }

    // Whether the last step must be persisted.
    pub fn changed(&self) -> bool {
        self.step.changed || self.inner.must_rewrite()
    }

    // The last step's transitions, each laid out as [`layout::step`] (state codes, ms).
    pub fn transitions(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.step.transitions.len() * step::LEN);
        for t in &self.step.transitions {
            let mut one = [0.0; step::LEN];
            one[step::FROM] = state_code(Some(t.from));
            one[step::TO] = state_code(Some(t.to));
            one[step::AT] = t.at.0 as f64;
            out.extend_from_slice(&one);
        }
        out
    }

    pub fn record(&self) -> String {
        self.inner.record_json().unwrap_or_default()
    }

    // Whether the record may expire (a CLOSED, automatic breaker with no probe outstanding).
    pub fn may_expire(&self) -> bool {
        self.inner.may_expire()
    }
}
