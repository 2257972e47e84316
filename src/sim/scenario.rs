//! A scenario as plain data: the load, the upstream's failure trace, and the configuration under
//! test. Parsed from TOML or JSON with unknown fields refused; [`Scenario::validate`] then checks
//! ranges (running the core's own validators) and names the first bad field.

use std::fmt;
use std::string::{String, ToString};
use std::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::breaker::{BreakerConfig, TripRule, Window};
use crate::error::ConfigError;
use crate::retry::{Classifier, Jitter, RetryBudget, RetryPolicy};

/// The most user requests a scenario may generate (to keep a run instant).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// The longest arrival window, in milliseconds (one day).
pub const MAX_DURATION_MS: u64 = 86_400_000;

/// A complete scenario. Every field but `name` and `load` has a default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A short name, shown in the report.
    pub name: String,
    /// What the scenario is about.
    #[serde(default)]
    pub description: String,
    /// Seed of every random draw (arrivals, flapping, latency spread, retry jitter).
    #[serde(default)]
    pub seed: u64,
    /// Users send requests during `[0, duration_ms)`; requests in flight then run to their end.
    pub duration_ms: u64,
    /// Application instances (processes, isolates) sharing the load. Default: 1.
    #[serde(default = "one")]
    pub instances: u32,
    /// How the breaker wraps the retries. Default: [`Composition::PerAttempt`].
    #[serde(default)]
    pub composition: Composition,
    /// The client's timeout for one upstream call. Default: 10 000 ms.
    #[serde(default = "default_timeout")]
    pub call_timeout_ms: u64,
    /// A user request that succeeds but takes longer than this still counts as *affected*.
    /// Default: 3 × `upstream.latency_ms`.
    #[serde(default)]
    pub affected_latency_ms: Option<u64>,
    /// The strategies to compare. Default: all four.
    #[serde(default = "all_strategies")]
    pub strategies: Vec<Strategy>,
    /// Who sends requests, and when.
    pub load: Load,
    /// The upstream: its capacity, latency and failure trace.
    #[serde(default)]
    pub upstream: Upstream,
    /// The retry policy (the fields of [`RetryPolicy`]).
    #[serde(default)]
    pub retry: RetrySpec,
    /// The breaker configuration (the fields of [`BreakerConfig`]).
    #[serde(default)]
    pub breaker: BreakerSpec,
    /// An optional retry budget, one per instance.
    #[serde(default)]
    pub budget: Option<BudgetSpec>,
}

fn one() -> u32 {
    1
}
fn default_timeout() -> u64 {
    10_000
}
fn all_strategies() -> Vec<Strategy> {
    Strategy::ALL.to_vec()
}

/// One way of calling the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// One attempt per request, nothing else.
    NoProtection,
    /// The retry policy, no breaker.
    RetryOnly,
    /// Each instance has its own breaker around the retries.
    BreakerPerInstance,
    /// One breaker shared by every instance (what a Durable Object gives).
    SharedBreaker,
}

impl Strategy {
    /// The four strategies, in report order.
    pub const ALL: [Strategy; 4] = [
        Strategy::NoProtection,
        Strategy::RetryOnly,
        Strategy::BreakerPerInstance,
        Strategy::SharedBreaker,
    ];

    /// The name as written in scenario files and JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Strategy::NoProtection => "no_protection",
            Strategy::RetryOnly => "retry_only",
            Strategy::BreakerPerInstance => "breaker_per_instance",
            Strategy::SharedBreaker => "shared_breaker",
        }
    }

    /// A human label for tables and charts.
    pub const fn label(self) -> &'static str {
        match self {
            Strategy::NoProtection => "no protection",
            Strategy::RetryOnly => "retry only",
            Strategy::BreakerPerInstance => "breaker per instance",
            Strategy::SharedBreaker => "shared breaker",
        }
    }

    /// Whether this strategy retries.
    pub const fn retries(self) -> bool {
        !matches!(self, Strategy::NoProtection)
    }

    /// Whether this strategy has a breaker.
    pub const fn has_breaker(self) -> bool {
        matches!(self, Strategy::BreakerPerInstance | Strategy::SharedBreaker)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How the breaker and the retry policy are composed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// `retry(breaker(call))`: every attempt asks the breaker and reports to it; a rejected
    /// attempt ends the request at once (the host serves its fallback).
    #[default]
    PerAttempt,
    /// `breaker(retry(call))`: the breaker admits a request once and counts the whole retry run
    /// as one outcome (seed 003's `call_with_breaker`).
    PerRequest,
}

/// Who sends requests. Give exactly one of `requests_per_user_per_s` (with `users`),
/// `arrivals_per_s`, or `at_ms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// Users sending requests; user `u` is served by instance `u % instances`, so give at least
    /// as many as `instances`. Default: 1 with `requests_per_user_per_s`; with `arrivals_per_s`
    /// or `at_ms`, every request is its own user, so request `i` goes to instance
    /// `i % instances` (round robin, like a load balancer).
    #[serde(default)]
    pub users: Option<u32>,
    /// Each user's request rate.
    #[serde(default)]
    pub requests_per_user_per_s: Option<f64>,
    /// Total request rate, whoever sends them (spread over the instances: see `users`).
    #[serde(default)]
    pub arrivals_per_s: Option<f64>,
    /// Explicit request times, in ms from the start (request `i` is sent by user `i % users`,
    /// or is its own user without `users`).
    #[serde(default)]
    pub at_ms: Option<Vec<u64>>,
    /// How rate-based arrivals are spaced. Default: Poisson.
    #[serde(default)]
    pub arrival: Arrival,
}

/// Spacing of rate-based arrivals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps (each user an independent Poisson process).
    #[default]
    Poisson,
    /// Even gaps, each user starting at a random offset within one period.
    Uniform,
}

/// The upstream service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Upstream {
    /// Time to serve one call once it is being served. Default: 1 000 ms.
    pub latency_ms: u64,
    /// Random spread of the service time, as a fraction: uniform in `latency × (1 ± x)`, in
    /// `[0, 1)`. Default: 0.2.
    pub latency_jitter: f64,
    /// Time to answer an error (529, 503…) during an error phase or when the queue is full.
    /// Default: 100 ms.
    pub error_latency_ms: u64,
    /// Calls served at once. Calls beyond it wait in a FIFO queue. `None`: unlimited.
    pub concurrency: Option<u32>,
    /// Calls that may wait; a call finding the queue full gets a 529 at once. `None`: unlimited.
    pub queue_limit: Option<u32>,
    /// Whether the upstream skips queued calls whose client already gave up. Default: false
    /// (an HTTP server rarely notices: the abandoned call is served anyway, wasting capacity).
    pub drop_abandoned: bool,
    /// The failure trace, in order. After the last phase the upstream is healthy.
    pub phases: Vec<Phase>,
}

impl Default for Upstream {
    fn default() -> Self {
        Upstream {
            latency_ms: 1_000,
            latency_jitter: 0.2,
            error_latency_ms: 100,
            concurrency: None,
            queue_limit: None,
            drop_abandoned: false,
            phases: Vec::new(),
        }
    }
}

/// What the upstream does during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// Serves calls normally.
    Healthy,
    /// Answers `status` (default 529) to a share `probability` (default 1) of the calls it
    /// receives, after `error_latency_ms`; the others are served normally.
    Error,
    /// `error` with `probability` defaulting to 0.5.
    Flapping,
    /// Accepts calls into its queue and serves none: clients wait until their timeout. When the
    /// phase ends, the queue (abandoned calls included) is served in order.
    Stalled,
}

impl PhaseKind {
    /// The name as written in scenario files.
    pub const fn as_str(self) -> &'static str {
        match self {
            PhaseKind::Healthy => "healthy",
            PhaseKind::Error => "error",
            PhaseKind::Flapping => "flapping",
            PhaseKind::Stalled => "stalled",
        }
    }
}

/// One stretch of the failure trace.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// What happens.
    pub kind: PhaseKind,
    /// How long, at least.
    pub duration_ms: u64,
    /// For `error` / `flapping`: the status answered. Default: 529.
    #[serde(default)]
    pub status: Option<u16>,
    /// For `error` / `flapping`: the share of calls that fail, in `[0, 1]`.
    #[serde(default)]
    pub probability: Option<f64>,
    /// The phase lasts beyond `duration_ms` until the upstream has received no call for this
    /// long: an overloaded service that comes back only once its callers back off.
    #[serde(default)]
    pub until_quiet_ms: Option<u64>,
    /// For `error` / `flapping` with a retried status (429, 503, 529…): the `Retry-After` the
    /// upstream sends with its errors, in ms from the answer. The retry policy waits at least
    /// this long (and gives up if it exceeds `retry.max_retry_after_ms`). Default: none.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
}

impl Phase {
    /// The failure probability this phase applies to received calls.
    pub fn failure_probability(&self) -> f64 {
        match self.kind {
            PhaseKind::Healthy | PhaseKind::Stalled => 0.0,
            PhaseKind::Error => self.probability.unwrap_or(1.0),
            PhaseKind::Flapping => self.probability.unwrap_or(0.5),
        }
    }

    /// The status of this phase's errors.
    pub fn error_status(&self) -> u16 {
        self.status.unwrap_or(529)
    }

    /// Whether the phase degrades the upstream at all.
    pub fn is_outage(&self) -> bool {
        match self.kind {
            PhaseKind::Healthy => false,
            PhaseKind::Stalled => true,
            PhaseKind::Error | PhaseKind::Flapping => self.failure_probability() > 0.0,
        }
    }
}

/// Retry jitter, as written in a scenario: `"none"`, `"full"`, `"equal"`, `"decorrelated"` or
/// `{ proportional = 0.3 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterSpec {
    /// [`Jitter::None`].
    None,
    /// [`Jitter::Full`].
    Full,
    /// [`Jitter::Equal`].
    Equal,
    /// [`Jitter::Decorrelated`].
    Decorrelated,
    /// [`Jitter::Proportional`].
    Proportional(f64),
}

impl From<JitterSpec> for Jitter {
    fn from(j: JitterSpec) -> Jitter {
        match j {
            JitterSpec::None => Jitter::None,
            JitterSpec::Full => Jitter::Full,
            JitterSpec::Equal => Jitter::Equal,
            JitterSpec::Decorrelated => Jitter::Decorrelated,
            JitterSpec::Proportional(p) => Jitter::Proportional(p),
        }
    }
}

impl From<Jitter> for JitterSpec {
    fn from(j: Jitter) -> JitterSpec {
        match j {
            Jitter::None => JitterSpec::None,
            Jitter::Full => JitterSpec::Full,
            Jitter::Equal => JitterSpec::Equal,
            Jitter::Decorrelated => JitterSpec::Decorrelated,
            Jitter::Proportional(p) => JitterSpec::Proportional(p),
        }
    }
}

/// The fields of [`RetryPolicy`], with its defaults; unknown fields are refused.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrySpec {
    /// [`RetryPolicy::max_attempts`].
    pub max_attempts: u32,
    /// [`RetryPolicy::base_delay_ms`].
    pub base_delay_ms: u64,
    /// [`RetryPolicy::factor`].
    pub factor: f64,
    /// [`RetryPolicy::max_delay_ms`].
    pub max_delay_ms: u64,
    /// [`RetryPolicy::deadline_ms`].
    pub deadline_ms: Option<u64>,
    /// [`RetryPolicy::jitter`].
    pub jitter: JitterSpec,
    /// [`RetryPolicy::max_retry_after_ms`].
    pub max_retry_after_ms: u64,
}

impl Default for RetrySpec {
    fn default() -> Self {
        let p = RetryPolicy::new();
        RetrySpec {
            max_attempts: p.max_attempts,
            base_delay_ms: p.base_delay_ms,
            factor: p.factor,
            max_delay_ms: p.max_delay_ms,
            deadline_ms: p.deadline_ms,
            jitter: p.jitter.into(),
            max_retry_after_ms: p.max_retry_after_ms,
        }
    }
}

impl RetrySpec {
    /// The core policy.
    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy::new()
            .with_max_attempts(self.max_attempts)
            .with_base_delay_ms(self.base_delay_ms)
            .with_factor(self.factor)
            .with_max_delay_ms(self.max_delay_ms)
            .with_deadline_ms(self.deadline_ms)
            .with_jitter(self.jitter.into())
            .with_max_retry_after_ms(self.max_retry_after_ms)
    }
}

/// A trip rule, as written in a scenario: `{ kind = "consecutive_failures", threshold = 5 }`,
/// `{ kind = "failures_in_window", threshold = 5, window_ms = 60000 }`,
/// `{ kind = "failure_rate", threshold_percent = 50, minimum_calls = 20, window = { calls = 100 } }`
/// or `{ kind = "slow_call_rate", …, slow_call_ms = 5000 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TripSpec {
    /// [`TripRule::ConsecutiveFailures`].
    ConsecutiveFailures {
        /// Failures in a row.
        threshold: u32,
    },
    /// [`TripRule::FailuresInWindow`].
    FailuresInWindow {
        /// Failures.
        threshold: u32,
        /// Within this span.
        window_ms: u64,
    },
    /// [`TripRule::FailureRate`].
    FailureRate {
        /// Percentage in `(0, 100]`.
        threshold_percent: f64,
        /// Calls before the rate is trusted.
        minimum_calls: u32,
        /// `{ calls = n }` or `{ millis = ms }`.
        window: WindowSpec,
    },
    /// [`TripRule::SlowCallRate`].
    SlowCallRate {
        /// Percentage in `(0, 100]`.
        threshold_percent: f64,
        /// Slower than this is slow.
        slow_call_ms: u64,
        /// Calls before the rate is trusted.
        minimum_calls: u32,
        /// `{ calls = n }` or `{ millis = ms }`.
        window: WindowSpec,
    },
}

/// A rate window: `{ calls = 100 }` or `{ millis = 10000 }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSpec {
    /// [`Window::Calls`].
    Calls(u32),
    /// [`Window::Millis`].
    Millis(u64),
}

impl From<WindowSpec> for Window {
    fn from(w: WindowSpec) -> Window {
        match w {
            WindowSpec::Calls(n) => Window::Calls(n),
            WindowSpec::Millis(ms) => Window::Millis(ms),
        }
    }
}

impl From<TripSpec> for TripRule {
    fn from(t: TripSpec) -> TripRule {
        match t {
            TripSpec::ConsecutiveFailures { threshold } => {
                TripRule::ConsecutiveFailures { threshold }
            }
            TripSpec::FailuresInWindow {
                threshold,
                window_ms,
            } => TripRule::FailuresInWindow {
                threshold,
                window_ms,
            },
            TripSpec::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            } => TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window: window.into(),
            },
            TripSpec::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            } => TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window: window.into(),
            },
        }
    }
}

/// The fields of [`BreakerConfig`], with its defaults; unknown fields are refused.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerSpec {
    /// [`BreakerConfig::trip`].
    pub trip: TripSpec,
    /// [`BreakerConfig::open_duration_ms`].
    pub open_duration_ms: u64,
    /// [`BreakerConfig::open_jitter`].
    pub open_jitter: f64,
    /// [`BreakerConfig::open_backoff_factor`].
    pub open_backoff_factor: f64,
    /// [`BreakerConfig::max_open_duration_ms`].
    pub max_open_duration_ms: u64,
    /// [`BreakerConfig::half_open_max_probes`].
    pub half_open_max_probes: u32,
    /// [`BreakerConfig::half_open_success_threshold`].
    pub half_open_success_threshold: u32,
    /// [`BreakerConfig::probe_timeout_ms`].
    pub probe_timeout_ms: u64,
    /// [`BreakerConfig::seed`]; instance `i` uses `seed + i`.
    pub seed: u64,
}

impl Default for BreakerSpec {
    fn default() -> Self {
        let c = BreakerConfig::new();
        BreakerSpec {
            trip: TripSpec::ConsecutiveFailures { threshold: 5 },
            open_duration_ms: c.open_duration_ms,
            open_jitter: c.open_jitter,
            open_backoff_factor: c.open_backoff_factor,
            max_open_duration_ms: c.max_open_duration_ms,
            half_open_max_probes: c.half_open_max_probes,
            half_open_success_threshold: c.half_open_success_threshold,
            probe_timeout_ms: c.probe_timeout_ms,
            seed: c.seed,
        }
    }
}

impl BreakerSpec {
    /// The core configuration.
    pub fn config(&self) -> BreakerConfig {
        BreakerConfig::new()
            .with_trip(self.trip.into())
            .with_open_duration_ms(self.open_duration_ms)
            .with_open_jitter(self.open_jitter)
            .with_open_backoff(self.open_backoff_factor, self.max_open_duration_ms)
            .with_half_open_max_probes(self.half_open_max_probes)
            .with_half_open_success_threshold(self.half_open_success_threshold)
            .with_probe_timeout_ms(self.probe_timeout_ms)
            .with_seed(self.seed)
    }
}

/// A [`RetryBudget`]: retries may be `retry_percent` % of the calls of the last `ttl_ms`, plus
/// `min_per_sec` a second.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// The window, 1 000..=60 000 ms. Default: 10 000.
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Retries always allowed per second. Default: 10.
    #[serde(default = "default_min_per_sec")]
    pub min_per_sec: u32,
    /// Retries as a percentage of calls. Default: 20.
    #[serde(default = "default_retry_percent")]
    pub retry_percent: f64,
}

fn default_ttl() -> u64 {
    10_000
}
fn default_min_per_sec() -> u32 {
    10
}
fn default_retry_percent() -> f64 {
    20.0
}

impl BudgetSpec {
    /// A fresh budget.
    pub fn budget(&self) -> Result<RetryBudget, ConfigError> {
        RetryBudget::new(self.ttl_ms, self.min_per_sec, self.retry_percent)
    }
}

/// Why a scenario was refused. Always names the field, as a dotted path
/// (`upstream.phases[1].probability`, `breaker.trip.threshold`).
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// The field, e.g. `"retry.max_attempts"`; empty when the document itself is unreadable.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn from_config(prefix: &str, e: ConfigError) -> Self {
        let field = if prefix.is_empty() || e.field.starts_with(prefix) {
            e.field.to_string()
        } else {
            std::format!("{prefix}.{}", e.field)
        };
        ScenarioError::new(
            field,
            std::format!("{} is invalid (expected {})", e.value, e.expected),
        )
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "invalid scenario: {}", self.message)
        } else {
            write!(
                f,
                "invalid scenario field `{}`: {}",
                self.field, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The file formats a scenario may be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

impl Format {
    /// The format a file name's extension says (`.json` → JSON, anything else → TOML).
    pub fn from_path(path: &str) -> Format {
        if path.to_ascii_lowercase().ends_with(".json") {
            Format::Json
        } else {
            Format::Toml
        }
    }
}

/// The dotted path serde_path_to_error reports, or "" for the root.
fn path_string(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." {
        String::new()
    } else {
        s
    }
}

/// The name in "unknown field `x`" / "missing field `x`" messages, appended to the path so the
/// error names it.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message
        .split("unknown field `")
        .nth(1)
        .or_else(|| message.split("missing field `").nth(1))?;
    rest.split('`').next()
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        std::format!("{path}.{field}")
    }
}

impl Scenario {
    /// Parses and validates a scenario.
    pub fn parse(text: &str, format: Format) -> Result<Scenario, ScenarioError> {
        let scenario = match format {
            Format::Toml => Self::from_toml(text)?,
            Format::Json => Self::from_json(text)?,
        };
        scenario.validate()?;
        Ok(scenario)
    }

    fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let de = toml::Deserializer::parse(text)
            .map_err(|e| ScenarioError::new("", e.message().to_string()))?;
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = path_string(e.path());
            let inner = e.inner();
            let mut message = inner.message().to_string();
            if let Some(span) = inner.span() {
                let line = text
                    .get(..span.start)
                    .map_or(0, |t| t.matches('\n').count())
                    + 1;
                message = std::format!("{message} (line {line})");
            }
            Self::field_error(path, message)
        })
    }

    fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let scenario: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = path_string(e.path());
            Self::field_error(path, e.inner().to_string())
        })?;
        de.end()
            .map_err(|e| ScenarioError::new("", e.to_string()))?;
        Ok(scenario)
    }

    fn field_error(path: String, message: String) -> ScenarioError {
        let field = match unknown_field(&message) {
            Some(name) if !path.ends_with(name) => join(&path, name),
            _ => path,
        };
        ScenarioError::new(field, message)
    }

    /// The retry policy under test.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry.policy()
    }

    /// The breaker configuration under test.
    pub fn breaker_config(&self) -> BreakerConfig {
        self.breaker.config()
    }

    /// The latency above which a successful request still counts as affected.
    pub fn affected_latency(&self) -> u64 {
        self.affected_latency_ms
            .unwrap_or(self.upstream.latency_ms.saturating_mul(3))
    }

    /// Total request rate per second (0 for explicit arrival times).
    pub fn total_rate(&self) -> f64 {
        let l = &self.load;
        match (l.arrivals_per_s, l.requests_per_user_per_s) {
            (Some(r), _) => r,
            (None, Some(r)) => r * l.users.unwrap_or(1) as f64,
            _ => 0.0,
        }
    }

    /// Checks ranges and consistency; the first bad field is named.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |field: &str, msg: &str| Err(ScenarioError::new(field, msg));
        if self.name.is_empty() {
            return bad("name", "must not be empty");
        }
        if self.duration_ms == 0 || self.duration_ms > MAX_DURATION_MS {
            return bad("duration_ms", "must be in 1..=86400000 (one day)");
        }
        if self.instances == 0 || self.instances > 10_000 {
            return bad("instances", "must be in 1..=10000");
        }
        if self.call_timeout_ms == 0 || self.call_timeout_ms > MAX_DURATION_MS {
            return bad("call_timeout_ms", "must be in 1..=86400000");
        }
        if self.strategies.is_empty() {
            return bad("strategies", "list at least one strategy");
        }
        for (i, s) in self.strategies.iter().enumerate() {
            if self
                .strategies
                .get(..i)
                .is_some_and(|before| before.contains(s))
            {
                return bad(&std::format!("strategies[{i}]"), "listed twice");
            }
        }
        self.validate_load()?;
        self.validate_upstream()?;
        self.retry_policy()
            .validate()
            .map_err(|e| ScenarioError::from_config("retry", e))?;
        self.breaker_config()
            .validate()
            .map_err(|e| ScenarioError::from_config("breaker", e))?;
        if let Some(b) = &self.budget {
            b.budget().map_err(|e| ScenarioError::from_config("", e))?;
        }
        Ok(())
    }

    fn validate_load(&self) -> Result<(), ScenarioError> {
        let l = &self.load;
        let bad = |field: &str, msg: &str| Err(ScenarioError::new(field, msg));
        if let Some(u) = l.users {
            if u == 0 || u > 1_000_000 {
                return bad("load.users", "must be in 1..=1000000");
            }
        }
        // Users are routed to instance `user % instances`: fewer users than instances would leave
        // instances idle while the report counts them.
        let users = l.users.or(l.requests_per_user_per_s.map(|_| 1));
        if let Some(users) = users.filter(|u| *u < self.instances) {
            return bad(
                "load.users",
                &std::format!(
                    "{users} user(s) for {} instances: user u is served by instance \
                     u % instances, so some instances would get no request; give at least as \
                     many users as instances, or leave `users` out with `arrivals_per_s` or \
                     `at_ms` to spread the requests over the instances",
                    self.instances
                ),
            );
        }
        let given = [
            l.requests_per_user_per_s.is_some(),
            l.arrivals_per_s.is_some(),
            l.at_ms.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if given != 1 {
            return bad(
                "load",
                "give exactly one of requests_per_user_per_s, arrivals_per_s, at_ms",
            );
        }
        for (field, rate) in [
            ("load.requests_per_user_per_s", l.requests_per_user_per_s),
            ("load.arrivals_per_s", l.arrivals_per_s),
        ] {
            if let Some(r) = rate {
                if !(r.is_finite() && r > 0.0) {
                    return bad(field, "must be a positive number");
                }
            }
        }
        if let Some(at) = &l.at_ms {
            if at.is_empty() {
                return bad("load.at_ms", "list at least one time");
            }
            if at.len() as u64 > MAX_REQUESTS {
                return bad("load.at_ms", "too many requests");
            }
            if let Some(i) = at.iter().position(|t| *t >= self.duration_ms) {
                return bad(
                    &std::format!("load.at_ms[{i}]"),
                    "must be before duration_ms",
                );
            }
        }
        let expected = self.total_rate() * self.duration_ms as f64 / 1_000.0;
        if expected > MAX_REQUESTS as f64 {
            return bad(
                "load",
                "rate × duration exceeds 2 000 000 requests; shorten the scenario",
            );
        }
        Ok(())
    }

    fn validate_upstream(&self) -> Result<(), ScenarioError> {
        let u = &self.upstream;
        let bad = |field: String, msg: &str| Err(ScenarioError::new(field, msg));
        if u.latency_ms > MAX_DURATION_MS {
            return bad("upstream.latency_ms".into(), "must be at most 86400000");
        }
        if !(u.latency_jitter.is_finite() && (0.0..1.0).contains(&u.latency_jitter)) {
            return bad(
                "upstream.latency_jitter".into(),
                "must be a fraction in [0, 1)",
            );
        }
        if u.error_latency_ms > MAX_DURATION_MS {
            return bad(
                "upstream.error_latency_ms".into(),
                "must be at most 86400000",
            );
        }
        if u.concurrency == Some(0) {
            return bad("upstream.concurrency".into(), "must be at least 1");
        }
        if u.phases.len() > 10_000 {
            return bad("upstream.phases".into(), "at most 10000 phases");
        }
        for (i, p) in u.phases.iter().enumerate() {
            let f = |name: &str| std::format!("upstream.phases[{i}].{name}");
            if p.duration_ms > MAX_DURATION_MS {
                return bad(f("duration_ms"), "must be at most 86400000");
            }
            let erroring = matches!(p.kind, PhaseKind::Error | PhaseKind::Flapping);
            if let Some(prob) = p.probability {
                if !erroring {
                    return bad(f("probability"), "only for `error` and `flapping` phases");
                }
                if !(prob.is_finite() && (0.0..=1.0).contains(&prob)) {
                    return bad(f("probability"), "must be in [0, 1]");
                }
            }
            if let Some(status) = p.status {
                if !erroring {
                    return bad(f("status"), "only for `error` and `flapping` phases");
                }
                if !(400..=599).contains(&status) {
                    return bad(f("status"), "must be an HTTP error status in 400..=599");
                }
            }
            if let Some(q) = p.until_quiet_ms {
                if q == 0 || q > MAX_DURATION_MS {
                    return bad(f("until_quiet_ms"), "must be in 1..=86400000");
                }
            }
            if let Some(ms) = p.retry_after_ms {
                if !erroring {
                    return bad(
                        f("retry_after_ms"),
                        &std::format!(
                            "{ms} given for a `{}` phase, which answers no error to carry it: \
                             only for `error` and `flapping` phases",
                            p.kind.as_str()
                        ),
                    );
                }
                if ms > MAX_DURATION_MS {
                    return bad(
                        f("retry_after_ms"),
                        &std::format!("{ms} is too long: must be at most 86400000 (one day)"),
                    );
                }
                let status = p.error_status();
                if !Classifier::new().classify_status(status, None).retryable {
                    return bad(
                        f("retry_after_ms"),
                        &std::format!(
                            "{ms} given with status {status}, which is never retried, so no \
                             client would wait for it; use a retried status (429, 503, 529…)"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}
