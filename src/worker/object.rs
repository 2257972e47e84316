//! `BreakerObject`: the Durable Object holding one breaker, named after it.
//!
//! Habits: `new` does no I/O; the record is loaded on the first request. Each request first
//! awaits what is not storage (its body), then takes one synchronous step on the engine, then
//! persists; no `RefCell` borrow is held across an `.await`. Durable Object input gates keep
//! other events out while a storage operation is pending, and the output gate holds the answer
//! until the write is confirmed, so transitions are reported (logged, answered) after commit.

use core::cell::RefCell;

use alloc::format;
use alloc::string::{String, ToString};

use worker::{console_error, console_log, durable_object, Env, Method, Request, Response, Result};

use super::config::SharedSpec;
use super::engine::{Engine, OnMismatch, Step, STORAGE_KEY};
use super::protocol::{Exchange, MAX_BODY_BYTES};
use super::routes::{error_response, json_response, load_breakers};
use crate::clock::Timestamp;
use crate::name::validate_name;
use crate::shared::json;

/// The Durable Object class (`class_name = "BreakerObject"` in `wrangler.toml`).
#[durable_object]
pub struct BreakerObject {
    state: worker::State,
    env: Env,
    engine: RefCell<Option<Engine>>,
    /// The record as last stored: what the engine goes back to when a write fails, so that
    /// nothing it granted or counted meanwhile (a probe slot, a batch) outlives the failure.
    stored: RefCell<Option<String>>,
    /// The breaker's name, when the id does not carry it: the first one a request named.
    name: RefCell<Option<String>>,
}

enum Op {
    Acquire,
    Report,
    State,
    Isolate,
    Reset,
}

impl worker::DurableObject for BreakerObject {
    fn new(state: worker::State, env: Env) -> Self {
        BreakerObject {
            state,
            env,
            engine: RefCell::new(None),
            stored: RefCell::new(None),
            name: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match self.handle(req).await {
            Ok(resp) => Ok(resp),
            Err(e) => {
                console_error!("breakwater object: {e}");
                error_response(
                    500,
                    "internal",
                    "the breaker object failed; state unchanged",
                )
            }
        }
    }
}

fn now() -> Timestamp {
    Timestamp(worker::Date::now().as_millis())
}

impl BreakerObject {
    async fn handle(&self, mut req: Request) -> Result<Response> {
        let method = req.method();
        let op = match req.path().as_str() {
            "/acquire" => Op::Acquire,
            "/report" => Op::Report,
            "/state" => Op::State,
            "/isolate" => Op::Isolate,
            "/reset" => Op::Reset,
            _ => return error_response(404, "not_found", "unknown operation"),
        };
        let allowed = match op {
            Op::State => matches!(method, Method::Get | Method::Post),
            _ => method == Method::Post,
        };
        if !allowed {
            return error_response(405, "method_not_allowed", "use POST (or GET for /state)");
        }
        // 1. Everything that is not storage first: the body.
        let exchange = match op {
            Op::Acquire | Op::Report => {
                let body = match read_body(&mut req).await {
                    Ok(b) => b,
                    Err(resp) => return resp,
                };
                let read = core::str::from_utf8(&body)
                    .map_err(|_| String::from("not UTF-8"))
                    .and_then(|text| json::from_str::<Exchange>(text).map_err(|e| e.to_string()));
                match read {
                    Ok(x) => Some(x),
                    Err(e) => {
                        return error_response(400, "bad_request", &format!("invalid JSON: {e}"))
                    }
                }
            }
            _ => {
                if let Err(resp) = read_body(&mut req).await {
                    return resp;
                }
                None
            }
        };
        // 2. Which breaker: the object's own name, which must be configured. An id made by
        // `idFromName` does not always carry it (`wrangler dev` addresses an object of another
        // process by `id.toString()`), so clients also send it (`?breaker=`); the first name an
        // object serves is the one it keeps.
        let name = match self.name(&req) {
            Ok(n) => n,
            Err(resp) => return resp,
        };
        let spec = match load_breakers(&self.env) {
            Ok(map) => match map.get(&name) {
                Some(spec) => *spec,
                None => {
                    return error_response(
                        404,
                        "not_found",
                        "no breaker of that name is configured",
                    )
                }
            },
            Err(e) => {
                console_error!("breakwater: {e}");
                return error_response(500, "misconfigured", &e);
            }
        };
        self.name.borrow_mut().get_or_insert_with(|| name.clone());
        // 3. Load lazily (storage only; the input gate keeps other events out meanwhile).
        if let Err(e) = self.ensure_loaded(&name, spec).await {
            console_error!("breakwater object {name}: {e}");
            return error_response(500, "misconfigured", &e);
        }
        // 4. One synchronous step.
        let now = now();
        let (body, step, record) = {
            let mut guard = self.engine.borrow_mut();
            let Some(engine) = guard.as_mut() else {
                return error_response(500, "internal", "breaker not loaded");
            };
            let (body, step) = match (&op, &exchange) {
                (Op::Acquire | Op::Report, Some(x)) => {
                    if let Some(why) = engine.unavailable() {
                        // A newer version's record (a rollback): left as it is; clients keep
                        // their local breakers until an operator resets it.
                        return error_response(503, "unavailable", why);
                    }
                    match engine.exchange(now, x, matches!(op, Op::Acquire)) {
                        Ok((reply, step)) => (json::to_string(&reply), step),
                        Err(e) => return error_response(400, "bad_request", &e.to_string()),
                    }
                }
                (Op::Isolate, _) => {
                    let step = engine.isolate(now);
                    (json::to_string(&engine.counted_view(now)), step)
                }
                (Op::Reset, _) => {
                    let step = engine.reset(now);
                    (json::to_string(&engine.counted_view(now)), step)
                }
                _ => (json::to_string(&engine.counted_view(now)), Step::default()),
            };
            let record = if step.changed {
                Some(engine.record_json())
            } else {
                None
            };
            (body, step, record)
        };
        // 5. Persist, then report.
        if let Some(record) = record {
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
                Ok(json) => *self.stored.borrow_mut() = Some(json),
                Err(e) => {
                    console_error!("breakwater object {name}: could not persist: {e}");
                    // Back to what is stored: the client hears 503 and will ask again, so a
                    // probe granted or a batch applied in this step must not stay in memory.
                    let previous = self.stored.borrow().clone();
                    let back =
                        Engine::load_json(&name, spec, previous.as_deref(), OnMismatch::Install);
                    if let Ok(engine) = back {
                        *self.engine.borrow_mut() = Some(engine);
                    }
                    return error_response(503, "storage", "the new state could not be stored");
                }
            }
        }
        for t in &step.transitions {
            console_log!("breakwater {name}: {} -> {} at {}", t.from, t.to, t.at.0);
        }
        json_response(200, body)
    }

    /// The breaker this object holds: its id's name, else the one the request names (and every
    /// later request must name the same).
    fn name(&self, req: &Request) -> core::result::Result<String, Result<Response>> {
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
        let name =
            match (kept, asked) {
                (Some(kept), Some(asked)) if kept != asked => {
                    return Err(error_response(
                        409,
                        "conflict",
                        &format!("this object holds the breaker {kept:?}, not {asked:?}"),
                    ))
                }
                (Some(kept), _) => kept,
                (None, Some(asked)) => asked,
                (None, None) => return Err(error_response(
                    404,
                    "not_found",
                    "object has no name: address it with idFromName(name) and send ?breaker=<name>",
                )),
            };
        if validate_name(&name).is_err() {
            return Err(error_response(404, "not_found", "not a breaker name"));
        }
        Ok(name)
    }

    async fn ensure_loaded(
        &self,
        name: &str,
        spec: SharedSpec,
    ) -> core::result::Result<(), String> {
        if self.engine.borrow().is_some() {
            return Ok(());
        }
        let stored: core::result::Result<Option<String>, String> = self
            .state
            .storage()
            .get::<String>(STORAGE_KEY)
            .await
            .map_err(|e| e.to_string());
        if self.engine.borrow().is_some() {
            // Loaded by another request meanwhile.
            return Ok(());
        }
        let mut engine = match &stored {
            Ok(text) => Engine::load_json(name, spec, text.as_deref(), OnMismatch::Install)?,
            Err(e) => {
                Engine::unreadable(name, spec, format!("stored record is not readable: {e}"))?
            }
        };
        if let Ok(text) = stored {
            *self.stored.borrow_mut() = text;
        }
        if let Some(m) = engine.counted_view(now()).options_mismatch {
            console_log!(
                "breakwater object {name}: settings changed (stored {:x}, configured {:x}); {}",
                m.stored,
                m.configured,
                m.resolution
            );
        }
        if let Some(reason) = engine.restore_error() {
            console_error!("breakwater object {name}: {reason}; starting CLOSED");
        }
        *self.engine.borrow_mut() = Some(engine);
        Ok(())
    }
}

async fn read_body(
    req: &mut Request,
) -> core::result::Result<alloc::vec::Vec<u8>, Result<Response>> {
    if let Ok(Some(len)) = req.headers().get("content-length") {
        if len
            .trim()
            .parse::<u64>()
            .map_or(true, |n| n > MAX_BODY_BYTES as u64)
        {
            return Err(error_response(
                413,
                "payload_too_large",
                "body larger than 64 KiB",
            ));
        }
    }
    match req.bytes().await {
        Ok(b) if b.len() > MAX_BODY_BYTES => Err(error_response(
            413,
            "payload_too_large",
            "body larger than 64 KiB",
        )),
        Ok(b) => Ok(b),
        Err(_) => Err(error_response(400, "bad_request", "unreadable body")),
    }
}
