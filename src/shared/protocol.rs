//! The messages between lease clients and the coordinator, whatever carries them (a Durable
//! Object's stub, the Worker's breaker service over HTTPS, a Redis script's caller).
//!
//! | op         | body                  | answer                                            |
//! |------------|-----------------------|---------------------------------------------------|
//! | `/acquire` | [`Exchange`]          | [`ExchangeReply`] with a `permit` or `rejected`   |
//! | `/report`  | [`Exchange`]          | [`ExchangeReply`] (the fresh lease, acked batches)|
//! | `/state`   | none                  | [`StateView`]                                     |
//! | `/isolate` | none or `{}`          | [`StateView`]                                     |
//! | `/reset`   | none or `{}`          | [`StateView`]                                     |
//!
//! A client sends its outcomes in [`Batch`]es, numbered per client *session* (`client` names the
//! client, `session` is drawn at random when it starts, so a restarted client that keeps its
//! name starts afresh): the coordinator remembers the highest number it applied for each
//! session, so a batch sent again after a lost answer is acknowledged but not counted twice.
//! Outcomes are counted under the generation the client admitted them in: outcomes from an
//! older generation land in the statistics (`stale`) but never move the state. A probe's outcome
//! counts only if that client was granted that probe and has not reported it yet.
//!
//! An exchange that breaks the limits below as a whole is refused (4xx, nothing applied); a batch
//! that breaks them alone is listed in [`ExchangeReply::refused`] and not applied, and the client
//! drops it rather than send it again. A [`LeaseClient`](super::LeaseClient) never builds either.
//! A batch numbered too far ahead is refused with the session's last applied number: the client
//! sends it again in a new session, numbered from 1.
//!
//! One session's weight is bounded: the outcomes it may have counted
//! ([`MAX_SESSION_OUTCOMES_PER_S`]; more are acknowledged and not counted) and the requests it
//! may send ([`MAX_SESSION_REQUESTS_PER_S`]; more are refused, 429).

use alloc::string::String;
use alloc::vec::Vec;

use super::spec::{MAX_LEASE_MS, MAX_SHARED_DURATION_MS, MAX_SHARED_TIMESTAMP_MS};
use crate::breaker::{Mode, Outcome, RejectReason, Rejected, State, Stats};

/// The largest request body a coordinator reads, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The most batches one exchange may carry.
pub const MAX_BATCHES: usize = 16;
/// The most generation entries one batch may carry.
pub const MAX_GENERATIONS_PER_BATCH: usize = 8;
/// The most probe outcomes one batch may carry.
pub const MAX_PROBES_PER_BATCH: usize = 64;
/// The most outcomes (successes + failures + ignored, probes included) one batch may carry.
/// Each outcome of the current generation is one step of the state machine, so this and
/// [`MAX_BATCHES`] bound the coordinator's work per request (to 1 000 000 steps).
pub const MAX_OUTCOMES_PER_BATCH: u64 = 62_500;
/// The most outcomes one exchange may carry ([`MAX_BATCHES`] × [`MAX_OUTCOMES_PER_BATCH`]).
pub const MAX_OUTCOMES_PER_EXCHANGE: u64 = 1_000_000;
/// The largest batch number and session (2^53: they survive a JavaScript number).
pub const MAX_SEQ: u64 = 1 << 53;
/// The longest client identifier, in bytes.
pub const MAX_CLIENT_ID_LEN: usize = 64;
/// How many client sessions' last batch numbers the coordinator remembers.
pub const MAX_CLIENTS: usize = 1_024;
/// How long a client may send a batch again after sealing it, in ms (its own clock); older
/// batches are dropped, counted and reported by the client.
pub const RESEND_WINDOW_MS: u64 = 5 * 60_000;
/// How long the coordinator keeps a session's batch number after the last batch it applied, in ms
/// (its own clock): three resend windows, so that clocks running at different speeds or a late
/// resend still find it. A session forgotten earlier (more than [`MAX_CLIENTS`] sessions active
/// at once) makes the coordinator count the batches of sessions it does not know as possibly
/// counted before (at least once, never zero), for this long.
pub const DEDUP_WINDOW_MS: u64 = 3 * RESEND_WINDOW_MS;
/// How far past the last applied number a session's next batch may be numbered. A client's
/// numbers only skip the batches it dropped; a larger jump is refused with the last applied
/// number ([`Refusal::last_applied`]), so a forged number cannot silence a session, and a
/// client that dropped many batches (a long outage) sends them again in a new session and is
/// counted.
pub const MAX_SEQ_GAP: u64 = 4 * MAX_BATCHES as u64;

/// The longest retry-after a coordinator sends, in ms: the longest open period a shared breaker
/// accepts ([`MAX_SHARED_DURATION_MS`], one year) with its jitter (less than as much again).
pub const MAX_RETRY_AFTER_MS: u64 = 2 * MAX_SHARED_DURATION_MS;

/// The longest throttle probability, in millionths (certain shedding).
pub const MAX_THROTTLE_PPM: u32 = 1_000_000;

/// How many outcomes one client session may have counted per second, sustained. One process of
/// an LLM application makes a few calls a second, a busy one tens (a thousand calls in flight
/// lasting a second each make a thousand a second): this is well above any of them, and bounds
/// what one session's forged outcomes weigh against the fleet's real ones — without it, one
/// session reporting a million successes per request kept a failure-rate rule CLOSED for the
/// whole fleet while the upstream failed. Outcomes beyond the budget are acknowledged and not
/// counted ([`ObjectCounters::outcomes_dropped`]). A probe's outcome matched to a grant is
/// exempt (the grants bound it). The bound is per session: a holder of the service token who
/// invents client identifiers gets a budget for each (as many sessions as the coordinator
/// remembers, [`MAX_CLIENTS`], and more by making it forget some).
pub const MAX_SESSION_OUTCOMES_PER_S: u64 = 1_000;
/// How many outcomes a session may have counted at once, past its sustained rate: five seconds'
/// worth, five reports of a lease client's default `max_batch` (1 000), so that reports that
/// meet (a failure sent right after a lease renewal) and the outbox a client at half the rate
/// sends after an outage of 10 s are counted whole (the budget refills while the session is
/// quiet). A client that sends more at once (a larger `max_batch` at the full rate, a longer
/// outage) has the excess dropped and counted. Small, since it is what a session that
/// forges outcomes weighs at first.
pub const SESSION_OUTCOME_BURST: u64 = 5_000;
/// How many requests (`/acquire` and `/report`) one client session may send per second,
/// sustained; more are refused as a whole (429 `too_many_requests`, nothing applied; see
/// [`ExchangeError::TooManyRequests`]). A lease client sends one report at a time (a failure
/// is sent when the report before it is answered), renews its lease once per `lease_ms` (at
/// least 1 ms, 1 s by default), and asks `/acquire` once per call only while HALF_OPEN until a
/// refusal is kept: tens of requests a second at most when its coordinator is a few
/// milliseconds away. Kept in memory only (writing it would make every request a write): a Durable
/// Object keeps it while it runs; a store's callers hold the store's credentials and could
/// write the record themselves. Per session, as [`MAX_SESSION_OUTCOMES_PER_S`].
pub const MAX_SESSION_REQUESTS_PER_S: u64 = 100;
/// How many requests a session may send at once past its sustained rate: the 64 `/acquire`s of
/// calls that all met HALF_OPEN at once, their reports, and as many again.
pub const SESSION_REQUEST_BURST: u64 = 200;

/// How a call ended, on the wire: `"success"`, `"failure"` or `"ignored"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireOutcome {
    /// [`Outcome::Success`].
    Success,
    /// [`Outcome::Failure`].
    Failure,
    /// [`Outcome::Ignored`].
    Ignored,
}

impl From<WireOutcome> for Outcome {
    fn from(o: WireOutcome) -> Self {
        match o {
            WireOutcome::Success => Outcome::Success,
            WireOutcome::Failure => Outcome::Failure,
            WireOutcome::Ignored => Outcome::Ignored,
        }
    }
}

impl From<Outcome> for WireOutcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Success => WireOutcome::Success,
            Outcome::Failure => WireOutcome::Failure,
            Outcome::Ignored => WireOutcome::Ignored,
        }
    }
}

/// Outcomes of calls admitted under one generation (or under none the client knew of).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// The generation of the lease the calls were admitted under; `null` when the client never
    /// had a lease (they are then counted as stale).
    pub generation: Option<u32>,
    /// Successful calls.
    pub successes: u32,
    /// Failed calls.
    pub failures: u32,
    /// Calls that say nothing about the upstream.
    pub ignored: u32,
    /// Calls the client shed under the lease's `throttle` (requests without an outcome). Left
    /// out when 0: only a coordinator that sends a throttle ever receives it.
    pub throttled: u32,
}

impl Counts {
    /// Every outcome counted.
    pub fn total(&self) -> u64 {
        u64::from(self.successes)
            + u64::from(self.failures)
            + u64::from(self.ignored)
            + u64::from(self.throttled)
    }
}

/// The outcome of a half-open probe the object granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    /// The permit's generation.
    pub generation: u32,
    /// The probe slot.
    pub id: u32,
    /// When the permit was issued, as the client was told (informational: the coordinator
    /// keeps its own record of each grant).
    pub issued_at: u64,
    /// How it ended.
    pub outcome: WireOutcome,
}

/// One numbered batch of outcomes from one client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Increases by one per batch and client session, from 1; at most [`MAX_SEQ`].
    pub seq: u64,
    /// Outcomes of ordinary calls, by generation.
    pub counts: Vec<Counts>,
    /// Outcomes of probes.
    pub probes: Vec<ProbeReport>,
}

/// What a client sends to `/acquire` and `/report`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The client's identifier: 1 to 64 ASCII letters, digits, `-` or `_`.
    pub client: String,
    /// Drawn at random when the client starts (at most [`MAX_SEQ`]); batch numbers are per
    /// `(client, session)`. 0 for clients that predate sessions.
    pub session: u64,
    /// Outcomes to apply before answering, oldest first.
    pub batches: Vec<Batch>,
}

/// Why a whole exchange was refused (answered 400 `bad_request`, with this as the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRequest {
    /// `client` is not a [`ClientId`].
    ClientId,
    /// `session` is above 2^53.
    Session,
    /// More than [`MAX_BATCHES`] batches.
    TooManyBatches,
    /// Batch numbers that do not start at 1, increase, and stay at most 2^53.
    BatchOrder,
}

impl core::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            BadRequest::ClientId => "`client` must be 1 to 64 ASCII letters, digits, - or _",
            BadRequest::Session => "`session` must be at most 2^53",
            BadRequest::TooManyBatches => "more than 16 batches",
            BadRequest::BatchOrder => {
                "batch `seq` must start at 1, increase, and stay at most 2^53"
            }
        })
    }
}

impl core::error::Error for BadRequest {}

/// Why the coordinator refused an exchange as a whole: nothing of it was applied, and the
/// record changed in nothing but a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeError {
    /// 400 `bad_request`: the exchange breaks the protocol.
    BadRequest(BadRequest),
    /// 429 `too_many_requests`: its session sent more than [`MAX_SESSION_REQUESTS_PER_S`]
    /// requests a second (past [`SESSION_REQUEST_BURST`]). Sending again after `retry_after_ms`
    /// is served; a lease client waits its `retry_unreachable_ms` (longer), keeping its lease.
    TooManyRequests {
        /// Milliseconds until the session's next request is served (at least 1).
        retry_after_ms: u64,
    },
}

impl ExchangeError {
    /// The HTTP status of the answer: 400 or 429.
    pub fn status(&self) -> u16 {
        match self {
            ExchangeError::BadRequest(_) => 400,
            ExchangeError::TooManyRequests { .. } => 429,
        }
    }
    /// The answer's [`ErrorReply::error`] code: `bad_request` or `too_many_requests`.
    pub fn code(&self) -> &'static str {
        match self {
            ExchangeError::BadRequest(_) => "bad_request",
            ExchangeError::TooManyRequests { .. } => "too_many_requests",
        }
    }
}

impl From<BadRequest> for ExchangeError {
    fn from(e: BadRequest) -> Self {
        ExchangeError::BadRequest(e)
    }
}

impl core::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ExchangeError::BadRequest(e) => e.fmt(f),
            ExchangeError::TooManyRequests { retry_after_ms } => write!(
                f,
                "more than {MAX_SESSION_REQUESTS_PER_S} requests a second from this client \
                 session: send again in {retry_after_ms} ms"
            ),
        }
    }
}

impl core::error::Error for ExchangeError {}

/// Which of the protocol's two requests an [`Exchange`] came as: the route it was sent to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeOp {
    /// `/acquire`: the batches are applied, then the breaker is asked for a permit.
    Acquire,
    /// `/report`: the batches are applied, and the lease renewed.
    Report,
}

impl ExchangeOp {
    /// [`Acquire`](Self::Acquire) when `acquire`, else [`Report`](Self::Report): for a host
    /// whose route arrives as a flag (the wasm boundary).
    pub const fn acquire_if(acquire: bool) -> Self {
        if acquire {
            ExchangeOp::Acquire
        } else {
            ExchangeOp::Report
        }
    }
}

/// A client's identifier: 1 to 64 ASCII letters, digits, `-` or `_` (so it never contains the
/// `~` of a stored session key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(String);

impl ClientId {
    /// `id` if it is a valid identifier.
    pub fn new(id: &str) -> Option<Self> {
        valid_client_id(id).then(|| ClientId(id.into()))
    }
    /// The identifier.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Display for ClientId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Exchange {
    /// Checks what concerns the exchange as a whole (a failure refuses all of it): the client,
    /// the session, the number of batches and their order. Each batch is checked on its own by
    /// [`Batch::check`]. Returns the client, parsed once, for the coordinator to key the
    /// session by.
    pub fn validate(&self) -> Result<ClientId, BadRequest> {
        let client = ClientId::new(&self.client).ok_or(BadRequest::ClientId)?;
        if self.session > MAX_SEQ {
            return Err(BadRequest::Session);
        }
        if self.batches.len() > MAX_BATCHES {
            return Err(BadRequest::TooManyBatches);
        }
        let mut last_seq = 0u64;
        for b in &self.batches {
            if b.seq == 0 || b.seq <= last_seq || b.seq > MAX_SEQ {
                return Err(BadRequest::BatchOrder);
            }
            last_seq = b.seq;
        }
        Ok(client)
    }

    /// An upper bound of this exchange's length as compact JSON, in bytes, whatever the values.
    pub fn encoded_len_bound(&self) -> usize {
        // {"client":"<64>","session":<16>,"batches":[...]}
        EXCHANGE_OVERHEAD
            + self.client.len()
            + self
                .batches
                .iter()
                .map(Batch::encoded_len_bound)
                .sum::<usize>()
    }
}

/// JSON length bounds used by [`Exchange::encoded_len_bound`].
const EXCHANGE_OVERHEAD: usize = 64;
const BATCH_OVERHEAD: usize = 64;
/// `{"generation":4294967295,"successes":4294967295,"failures":4294967295,"ignored":4294967295},`
const COUNTS_BOUND: usize = 96;
/// `{"generation":4294967295,"id":4294967295,"issued_at":9007199254740992,"outcome":"success"},`
const PROBE_BOUND: usize = 96;

impl Batch {
    /// Checks this batch's own limits; the reason, if it breaks one.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.counts.len() > MAX_GENERATIONS_PER_BATCH {
            return Err("more than 8 `counts` entries in a batch");
        }
        if self.probes.len() > MAX_PROBES_PER_BATCH {
            return Err("more than 64 `probes` in a batch");
        }
        if self.outcomes() > MAX_OUTCOMES_PER_BATCH {
            return Err("more than 62 500 outcomes in a batch");
        }
        Ok(())
    }

    /// Every outcome it carries, probes included.
    pub fn outcomes(&self) -> u64 {
        self.counts
            .iter()
            .map(Counts::total)
            .sum::<u64>()
            .saturating_add(self.probes.len() as u64)
    }

    /// An upper bound of its length as compact JSON, in bytes.
    pub fn encoded_len_bound(&self) -> usize {
        BATCH_OVERHEAD + COUNTS_BOUND * self.counts.len() + PROBE_BOUND * self.probes.len()
    }
}

/// Whether `id` is an acceptable client identifier.
pub fn valid_client_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CLIENT_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The state a client may act on without asking, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The state now. CLOSED: admit locally for `lease_ms`. OPEN: reject locally for
    /// `retry_after_ms`. HALF_OPEN: ask the object for every admission.
    pub state: State,
    /// The manual mode (`disabled` admits everything, `isolated` is OPEN until reset).
    pub mode: Mode,
    /// The generation outcomes should be reported under.
    pub generation: u32,
    /// How long a CLOSED lease may be used before asking again.
    pub lease_ms: u64,
    /// While OPEN: how long to reject before asking again (when isolated, `lease_ms`).
    pub retry_after_ms: u64,
    /// The object's clock when it answered (ms since the epoch), for diagnostics.
    pub now: u64,
    /// The fleet's adaptive-throttle probability while CLOSED, in millionths: shed each call
    /// locally with this chance (and count it in `throttled`). Left out when 0; clients that
    /// predate it ignore it.
    pub throttle_ppm: u32,
}

impl Lease {
    /// This lease with every number within what a coordinator sends: `lease_ms` in
    /// 1..=[`MAX_LEASE_MS`] (one hour), `retry_after_ms` at most [`MAX_RETRY_AFTER_MS`],
    /// `throttle_ppm` at most [`MAX_THROTTLE_PPM`], `now` at most [`MAX_SHARED_TIMESTAMP_MS`]. A
    /// lease client acts on nothing else, so that no reply (a transport written by hand, a proxy
    /// that rewrites bodies) can make it stop asking.
    pub fn within_limits(self) -> Self {
        Lease {
            lease_ms: self.lease_ms.clamp(1, MAX_LEASE_MS),
            retry_after_ms: self.retry_after_ms.min(MAX_RETRY_AFTER_MS),
            now: self.now.min(MAX_SHARED_TIMESTAMP_MS),
            throttle_ppm: self.throttle_ppm.min(MAX_THROTTLE_PPM),
            ..self
        }
    }
}

/// A permit the object granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WirePermit {
    /// Its generation.
    pub generation: u32,
    /// The probe slot, when it is a half-open probe (report it in `probes`); otherwise report
    /// the outcome in `counts` under `generation`.
    pub probe: Option<u32>,
    /// When it was issued (the object's clock).
    pub issued_at: u64,
}

impl WirePermit {
    /// This permit with `issued_at` at most [`MAX_SHARED_TIMESTAMP_MS`] (a coordinator's clock is
    /// clamped there), so that the probe report that echoes it stays within the protocol.
    pub fn within_limits(self) -> Self {
        WirePermit {
            issued_at: self.issued_at.min(MAX_SHARED_TIMESTAMP_MS),
            ..self
        }
    }
}

/// Why the object refused, on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireRejected {
    /// `"open"`, `"half_open_full"`, `"isolated"` or `"throttled"`.
    pub reason: WireReason,
    /// Milliseconds until asking again may succeed (at least 1).
    pub retry_after_ms: u64,
}

/// [`RejectReason`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireReason {
    /// [`RejectReason::Open`].
    Open,
    /// [`RejectReason::HalfOpenFull`].
    HalfOpenFull,
    /// [`RejectReason::Isolated`].
    Isolated,
    /// [`RejectReason::Throttled`].
    Throttled,
    /// [`RejectReason::Full`].
    Full,
}

impl From<Rejected> for WireRejected {
    fn from(r: Rejected) -> Self {
        WireRejected {
            reason: match r.reason {
                RejectReason::Open => WireReason::Open,
                RejectReason::HalfOpenFull => WireReason::HalfOpenFull,
                RejectReason::Isolated => WireReason::Isolated,
                RejectReason::Throttled => WireReason::Throttled,
                RejectReason::Full => WireReason::Full,
            },
            retry_after_ms: r.retry_after_ms,
        }
    }
}

impl From<WireRejected> for Rejected {
    fn from(r: WireRejected) -> Self {
        Rejected {
            reason: match r.reason {
                WireReason::Open => RejectReason::Open,
                WireReason::HalfOpenFull => RejectReason::HalfOpenFull,
                WireReason::Isolated => RejectReason::Isolated,
                WireReason::Throttled => RejectReason::Throttled,
                WireReason::Full => RejectReason::Full,
            },
            // Within what a coordinator sends, whatever the reply says.
            retry_after_ms: r.retry_after_ms.clamp(1, MAX_RETRY_AFTER_MS),
        }
    }
}

/// The answer to `/acquire` and `/report`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeReply {
    /// The state to act on.
    pub lease: Lease,
    /// `/acquire` only: the permit granted.
    pub permit: Option<WirePermit>,
    /// `/acquire` only: the refusal.
    pub rejected: Option<WireRejected>,
    /// The `seq` of every batch now applied (including ones applied before).
    pub acked: Vec<u64>,
    /// Batches that were not applied and never will be: the client drops them.
    pub refused: Vec<Refusal>,
}

/// A batch the coordinator will not apply, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The batch's number.
    pub seq: u64,
    /// Why, for the client's event and the log.
    pub reason: String,
    /// When the batch was numbered too far past the session's last applied one: that number.
    /// None of the client's unacknowledged batches was applied: it moves them to a new session,
    /// numbered from 1, and sends them again, instead of dropping them. (The number is for the
    /// log; a client does not number from it, since a report still on its way may use the
    /// numbers after it.) Absent for a batch over a limit.
    pub last_applied: Option<u64>,
}

/// [`Refusal::reason`] of a batch numbered too far past its session's last applied one.
pub const GAP_REASON: &str = "numbered too far past the session's last batch";

/// Counters the object keeps besides the breaker's own statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectCounters {
    /// Requests served since the object was loaded (not persisted).
    pub requests: u64,
    /// `/acquire` requests (not persisted).
    pub acquires: u64,
    /// `/report` requests (not persisted).
    pub reports: u64,
    /// Batches applied.
    pub batches: u64,
    /// Batches received again and not counted twice.
    pub duplicate_batches: u64,
    /// Batches refused (over a limit, or numbered too far ahead).
    pub refused_batches: u64,
    /// Batches counted though they may have been counted before: their session was not known
    /// (forgotten, or its first batches never arrived) and they were not its first (at least
    /// once, never zero).
    pub unverified_batches: u64,
    /// Sessions forgotten while they might still send a batch again.
    pub sessions_evicted_early: u64,
    /// Probe reports that matched no probe granted to that client (forged, repeated, or from
    /// a probe round that ended): not counted.
    pub unmatched_probe_reports: u64,
    /// Outcomes received in `counts` (every generation).
    pub counted_outcomes: u64,
    /// Probe outcomes received.
    pub probe_outcomes: u64,
    /// Probe permits granted.
    pub probes_granted: u64,
    /// Times the breaker entered HALF_OPEN.
    pub half_open_entered: u64,
    /// Times it closed again.
    pub closed: u64,
    /// When the incident under way began (ms since the epoch): the first opening not yet
    /// followed by a close.
    pub incident_since: Option<u64>,
    /// Incidents ended, by bucket of `breakwater_incident_seconds` ([`INCIDENT_BOUNDS_S`],
    /// not cumulative; the last one counts those above 3600 s).
    pub incidents: [u64; 11],
    /// Their total length, ms.
    pub incident_ms: u64,
    /// Shed calls reported beyond what the reporting session's throttle could have shed (see
    /// [`MAX_SHED_ODDS_FACTOR`]): not counted. Left out when 0.
    pub sheds_dropped: u64,
    /// Outcomes reported beyond their session's budget ([`MAX_SESSION_OUTCOMES_PER_S`]):
    /// acknowledged, not counted. Left out when 0.
    pub outcomes_dropped: u64,
    /// Requests refused because their session sent too many ([`MAX_SESSION_REQUESTS_PER_S`]).
    /// Left out when 0.
    pub requests_refused: u64,
}

/// A session admitted `a` calls under a throttle of probability `p` may report at most
/// `a × p / (1 − p) × MAX_SHED_ODDS_FACTOR + SHED_SLACK` shed calls, with `p` the throttle in
/// force when the report arrives (what the coordinator hands out then; it moves with a
/// window of buckets, so slowly over one lease). Shed calls count as requests of the fleet's
/// throttle window: without this bound, one report of a million shed calls would make every
/// client shed `max_rejection_probability` of its calls for a whole window while the breaker
/// stays CLOSED. An honest client sheds each call with chance `p`, so its sheds per admitted
/// call average `p / (1 − p)`; twice that plus a few absorbs the draw. While `p` is 0, no shed
/// call is counted.
pub const MAX_SHED_ODDS_FACTOR: f64 = 2.0;
/// See [`MAX_SHED_ODDS_FACTOR`].
pub const SHED_SLACK: u32 = 16;

/// Upper bounds (seconds) of `breakwater_incident_seconds`, as in [`BreakerMetrics`](crate::BreakerMetrics).
pub const INCIDENT_BOUNDS_S: [u64; 10] = [1, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600];

impl ObjectCounters {
    /// Follows a state change: an incident runs from the first opening to the next close,
    /// however many probe rounds failed in between.
    pub fn note_incident(&mut self, to: crate::breaker::State, at: u64) {
        match to {
            crate::breaker::State::Open => {
                self.incident_since.get_or_insert(at);
            }
            crate::breaker::State::Closed => {
                if let Some(start) = self.incident_since.take() {
                    let ms = at.saturating_sub(start);
                    let i = INCIDENT_BOUNDS_S
                        .iter()
                        .position(|&b| ms <= b.saturating_mul(1_000))
                        .unwrap_or(INCIDENT_BOUNDS_S.len());
                    if let Some(c) = self.incidents.get_mut(i) {
                        *c = c.saturating_add(1);
                    }
                    self.incident_ms = self.incident_ms.saturating_add(ms);
                }
            }
            crate::breaker::State::HalfOpen => {}
        }
    }
}

/// How many state changes a shared breaker remembers for its status page
/// ([`StateView::transitions`]).
pub const RECENT_TRANSITIONS: usize = 8;

/// How many minutes of activity a shared breaker keeps for its status page
/// ([`StateView::minutes`]): the minute under way and the nine before it.
pub const ACTIVITY_MINUTES: u64 = 10;

/// One state change, as the status page lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// When (ms since the epoch, the coordinator's clock).
    pub at: u64,
}

/// What a shared breaker counted in one minute (the coordinator's clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minute {
    /// The minute's start (ms since the epoch, a multiple of 60 000).
    pub at: u64,
    /// Outcomes its clients reported (successes, failures and ignored).
    pub calls: u64,
    /// Of them, failures.
    pub failures: u64,
    /// Admissions the coordinator refused (while HALF_OPEN, or OPEN to a client that asked).
    /// Calls a client refuses by itself under an OPEN lease are not reported: they are in the
    /// client's own metrics.
    pub refused: u64,
    /// Calls the clients shed under the throttle.
    pub shed: u64,
}

/// The answer to `/state`, `/isolate` and `/reset`, and the admin routes.
#[derive(Clone, Debug, PartialEq)]
pub struct StateView {
    /// The breaker's name.
    pub name: String,
    /// The lease a client would get now.
    pub lease: Lease,
    /// When it last opened (ms since the epoch), if OPEN.
    pub opened_at: Option<u64>,
    /// When the open period ends (ms since the epoch), if OPEN and not isolated.
    pub open_until: Option<u64>,
    /// Probes in flight.
    pub probes_in_flight: usize,
    /// The breaker's running totals.
    pub stats: StatsView,
    /// The object's counters.
    pub counters: ObjectCounters,
    /// Why the stored snapshot could not be restored, if it could not.
    pub restore_error: Option<String>,
    /// The fingerprint ([`SharedSpec::fingerprint`](super::SharedSpec::fingerprint)) of the
    /// settings the breaker runs under.
    pub options: u64,
    /// When this host is configured differently from the stored record: what it did about it.
    pub options_mismatch: Option<OptionsMismatch>,
    /// Client sessions remembered.
    pub sessions: usize,
    /// The settings the breaker runs under, in words
    /// ([`SharedSpec::describe`](super::SharedSpec::describe)).
    pub settings: String,
    /// The last state changes, oldest first, at most [`RECENT_TRANSITIONS`].
    pub transitions: Vec<Change>,
    /// What was counted in each of the last [`ACTIVITY_MINUTES`] minutes that saw any activity,
    /// oldest first, the minute under way last (so far). A minute not listed counted nothing.
    pub minutes: Vec<Minute>,
}

/// A host whose settings differ from the ones the shared record was written under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionsMismatch {
    /// The fingerprint of the settings in the record.
    pub stored: u64,
    /// The fingerprint of this host's settings.
    pub configured: u64,
    /// `"adopted"`: the shared breaker keeps running under the stored settings (this host's
    /// take effect on `reset`); `"installed"`: this host's settings replaced the stored ones and
    /// the state was carried over.
    pub resolution: String,
}

/// [`Stats`] on the wire: the core's own type, serialised as is.
pub type StatsView = Stats;

/// Every error answer: `{"error": "<code>", "message": "<text>"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    /// A stable code: `bad_request`, `not_found`, `method_not_allowed`, `payload_too_large`,
    /// `unsupported_media_type`, `unauthorized`, `misconfigured`, `storage`, `unavailable` (the
    /// stored record was written by a newer version and is left alone until reset).
    pub error: String,
    /// A human-readable explanation.
    pub message: String,
}
