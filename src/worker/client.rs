//! [`SharedBreaker`]: the lease client for workers-rs Workers.
//!
//! Keep one per breaker name per isolate (a `thread_local!` works: Workers isolates are
//! single-threaded) and pass the Durable Object namespace binding to each call, since bindings
//! belong to the request's `Env`:
//!
//! ```ignore
//! use breakwater::worker::{LeaseOptions, SharedBreaker};
//!
//! thread_local! {
//!     static ANTHROPIC: SharedBreaker =
//!         SharedBreaker::new("anthropic", LeaseOptions::new()).expect("a valid name");
//! }
//!
//! async fn guarded(env: &worker::Env) -> worker::Result<worker::Response> {
//!     let ns = env.durable_object("BREAKER")?;
//!     let breaker = ANTHROPIC.with(|b| b.clone());
//!     match breaker.call(&ns, call_the_model()).await {
//!         Ok(reply) => worker::Response::ok(reply),
//!         Err(breakwater::Error::Rejected(r)) => worker::Response::error(r.to_string(), 503),
//!         Err(breakwater::Error::Inner(e)) => worker::Response::error(e, 502),
//!     }
//! }
//! ```

use alloc::boxed::Box;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use core::cell::RefCell;
use core::future::Future;

use worker::wasm_bindgen::JsValue;
use worker::{Headers, Method, ObjectNamespace, Request, RequestInit};

use super::lease::{
    Answer, ClientEvent, Decision, LeaseClient, LeaseOptions, LocalTime, Next, Op, Ticket,
};
use super::protocol::{Exchange, ExchangeReply};
use super::url::object_url;
use crate::breaker::{Outcome, Rejected, State};
use crate::host::facade::{BuildError, Error};
use crate::name::validate_name;

type Listener = Box<dyn FnMut(&str, &ClientEvent)>;

/// A breaker shared through the Durable Object, seen from one isolate. Cheap to clone (the clones
/// share the lease).
#[derive(Clone)]
pub struct SharedBreaker {
    inner: Rc<Inner>,
}

struct Inner {
    name: String,
    lease: RefCell<LeaseClient>,
    tickets: RefCell<alloc::collections::VecDeque<Ticket>>,
    listener: RefCell<Option<Listener>>,
    timeout_ms: core::cell::Cell<u64>,
    /// The refusal statuses already warned about.
    warned: RefCell<alloc::collections::BTreeSet<u16>>,
}

impl core::fmt::Debug for SharedBreaker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedBreaker")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

fn now() -> LocalTime {
    LocalTime(worker::Date::now().as_millis())
}

fn random_u64() -> u64 {
    let a = (worker::js_sys::Math::random() * 4_294_967_296.0) as u64;
    let b = (worker::js_sys::Math::random() * 4_294_967_296.0) as u64;
    (a << 32) | b
}

fn random_id() -> String {
    format!("rs-{:016x}", random_u64())
}

/// How long a request to the object may take before the client falls back, by default.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 5_000;

impl SharedBreaker {
    /// A client of the breaker named `name` (validated; it must also be configured in the
    /// object's `BREAKERS`).
    pub fn new(name: &str, options: LeaseOptions) -> Result<Self, BuildError> {
        validate_name(name).map_err(BuildError::Name)?;
        // A random session: a later isolate that happened to draw the same id is still new.
        let session = (random_u64() >> 11).max(1);
        let lease = LeaseClient::new(random_id(), session, options).map_err(BuildError::Config)?;
        Ok(SharedBreaker {
            inner: Rc::new(Inner {
                name: name.to_string(),
                lease: RefCell::new(lease),
                tickets: RefCell::new(alloc::collections::VecDeque::new()),
                listener: RefCell::new(None),
                timeout_ms: core::cell::Cell::new(DEFAULT_REQUEST_TIMEOUT_MS),
                warned: RefCell::new(alloc::collections::BTreeSet::new()),
            }),
        })
    }

    /// Abandons a request to the object after `ms` milliseconds (then the local breaker
    /// decides); default [`DEFAULT_REQUEST_TIMEOUT_MS`]. A CLOSED lease ends at its time
    /// whatever is in flight, so this also bounds how long a call may wait for a renewal.
    pub fn with_request_timeout_ms(self, ms: u64) -> Self {
        self.inner.timeout_ms.set(ms.max(1));
        self
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Calls `listener(name, event)` on every state change this client learns, and when it falls
    /// back to (or recovers from) its local breaker.
    pub fn on_event(&self, listener: impl FnMut(&str, &ClientEvent) + 'static) {
        *self.inner.listener.borrow_mut() = Some(Box::new(listener));
    }

    /// The state this client last learned.
    pub fn known_state(&self) -> Option<State> {
        self.inner.lease.borrow().known_state()
    }

    /// Whether the local breaker decides now (the object could not be reached, or refused).
    pub fn deciding_locally(&self) -> bool {
        self.inner.lease.borrow().deciding_locally()
    }

    /// Requests sent to the object so far.
    pub fn object_requests(&self) -> u64 {
        self.inner.lease.borrow().requests()
    }

    /// Outcomes the object has not acknowledged yet.
    pub fn unacknowledged(&self) -> u64 {
        self.inner.lease.borrow().unacknowledged()
    }

    /// Runs `fut` if admitted; `Err` counts as a failure.
    pub async fn call<T, E, F>(&self, ns: &ObjectNamespace, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        self.call_classified(ns, fut, |r| {
            if r.is_ok() {
                Outcome::Success
            } else {
                Outcome::Failure
            }
        })
        .await
    }

    /// Runs `fut` if admitted, counting its result as `classify` says.
    pub async fn call_classified<T, E, F>(
        &self,
        ns: &ObjectNamespace,
        fut: F,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let ticket = self.admit(ns).await.map_err(Error::Rejected)?;
        // Dropped before `fut` ends, the call is given back rather than left holding its permit.
        let guard = DropCall {
            breaker: self,
            ns,
            ticket: Some(ticket),
        };
        let result = fut.await;
        let outcome = classify(&result);
        if let Some(ticket) = guard.disarm() {
            self.settle(ns, ticket, outcome).await;
        }
        result.map_err(Error::Inner)
    }

    /// Asks for admission: locally on a lease, from the object in HALF_OPEN or when the lease ran
    /// out, from the local breaker when the object cannot be reached.
    pub async fn admit(&self, ns: &ObjectNamespace) -> Result<Ticket, Rejected> {
        // The core bounds the rounds: past `ADMIT_ROUNDS` it refuses rather than ask again.
        let mut round = 0;
        loop {
            let decision = self.inner.lease.borrow_mut().admit_again(now(), round);
            round += 1;
            match decision {
                Decision::Admit(t) => {
                    self.emit();
                    return Ok(t);
                }
                Decision::Reject(r) => {
                    self.emit();
                    return Err(r);
                }
                Decision::Acquire => match self.acquire(ns).await {
                    Next::Admit(t) => return Ok(t),
                    Next::Reject(r) => return Err(r),
                    Next::Again | Next::Report | Next::Idle => {}
                },
                Decision::Refresh => {
                    if self.inner.lease.borrow().in_flight() {
                        self.wait_in_flight().await;
                    } else {
                        self.flush_inner(ns, true).await;
                    }
                }
            }
        }
    }

    /// Sends an `/acquire` for a call that waits on it, and feeds the answer back.
    async fn acquire(&self, ns: &ObjectNamespace) -> Next {
        // A report due before asking (a dropped call's, sent again): first, so that the object
        // has this isolate's probe permit back.
        let due = self.inner.lease.borrow().flush_due(now());
        if due {
            self.flush_inner(ns, false).await;
        }
        let req = self.inner.lease.borrow_mut().acquire_request();
        let sent = self.exchange(ns, "acquire", &req).await;
        let next = self.feed(Op::Acquire, &sent);
        self.emit();
        next
    }

    /// Reports how an admitted call ended; sends a report at once if one is due (a failure, a
    /// probe outcome, or a full batch).
    pub async fn settle(&self, ns: &ObjectNamespace, ticket: Ticket, outcome: Outcome) {
        let due = self.inner.lease.borrow_mut().record(now(), ticket, outcome);
        if due {
            self.flush_inner(ns, false).await;
        }
    }

    /// The `isHealthy()` pattern: admits one call (true) or not (false); report it with
    /// [`record_success`](Self::record_success) or [`record_failure`](Self::record_failure).
    pub async fn is_healthy(&self, ns: &ObjectNamespace) -> bool {
        match self.admit(ns).await {
            Ok(t) => {
                self.inner.tickets.borrow_mut().push_back(t);
                true
            }
            Err(_) => false,
        }
    }

    /// Reports a success for the oldest call admitted by [`is_healthy`](Self::is_healthy).
    pub async fn record_success(&self, ns: &ObjectNamespace) {
        self.record_untracked(ns, Outcome::Success).await;
    }

    /// Reports a failure for the oldest call admitted by [`is_healthy`](Self::is_healthy).
    pub async fn record_failure(&self, ns: &ObjectNamespace) {
        self.record_untracked(ns, Outcome::Failure).await;
    }

    async fn record_untracked(&self, ns: &ObjectNamespace, outcome: Outcome) {
        let ticket = self.inner.tickets.borrow_mut().pop_front();
        match ticket {
            Some(t) => self.settle(ns, t, outcome).await,
            None => {
                let due = self
                    .inner
                    .lease
                    .borrow_mut()
                    .record_untracked(now(), outcome);
                if due {
                    self.flush_inner(ns, false).await;
                }
            }
        }
    }

    /// Sends whatever waits (and renews the lease). Returns whether the object answered.
    pub async fn flush(&self, ns: &ObjectNamespace) -> bool {
        self.flush_inner(ns, true).await;
        !self.deciding_locally()
    }

    async fn flush_inner(&self, ns: &ObjectNamespace, force: bool) {
        // A failure recorded while a report was in flight is sent right after it, as many times
        // as the core's `REPORT_ROUNDS` allow.
        let mut force = force;
        loop {
            let req = self.inner.lease.borrow_mut().begin_flush(force);
            let Some(req) = req else {
                return;
            };
            let sent = self.exchange(ns, "report", &req).await;
            let next = self.feed(Op::Report, &sent);
            self.emit();
            if next != Next::Report {
                return;
            }
            force = false;
        }
    }

    /// Feeds what came back for `op` to the lease client.
    fn feed(&self, op: Op, sent: &Result<ExchangeReply, SendError>) -> Next {
        let answer = match sent {
            Ok(reply) => Answer::Reply(reply),
            Err(SendError::Refused(status, reason)) => Answer::Refused {
                status: *status,
                reason,
            },
            Err(SendError::Unreachable(reason)) => Answer::Unreachable(reason),
        };
        self.inner.lease.borrow_mut().on_answer(now(), op, answer)
    }

    /// Another call of this isolate has a report in flight: wait for its answer (bounded by the
    /// request timeout, after which that call falls back).
    async fn wait_in_flight(&self) {
        let deadline = now().0.saturating_add(self.inner.timeout_ms.get());
        while self.inner.lease.borrow().in_flight() && now().0 < deadline {
            worker::Delay::from(core::time::Duration::from_millis(5)).await;
        }
    }

    async fn exchange(
        &self,
        ns: &ObjectNamespace,
        op: &str,
        body: &Exchange,
    ) -> Result<ExchangeReply, SendError> {
        let ms = self.inner.timeout_ms.get();
        let call = exchange(ns, &self.inner.name, op, body);
        let timer = worker::Delay::from(core::time::Duration::from_millis(ms));
        // If the caller drops this future (its own time-out, a cancelled request), the answer
        // will never be fed back: tell the lease client, so that no later call waits for it.
        let guard = AbandonOnDrop(&self.inner.lease);
        let result = match first(call, timer).await {
            Some(result) => result,
            None => Err(SendError::Unreachable(format!(
                "no answer from the object within {ms} ms"
            ))),
        };
        core::mem::forget(guard);
        result
    }

    fn emit(&self) {
        loop {
            let event = self.inner.lease.borrow_mut().next_event();
            let Some(event) = event else { return };
            if let (Some(hint), ClientEvent::Local { reason, status }) =
                (event.misconfiguration(), &event)
            {
                // Once per status: a configuration mistake, not an outage.
                if self.inner.warned.borrow_mut().insert(status.unwrap_or(0)) {
                    worker::console_warn!(
                        "breakwater: shared breaker {:?} is deciding locally because {reason}; \
                         this is configuration, not an outage: {hint}",
                        self.inner.name
                    );
                }
            }
            if let Some(listener) = self.inner.listener.borrow_mut().as_mut() {
                listener(&self.inner.name, &event);
            }
        }
    }
}

/// A call admitted by [`SharedBreaker::call_classified`] whose future may be dropped before it
/// ends (the app's own time-out, a `select!`, a client that went away). Dropped while it holds
/// the ticket, it tells the lease client ([`LeaseClient::drop_call`]: the call is ignored, and a
/// probe's permit goes back to the fleet), and sends the report that makes due in a task of its
/// own (`spawn_local`), answer unread: a dropped probe would otherwise hold the fleet's only
/// probe slot, with every client refused, until the object's `probe_timeout_ms`. Workers may
/// cancel that task once the request that dropped the call has answered; nothing depends on it:
/// the lease client sends the same batches again before this isolate's next request to the
/// object, and the object counts them once.
struct DropCall<'a> {
    breaker: &'a SharedBreaker,
    ns: &'a ObjectNamespace,
    ticket: Option<Ticket>,
}

impl DropCall<'_> {
    /// The call ended: its ticket, to settle with its outcome.
    fn disarm(mut self) -> Option<Ticket> {
        self.ticket.take()
    }
}

impl Drop for DropCall<'_> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let report = match self.breaker.inner.lease.try_borrow_mut() {
            Ok(mut lease) => lease.drop_call(now(), ticket),
            // Never while a future is dropped (no borrow is held across an await).
            Err(_) => return,
        };
        if let Some(report) = report {
            let name = self.breaker.inner.name.clone();
            let ns = self.ns.clone();
            worker::wasm_bindgen_futures::spawn_local(async move {
                // Nothing waits for the answer: the lease client sends these batches again.
                let _ = exchange(&ns, &name, "report", &report).await;
            });
        }
    }
}

/// Tells the lease client that a request in flight was dropped by the host, unless forgotten
/// once its answer is in.
struct AbandonOnDrop<'a>(&'a RefCell<LeaseClient>);

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if let Ok(mut lease) = self.0.try_borrow_mut() {
            lease.abandon(now());
        }
    }
}

/// Why an exchange with the object failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The object refused the request with this 4xx status (a malformed or too large body, a
    /// name not in `BREAKERS`, a token not accepted): not an outage of the upstream.
    Refused(u16, String),
    /// No usable answer (network, time-out, 5xx, unreadable): worth sending again later.
    Unreachable(String),
}

/// Runs `fut`, or gives `None` once `timer` fires first.
pub(crate) async fn first<T>(
    fut: impl Future<Output = T>,
    timer: impl Future<Output = ()>,
) -> Option<T> {
    let mut fut = core::pin::pin!(fut);
    let mut timer = core::pin::pin!(timer);
    core::future::poll_fn(|cx| {
        if let core::task::Poll::Ready(v) = fut.as_mut().poll(cx) {
            return core::task::Poll::Ready(Some(v));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return core::task::Poll::Ready(None);
        }
        core::task::Poll::Pending
    })
    .await
}

/// Sends one protocol request to the object named `name`. Anything but a well-formed 200 answer
/// is an error (the caller falls back).
pub async fn send(
    ns: &ObjectNamespace,
    name: &str,
    op: &str,
    body: &Exchange,
) -> Result<ExchangeReply, String> {
    exchange(ns, name, op, body).await.map_err(|e| match e {
        SendError::Refused(_, r) | SendError::Unreachable(r) => r,
    })
}

/// [`send`], telling a refusal (4xx) from an unreachable object.
pub async fn exchange(
    ns: &ObjectNamespace,
    name: &str,
    op: &str,
    body: &Exchange,
) -> Result<ExchangeReply, SendError> {
    use SendError::Unreachable;
    let json = crate::shared::json::to_string(body);
    let stub = ns
        .get_by_name(name)
        .map_err(|e| Unreachable(e.to_string()))?;
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(|e| Unreachable(e.to_string()))?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(JsValue::from_str(&json)));
    let req = Request::new_with_init(&object_url(op, name), &init)
        .map_err(|e| Unreachable(e.to_string()))?;
    let mut resp = stub
        .fetch_with_request(req)
        .await
        .map_err(|e| Unreachable(format!("object unreachable: {e}")))?;
    let status = resp.status_code();
    let text = resp.text().await.map_err(|e| Unreachable(e.to_string()))?;
    if status != 200 {
        let message = format!(
            "object answered {status}: {}",
            text.chars().take(200).collect::<String>()
        );
        return Err(if (400..500).contains(&status) {
            SendError::Refused(status, message)
        } else {
            Unreachable(message)
        });
    }
    crate::shared::json::from_str(&text)
        .map_err(|e| Unreachable(format!("object answer unreadable: {e}")))
}
