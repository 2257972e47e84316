//! The thin numeric wasm-bindgen boundary the JavaScript package is built on.
//!
//! Everything here is a number: `now` is a JavaScript millisecond reading (`f64`), a breaker, a
//! retry policy or a budget is a handle (a `u32` into one table of objects), a permit is one
//! number, an outcome and a transition are small integers. Arrays (a configuration in, `info` or
//! a snapshot out) go through one scratch buffer in linear memory, [`io`]: JavaScript writes and
//! reads it through a `Float64Array` over the memory. So the generated glue is one line per
//! function, and nothing here formats, throws or panics: a constructor that refuses returns a
//! negative [`layout::refusal`] code and JavaScript writes the words (it has validated the
//! options already, naming them). `Retry-After` values are parsed by the TypeScript layer with
//! the rules of [`parse_retry_after`](crate::parse_retry_after): string handling would add some
//! 3 KB gzip to the `.wasm` every app downloads, for a 20-line function.
//!
//! The TypeScript layer (`js/src`) owns these encodings; they are not a public API. The array
//! layouts and every code in them are named in [`layout`] and, for TypeScript, in
//! `js/src/codes/layout.ts`: states, modes, outcomes, transitions (`FIRST + from × STRIDE + to`),
//! permits (`generation mod 2^20` × [`layout::permit::KIND`] + kind), refusals
//! (`-(retry_after_ms × SCALE + reason)`, [`layout::reject`]), and the operations of each export.
//! A permit's generation is recovered as the latest one with those low bits, which is exact
//! unless a million transitions happen while one call is in flight.

// Items carry plain comments: doc comments would be copied into the generated glue, which every
// app downloads.
#![allow(missing_docs)]
// Natively only the layouts are used (by tests/layout.rs); the rest serves the wasm32 exports.
#![cfg_attr(
    any(
        not(target_arch = "wasm32"),
        feature = "wasm-shared",
        feature = "wasm-adaptive"
    ),
    allow(dead_code, unused_imports)
)]

// Three modules, one crate: the main one (feature `wasm`: `exports`), the lease client's
// (`wasm-shared`: `shared`) and the coordinator's (`wasm-coordinator`, which enables
// `wasm-shared`: `shared` and `coordinator`), so that a host of the coordinator, which runs
// clients too, loads one shared module. The features only choose which `#[wasm_bindgen]` exports
// a module compiles; what they call is the core's, once. The shared modules leave the main
// exports out: their JavaScript imports the main module for everything else.
#[cfg(feature = "wasm-coordinator")]
mod coordinator;
#[cfg(all(target_arch = "wasm32", not(feature = "wasm-shared")))]
mod exports;
#[cfg(all(target_arch = "wasm32", not(feature = "std")))]
mod heap;
pub mod layout;
#[cfg(feature = "wasm-shared")]
mod shared;

#[cfg(all(target_arch = "wasm32", not(feature = "wasm-shared")))]
pub use exports::*;

use alloc::vec::Vec;

use crate::breaker::{Bucket, Counter, ProbeLease, Throttle, ThrottleBucket, ThrottleWindow};
#[cfg(feature = "wasm-adaptive")]
use crate::bulkhead::{Bulkhead, BulkheadConfig, Entry, Slot, Ticket, Wake};
use crate::retry::StatusSet;
use crate::{
    Breaker, BreakerConfig, ConfigError, Jitter, Mode, Outcome, Permit, PermitKind, RejectReason,
    Rejected, RestoreError, RetryBudget, RetryPolicy, Snapshot, SnapshotError, State, Stats,
    Timestamp, Transition, TripRule, Window,
};

#[cfg(feature = "wasm-adaptive")]
use layout::bulkhead as bh;
use layout::{
    budget as bg, cfg, counter_kind, jitter, mode, outcome as oc, permit, refusal, reject,
    retry as rt, sentinel, state, transition as tr, trip, window_kind,
};

const GEN_BITS: u32 = 20;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;
const KIND_BITS: u32 = permit::KIND.trailing_zeros();
const KIND_MASK: u64 = permit::KIND - 1;
const MAX_SAFE: f64 = 9_007_199_254_740_992.0; // 2^53

#[inline]
fn ts(now: f64) -> Timestamp {
    Timestamp::from_f64_millis(now)
}

#[inline]
fn state_num(s: State) -> u32 {
    match s {
        State::Closed => state::CLOSED,
        State::Open => state::OPEN,
        State::HalfOpen => state::HALF_OPEN,
    }
}

// A state for the lease client's and the coordinator's modules, `sentinel::NONE` when unknown.
#[cfg(feature = "wasm-shared")]
fn state_code(s: Option<State>) -> f64 {
    match s {
        None => sentinel::NONE as f64,
        Some(s) => state_num(s) as f64,
    }
}

#[inline]
fn transition_code(t: Option<Transition>) -> u32 {
    match t {
        Some(t) => tr::FIRST + state_num(t.from) * tr::STRIDE + state_num(t.to),
        None => tr::NONE,
    }
}

#[inline]
fn outcome(code: u32) -> Outcome {
    match code {
        oc::SUCCESS => Outcome::Success,
        oc::FAILURE => Outcome::Failure,
        _ => Outcome::Ignored,
    }
}

// A non-negative integer below 2^53 (saturating for the rest: the core's validators then name
// the field). NaN maps to `u64::MAX` so that it is refused rather than read as zero.
#[inline]
fn int(x: f64) -> u64 {
    if x.is_nan() {
        u64::MAX
    } else {
        x as u64
    }
}

#[inline]
fn int32(x: f64) -> u32 {
    u32::try_from(int(x)).unwrap_or(u32::MAX)
}

fn at(cfg: &[f64], i: usize) -> f64 {
    cfg.get(i).copied().unwrap_or(f64::NAN)
}

fn refusal_code(e: RestoreError) -> usize {
    match e {
        RestoreError::Config(_) => refusal::CONFIG,
        RestoreError::Snapshot(SnapshotError::UnsupportedVersion(_)) => refusal::VERSION,
        RestoreError::Snapshot(SnapshotError::ConfigMismatch(_)) => refusal::MISMATCH,
        RestoreError::Snapshot(SnapshotError::Corrupt(_)) => refusal::CORRUPT,
    }
}

// Reads a breaker configuration laid out as [`layout::cfg`].
#[inline(never)]
// A problem is a [`ConfigError`]: only the shared breaker's boundary words it
// ([`shared::refusal_text`]); the main one answers `refusal::CONFIG`.
fn breaker_config(c: &[f64]) -> Result<BreakerConfig, ConfigError> {
    let window = if at(c, cfg::WINDOW_KIND) == window_kind::MILLIS as f64 {
        Window::Millis(int(at(c, cfg::WINDOW_SIZE)))
    } else {
        Window::Calls(int32(at(c, cfg::WINDOW_SIZE)))
    };
    let threshold = at(c, cfg::THRESHOLD);
    let minimum_calls = int32(at(c, cfg::MINIMUM_CALLS));
    let trip = match at(c, cfg::TRIP) as u32 {
        trip::CONSECUTIVE => TripRule::ConsecutiveFailures {
            threshold: int32(threshold),
        },
        trip::FAILURES_IN_WINDOW => TripRule::FailuresInWindow {
            threshold: int32(threshold),
            window_ms: int(at(c, cfg::WINDOW_MS)),
        },
        trip::FAILURE_RATE => TripRule::FailureRate {
            threshold_percent: threshold,
            minimum_calls,
            window,
        },
        trip::SLOW_CALL_RATE => TripRule::SlowCallRate {
            threshold_percent: threshold,
            slow_call_ms: int(at(c, cfg::WINDOW_MS)),
            minimum_calls,
            window,
        },
        _ => {
            return Err(ConfigError::new(
                "trip",
                at(c, cfg::TRIP),
                "a known trip rule",
            ))
        }
    };
    let config = BreakerConfig::new()
        .with_trip(trip)
        .with_open_duration_ms(int(at(c, cfg::OPEN_DURATION)))
        .with_open_jitter(at(c, cfg::OPEN_JITTER))
        .with_open_backoff(at(c, cfg::OPEN_BACKOFF), int(at(c, cfg::MAX_OPEN_DURATION)))
        .with_half_open_max_probes(int32(at(c, cfg::PROBES)))
        .with_half_open_success_threshold(int32(at(c, cfg::PROBE_SUCCESSES)))
        .with_probe_timeout_ms(int(at(c, cfg::PROBE_TIMEOUT)))
        .with_seed(int(at(c, cfg::SEED)));
    let multiplier = at(c, cfg::THROTTLE_MULTIPLIER);
    let config = if multiplier > 0.0 {
        if !cfg!(feature = "throttle") {
            return Err(ConfigError::new(
                "throttle",
                multiplier,
                "a build with the throttle",
            ));
        }
        config.with_throttle(Throttle {
            multiplier,
            window_ms: int(at(c, cfg::THROTTLE_WINDOW)),
            minimum_requests: int32(at(c, cfg::THROTTLE_MINIMUM)),
            max_rejection_probability: at(c, cfg::THROTTLE_MAX),
        })
    } else {
        config
    };
    config.validate()?;
    Ok(config)
}

// A breaker from `io[..cfg::LEN]`, restored from the snapshot in `io[cfg::LEN..]` if there is
// one; else the refusal code.
fn new_breaker(io: &[f64]) -> Result<Held, usize> {
    let config = breaker_config(io).map_err(|_| refusal::CONFIG)?;
    let inner = match io.get(cfg::LEN..) {
        Some(data) if !data.is_empty() => {
            let snapshot = decode_snapshot(data).ok_or(refusal::MALFORMED)?;
            Breaker::restore(config, snapshot).map_err(refusal_code)?
        }
        _ => Breaker::new(config).map_err(|_| refusal::CONFIG)?,
    };
    let limit = int32(at(io, cfg::MAX_CONCURRENT));
    // The concurrency limit is the adaptive module's (feature `wasm-adaptive`); the main module
    // refuses one rather than run without it, and has no room for it.
    #[cfg(not(feature = "wasm-adaptive"))]
    if limit > 0 {
        return Err(refusal::CONFIG);
    }
    #[cfg(feature = "wasm-adaptive")]
    let bulkhead = if limit > 0 {
        let config = BulkheadConfig::new(limit)
            .with_queue(
                int32(at(io, cfg::MAX_QUEUED)),
                int(at(io, cfg::QUEUE_TIMEOUT)),
            )
            .with_lease_ms(inner.config().probe_timeout_ms);
        Some(Bulkhead::new(config).map_err(|_| refusal::CONFIG)?)
    } else {
        None
    };
    Ok(Held {
        fast: inner.config().fast_path().bits() as u8,
        inner,
        pending: 0,
        #[cfg(feature = "wasm-adaptive")]
        bulkhead,
    })
}

// A [`Breaker`], the transition code of its last `acquire`, the bits of its configuration's
// [`FastPath`](crate::FastPath) (`info::FAST`), and (the adaptive module's) its concurrency
// limit.
struct Held {
    inner: Breaker,
    pending: u32,
    fast: u8,
    #[cfg(feature = "wasm-adaptive")]
    bulkhead: Option<Bulkhead>,
}

impl Held {
    fn acquire(&mut self, now: f64) -> f64 {
        let a = self.inner.acquire(ts(now));
        self.pending = transition_code(a.transition);
        match a.result {
            Ok(p) => encode_permit(&p),
            Err(r) => encode_rejected(r),
        }
    }

    fn peek(&self, now: f64) -> f64 {
        self.inner
            .peek(ts(now))
            .map_or_else(encode_rejected, |()| 0.0)
    }

    // A handle this breaker cannot have issued is ignored; `sentinel::NONE` reports without a
    // permit.
    fn report(&mut self, now: f64, issued_at: f64, handle: f64, outcome_code: u32) -> u32 {
        if handle == sentinel::NONE as f64 {
            return transition_code(self.inner.record(ts(now), outcome(outcome_code)));
        }
        match self.decode_permit(handle, issued_at) {
            Some(p) => transition_code(self.inner.report(ts(now), p, outcome(outcome_code))),
            None => tr::NONE,
        }
    }

    // Laid out as [`layout::info`].
    fn info(&self, now: f64) -> [f64; layout::info::LEN] {
        let b = &self.inner;
        let s = b.stats();
        let (full, in_flight, queued) = self.limit_info();
        let quiet = b.quiet();
        [
            state_num(b.state_at(ts(now))) as f64,
            mode_num(b.mode()) as f64,
            b.open_until().map_or(sentinel::NONE as f64, |t| t.0 as f64),
            b.probes_in_flight() as f64,
            s.admitted as f64,
            s.rejected as f64,
            s.successes as f64,
            s.failures as f64,
            s.ignored as f64,
            s.stale as f64,
            s.slow as f64,
            s.opened as f64,
            self.pending as f64,
            s.throttled as f64,
            b.throttle_probability(ts(now)),
            full,
            in_flight,
            queued,
            f64::from(self.fast),
            f64::from(quiet.successes),
            quiet.until.0 as f64,
            quiet.slow_call_ms as f64,
        ]
    }

    // The concurrency limit's refusals, calls in flight and calls waiting (0s without one).
    fn limit_info(&self) -> (f64, f64, f64) {
        #[cfg(feature = "wasm-adaptive")]
        if let Some(k) = &self.bulkhead {
            return (
                k.stats().full as f64,
                k.in_flight() as f64,
                k.queued() as f64,
            );
        }
        (0.0, 0.0, 0.0)
    }

    // A [`layout::control`] operation.
    fn control(&mut self, now: f64, op: u32) -> u32 {
        use layout::control as ct;
        let now = ts(now);
        transition_code(match op {
            ct::ISOLATE => self.inner.isolate(now),
            ct::RESET => self.inner.reset(now),
            _ => {
                self.inner.set_disabled(now, op == ct::DISABLE);
                None
            }
        })
    }

    fn decode_permit(&self, handle: f64, issued_at: f64) -> Option<Permit> {
        if !(0.0..MAX_SAFE).contains(&handle) {
            return None;
        }
        let h = handle as u64;
        let kind = match h & KIND_MASK {
            permit::NORMAL => PermitKind::Normal,
            permit::BYPASS => PermitKind::Bypass,
            k => PermitKind::Probe {
                id: u32::try_from(k - permit::PROBE).ok()?,
            },
        };
        let low = u32::try_from(h >> KIND_BITS).ok()?;
        let g = self.inner.generation();
        let generation = g.wrapping_sub(g.wrapping_sub(low) & GEN_MASK);
        Some(Permit {
            generation,
            kind,
            issued_at: ts(issued_at),
        })
    }
}

// The concurrency limit's operations, the adaptive module's only.
#[cfg(feature = "wasm-adaptive")]
impl Held {
    // A slot of the concurrency limit, a place in line, or a refusal ([`layout::bulkhead`]); a
    // breaker without a limit answers slot 0.
    fn enter(&mut self, now: f64) -> f64 {
        match self.bulkhead.as_mut().map(|b| b.enter(ts(now))) {
            None => 0.0,
            Some(Entry::Admitted(slot)) => slot.0 as f64,
            Some(Entry::Queued { ticket, .. }) => (bh::MARK | ticket.0) as f64,
            Some(Entry::Full(r)) => encode_rejected(r),
        }
    }

    fn leave(&mut self, now: f64, slot: f64) -> f64 {
        let slot = Slot(int32(slot));
        wake_code(self.bulkhead.as_mut().and_then(|b| b.leave(ts(now), slot)))
    }

    fn poll_queue(&mut self, now: f64) -> f64 {
        wake_code(self.bulkhead.as_mut().and_then(|b| b.poll(ts(now))))
    }

    fn cancel(&mut self, ticket: f64) -> u32 {
        let ticket = Ticket(int32(ticket) & !(bh::MARK));
        self.bulkhead.as_mut().is_some_and(|b| b.cancel(ticket)) as u32
    }

    // When `poll_queue` next has something to do, or `sentinel::NONE`.
    fn queue_deadline(&self) -> f64 {
        self.bulkhead
            .as_ref()
            .and_then(Bulkhead::next_deadline)
            .map_or(sentinel::NONE as f64, |t| t as f64)
    }
}

#[cfg(feature = "wasm-adaptive")]
// A queued call's news as [`layout::bulkhead`] lays it out.
fn wake_code(w: Option<Wake>) -> f64 {
    match w {
        None => sentinel::NONE as f64,
        Some(Wake::Admitted { ticket, .. }) => ticket.0 as f64,
        Some(Wake::TimedOut { ticket, .. }) => (bh::MARK | ticket.0) as f64,
    }
}

// A refusal as [`layout::reject`] lays it out, in every module: `-(retry_after_ms × SCALE +
// reason)`, ≤ -SCALE (the core's retry-after is at least 1 ms).
pub(crate) fn encode_rejected(r: Rejected) -> f64 {
    let reason = match r.reason {
        RejectReason::Open => reject::OPEN,
        RejectReason::HalfOpenFull => reject::HALF_OPEN_FULL,
        RejectReason::Isolated => reject::ISOLATED,
        RejectReason::Throttled => reject::THROTTLED,
        RejectReason::Full => reject::FULL,
    };
    // Capped at 2^49 ms (17 000 years) so that the sum stays an exact integer.
    -((r.retry_after_ms.min(1 << 49) * reject::SCALE as u64 + reason as u64) as f64)
}

#[inline]
fn encode_permit(p: &Permit) -> f64 {
    let kind = match p.kind {
        PermitKind::Normal => permit::NORMAL as f64,
        PermitKind::Bypass => permit::BYPASS as f64,
        PermitKind::Probe { id } => permit::PROBE as f64 + id as f64,
    };
    (p.generation & GEN_MASK) as f64 * permit::KIND as f64 + kind
}

fn mode_num(m: Mode) -> u32 {
    match m {
        Mode::Automatic => mode::AUTOMATIC,
        Mode::Isolated => mode::ISOLATED,
        Mode::Disabled => mode::DISABLED,
    }
}

// ----- snapshots as numbers -----
//
// [version, state, mode, generation, last_now, opened_at, open_until, failed_probe_rounds,
//  half_open_successes, next_probe_id, rng_hi, rng_lo, 8 × stats, probes n, (id, expires_at) × n,
//  counter kind, counter…, throttle…] where the counter, by its [`layout::counter_kind`], is
//  CONSECUTIVE: [failures] · FAILURE_TIMES: [head, n, times × n] ·
//  CALLS: [head, failures, slow, n, ring × n] · BUCKETS: [n, (index, calls, failures, slow) × n]
// and the throttle, only when it has counted something (so that a breaker without one writes
// what builds before it read), is [throttled, (index, requests, accepts) × 12].

// Numbers written at a cursor, as far as `out` holds them: a first pass over an empty `out`
// counts them, a second writes them. The snapshot goes straight into the scratch buffer, with
// no `Vec` to grow (its growth paths cost the .wasm more than the pass).
struct Out<'a> {
    out: &'a mut [f64],
    n: usize,
}

impl Out<'_> {
    #[inline(never)]
    fn put(&mut self, x: f64) {
        if let Some(o) = self.out.get_mut(self.n) {
            *o = x;
        }
        self.n += 1;
    }

    fn all(&mut self, xs: &[f64]) {
        for &x in xs {
            self.put(x);
        }
    }
}

fn encode_snapshot(s: &Snapshot, v: &mut Out<'_>) {
    let st = &s.stats;
    v.all(&[
        s.version as f64,
        state_num(s.state) as f64,
        mode_num(s.mode) as f64,
        s.generation as f64,
        s.last_now as f64,
        s.opened_at as f64,
        s.open_until as f64,
        s.failed_probe_rounds as f64,
        s.half_open_successes as f64,
        s.next_probe_id as f64,
        (s.rng >> 32) as f64,
        (s.rng & 0xFFFF_FFFF) as f64,
        st.admitted as f64,
        st.rejected as f64,
        st.successes as f64,
        st.failures as f64,
        st.ignored as f64,
        st.stale as f64,
        st.slow as f64,
        st.opened as f64,
        s.probes.len() as f64,
    ]);
    for p in &s.probes {
        v.put(p.id as f64);
        v.put(p.expires_at as f64);
    }
    encode_counter(&s.counter, v);
    // A module without the throttle (the main one) has nothing to write here.
    if cfg!(feature = "throttle") && (st.throttled != 0 || !s.throttle.is_empty()) {
        v.put(st.throttled as f64);
        for b in &s.throttle.buckets {
            v.all(&[b.index as f64, b.requests as f64, b.accepts as f64]);
        }
    }
}

// A [`layout::counter_kind`], then that counter's numbers.
fn encode_counter(c: &Counter, v: &mut Out<'_>) {
    match c {
        Counter::Consecutive { failures } => {
            v.all(&[counter_kind::CONSECUTIVE as f64, *failures as f64])
        }
        Counter::FailureTimes { times, head } => {
            v.all(&[
                counter_kind::FAILURE_TIMES as f64,
                *head as f64,
                times.len() as f64,
            ]);
            for &t in times {
                v.put(t as f64);
            }
        }
        Counter::Calls {
            ring,
            head,
            failures,
            slow,
        } => {
            v.all(&[
                counter_kind::CALLS as f64,
                *head as f64,
                *failures as f64,
                *slow as f64,
                ring.len() as f64,
            ]);
            for &b in ring {
                v.put(b as f64);
            }
        }
        Counter::Buckets { buckets } => {
            v.all(&[counter_kind::BUCKETS as f64, buckets.len() as f64]);
            for b in buckets {
                v.all(&[
                    b.index as f64,
                    b.calls as f64,
                    b.failures as f64,
                    b.slow as f64,
                ]);
            }
        }
    }
}

struct Reader<'a>(core::slice::Iter<'a, f64>);

impl Reader<'_> {
    #[inline(never)]
    fn u64(&mut self) -> Option<u64> {
        let x = *self.0.next()?;
        if !(0.0..=MAX_SAFE).contains(&x) {
            return None;
        }
        let n = x as u64;
        (n as f64 == x).then_some(n)
    }
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }
    fn u8(&mut self) -> Option<u8> {
        u8::try_from(self.u64()?).ok()
    }
    // A length that the rest of the data can hold (`per` numbers per item).
    fn len(&mut self, per: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(per)? <= self.0.len()).then_some(n)
    }
    // A length, then that many items of `per` numbers, each read by `item`.
    fn list<T>(&mut self, per: usize, item: impl Fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let n = self.len(per)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(item(self)?);
        }
        Some(items)
    }
}

// The parts of a snapshot after its header, in the order [`encode_snapshot`] writes them.
impl Reader<'_> {
    // The 8 counts; `throttled`, written after the counter, is the throttle's.
    fn stats(&mut self) -> Option<Stats> {
        Some(Stats {
            admitted: self.u64()?,
            rejected: self.u64()?,
            successes: self.u64()?,
            failures: self.u64()?,
            ignored: self.u64()?,
            stale: self.u64()?,
            slow: self.u64()?,
            opened: self.u64()?,
            throttled: 0,
        })
    }

    fn probes(&mut self) -> Option<Vec<ProbeLease>> {
        self.list(2, |r| {
            Some(ProbeLease {
                id: r.u32()?,
                expires_at: r.u64()?,
            })
        })
    }

    // A [`layout::counter_kind`], then that counter's numbers.
    fn counter(&mut self) -> Option<Counter> {
        Some(match self.u32()? {
            counter_kind::CONSECUTIVE => Counter::Consecutive {
                failures: self.u32()?,
            },
            counter_kind::FAILURE_TIMES => {
                let head = self.u32()?;
                let times = self.list(1, Self::u64)?;
                Counter::FailureTimes { times, head }
            }
            counter_kind::CALLS => {
                let head = self.u32()?;
                let failures = self.u32()?;
                let slow = self.u32()?;
                let ring = self.list(1, Self::u8)?;
                Counter::Calls {
                    ring,
                    head,
                    failures,
                    slow,
                }
            }
            counter_kind::BUCKETS => Counter::Buckets {
                buckets: self.list(4, |r| {
                    Some(Bucket {
                        index: r.u64()?,
                        calls: r.u32()?,
                        failures: r.u32()?,
                        slow: r.u32()?,
                    })
                })?,
            },
            _ => return None,
        })
    }

    // The throttle's part, if the data goes on: its `throttled` count and its window.
    fn throttle(&mut self) -> Option<(u64, ThrottleWindow)> {
        let mut window = ThrottleWindow::default();
        if self.0.len() == 0 {
            return Some((0, window));
        }
        let throttled = self.u64()?;
        if cfg!(feature = "throttle") {
            for b in &mut window.buckets {
                *b = ThrottleBucket {
                    index: self.u64()?,
                    requests: self.u32()?,
                    accepts: self.u32()?,
                };
            }
        } else {
            // Written by a breaker with a throttle, restored into one without (the main module
            // has none): its window is dropped, as `Breaker::restore` drops it.
            self.0.by_ref().for_each(drop);
        }
        Some((throttled, window))
    }
}

fn decode_snapshot(data: &[f64]) -> Option<Snapshot> {
    let mut r = Reader(data.iter());
    let version = r.u32()?;
    let state = match r.u32()? {
        state::CLOSED => State::Closed,
        state::OPEN => State::Open,
        state::HALF_OPEN => State::HalfOpen,
        _ => return None,
    };
    let mode = match r.u32()? {
        mode::AUTOMATIC => Mode::Automatic,
        mode::ISOLATED => Mode::Isolated,
        mode::DISABLED => Mode::Disabled,
        _ => return None,
    };
    let generation = r.u32()?;
    let last_now = r.u64()?;
    let opened_at = r.u64()?;
    let open_until = r.u64()?;
    let failed_probe_rounds = r.u32()?;
    let half_open_successes = r.u32()?;
    let next_probe_id = r.u32()?;
    let rng = ((r.u32()? as u64) << 32) | r.u32()? as u64;
    let stats = r.stats()?;
    let probes = r.probes()?;
    let counter = r.counter()?;
    let (throttled, throttle) = r.throttle()?;
    if r.0.next().is_some() {
        return None;
    }
    Some(Snapshot {
        version,
        state,
        mode,
        generation,
        last_now,
        opened_at,
        open_until,
        failed_probe_rounds,
        half_open_successes,
        probes,
        next_probe_id,
        counter,
        rng,
        stats: Stats { throttled, ..stats },
        throttle,
    })
}

// ----- retry -----

// Reads a retry policy laid out as [`layout::retry`] (the statuses after it are the classifier's).
fn retry_policy(c: &[f64]) -> Result<RetryPolicy, ConfigError> {
    let deadline = at(c, rt::DEADLINE);
    let jitter = match at(c, rt::JITTER) as u32 {
        jitter::NONE => Jitter::None,
        jitter::FULL => Jitter::Full,
        jitter::EQUAL => Jitter::Equal,
        jitter::DECORRELATED => Jitter::Decorrelated,
        _ => Jitter::Proportional(at(c, rt::PROPORTION)),
    };
    let policy = RetryPolicy {
        max_attempts: int32(at(c, rt::MAX_ATTEMPTS)),
        base_delay_ms: int(at(c, rt::BASE_DELAY)),
        factor: at(c, rt::FACTOR),
        max_delay_ms: int(at(c, rt::MAX_DELAY)),
        deadline_ms: (deadline >= 0.0).then(|| int(deadline)),
        jitter,
        max_retry_after_ms: int(at(c, rt::MAX_RETRY_AFTER)),
    };
    policy.validate()?;
    Ok(policy)
}

// Reads a retry budget laid out as [`layout::budget`].
fn budget(c: &[f64]) -> Result<RetryBudget, ConfigError> {
    RetryBudget::new(
        int(at(c, bg::TTL)),
        int32(at(c, bg::MIN_PER_SEC)),
        at(c, bg::RETRY_PERCENT),
    )
}

// Statuses arrive as numbers (one array type in the glue); anything that is not a status code
// in 0..=639 is left out.
fn status_set(codes: &[f64]) -> StatusSet {
    codes
        .iter()
        .fold(StatusSet::empty(), |s, &c| match u16::try_from(int(c)) {
            Ok(code) if code as f64 == c => s.with(code),
            _ => s,
        })
}
