//! A scenario as plain data: the load, the upstream's failure trace, and the configuration under
//! test: the core's own [`RetryPolicy`] and [`BreakerConfig`], written as everywhere else (a trip
//! rule tagged by `kind`). Parsed from TOML or JSON with unknown fields refused;
//! [`Scenario::validate`] then checks ranges (running the core's own validators) and names every
//! bad field.

use std::fmt;
use std::string::{String, ToString};
use std::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::breaker::BreakerConfig;
use crate::error::ConfigError;
use crate::hedge::HedgeConfig;
use crate::retry::{Classifier, RetryBudget, RetryPolicy};

/// The most user requests a scenario may generate (to keep a run instant).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// The longest time any one setting of a scenario may give, in milliseconds (one day): the
/// arrival window (`duration_ms`), the call timeout, the upstream's latencies, a phase.
pub const MAX_SCENARIO_TIME_MS: u64 = 86_400_000;
/// The most application instances a scenario may have.
const MAX_INSTANCES: u32 = 10_000;
/// The most users a scenario may have.
const MAX_USERS: u32 = 1_000_000;
/// The most phases an upstream's failure trace may have.
const MAX_PHASES: usize = 10_000;

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
    /// The retry policy, with the core's defaults.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// The breaker configuration, with the core's defaults. Its `seed` is the first instance's:
    /// with a breaker per instance, instance `i` draws its jitter from `seed + i`.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// An optional retry budget, one per instance.
    #[serde(default)]
    pub budget: Option<BudgetSpec>,
    /// With a hedging policy, the report adds a table: each request's time to first token
    /// without and with a hedge on a second, independent provider like the upstream (see
    /// [`crate::sim`]).
    #[serde(default)]
    pub hedge: Option<HedgeConfig>,
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
    /// as one outcome (the agent-tool scenario).
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
    /// A heavy-tailed first token: the share of calls, in [0, 1], that take `slow_ms` (with the
    /// same jitter) instead of `latency_ms`. Default: 0.
    pub slow_share: f64,
    /// How long those calls take, ms. Default: 30 000.
    pub slow_ms: u64,
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
            slow_share: 0.0,
            slow_ms: 30_000,
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
    /// Its capacity drops: it serves `concurrency` calls at once (required) instead of
    /// `upstream.concurrency`, the others wait in the queue, and a call finding the queue full
    /// (`upstream.queue_limit`) gets a 529 at once. Its errors come from the load: callers who
    /// back off get fewer of them.
    Overloaded,
}

impl PhaseKind {
    /// The name as written in scenario files.
    pub const fn as_str(self) -> &'static str {
        match self {
            PhaseKind::Healthy => "healthy",
            PhaseKind::Error => "error",
            PhaseKind::Flapping => "flapping",
            PhaseKind::Stalled => "stalled",
            PhaseKind::Overloaded => "overloaded",
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
    /// For `overloaded`: the calls served at once during the phase.
    #[serde(default)]
    pub concurrency: Option<u32>,
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
            PhaseKind::Healthy | PhaseKind::Stalled | PhaseKind::Overloaded => 0.0,
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
            PhaseKind::Stalled | PhaseKind::Overloaded => true,
            PhaseKind::Error | PhaseKind::Flapping => self.failure_probability() > 0.0,
        }
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

/// One mistake in a scenario: the field, as a dotted path (`upstream.phases[1].probability`,
/// `breaker.trip.threshold`), and what is wrong with its value.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The field, e.g. `"retry.max_attempts"`; empty when the document itself is unreadable.
    pub field: String,
    /// What is wrong, the value included.
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// `value` is not what `field` accepts.
    fn invalid(field: impl Into<String>, value: impl fmt::Display, expected: &str) -> Self {
        FieldError::new(
            field,
            std::format!("{value} is invalid (expected {expected})"),
        )
    }

    /// A core validator's error, its field under `prefix` (`retry`, `breaker`).
    fn from_config(prefix: &str, e: ConfigError) -> Self {
        let field = if prefix.is_empty() || e.field.starts_with(prefix) {
            e.field.to_string()
        } else {
            std::format!("{prefix}.{}", e.field)
        };
        FieldError::invalid(field, e.value, e.expected)
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.field, self.message)
        }
    }
}

/// Why a scenario was refused: every mistake [`Scenario::validate`] found, in the order of the
/// document, each naming its field. A document that cannot be read at all (bad syntax, a wrong
/// type, an unknown field) gives one mistake, the first the parser met.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// The mistakes, at least one.
    pub errors: Vec<FieldError>,
}

impl ScenarioError {
    /// One mistake.
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            errors: std::vec![FieldError::new(field, message)],
        }
    }

    /// A core validator's error, its field under `prefix`.
    pub(crate) fn from_config(prefix: &str, e: ConfigError) -> Self {
        ScenarioError {
            errors: std::vec![FieldError::from_config(prefix, e)],
        }
    }

    /// The fields named, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.errors.iter().map(|e| e.field.as_str())
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errors.as_slice() {
            [one] if one.field.is_empty() => write!(f, "invalid scenario: {}", one.message),
            [one] => write!(f, "invalid scenario field `{}`: {}", one.field, one.message),
            all => {
                write!(f, "invalid scenario, {} mistakes:", all.len())?;
                for e in all {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
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
        self.retry
    }

    /// The breaker configuration under test, as the first instance runs it.
    pub fn breaker_config(&self) -> BreakerConfig {
        self.breaker
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

    /// Checks ranges and consistency, running the core's validators on `retry`, `breaker` and
    /// `budget`. Every mistake is reported at once, in the order of the document (each core
    /// validator reports the first of its struct).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let mut errors = Vec::new();
        self.validate_top(&mut errors);
        self.validate_load(&mut errors);
        self.validate_upstream(&mut errors);
        if let Err(e) = self.retry.validate() {
            errors.push(FieldError::from_config("retry", e));
        }
        if let Err(e) = self.breaker.validate() {
            errors.push(FieldError::from_config("breaker", e));
        }
        if let Some(Err(e)) = self.budget.as_ref().map(BudgetSpec::budget) {
            errors.push(FieldError::from_config("", e));
        }
        if let Some(Err(e)) = self.hedge.as_ref().map(HedgeConfig::validate) {
            errors.push(FieldError::from_config("hedge", e));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ScenarioError { errors })
        }
    }

    fn validate_top(&self, errors: &mut Vec<FieldError>) {
        if self.name.is_empty() {
            errors.push(FieldError::invalid("name", "\"\"", "a non-empty name"));
        }
        check_time(errors, "duration_ms", self.duration_ms, 1);
        if self.instances == 0 || self.instances > MAX_INSTANCES {
            errors.push(FieldError::invalid(
                "instances",
                self.instances,
                "an integer in 1..=10000",
            ));
        }
        check_time(errors, "call_timeout_ms", self.call_timeout_ms, 1);
        if self.strategies.is_empty() {
            errors.push(FieldError::invalid(
                "strategies",
                "[]",
                "at least one strategy",
            ));
        }
        for (i, s) in self.strategies.iter().enumerate() {
            if self
                .strategies
                .get(..i)
                .is_some_and(|before| before.contains(s))
            {
                errors.push(FieldError::new(
                    std::format!("strategies[{i}]"),
                    std::format!("\"{}\" is listed twice", s.as_str()),
                ));
            }
        }
    }

    fn validate_load(&self, errors: &mut Vec<FieldError>) {
        let l = &self.load;
        if let Some(u) = l.users {
            if u == 0 || u > MAX_USERS {
                errors.push(FieldError::invalid(
                    "load.users",
                    u,
                    "an integer in 1..=1000000",
                ));
            }
        }
        // Users are routed to instance `user % instances`: fewer users than instances would leave
        // instances idle while the report counts them.
        let users = l.users.or(l.requests_per_user_per_s.map(|_| 1));
        if let Some(users) = users.filter(|u| *u < self.instances) {
            errors.push(FieldError::new(
                "load.users",
                std::format!(
                    "{users} user(s) for {} instances: user u is served by instance \
                     u % instances, so some instances would get no request; give at least as \
                     many users as instances, or leave `users` out with `arrivals_per_s` or \
                     `at_ms` to spread the requests over the instances",
                    self.instances
                ),
            ));
        }
        let given: Vec<&str> = [
            (
                "requests_per_user_per_s",
                l.requests_per_user_per_s.is_some(),
            ),
            ("arrivals_per_s", l.arrivals_per_s.is_some()),
            ("at_ms", l.at_ms.is_some()),
        ]
        .iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| *name)
        .collect();
        if given.len() != 1 {
            let found = if given.is_empty() {
                String::from("none of them")
            } else {
                given.join(" and ")
            };
            errors.push(FieldError::new(
                "load",
                std::format!(
                    "give exactly one of requests_per_user_per_s, arrivals_per_s, at_ms \
                     (found {found})"
                ),
            ));
        }
        for (field, rate) in [
            ("load.requests_per_user_per_s", l.requests_per_user_per_s),
            ("load.arrivals_per_s", l.arrivals_per_s),
        ] {
            if let Some(r) = rate {
                if !(r.is_finite() && r > 0.0) {
                    errors.push(FieldError::invalid(field, r, "a positive number"));
                }
            }
        }
        if let Some(at) = &l.at_ms {
            if at.is_empty() {
                errors.push(FieldError::invalid("load.at_ms", "[]", "at least one time"));
            }
            if at.len() as u64 > MAX_REQUESTS {
                errors.push(FieldError::invalid(
                    "load.at_ms",
                    std::format_args!("a list of {} times", at.len()),
                    "at most 2000000 requests",
                ));
            }
            if let Some((i, t)) = at.iter().enumerate().find(|(_, t)| **t >= self.duration_ms) {
                errors.push(FieldError::new(
                    std::format!("load.at_ms[{i}]"),
                    std::format!(
                        "{t} is invalid (expected a time before duration_ms, {})",
                        self.duration_ms
                    ),
                ));
            }
        }
        let expected = self.total_rate() * self.duration_ms as f64 / 1_000.0;
        if expected > MAX_REQUESTS as f64 {
            errors.push(FieldError::new(
                "load",
                std::format!(
                    "rate × duration_ms gives about {expected:.0} requests (expected at most \
                     2000000; shorten the scenario)"
                ),
            ));
        }
    }

    fn validate_upstream(&self, errors: &mut Vec<FieldError>) {
        let u = &self.upstream;
        check_time(errors, "upstream.latency_ms", u.latency_ms, 0);
        if !(u.latency_jitter.is_finite() && (0.0..1.0).contains(&u.latency_jitter)) {
            errors.push(FieldError::invalid(
                "upstream.latency_jitter",
                u.latency_jitter,
                "a fraction in [0, 1)",
            ));
        }
        check_time(errors, "upstream.error_latency_ms", u.error_latency_ms, 0);
        if !(0.0..=1.0).contains(&u.slow_share) {
            errors.push(FieldError::invalid(
                "upstream.slow_share",
                u.slow_share,
                "a share in [0, 1]",
            ));
        }
        check_time(errors, "upstream.slow_ms", u.slow_ms, 0);
        if u.concurrency == Some(0) {
            errors.push(FieldError::invalid("upstream.concurrency", 0, "at least 1"));
        }
        if u.phases.len() > MAX_PHASES {
            errors.push(FieldError::invalid(
                "upstream.phases",
                std::format_args!("a list of {} phases", u.phases.len()),
                "at most 10000 phases",
            ));
            return;
        }
        for (i, p) in u.phases.iter().enumerate() {
            let f = |name: &str| std::format!("upstream.phases[{i}].{name}");
            check_time(errors, &f("duration_ms"), p.duration_ms, 0);
            let erroring = matches!(p.kind, PhaseKind::Error | PhaseKind::Flapping);
            match (p.kind, p.concurrency) {
                (PhaseKind::Overloaded, None | Some(0)) => errors.push(FieldError::invalid(
                    f("concurrency"),
                    p.concurrency.unwrap_or(0),
                    "at least 1 (the calls an `overloaded` phase serves at once)",
                )),
                (PhaseKind::Overloaded, _) | (_, None) => {}
                (_, Some(c)) => errors.push(FieldError::invalid(
                    f("concurrency"),
                    c,
                    "none: only an `overloaded` phase changes the capacity",
                )),
            }
            if let Some(prob) = p.probability {
                if !erroring {
                    errors.push(FieldError::invalid(
                        f("probability"),
                        prob,
                        "none: only `error` and `flapping` phases fail",
                    ));
                } else if !(prob.is_finite() && (0.0..=1.0).contains(&prob)) {
                    errors.push(FieldError::invalid(
                        f("probability"),
                        prob,
                        "a probability in [0, 1]",
                    ));
                }
            }
            if let Some(status) = p.status {
                if !erroring {
                    errors.push(FieldError::invalid(
                        f("status"),
                        status,
                        "none: only `error` and `flapping` phases fail",
                    ));
                } else if !(400..=599).contains(&status) {
                    errors.push(FieldError::invalid(
                        f("status"),
                        status,
                        "an HTTP error status in 400..=599",
                    ));
                }
            }
            if let Some(q) = p.until_quiet_ms {
                check_time(errors, &f("until_quiet_ms"), q, 1);
            }
            if let Some(ms) = p.retry_after_ms {
                let status = p.error_status();
                if !erroring {
                    errors.push(FieldError::new(
                        f("retry_after_ms"),
                        std::format!(
                            "{ms} given for a `{}` phase, which answers no error to carry it: \
                             only for `error` and `flapping` phases",
                            p.kind.as_str()
                        ),
                    ));
                } else if !Classifier::new().classify_status(status, None).retryable {
                    errors.push(FieldError::new(
                        f("retry_after_ms"),
                        std::format!(
                            "{ms} given with status {status}, which is never retried, so no \
                             client would wait for it; use a retried status (429, 503, 529…)"
                        ),
                    ));
                } else {
                    check_time(errors, &f("retry_after_ms"), ms, 0);
                }
            }
        }
    }
}

/// Checks that `ms` is in `min..=MAX_SCENARIO_TIME_MS`.
fn check_time(errors: &mut Vec<FieldError>, field: &str, ms: u64, min: u64) {
    if ms < min || ms > MAX_SCENARIO_TIME_MS {
        let expected = if min == 0 {
            "at most 86400000 ms, one day"
        } else {
            "an integer in 1..=86400000 ms, one day"
        };
        errors.push(FieldError::invalid(field, ms, expected));
    }
}
