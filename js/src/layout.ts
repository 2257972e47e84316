// The numeric layouts of the wasm boundary, named once for TypeScript: each `const enum` is the
// twin of a module of src/wasm/layout.rs (`Cfg.OpenDuration` there is `cfg::OPEN_DURATION`), and
// tests/layout.rs fails when a name or a value differs on either side. The bundler inlines the
// values: none of this is in the package's JavaScript.

/** A breaker configuration (`breaker_config`); a snapshot to restore follows it. */
export const enum Cfg {
  Trip = 0,
  Threshold = 1,
  WindowMs = 2,
  MinimumCalls = 3,
  WindowKind = 4,
  WindowSize = 5,
  OpenDuration = 6,
  OpenJitter = 7,
  OpenBackoff = 8,
  MaxOpenDuration = 9,
  Probes = 10,
  ProbeSuccesses = 11,
  ProbeTimeout = 12,
  Seed = 13,
  ThrottleMultiplier = 14,
  ThrottleWindow = 15,
  ThrottleMinimum = 16,
  ThrottleMax = 17,
  MaxConcurrent = 18,
  MaxQueued = 19,
  QueueTimeout = 20,
  Len = 21,
}

/** What `info` writes. */
export const enum Info {
  State = 0,
  Mode = 1,
  OpenUntil = 2,
  Probes = 3,
  Admitted = 4,
  Rejected = 5,
  Successes = 6,
  Failures = 7,
  Ignored = 8,
  Stale = 9,
  Slow = 10,
  Opened = 11,
  Transition = 12,
  Throttled = 13,
  Throttle = 14,
  Full = 15,
  InFlight = 16,
  Queued = 17,
  Len = 18,
}

/** The positions of a snapshot's numbers that this layer touches. */
export const enum Snap {
  State = 1,
  Admitted = 12,
  Successes = 14,
}

/** A retry policy and its classifier; the retryable statuses follow when `UseRetryable` is 1. */
export const enum Retry {
  MaxAttempts = 0,
  BaseDelay = 1,
  Factor = 2,
  MaxDelay = 3,
  Deadline = 4,
  Jitter = 5,
  Proportion = 6,
  MaxRetryAfter = 7,
  UseRetryable = 8,
  Len = 9,
}

/** A retry budget. */
export const enum Budget {
  Ttl = 0,
  MinPerSec = 1,
  RetryPercent = 2,
  Len = 3,
}

/** The shared breaker's lease client options. */
export const enum LeaseOpts {
  MaxBatch = 0,
  FailClosed = 1,
  RetryUnreachable = 2,
  RequestDeadline = 3,
  Len = 4,
}

/** What the lease client's `info` answers. */
export const enum LeaseInfo {
  KnownState = 0,
  InFallback = 1,
  InFlight = 2,
  Requests = 3,
  Unacknowledged = 4,
  Dropped = 5,
  LocalState = 6,
  Len = 7,
}

/** A refusal as one number: `-(retryAfterMs × Scale + reason)`; the lease client's less `Decision.Rejected`. */
export const enum Reject {
  Open = 0,
  HalfOpenFull = 1,
  Isolated = 2,
  Throttled = 3,
  Full = 4,
  Scale = 8,
}

/** The lease client's answers besides a ticket (≥ 0), as negatives; from `-Rejected` down a refusal. */
export const enum Decision {
  Acquire = 1,
  Refresh = 2,
  Retry = 3,
  Rejected = 4,
}

/** A breaker's concurrency limit's answers: ids below `Mark`; `Mark + ticket` queued or timed out. */
export const enum Bulkhead {
  Mark = 2147483648,
}

/** The operations of `queue`, the concurrency limit's one export. */
export const enum Queue {
  Enter = 0,
  Leave = 1,
  Poll = 2,
  Cancel = 3,
  Deadline = 4,
  Adopt = 5,
}

/** Why a constructor refused (the negative of what it returned). */
export const enum Refusal {
  Config = 1,
  Malformed = 2,
  Version = 3,
  Mismatch = 4,
  Corrupt = 5,
}
