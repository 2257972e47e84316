//! The exported functions and the one table of objects behind their handles (wasm32 only: the
//! table is a global, and wasm32 without the atomics feature has exactly one thread).
//!
//! A handle is an index into the table plus one (0 is never a handle). A handle that names no
//! object of the right kind (freed, forged, of another kind) gets the answer of an empty object:
//! a rejection-free 0, no transition, a refusal; never a trap.

use core::cell::UnsafeCell;

use alloc::vec::Vec;
use wasm_bindgen::prelude::*;

#[cfg(feature = "wasm-adaptive")]
use super::layout::queue as qu;
use super::layout::{cfg, info, refusal};
use super::{new_breaker, ts, Held};
#[cfg(not(feature = "wasm-adaptive"))]
use crate::{Classifier, RetryBudget, RetryPolicy};

// A breaker is the large variant (its throttle window and concurrency limit inline): boxing it
// would cost an allocation per breaker and code in the .wasm, for a table of a few objects.
#[allow(clippy::large_enum_variant)]
enum Slot {
    Free,
    Breaker(Held),
    #[cfg(not(feature = "wasm-adaptive"))]
    Retry(RetryPolicy, Classifier),
    #[cfg(not(feature = "wasm-adaptive"))]
    Budget(RetryBudget),
}

struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    io: Vec<f64>,
}

struct Global(UnsafeCell<Table>);

// SAFETY: wasm32-unknown-unknown without the atomics feature has exactly one thread, and no
// function below calls out to JavaScript while it holds the reference.
unsafe impl Sync for Global {}

static TABLE: Global = Global(UnsafeCell::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    io: Vec::new(),
}));

#[allow(clippy::mut_from_ref)]
fn table() -> &'static mut Table {
    // SAFETY: see `Global`; each exported function takes the reference once and drops it
    // before returning.
    unsafe { &mut *TABLE.0.get() }
}

impl Table {
    fn slot(&mut self, h: u32) -> Option<&mut Slot> {
        self.slots.get_mut((h as usize).wrapping_sub(1))
    }

    fn breaker(&mut self, h: u32) -> Option<&mut Held> {
        match self.slot(h) {
            Some(Slot::Breaker(b)) => Some(b),
            _ => None,
        }
    }

    // Stores `slot`, returning its handle (> 0), or the negated refusal code.
    fn put(&mut self, made: Result<Slot, usize>) -> i32 {
        let slot = match made {
            Ok(s) => s,
            Err(code) => return -(code as i32),
        };
        // Indexing is checked by hand here and below: the core's panics would link `core::fmt`'s
        // integer formatting into the .wasm (about 1 KB gzip) only to trap.
        if let Some(h) = self.free.pop() {
            if let Some(s) = self.slots.get_mut(h as usize - 1) {
                *s = slot;
                return h as i32;
            }
        }
        self.slots.push(slot);
        self.slots.len() as i32
    }

    // The scratch buffer, at least `len` numbers long.
    fn io(&mut self, len: usize) -> &mut [f64] {
        if self.io.len() < len {
            self.io.resize(len, 0.0);
        }
        &mut self.io
    }

    // A constructor's input: the first `len` numbers of the scratch buffer, at least `min` of
    // them and no more than it holds.
    fn input(&mut self, min: usize, len: u32) -> &[f64] {
        let io = self.io(min);
        let n = (len as usize).max(min).min(io.len());
        io.get(..n).unwrap_or_default()
    }
}

// The scratch buffer (at least `len` numbers; it may move when it grows): JavaScript writes a
// configuration there before a constructor and reads `info` and `snapshot` from it after.
#[wasm_bindgen]
pub fn io(len: u32) -> *mut f64 {
    table().io(len as usize).as_mut_ptr()
}

// Frees the object behind `h` (a handle that names none is ignored).
#[wasm_bindgen]
pub fn release(h: u32) {
    let t = table();
    if let Some(s) = t.slot(h) {
        if !matches!(s, Slot::Free) {
            *s = Slot::Free;
            t.free.push(h);
        }
    }
}

// ----- breakers -----

// A breaker from the configuration in `io[..cfg::LEN]`, restored from the snapshot in
// `io[cfg::LEN..len]` when `len` is longer: a handle, or `-refusal`.
#[wasm_bindgen]
pub fn breaker(len: u32) -> i32 {
    let t = table();
    let made = new_breaker(t.input(cfg::LEN, len)).map(Slot::Breaker);
    t.put(made)
}

// Asks to run one call: a permit handle (≥ 0), or a refusal (`layout::reject`, ≤ -8).
#[wasm_bindgen]
pub fn acquire(h: u32, now: f64) -> f64 {
    table().breaker(h).map_or(-2.0, |b| b.acquire(now))
}

// What `acquire` would answer now, taking nothing: 0 (admitted) or a rejection as `acquire`
// encodes it.
#[wasm_bindgen]
pub fn peek(h: u32, now: f64) -> f64 {
    table().breaker(h).map_or(-2.0, |b| b.peek(now))
}

// Reports the outcome of the call admitted at `issued_at` with `permit` (-1: without a permit,
// the `recordSuccess()` / `recordFailure()` pattern). Returns the transition code.
#[wasm_bindgen]
pub fn report(h: u32, now: f64, issued_at: f64, permit: f64, outcome: u32) -> u32 {
    table()
        .breaker(h)
        .map_or(0, |b| b.report(now, issued_at, permit, outcome))
}

// ----- a breaker's concurrency limit ([`layout::bulkhead`]) -----

// One export for the limit's operations ([`layout::queue`], fewer lines of glue): ENTER a slot
// id, `MARK + ticket` to wait, or a refusal (0 without a limit); LEAVE slot `arg` and POLL (call
// until -1): the ticket now holding a slot, `MARK + ticket` timed out, or -1; CANCEL ticket
// `arg`: 1 if it was waiting; DEADLINE: when POLL next has something to do, or -1; ADOPT: moves
// the limit of breaker `arg` (its slots in flight and its line) to `h`, built by a restore under
// the same options.
#[cfg(feature = "wasm-adaptive")]
#[wasm_bindgen]
pub fn queue(h: u32, now: f64, op: u32, arg: f64) -> f64 {
    let t = table();
    if op == qu::ADOPT as u32 {
        let moved = t.breaker(arg as u32).and_then(|b| b.bulkhead.take());
        if let (Some(moved), Some(b)) = (moved, t.breaker(h)) {
            if b.bulkhead.is_some() {
                b.bulkhead = Some(moved);
            }
        }
        return 0.0;
    }
    let Some(b) = t.breaker(h) else {
        return -1.0;
    };
    match op as usize {
        qu::ENTER => b.enter(now),
        qu::LEAVE => b.leave(now, arg),
        qu::POLL => b.poll_queue(now),
        qu::CANCEL => b.cancel(arg) as f64,
        _ => b.queue_deadline(),
    }
}

// Writes [`layout::info`] at the returned address (the scratch buffer).
#[wasm_bindgen]
pub fn info(h: u32, now: f64) -> *const f64 {
    let t = table();
    let v = t.breaker(h).map(|b| b.info(now));
    let io = t.io(info::LEN);
    if let (Some(v), Some(out)) = (v, io.get_mut(..info::LEN)) {
        out.copy_from_slice(&v);
    }
    io.as_ptr()
}

// The manual overrides: 0 isolate, 1 reset, 2 disable, 3 enable. Returns a transition code.
#[wasm_bindgen]
pub fn control(h: u32, now: f64, op: u32) -> u32 {
    table().breaker(h).map_or(0, |b| b.control(now, op))
}

// Writes the breaker's whole state into the scratch buffer and returns its length (read it at
// `io(len)`); 0 for a handle that names no breaker.
#[wasm_bindgen]
pub fn snapshot(h: u32) -> u32 {
    let t = table();
    let Some(s) = t.breaker(h).map(|b| b.inner.snapshot()) else {
        return 0;
    };
    let mut count = super::Out { out: &mut [], n: 0 };
    super::encode_snapshot(&s, &mut count);
    let n = count.n;
    let mut out = super::Out { out: t.io(n), n: 0 };
    super::encode_snapshot(&s, &mut out);
    n as u32
}

// The retry policy, the classifier and the budget: the main module's, left out of the adaptive
// one (feature `wasm-adaptive`), whose breakers use the main module for them.
#[cfg(not(feature = "wasm-adaptive"))]
pub use retries::*;

#[cfg(not(feature = "wasm-adaptive"))]
mod retries {
    use super::super::layout::{budget as bg, retry as rt};
    use super::super::{budget, retry_policy, status_set};
    use super::*;
    use crate::rng::UnitFn;
    use crate::{
        AttemptFailure, Class, Code, Ending, GiveUpReason, Outcome, RetryDecision, RetryState,
        Signal,
    };

    // ----- retry -----

    // A retry policy and its classifier from `io[..retry::LEN]`, the retryable statuses in
    // `io[retry::LEN..len]` when `retry::USE_RETRYABLE` is 1: a handle, or `-refusal`.
    #[wasm_bindgen]
    pub fn retry(len: u32) -> i32 {
        let t = table();
        let io = t.input(rt::LEN, len);
        let made = retry_policy(io)
            .map(|policy| {
                let classifier = if io.get(rt::USE_RETRYABLE) == Some(&1.0) {
                    Classifier::new()
                        .with_retryable(status_set(io.get(rt::LEN..).unwrap_or_default()))
                } else {
                    Classifier::new()
                };
                Slot::Retry(policy, classifier)
            })
            .map_err(|_| refusal::CONFIG);
        t.put(made)
    }

    // Decides what follows a failed attempt: the delay (≥ 0) before the next attempt, or a negative
    // give-up code (-1 not retryable, -2 attempts exhausted, -3 deadline, -4 the server's
    // Retry-After is too long). `retry_after_ms` < 0 means none; `unit` is the random draw in
    // [0, 1) for the jitter.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen]
    pub fn decide(
        h: u32,
        now: f64,
        started_at: f64,
        attempts: u32,
        previous_delay_ms: f64,
        retryable: bool,
        retry_after_ms: f64,
        unit: f64,
    ) -> f64 {
        let Some(Slot::Retry(policy, _)) = table().slot(h) else {
            return -1.0;
        };
        let mut state = RetryState {
            attempts,
            started_at: ts(started_at),
            previous_delay_ms: super::super::int(previous_delay_ms.max(0.0)),
        };
        let failure = AttemptFailure {
            retryable,
            retry_after_ms: (retry_after_ms >= 0.0).then(|| super::super::int(retry_after_ms)),
        };
        let mut rng = UnitFn(|| unit);
        match policy.decide(&mut state, ts(now), failure, &mut rng, None) {
            RetryDecision::Retry { delay_ms, .. } => delay_ms as f64,
            RetryDecision::GiveUp(GiveUpReason::NotRetryable) => -1.0,
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted) => -2.0,
            RetryDecision::GiveUp(GiveUpReason::DeadlineExceeded) => -3.0,
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong { .. }) => -4.0,
            RetryDecision::GiveUp(GiveUpReason::BudgetExhausted) => -5.0,
        }
    }

    // Classifies an attempt. `status` 0 means no response; `code` is the provider's error code as
    // [`Code::index`] (0 none, see `code` below); `flags`: 1 network error, 2 timeout, 4 cancelled.
    // Returns `class | retryable << 4 | outcome << 5` (outcome: 0 success, 1 failure, 2 ignored). A
    // handle that names no retry policy (0, say) classifies with the core's default rules.
    #[wasm_bindgen]
    pub fn classify(h: u32, status: u16, code: u32, flags: u32) -> u32 {
        let default = Classifier::new();
        let classifier = match table().slot(h) {
            Some(Slot::Retry(_, c)) => c,
            _ => &default,
        };
        let signal = Signal {
            status: (status != 0).then_some(status),
            network_error: flags & 1 != 0,
            timeout: flags & 2 != 0,
            cancelled: flags & 4 != 0,
            ..Signal::default()
        };
        let v = classifier.classify_code(&signal, Code::from_index(code));
        let class = match v.class {
            Class::Success => 0,
            Class::Transient => 1,
            Class::RateLimited => 2,
            Class::Overloaded => 3,
            Class::QuotaExhausted => 4,
            Class::ClientError => 5,
            Class::ServerError => 6,
            Class::Network => 7,
            Class::Timeout => 8,
            Class::Cancelled => 9,
            Class::Declined => 10,
        };
        let outcome = match v.outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignored => 2,
        };
        class | (v.retryable as u32) << 4 | outcome << 5
    }

    // The bytes of a string JavaScript wrote into the scratch buffer, one char code a number (at most
    // 2 048: codes and reasons are short, messages are cut by JavaScript).
    fn text(len: u32, buf: &mut [u8; 2048]) -> &[u8] {
        let io = table().input(0, len);
        let n = io.len().min(buf.len());
        for (b, &v) in buf.iter_mut().zip(io) {
            *b = v as u8;
        }
        buf.get(..n).unwrap_or_default()
    }

    // What the string in the scratch buffer says. `what` 0: an error's codes (one a line), a byte 1,
    // then its messages and quota ids (one a line), answered as `Code::index | status << 8` (0: none
    // known); otherwise a finish or stop reason, answered 0 complete, 1 truncated, 2 declined, 3
    // failed, 4 unknown.
    #[wasm_bindgen]
    pub fn read_text(len: u32, what: u32) -> u32 {
        let mut buf = [0u8; 2048];
        let s = text(len, &mut buf);
        if what != 0 {
            return Ending::of(s) as u32;
        }
        let split = s.iter().position(|&b| b == 1).unwrap_or(s.len());
        let (codes, texts) = s.split_at(split);
        Code::read(codes, texts).map_or(0, |c| c.index() | (c.status() as u32) << 8)
    }

    // ----- retry budgets -----

    // A retry budget from `io[..budget::LEN]`: a handle, or `-refusal`.
    #[wasm_bindgen]
    pub fn budget_new() -> i32 {
        let t = table();
        let made = budget(t.input(bg::LEN, 0))
            .map(Slot::Budget)
            .map_err(|_| refusal::CONFIG);
        t.put(made)
    }

    // 0: records a first attempt (returns 0); 1: takes one retry if the budget has one (1 or 0);
    // 2: the retries available (may be fractional).
    #[wasm_bindgen]
    pub fn budget_op(h: u32, now: f64, op: u32) -> f64 {
        let Some(Slot::Budget(b)) = table().slot(h) else {
            return 0.0;
        };
        let now = ts(now);
        match op {
            0 => {
                b.deposit(now);
                0.0
            }
            1 => b.try_withdraw(now) as u32 as f64,
            _ => b.available(now),
        }
    }
}

// The objects the table holds now (breakers, retry policies, budgets): the handles taken and not
// released. Read-only, for tests that check nothing is left behind.
#[wasm_bindgen]
pub fn handles() -> u32 {
    let t = table();
    t.slots.len().saturating_sub(t.free.len()) as u32
}
