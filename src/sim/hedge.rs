//! The hedging table: each request's time to first token from the upstream, and from a second,
//! independent provider drawn the same way (a backup of the same kind), without and with the
//! scenario's [`Hedge`] policy. The policy is the core's: it sets the delay (`auto` learns it
//! from the times it sees) and spends its budget. The upstream is taken as healthy and unlimited
//! here (phases and capacity are the main table's); each request's race is settled as it
//! arrives, so the policy learns from a request before the next one begins.

use std::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::hedge::{Hedge, HedgeConfig};
use crate::rng::SplitMix64;

use super::engine::{first_token, percentile, ArrivalAt};
use super::scenario::Scenario;
use super::SimError;

const STREAM_PRIMARY: u64 = 0x4ED6_E000_0000_0001;
const STREAM_BACKUP: u64 = 0x4ED6_E000_0000_0002;

/// Time to first token without and with hedging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HedgingReport {
    /// The policy the hedged run used.
    pub after: std::string::String,
    /// The budget: the share of calls that may be hedged.
    pub budget: f64,
    /// Requests (the same in both runs).
    pub requests: u64,
    /// Without hedging: median time to first token, ms.
    pub plain_p50_ms: u64,
    /// Without hedging: 99th percentile, ms.
    pub plain_p99_ms: u64,
    /// With hedging: median, ms.
    pub hedged_p50_ms: u64,
    /// With hedging: 99th percentile, ms.
    pub hedged_p99_ms: u64,
    /// Extra requests: the hedges started (each one request to the backup).
    pub extra_requests: u64,
    /// Hedges that answered first.
    pub hedges_won: u64,
    /// Hedges the budget refused.
    pub hedges_refused: u64,
}

impl HedgingReport {
    /// Extra requests as a share of requests.
    pub fn extra_share(&self) -> f64 {
        self.extra_requests as f64 / self.requests.max(1) as f64
    }
}

/// Races every request's two providers under `config`.
pub(crate) fn run(
    s: &Scenario,
    config: &HedgeConfig,
    arrivals: &[ArrivalAt],
) -> Result<HedgingReport, SimError> {
    let mut hedge = Hedge::new(*config).map_err(|e| SimError::config("hedge", e))?;
    let mut primary_rng = SplitMix64::new(s.seed ^ STREAM_PRIMARY);
    let mut backup_rng = SplitMix64::new(s.seed ^ STREAM_BACKUP);
    let mut plain = Vec::with_capacity(arrivals.len());
    let mut hedged = Vec::with_capacity(arrivals.len());
    for _ in arrivals {
        let primary = first_token(&s.upstream, &mut primary_rng);
        let backup = first_token(&s.upstream, &mut backup_rng);
        plain.push(primary);
        hedge.call();
        let after = hedge.after_ms(0);
        if primary <= after || !hedge.try_start(true) {
            hedge.progress(0, primary);
            hedged.push(primary);
            continue;
        }
        let backup_at = after.saturating_add(backup);
        let won = backup_at < primary;
        let first = primary.min(backup_at);
        // The loser is aborted when the winner shows progress: its time so far is a lower bound.
        hedge.progress(0, first);
        hedge.progress(1, first - after);
        hedge.finish(won, 0);
        hedged.push(first);
    }
    plain.sort_unstable();
    hedged.sort_unstable();
    let stats = hedge.stats();
    Ok(HedgingReport {
        after: match config.after {
            crate::hedge::HedgeAfter::Auto => std::format!(
                "auto (p{} of the tier's times, {}–{} ms)",
                config.quantile * 100.0,
                config.min_after_ms,
                config.max_after_ms
            ),
            crate::hedge::HedgeAfter::Millis(ms) => std::format!("{ms} ms"),
        },
        budget: config.budget,
        requests: arrivals.len() as u64,
        plain_p50_ms: percentile(&plain, 50.0),
        plain_p99_ms: percentile(&plain, 99.0),
        hedged_p50_ms: percentile(&hedged, 50.0),
        hedged_p99_ms: percentile(&hedged, 99.0),
        extra_requests: stats.started,
        hedges_won: stats.won,
        hedges_refused: stats.refused,
    })
}
