//! An outage simulator: replay a scenario against four ways of calling a flaky upstream and see
//! what each does to the upstream and to the users. Deterministic and instant: a discrete-event
//! loop over simulated epoch milliseconds drives the real [`Breaker`](crate::Breaker),
//! [`RetryPolicy`](crate::RetryPolicy) and [`RetryBudget`](crate::RetryBudget); nothing sleeps,
//! and every random draw comes from [`SplitMix64`](crate::SplitMix64) streams seeded by the
//! scenario, so the same scenario always gives the same report.
//!
//! ```
//! use breakwater::sim::{self, Strategy};
//!
//! let report = sim::run(&sim::builtin("agent-tool").unwrap()).unwrap();
//! assert_eq!(report.get(Strategy::SharedBreaker).unwrap().upstream_calls, 11);
//! assert_eq!(report.get(Strategy::RetryOnly).unwrap().upstream_calls, 21);
//! ```
//!
//! # Strategies
//! - **no protection**: one attempt per request.
//! - **retry only**: the retry policy (and the budget, if any), no breaker.
//! - **breaker per instance**: every instance has its own breaker (seeded `seed + i`), so each
//!   must discover the outage, and probe for the recovery, on its own.
//! - **shared breaker**: one breaker for all instances, as the Durable Object host gives. Its
//!   round trip is not modelled (it costs no time).
//!
//! The breaker wraps the retries as the scenario's [`Composition`] says: `per_attempt`
//! (`retry(breaker(call))`: every attempt asks and reports; a refused attempt ends the request at
//! once, the host serving its fallback) or `per_request` (`breaker(retry(call))`: one admission per
//! request, the whole retry run reported as one outcome, as in the agent-tool scenario).
//!
//! # The model
//! - **Users** send requests at Poisson (or evenly spaced) times during `duration_ms`, or at
//!   explicit times; user `u` is served by instance `u % instances`. With `arrivals_per_s` or
//!   `at_ms` and no `users`, every request is its own user, so the requests go round robin over
//!   the instances, as behind a load balancer. The arrivals are the same for every strategy.
//!   Arrivals are open-loop: a user does not wait for an answer before the next request (new
//!   users keep arriving while others wait).
//! - **The client** gives up on a call after `call_timeout_ms` (a timeout is a retryable failure).
//!   Errors are classified by the core [`Classifier`](crate::Classifier): 429, 529, 503… are
//!   retried and count as breaker failures; another 4xx is neither. Retry delays come from the
//!   policy, which also receives the phase's `retry_after_ms` as the server's Retry-After (it
//!   then waits at least that long, or gives up if it exceeds `max_retry_after_ms`); a retry
//!   budget, if configured, is one per instance.
//! - **The upstream** serves `concurrency` calls at once (unlimited if unset), each for
//!   `latency_ms` ± `latency_jitter`; calls beyond that wait in a FIFO queue (bounded by
//!   `queue_limit`, beyond which a call gets a 529 at once). A call whose client timed out is
//!   still served when its turn comes (wasted capacity) unless `drop_abandoned`. Its failure trace
//!   is a list of phases: `healthy`; `error` / `flapping` (a share of the calls received gets the
//!   phase's status, with its Retry-After if it has one, after `error_latency_ms`; the rest are
//!   served); `stalled` (calls queue and nothing is served, so clients time out; when the phase
//!   ends the queue, abandoned calls included, is served in order). A phase with `until_quiet_ms`
//!   lasts until the upstream has gone that long without a call: an overloaded service that
//!   recovers only once callers back off. After the last phase the upstream is healthy.
//! - **Words.** A request *failed fast* when the breaker refused its first attempt: no upstream
//!   call, the fallback served at once. Every attempt the breaker refuses, first or retry, is an
//!   attempt *rejected by the breaker* (a rejected retry ends its request as *failed*).
//! - **Recovery** is when the last degraded phase ends (it may differ per strategy with
//!   `until_quiet_ms`). A request is *affected* if it failed, failed fast, or took longer than
//!   `affected_latency_ms`; *affected after recovery* runs from recovery to the end of the last
//!   affected request. So queued backlog, retry storms and a breaker still open after the recovery
//!   all show up in it.
//!
//! - **Hedging.** With a `[hedge]` section (the core's [`HedgeConfig`](crate::HedgeConfig)),
//!   the report adds a table: each request's time to first token from the upstream (its
//!   `latency_ms`, or `slow_ms` for the heavy tail's `slow_share` of calls) and from a second,
//!   independent provider drawn the same way, without and with a hedge on it. The core's
//!   [`Hedge`](crate::Hedge) sets the delay and spends the budget; phases and capacity are left
//!   out of that table (the upstream is up, only slow).
//!
//! Amplification is what makes the comparison interesting: retries multiply the calls an ailing
//! upstream receives; with finite `concurrency`, calls that time out while queued still take
//! capacity, so after a stall the backlog (and the retries it provokes) can keep every call
//! slower than the timeout long after the upstream itself is fine — a metastable failure that only
//! shedding load (a breaker, a budget, or the users leaving) ends.

mod engine;
mod hedge;
mod report;
mod scenario;
mod svg;

use std::fmt;
use std::string::String;
use std::vec::Vec;

pub use hedge::HedgingReport;
pub use report::{duration, Report, StrategyReport, Timeline};
pub use scenario::{
    Arrival, BudgetSpec, Composition, FieldError, Format, Load, Phase, PhaseKind, Scenario,
    ScenarioError, Strategy, Upstream, MAX_REQUESTS, MAX_SCENARIO_TIME_MS,
};
pub use svg::render_svg;

use crate::error::ConfigError;

/// Why a simulation could not run or be drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// The scenario is invalid; the error names the field.
    Scenario(ScenarioError),
    /// The chart could not be drawn.
    Chart(String),
}

impl SimError {
    pub(crate) fn config(prefix: &str, e: ConfigError) -> Self {
        SimError::Scenario(ScenarioError::from_config(prefix, e))
    }
}

impl From<ScenarioError> for SimError {
    fn from(e: ScenarioError) -> Self {
        SimError::Scenario(e)
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Scenario(e) => e.fmt(f),
            SimError::Chart(e) => write!(f, "could not draw the chart: {e}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Scenario(e) => Some(e),
            SimError::Chart(_) => None,
        }
    }
}

/// The built-in scenarios: name and TOML source (the files in `scenarios/`).
pub const BUILTINS: [(&str, &str); 6] = [
    ("hung-llm", include_str!("../../scenarios/hung-llm.toml")),
    (
        "agent-tool",
        include_str!("../../scenarios/agent-tool.toml"),
    ),
    (
        "rate-limited",
        include_str!("../../scenarios/rate-limited.toml"),
    ),
    ("degraded", include_str!("../../scenarios/degraded.toml")),
    (
        "overloaded",
        include_str!("../../scenarios/overloaded.toml"),
    ),
    (
        "heavy-tail",
        include_str!("../../scenarios/heavy-tail.toml"),
    ),
];

/// The TOML source of a built-in scenario.
pub fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// A built-in scenario, parsed and validated.
pub fn builtin(name: &str) -> Option<Scenario> {
    builtin_source(name).and_then(|s| Scenario::parse(s, Format::Toml).ok())
}

/// Replays `scenario` once per strategy.
pub fn run(scenario: &Scenario) -> Result<Report, SimError> {
    scenario.validate()?;
    let arrivals = engine::arrivals(scenario);
    let mut requests_per_instance = std::vec![0u64; scenario.instances as usize];
    for a in &arrivals {
        if let Some(n) = requests_per_instance.get_mut(a.instance(scenario.instances)) {
            *n += 1;
        }
    }
    let mut strategies = Vec::with_capacity(scenario.strategies.len());
    for strategy in &scenario.strategies {
        strategies.push(engine::run_strategy(scenario, *strategy, &arrivals)?);
    }
    let hedging = match &scenario.hedge {
        Some(config) => Some(hedge::run(scenario, config, &arrivals)?),
        None => None,
    };
    Ok(Report {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        instances: scenario.instances,
        composition: scenario.composition,
        duration_ms: scenario.duration_ms,
        requests: arrivals.len() as u64,
        requests_per_instance,
        affected_latency_ms: scenario.affected_latency(),
        strategies,
        hedging,
    })
}
