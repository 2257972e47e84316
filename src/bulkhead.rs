//! A concurrency limit (a bulkhead) with a bounded FIFO queue, as a sans-IO state machine.
//!
//! ```text
//!   enter ──▶ a slot free? ──yes──▶ Admitted(slot) ──── leave(slot) ──▶ the slot goes to the
//!                  │ no                                                   oldest waiter, if any
//!                  ▼
//!            queue not full? ──yes──▶ Queued(ticket) ── handed a slot by leave / poll
//!                  │ no                     └────────── or times out (poll), or cancel(ticket)
//!                  ▼
//!            Full(Rejected { reason: Full })
//! ```
//!
//! Like the breaker it reads no clock and never waits: the host passes the time in and acts on
//! what comes out. A host that can wait (JavaScript's promises, tokio) parks a queued call until
//! [`Bulkhead::leave`] or [`Bulkhead::poll`] hands its ticket a slot, or `poll` says its time is
//! up. Every slot is a lease: one whose call never leaves (a crashed handler, a dropped stream)
//! is freed after `lease_ms`, so a leak cannot wedge the limit. Allocated once; entering,
//! leaving and polling never allocate.

use alloc::vec::Vec;

use crate::breaker::{ProbeLease as Lease, RejectReason, Rejected, CLOCK_STEP_MS, MAX_DURATION_MS};
use crate::clock::Timestamp;
use crate::error::ConfigError;

/// The most calls a bulkhead may hold in flight, and the most it may queue.
pub const MAX_BULKHEAD: u32 = 100_000;
/// Slot and ticket ids wrap at `MAX_ID + 1` (2^31); a slot handed to a waiter has its ticket's id.
pub const MAX_ID: u32 = (1 << 31) - 1;

/// How many calls run at once, how many may wait, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct BulkheadConfig {
    /// Calls in flight at once, in `1..=100000`. Default 10.
    pub max_concurrent: u32,
    /// Calls that may wait for a slot, in `0..=100000`; 0 refuses at once. Default 0.
    pub max_queued: u32,
    /// How long a call may wait for a slot before it is refused, in ms (at least 1).
    /// Default 1 000.
    pub queue_timeout_ms: u64,
    /// A slot whose call never leaves is freed after this many ms (at least 1). Default 30 000
    /// (the breaker's `probe_timeout_ms`).
    pub lease_ms: u64,
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        Self::new(10)
    }
}

impl BulkheadConfig {
    /// `max_concurrent` at once, no queue, 1 s of queue time-out, 30 s leases.
    pub const fn new(max_concurrent: u32) -> Self {
        BulkheadConfig {
            max_concurrent,
            max_queued: 0,
            queue_timeout_ms: 1_000,
            lease_ms: 30_000,
        }
    }

    /// Sets [`max_queued`](Self::max_queued) and [`queue_timeout_ms`](Self::queue_timeout_ms).
    pub const fn with_queue(mut self, max_queued: u32, queue_timeout_ms: u64) -> Self {
        self.max_queued = max_queued;
        self.queue_timeout_ms = queue_timeout_ms;
        self
    }

    /// Sets [`lease_ms`](Self::lease_ms).
    pub const fn with_lease_ms(mut self, ms: u64) -> Self {
        self.lease_ms = ms;
        self
    }

    /// Checks every field; the first one out of range is named.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_concurrent == 0 || self.max_concurrent > MAX_BULKHEAD {
            return Err(ConfigError::new(
                "max_concurrent",
                self.max_concurrent as f64,
                "an integer in 1..=100000",
            ));
        }
        if self.max_queued > MAX_BULKHEAD {
            return Err(ConfigError::new(
                "max_queued",
                self.max_queued as f64,
                "an integer in 0..=100000",
            ));
        }
        for (field, ms) in [
            ("queue_timeout_ms", self.queue_timeout_ms),
            ("lease_ms", self.lease_ms),
        ] {
            if ms == 0 || ms > MAX_DURATION_MS {
                return Err(ConfigError::new(
                    field,
                    ms as f64,
                    "an integer in 1..=2^52 milliseconds",
                ));
            }
        }
        Ok(())
    }
}

/// A slot held by a call in flight. Give it back with [`Bulkhead::leave`], once. A slot handed
/// to a waiter has the waiter's ticket's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "leave the bulkhead with this slot, or it stays taken until its lease runs out"]
pub struct Slot(pub u32);

/// A queued call's place in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket(pub u32);

/// What [`Bulkhead::enter`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Entry {
    /// Run now.
    Admitted(Slot),
    /// Wait until [`Bulkhead::leave`] or [`Bulkhead::poll`] hands `ticket` a slot, or `poll`
    /// times it out (at `deadline` at the latest).
    Queued {
        /// The place in line.
        ticket: Ticket,
        /// When it times out, in ms since the epoch.
        deadline: u64,
    },
    /// Refused: every slot taken and the queue full (or none).
    Full(Rejected),
}

/// Something [`Bulkhead::leave`] or [`Bulkhead::poll`] did to a queued call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// `ticket` now holds `slot`: run its call.
    Admitted {
        /// Whose turn it is.
        ticket: Ticket,
        /// The slot it holds.
        slot: Slot,
    },
    /// `ticket` waited `queue_timeout_ms`: refuse its call.
    TimedOut {
        /// Whose time is up.
        ticket: Ticket,
        /// The refusal to answer it with.
        rejected: Rejected,
    },
}

/// Running totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkheadStats {
    /// Calls given a slot (at once or after waiting).
    pub admitted: u64,
    /// Calls that had to wait.
    pub queued: u64,
    /// Calls refused: at once (no room in the queue) or after waiting too long.
    pub full: u64,
    /// Of those, the ones that waited too long.
    pub timed_out: u64,
    /// Waiters that gave up themselves ([`Bulkhead::cancel`]).
    pub cancelled: u64,
    /// Slots freed because their lease ran out (a call that never left).
    pub expired: u64,
}

/// The bulkhead.
///
/// ```
/// use breakwater::bulkhead::{Bulkhead, BulkheadConfig, Entry, Wake};
/// use breakwater::Timestamp;
///
/// let mut b = Bulkhead::new(BulkheadConfig::new(1).with_queue(1, 5_000)).unwrap();
/// let t = Timestamp(1_000);
/// let Entry::Admitted(first) = b.enter(t) else { unreachable!() };
/// let Entry::Queued { ticket, .. } = b.enter(t) else { unreachable!() };
/// assert!(matches!(b.enter(t), Entry::Full(_)));
/// // The first call ends: the waiter gets its slot.
/// let wake = b.leave(t, first);
/// assert!(matches!(wake, Some(Wake::Admitted { ticket: w, .. }) if w == ticket));
/// ```
#[derive(Clone, Debug)]
pub struct Bulkhead {
    config: BulkheadConfig,
    /// Slots in flight: id and when the lease runs out (the breaker's probe leases' type, so
    /// that the .wasm carries one copy of their code).
    slots: Vec<Lease>,
    /// The line, oldest first: ticket and deadline (`expires_at`). Short (at most `max_queued`),
    /// so a `Vec` whose front is removed.
    queue: Vec<Lease>,
    next: u32,
    last_now: u64,
    stats: BulkheadStats,
}

impl Bulkhead {
    /// An empty bulkhead, or the first field out of range.
    pub fn new(config: BulkheadConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Bulkhead {
            slots: Vec::with_capacity(config.max_concurrent as usize),
            queue: Vec::with_capacity(config.max_queued as usize),
            config,
            next: 0,
            last_now: 0,
            stats: BulkheadStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BulkheadConfig {
        &self.config
    }

    /// Calls holding a slot.
    pub fn in_flight(&self) -> usize {
        self.slots.len()
    }

    /// Calls waiting.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Running totals.
    pub fn stats(&self) -> &BulkheadStats {
        &self.stats
    }

    /// When [`poll`](Self::poll) next has something to do (a waiter's deadline, or a lease that
    /// runs out while calls wait), if anything waits.
    pub fn next_deadline(&self) -> Option<u64> {
        let waiter = self.queue.first()?.expires_at;
        if self.slots.len() < self.config.max_concurrent as usize {
            return Some(self.last_now);
        }
        let lease = self.slots.iter().map(|l| l.expires_at).min();
        Some(lease.map_or(waiter, |l| l.min(waiter)))
    }

    /// Asks for a slot at `now`.
    pub fn enter(&mut self, now: Timestamp) -> Entry {
        let now = self.observe(now);
        // Waiters go first: a newcomer does not jump the line while a slot is being handed on.
        if self.queue.is_empty() && self.slots.len() < self.config.max_concurrent as usize {
            return Entry::Admitted(self.take(now));
        }
        // A slot may be free while waiters remain (a lease ran out just now): they are handed it
        // by `poll`, which `next_deadline` asks for at once; a newcomer queues behind them.
        if self.queue.len() < self.config.max_queued as usize {
            let ticket = self.fresh_id();
            let deadline = now.saturating_add(self.config.queue_timeout_ms);
            self.queue.push(Lease {
                id: ticket,
                expires_at: deadline,
            });
            self.stats.queued = self.stats.queued.saturating_add(1);
            return Entry::Queued {
                ticket: Ticket(ticket),
                deadline,
            };
        }
        self.stats.full = self.stats.full.saturating_add(1);
        Entry::Full(self.refusal(now))
    }

    /// A call ended (however: success, failure, cancel): frees `slot` and hands it to the oldest
    /// waiter, if any. A slot already freed (left twice, or its lease ran out) frees nothing, but
    /// a waiter may still be handed a slot that time freed.
    pub fn leave(&mut self, now: Timestamp, slot: Slot) -> Option<Wake> {
        let now = self.observe(now);
        if let Some(i) = self.slots.iter().position(|l| l.id == slot.0) {
            self.slots.swap_remove(i);
        }
        self.hand_on(now)
    }

    /// A waiter gave up (its caller aborted): it leaves the line. `false` if it was not waiting
    /// (already handed a slot, timed out, or unknown).
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        match self.queue.iter().position(|w| w.id == ticket.0) {
            Some(i) => {
                self.queue.remove(i);
                self.stats.cancelled = self.stats.cancelled.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// Lets time pass: frees slots whose lease ran out and hands them on, and times out waiters
    /// past their deadline. Answers one thing that happened; call it until it answers `None`.
    pub fn poll(&mut self, now: Timestamp) -> Option<Wake> {
        let now = self.observe(now);
        if let Some(wake) = self.hand_on(now) {
            return Some(wake);
        }
        let w = *self.queue.first()?;
        if w.expires_at > now {
            return None;
        }
        self.queue.remove(0);
        self.stats.full = self.stats.full.saturating_add(1);
        self.stats.timed_out = self.stats.timed_out.saturating_add(1);
        Some(Wake::TimedOut {
            ticket: Ticket(w.id),
            rejected: self.refusal(now),
        })
    }

    // ----- internals -----

    /// Time passes to `now`; a reading less than [`CLOCK_STEP_MS`] behind counts as no time
    /// passing (readers skew), and one further behind is a clock step (an NTP correction, a
    /// failover): leases and deadlines move back with it, as the breaker's do, so that a slot
    /// lost by a crashed caller is not held for the length of the step.
    fn observe(&mut self, now: Timestamp) -> u64 {
        if now.0.saturating_add(CLOCK_STEP_MS) < self.last_now {
            let back = self.last_now - now.0;
            for l in self.slots.iter_mut().chain(self.queue.iter_mut()) {
                l.expires_at = l.expires_at.saturating_sub(back);
            }
            self.last_now = now.0;
        } else if now.0 > self.last_now {
            self.last_now = now.0;
            let before = self.slots.len();
            let t = self.last_now;
            self.slots.retain(|l| l.expires_at > t);
            let freed = (before - self.slots.len()) as u64;
            self.stats.expired = self.stats.expired.saturating_add(freed);
        }
        self.last_now
    }

    /// The oldest waiter still in time gets a free slot, if there is one.
    fn hand_on(&mut self, now: u64) -> Option<Wake> {
        if self.slots.len() >= self.config.max_concurrent as usize {
            return None;
        }
        let w = *self.queue.first()?;
        if w.expires_at <= now {
            // Its time is up: `poll` times it out rather than running it late.
            return None;
        }
        self.queue.remove(0);
        Some(Wake::Admitted {
            ticket: Ticket(w.id),
            slot: self.take_as(w.id, now),
        })
    }

    fn take(&mut self, now: u64) -> Slot {
        let id = self.fresh_id();
        self.take_as(id, now)
    }

    /// A slot numbered `id` (a waiter's slot keeps its ticket's number: ids are never reused
    /// while in use).
    fn take_as(&mut self, id: u32, now: u64) -> Slot {
        self.slots.push(Lease {
            id,
            expires_at: now.saturating_add(self.config.lease_ms),
        });
        self.stats.admitted = self.stats.admitted.saturating_add(1);
        Slot(id)
    }

    /// Ids stay below [`MAX_ID`], so that a host can pack one with a flag into a 32-bit number.
    fn fresh_id(&mut self) -> u32 {
        let id = self.next;
        self.next = (self.next + 1) & MAX_ID;
        id
    }

    /// When asking again will find room at the latest: the soonest lease to run out (a call
    /// usually leaves long before), at least 1 ms.
    fn refusal(&self, now: u64) -> Rejected {
        let soonest = self.slots.iter().map(|l| l.expires_at).min();
        Rejected {
            reason: RejectReason::Full,
            retry_after_ms: soonest.map_or(1, |t| t.saturating_sub(now)).max(1),
        }
    }
}
