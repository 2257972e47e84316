//! `BreakerObject`: the Durable Object holding one breaker, named after it.
//!
//! Habits: `new` does no I/O; the record is loaded on the first request. Each request first
//! awaits what is not storage (its body), then takes one synchronous step on the coordinator, then
//! persists; no `RefCell` borrow is held across an `.await`. Durable Object input gates keep
//! other events out while a storage operation is pending, and the output gate holds the answer
//! until the write is confirmed, so transitions are reported (logged, answered) after commit.

use core::cell::RefCell;

use alloc::format;
use alloc::string::{String, ToString};

use worker::{console_error, console_log, durable_object, Env, Method, Request, Response, Result};

use super::config::SharedSpec;
use super::coordinator::{Coordinator, OnMismatch, Step, STORAGE_KEY};
use super::protocol::{Exchange, ExchangeOp};
use super::routes::{answer_response, error_response, json_response, load_breakers, read_body};
use crate::clock::Timestamp;
use crate::shared::admin::Verb;
use crate::shared::json;
use crate::shared::routes::{object_name, reset_settings, HttpError, ObjectOp as Op};

/// The Durable Object class (`class_name = "BreakerObject"` in `wrangler.toml`).
#[durable_object]
pub struct BreakerObject {
    state: worker::State,
    env: Env,
    coordinator: RefCell<Option<Coordinator>>,
    /// The record as last stored: what the coordinator goes back to when a write fails, so that
    /// nothing it granted or counted meanwhile (a probe slot, a batch) outlives the failure.
    stored: RefCell<Option<String>>,
    /// The breaker's name, when the id does not carry it: the first one a request named.
    name: RefCell<Option<String>>,
}

impl worker::DurableObject for BreakerObject {
    fn new(state: worker::State, env: Env) -> Self {
        BreakerObject {
            state,
            env,
            coordinator: RefCell::new(None),
            stored: RefCell::new(None),
            name: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match self.handle(req).await {
            Ok(resp) => Ok(resp),
            Err(e) => {
                console_error!("breakwater object: {e}");
                answer_response(&HttpError::Internal.answer())
            }
        }
    }
}

fn now() -> Timestamp {
    Timestamp(worker::Date::now().as_millis())
}

/// A value, or the response that ends the request early.
type Early<T> = core::result::Result<T, Result<Response>>;

/// What a request asks, read before any storage is touched.
struct Parsed {
    op: Op,
    /// The body of `/acquire` and `/report`.
    exchange: Option<Exchange>,
    name: String,
    spec: SharedSpec,
}

/// What one step answers, and the record to persist if the step changed it.
struct Stepped {
    body: String,
    step: Step,
    record: Option<core::result::Result<String, String>>,
}

impl BreakerObject {
    /// Parse, load, one step, persist, answer.
    async fn handle(&self, mut req: Request) -> Result<Response> {
        // 1. Everything that is not storage first: the operation, its body, the breaker.
        let parsed = match self.parse(&mut req).await {
            Ok(p) => p,
            Err(resp) => return resp,
        };
        let name = &parsed.name;
        // 2. Load lazily (storage only; the input gate keeps other events out meanwhile).
        if let Err(e) = self.ensure_loaded(name, parsed.spec).await {
            console_error!("breakwater object {name}: {e}");
            return error_response(500, "misconfigured", &e);
        }
        // 3. One synchronous step.
        let stepped = match self.step(&parsed) {
            Ok(s) => s,
            Err(resp) => return resp,
        };
        // 4. Persist, then answer.
        if let Some(record) = stepped.record {
            if let Err(resp) = self.persist(&parsed, record).await {
                return resp;
            }
        }
        answer(name, &stepped.step, stepped.body)
    }

    /// The operation, its body, and which breaker: the object's own name, which must be
    /// configured.
    async fn parse(&self, req: &mut Request) -> Early<Parsed> {
        let method = match req.method() {
            Method::Get => Verb::Get,
            Method::Post => Verb::Post,
            _ => Verb::Other,
        };
        let op = Op::at(&req.path(), method).map_err(|e| answer_response(&e.answer()))?;
        let body = match read_body(req).await {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => return Err(answer_response(&e.answer())),
            Err(_) => return Err(answer_response(&HttpError::UnreadableBody.answer())),
        };
        let exchange = match op {
            Op::Acquire | Op::Report => match json::from_str::<Exchange>(&body) {
                Ok(x) => Some(x),
                Err(e) => {
                    return Err(error_response(
                        400,
                        "bad_request",
                        &format!("invalid JSON: {e}"),
                    ))
                }
            },
            _ => None,
        };
        // An id made by `idFromName` does not always carry the name (`wrangler dev` addresses
        // an object of another process by `id.toString()`), so clients also send it
        // (`?breaker=`); the first name an object serves is the one it keeps.
        let name = self.name(req)?;
        let spec = match load_breakers(&self.env) {
            Ok(map) => match map.get(&name) {
                Some(spec) => *spec,
                None => {
                    return Err(error_response(
                        404,
                        "not_found",
                        "no breaker of that name is configured",
                    ))
                }
            },
            Err(e) => {
                console_error!("breakwater: {e}");
                return Err(error_response(500, "misconfigured", &e));
            }
        };
        // Every breaker of this Worker runs under `BREAKERS`: a reset that names other settings
        // is refused by name, not obeyed in part.
        if op == Op::Reset {
            reset_settings(&body, Some(&spec)).map_err(|a| answer_response(&a))?;
        }
        self.name.borrow_mut().get_or_insert_with(|| name.clone());
        Ok(Parsed {
            op,
            exchange,
            name,
            spec,
        })
    }

    /// One synchronous step of the coordinator; no borrow outlives it.
    fn step(&self, parsed: &Parsed) -> Early<Stepped> {
        let now = now();
        let mut guard = self.coordinator.borrow_mut();
        let Some(coordinator) = guard.as_mut() else {
            return Err(error_response(500, "internal", "breaker not loaded"));
        };
        let (body, step) = match (&parsed.op, &parsed.exchange) {
            (Op::Acquire | Op::Report, Some(x)) => {
                let op = match parsed.op {
                    Op::Acquire => ExchangeOp::Acquire,
                    _ => ExchangeOp::Report,
                };
                if let Some(why) = coordinator.unavailable() {
                    // A newer version's record (a rollback): left as it is; clients keep
                    // their local breakers until an operator resets it.
                    return Err(error_response(503, "unavailable", why));
                }
                match coordinator.exchange(now, x, op) {
                    Ok((reply, step)) => (json::to_string(&reply), step),
                    Err(e) => return Err(error_response(e.status(), e.code(), &e.to_string())),
                }
            }
            (Op::Isolate, _) => {
                let step = coordinator.isolate(now);
                (json::to_string(&coordinator.counted_view(now)), step)
            }
            (Op::Reset, _) => {
                let step = coordinator.reset(now);
                (json::to_string(&coordinator.counted_view(now)), step)
            }
            _ => (
                json::to_string(&coordinator.counted_view(now)),
                Step::default(),
            ),
        };
        let record = step.changed.then(|| coordinator.record_json());
        Ok(Stepped { body, step, record })
    }

    /// Stores the record the step wrote. A write that fails puts the coordinator back to what is
    /// stored: the client hears 503 and will ask again, so a probe granted or a batch applied
    /// in this step must not stay in memory.
    async fn persist(
        &self,
        parsed: &Parsed,
        record: core::result::Result<String, String>,
    ) -> Early<()> {
        let stored = match record {
            Ok(json) => self
                .state
                .storage()
                .put(STORAGE_KEY, json.clone())
                .await
                .map(|()| json)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match stored {
            Ok(json) => {
                *self.stored.borrow_mut() = Some(json);
                Ok(())
            }
            Err(e) => {
                let name = &parsed.name;
                console_error!("breakwater object {name}: could not persist: {e}");
                let previous = self.stored.borrow().clone();
                let back = Coordinator::load_json(
                    name,
                    parsed.spec,
                    previous.as_deref(),
                    OnMismatch::Install,
                );
                if let Ok(coordinator) = back {
                    *self.coordinator.borrow_mut() = Some(coordinator);
                }
                Err(answer_response(&HttpError::Storage.answer()))
            }
        }
    }

    /// The breaker this object holds (the core's [`object_name`]).
    fn name(&self, req: &Request) -> Early<String> {
        let asked = req.url().ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "breaker")
                .map(|(_, v)| v.into_owned())
        });
        let kept = self
            .state
            .id()
            .name()
            .or_else(|| self.name.borrow().clone());
        object_name(kept.as_deref(), asked.as_deref()).map_err(|a| answer_response(&a))
    }

    async fn ensure_loaded(
        &self,
        name: &str,
        spec: SharedSpec,
    ) -> core::result::Result<(), String> {
        if self.coordinator.borrow().is_some() {
            return Ok(());
        }
        let stored: core::result::Result<Option<String>, String> = self
            .state
            .storage()
            .get::<String>(STORAGE_KEY)
            .await
            .map_err(|e| e.to_string());
        if self.coordinator.borrow().is_some() {
            // Loaded by another request meanwhile.
            return Ok(());
        }
        let mut coordinator = match &stored {
            Ok(text) => Coordinator::load_json(name, spec, text.as_deref(), OnMismatch::Install),
            Err(e) => {
                Coordinator::unreadable(name, spec, format!("stored record is not readable: {e}"))
            }
        }
        .map_err(|e| e.to_string())?;
        if let Ok(text) = stored {
            *self.stored.borrow_mut() = text;
        }
        if let Some(m) = coordinator.counted_view(now()).options_mismatch {
            console_log!(
                "breakwater object {name}: settings changed (stored {:x}, configured {:x}); {}",
                m.stored,
                m.configured,
                m.resolution
            );
        }
        if let Some(reason) = coordinator.restore_error() {
            console_error!("breakwater object {name}: {reason}; starting CLOSED");
        }
        *self.coordinator.borrow_mut() = Some(coordinator);
        Ok(())
    }
}

/// After commit: the transitions logged, the step's answer sent.
fn answer(name: &str, step: &Step, body: String) -> Result<Response> {
    for t in &step.transitions {
        console_log!("breakwater {name}: {} -> {} at {}", t.from, t.to, t.at.0);
    }
    json_response(200, body)
}
