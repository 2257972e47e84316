// The numeric layouts of the wasm boundary and the codes in them, named once for TypeScript: each
// `const enum` is the twin of a module of src/wasm/layout.rs (`Cfg.OpenDuration` there is
// `cfg::OPEN_DURATION`), and tests/layout.rs fails when a name or a value differs on either side,
// when a table indexed by a code lists its names in another order, or when a call into the core
// passes a code as a bare number. The bundler inlines the values: none of this is in the
// package's JavaScript.

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
  Fast = 18,
  Quiet = 19,
  QuietUntil = 20,
  QuietSlow = 21,
  Len = 22,
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
  Admitted = 7,
  Rejected = 8,
  Throttled = 9,
  Successes = 10,
  Failures = 11,
  Ignored = 12,
  Throttle = 13,
  Len = 14,
}

/**
 * A refusal as one number, in every module: `-(retryAfterMs × Scale + reason)`, at most `-Scale`
 * (the core's retry-after is at least 1 ms). `NoBreaker`: a handle that names no breaker.
 */
export const enum Reject {
  Open = 0,
  HalfOpenFull = 1,
  Isolated = 2,
  Throttled = 3,
  Full = 4,
  Scale = 8,
  NoBreaker = -2,
}

/** The lease client's answers besides a ticket (≥ 0) and a refusal (`Reject`, at most `-Reject.Scale`), as negatives. */
export const enum Decision {
  Acquire = 1,
  Refresh = 2,
  Again = 3,
  Report = 4,
  Idle = 5,
}

/** Which request the lease client's `on_answer` is fed the answer to. */
export const enum Op {
  Acquire = 0,
  BackgroundAcquire = 1,
  Report = 2,
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

/** A number standing for nothing: no permit (`report`), no time, no news, no state known yet. */
export const enum Sentinel {
  None = -1,
}

/** The trip rules of `Cfg.Trip`. */
export const enum Trip {
  Consecutive = 0,
  FailuresInWindow = 1,
  FailureRate = 2,
  SlowCallRate = 3,
}

/** The windows of the rate rules, `Cfg.WindowKind`. */
export const enum WindowKind {
  Calls = 0,
  Millis = 1,
}

/** A breaker's states. */
export const enum State {
  Closed = 0,
  Open = 1,
  HalfOpen = 2,
}

/** A breaker's modes. */
export const enum Mode {
  Automatic = 0,
  Isolated = 1,
  Disabled = 2,
}

/**
 * The kind of a snapshot's counter (the trip rule's memory), written before its numbers. Only the
 * core reads them: `toJSON()` and `restore()` pass a snapshot's numbers through as they are.
 */
export const enum CounterKind {
  Consecutive = 0,
  FailureTimes = 1,
  Calls = 2,
  Buckets = 3,
}

/** A transition as one number: `First + from × Stride + to` (`State` codes), or `None`. */
export const enum Transition {
  None = 0,
  First = 1,
  Stride = 3,
}

/** The manual overrides of `control`. */
export const enum Control {
  Isolate = 0,
  Reset = 1,
  Disable = 2,
  Enable = 3,
}

/** How a call ended. */
export const enum Outcome {
  Success = 0,
  Failure = 1,
  Ignored = 2,
}

/** The retry policy's jitters, `Retry.Jitter`. */
export const enum Jitter {
  None = 0,
  Full = 1,
  Equal = 2,
  Decorrelated = 3,
  Proportional = 4,
}

/** A permit as one number: `(generation mod 2^20) × Kind + kind`, the kind `Normal`, `Bypass` or `Probe + id`. */
export const enum Permit {
  Normal = 0,
  Bypass = 1,
  Probe = 2,
  Kind = 8589934592,
}

/** Why `decide` gives up, answered negated (a delay is ≥ 0). */
export const enum GiveUp {
  NotRetryable = 1,
  AttemptsExhausted = 2,
  Deadline = 3,
  RetryAfterTooLong = 4,
  BudgetExhausted = 5,
}

/** The operations of `budget_op`. */
export const enum BudgetOp {
  Deposit = 0,
  Withdraw = 1,
  Available = 2,
}

/** A hedging policy (`hedge_new`, the adaptive module's). */
export const enum Hedge {
  After = 0,
  Budget = 1,
  Quantile = 2,
  MinAfter = 3,
  MaxAfter = 4,
  Len = 5,
}

/** The operations of `hedge_op(h, op, tier, value)`. */
export const enum HedgeOp {
  Call = 0,
  After = 1,
  Start = 2,
  Progress = 3,
  Won = 4,
  Lost = 5,
  Stats = 6,
}

/** What `hedge_op`'s `Stats` writes. */
export const enum HedgeStats {
  Calls = 0,
  Started = 1,
  Won = 2,
  Lost = 3,
  Refused = 4,
  Held = 5,
  ExtraInput = 6,
  Tokens = 7,
  Len = 8,
}

/** `classify`'s flags in, and its answer: `class | Retryable | outcome << OutcomeShift`. */
export const enum Classify {
  Network = 1,
  Timeout = 2,
  Cancelled = 4,
  ClassMask = 15,
  Retryable = 16,
  OutcomeShift = 5,
}

/** What `read_text` reads: `Codes` (answered `index | status << StatusShift`) or an `Ending`. */
export const enum Text {
  Codes = 0,
  Ending = 1,
  StatusShift = 8,
  CodeMask = 255,
}

/** The classes of `classify`'s answer. */
export const enum Class {
  Success = 0,
  Transient = 1,
  RateLimited = 2,
  Overloaded = 3,
  QuotaExhausted = 4,
  ClientError = 5,
  ServerError = 6,
  Network = 7,
  Timeout = 8,
  Cancelled = 9,
  Declined = 10,
}

/** How an answer ended (`read_text`'s `Ending`). */
export const enum Ending {
  Complete = 0,
  Truncated = 1,
  Declined = 2,
  Failed = 3,
  Unknown = 4,
}

/** A stream watch's limits (`watch_new`), in ms; 0: off. */
export const enum Watch {
  First = 0,
  Idle = 1,
  Total = 2,
  FirstOutput = 3,
  Thinking = 4,
  Len = 5,
}

/** What a stream's item is (`watch_item`). */
export const enum Item {
  Sse = 0,
  Bytes = 1,
  Object = 2,
  Split = 3,
}

/** A reading's progress (`read_item`, `watch_reading`): src/wasm/layout.rs `reading`. */
export const enum Reading {
  None = 0,
  KeepAlive = 1,
  Thinking = 2,
  Output = 3,
}

/** The rest of a reading's code (`reading_bits`). */
export const enum ReadingBits {
  ProgressMask = 3,
  EndingShift = 2,
  EndingMask = 7,
  Malformed = 32,
  Error = 64,
}

/** `watch_op`'s operations. */
export const enum WatchOp {
  End = 0,
  Broke = 1,
  Pause = 2,
  Resume = 3,
  Tick = 4,
  Deadline = 5,
  FirstAt = 6,
  ErrorData = 7,
}

/** A step's kind as `watch_item` and `watch_op` answer it (src/wasm/layout.rs `stream_step`). */
export const enum StreamStep {
  Hold = 0,
  Begin = 1,
  Pass = 2,
  Fail = 3,
  Cut = 4,
  Success = 5,
  Ignored = 6,
  None = 7,
}

/** The rest of a step's code (`step_bits`). */
export const enum StepBits {
  FieldMask = 7,
  StopShift = 3,
  LimitShift = 6,
  Counted = 512,
  StatusShift = 10,
  CodeShift = 20,
  Errored = 33554432,
}

/** A stop's kind (`stream_stop`). */
export const enum StreamStop {
  Timeout = 0,
  Error = 1,
  Malformed = 2,
  Empty = 3,
  Broken = 4,
}

/** Which limit ran out (`stream_limit`), in the order of `Watch`'s limits. */
export const enum StreamLimit {
  First = 0,
  Idle = 1,
  Total = 2,
  FirstOutput = 3,
  Thinking = 4,
}

/** What `route` tells its host to do (`WasmRoute.kind`). */
export const enum Plan {
  Pass = 0,
  Answer = 1,
  Metrics = 2,
  Object = 3,
  Status = 4,
}

/** What a route's request body is (`WasmRoute.body`). */
export const enum Body {
  None = 0,
  Exchange = 1,
  Settings = 2,
}

/** The refusals a host meets on its own (`refusal`). */
export const enum Http {
  TooLarge = 0,
  Unreadable = 1,
  Unreachable = 2,
  BadGateway = 3,
  SettingsPinned = 4,
  Storage = 5,
  Internal = 6,
  UnknownBreaker = 7,
  NoSuchRoute = 8,
}

/** The request methods of `route` and `object_op`. */
export const enum Verb {
  Get = 0,
  Post = 1,
  Other = 2,
}

/** What a CLOSED, automatic breaker lets this layer skip (`Info.Fast`, the core's `FastPath`). */
export const enum Fast {
  Admit = 1,
  Timed = 2,
}

/** One transition of the coordinator's `transitions`. */
export const enum Step {
  From = 0,
  To = 1,
  At = 2,
  Len = 3,
}

/** Why a constructor refused (the negative of what it returned). */
export const enum Refusal {
  Config = 1,
  Malformed = 2,
  Version = 3,
  Mismatch = 4,
  Corrupt = 5,
}

/**
 * The core's limits on options this layer checks before they reach it (src/wasm/layout.rs): a
 * number out of range is refused by the option's own name, with the core's bound. `Tickets`: the
 * lease client's ticket ring, which `isHealthy()` keeps in step with.
 */
export const enum Limit {
  MaxDurationMs = 4503599627370496,
  MaxCount = 4294967295,
  MaxWindowCalls = 100000,
  MaxHalfOpenProbes = 1024,
  MaxHalfOpenSuccesses = 100,
  MaxAttempts = 10000,
  MinBudgetTtlMs = 1000,
  MaxBudgetTtlMs = 60000,
  MaxRetryPercent = 1000,
  MaxBulkhead = 100000,
  MaxLeaseMs = 3600000,
  MaxBatch = 62500,
  ResendWindowMs = 300000,
  DedupWindowMs = 900000,
  Tickets = 4096,
}
