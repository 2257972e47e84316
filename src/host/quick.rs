//! The facade's CLOSED fast path: what the core lets its host count alone
//! ([`FastPath::ADMIT`](crate::FastPath), [`Breaker::quiet`]) counted in atomics, so that a
//! healthy breaker's calls take no lock. Whoever takes the lock first takes those counts
//! ([`Quick::take`]) and hands them to the core ([`Breaker::record_quiet`]); on leaving, it
//! publishes what the core allows now ([`Quick::publish`]).
//!
//! One word holds the CLOSED generation, whether admissions may skip the core, and how many
//! more successes may ([`Quick::succeed`] takes one by compare-and-swap). Closing the fast path
//! swaps the word to 0, so a success counted alone is either in the count the lock holder took
//! or, its swap having failed, reported through the core.
//!
//! Needs 64-bit atomics and `std`; elsewhere the word stays 0 and every call takes the lock
//! (single-threaded hosts, where the lock is a `RefCell`).

use crate::breaker::{Breaker, Permit};
#[cfg(all(feature = "std", target_has_atomic = "64"))]
use crate::breaker::{FastPath, Mode, PermitKind, State};
use crate::clock::Timestamp;

#[cfg(all(feature = "std", target_has_atomic = "64"))]
use core::sync::atomic::{AtomicU64 as Word, Ordering};

/// Admissions may skip the core.
#[cfg(all(feature = "std", target_has_atomic = "64"))]
const ADMIT: u64 = 1 << 31;
/// The successes that may still be counted alone (the low 31 bits).
#[cfg(all(feature = "std", target_has_atomic = "64"))]
const BUDGET: u64 = ADMIT - 1;

/// The fast path's shared counts (see the module's documentation).
#[derive(Debug, Default)]
pub(super) struct Quick {
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    atomics: Atomics,
}

#[cfg(all(feature = "std", target_has_atomic = "64"))]
#[derive(Debug, Default)]
struct Atomics {
    /// `generation << 32 | ADMIT? | budget`; 0 when closed.
    word: Word,
    /// Admissions counted alone.
    admitted: Word,
    /// [`Quiet::until`](crate::Quiet::until) of the published answer.
    until: Word,
    /// The latest time the core had seen when it was published (a timeless permit's
    /// `issued_at`).
    seen: Word,
}

/// What the lock holder publishes and later takes back: the successes it allowed.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Granted(
    #[cfg_attr(not(all(feature = "std", target_has_atomic = "64")), allow(dead_code))] u64,
);

impl Quick {
    /// A permit of the current CLOSED generation, counted alone, when admissions may skip the
    /// core; `issued_at` reads the clock when a report will need it.
    #[inline]
    pub(super) fn admit(&self, timed: bool, clock: impl FnOnce() -> Timestamp) -> Option<Permit> {
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        {
            let a = &self.atomics;
            let w = a.word.load(Ordering::Acquire);
            if w & ADMIT == 0 {
                return None;
            }
            a.admitted.fetch_add(1, Ordering::Relaxed);
            let issued_at = if timed {
                clock()
            } else {
                Timestamp(a.seen.load(Ordering::Relaxed))
            };
            Some(Permit {
                generation: (w >> 32) as u32,
                kind: PermitKind::Normal,
                issued_at,
            })
        }
        #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
        {
            let _ = (timed, clock);
            None
        }
    }

    /// Counts a success of `permit` alone if the core's quiet answer allows it (`slow_call_ms`:
    /// the configuration's, `u64::MAX` without a slow-call rule); false when it must be
    /// reported.
    #[inline]
    pub(super) fn succeed(
        &self,
        permit: &Permit,
        slow_call_ms: u64,
        clock: impl FnOnce() -> Timestamp,
    ) -> bool {
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        {
            let a = &self.atomics;
            if permit.kind != PermitKind::Normal {
                return false;
            }
            let mut w = a.word.load(Ordering::Acquire);
            let until = a.until.load(Ordering::Relaxed);
            if w & BUDGET == 0 || (w >> 32) as u32 != permit.generation {
                return false;
            }
            if until != u64::MAX || slow_call_ms != u64::MAX {
                let now = clock();
                let quiet = crate::Quiet {
                    successes: 1,
                    until: Timestamp(until),
                    slow_call_ms,
                };
                if !quiet.admits(permit.issued_at, now) {
                    return false;
                }
            }
            loop {
                if w & BUDGET == 0 || (w >> 32) as u32 != permit.generation {
                    return false;
                }
                match a
                    .word
                    .compare_exchange_weak(w, w - 1, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return true,
                    Err(now) => w = now,
                }
            }
        }
        #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
        {
            let _ = (permit, slow_call_ms, clock);
            false
        }
    }

    /// Under the lock: closes the fast path and takes what was counted alone since it was
    /// published with `granted`: (admissions, successes).
    #[inline]
    pub(super) fn take(&self, granted: Granted) -> (u64, u64) {
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        {
            let a = &self.atomics;
            let w = a.word.swap(0, Ordering::AcqRel);
            let admitted = a.admitted.swap(0, Ordering::Relaxed);
            (admitted, granted.0.saturating_sub(w & BUDGET))
        }
        #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
        {
            let _ = granted;
            (0, 0)
        }
    }

    /// Under the lock: opens the fast path as far as `core` allows now; what it granted.
    #[inline]
    pub(super) fn publish(&self, core: &Breaker) -> Granted {
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        {
            let a = &self.atomics;
            let closed = core.state() == State::Closed && core.mode() == Mode::Automatic;
            if !closed || !core.config().fast_path().contains(FastPath::ADMIT) {
                return Granted(0);
            }
            let quiet = core.quiet();
            let granted = u64::from(quiet.successes).min(BUDGET);
            a.until.store(quiet.until.0, Ordering::Relaxed);
            a.seen.store(core.latest().0, Ordering::Relaxed);
            let w = u64::from(core.generation()) << 32 | ADMIT | granted;
            a.word.store(w, Ordering::Release);
            Granted(granted)
        }
        #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
        {
            let _ = core;
            Granted(0)
        }
    }
}
