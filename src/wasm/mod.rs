//! The thin numeric wasm-bindgen boundary the JavaScript package is built on.
//!
//! Everything on the hot path is a number: `now` is a JavaScript millisecond reading (`f64`), a
//! permit is one number, an outcome is a small integer, a transition is a small integer. Nothing
//! here formats, allocates on the hot path, throws, or panics. Strings cross only for
//! configuration errors (`check` returns `"field|expected"`; the TypeScript layer validates the
//! options first and names the JavaScript option itself). Constructors return `undefined` rather
//! than throwing: exceptions would cost an externref shim per function in the glue, for a path
//! `check` already covers. `Retry-After` values are parsed by the TypeScript layer with the rules
//! of [`parse_retry_after`](crate::parse_retry_after): string handling would add some 3 KB gzip
//! to the `.wasm` every app downloads, for a 20-line function.
//!
//! The TypeScript layer (`js/src`) owns the encodings below; they are not a public API.
//!
//! - State: 0 CLOSED, 1 OPEN, 2 HALF_OPEN. Mode: 0 automatic, 1 isolated, 2 disabled.
//! - Outcome: 0 success, 1 failure, 2 ignored.
//! - Transition: 0 none, else `1 + from * 3 + to`.
//! - Permit handle (`acquire`): `generation mod 2^20` × 2^33 + kind, where kind is 0 (normal),
//!   1 (bypass) or `2 + probe id`. A negative result is a rejection:
//!   `-(retry_after_ms × 4 + reason)` with reason 0 open, 1 half-open full, 2 isolated.
//!   The generation is recovered as the latest one with those low bits, which is exact unless a
//!   million transitions happen while one call is in flight.

// Items carry plain comments: doc comments would be copied into the generated glue, which every
// app downloads.
#![allow(missing_docs)]

#[cfg(all(target_arch = "wasm32", not(feature = "std")))]
mod heap;
#[cfg(feature = "wasm-shared")]
mod shared;

use alloc::string::String;
use alloc::vec::Vec;

use wasm_bindgen::prelude::*;

use crate::breaker::{Bucket, Counter, ProbeLease};
use crate::retry::StatusSet;
use crate::rng::UnitFn;
use crate::{
    AttemptFailure, Breaker, BreakerConfig, Class, Classifier, ConfigError, GiveUpReason, Jitter,
    Mode, Outcome, Permit, PermitKind, RejectReason, Rejected, RestoreError, RetryBudget,
    RetryDecision, RetryPolicy, RetryState, Signal, Snapshot, SnapshotError, State, Stats,
    Timestamp, Transition, TripRule, Window,
};

const GEN_BITS: u32 = 20;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;
const KIND_BITS: u32 = 33;
const KIND_MASK: u64 = (1 << KIND_BITS) - 1;
const MAX_SAFE: f64 = 9_007_199_254_740_992.0; // 2^53

#[inline]
fn ts(now: f64) -> Timestamp {
    Timestamp::from_f64_millis(now)
}

#[inline]
fn state_num(s: State) -> u32 {
    match s {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

#[inline]
fn transition_code(t: Option<Transition>) -> u32 {
    match t {
        Some(t) => 1 + state_num(t.from) * 3 + state_num(t.to),
        None => 0,
    }
}

#[inline]
fn outcome(code: u32) -> Outcome {
    match code {
        0 => Outcome::Success,
        1 => Outcome::Failure,
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

// A configuration problem: the field (as the core spells it) and what it expects.
type Fault = (&'static str, &'static str);

fn fault(e: ConfigError) -> Fault {
    (e.field, e.expected)
}

fn restore_fault(e: RestoreError) -> Fault {
    match e {
        RestoreError::Config(e) => fault(e),
        RestoreError::Snapshot(e) => (
            "snapshot",
            match e {
                SnapshotError::UnsupportedVersion(_) => "unsupported snapshot version",
                SnapshotError::ConfigMismatch(w) | SnapshotError::Corrupt(w) => w,
            },
        ),
    }
}

// `""` when fine, else `"field|expected"`.
fn report_fault<T>(r: Result<T, Fault>) -> String {
    let mut s = String::new();
    if let Err((field, expected)) = r {
        s.push_str(field);
        s.push('|');
        s.push_str(expected);
    }
    s
}

// Reads a breaker configuration from a flat array (layout in `js/src/options.ts`):
// `[trip kind, threshold, window or slow-call ms, minimum calls, window kind, window size,
// open duration, open jitter, open backoff factor, max open duration, half-open probes,
// half-open successes, probe timeout, seed]`.
fn breaker_config(cfg: &[f64]) -> Result<BreakerConfig, Fault> {
    let window = if at(cfg, 4) == 1.0 {
        Window::Millis(int(at(cfg, 5)))
    } else {
        Window::Calls(int32(at(cfg, 5)))
    };
    let trip = match at(cfg, 0) as u32 {
        0 => TripRule::ConsecutiveFailures {
            threshold: int32(at(cfg, 1)),
        },
        1 => TripRule::FailuresInWindow {
            threshold: int32(at(cfg, 1)),
            window_ms: int(at(cfg, 2)),
        },
        2 => TripRule::FailureRate {
            threshold_percent: at(cfg, 1),
            minimum_calls: int32(at(cfg, 3)),
            window,
        },
        3 => TripRule::SlowCallRate {
            threshold_percent: at(cfg, 1),
            slow_call_ms: int(at(cfg, 2)),
            minimum_calls: int32(at(cfg, 3)),
            window,
        },
        _ => return Err(("trip", "a known trip rule")),
    };
    let config = BreakerConfig::new()
        .with_trip(trip)
        .with_open_duration_ms(int(at(cfg, 6)))
        .with_open_jitter(at(cfg, 7))
        .with_open_backoff(at(cfg, 8), int(at(cfg, 9)))
        .with_half_open_max_probes(int32(at(cfg, 10)))
        .with_half_open_success_threshold(int32(at(cfg, 11)))
        .with_probe_timeout_ms(int(at(cfg, 12)))
        .with_seed(int(at(cfg, 13)));
    config.validate().map_err(fault)?;
    Ok(config)
}

fn restored(cfg: &[f64], data: &[f64]) -> Result<Breaker, Fault> {
    let config = breaker_config(cfg)?;
    let snapshot = decode_snapshot(data).ok_or(("snapshot", "malformed data"))?;
    Breaker::restore(config, snapshot).map_err(restore_fault)
}

// Why a constructor returned `undefined`: `""` when fine, else `"field|expected"` for the first
// bad value. `what`: 0 a breaker configuration (`cfg`), 1 a snapshot (`data`) restored under
// `cfg` (field `snapshot` for the snapshot itself), 2 a retry configuration (`cfg`), 3 a retry
// budget (`cfg` = `[ttl_ms, min_per_sec, retry_percent]`). One function for all four keeps the
// glue small.
#[wasm_bindgen]
pub fn check(what: u32, cfg: &[f64], data: &[f64]) -> String {
    match what {
        0 => report_fault(breaker_config(cfg)),
        1 => report_fault(restored(cfg, data)),
        2 => report_fault(retry_policy(cfg)),
        _ => report_fault(budget(cfg)),
    }
}

// A [`Breaker`] behind numbers. See the module documentation for the encodings.
#[wasm_bindgen]
pub struct WasmBreaker {
    inner: Breaker,
    pending: u32,
}

#[wasm_bindgen]
impl WasmBreaker {
    // A CLOSED breaker, or `undefined` if the configuration is invalid (see `check`).
    pub fn create(cfg: &[f64]) -> Option<WasmBreaker> {
        let inner = Breaker::new(breaker_config(cfg).ok()?).ok()?;
        Some(WasmBreaker { inner, pending: 0 })
    }

    // Rebuilds a breaker from [`snapshot`](Self::snapshot)'s numbers under `cfg`, or
    // `undefined` (see `check`).
    pub fn restore(cfg: &[f64], data: &[f64]) -> Option<WasmBreaker> {
        let inner = restored(cfg, data).ok()?;
        Some(WasmBreaker { inner, pending: 0 })
    }

    // Asks to run one call: a permit handle (≥ 0), or `-(retry_after_ms × 4 + reason)` (≤ -4).
    pub fn acquire(&mut self, now: f64) -> f64 {
        let a = self.inner.acquire(ts(now));
        self.pending = transition_code(a.transition);
        match a.result {
            Ok(p) => encode_permit(&p),
            Err(r) => encode_rejected(r),
        }
    }

    // What `acquire` would answer now, taking nothing: 0 (admitted) or `-(retry_after_ms × 4 +
    // reason)` as `acquire` encodes it.
    pub fn peek(&self, now: f64) -> f64 {
        self.inner
            .peek(ts(now))
            .map_or_else(encode_rejected, |()| 0.0)
    }

    // Reports the outcome of the call admitted at `issued_at` with `handle`. A handle this
    // breaker cannot have issued is ignored. A handle of -1 reports without a permit (the
    // `recordSuccess()` / `recordFailure()` pattern: settles the oldest probe when HALF_OPEN).
    pub fn report(&mut self, now: f64, issued_at: f64, handle: f64, outcome_code: u32) -> u32 {
        if handle == -1.0 {
            return transition_code(self.inner.record(ts(now), outcome(outcome_code)));
        }
        match self.decode_permit(handle, issued_at) {
            Some(p) => transition_code(self.inner.report(ts(now), p, outcome(outcome_code))),
            None => 0,
        }
    }

    // `[state at now, mode, open until (-1: not OPEN or isolated), probes in flight, admitted,
    // rejected, successes, failures, ignored, stale, slow, opened, the transition code of the
    // last acquire (OPEN → HALF_OPEN)]`.
    pub fn info(&self, now: f64) -> Vec<f64> {
        let b = &self.inner;
        let s = b.stats();
        [
            state_num(b.state_at(ts(now))) as f64,
            mode_num(b.mode()) as f64,
            b.open_until().map_or(-1.0, |t| t.0 as f64),
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
        ]
        .to_vec()
    }

    // The manual overrides: 0 isolate (forced OPEN until reset), 1 reset (CLOSED, automatic),
    // 2 disable (admit everything, never change state), 3 enable. Returns a transition code.
    pub fn control(&mut self, now: f64, op: u32) -> u32 {
        let now = ts(now);
        transition_code(match op {
            0 => self.inner.isolate(now),
            1 => self.inner.reset(now),
            _ => {
                self.inner.set_disabled(now, op == 2);
                None
            }
        })
    }

    // The whole state as numbers (see `decode_snapshot`).
    pub fn snapshot(&self) -> Vec<f64> {
        encode_snapshot(&self.inner.snapshot())
    }
}

// A refusal as `acquire` returns it: `-(retry_after_ms × 4 + reason)`, ≤ -4.
fn encode_rejected(r: Rejected) -> f64 {
    let reason = match r.reason {
        RejectReason::Open => 0.0,
        RejectReason::HalfOpenFull => 1.0,
        RejectReason::Isolated => 2.0,
    };
    // Capped at 2^50 ms (35 000 years) so that the sum stays an exact integer.
    -((r.retry_after_ms.min(1 << 50) as f64) * 4.0 + reason)
}

impl WasmBreaker {
    fn decode_permit(&self, handle: f64, issued_at: f64) -> Option<Permit> {
        if !(0.0..MAX_SAFE).contains(&handle) {
            return None;
        }
        let h = handle as u64;
        let kind = match h & KIND_MASK {
            0 => PermitKind::Normal,
            1 => PermitKind::Bypass,
            k => PermitKind::Probe {
                id: u32::try_from(k - 2).ok()?,
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

#[inline]
fn encode_permit(p: &Permit) -> f64 {
    let kind = match p.kind {
        PermitKind::Normal => 0.0,
        PermitKind::Bypass => 1.0,
        PermitKind::Probe { id } => 2.0 + id as f64,
    };
    (p.generation & GEN_MASK) as f64 * (1u64 << KIND_BITS) as f64 + kind
}

fn mode_num(m: Mode) -> u32 {
    match m {
        Mode::Automatic => 0,
        Mode::Isolated => 1,
        Mode::Disabled => 2,
    }
}

// ----- snapshots as numbers -----
//
// [version, state, mode, generation, last_now, opened_at, open_until, failed_probe_rounds,
//  half_open_successes, next_probe_id, rng_hi, rng_lo, 8 × stats, probes n, (id, expires_at) × n,
//  counter tag, counter…] where the counter is
//  0: [failures] · 1: [head, n, times × n] · 2: [head, failures, slow, n, ring × n] ·
//  3: [n, (index, calls, failures, slow) × n].

fn encode_snapshot(s: &Snapshot) -> Vec<f64> {
    let mut v: Vec<f64> = Vec::with_capacity(32);
    let st = &s.stats;
    v.extend_from_slice(&[
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
        v.push(p.id as f64);
        v.push(p.expires_at as f64);
    }
    match &s.counter {
        Counter::Consecutive { failures } => v.extend_from_slice(&[0.0, *failures as f64]),
        Counter::FailureTimes { times, head } => {
            v.extend_from_slice(&[1.0, *head as f64, times.len() as f64]);
            v.extend(times.iter().map(|&t| t as f64));
        }
        Counter::Calls {
            ring,
            head,
            failures,
            slow,
        } => {
            v.extend_from_slice(&[
                2.0,
                *head as f64,
                *failures as f64,
                *slow as f64,
                ring.len() as f64,
            ]);
            v.extend(ring.iter().map(|&b| b as f64));
        }
        Counter::Buckets { buckets } => {
            v.extend_from_slice(&[3.0, buckets.len() as f64]);
            for b in buckets {
                v.extend_from_slice(&[
                    b.index as f64,
                    b.calls as f64,
                    b.failures as f64,
                    b.slow as f64,
                ]);
            }
        }
    }
    v
}

struct Reader<'a>(core::slice::Iter<'a, f64>);

impl Reader<'_> {
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
}

fn decode_snapshot(data: &[f64]) -> Option<Snapshot> {
    let mut r = Reader(data.iter());
    let version = r.u32()?;
    let state = match r.u32()? {
        0 => State::Closed,
        1 => State::Open,
        2 => State::HalfOpen,
        _ => return None,
    };
    let mode = match r.u32()? {
        0 => Mode::Automatic,
        1 => Mode::Isolated,
        2 => Mode::Disabled,
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
    let stats = Stats {
        admitted: r.u64()?,
        rejected: r.u64()?,
        successes: r.u64()?,
        failures: r.u64()?,
        ignored: r.u64()?,
        stale: r.u64()?,
        slow: r.u64()?,
        opened: r.u64()?,
    };
    let n = r.len(2)?;
    let mut probes = Vec::with_capacity(n);
    for _ in 0..n {
        probes.push(ProbeLease {
            id: r.u32()?,
            expires_at: r.u64()?,
        });
    }
    let counter = match r.u32()? {
        0 => Counter::Consecutive { failures: r.u32()? },
        1 => {
            let head = r.u32()?;
            let n = r.len(1)?;
            let mut times = Vec::with_capacity(n);
            for _ in 0..n {
                times.push(r.u64()?);
            }
            Counter::FailureTimes { times, head }
        }
        2 => {
            let head = r.u32()?;
            let failures = r.u32()?;
            let slow = r.u32()?;
            let n = r.len(1)?;
            let mut ring = Vec::with_capacity(n);
            for _ in 0..n {
                ring.push(r.u8()?);
            }
            Counter::Calls {
                ring,
                head,
                failures,
                slow,
            }
        }
        3 => {
            let n = r.len(4)?;
            let mut buckets = Vec::with_capacity(n);
            for _ in 0..n {
                buckets.push(Bucket {
                    index: r.u64()?,
                    calls: r.u32()?,
                    failures: r.u32()?,
                    slow: r.u32()?,
                });
            }
            Counter::Buckets { buckets }
        }
        _ => return None,
    };
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
        stats,
    })
}

// ----- retry -----

// A [`RetryPolicy`] and a [`Classifier`] behind numbers.
#[wasm_bindgen]
pub struct WasmRetry {
    policy: RetryPolicy,
    classifier: Classifier,
}

fn retry_policy(cfg: &[f64]) -> Result<RetryPolicy, Fault> {
    let deadline = at(cfg, 4);
    let jitter = match at(cfg, 5) as u32 {
        0 => Jitter::None,
        1 => Jitter::Full,
        2 => Jitter::Equal,
        3 => Jitter::Decorrelated,
        _ => Jitter::Proportional(at(cfg, 6)),
    };
    let policy = RetryPolicy {
        max_attempts: int32(at(cfg, 0)),
        base_delay_ms: int(at(cfg, 1)),
        factor: at(cfg, 2),
        max_delay_ms: int(at(cfg, 3)),
        deadline_ms: (deadline >= 0.0).then(|| int(deadline)),
        jitter,
        max_retry_after_ms: int(at(cfg, 7)),
    };
    policy.validate().map_err(fault)?;
    Ok(policy)
}

fn budget(cfg: &[f64]) -> Result<RetryBudget, Fault> {
    RetryBudget::new(int(at(cfg, 0)), int32(at(cfg, 1)), at(cfg, 2)).map_err(fault)
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

#[wasm_bindgen]
impl WasmRetry {
    // `cfg`: `[max attempts, base delay, factor, max delay, deadline (-1: none), jitter kind
    // (0 none, 1 full, 2 equal, 3 decorrelated, 4 proportional), proportion, max Retry-After,
    // quota-exhausted counts as failure (0/1)]`. `retryable` replaces the retryable statuses
    // when `use_retryable`. `undefined` if invalid (see `check`).
    pub fn create(cfg: &[f64], use_retryable: bool, retryable: &[f64]) -> Option<WasmRetry> {
        let policy = retry_policy(cfg).ok()?;
        let mut classifier = Classifier::new();
        if use_retryable {
            classifier = classifier.with_retryable(status_set(retryable));
        }
        classifier.quota_exhausted_is_failure = at(cfg, 8) != 0.0;
        Some(WasmRetry { policy, classifier })
    }

    // Decides what follows a failed attempt: the delay (≥ 0) before the next attempt, or a
    // negative give-up code (-1 not retryable, -2 attempts exhausted, -3 deadline, -4 the
    // server's Retry-After is too long). `retry_after_ms` < 0 means none; `unit` is the random
    // draw in [0, 1) for the jitter.
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &self,
        now: f64,
        started_at: f64,
        attempts: u32,
        previous_delay_ms: f64,
        retryable: bool,
        retry_after_ms: f64,
        unit: f64,
    ) -> f64 {
        let mut state = RetryState {
            attempts,
            started_at: ts(started_at),
            previous_delay_ms: int(previous_delay_ms.max(0.0)),
        };
        let failure = AttemptFailure {
            retryable,
            retry_after_ms: (retry_after_ms >= 0.0).then(|| int(retry_after_ms)),
        };
        let mut rng = UnitFn(|| unit);
        match self
            .policy
            .decide(&mut state, ts(now), failure, &mut rng, None)
        {
            RetryDecision::Retry { delay_ms, .. } => delay_ms as f64,
            RetryDecision::GiveUp(GiveUpReason::NotRetryable) => -1.0,
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted) => -2.0,
            RetryDecision::GiveUp(GiveUpReason::DeadlineExceeded) => -3.0,
            RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong { .. }) => -4.0,
            RetryDecision::GiveUp(GiveUpReason::BudgetExhausted) => -5.0,
        }
    }

    // Classifies an attempt. `status` 0 means no response; `code` is the provider's error code
    // as a number (0 none, 1 a quota-exhausted code such as `insufficient_quota`, 2
    // `overloaded_error`); `flags`: 1 network error, 2 timeout, 4 cancelled. Returns
    // `class | retryable << 4 | outcome << 5` (outcome: 0 success, 1 failure, 2 ignored).
    pub fn classify(&self, status: u16, code: u32, flags: u32) -> u32 {
        let signal = Signal {
            status: (status != 0).then_some(status),
            error_code: match code {
                1 => Some("insufficient_quota"),
                2 => Some("overloaded_error"),
                _ => None,
            },
            network_error: flags & 1 != 0,
            timeout: flags & 2 != 0,
            cancelled: flags & 4 != 0,
        };
        let v = self.classifier.classify(&signal);
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
        };
        let outcome = match v.outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignored => 2,
        };
        class | (v.retryable as u32) << 4 | outcome << 5
    }
}

// A [`RetryBudget`] shared by many calls.
#[wasm_bindgen]
pub struct WasmBudget {
    inner: RetryBudget,
}

#[wasm_bindgen]
impl WasmBudget {
    // `cfg` = `[ttl_ms, min_per_sec, retry_percent]` (see [`RetryBudget::new`]); `undefined`
    // if invalid (see `check`).
    pub fn create(cfg: &[f64]) -> Option<WasmBudget> {
        Some(WasmBudget {
            inner: budget(cfg).ok()?,
        })
    }

    // 0: records a first attempt (returns 0); 1: takes one retry if the budget has one (1 or
    // 0); 2: the retries available (may be fractional).
    pub fn op(&mut self, now: f64, op: u32) -> f64 {
        let now = ts(now);
        match op {
            0 => {
                self.inner.deposit(now);
                0.0
            }
            1 => self.inner.try_withdraw(now) as u32 as f64,
            _ => self.inner.available(now),
        }
    }
}
