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
  Len = 14,
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
  Len = 13,
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

/** Why a constructor refused (the negative of what it returned). */
export const enum Refusal {
  Config = 1,
  Malformed = 2,
  Version = 3,
  Mismatch = 4,
  Corrupt = 5,
}
