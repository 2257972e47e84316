//! The retry policy: when to try again, decided; the host does the waiting.
//!
//! A [`RetryPolicy`] is configuration. A [`RetryState`] follows one logical call through its
//! attempts. After each failed attempt the host asks [`RetryPolicy::decide`], which answers
//! [`RetryDecision::Retry`] with a delay, or [`RetryDecision::GiveUp`] with the reason. The delay
//! grows exponentially from `base_delay_ms` by `factor`, capped at `max_delay_ms`, spread by a
//! [`Jitter`]; a server's `Retry-After` is honoured (never retrying sooner) up to
//! `max_retry_after_ms`, beyond which waiting is pointless and the policy gives up at once.
//! A [`RetryBudget`] caps retries across all calls, so that a fleet in a 429 storm does not
//! multiply the load it is already failing under.

mod budget;
mod classify;
mod ending;
mod retry_after;

pub use budget::{RetryBudget, MAX_BUDGET_TTL_MS, MAX_RETRY_PERCENT, MIN_BUDGET_TTL_MS};

/// The most attempts a [`RetryPolicy`] makes (`max_attempts`), the first included.
pub const MAX_ATTEMPTS: u32 = 10_000;
pub use classify::{Class, Classifier, ResponseVerdict, Signal, StatusSet, Verdict};
pub use ending::{Code, Ending};
pub use retry_after::{parse_http_date, parse_retry_after, parse_retry_after_ms};

use core::fmt;

use crate::breaker::MAX_DURATION_MS;
use crate::clock::Timestamp;
use crate::error::ConfigError;
use crate::rng::Random;

/// How the delay between attempts is randomised. In configuration files: `"none"`, `"full"`,
/// `"equal"`, `"decorrelated"` or `{ proportional = 0.3 }`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Jitter {
    /// Exactly the exponential delay.
    None,
    /// Uniform in `[0, d]` ("full jitter"): the best spread, sometimes a very short wait.
    Full,
    /// Uniform in `[d/2, d]` ("equal jitter").
    Equal,
    /// Uniform in `[base, 3 × previous delay]`, capped ("decorrelated jitter"); ignores `factor`.
    Decorrelated,
    /// Uniform in `d × (1 ± p)`, capped: `Proportional(0.3)` is ±30 %. `p` in `[0, 1]`.
    Proportional(f64),
}

/// Retry configuration. Build with the `with_*` methods; `validate` names a bad field. In
/// configuration files every field is optional (the defaults below) and unknown fields are
/// refused.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct RetryPolicy {
    /// Attempts in all, the first one included, in 1..=[`MAX_ATTEMPTS`]. Default: 4.
    pub max_attempts: u32,
    /// Delay before the first retry (before jitter). Default: 1 000 ms.
    pub base_delay_ms: u64,
    /// Growth per retry, at least 1, finite. Default: 2.
    pub factor: f64,
    /// No delay exceeds this (Retry-After aside). At least `base_delay_ms`. Default: 16 000 ms.
    pub max_delay_ms: u64,
    /// Give up rather than start a retry that would begin more than this long after the first
    /// attempt. `None`: no deadline. Default: `None`.
    pub deadline_ms: Option<u64>,
    /// The jitter. Default: [`Jitter::Full`].
    pub jitter: Jitter,
    /// Honour a server's Retry-After up to this long; a longer one ends the retries at once.
    /// Default: 60 000 ms.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new()
    }
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Wait `delay_ms`, then make attempt number `attempt` (2 for the first retry).
    Retry {
        /// How long to wait.
        delay_ms: u64,
        /// The number of the attempt to make.
        attempt: u32,
    },
    /// Stop and surface the last error.
    GiveUp(GiveUpReason),
}

/// Why the policy stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUpReason {
    /// The error is not worth retrying (a 400, an exhausted quota…).
    NotRetryable,
    /// `max_attempts` attempts were made.
    AttemptsExhausted,
    /// The next attempt would start after the deadline.
    DeadlineExceeded,
    /// The server asked for a longer wait than `max_retry_after_ms`.
    RetryAfterTooLong {
        /// What the server asked for.
        retry_after_ms: u64,
    },
    /// The retry budget is spent.
    BudgetExhausted,
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GiveUpReason::NotRetryable => f.write_str("the error is not retryable"),
            GiveUpReason::AttemptsExhausted => f.write_str("no attempts left"),
            GiveUpReason::DeadlineExceeded => f.write_str("the deadline would pass"),
            GiveUpReason::RetryAfterTooLong { retry_after_ms } => {
                write!(
                    f,
                    "the server asked to wait {retry_after_ms} ms, longer than allowed"
                )
            }
            GiveUpReason::BudgetExhausted => f.write_str("the retry budget is spent"),
        }
    }
}

/// One logical call's progress through its attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryState {
    /// Attempts made so far.
    pub attempts: u32,
    /// When the first attempt started.
    pub started_at: Timestamp,
    /// The previous delay (for decorrelated jitter); 0 before the first retry.
    pub previous_delay_ms: u64,
}

/// What the host learned from a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptFailure {
    /// Whether the error is worth retrying (see [`Classifier`]).
    pub retryable: bool,
    /// The server's Retry-After, in milliseconds from now, if it sent one.
    pub retry_after_ms: Option<u64>,
}

impl RetryPolicy {
    /// The defaults listed on each field.
    pub const fn new() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay_ms: 1_000,
            factor: 2.0,
            max_delay_ms: 16_000,
            deadline_ms: None,
            jitter: Jitter::Full,
            max_retry_after_ms: 60_000,
        }
    }
    /// Sets [`max_attempts`](Self::max_attempts).
    pub const fn with_max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }
    /// Sets [`base_delay_ms`](Self::base_delay_ms).
    pub const fn with_base_delay_ms(mut self, ms: u64) -> Self {
        self.base_delay_ms = ms;
        self
    }
    /// Sets [`factor`](Self::factor).
    pub const fn with_factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }
    /// Sets [`max_delay_ms`](Self::max_delay_ms).
    pub const fn with_max_delay_ms(mut self, ms: u64) -> Self {
        self.max_delay_ms = ms;
        self
    }
    /// Sets [`deadline_ms`](Self::deadline_ms).
    pub const fn with_deadline_ms(mut self, ms: Option<u64>) -> Self {
        self.deadline_ms = ms;
        self
    }
    /// Sets [`jitter`](Self::jitter).
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }
    /// Sets [`max_retry_after_ms`](Self::max_retry_after_ms).
    pub const fn with_max_retry_after_ms(mut self, ms: u64) -> Self {
        self.max_retry_after_ms = ms;
        self
    }

    /// Checks every field; the first one out of range is named in the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_attempts == 0 || self.max_attempts > MAX_ATTEMPTS {
            return Err(ConfigError::new(
                "max_attempts",
                self.max_attempts as f64,
                "an integer in 1..=10000",
            ));
        }
        if self.base_delay_ms > MAX_DURATION_MS {
            return Err(ConfigError::new(
                "base_delay_ms",
                self.base_delay_ms as f64,
                "at most 2^52 milliseconds",
            ));
        }
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return Err(ConfigError::new(
                "factor",
                self.factor,
                "a finite number >= 1",
            ));
        }
        if self.max_delay_ms < self.base_delay_ms || self.max_delay_ms > MAX_DURATION_MS {
            return Err(ConfigError::new(
                "max_delay_ms",
                self.max_delay_ms as f64,
                "at least base_delay_ms and at most 2^52 milliseconds",
            ));
        }
        if let Some(d) = self.deadline_ms {
            if d > MAX_DURATION_MS {
                return Err(ConfigError::new(
                    "deadline_ms",
                    d as f64,
                    "at most 2^52 milliseconds",
                ));
            }
        }
        if let Jitter::Proportional(p) = self.jitter {
            if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(ConfigError::new("jitter", p, "a proportion in [0, 1]"));
            }
        }
        if self.max_retry_after_ms > MAX_DURATION_MS {
            return Err(ConfigError::new(
                "max_retry_after_ms",
                self.max_retry_after_ms as f64,
                "at most 2^52 milliseconds",
            ));
        }
        Ok(())
    }

    /// Starts a logical call whose first attempt begins at `now`.
    pub fn start(&self, now: Timestamp) -> RetryState {
        RetryState {
            attempts: 1,
            started_at: now,
            previous_delay_ms: 0,
        }
    }

    /// Decides what follows a failed attempt, and on `Retry` advances `state` to the next
    /// attempt. A `budget`, if given, is charged one retry when (and only when) the answer is
    /// `Retry`.
    pub fn decide<R: Random + ?Sized>(
        &self,
        state: &mut RetryState,
        now: Timestamp,
        failure: AttemptFailure,
        rng: &mut R,
        budget: Option<&mut RetryBudget>,
    ) -> RetryDecision {
        if !failure.retryable {
            return RetryDecision::GiveUp(GiveUpReason::NotRetryable);
        }
        if state.attempts >= self.max_attempts {
            return RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted);
        }
        let mut delay = self.backoff(state.attempts, state.previous_delay_ms, rng);
        if let Some(server) = failure.retry_after_ms {
            if server > self.max_retry_after_ms {
                return RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong {
                    retry_after_ms: server,
                });
            }
            delay = delay.max(server);
        }
        if let Some(deadline) = self.deadline_ms {
            let elapsed = now.saturating_since(state.started_at);
            if elapsed.saturating_add(delay) > deadline {
                return RetryDecision::GiveUp(GiveUpReason::DeadlineExceeded);
            }
        }
        if let Some(budget) = budget {
            if !budget.try_withdraw(now) {
                return RetryDecision::GiveUp(GiveUpReason::BudgetExhausted);
            }
        }
        state.attempts += 1;
        state.previous_delay_ms = delay;
        RetryDecision::Retry {
            delay_ms: delay,
            attempt: state.attempts,
        }
    }

    /// The delay before retry number `retry` (1 for the first retry), before Retry-After, for a
    /// previous delay of `previous_ms`. Always finite, in `0..=max_delay_ms`.
    pub fn backoff<R: Random + ?Sized>(&self, retry: u32, previous_ms: u64, rng: &mut R) -> u64 {
        let base = self.base_delay_ms as f64;
        let cap = self.max_delay_ms as f64;
        let exp = if base == 0.0 {
            0.0
        } else {
            (base * pow(self.factor, retry.saturating_sub(1))).min(cap)
        };
        let d = match self.jitter {
            Jitter::None => exp,
            Jitter::Full => exp * rng.next_unit(),
            Jitter::Equal => exp / 2.0 + exp / 2.0 * rng.next_unit(),
            Jitter::Decorrelated => {
                let hi = (previous_ms as f64 * 3.0).max(base);
                (base + (hi - base) * rng.next_unit()).min(cap)
            }
            Jitter::Proportional(p) => (exp * (1.0 + p * (2.0 * rng.next_unit() - 1.0))).min(cap),
        };
        // `d` is finite and within [0, cap]; `as` would saturate anyway.
        (d.max(0.0) as u64).min(self.max_delay_ms)
    }
}

/// `x^n` by squaring; overflows to infinity rather than NaN for `x >= 1`.
fn pow(mut x: f64, mut n: u32) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= x;
        }
        x *= x;
        n >>= 1;
    }
    acc
}
