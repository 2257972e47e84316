//! The coordinator: the one breaker every client of a shared breaker obeys, driven by the
//! protocol's messages with `now` passed in. Hosts (the Durable Object, the Redis store's
//! caller) load a [`Record`], take one step, persist the record if the step says so, and only
//! then answer and report the transitions.
//!
//! What it guarantees, whatever the network does:
//! - never zero: a batch is counted exactly once while the coordinator remembers its session,
//!   however often it is sent ([`DEDUP_WINDOW_MS`], [`MAX_CLIENTS`]), and at least once after it
//!   forgot it (the session was evicted by a larger fleet, or expired): a batch it cannot vouch
//!   for is counted, and counted again in `unverified_batches`. A batch numbered too far ahead
//!   is refused with the session's last applied number and not applied; the client sends it
//!   again in a new session, numbered from 1.
//!   Outcomes past their session's budget are the exception, dropped and counted
//!   (`outcomes_dropped`);
//! - settings stay put on reads: a host configured differently adopts the stored settings
//!   ([`OnMismatch::Adopt`]) without touching the generation, so both versions' clients keep
//!   being counted through a rolling deploy; an install carries the state and generation over;
//! - a probe's outcome counts only if this coordinator granted that probe to that session and
//!   it was not reported before, so neither a forged nor a repeated report moves the state;
//! - a probe that never reports frees its slot after `probe_timeout_ms` (the core breaker's
//!   lease), so a lost probe cannot hold the breaker half-open, nor let everyone through;
//! - time is the coordinator's own; nothing a client sends moves its clock. A clock stepped
//!   back (a failover to a host whose clock is behind) moves the breaker's times with it
//!   ([`CLOCK_STEP_MS`](crate::breaker::CLOCK_STEP_MS)), and no retry-after is longer than the longest open period;
//! - a host configured differently from the stored record never wipes it ([`OnMismatch`]);
//! - one session weighs at most [`MAX_SESSION_OUTCOMES_PER_S`] outcomes a second (past a burst
//!   of [`SESSION_OUTCOME_BURST`]) and sends at most [`MAX_SESSION_REQUESTS_PER_S`] requests a
//!   second (past [`SESSION_REQUEST_BURST`]). Per session, not per holder of the service token:
//!   one who invents client identifiers gets a budget for each.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::json;
use super::protocol::{
    Batch, Change, ClientId, Counts, Exchange, ExchangeError, ExchangeOp, ExchangeReply, Lease,
    Minute, ObjectCounters, OptionsMismatch, ProbeReport, Refusal, StateView, WirePermit,
    ACTIVITY_MINUTES, DEDUP_WINDOW_MS, GAP_REASON, MAX_CLIENTS, MAX_SEQ_GAP,
    MAX_SESSION_OUTCOMES_PER_S, MAX_SESSION_REQUESTS_PER_S, MAX_SHED_ODDS_FACTOR,
    RECENT_TRANSITIONS, SESSION_OUTCOME_BURST, SESSION_REQUEST_BURST, SHED_SLACK,
};
use super::spec::{SharedSpec, SpecError, MAX_SHARED_TIMESTAMP_MS};
use crate::breaker::{
    Breaker, BreakerConfig, Counter, Mode, Outcome, Permit, PermitKind, Rejected, State,
    Transition, TripRule, MAX_HALF_OPEN_PROBES,
};
use crate::clock::Timestamp;
use crate::snapshot::{Snapshot, SNAPSHOT_VERSION};

/// The most probe grants a coordinator keeps (live ones, and expired ones whose late report
/// would still count): every probe a breaker may have in flight ([`MAX_HALF_OPEN_PROBES`]) and
/// 64 more, so that hostile sessions taking probes and letting them expire keep the record
/// within a few hundred KiB.
pub const MAX_GRANTS: usize = MAX_HALF_OPEN_PROBES as usize + 64;

/// The storage key the Durable Object keeps its record under.
pub const STORAGE_KEY: &str = "breaker";

/// One client session: the client's identifier and the session it drew when it started. Batch
/// numbers and probe grants belong to a session. Stored (and shown) as `client~session`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    client: ClientId,
    session: u64,
}

impl SessionKey {
    /// The session `session` of client `client`.
    pub fn new(client: ClientId, session: u64) -> Self {
        SessionKey { client, session }
    }
    /// The client's identifier.
    pub fn client(&self) -> &ClientId {
        &self.client
    }
    /// The session number.
    pub fn session(&self) -> u64 {
        self.session
    }
    /// Reads `client~session`.
    pub fn parse(s: &str) -> Option<Self> {
        let (client, session) = s.rsplit_once('~')?;
        Some(SessionKey::new(
            ClientId::new(client)?,
            session.parse().ok()?,
        ))
    }
}

impl core::fmt::Display for SessionKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}~{}", self.client, self.session)
    }
}

/// A probe permit the coordinator granted and has not heard back about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The permit's generation.
    pub generation: u32,
    /// The probe slot.
    pub id: u32,
    /// The client session it was granted to.
    pub session: SessionKey,
    /// When it was granted (the coordinator's clock).
    pub issued_at: u64,
}

/// What a host persists: the breaker's snapshot, the settings it runs under, the sessions' last
/// batch numbers, the probes granted, and the counters that should survive a restart.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The settings the breaker runs under. Absent in records written before they were kept;
    /// read as absent when written in a spelling this version no longer reads (trip rules before
    /// they were tagged by `kind`), so that such a record keeps its state under the configured
    /// settings instead of being dropped whole at the first deploy.
    pub spec: Option<SharedSpec>,
    /// The breaker.
    pub snapshot: Snapshot,
    /// Session → (highest applied `seq`, when it was applied).
    pub clients: BTreeMap<SessionKey, (u64, u64)>,
    /// For each session of `clients`, in its order: how far past the time of its last applied
    /// batch, in ms, its outcome budget ([`MAX_SESSION_OUTCOMES_PER_S`]) was spent, so whole
    /// again at that time plus this. Left out when every one is 0; absent (a record written
    /// before budgets were kept), or not as long as `clients`, every budget is whole. A list
    /// beside the map rather than a third number in each entry, so that a version that reads
    /// entries of two numbers still reads the record, and a few bytes a session.
    pub spent_ms: Vec<u64>,
    /// Probes granted and not reported yet.
    pub grants: Vec<Grant>,
    /// Counters.
    pub counters: ObjectCounters,
    /// Until then (ms), a batch of a session the coordinator does not know may be one it
    /// counted before (a session was forgotten early and might send again): it is counted all
    /// the same, and in `unverified_batches`.
    pub unverifiable_until: u64,
    /// The last state changes, oldest first, at most [`RECENT_TRANSITIONS`] (the status page's).
    /// Left out when there are none.
    pub transitions: Vec<Change>,
    /// The minutes that saw activity, oldest first, at most [`ACTIVITY_MINUTES`] + 1: each
    /// `[minute, calls, failures, refused, shed]`, the minute since the epoch and the breaker's
    /// totals when that minute's first step began (see [`Coordinator::view`]'s `minutes`). Left
    /// out when there are none.
    pub marks: Vec<[u64; 5]>,
}

/// What a host does when its own settings differ from the stored record's (a rolling deploy:
/// old and new instances side by side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMismatch {
    /// Keep running the shared breaker under the stored settings; this host's settings are
    /// installed by [`Coordinator::reset`]. For hosts that are one of many writers (the Redis
    /// store's instances), so that old and new instances do not undo each other.
    Adopt,
    /// Install this host's settings, carrying the state over (the trip rule's memory is
    /// dropped if it does not fit the new rule). For a host that is the only writer (the Durable
    /// Object, configured by its Worker's `BREAKERS`).
    Install,
}

/// What the coordinator remembers of a session that had a batch applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Session {
    /// The highest batch number applied.
    seq: u64,
    /// When it was applied (the coordinator's clock, ms).
    seen: u64,
    /// When its outcome budget is whole again (ms; a GCRA's theoretical arrival time).
    whole_at: u64,
}

/// The time one outcome takes of a session's budget, in ms.
const OUTCOME_MS: u64 = 1_000 / MAX_SESSION_OUTCOMES_PER_S;
/// The time one request takes of a session's request budget, in ms.
const REQUEST_MS: u64 = 1_000 / MAX_SESSION_REQUESTS_PER_S;
const _: () = assert!(OUTCOME_MS * MAX_SESSION_OUTCOMES_PER_S == 1_000);
const _: () = assert!(REQUEST_MS * MAX_SESSION_REQUESTS_PER_S == 1_000);
/// How far ahead of now a session's outcome budget may be spent, in ms.
const OUTCOME_TOLERANCE_MS: u64 = SESSION_OUTCOME_BURST * OUTCOME_MS;
/// How far ahead of now a session's request budget may be spent, in ms.
const REQUEST_TOLERANCE_MS: u64 = SESSION_REQUEST_BURST * REQUEST_MS;

/// Takes up to `want` units of `unit_ms` each from a budget whole at `whole_at`, which may be
/// spent up to `tolerance_ms` ahead of `now`: how many it gives, and when it is whole after.
/// A budget spent further ahead can only come from a clock stepped back (nothing a client sends
/// moves the coordinator's clock): it counts as whole, so that no session waits out the step.
fn take(whole_at: u64, now: u64, want: u64, unit_ms: u64, tolerance_ms: u64) -> (u64, u64) {
    let spent = Some(whole_at.saturating_sub(now))
        .filter(|&ms| ms <= tolerance_ms)
        .unwrap_or(0);
    let given = want.min((tolerance_ms - spent) / unit_ms);
    (given, now + spent + given * unit_ms)
}

/// One shared breaker.
#[derive(Debug)]
pub struct Coordinator {
    name: String,
    spec: SharedSpec,
    configured: SharedSpec,
    breaker: Breaker,
    clients: BTreeMap<SessionKey, Session>,
    /// Session → when its request budget ([`MAX_SESSION_REQUESTS_PER_S`]) is whole again; only
    /// sessions whose budget is not whole, in memory only.
    pace: BTreeMap<SessionKey, u64>,
    grants: Vec<Grant>,
    counters: ObjectCounters,
    unverifiable_until: u64,
    restore_error: Option<String>,
    mismatch: Option<OptionsMismatch>,
    /// The clock stepped back since the record was loaded: it must be written.
    stepped: bool,
    /// The stored record was written by a newer version: it must not be written over.
    newer: Option<u32>,
    /// See [`Record::transitions`].
    recent: Vec<Change>,
    /// See [`Record::marks`].
    marks: Vec<[u64; 5]>,
}

/// The result of a step: whether the persisted record changed, and the transitions to report
/// once it is stored.
#[derive(Debug, Default)]
pub struct Step {
    /// The record must be written.
    pub changed: bool,
    /// State changes, in order.
    pub transitions: Vec<Transition>,
}

enum Verdict {
    Apply,
    Duplicate,
    /// Applied, though it may have been applied before (its session was forgotten early).
    Unverified,
    /// Not applied: over a limit.
    Refuse(&'static str),
    /// Not applied: numbered too far past the session's last applied batch (given).
    Gap(u64),
}

/// The key batch numbers are kept under, for an exchange's `client`: none when `client` is not
/// a [`ClientId`].
pub fn session_key(client: &str, session: u64) -> Option<SessionKey> {
    Some(SessionKey::new(ClientId::new(client)?, session))
}

/// The most activity marks kept: one per minute the status page shows, and the one before them.
const MAX_MARKS: usize = ACTIVITY_MINUTES as usize + 1;

/// `[calls, failures, refused, shed]` of the breaker's running totals.
fn totals(s: &crate::breaker::Stats) -> [u64; 4] {
    [
        s.successes
            .saturating_add(s.failures)
            .saturating_add(s.ignored),
        s.failures,
        s.rejected.saturating_sub(s.throttled),
        s.throttled,
    ]
}

fn clamp(now: Timestamp) -> u64 {
    now.0.min(MAX_SHARED_TIMESTAMP_MS)
}

impl Coordinator {
    /// A CLOSED breaker (first use, or a stored record that could not be read).
    pub fn fresh(name: &str, spec: SharedSpec) -> Result<Self, SpecError> {
        spec.validate()?;
        let breaker = Breaker::new(spec.breaker).map_err(SpecError::Breaker)?;
        Ok(Coordinator {
            name: name.to_string(),
            spec,
            configured: spec,
            breaker,
            clients: BTreeMap::new(),
            pace: BTreeMap::new(),
            grants: Vec::new(),
            counters: ObjectCounters::default(),
            unverifiable_until: 0,
            restore_error: None,
            mismatch: None,
            stepped: false,
            newer: None,
            recent: Vec::new(),
            marks: Vec::new(),
        })
    }

    /// Restores from a stored record. A record that cannot be restored gives a CLOSED breaker and
    /// the reason (kept for the state view, meant for the log); never a panic. Settings that
    /// differ from the record's are handled as `on_mismatch` says. An invalid `configured`
    /// is the only error.
    pub fn restore(
        name: &str,
        configured: SharedSpec,
        record: Option<Record>,
        on_mismatch: OnMismatch,
    ) -> Result<Self, SpecError> {
        Self::restore_as(name, configured, configured, record, on_mismatch)
    }

    /// [`restore`](Self::restore), where `as_stored` is `configured` as the record's format
    /// reads it back: a stored spec equal to either is this host's own.
    fn restore_as(
        name: &str,
        configured: SharedSpec,
        as_stored: SharedSpec,
        record: Option<Record>,
        on_mismatch: OnMismatch,
    ) -> Result<Self, SpecError> {
        let mut c = Self::fresh(name, configured)?;
        let Some(mut record) = record else {
            return Ok(c);
        };
        if record.snapshot.version > SNAPSHOT_VERSION {
            return Ok(c.written_by_newer(record.snapshot.version));
        }
        let stored = record.spec.unwrap_or(configured);
        let snap = &mut record.snapshot;
        // Records written before isolation kept its open period straight may hold
        // `open_until < opened_at`; an isolated breaker ignores `open_until`.
        if snap.mode == Mode::Isolated
            && snap.state == State::Open
            && snap.open_until < snap.opened_at
        {
            snap.open_until = snap.opened_at;
        }
        let own = stored.fingerprint() == configured.fingerprint()
            || stored.fingerprint() == as_stored.fingerprint();
        let (spec, breaker) = if own {
            match Breaker::restore(configured.breaker, record.snapshot) {
                Ok(b) => (configured, b),
                Err(e) => {
                    c.restore_error = Some(format!("stored snapshot cannot be restored: {e}"));
                    return Ok(c);
                }
            }
        } else {
            let adopt = on_mismatch == OnMismatch::Adopt && stored.validate().is_ok();
            c.mismatch = Some(OptionsMismatch {
                stored: stored.fingerprint(),
                configured: configured.fingerprint(),
                resolution: String::from(if adopt { "adopted" } else { "installed" }),
            });
            if adopt {
                // The stored settings stay in force, as they are: a read changes nothing.
                match Breaker::restore(stored.breaker, record.snapshot.clone()) {
                    Ok(b) => (stored, b),
                    Err(_) => (stored, carry_over(stored.breaker, record.snapshot)?),
                }
            } else {
                let snapshot = forget_other_windows(
                    &stored.breaker.trip,
                    configured.breaker.trip,
                    record.snapshot,
                );
                (configured, carry_over(configured.breaker, snapshot)?)
            }
        };
        c.spec = spec;
        c.breaker = breaker;
        c.clients = sessions(record.clients, &record.spent_ms);
        c.grants = record.grants;
        c.unverifiable_until = record.unverifiable_until;
        c.recent = record.transitions;
        c.recent.truncate(RECENT_TRANSITIONS);
        c.marks = record.marks;
        c.marks.truncate(MAX_MARKS);
        c.counters = ObjectCounters {
            requests: 0,
            acquires: 0,
            reports: 0,
            ..record.counters
        };
        c.forget_old_grants();
        Ok(c)
    }

    /// Parses a stored JSON record and restores from it; an unreadable record gives a CLOSED
    /// breaker and the reason, as [`restore`](Self::restore) does.
    pub fn load_json(
        name: &str,
        configured: SharedSpec,
        stored: Option<&str>,
        on_mismatch: OnMismatch,
    ) -> Result<Self, SpecError> {
        let record = match stored.map(json::from_str::<Record>) {
            None => None,
            Some(Ok(r)) => {
                // Earlier versions read JSON with serde_json, which reads a float fast but not
                // always exactly (a threshold may come back a bit off), and wrote that back. A
                // record written under this host's settings by such a version must still be
                // recognised as written under them.
                let as_stored = read_back_by_serde_json(configured);
                return Self::restore_as(name, configured, as_stored, Some(r), on_mismatch);
            }
            Some(Err(e)) => {
                let c = Self::fresh(name, configured)?;
                // A version this one cannot read may still say which one it is.
                if let Some(v) = stored.and_then(newer_snapshot_version) {
                    return Ok(c.written_by_newer(v));
                }
                let mut c = c;
                c.restore_error = Some(format!("stored record is not readable: {e}"));
                return Ok(c);
            }
        };
        Self::restore(name, configured, record, on_mismatch)
    }

    /// Stands in for a record a newer version wrote (a rollback): it is left as it is, and
    /// [`unavailable`](Self::unavailable) tells the host to answer as an unreachable
    /// coordinator would (clients keep their local breakers and their batches) until an
    /// operator's `reset` or `isolate` replaces it.
    fn written_by_newer(mut self, version: u32) -> Self {
        self.newer = Some(version);
        self.restore_error = Some(format!(
            "the stored record was written by a newer version (snapshot version {version}, this \
             one reads {SNAPSHOT_VERSION}): it is left as it is until reset"
        ));
        self
    }

    /// Why the host must not serve `/acquire` and `/report` from this coordinator, if it must
    /// not: the stored record was written by a newer version, which this one would overwrite.
    /// Answer as an unreachable coordinator (503) and write nothing; `reset` and `isolate` (an
    /// operator's decision) replace the record.
    pub fn unavailable(&self) -> Option<&str> {
        self.newer.and(self.restore_error.as_deref())
    }

    /// Whether the host should write the record although the last step changed nothing: a
    /// record that could not be restored is replaced (unless a newer version wrote it).
    pub fn must_rewrite(&self) -> bool {
        self.restore_error.is_some() && self.newer.is_none()
    }

    /// The record to persist, as JSON.
    pub fn record_json(&self) -> Result<String, String> {
        Ok(json::to_string(&self.record()))
    }

    /// A CLOSED breaker standing in for a stored record that could not even be read.
    pub fn unreadable(name: &str, spec: SharedSpec, reason: String) -> Result<Self, SpecError> {
        let mut c = Self::fresh(name, spec)?;
        c.restore_error = Some(reason);
        Ok(c)
    }

    /// Why the stored record was not restored, if it was not.
    pub fn restore_error(&self) -> Option<&str> {
        self.restore_error.as_deref()
    }

    /// The breaker.
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }

    /// The settings in force (the stored ones when adopted).
    pub fn spec(&self) -> &SharedSpec {
        &self.spec
    }

    /// Whether the record may be let go (a store's expiry): only a CLOSED, automatic breaker
    /// with no probe outstanding loses nothing but its statistics. An isolation never expires.
    pub fn may_expire(&self) -> bool {
        self.breaker.state() == State::Closed
            && self.breaker.mode() == Mode::Automatic
            && self.grants.is_empty()
    }

    /// What to persist.
    pub fn record(&self) -> Record {
        let spent_ms: Vec<u64> = self
            .clients
            .values()
            .map(|s| s.whole_at.saturating_sub(s.seen).min(OUTCOME_TOLERANCE_MS))
            .collect();
        Record {
            spec: Some(self.spec),
            snapshot: self.breaker.snapshot(),
            clients: {
                // Inserted one by one: `collect()` into a map sorts first, and that sort costs
                // the coordinator's wasm module kilobytes.
                let mut clients = BTreeMap::new();
                for (k, s) in &self.clients {
                    clients.insert(k.clone(), (s.seq, s.seen));
                }
                clients
            },
            spent_ms: if spent_ms.iter().all(|&ms| ms == 0) {
                Vec::new()
            } else {
                spent_ms
            },
            grants: self.grants.clone(),
            counters: self.counters,
            unverifiable_until: self.unverifiable_until,
            transitions: self.recent.clone(),
            marks: self.marks.clone(),
        }
    }

    /// The lease a client gets at `now`.
    pub fn lease(&self, now: Timestamp) -> Lease {
        let now = Timestamp(clamp(now).max(self.breaker.latest().0));
        let b = &self.breaker;
        let state = b.state_at(now);
        // However the open period was stored, no client waits longer than the longest one.
        let longest = b.config().max_open_duration_ms;
        let longest = longest.saturating_add((longest as f64 * b.config().open_jitter) as u64 + 1);
        let retry_after_ms = match (state, b.mode()) {
            (State::Open, Mode::Isolated) => self.spec.lease_ms,
            (State::Open, _) => b
                .open_until()
                .map(|t| t.0.saturating_sub(now.0).clamp(1, longest))
                .unwrap_or(1),
            _ => 0,
        };
        Lease {
            state,
            mode: b.mode(),
            generation: b.generation(),
            lease_ms: self.spec.lease_ms,
            retry_after_ms,
            now: now.0,
            throttle_ppm: ppm(b.throttle_probability(now)),
        }
    }

    /// `/acquire` and `/report`: checks the exchange (a [`BadRequest`](super::protocol::BadRequest)
    /// changes nothing) and its session's request budget (a
    /// [`TooManyRequests`](ExchangeError::TooManyRequests) changes nothing but
    /// `requests_refused`), applies its batches (oldest first, each at most once per session; a
    /// batch over a limit is refused alone; outcomes past the session's budget are not
    /// counted), then, for `/acquire`, asks the breaker for a permit.
    pub fn exchange(
        &mut self,
        now: Timestamp,
        req: &Exchange,
        op: ExchangeOp,
    ) -> Result<(ExchangeReply, Step), ExchangeError> {
        let key = SessionKey::new(req.validate()?, req.session);
        let now = self.observe(now);
        self.mark(now.0);
        let mut step = Step::default();
        bump(&mut self.counters.requests);
        if let Err(retry_after_ms) = self.pace(&key, now.0) {
            bump(&mut self.counters.requests_refused);
            return Err(ExchangeError::TooManyRequests { retry_after_ms });
        }
        bump(match op {
            ExchangeOp::Acquire => &mut self.counters.acquires,
            ExchangeOp::Report => &mut self.counters.reports,
        });
        let (acked, refused) = self.apply_batches(now, &key, &req.batches, &mut step);
        let mut reply = ExchangeReply {
            lease: self.lease(now),
            permit: None,
            rejected: None,
            acked,
            refused,
        };
        if op == ExchangeOp::Acquire {
            match self.admit(now, &key, &mut step) {
                Ok(permit) => reply.permit = Some(permit),
                Err(rejected) => reply.rejected = Some(rejected.into()),
            }
            reply.lease = self.lease(now);
        }
        if step.changed {
            self.forget_old_grants();
        }
        step.changed |= self.stepped;
        self.stepped = false;
        Ok((reply, step))
    }

    /// Applies an exchange's batches, oldest first: the numbers acknowledged (applied now, or
    /// before) and the refusals.
    fn apply_batches(
        &mut self,
        now: Timestamp,
        key: &SessionKey,
        batches: &[Batch],
        step: &mut Step,
    ) -> (Vec<u64>, Vec<Refusal>) {
        let mut acked = Vec::with_capacity(batches.len());
        let mut refused = Vec::new();
        // A session learned again from a batch it cannot vouch for: the batches sent with it
        // (an outbox sent again as a whole) may have been counted before too.
        let mut unverified = false;
        for batch in batches {
            let verdict = match self.verdict(now.0, key, batch) {
                Verdict::Apply if unverified => Verdict::Unverified,
                v => v,
            };
            unverified |= matches!(verdict, Verdict::Unverified);
            // Every verdict is worth keeping in the record, a duplicate (an answer was lost)
            // and a refusal too.
            step.changed = true;
            match self.judge(now, key, batch, verdict, step) {
                None => acked.push(batch.seq),
                Some((reason, last_applied)) => {
                    bump(&mut self.counters.refused_batches);
                    refused.push(Refusal {
                        seq: batch.seq,
                        reason: reason.to_string(),
                        last_applied,
                    });
                }
            }
        }
        (acked, refused)
    }

    /// Acts on one batch's `verdict`: `None` when it is acknowledged (applied now, or a
    /// duplicate), else why it is refused and, for a gap, the last number applied.
    fn judge(
        &mut self,
        now: Timestamp,
        key: &SessionKey,
        batch: &Batch,
        verdict: Verdict,
        step: &mut Step,
    ) -> Option<(&'static str, Option<u64>)> {
        match verdict {
            Verdict::Apply | Verdict::Unverified => {
                if matches!(verdict, Verdict::Unverified) {
                    // At least once: counting it again is better than never counting it.
                    bump(&mut self.counters.unverified_batches);
                }
                let whole_at = self.apply(now, key, batch, step);
                self.remember(key, batch.seq, now.0, whole_at);
                bump(&mut self.counters.batches);
                None
            }
            Verdict::Duplicate => {
                bump(&mut self.counters.duplicate_batches);
                None
            }
            Verdict::Refuse(reason) => Some((reason, None)),
            // Not counted now; the client sends it again in a new session.
            Verdict::Gap(last) => Some((GAP_REASON, Some(last))),
        }
    }

    /// `/acquire`'s permit from the breaker: a probe's is granted to `key`'s session.
    fn admit(
        &mut self,
        now: Timestamp,
        key: &SessionKey,
        step: &mut Step,
    ) -> Result<WirePermit, Rejected> {
        let admission = self.breaker.acquire(now);
        if let Some(t) = admission.transition {
            self.note(t, step);
        }
        let permit = admission.result?;
        let probe = match permit.kind {
            PermitKind::Probe { id } => {
                self.grant(key, permit.generation, id, now.0);
                step.changed = true;
                Some(id)
            }
            PermitKind::Normal | PermitKind::Bypass => None,
        };
        Ok(WirePermit {
            generation: permit.generation,
            probe,
            issued_at: permit.issued_at.0,
        })
    }

    /// `/isolate`: forced OPEN until reset, for every client at its next lease. Never expires.
    pub fn isolate(&mut self, now: Timestamp) -> Step {
        self.by_hand(now, |b, now| b.isolate(now))
    }

    /// `/reset`: CLOSED with clean counters; a host whose settings were not in force installs
    /// them now.
    pub fn reset(&mut self, now: Timestamp) -> Step {
        if self.spec.fingerprint() != self.configured.fingerprint() {
            let snapshot = forget_other_windows(
                &self.spec.breaker.trip,
                self.configured.breaker.trip,
                self.breaker.snapshot(),
            );
            if let Ok(b) = carry_over(self.configured.breaker, snapshot) {
                self.breaker = b;
                self.spec = self.configured;
                self.mismatch = None;
            }
        }
        self.by_hand(now, |b, now| b.reset(now))
    }

    /// An operator's change: always persisted.
    fn by_hand(
        &mut self,
        now: Timestamp,
        change: impl FnOnce(&mut Breaker, Timestamp) -> Option<Transition>,
    ) -> Step {
        let now = self.observe(now);
        self.mark(now.0);
        let mut step = Step {
            changed: true,
            ..Step::default()
        };
        // The operator decides: a newer version's record is replaced.
        self.newer = None;
        bump(&mut self.counters.requests);
        if let Some(t) = change(&mut self.breaker, now) {
            self.note(t, &mut step);
        }
        self.forget_old_grants();
        step
    }

    /// What `/state` answers (and `/isolate` and `/reset`, after their step): the request
    /// counted in `counters.requests`, then the [`view`](Coordinator::view). Nothing else
    /// changes.
    pub fn counted_view(&mut self, now: Timestamp) -> StateView {
        bump(&mut self.counters.requests);
        self.view(now)
    }

    /// The state, the statistics and the counters, as `/state` shows them; a read.
    pub fn view(&self, now: Timestamp) -> StateView {
        let now = Timestamp(clamp(now));
        let b = &self.breaker;
        StateView {
            name: self.name.clone(),
            lease: self.lease(now),
            opened_at: b.opened_at().map(|t| t.0),
            open_until: b.open_until().map(|t| t.0),
            probes_in_flight: b.probes_in_flight(),
            stats: *b.stats(),
            counters: self.counters,
            restore_error: self.restore_error.clone(),
            options: self.spec.fingerprint(),
            options_mismatch: self.mismatch.clone(),
            sessions: self.clients.len(),
            settings: self.spec.describe(),
            transitions: self.recent.clone(),
            minutes: self.minutes(now.0),
        }
    }

    /// Marks the minute of `now` as one that saw activity, with the totals before the step:
    /// what [`minutes`](Self::minutes) subtracts. Called before anything a step counts.
    fn mark(&mut self, now: u64) {
        let minute = now / 60_000;
        match self.marks.last() {
            Some(m) if m[0] == minute => return,
            // A clock stepped back: the minutes after it start afresh.
            Some(m) if m[0] > minute => self.marks.clear(),
            _ => {}
        }
        let [calls, failures, refused, shed] = totals(self.breaker.stats());
        self.marks.push([minute, calls, failures, refused, shed]);
        if self.marks.len() > MAX_MARKS {
            self.marks.remove(0);
        }
    }

    /// What each of the last [`ACTIVITY_MINUTES`] minutes that saw activity counted: from its
    /// mark to the next one (or to the totals now, for the last).
    fn minutes(&self, now: u64) -> Vec<Minute> {
        let this = now / 60_000;
        let end = totals(self.breaker.stats());
        let mut out = Vec::new();
        for (i, m) in self.marks.iter().enumerate() {
            if m[0] + ACTIVITY_MINUTES <= this || m[0] > this {
                continue;
            }
            let next = self
                .marks
                .get(i + 1)
                .map_or(end, |n| [n[1], n[2], n[3], n[4]]);
            let d = |k: usize| {
                let before = m.get(k + 1).copied().unwrap_or(0);
                next.get(k).copied().unwrap_or(0).saturating_sub(before)
            };
            out.push(Minute {
                at: m[0] * 60_000,
                calls: d(0),
                failures: d(1),
                refused: d(2),
                shed: d(3),
            });
        }
        out
    }

    fn verdict(&self, now: u64, key: &SessionKey, batch: &Batch) -> Verdict {
        if let Err(reason) = batch.check() {
            return Verdict::Refuse(reason);
        }
        match self.clients.get(key).map(|s| s.seq) {
            Some(last) if batch.seq <= last => Verdict::Duplicate,
            Some(last) if batch.seq - last > MAX_SEQ_GAP => Verdict::Gap(last),
            Some(_) => Verdict::Apply,
            // A session it does not know, past its first batch: forgotten (evicted by a larger
            // fleet, expired, a clock step, a restart from an older record), or its first
            // batches were dropped. Either way counted, and flagged as possibly counted before.
            None if batch.seq > 1 => Verdict::Unverified,
            // A first batch while sessions were recently evicted early may be a resend too.
            None if now < self.unverifiable_until => Verdict::Unverified,
            None => Verdict::Apply,
        }
    }

    /// The coordinator's time: its clock, clamped, and seen by the breaker first, so that a
    /// clock stepped back moves the breaker's times along before anything is decided.
    fn observe(&mut self, now: Timestamp) -> Timestamp {
        let now = Timestamp(clamp(now));
        let before = self.breaker.latest();
        if self.breaker.observe_time(now) < before {
            // A clock step moved the stored times: keep them moved, or a host that restores
            // the record for every request (the Redis store) would step back from the same
            // point each time, and an open period would never end.
            self.stepped = true;
        }
        now
    }

    /// Applies an accepted batch; answers when the session's outcome budget is whole after it.
    fn apply(&mut self, now: Timestamp, key: &SessionKey, batch: &Batch, step: &mut Step) -> u64 {
        let mut whole_at = self.clients.get(key).map_or(now.0, |s| s.whole_at);
        for counts in &batch.counts {
            self.counters.counted_outcomes = self
                .counters
                .counted_outcomes
                .saturating_add(counts.total());
            let (within, after) = within_budget(counts, whole_at, now.0);
            whole_at = after;
            let dropped = counts.total() - within.total();
            self.counters.outcomes_dropped = self.counters.outcomes_dropped.saturating_add(dropped);
            self.apply_counts(now, &within, step);
        }
        for p in &batch.probes {
            bump(&mut self.counters.probe_outcomes);
            self.apply_probe(now, key, p, step);
        }
        whole_at
    }

    /// Takes one request of `key`'s request budget, or answers in how many ms one would be
    /// served. A refused request takes nothing.
    fn pace(&mut self, key: &SessionKey, now: u64) -> Result<(), u64> {
        let whole_at = self.pace.get(key).copied().unwrap_or(now);
        let (given, after) = take(whole_at, now, 1, REQUEST_MS, REQUEST_TOLERANCE_MS);
        if given == 0 {
            // Spent to within one request of its tolerance: served once one request's time
            // has passed.
            return Err((after - now + REQUEST_MS)
                .saturating_sub(REQUEST_TOLERANCE_MS)
                .max(1));
        }
        if !self.pace.contains_key(key) && self.pace.len() >= MAX_CLIENTS {
            // Whole budgets need no entry; if none is whole, the one nearest whole goes.
            self.pace.retain(|_, &mut w| w > now);
            if self.pace.len() >= MAX_CLIENTS {
                if let Some(nearest) = self
                    .pace
                    .iter()
                    .min_by_key(|(_, &w)| w)
                    .map(|(k, _)| k.clone())
                {
                    self.pace.remove(&nearest);
                }
            }
        }
        self.pace.insert(key.clone(), after);
        Ok(())
    }

    /// Successes first, then ignored, then failures: a batch is sealed when a failure happens,
    /// so its failures are the latest outcomes. Outcomes of another generation, and those
    /// after a transition, only count in the statistics, in one step.
    fn apply_counts(&mut self, now: Timestamp, counts: &Counts, step: &mut Step) {
        // The throttle this session was shedding under, before its own outcomes move it.
        let shed_p = self.breaker.throttle_probability(now);
        let mut left = [
            (counts.successes, Outcome::Success),
            (counts.ignored, Outcome::Ignored),
            (counts.failures, Outcome::Failure),
        ];
        if counts.generation == Some(self.breaker.generation()) {
            let permit = Permit {
                generation: self.breaker.generation(),
                kind: PermitKind::Normal,
                issued_at: now,
            };
            'outer: for (n, outcome) in left.iter_mut() {
                while *n > 0 {
                    *n -= 1;
                    if let Some(t) = self.breaker.report(now, permit, *outcome) {
                        self.note(t, step);
                        break 'outer;
                    }
                }
            }
        }
        let [(s, _), (i, _), (f, _)] = left;
        self.breaker.count_stale(s, f, i);
        if counts.generation == Some(self.breaker.generation()) {
            // Calls the clients shed: requests of the fleet's throttle window, as many as its
            // throttle could have shed of the calls it was admitted.
            let admitted = u64::from(counts.successes)
                + u64::from(counts.failures)
                + u64::from(counts.ignored);
            let sheds = counts.throttled.min(shed_allowance(shed_p, admitted));
            let dropped = u64::from(counts.throttled - sheds);
            self.counters.sheds_dropped = self.counters.sheds_dropped.saturating_add(dropped);
            self.breaker.record_throttled(now, sheds);
        }
    }

    fn apply_probe(&mut self, now: Timestamp, key: &SessionKey, p: &ProbeReport, step: &mut Step) {
        let Some(i) = self
            .grants
            .iter()
            .position(|g| g.generation == p.generation && g.id == p.id && g.session == *key)
        else {
            bump(&mut self.counters.unmatched_probe_reports);
            return;
        };
        let grant = self.grants.swap_remove(i);
        let permit = Permit {
            generation: grant.generation,
            kind: PermitKind::Probe { id: grant.id },
            issued_at: Timestamp(grant.issued_at),
        };
        if let Some(t) = self.breaker.report(now, permit, p.outcome.into()) {
            self.note(t, step);
        }
    }

    fn grant(&mut self, key: &SessionKey, generation: u32, id: u32, now: u64) {
        bump(&mut self.counters.probes_granted);
        // Expired grants stay so that a late report still counts (a slow probe is news of the
        // upstream), but not without bound: the record holding them is written at every step.
        let cap = (self.spec.breaker.half_open_max_probes as usize * 2 + 16).min(MAX_GRANTS);
        if self.grants.len() >= cap {
            if let Some(oldest) = self
                .grants
                .iter()
                .enumerate()
                .min_by_key(|(_, g)| g.issued_at)
                .map(|(i, _)| i)
            {
                self.grants.swap_remove(oldest);
            }
        }
        self.grants.push(Grant {
            generation,
            id,
            session: key.clone(),
            issued_at: now,
        });
    }

    /// Grants of an ended probe round can never count.
    fn forget_old_grants(&mut self) {
        let generation = self.breaker.generation();
        let half_open = self.breaker.state() == State::HalfOpen;
        self.grants
            .retain(|g| half_open && g.generation == generation);
    }

    fn note(&mut self, t: Transition, step: &mut Step) {
        self.counters.note_incident(t.to, t.at.0);
        if self.recent.len() >= RECENT_TRANSITIONS {
            self.recent.remove(0);
        }
        self.recent.push(Change {
            from: t.from,
            to: t.to,
            at: t.at.0,
        });
        match t.to {
            State::HalfOpen => bump(&mut self.counters.half_open_entered),
            State::Closed => bump(&mut self.counters.closed),
            State::Open => {}
        }
        step.changed = true;
        step.transitions.push(t);
    }

    fn remember(&mut self, key: &SessionKey, seq: u64, now: u64, whole_at: u64) {
        // Sessions quiet for a whole dedup window can no longer send anything again.
        self.clients
            .retain(|_, s| now.saturating_sub(s.seen) < DEDUP_WINDOW_MS);
        if !self.clients.contains_key(key) && self.clients.len() >= MAX_CLIENTS {
            // Full of sessions that may still resend: forget the quietest, and vouch for no
            // unknown session's batches until it could no longer resend.
            if let Some(oldest) = self
                .clients
                .iter()
                .min_by_key(|(_, s)| s.seen)
                .map(|(k, _)| k.clone())
            {
                self.clients.remove(&oldest);
                bump(&mut self.counters.sessions_evicted_early);
                self.unverifiable_until = now.saturating_add(DEDUP_WINDOW_MS);
            }
        }
        let seen = now;
        self.clients.insert(
            key.clone(),
            Session {
                seq,
                seen,
                whole_at,
            },
        );
    }
}

/// The sessions of a stored record: `clients`, with the budgets `spent_ms` lists (see
/// [`Record::spent_ms`]).
fn sessions(
    clients: BTreeMap<SessionKey, (u64, u64)>,
    spent_ms: &[u64],
) -> BTreeMap<SessionKey, Session> {
    let kept = spent_ms.len() == clients.len();
    // Inserted one by one, as in `record` (no sort).
    let mut sessions = BTreeMap::new();
    for (i, (k, (seq, seen))) in clients.into_iter().enumerate() {
        let spent = if kept {
            spent_ms.get(i).copied().unwrap_or(0)
        } else {
            0
        };
        let whole_at = seen.saturating_add(spent.min(OUTCOME_TOLERANCE_MS));
        sessions.insert(
            k,
            Session {
                seq,
                seen,
                whole_at,
            },
        );
    }
    sessions
}

/// What of `counts` a session's outcome budget, whole at `whole_at`, lets count at `now`, and
/// when the budget is whole after. Past the budget, each kind keeps its share of what is
/// counted (the failures first to a rounded-off unit, then the successes): the session's
/// failure rate is kept, its weight bounded. Shed calls are not outcomes: they are bounded by
/// what is counted ([`shed_allowance`]).
fn within_budget(counts: &Counts, whole_at: u64, now: u64) -> (Counts, u64) {
    let total =
        u64::from(counts.successes) + u64::from(counts.failures) + u64::from(counts.ignored);
    let (given, after) = take(whole_at, now, total, OUTCOME_MS, OUTCOME_TOLERANCE_MS);
    if given == total {
        return (counts.clone(), after);
    }
    // given < total ≤ 3 × u32::MAX: each share fits, and is at most its kind's count.
    let share = |n: u32| (u64::from(n) * given / total) as u32;
    let mut within = Counts {
        successes: share(counts.successes),
        failures: share(counts.failures),
        ignored: share(counts.ignored),
        ..counts.clone()
    };
    let mut left = given
        - (u64::from(within.successes) + u64::from(within.failures) + u64::from(within.ignored));
    for (n, of) in [
        (&mut within.failures, counts.failures),
        (&mut within.successes, counts.successes),
        (&mut within.ignored, counts.ignored),
    ] {
        let more = left.min(u64::from(of - *n));
        *n += more as u32;
        left -= more;
    }
    (within, after)
}

/// A trip rule's memory is kept across a change of settings only when it means the same under
/// the new rule: a consecutive count, or a window of the same kind and length (time buckets
/// are indexed in units of the window's length, so another length would misread them).
fn forget_other_windows(from: &TripRule, to: TripRule, mut snap: Snapshot) -> Snapshot {
    let same = match (*from, to) {
        (TripRule::ConsecutiveFailures { .. }, TripRule::ConsecutiveFailures { .. }) => true,
        (
            TripRule::FailuresInWindow { window_ms: a, .. },
            TripRule::FailuresInWindow { window_ms: b, .. },
        ) => a == b,
        (TripRule::FailureRate { window: a, .. }, TripRule::FailureRate { window: b, .. })
        | (TripRule::SlowCallRate { window: a, .. }, TripRule::SlowCallRate { window: b, .. }) => {
            a == b
        }
        _ => false,
    };
    if !same {
        snap.counter = Counter::for_rule(&to);
    }
    snap
}

/// The snapshot version of a stored record this version cannot parse, if it is newer than
/// [`SNAPSHOT_VERSION`].
fn newer_snapshot_version(stored: &str) -> Option<u32> {
    let record = json::parse(stored).ok()?;
    let snapshot = record.fields(&["snapshot"], false).ok()?;
    let version = snapshot.raw(0)?.fields(&["version"], false).ok()?;
    let v = version.req::<u32>(0)?;
    (v > SNAPSHOT_VERSION).then_some(v)
}

/// `spec` as serde_json read it back from what it wrote: its floats through
/// [`json::read_back_by_serde_json`].
fn read_back_by_serde_json(mut spec: SharedSpec) -> SharedSpec {
    let c = &mut spec.breaker;
    for x in [&mut c.open_jitter, &mut c.open_backoff_factor] {
        *x = json::read_back_by_serde_json(*x);
    }
    if let TripRule::FailureRate {
        threshold_percent, ..
    }
    | TripRule::SlowCallRate {
        threshold_percent, ..
    } = &mut c.trip
    {
        *threshold_percent = json::read_back_by_serde_json(*threshold_percent);
    }
    spec
}

/// Rebuilds a breaker under `config` from a snapshot taken under other settings: the state,
/// mode, open period, generation and statistics carry over; the trip rule's memory and probes
/// that no longer fit are dropped. The generation stays, so the outcomes of clients admitted
/// under either settings keep counting (a probe dropped here reports as a stale one).
fn carry_over(config: BreakerConfig, mut snap: Snapshot) -> Result<Breaker, SpecError> {
    if snap.counter.check(&config.trip).is_err() {
        snap.counter = Counter::for_rule(&config.trip);
    }
    snap.probes.truncate(config.half_open_max_probes as usize);
    let generation = snap.generation;
    Breaker::restore(config, snap).or_else(|_| {
        // Corrupt under any settings: start CLOSED, in a generation of its own.
        let mut b = Breaker::new(config).map_err(SpecError::Breaker)?;
        b.generation = generation.wrapping_add(1);
        Ok(b)
    })
}

/// One more of what `counter` counts (it stops at `u64::MAX`, never wraps).
fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}

/// The most shed calls a session admitted `admitted` calls under a throttle of probability `p`
/// may report ([`MAX_SHED_ODDS_FACTOR`]): none while `p` is 0.
fn shed_allowance(p: f64, admitted: u64) -> u32 {
    // NaN, 0 and below allow nothing.
    let odds = if p > 0.0 && p < 1.0 {
        p / (1.0 - p)
    } else if p >= 1.0 {
        f64::from(u32::MAX)
    } else {
        return 0;
    };
    // `as` saturates: a bound past `u32::MAX` allows every shed call.
    (admitted as f64 * odds * MAX_SHED_ODDS_FACTOR + f64::from(SHED_SLACK)) as u32
}

/// A probability in millionths, rounded up so that one above 0 is never sent as 0 (`no_std`:
/// no `f64::ceil`).
fn ppm(p: f64) -> u32 {
    let x = p * 1e6;
    let n = x as u32;
    if f64::from(n) < x {
        n.saturating_add(1)
    } else {
        n
    }
}
