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
use super::layout::{cfg, info, refusal, reject, transition as tr};
use super::{int, new_breaker, transition_code, ts, Held};
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
    #[cfg(not(feature = "wasm-adaptive"))]
    Stream(alloc::boxed::Box<streams::Streamed>),
    #[cfg(feature = "wasm-adaptive")]
    Hedge(alloc::boxed::Box<crate::hedge::Hedge>),
}

struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    io: Vec<f64>,
    /// The byte buffer (`bytes`): a stream's chunk in, an error event's data out.
    bytes: Vec<u8>,
}

struct Global(UnsafeCell<Table>);

// SAFETY: wasm32-unknown-unknown without the atomics feature has exactly one thread, and no
// function below calls out to JavaScript while it holds the reference.
unsafe impl Sync for Global {}

static TABLE: Global = Global(UnsafeCell::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    io: Vec::new(),
    bytes: Vec::new(),
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

// Asks to run one call: a permit handle (≥ 0), or a refusal (`layout::reject`, ≤ -SCALE;
// `NO_BREAKER` for a handle that names none).
#[wasm_bindgen]
pub fn acquire(h: u32, now: f64) -> f64 {
    table()
        .breaker(h)
        .map_or(reject::NO_BREAKER as f64, |b| b.acquire(now))
}

// What `acquire` would answer now, taking nothing: 0 (admitted) or a rejection as `acquire`
// encodes it.
#[wasm_bindgen]
pub fn peek(h: u32, now: f64) -> f64 {
    table()
        .breaker(h)
        .map_or(reject::NO_BREAKER as f64, |b| b.peek(now))
}

// Reports the outcome of the call admitted at `issued_at` with `permit` (`sentinel::NONE`:
// without a permit, the `recordSuccess()` / `recordFailure()` pattern). Returns the transition
// code.
#[wasm_bindgen]
pub fn report(h: u32, now: f64, issued_at: f64, permit: f64, outcome: u32) -> u32 {
    table()
        .breaker(h)
        .map_or(tr::NONE, |b| b.report(now, issued_at, permit, outcome))
}

// Hands over what the host counted alone under `info::QUIET*` (`Breaker::record_quiet`):
// `admitted` admissions of its cached CLOSED permit and `successes` quiet successes. Returns the
// transition code.
#[wasm_bindgen]
pub fn record_quiet(h: u32, now: f64, admitted: f64, successes: f64) -> u32 {
    table().breaker(h).map_or(tr::NONE, |b| {
        transition_code(b.inner.record_quiet(ts(now), int(admitted), int(successes)))
    })
}

// ----- a breaker's concurrency limit ([`layout::bulkhead`]) -----

// One export for the limit's operations ([`layout::queue`], fewer lines of glue): ENTER a slot
// id, `MARK + ticket` to wait, or a refusal (0 without a limit); LEAVE slot `arg` and POLL (call
// until `sentinel::NONE`): the ticket now holding a slot, `MARK + ticket` timed out, or NONE;
// CANCEL ticket `arg`: 1 if it was waiting; DEADLINE: when POLL next has something to do, or
// NONE; ADOPT: moves
// the limit of breaker `arg` (its slots in flight and its line) to `h`, built by a restore under
// the same options.
#[cfg(feature = "wasm-adaptive")]
#[wasm_bindgen]
pub fn queue(h: u32, now: f64, op: u32, arg: f64) -> f64 {
    let t = table();
    if op as usize == qu::ADOPT {
        let moved = t.breaker(arg as u32).and_then(|b| b.bulkhead.take());
        if let (Some(moved), Some(b)) = (moved, t.breaker(h)) {
            if b.bulkhead.is_some() {
                b.bulkhead = Some(moved);
            }
        }
        return 0.0;
    }
    let Some(b) = t.breaker(h) else {
        return super::layout::sentinel::NONE as f64;
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

// The manual overrides ([`layout::control`]). Returns a transition code.
#[wasm_bindgen]
pub fn control(h: u32, now: f64, op: u32) -> u32 {
    table().breaker(h).map_or(tr::NONE, |b| b.control(now, op))
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

// The hedging policy: the adaptive module's (breakwater/adaptive's `hedge()`), which the main
// module does not carry.
#[cfg(feature = "wasm-adaptive")]
pub use hedging::*;

#[cfg(feature = "wasm-adaptive")]
mod hedging {
    use super::super::at;
    use super::super::layout::{hedge as hg, hedge_op as op, hedge_stats as st};
    use super::*;
    use crate::hedge::{Hedge, HedgeAfter, HedgeConfig};

    // A hedging policy from `io[..hedge::LEN]`: a handle, or `-refusal`.
    #[wasm_bindgen]
    pub fn hedge_new() -> i32 {
        let t = table();
        let io = t.input(hg::LEN, 0);
        let after = int(at(io, hg::AFTER));
        let config = HedgeConfig {
            after: if after == 0 {
                HedgeAfter::Auto
            } else {
                HedgeAfter::Millis(after)
            },
            budget: at(io, hg::BUDGET),
            quantile: at(io, hg::QUANTILE),
            min_after_ms: int(at(io, hg::MIN_AFTER)),
            max_after_ms: int(at(io, hg::MAX_AFTER)),
        };
        let made = Hedge::new(config)
            .map(|h| Slot::Hedge(alloc::boxed::Box::new(h)))
            .map_err(|_| refusal::CONFIG);
        t.put(made)
    }

    // A [`layout::hedge_op`] on policy `h` (a handle of another kind answers 0).
    #[wasm_bindgen]
    pub fn hedge_op(h: u32, o: u32, tier: u32, value: f64) -> f64 {
        let t = table();
        let Some(Slot::Hedge(p)) = t.slot(h) else {
            return 0.0;
        };
        let tier = tier as usize;
        match o {
            op::CALL => p.call(),
            op::AFTER => return p.after_ms(tier) as f64,
            op::START => return p.try_start(value == 1.0) as u32 as f64,
            op::PROGRESS => p.progress(tier, int(value)),
            op::WON | op::LOST => p.finish(o == op::WON, int(value)),
            op::STATS => {
                let s = p.stats();
                let tokens = p.tokens();
                let io = t.io(st::LEN);
                for (i, v) in [
                    s.calls as f64,
                    s.started as f64,
                    s.won as f64,
                    s.lost as f64,
                    s.refused as f64,
                    s.held as f64,
                    s.extra_input_tokens as f64,
                    tokens,
                ]
                .into_iter()
                .enumerate()
                {
                    if let Some(x) = io.get_mut(i) {
                        *x = v;
                    }
                }
                return io.as_ptr() as usize as f64;
            }
            _ => {}
        }
        0.0
    }
}

// The retry policy, the classifier and the budget: the main module's, left out of the adaptive
// one (feature `wasm-adaptive`), whose breakers use the main module for them.
#[cfg(not(feature = "wasm-adaptive"))]
pub use retries::*;

#[cfg(not(feature = "wasm-adaptive"))]
mod retries {
    use super::super::layout::{
        budget as bg, budget_op as bo, class as cl, classify as cf, give_up as gu, outcome as oc,
        retry as rt, text as tx,
    };
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

    // Decides what follows a failed attempt: the delay (≥ 0) before the next attempt, or a negated
    // [`layout::give_up`] code. `retry_after_ms` < 0 means none; `unit` is the random draw in
    // [0, 1) for the jitter. A handle that names no retry policy is not retryable.
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
            return -gu::NOT_RETRYABLE as f64;
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
            RetryDecision::GiveUp(GiveUpReason::NotRetryable) => -gu::NOT_RETRYABLE as f64,
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted) => {
                -gu::ATTEMPTS_EXHAUSTED as f64
            }
            RetryDecision::GiveUp(GiveUpReason::DeadlineExceeded) => -gu::DEADLINE as f64,
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong { .. }) => {
                -gu::RETRY_AFTER_TOO_LONG as f64
            }
            RetryDecision::GiveUp(GiveUpReason::BudgetExhausted) => -gu::BUDGET_EXHAUSTED as f64,
        }
    }

    // Classifies an attempt. `status` 0 means no response; `code` is the provider's error code as
    // [`Code::index`] (0 none, see `read_text` below); `flags` as [`layout::classify`] names them.
    // Returns `class | RETRYABLE | outcome << OUTCOME_SHIFT` ([`layout::class`],
    // [`layout::outcome`]). A handle that names no retry policy (0, say) classifies with the
    // core's default rules.
    #[wasm_bindgen]
    pub fn classify(h: u32, status: u16, code: u32, flags: u32) -> u32 {
        let default = Classifier::new();
        let classifier = match table().slot(h) {
            Some(Slot::Retry(_, c)) => c,
            _ => &default,
        };
        let signal = Signal {
            status: (status != 0).then_some(status),
            network_error: flags & cf::NETWORK != 0,
            timeout: flags & cf::TIMEOUT != 0,
            cancelled: flags & cf::CANCELLED != 0,
            ..Signal::default()
        };
        let v = classifier.classify_code(&signal, Code::from_index(code));
        let class = match v.class {
            Class::Success => cl::SUCCESS,
            Class::Transient => cl::TRANSIENT,
            Class::RateLimited => cl::RATE_LIMITED,
            Class::Overloaded => cl::OVERLOADED,
            Class::QuotaExhausted => cl::QUOTA_EXHAUSTED,
            Class::ClientError => cl::CLIENT_ERROR,
            Class::ServerError => cl::SERVER_ERROR,
            Class::Network => cl::NETWORK,
            Class::Timeout => cl::TIMEOUT,
            Class::Cancelled => cl::CANCELLED,
            Class::Declined => cl::DECLINED,
        };
        let outcome = match v.outcome {
            Outcome::Success => oc::SUCCESS,
            Outcome::Failure => oc::FAILURE,
            Outcome::Ignored => oc::IGNORED,
        };
        class
            | (v.retryable as u32) << cf::RETRYABLE.trailing_zeros()
            | outcome << cf::OUTCOME_SHIFT
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

    // What the string in the scratch buffer says ([`layout::text`]). `what` CODES: an error's codes
    // (one a line), a byte 1, then its messages and quota ids (one a line), answered as
    // `Code::index | status << STATUS_SHIFT` (0: none known); otherwise a finish or stop reason,
    // answered as an [`layout::ending`] code (`Ending`'s discriminant).
    #[wasm_bindgen]
    pub fn read_text(len: u32, what: u32) -> u32 {
        let mut buf = [0u8; 2048];
        let s = text(len, &mut buf);
        if what != tx::CODES {
            return Ending::of(s) as u32;
        }
        let split = s.iter().position(|&b| b == 1).unwrap_or(s.len());
        let (codes, texts) = s.split_at(split);
        Code::read(codes, texts).map_or(0, |c| c.index() | (c.status() as u32) << tx::STATUS_SHIFT)
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

    // A [`layout::budget_op`]: DEPOSIT records a first attempt (returns 0); WITHDRAW takes one
    // retry if the budget has one (1 or 0); AVAILABLE: the retries available (may be fractional).
    #[wasm_bindgen]
    pub fn budget_op(h: u32, now: f64, op: u32) -> f64 {
        let Some(Slot::Budget(b)) = table().slot(h) else {
            return 0.0;
        };
        let now = ts(now);
        match op {
            bo::DEPOSIT => {
                b.deposit(now);
                0.0
            }
            bo::WITHDRAW => b.try_withdraw(now) as u32 as f64,
            _ => b.available(now),
        }
    }
}

// The stream guard's rules (src/stream/) for `stream()`'s guard: the main module's, as the
// retry policy's.
#[cfg(not(feature = "wasm-adaptive"))]
pub use streams::*;

#[cfg(not(feature = "wasm-adaptive"))]
mod streams {
    use super::super::layout::{
        item, reading as rd, reading_bits as rb, sentinel, step_bits as sb, stream_limit as sl,
        stream_step as st, stream_stop as sp, watch as wc, watch_op as wo,
    };
    use super::*;
    use crate::stream::{
        Limit, Progress, Reading, Settled, Source, SseItem, SseSplitter, Step, Stop, StreamFailure,
        StreamLimits, Watch,
    };
    use crate::{Code, Ending};

    /// The most of an error event's data kept for the host to word the error.
    const ERROR_DATA: usize = 16 * 1024;

    /// One guarded stream: its watch, the splitter of its event stream, the last error event.
    pub(super) struct Streamed {
        watch: Watch,
        sse: SseSplitter,
        error: Vec<u8>,
    }

    // The byte buffer's address, grown to at least `len` bytes (it may move): a chunk goes in
    // there before `watch_item`, an error event's data comes out after `watch_op(ERROR_DATA)`.
    #[wasm_bindgen]
    pub fn bytes(len: u32) -> *mut u8 {
        let t = table();
        if t.bytes.len() < len as usize {
            t.bytes.resize(len as usize, 0);
        }
        t.bytes.as_mut_ptr()
    }

    // A watch over one stream from `now`, its limits in `io[..watch::LEN]` (0: off): a handle.
    #[wasm_bindgen]
    pub fn watch_new(now: f64) -> i32 {
        let t = table();
        let io = t.input(wc::LEN, wc::LEN as u32);
        let ms = |i: usize| {
            let v = io.get(i).copied().unwrap_or(0.0);
            (v >= 1.0).then(|| super::super::int(v))
        };
        let limits = StreamLimits {
            first_ms: ms(wc::FIRST),
            idle_ms: ms(wc::IDLE),
            total_ms: ms(wc::TOTAL),
            first_output_ms: ms(wc::FIRST_OUTPUT),
            thinking_ms: ms(wc::THINKING),
        };
        let s = Streamed {
            watch: Watch::new(limits, ts(now).0),
            sse: SseSplitter::new(),
            error: Vec::new(),
        };
        t.put(Ok(Slot::Stream(alloc::boxed::Box::new(s))))
    }

    // The first `len` bytes of the byte buffer, read at `now` as an [`layout::item`] kind: a
    // [`layout::stream_step`]. An event stream's chunk may hold several events: the first that
    // stops the stream answers, else BEGIN if the answer began in it, else HOLD or PASS.
    #[wasm_bindgen]
    pub fn watch_item(h: u32, now: f64, len: u32, kind: u32) -> u32 {
        let t = table();
        let Some(Slot::Stream(s)) = t.slots.get_mut((h as usize).wrapping_sub(1)) else {
            return st::NONE;
        };
        let s = &mut **s;
        let len = (len as usize).min(t.bytes.len());
        if kind == item::SPLIT {
            return split(&mut s.sse, &mut t.bytes, len);
        }
        let data = t.bytes.get(..len).unwrap_or_default();
        let now = ts(now).0;
        match kind {
            item::SSE => {
                let began = s.watch.began();
                let mut answer = None;
                let (watch, error) = (&mut s.watch, &mut s.error);
                s.sse.push(data, &mut |i| {
                    if answer.is_some() {
                        return;
                    }
                    let r = Reading::item(&i);
                    if let (SseItem::Event { data, .. }, true) =
                        (i, r.error.is_some() || r.malformed)
                    {
                        error.clear();
                        error.extend_from_slice(data.get(..ERROR_DATA).unwrap_or(data));
                    }
                    let step = watch.item(now, &r);
                    if !matches!(step, Step::Hold | Step::Begin | Step::Pass) {
                        answer = Some(step);
                    }
                });
                let step = answer.unwrap_or(if s.watch.began() {
                    if began {
                        Step::Pass
                    } else {
                        Step::Begin
                    }
                } else {
                    Step::Hold
                });
                code(step)
            }
            item::BYTES => code(s.watch.item(now, &bytes_reading(data))),
            _ => {
                let r = Reading::json(data, Source::Objects);
                let errored = if r.error.is_some() { sb::ERRORED } else { 0 };
                code(s.watch.item(now, &r)) | errored
            }
        }
    }

    // A [`layout::watch_op`] at `now`: a step (END, BROKE, TICK; PAUSE and RESUME answer NONE),
    // or a time or a length as the layout says.
    #[wasm_bindgen]
    pub fn watch_op(h: u32, now: f64, op: u32) -> f64 {
        let t = table();
        let Some(Slot::Stream(s)) = t.slots.get_mut((h as usize).wrapping_sub(1)) else {
            return st::NONE as f64;
        };
        let now = ts(now).0;
        let none = sentinel::NONE as f64;
        let step = match op {
            wo::END => s.watch.end(now),
            wo::BROKE => s.watch.broke(now),
            wo::PAUSE => {
                s.watch.pause(now);
                return st::NONE as f64;
            }
            wo::RESUME => {
                s.watch.resume(now);
                return st::NONE as f64;
            }
            wo::TICK => match s.watch.tick(now) {
                Some(step) => step,
                None => return st::NONE as f64,
            },
            wo::DEADLINE => return s.watch.deadline().map_or(none, |d| d as f64),
            wo::FIRST_AT => return s.watch.first_at().map_or(none, |d| d as f64),
            _ => {
                let n = s.error.len();
                t.bytes.clear();
                t.bytes.extend_from_slice(&s.error);
                return n as f64;
            }
        };
        code(step) as f64
    }

    // An item's reading by the core's rules (`len` bytes of the byte buffer as an
    // [`layout::item`] kind OBJECT; BYTES: any bytes are the answer): a [`layout::reading`] code.
    #[wasm_bindgen]
    pub fn read_item(len: u32, kind: u32) -> u32 {
        let data = table().bytes.get(..len as usize).unwrap_or_default();
        let r = if kind == item::OBJECT {
            Reading::json(data, Source::Objects)
        } else {
            bytes_reading(data)
        };
        reading_code(&r)
    }

    // A reading (a [`layout::reading`] code, as the host's own callbacks made it) at `now`: a
    // [`layout::stream_step`].
    #[wasm_bindgen]
    pub fn watch_reading(h: u32, now: f64, reading: u32) -> u32 {
        let Some(Slot::Stream(s)) = table().slot(h) else {
            return st::NONE;
        };
        let progress = match reading & rb::PROGRESS_MASK {
            rd::KEEP_ALIVE => Progress::KeepAlive,
            rd::THINKING => Progress::Thinking,
            rd::OUTPUT => Progress::Output,
            _ => Progress::None,
        };
        let ending = match (reading >> rb::ENDING_SHIFT) & rb::ENDING_MASK {
            0 => None,
            e => Some(ending_of(e - 1)),
        };
        let error = (reading & rb::ERROR != 0).then(|| StreamFailure {
            code: Code::from_index(reading >> sb::CODE_SHIFT),
            status: ((reading >> sb::STATUS_SHIFT) & 1023) as u16,
        });
        let r = Reading {
            progress,
            ending,
            error,
            malformed: reading & rb::MALFORMED != 0,
        };
        code(s.watch.item(ts(now).0, &r))
    }

    fn bytes_reading(data: &[u8]) -> Reading {
        Reading {
            progress: if data.is_empty() {
                Progress::None
            } else {
                Progress::Output
            },
            ..Reading::default()
        }
    }

    fn ending_of(e: u32) -> Ending {
        match e {
            0 => Ending::Complete,
            1 => Ending::Truncated,
            2 => Ending::Declined,
            3 => Ending::Failed,
            _ => Ending::Unknown,
        }
    }

    fn reading_code(r: &Reading) -> u32 {
        let progress = match r.progress {
            Progress::None => rd::NONE,
            Progress::KeepAlive => rd::KEEP_ALIVE,
            Progress::Thinking => rd::THINKING,
            Progress::Output => rd::OUTPUT,
        };
        let ending = r.ending.map_or(0, |e| e as u32 + 1) << rb::ENDING_SHIFT;
        let error = r.error.map_or(0, |f| {
            rb::ERROR
                | (f.status as u32) << sb::STATUS_SHIFT
                | f.code.map_or(0, Code::index) << sb::CODE_SHIFT
        });
        progress | ending | error | if r.malformed { rb::MALFORMED } else { 0 }
    }

    /// Splits the event stream's chunk in `bytes` and writes, in its place, one record an item:
    /// its reading (a [`layout::reading`] code), the lengths of its name and data (little-endian
    /// u32s; a comment: name length `u32::MAX`), then their bytes. Returns their length in bytes.
    fn split(sse: &mut SseSplitter, bytes: &mut Vec<u8>, len: usize) -> u32 {
        let mut input = core::mem::take(bytes);
        input.truncate(len);
        sse.push(&input, &mut |i| {
            let r = Reading::item(&i);
            let (name, data) = match i {
                SseItem::Comment => (&b""[..], &b""[..]),
                SseItem::Event { name, data, .. } => (name, data),
            };
            let name_len = if matches!(i, SseItem::Comment) {
                u32::MAX
            } else {
                name.len() as u32
            };
            for v in [reading_code(&r), name_len, data.len() as u32] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            bytes.extend_from_slice(name);
            bytes.extend_from_slice(data);
        });
        bytes.len() as u32
    }

    fn code(step: Step) -> u32 {
        let stopped = |kind: u32, stop: Stop| -> u32 {
            let (what, limit, failure) = match stop {
                Stop::Timeout(l) => (sp::TIMEOUT, limit(l), None),
                Stop::Error(f) => (sp::ERROR, 0, f),
                Stop::Malformed => (sp::MALFORMED, 0, None),
                Stop::Empty => (sp::EMPTY, 0, None),
                Stop::Broken => (sp::BROKEN, 0, None),
            };
            let (status, code) = failure.map_or((0, 0), |f| {
                (f.status as u32, f.code.map_or(0, |c| c.index()))
            });
            kind | what << sb::STOP_SHIFT
                | limit << sb::LIMIT_SHIFT
                | status << sb::STATUS_SHIFT
                | code << sb::CODE_SHIFT
        };
        match step {
            Step::Hold => st::HOLD,
            Step::Begin => st::BEGIN,
            Step::Pass => st::PASS,
            Step::Fail(stop) => stopped(st::FAIL, stop),
            Step::Cut { stop, counted } => {
                stopped(st::CUT, stop) | if counted { sb::COUNTED } else { 0 }
            }
            Step::End(Settled::Success) => st::SUCCESS,
            Step::End(Settled::Ignored) => st::IGNORED,
        }
    }

    fn limit(l: Limit) -> u32 {
        match l {
            Limit::First => sl::FIRST,
            Limit::Idle => sl::IDLE,
            Limit::Total => sl::TOTAL,
            Limit::FirstOutput => sl::FIRST_OUTPUT,
            Limit::Thinking => sl::THINKING,
        }
    }
}
