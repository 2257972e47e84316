//! The numeric layouts of the boundary and the codes in them, named once. The TypeScript layer
//! reads and writes the same positions, and passes and reads the same codes, through
//! `js/src/codes/layout.ts` (a `const enum` per group, inlined by the bundler); `tests/layout.rs` checks
//! that every name there has the value it has here, and the reverse, that the TypeScript tables
//! indexed by a code list its names in its order, and that the calls into the core pass named
//! codes, not numbers.
//!
//! Each group becomes a module of constants of its type (`cfg::OPEN_DURATION: usize`,
//! `outcome::FAILURE: u32`) and rows of [`ALL`] (`("Cfg", "OPEN_DURATION", 6.0)`), which the test
//! compares with the TypeScript file. A group of positions ends with `LEN`.

macro_rules! layouts {
    ($($(#[$doc:meta])* $group:ident / $ts:literal : $ty:ty { $($name:ident = $value:expr),* $(,)? })*) => {
        $(
            $(#[$doc])*
            pub mod $group {
                $(pub const $name: $ty = $value;)*
            }
        )*
        /// Every constant: (TypeScript enum, name, value).
        pub const ALL: &[(&str, &str, f64)] = &[$($(($ts, stringify!($name), $group::$name as f64),)*)*];
    };
}

layouts! {
    /// A breaker configuration, read by `breaker_config`. `LEN` numbers; a snapshot to restore
    /// follows them.
    cfg / "Cfg": usize {
        TRIP = 0,            // a `trip` code
        THRESHOLD = 1,       // failures, or a percentage for the rate rules
        WINDOW_MS = 2,       // failures-in-window span, or the slow-call limit
        MINIMUM_CALLS = 3,
        WINDOW_KIND = 4,     // a `window_kind` code (rate rules)
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
    info / "Info": usize {
        STATE = 0,           // a `state` code, at `now`: an elapsed OPEN period reads HALF_OPEN
        MODE = 1,            // a `mode` code
        OPEN_UNTIL = 2,      // `sentinel::NONE`: not OPEN, or isolated
        PROBES = 3,          // in flight
        ADMITTED = 4,
        REJECTED = 5,
        SUCCESSES = 6,
        FAILURES = 7,
        IGNORED = 8,
        STALE = 9,
        SLOW = 10,
        OPENED = 11,
        TRANSITION = 12,     // a `transition` code, of the last acquire (OPEN → HALF_OPEN)
        THROTTLED = 13,      // of the rejected, those the throttle shed
        THROTTLE = 14,       // the throttle's refusal probability at `now`
        FULL = 15,           // calls the concurrency limit refused (at once or after waiting)
        IN_FLIGHT = 16,      // calls holding a slot of it
        QUEUED = 17,         // calls waiting for one
        FAST = 18,           // the `fast` bits of the breaker's configuration (they never change)
        QUIET = 19,          // `Breaker::quiet`: successes the host may count alone (≤ 2^32 - 1)
        QUIET_UNTIL = 20,    // until when (ms; 2^64 - 1: time does not matter)
        QUIET_SLOW = 21,     // the longest quiet success (ms; 2^64 - 1: any)
        LEN = 22,
    }
    /// A retry policy and its classifier; the retryable statuses follow when `USE_RETRYABLE` is 1.
    retry / "Retry": usize {
        MAX_ATTEMPTS = 0,
        BASE_DELAY = 1,
        FACTOR = 2,
        MAX_DELAY = 3,
        DEADLINE = 4,        // -1: none
        JITTER = 5,          // a `jitter` code
        PROPORTION = 6,
        MAX_RETRY_AFTER = 7,
        USE_RETRYABLE = 8,
        LEN = 9,
    }
    /// A retry budget.
    budget / "Budget": usize {
        TTL = 0,
        MIN_PER_SEC = 1,
        RETRY_PERCENT = 2,
        LEN = 3,
    }
    /// The shared breaker's lease client options (`WasmLeaseClient::create`).
    lease_opts / "LeaseOpts": usize {
        MAX_BATCH = 0,
        FAIL_CLOSED = 1,     // 0 or 1
        RETRY_UNREACHABLE = 2,
        REQUEST_DEADLINE = 3,
        LEN = 4,
    }
    /// What the lease client's `info` answers.
    lease_info / "LeaseInfo": usize {
        KNOWN_STATE = 0,     // `sentinel::NONE` before the first answer, else a `state` code
        IN_FALLBACK = 1,     // 0 or 1
        IN_FLIGHT = 2,       // a report in flight: 0 or 1
        REQUESTS = 3,
        UNACKNOWLEDGED = 4,
        DROPPED = 5,
        LOCAL_STATE = 6,     // the local breaker's `state` code at `now`
        ADMITTED = 7,        // `ClientStats`, from here on
        REJECTED = 8,
        THROTTLED = 9,
        SUCCESSES = 10,
        FAILURES = 11,
        IGNORED = 12,
        THROTTLE = 13,       // the probability a call is shed now (`LeaseClient::throttle_probability`)
        LEN = 14,
    }
    /// A refusal as one number, in every module: `-(retry_after_ms × SCALE + reason)`, from the
    /// main module's `acquire` and `peek`, a bulkhead's `enter` and the lease client's `admit`
    /// and `on_answer`. The core's retry-after is at least 1 ms, so a refusal is at most
    /// `-SCALE`, below every other negative answer. A handle that names no breaker is answered
    /// `NO_BREAKER` (isolated, with no wait).
    reject / "Reject": i64 {
        OPEN = 0,
        HALF_OPEN_FULL = 1,
        ISOLATED = 2,
        THROTTLED = 3,
        FULL = 4,
        SCALE = 8,
        NO_BREAKER = -ISOLATED,
    }
    /// What the lease client's `admit`, `admit_again` and `on_answer` answer besides a ticket
    /// (≥ 0) and a refusal (`reject`, at most `-reject::SCALE`), as negatives: `-ACQUIRE` ask
    /// the coordinator, `-REFRESH` renew the lease first; after an answer, `-AGAIN` decide the
    /// waiting call again (`admit_again`), `-REPORT` send a report now, `-IDLE` nothing.
    decision / "Decision": i32 {
        ACQUIRE = 1,
        REFRESH = 2,
        AGAIN = 3,
        REPORT = 4,
        IDLE = 5,
    }
    /// Which request the lease client's `on_answer` is fed the answer to (`shared::Op`).
    op / "Op": u32 {
        ACQUIRE = 0,
        BACKGROUND_ACQUIRE = 1,
        REPORT = 2,
    }
    /// What a breaker's concurrency limit answers: ids below `MARK` (2^31). `enter`: a slot id,
    /// `MARK + ticket` (wait for it), or a refusal (`reject`). `leave` and `poll_queue`: the
    /// ticket now holding a slot (the slot has its ticket's id), `MARK + ticket` (its wait timed
    /// out), or -1 (nothing).
    bulkhead / "Bulkhead": u32 {
        MARK = 1 << 31,
    }
    /// The operations of `queue`, the concurrency limit's one export.
    queue / "Queue": usize {
        ENTER = 0,
        LEAVE = 1,
        POLL = 2,
        CANCEL = 3,
        DEADLINE = 4,
        ADOPT = 5,
    }
    /// A number standing for nothing: no permit (`report`), no time (`info`'s `OPEN_UNTIL`,
    /// the concurrency limit's deadline), no news (its `leave` and `poll`), no state known yet.
    sentinel / "Sentinel": i32 {
        NONE = -1,
    }
    /// The trip rules of `cfg::TRIP`.
    trip / "Trip": u32 {
        CONSECUTIVE = 0,
        FAILURES_IN_WINDOW = 1,
        FAILURE_RATE = 2,
        SLOW_CALL_RATE = 3,
    }
    /// The windows of the rate rules, `cfg::WINDOW_KIND`.
    window_kind / "WindowKind": u32 {
        CALLS = 0,
        MILLIS = 1,
    }
    /// A breaker's states (`info`, snapshots, the lease client, the coordinator's transitions).
    state / "State": u32 {
        CLOSED = 0,
        OPEN = 1,
        HALF_OPEN = 2,
    }
    /// A breaker's modes (`info`, snapshots).
    mode / "Mode": u32 {
        AUTOMATIC = 0,
        ISOLATED = 1,
        DISABLED = 2,
    }
    /// The kind of a snapshot's counter, the trip rule's memory (`Counter`'s variants), written
    /// before the counter's numbers.
    counter_kind / "CounterKind": u32 {
        CONSECUTIVE = 0,     // [failures]
        FAILURE_TIMES = 1,   // [head, n, times × n]
        CALLS = 2,           // [head, failures, slow, n, ring × n]
        BUCKETS = 3,         // [n, (index, calls, failures, slow) × n]
    }
    /// A transition as one number: `FIRST + from × STRIDE + to` (`state` codes), or `NONE`.
    transition / "Transition": u32 {
        NONE = 0,
        FIRST = 1,
        STRIDE = 3,
    }
    /// The manual overrides of `control`.
    control / "Control": u32 {
        ISOLATE = 0,
        RESET = 1,
        DISABLE = 2,
        ENABLE = 3,
    }
    /// How a call ended (`report`, `classify`, the lease client's `record`).
    outcome / "Outcome": u32 {
        SUCCESS = 0,
        FAILURE = 1,
        IGNORED = 2,
    }
    /// The retry policy's jitters, `retry::JITTER` (`PROPORTIONAL` reads `retry::PROPORTION`).
    jitter / "Jitter": u32 {
        NONE = 0,
        FULL = 1,
        EQUAL = 2,
        DECORRELATED = 3,
        PROPORTIONAL = 4,
    }
    /// A permit as one number: `(generation mod 2^20) × KIND + kind`, the kind `NORMAL`,
    /// `BYPASS` or `PROBE + probe id`.
    permit / "Permit": u64 {
        NORMAL = 0,
        BYPASS = 1,
        PROBE = 2,
        KIND = 1 << 33,
    }
    /// Why `decide` gives up, answered negated (a delay is ≥ 0).
    give_up / "GiveUp": i32 {
        NOT_RETRYABLE = 1,
        ATTEMPTS_EXHAUSTED = 2,
        DEADLINE = 3,
        RETRY_AFTER_TOO_LONG = 4,
        BUDGET_EXHAUSTED = 5,
    }
    /// The operations of `budget_op`.
    budget_op / "BudgetOp": u32 {
        DEPOSIT = 0,
        WITHDRAW = 1,
        AVAILABLE = 2,
    }
    /// A hedging policy (`hedge_new`, the adaptive module's).
    hedge / "Hedge": usize {
        AFTER = 0,           // ms; 0: auto
        BUDGET = 1,
        QUANTILE = 2,
        MIN_AFTER = 3,
        MAX_AFTER = 4,
        LEN = 5,
    }
    /// The operations of `hedge_op(h, op, tier, value)`.
    hedge_op / "HedgeOp": u32 {
        CALL = 0,            // a call begins (returns 0)
        AFTER = 1,           // the delay before `tier` is hedged, ms
        START = 2,           // value 1: both tiers calm; 1 if a hedge starts, else 0
        PROGRESS = 3,        // `tier` showed progress after `value` ms (returns 0)
        WON = 4,             // a hedged call ended, the hedge first; `value`: the loser's input tokens
        LOST = 5,            // a hedged call ended, the first tier first; likewise
        STATS = 6,           // writes `HedgeStats` at `io`, returns its address
    }
    /// What `hedge_op`'s STATS writes.
    hedge_stats / "HedgeStats": usize {
        CALLS = 0,
        STARTED = 1,
        WON = 2,
        LOST = 3,
        REFUSED = 4,
        HELD = 5,
        EXTRA_INPUT = 6,
        TOKENS = 7,
        LEN = 8,
    }
    /// `classify`'s flags in (`NETWORK`, `TIMEOUT`, `CANCELLED`), and its answer:
    /// `class | RETRYABLE | outcome << OUTCOME_SHIFT`, the class under `CLASS_MASK`.
    classify / "Classify": u32 {
        NETWORK = 1,
        TIMEOUT = 2,
        CANCELLED = 4,
        CLASS_MASK = 15,
        RETRYABLE = 16,
        OUTCOME_SHIFT = 5,
    }
    /// What `read_text` reads: an error's `CODES` (answered `Code::index | status << STATUS_SHIFT`,
    /// the index under `CODE_MASK`) or a finish reason's `ENDING` (an `ending` code).
    text / "Text": u32 {
        CODES = 0,
        ENDING = 1,
        STATUS_SHIFT = 8,
        CODE_MASK = 255,
    }
    /// The classes of `classify`'s answer.
    class / "Class": u32 {
        SUCCESS = 0,
        TRANSIENT = 1,
        RATE_LIMITED = 2,
        OVERLOADED = 3,
        QUOTA_EXHAUSTED = 4,
        CLIENT_ERROR = 5,
        SERVER_ERROR = 6,
        NETWORK = 7,
        TIMEOUT = 8,
        CANCELLED = 9,
        DECLINED = 10,
    }
    /// How an answer ended (`read_text`'s `ENDING`): `Ending`'s discriminants.
    ending / "Ending": u32 {
        COMPLETE = 0,
        TRUNCATED = 1,
        DECLINED = 2,
        FAILED = 3,
        UNKNOWN = 4,
    }
    /// A stream watch's limits (`watch_new`), in ms; 0: off.
    watch / "Watch": usize {
        FIRST = 0,
        IDLE = 1,
        TOTAL = 2,
        FIRST_OUTPUT = 3,
        THINKING = 4,
        LEN = 5,
    }
    /// What a stream's item is (`watch_item`): the bytes of an event stream's chunk, of another
    /// body's chunk, or a stream object's chunk as JSON; SPLIT: an event stream's chunk split
    /// into records for the host's own readers (written in the byte buffer; the answer is their
    /// length), judged by `watch_reading`.
    item / "Item": u32 {
        SSE = 0,
        BYTES = 1,
        OBJECT = 2,
        SPLIT = 3,
    }
    /// `watch_op`'s operations: the stream ended, broke; the reader fell behind, caught up; a
    /// limit's time (answered as a step), the next deadline (`sentinel::NONE`: none), when the
    /// first progress came (`sentinel::NONE`: not yet), the last error event's data (its length,
    /// written at `bytes`).
    watch_op / "WatchOp": u32 {
        END = 0,
        BROKE = 1,
        PAUSE = 2,
        RESUME = 3,
        TICK = 4,
        DEADLINE = 5,
        FIRST_AT = 6,
        ERROR_DATA = 7,
    }
    /// A `Step`'s kind, as `watch_item` and `watch_op` answer it (under `step_bits::FIELD_MASK`).
    stream_step / "StreamStep": u32 {
        HOLD = 0,
        BEGIN = 1,
        PASS = 2,
        FAIL = 3,
        CUT = 4,
        SUCCESS = 5,
        IGNORED = 6,
        NONE = 7,            // a tick before any limit ran out
    }
    /// The rest of a step's code: a stop's kind at `STOP_SHIFT`, the limit at `LIMIT_SHIFT` (each
    /// under `FIELD_MASK`), `COUNTED` a cut the upstream is blamed for, the in-band error's status
    /// at `STATUS_SHIFT` and `Code::index` at `CODE_SHIFT` (0: none); `ERRORED`: the item carried
    /// an error (`watch_item`), whatever the step. A reading's error (`reading_bits::ERROR`) sits
    /// at the same shifts.
    step_bits / "StepBits": u32 {
        FIELD_MASK = 7,
        STOP_SHIFT = 3,
        LIMIT_SHIFT = 6,
        COUNTED = 512,
        STATUS_SHIFT = 10,
        CODE_SHIFT = 20,
        ERRORED = 33554432,  // 1 << 25
    }
    /// A `Reading`'s progress, as `read_item` answers it and `watch_reading` takes it (a host's
    /// own callbacks may have changed it), under `reading_bits::PROGRESS_MASK`.
    reading / "Reading": u32 {
        NONE = 0,
        KEEP_ALIVE = 1,
        THINKING = 2,
        OUTPUT = 3,
    }
    /// The rest of a reading's code: the ending + 1 at `ENDING_SHIFT` under `ENDING_MASK` (0:
    /// none), `MALFORMED`, `ERROR` (its status and code at `step_bits`' shifts).
    reading_bits / "ReadingBits": u32 {
        PROGRESS_MASK = 3,
        ENDING_SHIFT = 2,
        ENDING_MASK = 7,
        MALFORMED = 32,
        ERROR = 64,
    }
    /// A `Stop`'s kind (`step_bits::STOP_SHIFT`).
    stream_stop / "StreamStop": u32 {
        TIMEOUT = 0,
        ERROR = 1,
        MALFORMED = 2,
        EMPTY = 3,
        BROKEN = 4,
    }
    /// Which limit ran out (`step_bits::LIMIT_SHIFT`): the order of `watch`'s limits.
    stream_limit / "StreamLimit": u32 {
        FIRST = 0,
        IDLE = 1,
        TOTAL = 2,
        FIRST_OUTPUT = 3,
        THINKING = 4,
    }
    /// What `route` tells its host to do (`WasmRoute.kind`).
    plan / "Plan": u32 {
        PASS = 0,            // not one of the routes, or its group is off: the host goes on
        ANSWER = 1,          // answer `status` and `answer` now
        METRICS = 2,         // every served breaker's state
        OBJECT = 3,          // call the object
        STATUS = 4,          // every served breaker's state, as the status page
    }
    /// What a route's request body is (`WasmRoute.body`).
    body / "Body": u32 {
        NONE = 0,
        EXCHANGE = 1,        // a protocol message, read bounded and forwarded
        SETTINGS = 2,        // a reset's settings, read bounded and forwarded
    }
    /// The refusals a host meets on its own (`refusal`).
    http / "Http": u32 {
        TOO_LARGE = 0,
        UNREADABLE = 1,
        UNREACHABLE = 2,
        BAD_GATEWAY = 3,
        SETTINGS_PINNED = 4,
        STORAGE = 5,
        INTERNAL = 6,
        UNKNOWN_BREAKER = 7,
        NO_SUCH_ROUTE = 8,
    }
    /// The request methods of `route` and `object_op`.
    verb / "Verb": u32 {
        GET = 0,
        POST = 1,
        OTHER = 2,
    }
    /// What a CLOSED, automatic breaker lets its host skip (`info::FAST`, the bits of
    /// `FastPath`): `ADMIT` admitting a call changes nothing but a counter (the host may reuse
    /// the permit); `TIMED` a report needs the time the call was admitted. The successes it may
    /// count alone are `info::QUIET_*` (`Breaker::quiet`), handed over by `record_quiet`.
    fast / "Fast": u32 {
        ADMIT = 1,
        TIMED = 2,
    }
    /// One transition of the coordinator's `transitions` (`state` codes, ms).
    step / "Step": usize {
        FROM = 0,
        TO = 1,
        AT = 2,
        LEN = 3,
    }
    /// Why a constructor refused (the negative of what it returns).
    refusal / "Refusal": usize {
        CONFIG = 1,          // a configuration the core does not accept
        MALFORMED = 2,       // a snapshot that is not numbers in the layout
        VERSION = 3,         // a snapshot of a format this build does not read
        MISMATCH = 4,        // a snapshot taken under another trip rule or window
        CORRUPT = 5,         // a snapshot with values no breaker produces
    }
    /// The core's limits on the options the TypeScript layer checks before they reach it, so
    /// that an option out of range is refused by its own name (the main module's refusals carry
    /// no words), and the size of the lease client's ticket ring, which `isHealthy()` keeps in
    /// step with: the numbers are these, never written again there. Bounds, not codes: two may
    /// be equal.
    limit / "Limit": f64 {
        MAX_DURATION_MS = crate::breaker::MAX_DURATION_MS as f64,
        MAX_COUNT = crate::breaker::MAX_COUNT as f64,
        MAX_WINDOW_CALLS = crate::breaker::MAX_WINDOW_CALLS as f64,
        MAX_HALF_OPEN_PROBES = crate::breaker::MAX_HALF_OPEN_PROBES as f64,
        MAX_HALF_OPEN_SUCCESSES = crate::breaker::MAX_HALF_OPEN_SUCCESSES as f64,
        MAX_ATTEMPTS = crate::retry::MAX_ATTEMPTS as f64,
        MIN_BUDGET_TTL_MS = crate::retry::MIN_BUDGET_TTL_MS as f64,
        MAX_BUDGET_TTL_MS = crate::retry::MAX_BUDGET_TTL_MS as f64,
        MAX_RETRY_PERCENT = crate::retry::MAX_RETRY_PERCENT,
        MAX_BULKHEAD = crate::bulkhead::MAX_BULKHEAD as f64,
        MAX_LEASE_MS = crate::shared::MAX_LEASE_MS as f64,
        MAX_BATCH = crate::shared::protocol::MAX_OUTCOMES_PER_BATCH as f64,
        RESEND_WINDOW_MS = crate::shared::protocol::RESEND_WINDOW_MS as f64,
        DEDUP_WINDOW_MS = crate::shared::protocol::DEDUP_WINDOW_MS as f64, // a store key's shortest life
        TICKETS = 4_096.0, // the lease client's ring of tickets (src/wasm/shared.rs)
    }
}
