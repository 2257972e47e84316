//! Breaker configuration: plain data, `const fn` builders, and a validator that names the field.

use crate::error::ConfigError;

/// The largest ring a count-based window or a failure-timestamp window may allocate.
pub const MAX_WINDOW_CALLS: u32 = 100_000;
/// The largest number of half-open probes that may be in flight at once.
pub const MAX_HALF_OPEN_PROBES: u32 = 1_024;
/// The most successful probes a half-open breaker may need to close. A breaker needing more
/// would stay HALF_OPEN long after its upstream healed (with one probe at a time, as many
/// round trips to the upstream as the threshold); 100 keeps recovery within 100 probe calls.
pub const MAX_HALF_OPEN_SUCCESSES: u32 = 100;
/// The largest count a configuration takes where no memory is sized by it (a consecutive-failures
/// threshold, a rate rule's minimum of calls, the throttle's minimum of requests): `u32::MAX`.
pub const MAX_COUNT: u32 = u32::MAX;
/// How many buckets a time-based rate window is divided into.
pub const TIME_WINDOW_BUCKETS: usize = 10;

/// How many buckets the adaptive throttle's window is divided into.
pub const THROTTLE_BUCKETS: usize = 12;

/// Adaptive throttling while CLOSED (see [`Breaker`](crate::Breaker)'s module docs and
/// `src/breaker/throttle.rs`): each call is refused locally with probability
/// `max(0, (requests − multiplier × accepts) / (requests + 1))` over the last `window_ms`, once
/// the window holds `minimum_requests` requests, and never more than
/// `max_rejection_probability`. In configuration files:
/// `throttle = { multiplier = 2, window_ms = 120000, minimum_requests = 20,
/// max_rejection_probability = 0.8 }` (every field optional, unknown fields refused).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Throttle {
    /// `K`: how many requests per accepted one the upstream is allowed before calls are shed.
    /// Lower sheds earlier. At least 1, finite (below 1, a healthy upstream would be throttled).
    /// Default 2.
    pub multiplier: f64,
    /// The window's span, counted in [`THROTTLE_BUCKETS`] buckets of `max(window_ms / 12, 1)` ms.
    /// Default 120 000 (two minutes).
    pub window_ms: u64,
    /// Requests the window must hold before anything is shed. At least 1. Default 20.
    pub minimum_requests: u32,
    /// The most a call may be refused with, in `(0, 1]`. Default 0.8, as Envoy's admission
    /// control. Refused calls count as requests, so with no cap an upstream that failed every
    /// call drives `p` so close to 1 that almost nothing is let through to see it recover, and
    /// the throttle sheds a healthy upstream for as long as traffic keeps coming. With the cap,
    /// a fifth of the calls still reach it, and their successes bring `p` down within a window.
    pub max_rejection_probability: f64,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new()
    }
}

impl Throttle {
    /// The defaults listed on each field: `K = 2` over two minutes, from 20 requests.
    pub const fn new() -> Self {
        Throttle {
            multiplier: 2.0,
            window_ms: 120_000,
            minimum_requests: 20,
            max_rejection_probability: 0.8,
        }
    }

    /// The width of one bucket of the window, in milliseconds.
    pub const fn bucket_ms(&self) -> u64 {
        let ms = self.window_ms / THROTTLE_BUCKETS as u64;
        if ms == 0 {
            1
        } else {
            ms
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return Err(ConfigError::new(
                "throttle.multiplier",
                self.multiplier,
                "a finite number >= 1",
            ));
        }
        validate_span("throttle.window_ms", self.window_ms)?;
        validate_count(
            "throttle.minimum_requests",
            self.minimum_requests,
            MAX_COUNT,
        )?;
        let max = self.max_rejection_probability;
        if !(max.is_finite() && max > 0.0 && max <= 1.0) {
            return Err(ConfigError::new(
                "throttle.max_rejection_probability",
                max,
                "a probability in (0, 1]",
            ));
        }
        Ok(())
    }
}

/// The window a rate rule looks at: `{ calls = 100 }` or `{ millis = 60000 }` in configuration
/// files.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Window {
    /// The last `n` recorded calls.
    Calls(u32),
    /// The calls of about the last `ms` milliseconds, counted in [`TIME_WINDOW_BUCKETS`] buckets
    /// of `max(ms / 10, 1)` ms each: a call leaves the window when its bucket is ten buckets old
    /// (for a multiple of 10 ms, between 0.9 × and 1 × `ms` after it was recorded).
    Millis(u64),
}

/// When a CLOSED breaker opens.
///
/// In configuration files (the Worker's `BREAKERS`, simulator scenarios) a rule is tagged by
/// `kind`, the variant's name in `snake_case`, next to its fields:
/// `{ kind = "consecutive_failures", threshold = 5 }`,
/// `{ kind = "failures_in_window", threshold = 5, window_ms = 60000 }`,
/// `{ kind = "failure_rate", threshold_percent = 50, minimum_calls = 20, window = { millis = 60000 } }`,
/// `{ kind = "slow_call_rate", threshold_percent = 50, slow_call_ms = 5000, minimum_calls = 20,
/// window = { calls = 100 } }`. Unknown fields are refused.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)
)]
pub enum TripRule {
    /// `threshold` failures in a row; any success resets the count.
    ConsecutiveFailures {
        /// Failures in a row that open the breaker.
        threshold: u32,
    },
    /// `threshold` failures within any `window_ms` span (successes do not reset it). The span is
    /// exact: the breaker remembers the times of the last `threshold` failures.
    FailuresInWindow {
        /// Failures that open the breaker.
        threshold: u32,
        /// The span they must fall within, in milliseconds.
        window_ms: u64,
    },
    /// The share of failed calls in the window reaches `threshold_percent`, once the window holds
    /// at least `minimum_calls` calls (for a `Calls(n)` window, at least `min(minimum_calls, n)`).
    FailureRate {
        /// Percentage of failures, in `(0, 100]`, that opens the breaker.
        threshold_percent: f64,
        /// Calls the window must hold before the rate is trusted.
        minimum_calls: u32,
        /// Which calls count.
        window: Window,
    },
    /// The share of slow calls (successful or not) in the window reaches `threshold_percent`. A
    /// call is slow when it reports more than `slow_call_ms` after it was admitted.
    SlowCallRate {
        /// Percentage of slow calls, in `(0, 100]`, that opens the breaker.
        threshold_percent: f64,
        /// A call taking longer than this many milliseconds is slow.
        slow_call_ms: u64,
        /// Calls the window must hold before the rate is trusted.
        minimum_calls: u32,
        /// Which calls count.
        window: Window,
    },
}

impl TripRule {
    /// What a CLOSED, automatic breaker under this rule lets its host skip: every rule admits
    /// a call with nothing but a counter ([`FastPath::ADMIT`]); a rule that counts slow calls
    /// ([`slow_call_ms`](Self::slow_call_ms)) needs the time each call was admitted
    /// ([`FastPath::TIMED`]). Which successes it may count alone is the breaker's answer of the
    /// moment ([`Breaker::quiet`](super::Breaker::quiet)).
    pub const fn fast_path(&self) -> FastPath {
        match self.slow_call_ms() {
            Some(_) => FastPath::ADMIT.with(FastPath::TIMED),
            None => FastPath::ADMIT,
        }
    }

    /// The slow-call threshold, if this rule counts slow calls.
    pub const fn slow_call_ms(&self) -> Option<u64> {
        match *self {
            TripRule::SlowCallRate { slow_call_ms, .. } => Some(slow_call_ms),
            _ => None,
        }
    }
}

/// What a host may skip while a breaker is CLOSED and in automatic mode, as bits: the facts a
/// host's cache of the CLOSED state rests on ([`TripRule::fast_path`],
/// [`BreakerConfig::fast_path`]). A host that skips a call to the core counts what it skipped
/// itself and hands it over ([`Breaker::record_quiet`](super::Breaker::record_quiet)) before
/// anything else reaches the core, and drops its cache on every transition, override and
/// restore. The successes it may count alone are [`Breaker::quiet`](super::Breaker::quiet)'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FastPath(u32);

impl FastPath {
    /// Nothing may be skipped.
    pub const NONE: FastPath = FastPath(0);
    /// Admitting a call changes nothing but the admitted count: a permit of the current
    /// generation may be reused for every call until a transition.
    pub const ADMIT: FastPath = FastPath(1);
    /// A report needs the time its call was admitted (not only the time it ended).
    pub const TIMED: FastPath = FastPath(2);

    /// These bits and `other`'s.
    pub const fn with(self, other: FastPath) -> FastPath {
        FastPath(self.0 | other.0)
    }
    /// These bits without `other`'s.
    pub const fn without(self, other: FastPath) -> FastPath {
        FastPath(self.0 & !other.0)
    }
    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: FastPath) -> bool {
        self.0 & other.0 == other.0
    }
    /// The bits as a number (the wasm boundary's `fast` codes).
    pub const fn bits(self) -> u32 {
        self.0
    }
}

/// Everything a [`Breaker`](crate::Breaker) needs to know. Build it with the `with_*` methods;
/// [`BreakerConfig::validate`] (called by `Breaker::new`) rejects values out of range. In
/// configuration files every field is optional (the defaults below) and unknown fields are
/// refused.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct BreakerConfig {
    /// When to open. Default: 5 consecutive failures.
    pub trip: TripRule,
    /// How long the breaker stays OPEN before it lets a probe through. Default: 30 000 ms.
    pub open_duration_ms: u64,
    /// Random spread of each open period, as a fraction: the period is drawn uniformly from
    /// `open_duration × (1 ± open_jitter)`, so instances that tripped together do not all probe
    /// at the same moment. In `[0, 1)`. Default: 0.
    pub open_jitter: f64,
    /// Each half-open round that fails multiplies the next open period by this factor (before
    /// jitter), up to `max_open_duration_ms`. At least 1, finite; 1 means a fixed period.
    /// Default: 1.
    pub open_backoff_factor: f64,
    /// The longest open period the backoff may reach. At least `open_duration_ms`.
    /// Default: 300 000 ms.
    pub max_open_duration_ms: u64,
    /// Probes allowed in flight at once while HALF_OPEN, in `1..=1024`. Default: 1.
    pub half_open_max_probes: u32,
    /// Successful probes needed to close again, in `1..=100` ([`MAX_HALF_OPEN_SUCCESSES`]).
    /// Default: 1.
    pub half_open_success_threshold: u32,
    /// A probe that has not reported after this many milliseconds frees its slot, so a lost probe
    /// cannot wedge the breaker half-open. At least 1. Default: 30 000 ms.
    pub probe_timeout_ms: u64,
    /// Seed of the generator that draws the open-period jitter and the throttle's refusals.
    /// Default: a fixed constant; hosts seed it from real entropy so that instances do not
    /// jitter alike.
    pub seed: u64,
    /// Adaptive throttling while CLOSED, on top of the trip rule. Default: none.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub throttle: Option<Throttle>,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl BreakerConfig {
    /// The defaults listed on each field.
    pub const fn new() -> Self {
        BreakerConfig {
            trip: TripRule::ConsecutiveFailures { threshold: 5 },
            open_duration_ms: 30_000,
            open_jitter: 0.0,
            open_backoff_factor: 1.0,
            max_open_duration_ms: 300_000,
            half_open_max_probes: 1,
            half_open_success_threshold: 1,
            probe_timeout_ms: 30_000,
            seed: 0x6272_6561_6b77_6174, // "breakwat"
            throttle: None,
        }
    }

    /// Sets [`trip`](Self::trip).
    pub const fn with_trip(mut self, trip: TripRule) -> Self {
        self.trip = trip;
        self
    }
    /// Sets [`open_duration_ms`](Self::open_duration_ms).
    pub const fn with_open_duration_ms(mut self, ms: u64) -> Self {
        self.open_duration_ms = ms;
        self
    }
    /// Sets [`open_jitter`](Self::open_jitter).
    pub const fn with_open_jitter(mut self, fraction: f64) -> Self {
        self.open_jitter = fraction;
        self
    }
    /// Sets [`open_backoff_factor`](Self::open_backoff_factor) and
    /// [`max_open_duration_ms`](Self::max_open_duration_ms).
    pub const fn with_open_backoff(mut self, factor: f64, max_open_duration_ms: u64) -> Self {
        self.open_backoff_factor = factor;
        self.max_open_duration_ms = max_open_duration_ms;
        self
    }
    /// Sets [`half_open_max_probes`](Self::half_open_max_probes).
    pub const fn with_half_open_max_probes(mut self, probes: u32) -> Self {
        self.half_open_max_probes = probes;
        self
    }
    /// Sets [`half_open_success_threshold`](Self::half_open_success_threshold).
    pub const fn with_half_open_success_threshold(mut self, successes: u32) -> Self {
        self.half_open_success_threshold = successes;
        self
    }
    /// Sets [`probe_timeout_ms`](Self::probe_timeout_ms).
    pub const fn with_probe_timeout_ms(mut self, ms: u64) -> Self {
        self.probe_timeout_ms = ms;
        self
    }
    /// Sets [`seed`](Self::seed).
    pub const fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets [`throttle`](Self::throttle).
    pub const fn with_throttle(mut self, throttle: Throttle) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// What a CLOSED, automatic breaker under this configuration lets its host skip: the trip
    /// rule's [`FastPath`], without admissions under a throttle (it decides every call; the
    /// breaker's [`quiet`](super::Breaker::quiet) answer is then that nothing is quiet).
    pub const fn fast_path(&self) -> FastPath {
        let rule = self.trip.fast_path();
        if self.host_admits() {
            rule
        } else {
            rule.without(FastPath::ADMIT)
        }
    }

    /// Whether the host of a CLOSED, automatic breaker may admit calls without it: not under a
    /// throttle, which decides every call. The one answer of [`fast_path`](Self::fast_path)'s
    /// [`FastPath::ADMIT`] and of whether [`Breaker::quiet`](super::Breaker::quiet) may answer
    /// more than [`Quiet::NONE`](super::Quiet::NONE).
    #[inline(always)]
    pub(crate) const fn host_admits(&self) -> bool {
        self.throttle_rule().is_none()
    }

    /// The throttle the breaker applies: [`throttle`](Self::throttle), or none in a build
    /// without the `throttle` feature (where `validate` refuses one), so that the compiler
    /// leaves its code out.
    #[inline(always)]
    pub(crate) const fn throttle_rule(&self) -> Option<Throttle> {
        if cfg!(feature = "throttle") {
            self.throttle
        } else {
            None
        }
    }

    /// Checks every field; the first one out of range is named in the error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_trip(&self.trip)?;
        if let Some(throttle) = &self.throttle {
            if !cfg!(feature = "throttle") {
                return Err(ConfigError::new(
                    "throttle",
                    throttle.multiplier,
                    "no throttle: this build of the crate leaves out its `throttle` feature",
                ));
            }
            throttle.validate()?;
        }
        if !(self.open_jitter.is_finite() && (0.0..1.0).contains(&self.open_jitter)) {
            return Err(ConfigError::new(
                "open_jitter",
                self.open_jitter,
                "a fraction in [0, 1)",
            ));
        }
        if !(self.open_backoff_factor.is_finite() && self.open_backoff_factor >= 1.0) {
            return Err(ConfigError::new(
                "open_backoff_factor",
                self.open_backoff_factor,
                "a finite number >= 1",
            ));
        }
        if self.open_duration_ms > MAX_DURATION_MS {
            return Err(ConfigError::new(
                "open_duration_ms",
                self.open_duration_ms as f64,
                "at most 2^52 milliseconds",
            ));
        }
        if self.max_open_duration_ms < self.open_duration_ms
            || self.max_open_duration_ms > MAX_DURATION_MS
        {
            return Err(ConfigError::new(
                "max_open_duration_ms",
                self.max_open_duration_ms as f64,
                "at least open_duration_ms and at most 2^52 milliseconds",
            ));
        }
        if self.half_open_max_probes == 0 || self.half_open_max_probes > MAX_HALF_OPEN_PROBES {
            return Err(ConfigError::new(
                "half_open_max_probes",
                self.half_open_max_probes as f64,
                "an integer in 1..=1024",
            ));
        }
        if self.half_open_success_threshold == 0
            || self.half_open_success_threshold > MAX_HALF_OPEN_SUCCESSES
        {
            return Err(ConfigError::new(
                "half_open_success_threshold",
                self.half_open_success_threshold as f64,
                "an integer in 1..=100",
            ));
        }
        if self.probe_timeout_ms == 0 || self.probe_timeout_ms > MAX_DURATION_MS {
            return Err(ConfigError::new(
                "probe_timeout_ms",
                self.probe_timeout_ms as f64,
                "an integer in 1..=2^52 milliseconds",
            ));
        }
        Ok(())
    }
}

/// Durations are capped at 2^52 ms (142 000 years), so that a timestamp plus a duration stays
/// below 2^53: it survives a trip through a JavaScript number and a snapshot (`toJSON()` then
/// `fromJSON()`), and never overflows.
pub const MAX_DURATION_MS: u64 = 1 << 52;

/// A clock reading more than this far behind the latest one is a clock step (an NTP correction,
/// a failover to a host whose clock is behind), not the skew between readers: the breaker's
/// times move back with it, so that an open period does not last as long as the step. Readings
/// less far behind count as no time passing.
pub const CLOCK_STEP_MS: u64 = 60_000;

fn validate_count(field: &'static str, n: u32, max: u32) -> Result<(), ConfigError> {
    if n == 0 || n > max {
        let expected = if max == MAX_WINDOW_CALLS {
            "an integer in 1..=100000"
        } else {
            "an integer >= 1"
        };
        return Err(ConfigError::new(field, n as f64, expected));
    }
    Ok(())
}

fn validate_span(field: &'static str, ms: u64) -> Result<(), ConfigError> {
    if ms == 0 || ms > MAX_DURATION_MS {
        return Err(ConfigError::new(
            field,
            ms as f64,
            "an integer in 1..=2^52 milliseconds",
        ));
    }
    Ok(())
}

fn validate_percent(field: &'static str, p: f64) -> Result<(), ConfigError> {
    if !(p.is_finite() && p > 0.0 && p <= 100.0) {
        return Err(ConfigError::new(field, p, "a percentage in (0, 100]"));
    }
    Ok(())
}

fn validate_window(window: &Window) -> Result<(), ConfigError> {
    match *window {
        Window::Calls(n) => validate_count("trip.window.calls", n, MAX_WINDOW_CALLS),
        Window::Millis(ms) => validate_span("trip.window.millis", ms),
    }
}

fn validate_trip(trip: &TripRule) -> Result<(), ConfigError> {
    match *trip {
        TripRule::ConsecutiveFailures { threshold } => {
            validate_count("trip.threshold", threshold, MAX_COUNT)
        }
        TripRule::FailuresInWindow {
            threshold,
            window_ms,
        } => {
            validate_count("trip.threshold", threshold, MAX_WINDOW_CALLS)?;
            validate_span("trip.window_ms", window_ms)
        }
        TripRule::FailureRate {
            threshold_percent,
            minimum_calls,
            window,
        } => {
            validate_percent("trip.threshold_percent", threshold_percent)?;
            validate_count("trip.minimum_calls", minimum_calls, MAX_COUNT)?;
            validate_window(&window)
        }
        TripRule::SlowCallRate {
            threshold_percent,
            slow_call_ms,
            minimum_calls,
            window,
        } => {
            validate_percent("trip.threshold_percent", threshold_percent)?;
            validate_span("trip.slow_call_ms", slow_call_ms)?;
            validate_count("trip.minimum_calls", minimum_calls, MAX_COUNT)?;
            validate_window(&window)
        }
    }
}
