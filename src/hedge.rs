//! Hedged requests: when the tier asked first has shown no progress after a while, ask the next
//! tier as well and take whichever answers first, within a budget.
//!
//! A heavy-tailed provider answers most calls in a second and a few in tens of seconds; waiting
//! for those few is what sets the 99th percentile. Asking a second provider once the first has
//! been slow for longer than most of its calls cuts that tail, at the cost of the extra
//! requests. [`Hedge`] decides the two things the host cannot decide alone:
//!
//! - **when** ([`Hedge::after_ms`]): a fixed delay, or `auto`, a quantile (default the 95th) of
//!   the tier's recent times to first progress, clamped to `[min_after_ms, max_after_ms]`;
//! - **whether** ([`Hedge::try_start`]): a token bucket refilled by calls (`budget` of a token
//!   each) and spent by hedges, holding at most [`HEDGE_BURST`] tokens and starting empty, so that
//!   at every moment `hedges ≤ budget × calls`; a partial outage, which makes every call slow,
//!   cannot hedge every call. The host says whether both tiers are calm (CLOSED, not shedding):
//!   a HALF_OPEN tier's calls are probes, and a shedding one is already overloaded.
//!
//! The host times the calls, aborts the loser (a loser is cancelled, not failed: its breaker
//! does not count it) and reports what it saw. One hedge per call at most.
//!
//! ```
//! use breakwater::{Hedge, HedgeAfter, HedgeConfig};
//! let mut hedge = Hedge::new(HedgeConfig { after: HedgeAfter::Millis(800), ..HedgeConfig::default() }).unwrap();
//! for _ in 0..9 {
//!     hedge.call();
//! }
//! assert!(!hedge.try_start(true)); // 9 calls at 10 %: not yet a whole token
//! hedge.call();
//! assert_eq!(hedge.after_ms(0), 800);
//! assert!(!hedge.try_start(false)); // a tier HALF_OPEN or shedding: no hedge, no token spent
//! assert!(hedge.try_start(true));
//! assert!(!hedge.try_start(true));
//! ```

use crate::breaker::MAX_DURATION_MS;
use crate::error::ConfigError;

/// The most tokens the budget holds: after a quiet stretch, at most this many calls in a row may
/// be hedged.
pub const HEDGE_BURST: u32 = 10;
/// The tiers whose times a [`Hedge`] keeps apart (`after_ms` of a tier past these is `max_after_ms`
/// under `auto`).
pub const MAX_HEDGE_TIERS: usize = 8;
/// Samples a tier needs before `auto` trusts its quantile (before that: `max_after_ms`).
pub const HEDGE_MIN_SAMPLES: u32 = 20;

/// A token, in millionths.
const TOKEN: u32 = 1_000_000;
/// Samples per half of a tier's sketch: the quantile is over the last 128 to 256.
const HALF: u16 = 128;
/// The sketch's buckets: exact below 8 ms, then four per power of two up to 2^31 ms.
const BUCKETS: usize = 8 + 4 * 29;

/// When to hedge: `"auto"` or `{ millis = 800 }` in configuration files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum HedgeAfter {
    /// The tier's `quantile` of its recent times to first progress, clamped to
    /// `[min_after_ms, max_after_ms]`; `max_after_ms` until it has [`HEDGE_MIN_SAMPLES`].
    #[default]
    Auto,
    /// A fixed delay in ms (1..=[`MAX_DURATION_MS`]).
    Millis(u64),
}

/// A hedging policy's settings. Every field has a default.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct HedgeConfig {
    /// When a call with no progress is hedged. Default [`HedgeAfter::Auto`].
    pub after: HedgeAfter,
    /// The share of calls that may be hedged, in (0, 1]. Default 0.1.
    pub budget: f64,
    /// `auto`: the quantile of the recent times to first progress, in [0.5, 0.999]. Default 0.95.
    pub quantile: f64,
    /// `auto`: the shortest delay, ms (≥ 1). Default 100.
    pub min_after_ms: u64,
    /// `auto`: the longest delay, and the delay until the tier has enough samples, ms
    /// (`min_after_ms`..=[`MAX_DURATION_MS`]). Default 10 000.
    pub max_after_ms: u64,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            after: HedgeAfter::Auto,
            budget: 0.1,
            quantile: 0.95,
            min_after_ms: 100,
            max_after_ms: 10_000,
        }
    }
}

impl HedgeConfig {
    /// Checks every field, naming the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let HedgeAfter::Millis(ms) = self.after {
            if !(1..=MAX_DURATION_MS).contains(&ms) {
                return Err(ConfigError::new(
                    "after.millis",
                    ms as f64,
                    "an integer in 1..=MAX_DURATION_MS",
                ));
            }
        }
        if !(self.budget > 0.0 && self.budget <= 1.0) {
            return Err(ConfigError::new("budget", self.budget, "a share in (0, 1]"));
        }
        if !(0.5..=0.999).contains(&self.quantile) {
            return Err(ConfigError::new(
                "quantile",
                self.quantile,
                "a number in [0.5, 0.999]",
            ));
        }
        if !(1..=MAX_DURATION_MS).contains(&self.min_after_ms) {
            return Err(ConfigError::new(
                "min_after_ms",
                self.min_after_ms as f64,
                "an integer in 1..=MAX_DURATION_MS",
            ));
        }
        if !(self.min_after_ms..=MAX_DURATION_MS).contains(&self.max_after_ms) {
            return Err(ConfigError::new(
                "max_after_ms",
                self.max_after_ms as f64,
                "an integer in min_after_ms..=MAX_DURATION_MS",
            ));
        }
        Ok(())
    }
}

/// What a [`Hedge`] has done, since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HedgeStats {
    /// Calls made (each refilled the budget).
    pub calls: u64,
    /// Hedges started: a second tier asked while the first was still running.
    pub started: u64,
    /// Hedges that answered first (the tier asked first lost the race).
    pub won: u64,
    /// Hedges that lost the race (the tier asked first answered first).
    pub lost: u64,
    /// Hedges not started because the budget was spent.
    pub refused: u64,
    /// Hedges not started because a tier was HALF_OPEN or shedding.
    pub held: u64,
    /// The losers' estimated input tokens: what the races cost beyond the answers.
    pub extra_input_tokens: u64,
}

/// A tier's recent times to first progress, as a log-scale histogram in two halves: the half
/// being filled and the last full one.
#[derive(Clone, Debug, PartialEq)]
struct Sketch {
    now: [u16; BUCKETS],
    before: [u16; BUCKETS],
    filled: u16,
    held: u16,
}

impl Sketch {
    const EMPTY: Sketch = Sketch {
        now: [0; BUCKETS],
        before: [0; BUCKETS],
        filled: 0,
        held: 0,
    };

    fn record(&mut self, ms: u64) {
        if self.filled == HALF {
            self.before = self.now;
            self.held = HALF;
            self.now = [0; BUCKETS];
            self.filled = 0;
        }
        self.now[bucket(ms)] += 1;
        self.filled += 1;
    }

    fn samples(&self) -> u32 {
        self.filled as u32 + self.held as u32
    }

    /// The upper bound of the bucket holding the `q` quantile.
    fn quantile(&self, q: f64) -> u64 {
        let total = self.samples();
        // The rank of the quantile, 1-based: the smallest n with n ≥ q × total.
        let exact = q * total as f64;
        let mut rank = exact as u32;
        if (rank as f64) < exact {
            rank += 1;
        }
        let rank = rank.clamp(1, total.max(1));
        let mut seen = 0u32;
        for (i, (a, b)) in self.now.iter().zip(self.before.iter()).enumerate() {
            seen += *a as u32 + *b as u32;
            if seen >= rank {
                return upper(i);
            }
        }
        upper(BUCKETS - 1)
    }
}

/// The bucket of `ms`: itself below 8, then four per power of two.
fn bucket(ms: u64) -> usize {
    if ms < 8 {
        return ms as usize;
    }
    let e = (63 - ms.leading_zeros()) as usize; // ≥ 3
    let sub = ((ms >> (e - 2)) & 3) as usize;
    (8 + (e - 3) * 4 + sub).min(BUCKETS - 1)
}

/// The largest value in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let e = (i - 8) / 4 + 3;
    let sub = ((i - 8) % 4) as u64;
    ((4 + sub + 1) << (e - 2)) - 1
}

/// A hedging policy: the budget and each tier's times to first progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Hedge {
    config: HedgeConfig,
    per_call: u32,
    tokens: u32,
    tiers: [Sketch; MAX_HEDGE_TIERS],
    stats: HedgeStats,
}

impl Hedge {
    /// A policy with these settings and an empty budget.
    pub fn new(config: HedgeConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Hedge {
            config,
            // At least one millionth: a budget of 1e-7 still refills, slowly.
            per_call: ((config.budget * TOKEN as f64) as u32).clamp(1, TOKEN),
            tokens: 0,
            tiers: [Sketch::EMPTY; MAX_HEDGE_TIERS],
            stats: HedgeStats::default(),
        })
    }

    /// The settings it runs under.
    pub fn config(&self) -> &HedgeConfig {
        &self.config
    }

    /// A call begins: the budget gains `budget` of a token (up to [`HEDGE_BURST`]).
    pub fn call(&mut self) {
        self.stats.calls += 1;
        self.tokens = (self.tokens + self.per_call).min(HEDGE_BURST * TOKEN);
    }

    /// How long a call to `tier` may go without progress before it is hedged, ms.
    pub fn after_ms(&self, tier: usize) -> u64 {
        let c = &self.config;
        match c.after {
            HedgeAfter::Millis(ms) => ms,
            HedgeAfter::Auto => match self.tiers.get(tier) {
                Some(s) if s.samples() >= HEDGE_MIN_SAMPLES => {
                    s.quantile(c.quantile).clamp(c.min_after_ms, c.max_after_ms)
                }
                _ => c.max_after_ms,
            },
        }
    }

    /// Starts a hedge if both tiers are `calm` (CLOSED and not shedding) and the budget holds a
    /// token, which it spends.
    pub fn try_start(&mut self, calm: bool) -> bool {
        if !calm {
            self.stats.held += 1;
            return false;
        }
        if self.tokens < TOKEN {
            self.stats.refused += 1;
            return false;
        }
        self.tokens -= TOKEN;
        self.stats.started += 1;
        true
    }

    /// A call to `tier` showed its first progress `ms` after it began; a loser's time when it
    /// was aborted (a lower bound) counts too.
    pub fn progress(&mut self, tier: usize, ms: u64) {
        if let Some(s) = self.tiers.get_mut(tier) {
            s.record(ms);
        }
    }

    /// A hedged call ended: the hedge answered first (`won`) or the tier asked first did; the
    /// loser's estimated input tokens are what the race cost.
    pub fn finish(&mut self, won: bool, extra_input_tokens: u64) {
        if won {
            self.stats.won += 1;
        } else {
            self.stats.lost += 1;
        }
        self.stats.extra_input_tokens = self
            .stats
            .extra_input_tokens
            .saturating_add(extra_input_tokens);
    }

    /// Tokens in the budget now (hedges it would allow in a row).
    pub fn tokens(&self) -> f64 {
        self.tokens as f64 / TOKEN as f64
    }

    /// What it has done.
    pub fn stats(&self) -> HedgeStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_and_grow_by_a_quarter_at_most() {
        for ms in (0..100_000u64).chain([1 << 30, (1 << 31) - 1, u64::MAX]) {
            let b = bucket(ms);
            assert!(b < BUCKETS);
            if b < BUCKETS - 1 {
                assert!(upper(b) >= ms, "{ms} in {b}");
                assert!(b == 0 || upper(b - 1) < ms, "{ms} in {b}");
                assert!(
                    upper(b) as f64 <= (ms as f64 * 1.25).max(7.0),
                    "{ms}: {}",
                    upper(b)
                );
            }
        }
    }

    #[test]
    fn auto_waits_for_samples_then_follows_the_quantile_within_its_clamp() {
        let mut h = Hedge::new(HedgeConfig::default()).unwrap();
        assert_eq!(h.after_ms(0), 10_000);
        for i in 0..100u64 {
            h.progress(0, 500 + i * 10); // 500..1490 ms
        }
        let p95 = h.after_ms(0);
        assert!((1_440..=1_800).contains(&p95), "{p95}");
        assert_eq!(h.after_ms(1), 10_000, "tiers apart");
        for _ in 0..300 {
            h.progress(1, 20);
        }
        assert_eq!(h.after_ms(1), 100, "clamped to min_after_ms");
        // The old half ages out: 256 slow samples replace the fast ones.
        for _ in 0..256 {
            h.progress(1, 60_000);
        }
        assert_eq!(h.after_ms(1), 10_000, "clamped to max_after_ms");
        assert_eq!(h.after_ms(MAX_HEDGE_TIERS), 10_000);
        h.progress(MAX_HEDGE_TIERS, 5); // ignored, no panic
    }

    #[test]
    fn every_setting_is_checked_by_name() {
        let bad = [
            (
                HedgeConfig {
                    budget: 0.0,
                    ..HedgeConfig::default()
                },
                "budget",
            ),
            (
                HedgeConfig {
                    budget: f64::NAN,
                    ..HedgeConfig::default()
                },
                "budget",
            ),
            (
                HedgeConfig {
                    budget: 1.5,
                    ..HedgeConfig::default()
                },
                "budget",
            ),
            (
                HedgeConfig {
                    quantile: 1.0,
                    ..HedgeConfig::default()
                },
                "quantile",
            ),
            (
                HedgeConfig {
                    min_after_ms: 0,
                    ..HedgeConfig::default()
                },
                "min_after_ms",
            ),
            (
                HedgeConfig {
                    max_after_ms: 50,
                    ..HedgeConfig::default()
                },
                "max_after_ms",
            ),
            (
                HedgeConfig {
                    after: HedgeAfter::Millis(0),
                    ..HedgeConfig::default()
                },
                "after.millis",
            ),
        ];
        for (config, field) in bad {
            let e = Hedge::new(config).unwrap_err();
            if !cfg!(feature = "terse") {
                assert_eq!(e.field, field);
            }
        }
    }
}
