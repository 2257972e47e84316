//! A retry budget: retries may be at most a share of recent calls, plus a small floor.
//!
//! Maximum attempts bound one call; they do nothing for a fleet. When every request to a
//! rate-limited provider retries three times, the provider sees four times the load that is
//! already too much. A budget (as in Finagle and tower) lets retries through only while they are
//! a small fraction (`retry_percent`) of the calls made over the last `ttl_ms`, plus a floor of
//! `min_per_sec` retries a second so that a quiet service can still retry at all.

use core::num::NonZeroU64;

use crate::clock::Timestamp;
use crate::error::ConfigError;

const SLOTS: usize = 10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    index: u64,
    deposits: u32,
    withdrawals: u32,
}

/// Retries limited to a ratio of calls over a sliding window (10 slots of `ttl_ms / 10`).
#[derive(Clone, Debug, PartialEq)]
pub struct RetryBudget {
    ttl_ms: u64,
    min_per_sec: u32,
    retry_percent: f64,
    slots: [Slot; SLOTS],
    last_now: u64,
}

/// The shortest window a [`RetryBudget`] counts calls over, in milliseconds.
pub const MIN_BUDGET_TTL_MS: u64 = 1_000;
/// The longest window a [`RetryBudget`] counts calls over, in milliseconds.
pub const MAX_BUDGET_TTL_MS: u64 = 60_000;
/// The largest share of calls a [`RetryBudget`] lets be retries, in percent.
pub const MAX_RETRY_PERCENT: f64 = 1_000.0;

impl RetryBudget {
    /// A budget letting retries be `retry_percent` % of the calls of the last `ttl_ms`
    /// (1 000..=60 000 ms), plus `min_per_sec` retries per second of the window.
    /// tower's defaults are `RetryBudget::new(10_000, 10, 20.0)`.
    pub fn new(ttl_ms: u64, min_per_sec: u32, retry_percent: f64) -> Result<Self, ConfigError> {
        if !(MIN_BUDGET_TTL_MS..=MAX_BUDGET_TTL_MS).contains(&ttl_ms) {
            return Err(ConfigError::new(
                "budget.ttl_ms",
                ttl_ms as f64,
                "an integer in 1000..=60000",
            ));
        }
        if !(0.0..=MAX_RETRY_PERCENT).contains(&retry_percent) {
            return Err(ConfigError::new(
                "budget.retry_percent",
                retry_percent,
                "a percentage in [0, 1000]",
            ));
        }
        Ok(RetryBudget {
            ttl_ms,
            min_per_sec,
            retry_percent,
            slots: [Slot::default(); SLOTS],
            last_now: 0,
        })
    }

    /// Records one call (a first attempt) at `now`.
    pub fn deposit(&mut self, now: Timestamp) {
        let slot = self.slot(now);
        slot.deposits = slot.deposits.saturating_add(1);
    }

    /// Takes one retry from the budget if it has one; `false` means do not retry.
    pub fn try_withdraw(&mut self, now: Timestamp) -> bool {
        if self.available(now) < 1.0 {
            return false;
        }
        let slot = self.slot(now);
        slot.withdrawals = slot.withdrawals.saturating_add(1);
        true
    }

    /// Retries the budget would allow at `now` (may be fractional).
    pub fn available(&self, now: Timestamp) -> f64 {
        let now = now.0.max(self.last_now);
        let index = now / self.width();
        let (mut deposits, mut withdrawals) = (0u64, 0u64);
        for s in &self.slots {
            if index.saturating_sub(s.index) < SLOTS as u64 && s.index <= index {
                deposits += s.deposits as u64;
                withdrawals += s.withdrawals as u64;
            }
        }
        let floor = self.min_per_sec as f64 * self.ttl_ms as f64 / 1_000.0;
        floor + deposits as f64 * self.retry_percent / 100.0 - withdrawals as f64
    }

    // A slot's width: `ttl_ms / 10`, at least 100 once `new` has checked `ttl_ms`. A `NonZeroU64`,
    // so that dividing by it needs no zero check (whose panic path would reach the .wasm).
    fn width(&self) -> NonZeroU64 {
        NonZeroU64::new(self.ttl_ms / SLOTS as u64).unwrap_or(NonZeroU64::MIN)
    }

    fn slot(&mut self, now: Timestamp) -> &mut Slot {
        self.last_now = self.last_now.max(now.0);
        let index = self.last_now / self.width();
        let i = (index % SLOTS as u64) as usize;
        let slot = &mut self.slots[i];
        if slot.index != index {
            *slot = Slot {
                index,
                ..Slot::default()
            };
        }
        slot
    }
}
