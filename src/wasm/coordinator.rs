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
// protocol's JSON passed as strings in both directions.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use super::layout::{step, verb as vb};
use super::{state_code, ts};

use crate::shared::json;
use crate::shared::protocol::{ErrorReply, Exchange};
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
        Ok(s) => s.validate().err().unwrap_or_default(),
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

// What `/admin/breakers/<rest>` addresses (`verb`: a [`layout::verb`]), among `names` (one
// per line): `"view|<name>"`, `"isolate|<name>"`, `"reset|<name>"`, `"405"` (a known breaker, the
// wrong method) or `"404"` (no breaker of that name).
#[wasm_bindgen]
pub fn admin_target(rest: &str, verb: u32, names: &str) -> String {
    use crate::shared::admin::{target, Target, Verb};
    let verb = match verb {
        vb::GET => Verb::Get,
        vb::POST => Verb::Post,
        _ => Verb::Other,
    };
    match target(rest, verb, |n| names.split('\n').any(|k| k == n)) {
        Target::View(name) => format!("view|{name}"),
        Target::Act(name, op) => format!("{op}|{name}"),
        Target::WrongMethod => String::from("405"),
        Target::Unknown => String::from("404"),
    }
}

// The objects' `/metrics` in the Prometheus text format, from their `/state` views (a JSON
// array); `"!why"` when the views are unreadable.
#[wasm_bindgen]
pub fn views_prometheus(views: &str) -> String {
    crate::shared::metrics::render_views_json(views)
        .unwrap_or_else(|| String::from("!unreadable views"))
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
        match self.inner.exchange(ts(now), &req, acquire) {
            Ok((reply, step)) => {
                self.step = step;
                self.status = 200;
                json::to_string(&reply)
            }
            Err(e) => error_json("bad_request", &e.to_string()),
        }
    }

    // The HTTP status of the last `exchange`'s answer: 200, 400 (`bad_request`: nothing
    // changed) or 503 (`unavailable`: a newer version's record, left as it is).
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
