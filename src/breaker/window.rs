//! The trip rules' memory: what a CLOSED breaker remembers of recent calls.
//!
//! Each rule gets the smallest structure that answers it exactly, allocated once when the breaker
//! is built; recording an outcome never allocates.

use alloc::vec;
use alloc::vec::Vec;

use super::config::{TripRule, Window, TIME_WINDOW_BUCKETS};

/// One recorded call as the trip rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    pub failure: bool,
    pub slow: bool,
}

/// A time bucket of a rate window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Bucket {
    /// `now / bucket_ms` of the calls it holds.
    pub index: u64,
    /// Calls recorded.
    pub calls: u32,
    /// Of which failed.
    pub failures: u32,
    /// Of which slow.
    pub slow: u32,
}

/// The memory of a trip rule, as plain data (also the snapshot form).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Counter {
    /// Failures in a row.
    Consecutive {
        /// The current run of failures.
        failures: u32,
    },
    /// Times of the most recent failures, oldest first once rotated by `head`.
    FailureTimes {
        /// Ring of failure times (capacity: the threshold).
        times: Vec<u64>,
        /// Index of the oldest entry once the ring is full.
        head: u32,
    },
    /// The last `n` calls, as bits: 1 = failure, 2 = slow.
    Calls {
        /// Ring of recorded calls (capacity: the window size).
        ring: Vec<u8>,
        /// Index of the oldest entry once the ring is full.
        head: u32,
        /// Failures in the ring.
        failures: u32,
        /// Slow calls in the ring.
        slow: u32,
    },
    /// Time buckets of a time-based rate window.
    Buckets {
        /// Always [`TIME_WINDOW_BUCKETS`] buckets, indexed by `index % TIME_WINDOW_BUCKETS`.
        buckets: Vec<Bucket>,
    },
}

const FAILURE_BIT: u8 = 1;
const SLOW_BIT: u8 = 2;

impl Counter {
    /// Empty memory for `rule`.
    pub(crate) fn for_rule(rule: &TripRule) -> Counter {
        match *rule {
            TripRule::ConsecutiveFailures { .. } => Counter::Consecutive { failures: 0 },
            TripRule::FailuresInWindow { threshold, .. } => Counter::FailureTimes {
                times: Vec::with_capacity(threshold as usize),
                head: 0,
            },
            TripRule::FailureRate { window, .. } | TripRule::SlowCallRate { window, .. } => {
                match window {
                    Window::Calls(n) => Counter::Calls {
                        ring: Vec::with_capacity(n as usize),
                        head: 0,
                        failures: 0,
                        slow: 0,
                    },
                    Window::Millis(_) => Counter::Buckets {
                        buckets: vec![Bucket::default(); TIME_WINDOW_BUCKETS],
                    },
                }
            }
        }
    }

    /// Forgets everything without giving back the memory.
    pub(crate) fn clear(&mut self) {
        match self {
            Counter::Consecutive { failures } => *failures = 0,
            Counter::FailureTimes { times, head } => {
                times.clear();
                *head = 0;
            }
            Counter::Calls {
                ring,
                head,
                failures,
                slow,
            } => {
                ring.clear();
                *head = 0;
                *failures = 0;
                *slow = 0;
            }
            Counter::Buckets { buckets } => buckets.fill(Bucket::default()),
        }
    }

    /// Records one call at `now` and says whether `rule` now calls for opening.
    pub(crate) fn record(
        &mut self,
        rule: &TripRule,
        now: u64,
        sample: Sample,
        cache: &mut BucketCache,
    ) -> bool {
        match (self, *rule) {
            (Counter::Consecutive { failures }, TripRule::ConsecutiveFailures { threshold }) => {
                if sample.failure {
                    *failures = failures.saturating_add(1);
                    *failures >= threshold
                } else {
                    *failures = 0;
                    false
                }
            }
            (
                Counter::FailureTimes { times, head },
                TripRule::FailuresInWindow {
                    threshold,
                    window_ms,
                },
            ) => {
                if !sample.failure {
                    return false;
                }
                let cap = threshold as usize;
                if times.len() < cap {
                    times.push(now);
                    // Not full yet: fewer than `threshold` failures ever recorded.
                    return times.len() == cap
                        && times
                            .first()
                            .is_some_and(|&t| now.saturating_sub(t) < window_ms);
                }
                let h = *head as usize;
                if let Some(slot) = times.get_mut(h) {
                    *slot = now;
                }
                *head = next_index(h, cap);
                // The oldest of the last `threshold` failures now sits at the new head.
                times
                    .get(*head as usize)
                    .is_some_and(|&t| now.saturating_sub(t) < window_ms)
            }
            (
                Counter::Calls {
                    ring,
                    head,
                    failures,
                    slow,
                },
                TripRule::FailureRate {
                    threshold_percent,
                    minimum_calls,
                    window: Window::Calls(n),
                }
                | TripRule::SlowCallRate {
                    threshold_percent,
                    minimum_calls,
                    window: Window::Calls(n),
                    ..
                },
            ) => {
                let bits = (sample.failure as u8 * FAILURE_BIT) | (sample.slow as u8 * SLOW_BIT);
                let cap = n as usize;
                if ring.len() < cap {
                    ring.push(bits);
                } else {
                    let h = *head as usize;
                    if let Some(slot) = ring.get_mut(h) {
                        let old = core::mem::replace(slot, bits);
                        *failures = failures.saturating_sub((old & FAILURE_BIT) as u32);
                        *slow = slow.saturating_sub(((old & SLOW_BIT) >> 1) as u32);
                    }
                    *head = next_index(h, cap);
                }
                *failures += sample.failure as u32;
                *slow += sample.slow as u32;
                let bad = if rule.slow_call_ms().is_some() {
                    *slow
                } else {
                    *failures
                };
                rate_reached(
                    ring.len() as u32,
                    bad,
                    minimum_calls.min(n),
                    threshold_percent,
                )
            }
            (
                Counter::Buckets { buckets },
                TripRule::FailureRate {
                    threshold_percent,
                    minimum_calls,
                    window: Window::Millis(ms),
                }
                | TripRule::SlowCallRate {
                    threshold_percent,
                    minimum_calls,
                    window: Window::Millis(ms),
                    ..
                },
            ) => {
                let width = bucket_width(ms);
                let index = if cache.valid && now >= cache.start && now < cache.end {
                    cache.index
                } else {
                    cache.rebuild(buckets, now / width, width)
                };
                let slot = (index % TIME_WINDOW_BUCKETS as u64) as usize;
                if let Some(b) = buckets.get_mut(slot) {
                    if b.index != index || b.calls == 0 {
                        // The slot held an older bucket; if it was still counted (only possible
                        // for a bucket from the future), take it out of the totals.
                        if in_window(b, index) {
                            cache.calls = cache.calls.saturating_sub(b.calls);
                            cache.failures = cache.failures.saturating_sub(b.failures);
                            cache.slow = cache.slow.saturating_sub(b.slow);
                        }
                        *b = Bucket {
                            index,
                            ..Bucket::default()
                        };
                    }
                    b.calls = b.calls.saturating_add(1);
                    b.failures = b.failures.saturating_add(sample.failure as u32);
                    b.slow = b.slow.saturating_add(sample.slow as u32);
                    cache.calls = cache.calls.saturating_add(1);
                    cache.failures = cache.failures.saturating_add(sample.failure as u32);
                    cache.slow = cache.slow.saturating_add(sample.slow as u32);
                }
                let bad = if rule.slow_call_ms().is_some() {
                    cache.slow
                } else {
                    cache.failures
                };
                rate_reached(cache.calls, bad, minimum_calls, threshold_percent)
            }
            // A counter built for another rule: unreachable through the public API, since
            // restore checks the pairing. Never trip on it.
            _ => false,
        }
    }

    /// Checks that this memory can serve `rule` and is internally consistent.
    pub(crate) fn check(&self, rule: &TripRule) -> Result<(), crate::SnapshotError> {
        use crate::error::terse;
        use crate::SnapshotError::{ConfigMismatch, Corrupt};
        match (self, *rule) {
            (Counter::Consecutive { .. }, TripRule::ConsecutiveFailures { .. }) => Ok(()),
            (
                Counter::FailureTimes { times, head },
                TripRule::FailuresInWindow { threshold, .. },
            ) => {
                if times.len() > threshold as usize {
                    return Err(ConfigMismatch(terse(
                        "more failure times than trip.threshold",
                    )));
                }
                if *head as usize >= threshold as usize {
                    return Err(Corrupt(terse("failure-time ring head out of range")));
                }
                Ok(())
            }
            (
                Counter::Calls {
                    ring,
                    head,
                    failures,
                    slow,
                },
                TripRule::FailureRate {
                    window: Window::Calls(n),
                    ..
                }
                | TripRule::SlowCallRate {
                    window: Window::Calls(n),
                    ..
                },
            ) => {
                let count = |bit: u8| ring.iter().filter(|&&b| b & bit != 0).count();
                if count(FAILURE_BIT) != *failures as usize || count(SLOW_BIT) != *slow as usize {
                    return Err(Corrupt(terse("call ring totals do not match its contents")));
                }
                if ring.len() > n as usize {
                    return Err(ConfigMismatch(terse("more calls than the window holds")));
                }
                if *head >= n {
                    return Err(Corrupt(terse("call ring head out of range")));
                }
                if ring.iter().any(|&b| b > (FAILURE_BIT | SLOW_BIT)) {
                    return Err(Corrupt(terse("call ring holds an unknown outcome")));
                }
                Ok(())
            }
            (
                Counter::Buckets { buckets },
                TripRule::FailureRate {
                    window: Window::Millis(_),
                    ..
                }
                | TripRule::SlowCallRate {
                    window: Window::Millis(_),
                    ..
                },
            ) => {
                if buckets.len() != TIME_WINDOW_BUCKETS {
                    return Err(Corrupt(terse("wrong number of time buckets")));
                }
                if buckets
                    .iter()
                    .any(|b| b.failures > b.calls || b.slow > b.calls)
                {
                    return Err(Corrupt(terse("a bucket counts more failures than calls")));
                }
                Ok(())
            }
            _ => Err(ConfigMismatch(terse(
                "the snapshot was taken under another trip rule",
            ))),
        }
    }

    /// Reserves the memory the rule will need (after restoring from a snapshot), so that later
    /// recording does not allocate.
    pub(crate) fn reserve_for(&mut self, rule: &TripRule) {
        match (self, *rule) {
            (Counter::FailureTimes { times, .. }, TripRule::FailuresInWindow { threshold, .. }) => {
                times.reserve_exact((threshold as usize).saturating_sub(times.len()));
            }
            (
                Counter::Calls { ring, .. },
                TripRule::FailureRate {
                    window: Window::Calls(n),
                    ..
                }
                | TripRule::SlowCallRate {
                    window: Window::Calls(n),
                    ..
                },
            ) => ring.reserve_exact((n as usize).saturating_sub(ring.len())),
            _ => {}
        }
    }
}

/// Derived from a [`Counter::Buckets`], never persisted: the current bucket's bounds and the
/// window's totals, so that recording within the same bucket costs neither a division nor a pass
/// over the buckets. Rebuilt from the buckets whenever time leaves the current bucket.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BucketCache {
    valid: bool,
    index: u64,
    start: u64,
    end: u64,
    calls: u32,
    failures: u32,
    slow: u32,
}

impl BucketCache {
    /// Forgets the cache (after the buckets were cleared or replaced).
    #[inline]
    pub(crate) fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Recomputes the totals of the window that ends with bucket `index`; returns `index`.
    #[cold]
    fn rebuild(&mut self, buckets: &[Bucket], index: u64, width: u64) -> u64 {
        let (mut calls, mut failures, mut slow) = (0u32, 0u32, 0u32);
        for b in buckets.iter().filter(|b| in_window(b, index)) {
            calls = calls.saturating_add(b.calls);
            failures = failures.saturating_add(b.failures);
            slow = slow.saturating_add(b.slow);
        }
        let start = index.saturating_mul(width);
        *self = BucketCache {
            valid: true,
            index,
            start,
            end: start.saturating_add(width),
            calls,
            failures,
            slow,
        };
        index
    }
}

/// Whether bucket `b` counts in the window ending with bucket `index`.
#[inline]
fn in_window(b: &Bucket, index: u64) -> bool {
    b.calls > 0 && index - b.index.min(index) < TIME_WINDOW_BUCKETS as u64
}

/// The ring index after `h` (a compare, not a division, on the hot path). An out-of-range `h`
/// (which restore refuses) wraps to 0.
#[inline]
fn next_index(h: usize, cap: usize) -> u32 {
    let next = h + 1;
    if next >= cap {
        0
    } else {
        next as u32
    }
}

/// Width of one bucket of a time window of `ms`.
#[inline]
pub(crate) const fn bucket_width(ms: u64) -> u64 {
    let w = ms / TIME_WINDOW_BUCKETS as u64;
    if w == 0 {
        1
    } else {
        w
    }
}

#[inline]
fn rate_reached(calls: u32, bad: u32, minimum_calls: u32, threshold_percent: f64) -> bool {
    calls > 0 && calls >= minimum_calls && bad as f64 * 100.0 >= threshold_percent * calls as f64
}
