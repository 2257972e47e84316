//! Time as data: the core never reads a clock, it is handed the time.
//!
//! Every decision in this crate takes `now` as a [`Timestamp`], milliseconds since the Unix
//! epoch. Absolute epoch time (rather than a monotonic `Instant`) is what a Durable Object or a
//! Redis key can persist and what every host can produce; `Instant::now()` would even panic on
//! `wasm32-unknown-unknown`. Clocks that jump backwards are tolerated by the consumers: a reading
//! earlier than one already seen counts as "no time has passed".

use core::fmt;

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// The Unix epoch itself.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp `ms` milliseconds after the epoch.
    #[inline]
    pub const fn from_millis(ms: u64) -> Self {
        Timestamp(ms)
    }

    /// Milliseconds since the epoch.
    #[inline]
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// `self + ms`, saturating at `u64::MAX` instead of overflowing.
    #[inline]
    pub const fn saturating_add(self, ms: u64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`; zero if `earlier` is not earlier.
    #[inline]
    pub const fn saturating_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Converts a host's floating-point millisecond reading (JavaScript's `Date.now()`), mapping
    /// NaN and negative values to the epoch and values past `u64::MAX` to `u64::MAX`.
    #[inline]
    pub fn from_f64_millis(ms: f64) -> Self {
        // `as` saturates for out-of-range floats and maps NaN to zero: exactly what we want.
        Timestamp(ms as u64)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A source of the current time, held by the hosts (the Rust facade, the wasm boundary's callers,
/// the Worker), never by the state machine.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for alloc::rc::Rc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for alloc::sync::Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// A clock that only moves when told to. Clones share the same time, so a test can keep one
/// handle and give another to the breaker. `Send + Sync` on every target with 64-bit atomics
/// (every `std` target, wasm32), so that tasks on several threads can share a breaker under it.
///
/// ```
/// use breakwater::{Clock, ManualClock, Timestamp};
/// let clock = ManualClock::new(Timestamp(1_000));
/// let handle = clock.clone();
/// clock.advance(250);
/// assert_eq!(handle.now(), Timestamp(1_250));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Shared,
}

#[cfg(target_has_atomic = "64")]
type Shared = alloc::sync::Arc<core::sync::atomic::AtomicU64>;
#[cfg(not(target_has_atomic = "64"))]
type Shared = alloc::rc::Rc<core::cell::Cell<u64>>;

#[cfg(target_has_atomic = "64")]
mod reading {
    use core::sync::atomic::{AtomicU64, Ordering};
    pub(super) fn new(ms: u64) -> super::Shared {
        alloc::sync::Arc::new(AtomicU64::new(ms))
    }
    pub(super) fn get(v: &AtomicU64) -> u64 {
        v.load(Ordering::Acquire)
    }
    pub(super) fn set(v: &AtomicU64, ms: u64) {
        v.store(ms, Ordering::Release);
    }
    pub(super) fn advance(v: &AtomicU64, ms: u64) {
        // `fetch_update` cannot fail with a closure that always returns `Some`.
        let _ = v.fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
            Some(t.saturating_add(ms))
        });
    }
}

#[cfg(not(target_has_atomic = "64"))]
mod reading {
    use core::cell::Cell;
    pub(super) fn new(ms: u64) -> super::Shared {
        alloc::rc::Rc::new(Cell::new(ms))
    }
    pub(super) fn get(v: &Cell<u64>) -> u64 {
        v.get()
    }
    pub(super) fn set(v: &Cell<u64>, ms: u64) {
        v.set(ms);
    }
    pub(super) fn advance(v: &Cell<u64>, ms: u64) {
        v.set(v.get().saturating_add(ms));
    }
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: reading::new(start.0),
        }
    }

    /// Moves the clock forward by `ms` (saturating).
    pub fn advance(&self, ms: u64) {
        reading::advance(&self.now, ms);
    }

    /// Sets the clock to `t`, which may be earlier than the current reading (to test clocks that
    /// jump backwards).
    pub fn set(&self, t: Timestamp) {
        reading::set(&self.now, t.0);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(reading::get(&self.now))
    }
}

/// The operating system's wall clock (`std` only).
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

#[cfg(feature = "std")]
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
    }
}
