//! Error classification: which outcomes are worth a retry, and which say the upstream is unwell.
//!
//! Defaults follow how LLM APIs fail. 408, 429, 500, 502, 503, 504 and 529 (Anthropic's
//! "overloaded"), network errors and timeouts are transient: retried, and counted as upstream
//! failures by the breaker. 400, 401, 403, 404, 422 and the other 4xx are the caller's fault:
//! never retried and, by default, not counted (a bad prompt must not open the circuit). A 429
//! that says the quota is spent (`insufficient_quota`) is not retried (waiting will not refill
//! it) but still counts as a failure, so the breaker stops the calls it would waste. A prompt a
//! content policy refused is declined: neither retried nor counted. An aborted call is neither.
//! Provider codes are read by [`Code::of`](super::Code::of) (src/retry/ending.rs).

use super::ending::Code;
use super::retry_after::{parse_retry_after, parse_retry_after_ms};
use super::AttemptFailure;
use crate::breaker::Outcome;
use crate::clock::Timestamp;

/// A set of HTTP status codes in `0..640`, as a bitset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StatusSet([u64; 10]);

impl StatusSet {
    /// The largest status code a set can hold.
    pub const MAX: u16 = 639;

    /// The empty set.
    pub const fn empty() -> Self {
        StatusSet([0; 10])
    }

    /// The set of `codes`; codes above [`StatusSet::MAX`] are left out.
    pub const fn of(codes: &[u16]) -> Self {
        let mut set = StatusSet::empty();
        let mut i = 0;
        while i < codes.len() {
            set = set.with(codes[i]);
            i += 1;
        }
        set
    }

    /// The set with `code` added (unchanged if `code` > [`StatusSet::MAX`]).
    pub const fn with(mut self, code: u16) -> Self {
        if code <= Self::MAX {
            self.0[(code / 64) as usize] |= 1 << (code % 64);
        }
        self
    }

    /// The set with `code` removed.
    pub const fn without(mut self, code: u16) -> Self {
        if code <= Self::MAX {
            self.0[(code / 64) as usize] &= !(1 << (code % 64));
        }
        self
    }

    /// Whether `code` is in the set.
    #[inline]
    pub const fn contains(&self, code: u16) -> bool {
        code <= Self::MAX && self.0[(code / 64) as usize] & (1 << (code % 64)) != 0
    }
}

/// What a host observed about one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Signal<'a> {
    /// The HTTP status, if a response arrived.
    pub status: Option<u16>,
    /// The provider's error code or type (`"insufficient_quota"`, `"overloaded_error"`…).
    pub error_code: Option<&'a str>,
    /// The connection failed (DNS, reset, refused, cut stream).
    pub network_error: bool,
    /// The attempt ran out of time.
    pub timeout: bool,
    /// The caller cancelled (an `AbortSignal`): not the upstream's fault.
    pub cancelled: bool,
}

/// The kind of outcome, as a classifier sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// 1xx–3xx.
    Success,
    /// A transient upstream failure (default: 408, 500, 502, 503, 504).
    Transient,
    /// 429.
    RateLimited,
    /// 529, or an `overloaded_error`.
    Overloaded,
    /// A 4xx whose code says the quota, credit or spend limit is exhausted.
    QuotaExhausted,
    /// A 4xx whose code says a content policy refused the prompt: not the upstream's failure,
    /// and retrying will not change it.
    Declined,
    /// A 4xx other than those above.
    ClientError,
    /// A 5xx not in the retryable set (501, 505…).
    ServerError,
    /// The connection failed.
    Network,
    /// The attempt timed out.
    Timeout,
    /// The caller cancelled.
    Cancelled,
}

/// The classifier's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What kind of outcome it was.
    pub class: Class,
    /// Worth another attempt.
    pub retryable: bool,
    /// How the breaker should count it.
    pub outcome: Outcome,
}

/// Maps statuses and provider errors to verdicts. Configurable per status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Classifier {
    /// Statuses retried. Default: 408, 409, 429, 500, 502, 503, 504, 529 (409: both official
    /// SDKs and the AI SDK retry a conflict, which providers send for a lock held briefly).
    pub retryable: StatusSet,
    /// Statuses that count as upstream failures for the breaker. Default: the retryable ones and
    /// every other 5xx.
    pub failures: StatusSet,
    /// Whether a quota-exhausted 429 counts as a failure for the breaker. Default: true.
    pub quota_exhausted_is_failure: bool,
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new()
    }
}

/// The statuses retried by default.
pub const DEFAULT_RETRYABLE: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

const fn default_failures() -> StatusSet {
    let mut set = StatusSet::of(&DEFAULT_RETRYABLE);
    let mut code = 500;
    while code < 600 {
        set = set.with(code);
        code += 1;
    }
    set
}

impl Classifier {
    /// The defaults listed on each field.
    pub const fn new() -> Self {
        Classifier {
            retryable: StatusSet::of(&DEFAULT_RETRYABLE),
            failures: default_failures(),
            quota_exhausted_is_failure: true,
        }
    }

    /// Replaces the retryable statuses (the failure set gains them too).
    pub const fn with_retryable(mut self, retryable: StatusSet) -> Self {
        self.retryable = retryable;
        let mut i = 0;
        while i < 10 {
            self.failures.0[i] |= retryable.0[i];
            i += 1;
        }
        self
    }

    /// Replaces the statuses the breaker counts as failures.
    pub const fn with_failures(mut self, failures: StatusSet) -> Self {
        self.failures = failures;
        self
    }

    /// Classifies one attempt.
    pub fn classify(&self, signal: &Signal<'_>) -> Verdict {
        let code = signal
            .error_code
            .and_then(|c| Code::of(c.as_bytes()).or_else(|| Code::in_text(c.as_bytes())));
        self.classify_code(signal, code)
    }

    /// Classifies one attempt whose provider code was read already (`signal.error_code` is not
    /// looked at).
    pub fn classify_code(&self, signal: &Signal<'_>, code: Option<Code>) -> Verdict {
        if signal.cancelled {
            return verdict(Class::Cancelled, false, Outcome::Ignored);
        }
        if let Some(status) = signal.status {
            return self.classify_status_code(status, code);
        }
        if signal.timeout {
            return verdict(Class::Timeout, true, Outcome::Failure);
        }
        if signal.network_error {
            return verdict(Class::Network, true, Outcome::Failure);
        }
        match code {
            Some(c) => self.classify_status_code(c.status(), Some(c)),
            // An error with nothing to go on is most often the network's.
            None => verdict(Class::Network, true, Outcome::Failure),
        }
    }

    /// Classifies an HTTP status, with the provider's error code if there is one.
    pub fn classify_status(&self, status: u16, error_code: Option<&str>) -> Verdict {
        let code =
            error_code.and_then(|c| Code::of(c.as_bytes()).or_else(|| Code::in_text(c.as_bytes())));
        self.classify_status_code(status, code)
    }

    /// Classifies an HTTP response as the official SDKs read one: the status with the provider's
    /// `code` (from [`Code::in_body`], say), then its headers, looked up by lower-case name with
    /// `header`. `retry-after-ms` (OpenAI, Anthropic) or else `retry-after` (seconds or an
    /// HTTP-date, from `now`) gives the server's wait; `x-should-retry: true|false` overrides
    /// whether it is worth retrying, as those SDKs let it. How the breaker counts it follows the
    /// status and code only.
    ///
    /// ```
    /// use breakwater::{Class, Classifier, Outcome, Timestamp};
    /// let headers = [("retry-after", "20"), ("x-should-retry", "true")];
    /// let lookup = |name: &str| headers.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    /// let r = Classifier::new().classify_response(529, None, Timestamp(0), lookup);
    /// assert_eq!(r.verdict.class, Class::Overloaded);
    /// assert_eq!(r.verdict.outcome, Outcome::Failure);
    /// assert_eq!(r.failure().retry_after_ms, Some(20_000));
    /// ```
    pub fn classify_response<'h>(
        &self,
        status: u16,
        code: Option<Code>,
        now: Timestamp,
        header: impl Fn(&str) -> Option<&'h str>,
    ) -> ResponseVerdict {
        let mut verdict = self.classify_status_code(status, code);
        let retry_after_ms = header("retry-after-ms")
            .and_then(parse_retry_after_ms)
            .or_else(|| header("retry-after").and_then(|v| parse_retry_after(v, now)));
        if status >= 400 {
            match header("x-should-retry").map(str::trim) {
                Some(v) if v.eq_ignore_ascii_case("true") => verdict.retryable = true,
                Some(v) if v.eq_ignore_ascii_case("false") => verdict.retryable = false,
                _ => {}
            }
        }
        ResponseVerdict {
            verdict,
            retry_after_ms,
        }
    }

    fn classify_status_code(&self, status: u16, code: Option<Code>) -> Verdict {
        if status < 400 {
            return verdict(Class::Success, false, Outcome::Success);
        }
        if (400..500).contains(&status) {
            match code {
                Some(Code::QuotaExhausted) => return self.quota_exhausted(),
                Some(Code::Declined) => return verdict(Class::Declined, false, Outcome::Ignored),
                _ => {}
            }
        }
        let class = match (status, code) {
            (429, _) => Class::RateLimited,
            (529, _) | (500..=599, Some(Code::Overloaded)) => Class::Overloaded,
            (408 | 500 | 502 | 503 | 504, _) => Class::Transient,
            (400..=499, _) => Class::ClientError,
            _ => Class::ServerError,
        };
        let outcome = if self.failures.contains(status) {
            Outcome::Failure
        } else {
            Outcome::Ignored
        };
        let class = match (class, self.retryable.contains(status)) {
            (Class::ClientError | Class::ServerError, true) => Class::Transient,
            (c, _) => c,
        };
        verdict(class, self.retryable.contains(status), outcome)
    }

    fn quota_exhausted(&self) -> Verdict {
        let outcome = if self.quota_exhausted_is_failure {
            Outcome::Failure
        } else {
            Outcome::Ignored
        };
        verdict(Class::QuotaExhausted, false, outcome)
    }
}

const fn verdict(class: Class, retryable: bool, outcome: Outcome) -> Verdict {
    Verdict {
        class,
        retryable,
        outcome,
    }
}

/// What [`Classifier::classify_response`] read from a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseVerdict {
    /// The status and code's verdict, `retryable` as `x-should-retry` had it.
    pub verdict: Verdict,
    /// The server's wait, in ms from now, if it sent one.
    pub retry_after_ms: Option<u64>,
}

impl ResponseVerdict {
    /// Whether the response is a failure for the retry policy: a status of 400 or more. (A
    /// response that failed while it streamed is the caller's to judge.)
    pub fn is_error(&self) -> bool {
        self.verdict.class != Class::Success
    }

    /// The response as the retry policy takes it.
    pub fn failure(&self) -> AttemptFailure {
        AttemptFailure {
            retryable: self.verdict.retryable,
            retry_after_ms: self.retry_after_ms,
        }
    }
}
