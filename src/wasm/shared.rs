// The lease client's boundary (feature `wasm-shared`): a handle on the core's lease client for
// `breakwater/shared`, so that JavaScript carries messages and never decides anything. Built as
// a module of its own (`breakwater_shared.wasm`), which only that entry loads: the protocol's
// JSON would otherwise weigh on every app. The coordinator's module
// (`breakwater_coordinator.wasm`, feature `wasm-coordinator`, which enables this one) exports
// these too, beside src/wasm/coordinator.rs: a store or a Worker hosting the object runs clients
// as well, and then loads that module alone. A client elsewhere loads only this one, without the
// coordinator's code.
//
// Encodings (owned by js/src/shared/*.ts, named in src/wasm/layout.rs):
// - Decision (`admit`, `admit_again`, `on_answer`): a ticket handle ≥ 0 (admit),
//   `layout::decision`'s negatives (acquire, refresh; after an answer: decide again, send a
//   report, nothing), or a refusal, encoded as the main module's (`layout::reject`, at most
//   `-reject::SCALE`, below the decisions).
// - `layout::op` codes: which request an answer is for.
// - `layout::outcome` codes; `layout::state` codes, `sentinel::NONE` unknown.
// - Tickets live in a ring of `TICKETS` slots inside the client: a handle whose slot was reused
//   (more than `TICKETS` calls started since) reports as an outcome without a ticket.
// - Messages are the protocol's JSON, passed as strings in both directions.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use super::layout::{decision, lease_info, lease_opts, limit, op};
use super::{outcome, state_code, ts};

use crate::breaker::{RejectReason, State};
use crate::shared::json;
use crate::shared::protocol::{ClientId, ExchangeReply};
use crate::shared::{
    Answer, Background, ClientEvent, Decision, LeaseClient, LeaseOptions, LocalTime, Next, Op,
    SharedSpec, SpecError, Ticket,
};

const TICKETS: usize = limit::TICKETS as usize;

fn lt(now: f64) -> LocalTime {
    LocalTime::from_f64_millis(now)
}

// A refused setting as the TypeScript layer words it: `"field|refusal"`, the field as the core
// spells it under `section` (`max_batch`, `local.open_jitter`, `breaker.trip.threshold`,
// `lease_ms`) and the value with why (`SpecError::refusal`). The layer names the option.
fn refused(section: &str, e: &SpecError) -> String {
    match e.breaker_field() {
        Some(field) => format!("{section}{field}|{}", e.refusal()),
        None => format!("lease_ms|{}", e.refusal()),
    }
}

fn lease_options(opts: &[f64], fallback: &[f64]) -> Result<LeaseOptions, String> {
    let at = |i: usize| opts.get(i).copied().unwrap_or(f64::NAN);
    let config =
        super::breaker_config(fallback).map_err(|e| refused("local.", &SpecError::Breaker(e)))?;
    let o = LeaseOptions::new()
        .with_max_batch(super::int32(at(lease_opts::MAX_BATCH)))
        .with_fail_closed(at(lease_opts::FAIL_CLOSED) != 0.0)
        .with_retry_unreachable_ms(super::int(at(lease_opts::RETRY_UNREACHABLE)))
        .with_request_deadline_ms(super::int(at(lease_opts::REQUEST_DEADLINE)))
        .with_local(config);
    o.validate()
        .map_err(|e| refused("", &SpecError::Breaker(e)))?;
    Ok(o)
}

// "" when `opts` (laid out as `lease_opts`) and the local breaker's configuration `fallback` are
// valid, else the first refused setting (`refused`).
#[wasm_bindgen]
pub fn check_lease(opts: &[f64], fallback: &[f64]) -> String {
    lease_options(opts, fallback).err().unwrap_or_default()
}

// The settings JSON (`{"breaker": …, "lease_ms": …}`) for a breaker configuration array (the
// main boundary's layout) and a lease, or `"!"` and the first refused setting (`refused`).
#[wasm_bindgen]
pub fn spec_json(cfg: &[f64], lease_ms: f64) -> String {
    let spec = super::breaker_config(cfg)
        .map(|c| SharedSpec::new(c).with_lease_ms(super::int(lease_ms)))
        .map_err(SpecError::Breaker)
        .and_then(|spec| spec.validate().map(|()| spec));
    match spec {
        Ok(spec) => json::to_string(&spec),
        Err(e) => format!("!{}", refused("breaker.", &e)),
    }
}

// Whether `name` is a breaker name (the core's one rule, `crate::name::validate_name`).
#[wasm_bindgen]
pub fn is_breaker_name(name: &str) -> bool {
    crate::name::validate_name(name).is_ok()
}

// Whether `id` is a client identifier (the protocol's `ClientId`).
#[wasm_bindgen]
pub fn is_client_id(id: &str) -> bool {
    ClientId::new(id).is_some()
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
            Decision::Acquire => -decision::ACQUIRE as f64,
            Decision::Refresh => -decision::REFRESH as f64,
            Decision::Reject(r) => super::encode_rejected(r),
        }
    }

    pub fn admit(&mut self, now: f64) -> f64 {
        let d = self.inner.admit(lt(now));
        self.decision(d)
    }

    // `admit` for a caller that cannot wait: never acquire or refresh (what to send in the
    // background is `take_background`'s).
    pub fn admit_now(&mut self, now: f64) -> f64 {
        let d = self.inner.admit_now(lt(now));
        self.decision(d)
    }

    // What `admit_now` left to send in the background, once: 0 nothing, `decision::ACQUIRE`
    // or `decision::REFRESH`.
    pub fn take_background(&mut self) -> u32 {
        match self.inner.take_background() {
            None => 0,
            Some(Background::Acquire) => decision::ACQUIRE as u32,
            Some(Background::Refresh) => decision::REFRESH as u32,
        }
    }

    // `admit` for a call that has waited on `round` requests already: refused as open from the
    // core's `ADMIT_ROUNDS` on.
    pub fn admit_again(&mut self, now: f64, round: u32) -> f64 {
        let d = self.inner.admit_again(lt(now), round);
        self.decision(d)
    }

    // Feeds the coordinator's answer to the request `op` (a `layout::op` code): `status` 200
    // with the protocol's JSON in `text`, a 4xx with what went wrong in `text`, or anything else
    // (0: no answer) with why in `text`. Answers a ticket or a refusal (as `admit`) for the call
    // an acquire held, or `-decision::AGAIN`, `-decision::REPORT`, `-decision::IDLE`.
    pub fn on_answer(&mut self, now: f64, op: u32, status: u16, text: &str) -> f64 {
        let op = match op {
            op::ACQUIRE => Op::Acquire,
            op::BACKGROUND_ACQUIRE => Op::BackgroundAcquire,
            _ => Op::Report,
        };
        let reply;
        let unreadable;
        let answer = match status {
            200 => match json::from_str::<ExchangeReply>(text) {
                Ok(r) => {
                    reply = r;
                    Answer::Reply(&reply)
                }
                Err(e) => {
                    unreadable = format!("unreadable answer: {e}");
                    Answer::Unreachable(&unreadable)
                }
            },
            400..=499 => Answer::Refused {
                status,
                reason: text,
            },
            _ => Answer::Unreachable(text),
        };
        match self.inner.on_answer(lt(now), op, answer) {
            Next::Admit(t) => self.decision(Decision::Admit(t)),
            Next::Reject(r) => self.decision(Decision::Reject(r)),
            Next::Again => -decision::AGAIN as f64,
            Next::Report => -decision::REPORT as f64,
            Next::Idle => -decision::IDLE as f64,
        }
    }

    // The state this process acts on (a `layout::state` code).
    pub fn state(&self, now: f64) -> f64 {
        state_code(Some(self.inner.state_at(lt(now))))
    }

    // 0 when a call would be admitted (or ask), else the refusal, encoded as `admit`'s.
    pub fn peek(&self, now: f64) -> f64 {
        match self.inner.peek(lt(now)) {
            Ok(()) => 0.0,
            Err(r) => super::encode_rejected(r),
        }
    }

    pub fn acquire_request(&mut self) -> String {
        json::to_string(&self.inner.acquire_request())
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

    // The host gave up on the requests it had in flight (no answer will be fed back).
    pub fn abandon(&mut self, now: f64) {
        self.inner.abandon(lt(now));
    }

    // The next event as JSON: `{"type":"state","from":…,"to":…}`, `{"type":"local","reason":…}` (with
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
            ClientEvent::Local { reason, status } => {
                if let (Some(_), Some(hint)) = (status, hint) {
                    w.key("misconfigured");
                    w.str(hint);
                }
                w.field("reason", &reason);
                if let Some(status) = status {
                    w.field("status", &status);
                }
                w.key("type");
                w.str("local");
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
        v[lease_info::IN_FALLBACK] = c.deciding_locally() as u8 as f64;
        v[lease_info::IN_FLIGHT] = c.in_flight() as u8 as f64;
        v[lease_info::REQUESTS] = c.requests() as f64;
        v[lease_info::UNACKNOWLEDGED] = c.unacknowledged() as f64;
        v[lease_info::DROPPED] = c.dropped() as f64;
        v[lease_info::LOCAL_STATE] = state_code(Some(c.local().state_at(ts(now))));
        let s = c.stats();
        v[lease_info::ADMITTED] = s.admitted as f64;
        v[lease_info::REJECTED] = s.rejected as f64;
        v[lease_info::THROTTLED] = s.throttled as f64;
        v[lease_info::SUCCESSES] = s.successes as f64;
        v[lease_info::FAILURES] = s.failures as f64;
        v[lease_info::IGNORED] = s.ignored as f64;
        v[lease_info::THROTTLE] = c.throttle_probability(ts(now));
        v
    }
}
