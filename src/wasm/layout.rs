//! The numeric layouts of the boundary, named once. The TypeScript layer reads and writes the
//! same positions through `js/src/layout.ts` (a `const enum` per layout, inlined by the bundler);
//! `tests/layout.rs` checks that every name there has the value it has here, and the reverse.
//!
//! Each group becomes a module of `usize` constants (`cfg::OPEN_DURATION`) and a row of
//! [`ALL`] (`("Cfg", "OPEN_DURATION", 6)`), which the test compares with the TypeScript file.

macro_rules! layouts {
    ($($(#[$doc:meta])* $group:ident / $ts:literal { $($name:ident = $value:expr),* $(,)? })*) => {
        $(
            $(#[$doc])*
            pub mod $group {
                $(pub const $name: usize = $value;)*
            }
        )*
        /// Every layout constant: (TypeScript enum, name, value).
        pub const ALL: &[(&str, &str, usize)] = &[$($(($ts, stringify!($name), $value),)*)*];
    };
}

layouts! {
    /// A breaker configuration, read by `breaker_config`. `LEN` numbers; a snapshot to restore
    /// follows them.
    cfg / "Cfg" {
        TRIP = 0,            // 0 consecutive, 1 failures in window, 2 failure rate, 3 slow-call rate
        THRESHOLD = 1,       // failures, or a percentage for the rate rules
        WINDOW_MS = 2,       // failures-in-window span, or the slow-call limit
        MINIMUM_CALLS = 3,
        WINDOW_KIND = 4,     // 0 calls, 1 milliseconds (rate rules)
        WINDOW_SIZE = 5,
        OPEN_DURATION = 6,
        OPEN_JITTER = 7,
        OPEN_BACKOFF = 8,
        MAX_OPEN_DURATION = 9,
        PROBES = 10,
        PROBE_SUCCESSES = 11,
        PROBE_TIMEOUT = 12,
        SEED = 13,
        THROTTLE_MULTIPLIER = 14, // 0: no adaptive throttle
        THROTTLE_WINDOW = 15,
        THROTTLE_MINIMUM = 16,
        THROTTLE_MAX = 17,   // the most a call is refused with
        MAX_CONCURRENT = 18, // 0: no concurrency limit
        MAX_QUEUED = 19,
        QUEUE_TIMEOUT = 20,
        LEN = 21,
    }
    /// What `info` writes.
    info / "Info" {
        STATE = 0,           // at `now`: an elapsed OPEN period reads HALF_OPEN
        MODE = 1,
        OPEN_UNTIL = 2,      // -1: not OPEN, or isolated
        PROBES = 3,          // in flight
        ADMITTED = 4,
        REJECTED = 5,
        SUCCESSES = 6,
        FAILURES = 7,
        IGNORED = 8,
        STALE = 9,
        SLOW = 10,
        OPENED = 11,
        TRANSITION = 12,     // of the last acquire (OPEN → HALF_OPEN), else 0
        THROTTLED = 13,      // of the rejected, those the throttle shed
        THROTTLE = 14,       // the throttle's refusal probability at `now`
        FULL = 15,           // calls the concurrency limit refused (at once or after waiting)
        IN_FLIGHT = 16,      // calls holding a slot of it
        QUEUED = 17,         // calls waiting for one
        LEN = 18,
    }
    /// The positions of a snapshot's numbers that the TypeScript layer touches (it adds what its
    /// CLOSED fast path counted without the core). The whole layout is `encode_snapshot`'s.
    snap / "Snap" {
        STATE = 1,
        ADMITTED = 12,
        SUCCESSES = 14,
    }
    /// A retry policy and its classifier; the retryable statuses follow when `USE_RETRYABLE` is 1.
    retry / "Retry" {
        MAX_ATTEMPTS = 0,
        BASE_DELAY = 1,
        FACTOR = 2,
        MAX_DELAY = 3,
        DEADLINE = 4,        // -1: none
        JITTER = 5,          // 0 none, 1 full, 2 equal, 3 decorrelated, 4 proportional
        PROPORTION = 6,
        MAX_RETRY_AFTER = 7,
        USE_RETRYABLE = 8,
        LEN = 9,
    }
    /// A retry budget.
    budget / "Budget" {
        TTL = 0,
        MIN_PER_SEC = 1,
        RETRY_PERCENT = 2,
        LEN = 3,
    }
    /// The shared breaker's lease client options (`WasmLeaseClient::create`).
    lease_opts / "LeaseOpts" {
        MAX_BATCH = 0,
        FAIL_CLOSED = 1,     // 0 or 1
        RETRY_UNREACHABLE = 2,
        REQUEST_DEADLINE = 3,
        LEN = 4,
    }
    /// What the lease client's `info` answers.
    lease_info / "LeaseInfo" {
        KNOWN_STATE = 0,     // -1 before the first answer, else a state code
        IN_FALLBACK = 1,     // 0 or 1
        IN_FLIGHT = 2,       // a report in flight: 0 or 1
        REQUESTS = 3,
        UNACKNOWLEDGED = 4,
        DROPPED = 5,
        LOCAL_STATE = 6,     // the local breaker's state at `now`
        LEN = 7,
    }
    /// A refusal as one number: `-(retry_after_ms × SCALE + reason)` from the main module's
    /// `acquire` and `peek` and a bulkhead's `enter`. The lease client answers it less
    /// [`decision::REJECTED`], below its other answers.
    reject / "Reject" {
        OPEN = 0,
        HALF_OPEN_FULL = 1,
        ISOLATED = 2,
        THROTTLED = 3,
        FULL = 4,
        SCALE = 8,
    }
    /// What the lease client's `admit` and `on_acquire_reply` answer besides a ticket (≥ 0), as
    /// negatives: `-ACQUIRE` ask the coordinator, `-REFRESH` renew the lease first, `-RETRY` try
    /// again (an answer was unreadable), and from `-REJECTED` down a refusal.
    decision / "Decision" {
        ACQUIRE = 1,
        REFRESH = 2,
        RETRY = 3,
        REJECTED = 4,
    }
    /// What a breaker's concurrency limit answers: ids below `MARK` (2^31). `enter`: a slot id,
    /// `MARK + ticket` (wait for it), or a refusal (`reject`). `leave` and `poll_queue`: the
    /// ticket now holding a slot (the slot has its ticket's id), `MARK + ticket` (its wait timed
    /// out), or -1 (nothing).
    bulkhead / "Bulkhead" {
        MARK = 1 << 31,
    }
    /// The operations of `queue`, the concurrency limit's one export.
    queue / "Queue" {
        ENTER = 0,
        LEAVE = 1,
        POLL = 2,
        CANCEL = 3,
        DEADLINE = 4,
        ADOPT = 5,
    }
    /// Why a constructor refused (the negative of what it returns).
    refusal / "Refusal" {
        CONFIG = 1,          // a configuration the core does not accept
        MALFORMED = 2,       // a snapshot that is not numbers in the layout
        VERSION = 3,         // a snapshot of a format this build does not read
        MISMATCH = 4,        // a snapshot taken under another trip rule or window
        CORRUPT = 5,         // a snapshot with values no breaker produces
    }
}
