// The shared breaker's boundary (feature `wasm-shared`): handles on the core's lease client and
// coordinator for `breakwater/shared` and `breakwater/store`, so that JavaScript carries
// messages and never decides anything. Built as its own module (`breakwater_shared.wasm`), which
// only those entries load: the protocol's JSON would otherwise weigh on every app.
//
// Encodings (owned by js/src/shared/*.ts):
// - Decision (`admit`, `on_acquire_reply`): a ticket handle ≥ 0 (admit); -1 acquire; -2 refresh;
//   -3 try again (an answer was unreadable: the client now counts the coordinator unreachable);
//   ≤ -4: a rejection, `-(4 + retry_after_ms × 4 + reason)`, reason 0 open, 1 half-open full,
//   2 isolated.
// - Outcome: 0 success, 1 failure, 2 ignored. State: 0 CLOSED, 1 OPEN, 2 HALF_OPEN, -1 unknown.
// - Tickets live in a ring of `TICKETS` slots inside the client: a handle whose slot was reused
//   (more than `TICKETS` calls started since) reports as an outcome without a ticket.
// - Messages are the protocol's JSON, passed as strings in both directions.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use super::layout::{lease_info, lease_opts};

use crate::breaker::{Outcome, RejectReason, State};
use crate::clock::Timestamp;
use crate::shared::json;
use crate::shared::protocol::{ErrorReply, Exchange, ExchangeReply};
use crate::shared::{
    ClientEvent, Coordinator, Decision, LeaseClient, LeaseOptions, LocalTime, OnMismatch,
    SharedSpec, Step, Ticket,
};

const TICKETS: usize = 4_096;

fn ts(now: f64) -> Timestamp {
    Timestamp::from_f64_millis(now)
}

fn lt(now: f64) -> LocalTime {
    LocalTime::from_f64_millis(now)
}

fn outcome(code: u32) -> Outcome {
    match code {
        0 => Outcome::Success,
        1 => Outcome::Failure,
        _ => Outcome::Ignored,
    }
}

fn state_code(s: Option<State>) -> f64 {
    match s {
        None => -1.0,
        Some(State::Closed) => 0.0,
        Some(State::Open) => 1.0,
        Some(State::HalfOpen) => 2.0,
    }
}

fn lease_options(opts: &[f64], fallback: &[f64]) -> Result<LeaseOptions, String> {
    let at = |i: usize| opts.get(i).copied().unwrap_or(f64::NAN);
    let config = super::breaker_config(fallback).map_err(|(f, e)| format!("fallback.{f}|{e}"))?;
    let o = LeaseOptions::new()
        .with_max_batch(super::int32(at(lease_opts::MAX_BATCH)))
        .with_fail_closed(at(lease_opts::FAIL_CLOSED) != 0.0)
        .with_retry_unreachable_ms(super::int(at(lease_opts::RETRY_UNREACHABLE)))
        .with_request_deadline_ms(super::int(at(lease_opts::REQUEST_DEADLINE)))
        .with_fallback(config);
    o.validate()
        .map_err(|e| format!("{}|{}", e.field, e.expected))?;
    Ok(o)
}

// "" when `opts` (laid out as `lease_opts`) and the local breaker's
// `fallback` configuration are valid, else `"field|expected"`.
#[wasm_bindgen]
pub fn check_lease(opts: &[f64], fallback: &[f64]) -> String {
    lease_options(opts, fallback).err().unwrap_or_default()
}

// The settings JSON (`{"breaker": …, "lease_ms": …}`) for a breaker configuration array (the
// main boundary's layout) and a lease, or `"!field|expected"`.
#[wasm_bindgen]
pub fn spec_json(cfg: &[f64], lease_ms: f64) -> String {
    let spec = match super::breaker_config(cfg) {
        Ok(c) => SharedSpec::new(c).with_lease_ms(super::int(lease_ms)),
        Err((f, e)) => return format!("!{f}|{e}"),
    };
    if let Err(e) = spec.validate() {
        return format!("!spec|{e}");
    }
    json::to_string(&spec)
}

#[wasm_bindgen]
pub struct WasmLeaseClient {
    inner: LeaseClient,
    tickets: Vec<(u64, Ticket)>,
    next: u64,
}

#[wasm_bindgen]
impl WasmLeaseClient {
    // A client, or `undefined` when the options are invalid (`check_lease` says why).
    pub fn create(
        id: &str,
        session: f64,
        opts: &[f64],
        fallback: &[f64],
    ) -> Option<WasmLeaseClient> {
        let o = lease_options(opts, fallback).ok()?;
        let inner = LeaseClient::new(id.into(), super::int(session), o).ok()?;
        Some(WasmLeaseClient {
            inner,
            tickets: Vec::new(),
            next: 0,
        })
    }

    fn decision(&mut self, d: Decision) -> f64 {
        match d {
            Decision::Admit(t) => {
                let handle = self.next;
                self.next += 1;
                let slot = (handle % TICKETS as u64) as usize;
                if let Some(s) = self.tickets.get_mut(slot) {
                    *s = (handle, t);
                } else {
                    self.tickets.push((handle, t));
                }
                handle as f64
            }
            Decision::Acquire => -1.0,
            Decision::Refresh => -2.0,
            Decision::Reject(r) => {
                let reason = match r.reason {
                    RejectReason::Open => 0,
                    RejectReason::HalfOpenFull => 1,
                    RejectReason::Isolated => 2,
                };
                -(4.0 + (r.retry_after_ms.min(1 << 48) * 4 + reason) as f64)
            }
        }
    }

    pub fn admit(&mut self, now: f64) -> f64 {
        let d = self.inner.admit(lt(now));
        self.decision(d)
    }

    pub fn acquire_request(&mut self) -> String {
        json::to_string(&self.inner.acquire_request())
    }

    pub fn on_acquire_reply(&mut self, now: f64, reply: &str) -> f64 {
        match json::from_str::<ExchangeReply>(reply) {
            Ok(r) => {
                let d = self.inner.on_acquire_reply(lt(now), &r);
                self.decision(d)
            }
            Err(e) => {
                self.inner
                    .on_unreachable(lt(now), false, format!("unreadable answer: {e}"));
                -3.0
            }
        }
    }

    // Returns whether a report is due.
    pub fn record(&mut self, now: f64, ticket: f64, outcome_code: u32) -> bool {
        let handle = super::int(ticket);
        let slot = (handle % TICKETS as u64) as usize;
        match self.tickets.get(slot) {
            Some(&(h, t)) if h == handle && handle < self.next => {
                // Reported once: the slot no longer answers to this handle.
                if let Some(s) = self.tickets.get_mut(slot) {
                    s.0 = u64::MAX;
                }
                self.inner.record(lt(now), t, outcome(outcome_code))
            }
            _ => self.inner.record_untracked(lt(now), outcome(outcome_code)),
        }
    }

    pub fn record_untracked(&mut self, now: f64, outcome_code: u32) -> bool {
        self.inner.record_untracked(lt(now), outcome(outcome_code))
    }

    pub fn flush_due(&self, now: f64) -> bool {
        self.inner.flush_due(lt(now))
    }

    pub fn begin_flush(&mut self, force: bool) -> Option<String> {
        let req = self.inner.begin_flush(force)?;
        Some(json::to_string(&req))
    }

    // False when the answer was unreadable (the client then counts the coordinator unreachable).
    pub fn on_flush_reply(&mut self, now: f64, reply: &str) -> bool {
        match json::from_str::<ExchangeReply>(reply) {
            Ok(r) => {
                self.inner.on_flush_reply(lt(now), &r);
                true
            }
            Err(e) => {
                self.inner
                    .on_unreachable(lt(now), true, format!("unreadable answer: {e}"));
                false
            }
        }
    }

    // The coordinator answered the report with a 4xx `status`.
    pub fn on_flush_refused(&mut self, now: f64, status: u16, reason: &str) {
        self.inner.on_flush_refused(lt(now), status, reason);
    }

    // The coordinator answered an acquire with a 4xx `status`.
    pub fn on_acquire_refused(&mut self, now: f64, status: u16, reason: &str) {
        self.inner.on_acquire_refused(lt(now), status, reason);
    }

    // The host gave up on the requests it had in flight (no answer will be fed back).
    pub fn abandon(&mut self, now: f64) {
        self.inner.abandon(lt(now));
    }

    pub fn on_unreachable(&mut self, now: f64, was_flush: bool, reason: &str) {
        self.inner.on_unreachable(lt(now), was_flush, reason.into());
    }

    // The next event as JSON: `{"type":"state","from":…,"to":…}`, `{"type":"fallback","reason":…}` (with
    // `status` for a refusal, and `misconfigured` when that is a configuration mistake),
    // `{"type":"recovered"}`, `{"type":"dropped","outcomes":…,"reason":…}`.
    pub fn next_event(&mut self) -> Option<String> {
        let e = self.inner.next_event()?;
        let hint = e.misconfiguration();
        // The keys in alphabetical order, as before (serde_json's `json!` sorted them).
        let mut w = json::Writer::default();
        w.open('{');
        match e {
            ClientEvent::StateChanged { from, to } => {
                w.field("from", &from.map(State::as_str).map(String::from));
                w.field("to", &String::from(to.as_str()));
                w.key("type");
                w.str("state");
            }
            ClientEvent::Fallback { reason, status } => {
                if let (Some(_), Some(hint)) = (status, hint) {
                    w.key("misconfigured");
                    w.str(hint);
                }
                w.field("reason", &reason);
                if let Some(status) = status {
                    w.field("status", &status);
                }
                w.key("type");
                w.str("fallback");
            }
            ClientEvent::Recovered => {
                w.key("type");
                w.str("recovered");
            }
            ClientEvent::Dropped { outcomes, reason } => {
                w.field("outcomes", &outcomes);
                w.field("reason", &reason);
                w.key("type");
                w.str("dropped");
            }
        }
        w.close('}');
        Some(w.finish())
    }

    // Laid out as [`lease_info`](super::layout::lease_info).
    pub fn info(&self, now: f64) -> Vec<f64> {
        let c = &self.inner;
        let mut v = alloc::vec![0.0; lease_info::LEN];
        v[lease_info::KNOWN_STATE] = state_code(c.known_state());
        v[lease_info::IN_FALLBACK] = c.in_fallback() as u8 as f64;
        v[lease_info::IN_FLIGHT] = c.in_flight() as u8 as f64;
        v[lease_info::REQUESTS] = c.requests() as f64;
        v[lease_info::UNACKNOWLEDGED] = c.unacknowledged() as f64;
        v[lease_info::DROPPED] = c.dropped() as f64;
        v[lease_info::LOCAL_STATE] = state_code(Some(c.local().state_at(ts(now))));
        v
    }
}

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

// What `/admin/breakers/<rest>` addresses (`verb`: 0 GET, 1 POST, 2 other), among `names` (one
// per line): `"view|<name>"`, `"isolate|<name>"`, `"reset|<name>"`, `"405"` (a known breaker, the
// wrong method) or `"404"` (no breaker of that name).
#[wasm_bindgen]
pub fn admin_target(rest: &str, verb: u32, names: &str) -> String {
    use crate::shared::admin::{target, Target, Verb};
    let verb = match verb {
        0 => Verb::Get,
        1 => Verb::Post,
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
        json::to_string(&self.inner.view(ts(now)))
    }

    // Whether the last step must be persisted.
    pub fn changed(&self) -> bool {
        self.step.changed || self.inner.must_rewrite()
    }

    // The last step's transitions as `[from, to, at, …]` (state codes, ms).
    pub fn transitions(&self) -> Vec<f64> {
        let mut out = Vec::new();
        for t in &self.step.transitions {
            out.push(state_code(Some(t.from)));
            out.push(state_code(Some(t.to)));
            out.push(t.at.0 as f64);
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
