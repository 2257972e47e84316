//! What a run found: per-strategy numbers, a timeline per strategy, and the comparison table.

use std::fmt;
use std::string::String;
use std::vec::Vec;

use serde::Serialize;

use super::scenario::{Composition, Strategy};

/// Per-second counts over a run (bucket `i` covers `[i × bucket_ms, (i + 1) × bucket_ms)`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// Width of a bucket, in ms.
    pub bucket_ms: u64,
    /// Calls that reached the upstream.
    pub calls: Vec<u32>,
    /// Attempts rejected by the breaker (first attempts and retries).
    pub rejected: Vec<u32>,
    /// The breakers' state at the start of each bucket, averaged over the breakers:
    /// 0 = all CLOSED, 0.5 = HALF_OPEN, 1 = all OPEN. Empty without a breaker.
    pub breaker_open: Vec<f64>,
}

impl Timeline {
    pub(crate) fn new(bucket_ms: u64) -> Self {
        Timeline {
            bucket_ms: bucket_ms.max(1),
            ..Timeline::default()
        }
    }

    fn index(&self, now: u64) -> usize {
        (now / self.bucket_ms) as usize
    }

    fn bump(v: &mut Vec<u32>, i: usize) {
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        if let Some(x) = v.get_mut(i) {
            *x = x.saturating_add(1);
        }
    }

    pub(crate) fn add_call(&mut self, now: u64) {
        let i = self.index(now);
        Self::bump(&mut self.calls, i);
    }

    pub(crate) fn add_rejected(&mut self, now: u64) {
        let i = self.index(now);
        Self::bump(&mut self.rejected, i);
    }

    pub(crate) fn set_breaker(&mut self, now: u64, level: f64) {
        let i = self.index(now);
        if self.breaker_open.len() <= i {
            let last = self.breaker_open.last().copied().unwrap_or(0.0);
            self.breaker_open.resize(i + 1, last);
        }
        if let Some(x) = self.breaker_open.get_mut(i) {
            *x = level;
        }
    }

    /// The busiest bucket's upstream calls.
    pub fn peak_calls(&self) -> u32 {
        self.calls.iter().copied().max().unwrap_or(0)
    }

    /// Buckets covered by any series.
    pub fn len(&self) -> usize {
        self.calls
            .len()
            .max(self.rejected.len())
            .max(self.breaker_open.len())
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One strategy's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrategyReport {
    /// Which strategy.
    pub strategy: Strategy,
    /// User requests.
    pub requests: u64,
    /// Calls that reached the upstream (first attempts and retries, probes included).
    pub upstream_calls: u64,
    /// Of which while the upstream was degraded (from the first outage phase to recovery).
    pub upstream_calls_during_outage: u64,
    /// The most upstream calls in one second.
    pub peak_upstream_calls_per_s: u32,
    /// Calls the upstream served after their client had given up (capacity thrown away).
    pub wasted_calls: u64,
    /// Attempts rejected by the breaker: a rejected first attempt makes its request fail fast,
    /// a rejected retry ends its request as failed.
    pub rejected_attempts: u64,
    /// Of those, the attempts the adaptive throttle shed (the breaker CLOSED).
    pub throttled_attempts: u64,
    /// Calls that reached the upstream and failed (an error answer or a time-out): the doomed
    /// calls a breaker or a throttle is there to spare it.
    pub upstream_failures: u64,
    /// Of the rejected attempts, how many the upstream would have served well: each counts the
    /// chance its phase had of succeeding (1 while healthy, 0.7 in a 30 % error phase), summed
    /// and rounded. What a breaker or throttle costs when it refuses too eagerly.
    pub refused_healthy: u64,
    /// Requests that got an answer.
    pub succeeded: u64,
    /// Requests that failed after reaching the upstream at least once.
    pub failed: u64,
    /// Requests that failed fast: the breaker rejected their first attempt, so they never
    /// reached the upstream (the fallback served at once).
    pub failed_fast: u64,
    /// Requests still running when the run was cut (counted as failed in the latencies).
    pub unfinished: u64,
    /// Median user-facing latency (arrival to final answer, retries and waits included).
    pub latency_p50_ms: u64,
    /// 99th percentile user-facing latency.
    pub latency_p99_ms: u64,
    /// When the upstream first degraded.
    pub outage_start_ms: Option<u64>,
    /// When it recovered (its last degraded phase ended); `None` if it never did.
    pub recovered_at_ms: Option<u64>,
    /// How long after recovery users were still affected (a request failed, failed fast, or
    /// answered slower than `affected_latency_ms`), measured to the end of the last such request.
    pub affected_after_recovery_ms: Option<u64>,
    /// Users were still affected when arrivals stopped: the incident outlasted the scenario.
    pub still_affected_at_end: bool,
    /// Times a breaker opened (summed over instances).
    pub breaker_opened: u64,
    /// Per-second series (not in the JSON output).
    #[serde(skip)]
    pub timeline: Timeline,
}

impl StrategyReport {
    /// How long the incident lasted for users: from the outage's start to the end of the last
    /// affected request after recovery (the outage itself if nobody was affected after it).
    pub fn incident_ms(&self) -> Option<u64> {
        let start = self.outage_start_ms?;
        let recovered = self.recovered_at_ms?;
        let after = self.affected_after_recovery_ms.unwrap_or(0);
        Some(recovered.saturating_sub(start).saturating_add(after))
    }
}

/// A scenario's results for every strategy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// Its description.
    pub description: String,
    /// The seed used.
    pub seed: u64,
    /// Application instances.
    pub instances: u32,
    /// How the breaker wraps the retries.
    pub composition: Composition,
    /// The arrival window.
    pub duration_ms: u64,
    /// User requests (the same for every strategy).
    pub requests: u64,
    /// How many of them each instance served (the same for every strategy).
    pub requests_per_instance: Vec<u64>,
    /// The latency above which a successful request counts as affected.
    pub affected_latency_ms: u64,
    /// One entry per strategy, in the scenario's order.
    pub strategies: Vec<StrategyReport>,
    /// With a `hedge` policy: time to first token without and with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hedging: Option<super::HedgingReport>,
}

impl Report {
    /// The strategy's results, if it was run.
    pub fn get(&self, strategy: Strategy) -> Option<&StrategyReport> {
        self.strategies.iter().find(|r| r.strategy == strategy)
    }

    /// The report as pretty JSON (the timelines left out).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// `1.23 s`, `850 ms`, `4m05s`.
pub fn duration(ms: u64) -> String {
    if ms < 1_000 {
        std::format!("{ms} ms")
    } else if ms < 120_000 {
        std::format!("{:.1} s", ms as f64 / 1_000.0)
    } else {
        let s = ms / 1_000;
        std::format!("{}m{:02}s", s / 60, s % 60)
    }
}

const HEADERS: [&str; 11] = [
    "strategy",
    "upstream calls",
    "in outage",
    "peak/s",
    "recovered at",
    "ok",
    "failed",
    "failed fast",
    "p50",
    "p99",
    "affected after recovery",
];

/// `1 instance`, `4 instances (8912–9050 requests each)`.
fn instances(n: u32, per_instance: &[u64]) -> String {
    if n == 1 {
        return String::from("1 instance");
    }
    let min = per_instance.iter().copied().min();
    let max = per_instance.iter().copied().max();
    match (min, max) {
        (Some(min), Some(max)) if min == max => std::format!("{n} instances ({min} requests each)"),
        (Some(min), Some(max)) => std::format!("{n} instances ({min}–{max} requests each)"),
        _ => std::format!("{n} instances"),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.description.is_empty() {
            writeln!(f, "scenario {}", self.scenario)?;
        } else {
            writeln!(f, "scenario {}: {}", self.scenario, self.description)?;
        }
        let first = self.strategies.first();
        let outage = match first.and_then(|r| r.outage_start_ms) {
            Some(start) => std::format!("upstream degraded from {}", duration(start)),
            None => String::from("no outage"),
        };
        writeln!(
            f,
            "{} requests over {}, {}, breaker {}; {}",
            self.requests,
            duration(self.duration_ms),
            instances(self.instances, &self.requests_per_instance),
            match self.composition {
                Composition::PerAttempt => "per attempt: retry(breaker(call))",
                Composition::PerRequest => "per request: breaker(retry(call))",
            },
            outage,
        )?;
        let mut rows: Vec<[String; 11]> = Vec::new();
        for r in &self.strategies {
            let affected = match (r.outage_start_ms, r.recovered_at_ms) {
                (None, _) => String::from("-"),
                (Some(_), None) => String::from("never recovered"),
                (Some(_), Some(t)) if t >= self.duration_ms => {
                    String::from("- (recovered after arrivals stopped)")
                }
                (Some(_), Some(_)) => {
                    let after = duration(r.affected_after_recovery_ms.unwrap_or(0));
                    if r.still_affected_at_end {
                        std::format!("> {after} (to the end)")
                    } else {
                        after
                    }
                }
            };
            rows.push([
                String::from(r.strategy.label()),
                std::format!("{}", r.upstream_calls),
                std::format!("{}", r.upstream_calls_during_outage),
                std::format!("{}", r.peak_upstream_calls_per_s),
                match (r.outage_start_ms, r.recovered_at_ms) {
                    (None, _) => String::from("-"),
                    (Some(_), None) => String::from("never"),
                    (Some(_), Some(t)) => duration(t),
                },
                std::format!("{}", r.succeeded),
                std::format!("{}", r.failed + r.unfinished),
                std::format!("{}", r.failed_fast),
                duration(r.latency_p50_ms),
                duration(r.latency_p99_ms),
                affected,
            ]);
        }
        let mut widths = HEADERS.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: &[&str]| -> fmt::Result {
            for (i, (cell, w)) in cells.iter().zip(widths.iter()).enumerate() {
                let pad = w.saturating_sub(cell.chars().count());
                if i == 0 {
                    write!(f, "{cell}{:pad$}", "")?;
                } else {
                    write!(f, "  {:pad$}{cell}", "")?;
                }
            }
            writeln!(f)
        };
        writeln!(f)?;
        line(f, &HEADERS)?;
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let rule: Vec<&str> = rule.iter().map(String::as_str).collect();
        line(f, &rule)?;
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            line(f, &cells)?;
        }
        writeln!(
            f,
            "upstream calls, in outage, peak/s: calls that reached the upstream"
        )?;
        writeln!(
            f,
            "ok, failed, failed fast: user requests (failed fast: the breaker rejected its first \
             attempt, so no upstream call and the fallback at once)"
        )?;
        let rejected: Vec<String> = self
            .strategies
            .iter()
            .filter(|r| r.strategy.has_breaker())
            .map(|r| std::format!("{} {}", r.strategy.label(), r.rejected_attempts))
            .collect();
        if !rejected.is_empty() {
            writeln!(
                f,
                "attempts rejected by the breaker (first attempts and retries): {}",
                rejected.join(", ")
            )?;
        }
        writeln!(f)?;
        for r in &self.strategies {
            match (r.incident_ms(), r.still_affected_at_end) {
                (Some(ms), false) => writeln!(
                    f,
                    "{:<22} incident for users: {} (outage start to the last affected request)",
                    r.strategy.label(),
                    duration(ms)
                )?,
                (Some(ms), true) => writeln!(
                    f,
                    "{:<22} incident for users: more than {} (still affected when arrivals stopped)",
                    r.strategy.label(),
                    duration(ms)
                )?,
                (None, _) if r.outage_start_ms.is_some() => writeln!(
                    f,
                    "{:<22} the upstream never recovered within the run",
                    r.strategy.label()
                )?,
                (None, _) => {}
            }
        }
        if let Some(h) = &self.hedging {
            writeln!(f)?;
            writeln!(
                f,
                "hedging: {} requests, a second provider like the upstream asked after {}, budget {} % of calls",
                h.requests,
                h.after,
                h.budget * 100.0
            )?;
            writeln!(f, "              first token p50  p99     extra requests")?;
            writeln!(
                f,
                "without hedge  {:>15}  {:<7} 0",
                duration(h.plain_p50_ms),
                duration(h.plain_p99_ms)
            )?;
            writeln!(
                f,
                "with hedge     {:>15}  {:<7} {} ({:.1} %; {} won the race, {} refused by the budget)",
                duration(h.hedged_p50_ms),
                duration(h.hedged_p99_ms),
                h.extra_requests,
                h.extra_share() * 100.0,
                h.hedges_won,
                h.hedges_refused
            )?;
        }
        Ok(())
    }
}
