//! How each type of the shared protocol, its records and settings is spelled in JSON: one table
//! per type, read and written by [`json`](super::json). The spelling is the one serde's derive
//! gave these types when earlier versions wrote them with serde_json (records and messages
//! outlive deploys). The messages and the coordinator's records have no serde impls: this is
//! their one codec. The settings and the core's types they carry ([`SharedSpec`],
//! [`BreakerConfig`], [`Snapshot`]…) keep their `Serialize`/`Deserialize` under the `serde`
//! feature, for users who configure and persist them with serde, and spell them alike.
//! tests/shared_wire.rs checks that every type reads back what this writes, that what it writes is
//! JSON with the field names below, that it reads the same document however serde_json lays it
//! out, and, for the types that keep serde, that both spell them alike, byte for byte.
//!
//! A field's mode says how it is read and written:
//! - `req`: must be there; always written.
//! - `opt`: an `Option`, absent or `null` when `None`; always written (`null`).
//! - `or(default)`: absent means `default`; always written.
//! - `skip`: an `Option`, left out when `None`.
//! - `skip_empty`: a `Vec` (or a type with `is_empty` and `Default`), left out when empty,
//!   absent means empty.
//! - `skip_zero`: a number, left out when 0, absent means 0 (a count added after records were
//!   stored, so that a record without it is written back as it was).
//! - `readable`: an `Option`, `None` when absent or not readable as one (see [`Record::spec`]).
//!
//! Types that refuse unknown fields say `deny_unknown`; the others pass over fields they do not
//! know (written by a newer version).

use alloc::vec::Vec;

use super::coordinator::{Grant, Record, SessionKey};
use super::json::{variant_index, Error, Value, Wire, Writer};
use super::protocol::{
    Batch, Change, Counts, ErrorReply, Exchange, ExchangeReply, Lease, Minute, ObjectCounters,
    OptionsMismatch, ProbeReport, Refusal, StateView, WireOutcome, WirePermit, WireReason,
    WireRejected,
};
use super::spec::{SharedSpec, DEFAULT_LEASE_MS};
use crate::breaker::{
    BreakerConfig, Bucket, Counter, Mode, ProbeLease, State, Stats, Throttle, ThrottleBucket,
    ThrottleWindow, TripRule, Window,
};
use crate::snapshot::Snapshot;

macro_rules! get {
    ($f:ident, $i:expr, req) => {
        $f.req($i)?
    };
    ($f:ident, $i:expr, opt) => {
        $f.opt($i)?
    };
    ($f:ident, $i:expr, skip) => {
        $f.opt($i)?
    };
    ($f:ident, $i:expr, skip_empty) => {
        $f.or($i, Default::default())?
    };
    ($f:ident, $i:expr, skip_zero) => {
        $f.or($i, 0)?
    };
    ($f:ident, $i:expr, readable) => {
        $f.raw($i).and_then(|v| Wire::read(v).ok()).flatten()
    };
    ($f:ident, $i:expr, or, $d:expr) => {
        $f.or($i, $d)?
    };
}

macro_rules! put {
    ($w:ident, $k:expr, $v:expr, skip) => {
        if let Some(v) = $v {
            $w.field($k, v);
        }
    };
    ($w:ident, $k:expr, $v:expr, skip_empty) => {
        if !$v.is_empty() {
            $w.field($k, $v);
        }
    };
    ($w:ident, $k:expr, $v:expr, skip_zero) => {
        if *$v != 0 {
            $w.field($k, $v);
        }
    };
    ($w:ident, $k:expr, $v:expr, $mode:ident) => {
        $w.field($k, $v)
    };
}

/// `Wire` for a struct with named fields, from its table of fields.
macro_rules! wire_struct {
    ($t:ty, $deny:expr, { $($f:ident: $mode:ident $(($d:expr))?),* $(,)? }) => {
        impl Wire for $t {
            fn write(&self, w: &mut Writer) {
                w.open('{');
                $( put!(w, stringify!($f), &self.$f, $mode); )*
                w.close('}');
            }
            fn read(v: &Value<'_>) -> Result<Self, Error> {
                const NAMES: &[&str] = &[$(stringify!($f)),*];
                const _: () = assert!(NAMES.len() <= super::json::MAX_FIELDS);
                let f = v.fields(NAMES, $deny)?;
                let built = (|| {
                    // The fields' positions in the table, in order.
                    let mut i = 0usize;
                    let mut next = || {
                        i += 1;
                        i - 1
                    };
                    Some(Self {
                        $( $f: get!(f, next(), $mode $(, $d)?), )*
                    })
                })();
                f.done(built)
            }
        }
    };
}

/// `Wire` for an enum of unit variants, spelled as strings (read also as `{"variant": null}`,
/// as serde did).
macro_rules! wire_names {
    ($t:ident { $($v:ident = $s:literal),* $(,)? }) => {
        impl Wire for $t {
            fn write(&self, w: &mut Writer) {
                w.str(match self { $($t::$v => $s),* });
            }
            fn read(v: &Value<'_>) -> Result<Self, Error> {
                const ALL: &[$t] = &[$($t::$v),*];
                unit(v, &[$($s),*]).and_then(|i| {
                    ALL.get(i).copied().ok_or_else(|| Error::new("unknown variant"))
                })
            }
        }
    };
}

/// Which of `names` a unit variant is.
fn unit(v: &Value<'_>, names: &[&str]) -> Result<usize, Error> {
    match v.variant(names)? {
        (i, None | Some(Value::Null)) => Ok(i),
        (_, Some(other)) => Err(other.invalid("null")),
    }
}

const DENY: bool = true;
const PASS: bool = false;

// ---- the messages (src/shared/protocol.rs) ----

wire_names!(WireOutcome { Success = "success", Failure = "failure", Ignored = "ignored" });
wire_names!(WireReason {
    Open = "open",
    HalfOpenFull = "half_open_full",
    Isolated = "isolated",
    Throttled = "throttled",
    Full = "full",
});

wire_struct!(Counts, DENY, {
    generation: opt,
    successes: or(0),
    failures: or(0),
    ignored: or(0),
    throttled: skip_zero,
});
wire_struct!(ProbeReport, DENY, { generation: req, id: req, issued_at: or(0), outcome: req });
wire_struct!(Batch, DENY, { seq: req, counts: or(Vec::new()), probes: or(Vec::new()) });
wire_struct!(Exchange, DENY, { client: req, session: or(0), batches: or(Vec::new()) });
wire_struct!(Lease, PASS, {
    state: req,
    mode: req,
    generation: req,
    lease_ms: req,
    retry_after_ms: req,
    now: req,
    throttle_ppm: skip_zero,
});
wire_struct!(WirePermit, PASS, { generation: req, probe: opt, issued_at: req });
wire_struct!(WireRejected, PASS, { reason: req, retry_after_ms: req });
wire_struct!(ExchangeReply, PASS, {
    lease: req,
    permit: skip,
    rejected: skip,
    acked: or(Vec::new()),
    refused: skip_empty,
});
wire_struct!(Refusal, PASS, { seq: req, reason: req, last_applied: skip });
wire_struct!(ObjectCounters, PASS, {
    requests: or(0),
    acquires: or(0),
    reports: or(0),
    batches: or(0),
    duplicate_batches: or(0),
    refused_batches: or(0),
    unverified_batches: or(0),
    sessions_evicted_early: or(0),
    unmatched_probe_reports: or(0),
    counted_outcomes: or(0),
    probe_outcomes: or(0),
    probes_granted: or(0),
    half_open_entered: or(0),
    closed: or(0),
    incident_since: opt,
    incidents: or([0; 11]),
    incident_ms: or(0),
    sheds_dropped: skip_zero,
    outcomes_dropped: skip_zero,
    requests_refused: skip_zero,
});
wire_struct!(StateView, PASS, {
    name: req,
    lease: req,
    opened_at: opt,
    open_until: opt,
    probes_in_flight: req,
    stats: req,
    counters: req,
    restore_error: opt,
    options: or(0),
    options_mismatch: opt,
    sessions: or(0),
    settings: or(alloc::string::String::new()),
    transitions: or(Vec::new()),
    minutes: or(Vec::new()),
});
wire_struct!(Change, PASS, { from: req, to: req, at: req });
wire_struct!(Minute, PASS, { at: req, calls: or(0), failures: or(0), refused: or(0), shed: or(0) });
wire_struct!(OptionsMismatch, PASS, { stored: req, configured: req, resolution: req });
wire_struct!(ErrorReply, PASS, { error: req, message: req });

// ---- the records (src/shared/coordinator.rs) ----

/// `client~session`, as its `Display` writes it.
fn session_text(k: &SessionKey) -> alloc::string::String {
    let mut s = alloc::string::String::from(k.client().as_str());
    s.push('~');
    super::json::push_uint(&mut s, k.session());
    s
}

impl Wire for SessionKey {
    fn write(&self, w: &mut Writer) {
        w.str(&session_text(self));
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        SessionKey::parse(v.str()?).ok_or_else(|| Error::new("a session key is `client~session`"))
    }
}

type Sessions = alloc::collections::BTreeMap<SessionKey, (u64, u64)>;

impl Wire for Sessions {
    fn write(&self, w: &mut Writer) {
        w.open('{');
        for (k, v) in self {
            w.field(&session_text(k), v);
        }
        w.close('}');
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        let mut map = Sessions::new();
        for (k, v) in v.entries()? {
            let key = SessionKey::read(&Value::String(k.clone())).map_err(|e| e.at(k))?;
            map.insert(key, Wire::read(v).map_err(|e| e.at(k))?);
        }
        Ok(map)
    }
}

wire_struct!(Grant, PASS, { generation: req, id: req, session: req, issued_at: req });
wire_struct!(Record, PASS, {
    spec: readable,
    snapshot: req,
    clients: or(Sessions::new()),
    spent_ms: skip_empty,
    grants: or(Vec::new()),
    counters: or(ObjectCounters::default()),
    unverifiable_until: or(0),
    transitions: skip_empty,
    marks: skip_empty,
});

// ---- the settings (src/shared/spec.rs) and the core's types ----

wire_struct!(SharedSpec, DENY, {
    breaker: or(BreakerConfig::new()),
    lease_ms: or(DEFAULT_LEASE_MS),
});

const CONFIG: BreakerConfig = BreakerConfig::new();

wire_struct!(BreakerConfig, DENY, {
    trip: or(CONFIG.trip),
    open_duration_ms: or(CONFIG.open_duration_ms),
    open_jitter: or(CONFIG.open_jitter),
    open_backoff_factor: or(CONFIG.open_backoff_factor),
    max_open_duration_ms: or(CONFIG.max_open_duration_ms),
    half_open_max_probes: or(CONFIG.half_open_max_probes),
    half_open_success_threshold: or(CONFIG.half_open_success_threshold),
    probe_timeout_ms: or(CONFIG.probe_timeout_ms),
    seed: or(CONFIG.seed),
    throttle: skip,
});

const THROTTLE: Throttle = Throttle::new();

wire_struct!(Throttle, DENY, {
    multiplier: or(THROTTLE.multiplier),
    window_ms: or(THROTTLE.window_ms),
    minimum_requests: or(THROTTLE.minimum_requests),
    max_rejection_probability: or(THROTTLE.max_rejection_probability),
});

const TRIP_KINDS: &[&str] = &[
    "consecutive_failures",
    "failures_in_window",
    "failure_rate",
    "slow_call_rate",
];

/// Tagged by `kind`, next to the variant's fields (all required, no others).
impl Wire for TripRule {
    fn write(&self, w: &mut Writer) {
        w.open('{');
        match *self {
            TripRule::ConsecutiveFailures { threshold } => {
                w.key("kind");
                w.str("consecutive_failures");
                w.field("threshold", &threshold);
            }
            TripRule::FailuresInWindow {
                threshold,
                window_ms,
            } => {
                w.key("kind");
                w.str("failures_in_window");
                w.field("threshold", &threshold);
                w.field("window_ms", &window_ms);
            }
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            } => {
                w.key("kind");
                w.str("failure_rate");
                w.field("threshold_percent", &threshold_percent);
                w.field("minimum_calls", &minimum_calls);
                w.field("window", &window);
            }
            TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            } => {
                w.key("kind");
                w.str("slow_call_rate");
                w.field("threshold_percent", &threshold_percent);
                w.field("slow_call_ms", &slow_call_ms);
                w.field("minimum_calls", &minimum_calls);
                w.field("window", &window);
            }
        }
        w.close('}');
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        let tag = v.fields(&["kind"], PASS)?;
        let Some(kind) = tag.raw(0) else {
            return Err(Error::new("missing field `kind`"));
        };
        match variant_index(kind.str()?, TRIP_KINDS).map_err(|e| e.at("kind"))? {
            0 => {
                let f = v.fields(&["kind", "threshold"], DENY)?;
                f.done((|| {
                    Some(TripRule::ConsecutiveFailures {
                        threshold: f.req(1)?,
                    })
                })())
            }
            1 => {
                let f = v.fields(&["kind", "threshold", "window_ms"], DENY)?;
                f.done((|| {
                    Some(TripRule::FailuresInWindow {
                        threshold: f.req(1)?,
                        window_ms: f.req(2)?,
                    })
                })())
            }
            2 => {
                let f = v.fields(
                    &["kind", "threshold_percent", "minimum_calls", "window"],
                    DENY,
                )?;
                f.done((|| {
                    Some(TripRule::FailureRate {
                        threshold_percent: f.req(1)?,
                        minimum_calls: f.req(2)?,
                        window: f.req(3)?,
                    })
                })())
            }
            _ => {
                let f = v.fields(
                    &[
                        "kind",
                        "threshold_percent",
                        "slow_call_ms",
                        "minimum_calls",
                        "window",
                    ],
                    DENY,
                )?;
                f.done((|| {
                    Some(TripRule::SlowCallRate {
                        threshold_percent: f.req(1)?,
                        slow_call_ms: f.req(2)?,
                        minimum_calls: f.req(3)?,
                        window: f.req(4)?,
                    })
                })())
            }
        }
    }
}

/// `{"calls": n}` or `{"millis": ms}`.
impl Wire for Window {
    fn write(&self, w: &mut Writer) {
        w.open('{');
        match *self {
            Window::Calls(n) => w.field("calls", &n),
            Window::Millis(ms) => w.field("millis", &ms),
        }
        w.close('}');
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        match v.variant(&["calls", "millis"])? {
            (0, Some(n)) => u32::read(n).map(Window::Calls).map_err(|e| e.at("calls")),
            (_, Some(ms)) => u64::read(ms)
                .map(Window::Millis)
                .map_err(|e| e.at("millis")),
            (_, None) => Err(v.invalid("an object of one entry")),
        }
    }
}

wire_names!(State {
    Closed = "CLOSED",
    Open = "OPEN",
    HalfOpen = "HALF_OPEN",
});
wire_names!(Mode {
    Automatic = "automatic",
    Isolated = "isolated",
    Disabled = "disabled",
});

wire_struct!(Stats, PASS, {
    admitted: or(0),
    rejected: or(0),
    successes: or(0),
    failures: or(0),
    ignored: or(0),
    stale: or(0),
    slow: or(0),
    opened: or(0),
    throttled: skip_zero,
});
wire_struct!(ProbeLease, PASS, { id: req, expires_at: req });
wire_struct!(Bucket, PASS, { index: req, calls: req, failures: req, slow: req });
wire_struct!(ThrottleBucket, PASS, { index: req, requests: req, accepts: req });
wire_struct!(ThrottleWindow, PASS, { buckets: req });
wire_struct!(Snapshot, PASS, {
    version: req,
    state: req,
    mode: req,
    generation: req,
    last_now: req,
    opened_at: req,
    open_until: req,
    failed_probe_rounds: req,
    half_open_successes: req,
    probes: req,
    next_probe_id: req,
    counter: req,
    rng: req,
    stats: req,
    throttle: skip_empty,
});

/// `{"consecutive": {…}}`, `{"failure_times": {…}}`, `{"calls": {…}}` or `{"buckets": {…}}`.
impl Wire for Counter {
    fn write(&self, w: &mut Writer) {
        w.open('{');
        match self {
            Counter::Consecutive { failures } => {
                w.key("consecutive");
                w.open('{');
                w.field("failures", failures);
            }
            Counter::FailureTimes { times, head } => {
                w.key("failure_times");
                w.open('{');
                w.field("times", times);
                w.field("head", head);
            }
            Counter::Calls {
                ring,
                head,
                failures,
                slow,
            } => {
                w.key("calls");
                w.open('{');
                w.field("ring", ring);
                w.field("head", head);
                w.field("failures", failures);
                w.field("slow", slow);
            }
            Counter::Buckets { buckets } => {
                w.key("buckets");
                w.open('{');
                w.field("buckets", buckets);
            }
        }
        w.close('}');
        w.close('}');
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        const VARIANTS: &[&str] = &["consecutive", "failure_times", "calls", "buckets"];
        let (i, content) = v.variant(VARIANTS)?;
        let name = VARIANTS.get(i).copied().unwrap_or_default();
        let Some(c) = content else {
            return Err(v.invalid("an object of one entry"));
        };
        let read = || -> Result<Counter, Error> {
            match i {
                0 => {
                    let f = c.fields(&["failures"], PASS)?;
                    f.done((|| {
                        Some(Counter::Consecutive {
                            failures: f.req(0)?,
                        })
                    })())
                }
                1 => {
                    let f = c.fields(&["times", "head"], PASS)?;
                    f.done((|| {
                        Some(Counter::FailureTimes {
                            times: f.req(0)?,
                            head: f.req(1)?,
                        })
                    })())
                }
                2 => {
                    let f = c.fields(&["ring", "head", "failures", "slow"], PASS)?;
                    f.done((|| {
                        Some(Counter::Calls {
                            ring: f.req(0)?,
                            head: f.req(1)?,
                            failures: f.req(2)?,
                            slow: f.req(3)?,
                        })
                    })())
                }
                _ => {
                    let f = c.fields(&["buckets"], PASS)?;
                    f.done((|| Some(Counter::Buckets { buckets: f.req(0)? }))())
                }
            }
        };
        read().map_err(|e| e.at(name))
    }
}
