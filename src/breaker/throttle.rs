//! Adaptive throttling: shedding a degraded upstream's excess while the breaker stays CLOSED.
//!
//! The rule is client-side throttling from Google's SRE book ("Handling Overload"): over the
//! last `window_ms`, with `requests` the calls the application asked for (throttled ones
//! included) and `accepts` the ones the upstream answered well, a call is refused locally with
//! probability
//!
//! ```text
//! p = max(0, (requests − multiplier × accepts) / (requests + 1))
//! ```
//!
//! A healthy upstream keeps `accepts ≈ requests` and `p = 0`; at 30 % failures and the default
//! multiplier of 2, `requests − 2 × 0.7 × requests < 0`, still 0; once fewer than half the calls
//! succeed, the excess is shed in proportion, up to `max_rejection_probability` (0.8 by default,
//! as Envoy's admission control: see [`Throttle`] for why). Nothing changes state: the trip rule still opens
//! the breaker on a hard outage, and throttling resumes from an empty window when it closes.

use super::config::{Throttle, THROTTLE_BUCKETS};

/// One time bucket of the throttle's window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThrottleBucket {
    /// `now / bucket_ms` of the calls it holds.
    pub index: u64,
    /// Calls asked for: admitted calls that reported a success or a failure, and throttled ones.
    pub requests: u32,
    /// Of which the upstream answered well.
    pub accepts: u32,
}

/// The throttle's memory: [`THROTTLE_BUCKETS`] buckets indexed by `index % THROTTLE_BUCKETS`.
/// Fixed size, so recording never allocates. In a build without the `throttle` feature it has no
/// buckets (there is nothing to count), so that breakers and snapshots do not carry them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ThrottleWindow {
    /// The buckets.
    pub buckets: [ThrottleBucket; WINDOW_BUCKETS],
}

/// [`THROTTLE_BUCKETS`] with the `throttle` feature, else none.
const WINDOW_BUCKETS: usize = if cfg!(feature = "throttle") {
    THROTTLE_BUCKETS
} else {
    0
};

impl ThrottleWindow {
    /// Requests and accepts of the buckets still inside the window at `now`.
    pub fn totals(&self, now: u64, bucket_ms: u64) -> (u64, u64) {
        let current = now / bucket_ms;
        let oldest = current.saturating_sub(THROTTLE_BUCKETS as u64 - 1);
        self.buckets
            .iter()
            .filter(|b| (oldest..=current).contains(&b.index) && (b.requests | b.accepts) != 0)
            .fold((0, 0), |(r, a), b| {
                (r + u64::from(b.requests), a + u64::from(b.accepts))
            })
    }

    /// Counts `requests` and `accepts` at `now`, reusing the bucket of an older index.
    pub fn add(&mut self, now: u64, bucket_ms: u64, requests: u32, accepts: u32) {
        let index = now / bucket_ms;
        let Some(b) = self
            .buckets
            .get_mut((index % THROTTLE_BUCKETS as u64) as usize)
        else {
            return;
        };
        if b.index != index {
            *b = ThrottleBucket {
                index,
                requests: 0,
                accepts: 0,
            };
        }
        b.requests = b.requests.saturating_add(requests);
        b.accepts = b.accepts.saturating_add(accepts);
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = ThrottleWindow::default();
    }

    /// Whether no bucket holds a call.
    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(|b| (b.requests | b.accepts) == 0)
    }

    /// Whether this could be a window a breaker wrote: every bucket that holds calls in its slot
    /// (`index % 12`), none with more accepts than requests.
    pub fn fits(&self) -> bool {
        self.buckets.iter().enumerate().all(|(slot, b)| {
            (b.requests | b.accepts) == 0
                || (b.accepts <= b.requests && (b.index % THROTTLE_BUCKETS as u64) as usize == slot)
        })
    }
}

/// The SRE rule: the probability of refusing a call given the window's `requests` and
/// `accepts` under `throttle`: 0 below its minimum of requests, at most its
/// `max_rejection_probability`.
pub fn throttle_probability(requests: u64, accepts: u64, throttle: &Throttle) -> f64 {
    if requests < u64::from(throttle.minimum_requests) {
        return 0.0;
    }
    let r = requests as f64;
    let p = (r - throttle.multiplier * accepts as f64) / (r + 1.0);
    if p > throttle.max_rejection_probability {
        throttle.max_rejection_probability
    } else if p > 0.0 {
        p
    } else {
        0.0
    }
}
