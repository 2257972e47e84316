//! The trip rules' memory: what a CLOSED breaker remembers of recent calls.
//!
//! Each rule gets the smallest structure that answers it exactly, allocated once when the breaker
//! is built; recording an outcome never allocates.

use core::num::NonZeroU64;

use alloc::vec;
use alloc::vec::Vec;

use super::config::{TripRule, Window, TIME_WINDOW_BUCKETS};

/// One recorded call as the trip rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sample {
    pub failure: bool,
    pub slow: bool,
}

impl Sample {
    /// As stored in a `Calls` ring: [`FAILURE_BIT`] | [`SLOW_BIT`].
    #[inline]
    fn bits(self) -> u8 {
        (self.failure as u8 * FAILURE_BIT) | (self.slow as u8 * SLOW_BIT)
    }
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
    ///
    /// Inlined into its one caller (`Breaker::record_closed`), as are the recorders of each
    /// memory: the hot paths are a few instructions each, and the rare work (deriving the cache,
    /// entering a new time bucket) is out of line.
    #[inline(always)]
    pub(crate) fn record(
        &mut self,
        rule: &TripRule,
        now: u64,
        sample: Sample,
        cache: &mut WindowCache,
    ) -> bool {
        match (self, *rule) {
            (Counter::Consecutive { failures }, TripRule::ConsecutiveFailures { threshold }) => {
                record_consecutive(failures, threshold, sample)
            }
            (
                Counter::FailureTimes { times, head },
                TripRule::FailuresInWindow {
                    threshold,
                    window_ms,
                },
            ) => record_failure_time(times, head, threshold, window_ms, now, sample),
            (
                Counter::Calls {
                    ring,
                    head,
                    failures,
                    slow,
                },
                _,
            ) => record_call(ring, head, failures, slow, rule, sample, cache),
            (Counter::Buckets { buckets }, _) => {
                record_in_bucket(buckets, rule, now, sample, cache)
            }
            // A counter built for another rule: unreachable through the public API, since
            // restore checks the pairing. Never trip on it.
            _ => false,
        }
    }

    /// How many successes in a row (neither failed nor slow), at times from `now` up to the
    /// returned time (exclusive), cannot make the rule call for opening: `(successes, until)`.
    /// A rate rule can open on a success only when it brings its window to the minimum of
    /// calls (or when the window moved on and what remains already reaches the rate: the
    /// first call of a time bucket is evaluated in full). So: any number under the consecutive
    /// and failures-in-a-window rules; under a rate rule, those that keep the window below its
    /// minimum, or any number once it is there, until the current time bucket ends. None
    /// before the window's cache is derived (after a clear or a restore, or in a time bucket no
    /// call entered yet): the next call evaluates the rule in full, and derives it.
    pub(crate) fn quiet(&self, cache: &WindowCache, now: u64) -> (u32, u64) {
        let bad_of = |t: Tally| {
            if cache.bad_bit == SLOW_BIT {
                t.slow
            } else {
                t.failures
            }
        };
        let (calls, bad, until) = match self {
            Counter::Consecutive { .. } | Counter::FailureTimes { .. } => {
                return (u32::MAX, u64::MAX)
            }
            Counter::Calls {
                ring,
                failures,
                slow,
                ..
            } if cache.cap > 0 => (
                ring.len() as u32,
                bad_of(Tally {
                    calls: 0,
                    failures: *failures,
                    slow: *slow,
                }),
                u64::MAX,
            ),
            Counter::Buckets { buckets } if now.wrapping_sub(cache.start) < cache.width => {
                let Some(b) = buckets.get(cache.slot) else {
                    return (0, now);
                };
                let t = cache.others.add(Tally::of(b));
                (t.calls, bad_of(t), cache.start.saturating_add(cache.width))
            }
            _ => return (0, now),
        };
        // Below the minimum, the successes that keep the window there; the one that brings it to
        // the minimum is reported (it may open). At or past the minimum a success lowers the
        // rate, which is below the threshold after every call the rule evaluated: any number
        // (past a time window's or a restored window's first call, which is evaluated in full).
        let successes = if calls < cache.needed {
            cache.needed - calls - 1
        } else {
            let size = calls.saturating_add(1);
            let size = if cache.cap > 0 {
                size.min(cache.cap)
            } else {
                size
            };
            if rate_reached(size, bad, cache.needed, cache.threshold_percent) {
                0
            } else {
                u32::MAX
            }
        };
        (successes, until)
    }

    /// After [`record`](Self::record) counted a success, counts `n` more at the same time
    /// where only their number matters: a time window's current bucket (true if one of them
    /// brings the window to its minimum at the rate), a full call window's ring of successes
    /// (they only move its head). The caller records one by one what else could change.
    pub(crate) fn add_successes(&mut self, n: u64, cache: &WindowCache) -> bool {
        match self {
            Counter::Buckets { buckets } => {
                let Some(b) = buckets.get_mut(cache.slot) else {
                    return false;
                };
                let before = cache.others.calls.saturating_add(b.calls);
                b.calls = b.calls.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
                let after = cache.others.calls.saturating_add(b.calls);
                before < cache.needed
                    && after >= cache.needed
                    && cache.rate_reached(cache.needed, b)
            }
            Counter::Calls { head, .. } if cache.cap > 0 => {
                *head = ((u64::from(*head) + n) % u64::from(cache.cap)) as u32;
                false
            }
            _ => false,
        }
    }

    /// How many successes in a row [`record`](Self::record) must count one by one before
    /// [`add_successes`](Self::add_successes) may count the rest: a call window's size (after
    /// which its ring holds nothing else), or 1.
    pub(crate) fn one_by_one(&self, rule: &TripRule) -> u64 {
        match (self, *rule) {
            (
                Counter::Calls { .. },
                TripRule::FailureRate {
                    window: Window::Calls(n),
                    ..
                }
                | TripRule::SlowCallRate {
                    window: Window::Calls(n),
                    ..
                },
            ) => n.into(),
            _ => 1,
        }
    }

    /// Checks that this memory can serve `rule` and is internally consistent.
    pub(crate) fn check(&self, rule: &TripRule) -> Result<(), crate::error::SnapshotError> {
        use crate::error::terse;
        use crate::error::SnapshotError::{ConfigMismatch, Corrupt};
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

/// `ConsecutiveFailures`: a failure lengthens the run, anything else ends it.
#[inline(always)]
fn record_consecutive(failures: &mut u32, threshold: u32, sample: Sample) -> bool {
    if sample.failure {
        *failures = failures.saturating_add(1);
        *failures >= threshold
    } else {
        *failures = 0;
        false
    }
}

/// `FailuresInWindow`: a failure's time goes into the ring of the last `threshold`; the rule
/// calls for opening when the oldest of them is within `window_ms` of `now`.
#[inline(always)]
fn record_failure_time(
    times: &mut Vec<u64>,
    head: &mut u32,
    threshold: u32,
    window_ms: u64,
    now: u64,
    sample: Sample,
) -> bool {
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

/// A rate rule over the last calls: the call's bits go into the ring, replacing the oldest once
/// it is full, and the totals follow.
#[inline(always)]
fn record_call(
    ring: &mut Vec<u8>,
    head: &mut u32,
    failures: &mut u32,
    slow: &mut u32,
    rule: &TripRule,
    sample: Sample,
    cache: &mut WindowCache,
) -> bool {
    // The window's size and the rule's parameters come from the cache, so that the rule is read
    // once after every clear or restore, not on every call.
    let fresh = cache.cap == 0;
    if fresh && !cache.derive_calls(rule) {
        return false;
    }
    let bits = sample.bits();
    let cap = cache.cap as usize;
    // Totals in registers, written back once.
    let (mut f, mut s) = (*failures, *slow);
    if ring.len() < cap {
        ring.push(bits);
    } else {
        let h = *head as usize;
        if let Some(slot) = ring.get_mut(h) {
            let old = core::mem::replace(slot, bits);
            f = f.saturating_sub((old & FAILURE_BIT) as u32);
            s = s.saturating_sub((old >> 1) as u32);
        }
        *head = next_index(h, cap);
    }
    f += (bits & FAILURE_BIT) as u32;
    s += (bits >> 1) as u32;
    (*failures, *slow) = (f, s);
    let calls = ring.len() as u32;
    // The rate was below the threshold after the previous call (or the breaker would have
    // opened and cleared the ring): a call that does not count against the rule can only bring
    // it there by filling the window up to its minimum.
    if !fresh && bits & cache.bad_bit == 0 && calls != cache.needed {
        return false;
    }
    let bad = if cache.bad_bit == SLOW_BIT { s } else { f };
    rate_reached(calls, bad, cache.needed, cache.threshold_percent)
}

/// A rate rule over a time window: the call counts in the current bucket, or enters a new one.
#[inline(always)]
fn record_in_bucket(
    buckets: &mut [Bucket],
    rule: &TripRule,
    now: u64,
    sample: Sample,
    cache: &mut WindowCache,
) -> bool {
    let bits = sample.bits();
    // Within the current bucket (a zero width until the cache is derived): the hot path, with no
    // division and no pass over the buckets.
    if now.wrapping_sub(cache.start) >= cache.width {
        return cache.enter_bucket(buckets, rule, now, bits);
    }
    let Some(b) = buckets.get_mut(cache.slot) else {
        return false;
    };
    b.calls = b.calls.saturating_add(1);
    b.failures = b.failures.saturating_add((bits & FAILURE_BIT) as u32);
    b.slow = b.slow.saturating_add((bits >> 1) as u32);
    let calls = cache.others.calls.saturating_add(b.calls);
    // As for a `Calls` window: below the threshold after the previous call, in the same window,
    // so only a call that counts against the rule or that brings the window to its minimum can
    // reach it.
    if bits & cache.bad_bit == 0 && calls != cache.needed {
        return false;
    }
    cache.rate_reached(calls, b)
}

/// Derived from the trip rule and a rate rule's [`Counter`], never persisted: what lets a rate
/// rule record a call without reading its rule, dividing, or passing over its buckets. All zero
/// (the default, and [`invalidate`](Self::invalidate)) means "not derived": the next call derives
/// it and evaluates the rule in full. Invalidated whenever the counter is cleared or replaced.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WindowCache {
    /// `Calls` window: its size; 0 until derived.
    cap: u32,
    /// Calls the window must hold before the rate counts.
    needed: u32,
    /// The bit of a call that counts against the rule: [`FAILURE_BIT`] or [`SLOW_BIT`].
    bad_bit: u8,
    /// The rule's threshold.
    threshold_percent: f64,
    /// `Millis` window: the current bucket's first millisecond.
    start: u64,
    /// `Millis` window: the bucket width; 0 until derived.
    width: u64,
    /// `Millis` window: the current bucket's slot.
    slot: usize,
    /// `Millis` window: the totals of the window's buckets other than the current one.
    others: Tally,
}

/// Calls, failures and slow calls, saturating.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    calls: u32,
    failures: u32,
    slow: u32,
}

impl Tally {
    fn of(b: &Bucket) -> Tally {
        Tally {
            calls: b.calls,
            failures: b.failures,
            slow: b.slow,
        }
    }

    fn add(self, o: Tally) -> Tally {
        Tally {
            calls: self.calls.saturating_add(o.calls),
            failures: self.failures.saturating_add(o.failures),
            slow: self.slow.saturating_add(o.slow),
        }
    }

    fn sub(self, o: Tally) -> Tally {
        Tally {
            calls: self.calls.saturating_sub(o.calls),
            failures: self.failures.saturating_sub(o.failures),
            slow: self.slow.saturating_sub(o.slow),
        }
    }
}

/// A rate rule's parameters: (threshold, minimum calls, window, the bit that counts against it).
fn rate_rule(rule: &TripRule) -> Option<(f64, u32, Window, u8)> {
    match *rule {
        TripRule::FailureRate {
            threshold_percent,
            minimum_calls,
            window,
        } => Some((threshold_percent, minimum_calls, window, FAILURE_BIT)),
        TripRule::SlowCallRate {
            threshold_percent,
            minimum_calls,
            window,
            ..
        } => Some((threshold_percent, minimum_calls, window, SLOW_BIT)),
        _ => None,
    }
}

impl WindowCache {
    /// Forgets the cache (after the counter was cleared or replaced).
    #[inline]
    pub(crate) fn invalidate(&mut self) {
        *self = WindowCache::default();
    }

    /// Derives the cache of a `Calls` window from `rule`; false if `rule` has no such window.
    #[cold]
    fn derive_calls(&mut self, rule: &TripRule) -> bool {
        let Some((threshold_percent, minimum_calls, Window::Calls(n), bad_bit)) = rate_rule(rule)
        else {
            return false;
        };
        *self = WindowCache {
            cap: n,
            needed: minimum_calls.min(n),
            bad_bit,
            threshold_percent,
            ..WindowCache::default()
        };
        n != 0
    }

    /// Records a call (`bits`) at `now`, outside the current bucket (or before the cache was
    /// derived): derives the cache for bucket `now / width`, with the totals of the window that
    /// ends with it, and evaluates the rule in full.
    #[cold]
    #[inline(never)]
    fn enter_bucket(
        &mut self,
        buckets: &mut [Bucket],
        rule: &TripRule,
        now: u64,
        bits: u8,
    ) -> bool {
        let Some((threshold_percent, minimum_calls, Window::Millis(ms), bad_bit)) = rate_rule(rule)
        else {
            return false;
        };
        let width = bucket_width(ms);
        let index = now / width;
        let mut total = Tally::default();
        for b in buckets.iter().filter(|b| in_window(b, index)) {
            total = total.add(Tally::of(b));
        }
        let slot = (index % TIME_WINDOW_BUCKETS as u64) as usize;
        *self = WindowCache {
            needed: minimum_calls,
            bad_bit,
            threshold_percent,
            ..WindowCache::default()
        };
        let Some(b) = buckets.get_mut(slot) else {
            // Unreachable (there are always TIME_WINDOW_BUCKETS buckets): evaluate what there
            // is, and derive again next time.
            self.others = total;
            return self.rate_reached(total.calls, &Bucket::default());
        };
        if b.index != index || b.calls == 0 {
            // The slot held an older bucket; if it was still counted (only possible for a bucket
            // from the future), take it out of the totals.
            if in_window(b, index) {
                total = total.sub(Tally::of(b));
            }
            *b = Bucket {
                index,
                ..Bucket::default()
            };
        }
        // The totals include the current bucket when it is kept (it counts in its own window).
        self.others = total.sub(Tally::of(b));
        b.calls = b.calls.saturating_add(1);
        b.failures = b.failures.saturating_add((bits & FAILURE_BIT) as u32);
        b.slow = b.slow.saturating_add((bits >> 1) as u32);
        self.start = index.saturating_mul(width.get());
        self.width = width.get();
        self.slot = slot;
        self.rate_reached(self.others.calls.saturating_add(b.calls), b)
    }

    /// Whether the rate of a `Millis` window whose current bucket is `b`, holding `calls` calls
    /// in all, reaches the threshold.
    #[inline]
    fn rate_reached(&self, calls: u32, b: &Bucket) -> bool {
        let bad = if self.bad_bit == SLOW_BIT {
            self.others.slow.saturating_add(b.slow)
        } else {
            self.others.failures.saturating_add(b.failures)
        };
        rate_reached(calls, bad, self.needed, self.threshold_percent)
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

/// Width of one bucket of a time window of `ms` (at least 1 ms). A `NonZeroU64`, so that dividing
/// by it needs no zero check: the check's panic path would bring its message into the .wasm.
#[inline]
pub(crate) const fn bucket_width(ms: u64) -> NonZeroU64 {
    match NonZeroU64::new(ms / TIME_WINDOW_BUCKETS as u64) {
        Some(w) => w,
        None => NonZeroU64::MIN,
    }
}

#[inline]
fn rate_reached(calls: u32, bad: u32, minimum_calls: u32, threshold_percent: f64) -> bool {
    calls > 0 && calls >= minimum_calls && bad as f64 * 100.0 >= threshold_percent * calls as f64
}
