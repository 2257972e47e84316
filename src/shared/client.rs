//! The lease client: one process's view of a shared breaker, as a sans-IO state machine. Hosts
//! (the workers-rs `SharedBreaker`, the JavaScript `SharedCircuitBreaker` and
//! `StoreCircuitBreaker` through wasm) read the clock, send the [`Exchange`]s it builds, and feed
//! the answers back; they decide nothing themselves.
//!
//! - CLOSED lease: admit locally until it runs out; outcomes wait in a batch. A failure (or a
//!   probe outcome) is sent at once, together with whatever successes are waiting; successes
//!   alone are sent when `max_batch` of them wait or with the lease renewal.
//! - A lease runs from the moment its request was sent, and ends at its time whatever is in
//!   flight: a slow or lost answer never stretches it.
//! - OPEN lease: reject locally until the coordinator's retry-after has passed, asking again at
//!   least once per lease (so a `reset()` reaches every client within one lease).
//! - HALF_OPEN: admissions ask the coordinator, which grants the probe permits; a refusal (every
//!   probe slot taken) is kept like a lease, until its retry-after or one lease, whichever is
//!   sooner, so a client sends at most one request per retry-after during a probe.
//! - Coordinator unreachable, or refusing (a 4xx: a rotated token, a name not deployed yet), or
//!   not answering within `request_deadline_ms` (a host that dropped the
//!   request): the local breaker (a core [`Breaker`]) decides, or with `fail_closed` everything
//!   is rejected, until `retry_unreachable_ms` has passed; outcomes still wait in batches and are
//!   sent once it answers again.
//! - The host may drop anything: [`LeaseClient::abandon`] forgets the requests in flight (their
//!   batches are sent again, and counted once), and a report nobody answers expires on its own.
//! - A clock stepped back by more than [`CLOCK_STEP_MS`] moves every local deadline back with
//!   it, so no lease, refusal or local decision lasts as long as the step.
//!
//! Every exchange it builds passes the coordinator's checks and stays under
//! [`MAX_BODY_BYTES`]: batches are sealed within their limits, and what cannot be kept (more than
//! [`MAX_BATCHES`] batches' worth while unreachable, batches older than [`RESEND_WINDOW_MS`],
//! batches the coordinator refused) is dropped, counted, and announced with
//! [`ClientEvent::Dropped`] — never sent again unchanged. A batch refused for being numbered too
//! far ahead is not dropped: none of the outbox was applied, so it moves to a new session,
//! numbered from 1, and goes again.

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::protocol::{
    Batch, ClientId, Counts, Exchange, ExchangeReply, Lease, ProbeReport, WirePermit, MAX_BATCHES,
    MAX_BODY_BYTES, MAX_GENERATIONS_PER_BATCH, MAX_OUTCOMES_PER_BATCH, MAX_PROBES_PER_BATCH,
    MAX_SEQ, RESEND_WINDOW_MS,
};
use super::spec::MAX_SHARED_TIMESTAMP_MS;
use crate::breaker::{
    Breaker, BreakerConfig, Mode, Outcome, Permit, RejectReason, Rejected, State, CLOCK_STEP_MS,
};
use crate::clock::Timestamp;
use crate::error::ConfigError;
use crate::rng::{Random, SplitMix64};

/// A reading of this process's own clock, in ms since the Unix epoch: the time a lease client
/// runs on (its leases, kept refusals, local decisions, resend window and local breaker). It is a type
/// of its own because it is never the coordinator's time ([`Timestamp`] where the coordinator
/// takes it): the coordinator's clock may be minutes away, and a client only relays the
/// coordinator's durations, never its instants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalTime(pub u64);

impl LocalTime {
    /// From a JavaScript-style float of milliseconds (`Date.now()`): NaN and negatives read as
    /// 0, and `Infinity` saturates.
    pub fn from_f64_millis(ms: f64) -> Self {
        LocalTime(Timestamp::from_f64_millis(ms).0)
    }
}

/// Events kept for the host to read.
const MAX_EVENTS: usize = 64;
/// `/acquire` requests whose send time is kept (more in flight at once share the oldest one's).
const MAX_ACQUIRES: usize = 64;

/// How a client behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeaseOptions {
    /// Send the waiting successes once this many outcomes wait. Default: 1 000; at most
    /// [`MAX_OUTCOMES_PER_BATCH`].
    pub max_batch: u32,
    /// When the coordinator cannot be reached, reject every call (true) instead of letting the
    /// local breaker decide (false). Default: false (fail-open).
    pub fail_closed: bool,
    /// How long to stay on the local breaker before trying the coordinator again, in ms.
    /// Default: 1 000.
    pub retry_unreachable_ms: u64,
    /// This process's own breaker: it sees every outcome of this process, refuses under a
    /// CLOSED lease once those alone open it (so a process's own failures block it at once,
    /// before the coordinator has answered the report they sent), and decides alone before the
    /// first lease and while the coordinator is unreachable. A CLOSED answer from a coordinator
    /// that has heard every outcome of this process, or a new round of the fleet's breaker,
    /// closes it again. Give it the fleet's settings (the JavaScript clients do by default).
    /// Default: [`BreakerConfig::new`].
    pub local: BreakerConfig,
    /// How long a report may go unanswered before the client counts the coordinator
    /// unreachable and may send it again, in ms (a host that dropped the request without telling
    /// [`LeaseClient::abandon`]). Default: 10 000.
    pub request_deadline_ms: u64,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl LeaseOptions {
    /// The defaults listed on each field.
    pub const fn new() -> Self {
        LeaseOptions {
            max_batch: 1_000,
            fail_closed: false,
            retry_unreachable_ms: 1_000,
            local: BreakerConfig::new(),
            request_deadline_ms: 10_000,
        }
    }
    /// Sets [`max_batch`](Self::max_batch).
    pub const fn with_max_batch(mut self, n: u32) -> Self {
        self.max_batch = n;
        self
    }
    /// Sets [`fail_closed`](Self::fail_closed).
    pub const fn with_fail_closed(mut self, fail_closed: bool) -> Self {
        self.fail_closed = fail_closed;
        self
    }
    /// Sets [`retry_unreachable_ms`](Self::retry_unreachable_ms).
    pub const fn with_retry_unreachable_ms(mut self, ms: u64) -> Self {
        self.retry_unreachable_ms = ms;
        self
    }
    /// Sets [`local`](Self::local).
    pub const fn with_local(mut self, config: BreakerConfig) -> Self {
        self.local = config;
        self
    }
    /// Sets [`request_deadline_ms`](Self::request_deadline_ms).
    pub const fn with_request_deadline_ms(mut self, ms: u64) -> Self {
        self.request_deadline_ms = ms;
        self
    }

    /// Checks every field; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_batch == 0 || u64::from(self.max_batch) > MAX_OUTCOMES_PER_BATCH {
            return Err(ConfigError::new(
                "max_batch",
                self.max_batch as f64,
                "an integer in 1..=62500",
            ));
        }
        if self.retry_unreachable_ms == 0 || self.retry_unreachable_ms > RESEND_WINDOW_MS {
            return Err(ConfigError::new(
                "retry_unreachable_ms",
                self.retry_unreachable_ms as f64,
                "an integer in 1..=300000 milliseconds",
            ));
        }
        if self.request_deadline_ms == 0 || self.request_deadline_ms > RESEND_WINDOW_MS {
            return Err(ConfigError::new(
                "request_deadline_ms",
                self.request_deadline_ms as f64,
                "an integer in 1..=300000 milliseconds",
            ));
        }
        self.local.validate()
    }
}

/// Proof of admission, to report the outcome with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "report the outcome with this ticket"]
pub struct Ticket {
    kind: TicketKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TicketKind {
    /// Admitted on a CLOSED lease (or by a coordinator permit while CLOSED), with the local
    /// breaker's permit when it was asked too (it sees every outcome of this process).
    Lease {
        generation: Option<u32>,
        permit: Option<Permit>,
    },
    /// A half-open probe the coordinator granted.
    Probe {
        generation: u32,
        id: u32,
        issued_at: u64,
    },
    /// Admitted by the local breaker.
    Local {
        permit: Permit,
        generation: Option<u32>,
    },
}

impl Ticket {
    /// Whether this is a half-open probe granted by the coordinator.
    pub fn is_probe(&self) -> bool {
        matches!(self.kind, TicketKind::Probe { .. })
    }
    /// Whether the local breaker admitted it.
    pub fn is_local(&self) -> bool {
        matches!(self.kind, TicketKind::Local { .. })
    }
}

/// What to do about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it, then [`LeaseClient::record`] its outcome with the ticket.
    Admit(Ticket),
    /// Do not run it.
    Reject(Rejected),
    /// Send [`LeaseClient::acquire_request`] to `/acquire`, and feed the answer to
    /// [`LeaseClient::on_answer`] ([`Op::Acquire`]).
    Acquire,
    /// The CLOSED lease ran out: send [`LeaseClient::begin_flush`] (forced) to `/report` — or,
    /// if a report is already in flight ([`LeaseClient::in_flight`]), wait for its answer — then
    /// ask [`LeaseClient::admit_again`].
    Refresh,
}

/// The most times a call is decided while it waits on the coordinator (the lease renewed, an
/// `/acquire` sent, an answer it could not use) before it is refused as open: past it,
/// [`LeaseClient::admit_again`] refuses (`Open`, 1 ms), so that answers that never settle
/// cannot hold a call.
pub const ADMIT_ROUNDS: u32 = 6;

/// The most reports sent back to back: one, and one more for what was recorded while it was on
/// its way or must go again. Past it, [`LeaseClient::on_answer`] answers [`Next::Idle`] even
/// when a report is due, so that a coordinator refusing every report cannot keep a host
/// sending; what waits goes with the next call's report.
pub const REPORT_ROUNDS: u32 = 2;

/// The request an answer fed to [`LeaseClient::on_answer`] is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// An `/acquire` ([`LeaseClient::acquire_request`]) a call waits on ([`Decision::Acquire`]).
    Acquire,
    /// An `/acquire` sent in the background ([`Background::Acquire`]): nothing waits on it, and
    /// a probe permit it brings waits for the next call ([`PARKED_PERMIT_MS`]).
    BackgroundAcquire,
    /// A `/report` ([`LeaseClient::begin_flush`]).
    Report,
}

/// How the coordinator answered a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer<'a> {
    /// A 200 with the protocol's answer.
    Reply(&'a ExchangeReply),
    /// A 4xx: not an outage of the upstream (a rotated token, a name not deployed yet, a report
    /// the coordinator found malformed, a 429). `reason` is what the host logs.
    Refused {
        /// The HTTP status.
        status: u16,
        /// What went wrong, in words.
        reason: &'a str,
    },
    /// No usable answer: a network error, a time-out, a 5xx, an answer that is not the
    /// protocol's.
    Unreachable(&'a str),
}

/// What the host does after feeding an answer to [`LeaseClient::on_answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The call that waited on this `/acquire` runs, with this ticket.
    Admit(Ticket),
    /// The call that waited on this `/acquire` does not run.
    Reject(Rejected),
    /// The call that waited on this `/acquire` is decided again
    /// ([`LeaseClient::admit_again`]): the answer changed what the client knows (the
    /// coordinator refused, or could not be reached, and the local breaker decides now).
    Again,
    /// Send a report now: [`LeaseClient::begin_flush`] (not forced), and feed its answer here.
    Report,
    /// Nothing more to send.
    Idle,
}

/// A request a host should send in the background, without holding up the call that
/// [`LeaseClient::admit_now`] answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Background {
    /// Send [`LeaseClient::acquire_request`] to `/acquire`, and feed the answer to
    /// [`LeaseClient::on_answer`] ([`Op::BackgroundAcquire`]).
    Acquire,
    /// Send [`LeaseClient::begin_flush`] (forced) to `/report`, as for [`Decision::Refresh`].
    Refresh,
}

/// How long a probe permit that a background `/acquire` brought waits for a call to take it
/// ([`LeaseClient::admit_now`]), in ms: then it is given back (reported as ignored), so that a
/// quiet process never sits on the fleet's probe slot until the coordinator's probe time-out.
pub const PARKED_PERMIT_MS: u64 = 1_000;

/// Something a host should tell its listeners about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// The state this client acts on changed.
    StateChanged {
        /// The state before (none before the first answer).
        from: Option<State>,
        /// The state now.
        to: State,
    },
    /// The coordinator could not be reached, or refused; the local breaker decides now.
    Local {
        /// What went wrong.
        reason: String,
        /// The status of the coordinator's refusal (a 4xx), if it refused.
        status: Option<u16>,
    },
    /// The coordinator answers again.
    Recovered,
    /// Outcomes were given up: refused by the coordinator, too old to send again, or more than
    /// a client keeps while the coordinator is unreachable.
    Dropped {
        /// How many outcomes.
        outcomes: u64,
        /// Why.
        reason: String,
    },
}

impl ClientEvent {
    /// For deciding locally because a coordinator's refusal caused: what the refusal most likely means
    /// when it is a configuration mistake rather than an outage (a 401 or 403: the token; a 404:
    /// no such breaker, object or route; a 409: an object holding another breaker). Hosts say it
    /// once per cause (a log line), besides the event.
    pub fn misconfiguration(&self) -> Option<&'static str> {
        let ClientEvent::Local {
            status: Some(status),
            ..
        } = self
        else {
            return None;
        };
        match status {
            401 => Some("the token is wrong: the client's must be the Worker's SERVICE_TOKEN"),
            403 => Some("the token is not allowed here"),
            404 => Some(
                "no such breaker, object or route: is BreakerObject exported and bound \
                 (class_name, script_name), and the name in BREAKERS if the Worker declares it?",
            ),
            409 => Some("the object holds another breaker: address it with idFromName(name)"),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Known {
    state: State,
    mode: Mode,
    generation: u32,
    /// Local time until which the lease holds (CLOSED) or the refusal is kept (OPEN, or
    /// HALF_OPEN with every slot taken): then ask again.
    until: u64,
    /// While a refusal is kept: why, and the local time the coordinator said to come back at.
    refusal: Option<(RejectReason, u64)>,
    /// The fleet's throttle probability while CLOSED, in millionths.
    throttle_ppm: u32,
}

/// What this process's calls met, counted by the client (the coordinator keeps the fleet's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Calls admitted.
    pub admitted: u64,
    /// Calls refused (the throttle's included).
    pub rejected: u64,
    /// Of the refused calls, those the fleet's throttle shed.
    pub throttled: u64,
    /// Calls reported successful.
    pub successes: u64,
    /// Calls reported failed.
    pub failures: u64,
    /// Calls reported as saying nothing about the upstream.
    pub ignored: u64,
}

/// The report in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// How many outbox batches it carries.
    batches: usize,
    /// When it was sent (local clock).
    sent_at: u64,
    /// How many reports went before it back to back ([`REPORT_ROUNDS`]).
    round: u32,
}

/// One process's view of a shared breaker.
#[derive(Debug)]
pub struct LeaseClient {
    id: ClientId,
    session: u64,
    opts: LeaseOptions,
    known: Option<Known>,
    pending: Vec<Counts>,
    pending_probes: Vec<ProbeReport>,
    /// Sealed batches not yet acknowledged, with the local time each was sealed.
    outbox: VecDeque<(Batch, u64)>,
    next_seq: u64,
    /// The report in flight, if one is.
    in_flight: Option<InFlight>,
    /// Send times of the `/acquire` requests in flight, oldest first.
    acquires: VecDeque<u64>,
    /// Send one batch per report (the coordinator refused a whole exchange).
    one_at_a_time: bool,
    /// The outbox goes again at once: renumbered after a gap refusal, or sent in a report
    /// whose answer nobody waits for ([`LeaseClient::drop_call`]).
    resend: bool,
    now: u64,
    local_until: Option<u64>,
    /// After a 429 (too many requests): the local time before which nothing is sent.
    quiet_until: Option<u64>,
    local: Breaker,
    events: VecDeque<ClientEvent>,
    requests: u64,
    dropped: u64,
    rng: SplitMix64,
    /// A probe permit a background `/acquire` brought, and the local time until which it waits
    /// for a call.
    parked: Option<(Ticket, u64)>,
    /// What [`LeaseClient::admit_now`] wants sent in the background (read by
    /// [`LeaseClient::take_background`]).
    background: Option<Background>,
    /// The round of the next report: set when [`Next::Report`] asked for it.
    next_round: u32,
    stats: ClientStats,
}

impl LeaseClient {
    /// A client named `id` (1 to 64 ASCII letters, digits, `-`, `_`) in session `session`: a
    /// number from 1 to 2^53 drawn at random when the process starts, so that two processes with
    /// one name, or a restarted process reusing its name, never share batch numbers. (Session 0
    /// is what clients that predate sessions send; it is refused here.)
    pub fn new(id: String, session: u64, opts: LeaseOptions) -> Result<Self, ConfigError> {
        opts.validate()?;
        let Some(id) = ClientId::new(&id) else {
            return Err(ConfigError::new(
                "client_id",
                id.len() as f64,
                "1 to 64 ASCII letters, digits, - or _",
            ));
        };
        if session == 0 || session > MAX_SEQ {
            return Err(ConfigError::new(
                "session",
                session as f64,
                "an integer in 1..=2^53, drawn at random",
            ));
        }
        let local = Breaker::new(opts.local)?;
        Ok(LeaseClient {
            id,
            session,
            opts,
            known: None,
            pending: Vec::new(),
            pending_probes: Vec::new(),
            outbox: VecDeque::new(),
            next_seq: 1,
            in_flight: None,
            acquires: VecDeque::new(),
            one_at_a_time: false,
            resend: false,
            now: 0,
            local_until: None,
            quiet_until: None,
            local,
            events: VecDeque::new(),
            requests: 0,
            dropped: 0,
            // The throttle's draws: seeded by the session, itself drawn at random per process.
            rng: SplitMix64::new(session),
            parked: None,
            background: None,
            next_round: 0,
            stats: ClientStats::default(),
        })
    }

    /// The client's identifier.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The client's session.
    pub fn session(&self) -> u64 {
        self.session
    }

    /// The state this client last learned, if any.
    pub fn known_state(&self) -> Option<State> {
        self.known.map(|k| k.state)
    }

    /// The probability that a call is shed now, as `Breaker::throttle_probability`: the fleet's
    /// (carried by the lease in hand, while CLOSED), or the local breaker's while it decides.
    pub fn throttle_probability(&self, now: Timestamp) -> f64 {
        if self.deciding_locally() {
            return self.local().throttle_probability(now);
        }
        match self.known {
            Some(k) if k.state == State::Closed && k.mode == Mode::Automatic && now.0 < k.until => {
                k.throttle_ppm as f64 / 1_000_000.0
            }
            _ => 0.0,
        }
    }

    /// Whether the local breaker is deciding (also while holding off after a 429, once the
    /// lease in hand has run out).
    pub fn deciding_locally(&self) -> bool {
        self.local_until.is_some()
            || self
                .quiet_until
                .is_some_and(|q| self.now < q && self.known.is_none_or(|k| self.now >= k.until))
    }

    /// Whether a report is in flight: its answer or failure has not been fed back, and it is
    /// younger than `request_deadline_ms` (as of the latest time seen).
    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some_and(|f| !self.overdue(f))
    }

    fn overdue(&self, f: InFlight) -> bool {
        self.now.saturating_sub(f.sent_at) >= self.opts.request_deadline_ms
    }

    /// The host dropped the requests it had in flight (a cancelled call, a caller's own
    /// time-out): no answer will be fed back. The report's batches stay unacknowledged and go
    /// with the next report (the coordinator counts a batch once, however often it arrives);
    /// nothing else changes. An answer that arrives after all is still taken.
    pub fn abandon(&mut self, now: LocalTime) {
        self.tick(now);
        self.in_flight = None;
        self.acquires.clear();
    }

    /// What this process's calls met so far.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    fn tally(&mut self, d: Decision) -> Decision {
        match d {
            Decision::Admit(_) => self.stats.admitted += 1,
            Decision::Reject(r) => {
                self.stats.rejected += 1;
                if r.reason == RejectReason::Throttled {
                    self.stats.throttled += 1;
                }
            }
            Decision::Acquire | Decision::Refresh => {}
        }
        d
    }

    /// Requests built so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Outcomes given up so far (see [`ClientEvent::Dropped`]).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The local breaker (what decides while the coordinator is unreachable).
    pub fn local(&self) -> &Breaker {
        &self.local
    }

    /// Outcomes not yet acknowledged by the coordinator.
    pub fn unacknowledged(&self) -> u64 {
        let pending: u64 = self.pending.iter().map(Counts::total).sum();
        let outbox: u64 = self.outbox.iter().map(|(b, _)| b.outcomes()).sum();
        pending + outbox + self.pending_probes.len() as u64
    }

    /// The next event to report, oldest first.
    pub fn next_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    fn tick(&mut self, now: LocalTime) -> u64 {
        let now = now.0.min(MAX_SHARED_TIMESTAMP_MS);
        if now.saturating_add(CLOCK_STEP_MS) < self.now {
            self.step_back(self.now - now);
        }
        self.now = self.now.max(now);
        self.now
    }

    /// A report nobody fed back within `request_deadline_ms`: the coordinator counts as
    /// unreachable, and the report's batches go with the next one.
    fn expire_overdue(&mut self) {
        if self.in_flight.is_some_and(|f| self.overdue(f)) {
            self.in_flight = None;
            let reason = format!(
                "no answer within {} ms (request_deadline_ms)",
                self.opts.request_deadline_ms
            );
            self.decide_locally(reason, None);
        }
    }

    /// The local clock was stepped back by `back` ms: every local deadline moves with it.
    #[cold]
    fn step_back(&mut self, back: u64) {
        let earlier = |t: &mut u64| *t = t.saturating_sub(back);
        if let Some(k) = &mut self.known {
            earlier(&mut k.until);
            if let Some((_, t)) = &mut k.refusal {
                earlier(t);
            }
        }
        if let Some(t) = &mut self.local_until {
            earlier(t);
        }
        if let Some(t) = &mut self.quiet_until {
            earlier(t);
        }
        if let Some(f) = &mut self.in_flight {
            earlier(&mut f.sent_at);
        }
        self.acquires.iter_mut().for_each(earlier);
        self.outbox.iter_mut().for_each(|(_, t)| earlier(t));
        self.now = self.now.saturating_sub(back);
    }

    /// Decides about a call at `now` (local clock, ms).
    pub fn admit(&mut self, now: LocalTime) -> Decision {
        let d = self.decide(now);
        self.tally(d)
    }

    /// [`admit`](Self::admit) for a call that has waited on `round` requests already (lease
    /// renewals, `/acquire`s, answers it could not use): from [`ADMIT_ROUNDS`] on, refused as
    /// open for 1 ms instead of asking again.
    pub fn admit_again(&mut self, now: LocalTime, round: u32) -> Decision {
        if round >= ADMIT_ROUNDS {
            self.tick(now);
            return self.tally(Decision::Reject(Rejected {
                reason: RejectReason::Open,
                retry_after_ms: 1,
            }));
        }
        self.admit(now)
    }

    /// Feeds the coordinator's `answer` to the request `op` (sent as [`acquire_request`] or
    /// [`begin_flush`] built it), and says what to do next: for [`Op::Acquire`], admit or refuse
    /// the call that waited, or decide it again; for the others, send a report now or nothing.
    ///
    /// [`acquire_request`]: Self::acquire_request
    /// [`begin_flush`]: Self::begin_flush
    pub fn on_answer(&mut self, now: LocalTime, op: Op, answer: Answer<'_>) -> Next {
        match op {
            Op::Acquire => match self.on_acquire_answer(now, answer) {
                Some(Decision::Admit(t)) => Next::Admit(t),
                Some(Decision::Reject(r)) => Next::Reject(r),
                _ => Next::Again,
            },
            Op::BackgroundAcquire => {
                let due = match answer {
                    Answer::Reply(reply) => self.on_background_reply(now, reply),
                    _ => {
                        let _ = self.on_acquire_answer(now, answer);
                        false
                    }
                };
                if due {
                    Next::Report
                } else {
                    Next::Idle
                }
            }
            Op::Report => {
                let round = self.in_flight.map_or(0, |f| f.round);
                match answer {
                    Answer::Reply(reply) => self.on_flush_reply(now, reply),
                    Answer::Refused { status, reason } => {
                        self.on_flush_refused(now, status, reason)
                    }
                    Answer::Unreachable(reason) => self.on_unreachable(now, true, reason),
                }
                if round + 1 < REPORT_ROUNDS && self.flush_due(LocalTime(self.now)) {
                    self.next_round = round + 1;
                    Next::Report
                } else {
                    Next::Idle
                }
            }
        }
    }

    /// An `/acquire`'s answer: the decision a reply brings, or none (refused, unreachable).
    fn on_acquire_answer(&mut self, now: LocalTime, answer: Answer<'_>) -> Option<Decision> {
        match answer {
            Answer::Reply(reply) => {
                let d = self.take_reply(now, reply);
                return Some(self.tally(d));
            }
            Answer::Refused { status, reason } => self.on_acquire_refused(now, status, reason),
            Answer::Unreachable(reason) => self.on_unreachable(now, false, reason),
        }
        None
    }

    fn decide(&mut self, now: LocalTime) -> Decision {
        let now = self.tick(now);
        self.expire_overdue();
        self.expire_parked();
        if let Some((ticket, _)) = self.parked.take() {
            return Decision::Admit(ticket);
        }
        if let Some(until) = self.local_until {
            if now < until || self.in_flight() {
                return self.admit_locally(now, until);
            }
            return match self.known {
                Some(k) if k.state == State::Closed => Decision::Refresh,
                _ => Decision::Acquire,
            };
        }
        if let Some(quiet) = self.quiet_until.filter(|&q| now < q) {
            // Told to send less: a lease still running is acted on; past it, the local
            // breaker decides until the client may ask again.
            if self.known.is_none_or(|k| now >= k.until) {
                return self.admit_locally(now, quiet);
            }
        }
        let Some(k) = self.known else {
            return Decision::Acquire;
        };
        match (k.state, k.mode) {
            (State::Closed, Mode::Automatic) if now < k.until && self.shed(k.throttle_ppm) => {
                // The fleet's throttle: shed here, counted as a request in the next report.
                self.count_throttled(Some(k.generation));
                Decision::Reject(Rejected {
                    reason: RejectReason::Throttled,
                    retry_after_ms: k.until.saturating_sub(now).max(1),
                })
            }
            (_, Mode::Disabled) if now < k.until => Decision::Admit(self.lease_ticket(None)),
            (State::Closed, _) if now < k.until => {
                // This process's own outcomes count at once: what it alone saw opens its local
                // breaker before the coordinator has heard of it (the fleet's view arrives with
                // the answer to the report the failure sent).
                match self.local.acquire(Timestamp(now)).result {
                    Ok(permit) => Decision::Admit(self.lease_ticket(Some(permit))),
                    Err(r) => Decision::Reject(r),
                }
            }
            (_, Mode::Disabled) | (State::Closed, _) => Decision::Refresh,
            (State::Open | State::HalfOpen, _) => match k.refusal {
                Some((reason, back_at)) if now < k.until => Decision::Reject(Rejected {
                    reason,
                    retry_after_ms: back_at.saturating_sub(now).max(1),
                }),
                _ => Decision::Acquire,
            },
        }
    }

    /// What to send to `/acquire`. Carries no batches: reports travel on `/report` only, one at
    /// a time.
    pub fn acquire_request(&mut self) -> Exchange {
        self.requests += 1;
        if self.acquires.len() < MAX_ACQUIRES {
            self.acquires.push_back(self.now);
        }
        Exchange {
            client: self.id.as_str().into(),
            session: self.session,
            batches: Vec::new(),
        }
    }

    fn take_reply(&mut self, now: LocalTime, reply: &ExchangeReply) -> Decision {
        self.tick(now);
        // Answers may come back in any order: the oldest send time is the safe start.
        let sent_at = self.acquires.pop_front().unwrap_or(self.now);
        let lease = reply.lease.within_limits();
        self.on_lease(&lease, sent_at);
        if let Some(p) = reply.permit.map(WirePermit::within_limits) {
            let kind = match p.probe {
                Some(id) => TicketKind::Probe {
                    generation: p.generation,
                    id,
                    issued_at: p.issued_at,
                },
                None => TicketKind::Lease {
                    generation: Some(p.generation),
                    permit: None,
                },
            };
            return Decision::Admit(Ticket { kind });
        }
        let rejected = reply.rejected.map(Rejected::from).unwrap_or(Rejected {
            reason: RejectReason::Open,
            retry_after_ms: 1,
        });
        // A refusal is a lease too: kept until its retry-after, or one lease at most.
        if let Some(k) = &mut self.known {
            if k.state != State::Closed && k.mode != Mode::Disabled {
                let back_at = sent_at.saturating_add(rejected.retry_after_ms);
                k.until = back_at.min(sent_at.saturating_add(lease.lease_ms));
                k.refusal = Some((rejected.reason, back_at));
            }
        }
        Decision::Reject(rejected)
    }

    /// Records how an admitted call ended. Returns whether a report should be sent now
    /// ([`flush_due`](Self::flush_due)).
    pub fn record(&mut self, now: LocalTime, ticket: Ticket, outcome: Outcome) -> bool {
        self.count_outcome(outcome);
        self.settle(now, ticket, outcome)
    }

    /// A call the host dropped before it ended (its future dropped by the app's own time-out, a
    /// `select!`, a client that went away): it says nothing about the upstream, so it is
    /// recorded as [`Outcome::Ignored`], and a probe's permit goes back to the fleet with the
    /// next report instead of holding the fleet's probe slot until the coordinator's probe
    /// time-out. When that makes a report due (a probe's does), returns it, for a host that
    /// cannot await where the call is dropped (a destructor): send it at once, in the
    /// background, and feed nothing back, not even a failure. Nothing waits for its answer, so
    /// a host that never hears it loses nothing: its batches stay unacknowledged and go again
    /// with the next report, which is due at once (the coordinator acknowledges them without
    /// counting them twice).
    pub fn drop_call(&mut self, now: LocalTime, ticket: Ticket) -> Option<Exchange> {
        if !self.record(now, ticket, Outcome::Ignored) {
            return None;
        }
        let req = self.report();
        self.resend = true;
        Some(req)
    }

    /// [`record`](Self::record) without counting it in [`stats`](Self::stats): a parked permit no
    /// call took is given back this way.
    fn settle(&mut self, now: LocalTime, ticket: Ticket, outcome: Outcome) -> bool {
        let now = self.tick(now);
        match ticket.kind {
            TicketKind::Lease { generation, permit } => {
                let _ = match permit {
                    Some(p) => self.local.report(Timestamp(now), p, outcome),
                    None => self.local.record(Timestamp(now), outcome),
                };
                self.count(generation, outcome)
            }
            TicketKind::Probe {
                generation,
                id,
                issued_at,
            } => {
                if self.pending_probes.len() >= MAX_PROBES_PER_BATCH * MAX_BATCHES {
                    self.drop_outcomes(1, "more probe outcomes waiting than a client keeps");
                } else {
                    self.pending_probes.push(ProbeReport {
                        generation,
                        id,
                        issued_at,
                        outcome: outcome.into(),
                    });
                }
            }
            TicketKind::Local { permit, generation } => {
                let _ = self.local.report(Timestamp(now), permit, outcome);
                self.count(generation, outcome);
            }
        }
        self.flush_due(LocalTime(now))
    }

    /// Records an outcome without a ticket (counted under the current lease).
    pub fn record_untracked(&mut self, now: LocalTime, outcome: Outcome) -> bool {
        let t = self.tick(now);
        self.count_outcome(outcome);
        let _ = self.local.record(Timestamp(t), outcome);
        let generation = self.known.map(|k| k.generation);
        self.count(generation, outcome);
        self.flush_due(now)
    }

    fn count_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Success => self.stats.successes += 1,
            Outcome::Failure => self.stats.failures += 1,
            Outcome::Ignored => self.stats.ignored += 1,
        }
    }

    /// Whether a report should be sent now: a failure or a probe outcome waits, or `max_batch`
    /// outcomes do, or the outbox must go again (renumbered after a gap refusal, or sent for a
    /// dropped call without waiting for the answer), and no report is in flight
    /// and the coordinator is not known to be unreachable.
    pub fn flush_due(&self, now: LocalTime) -> bool {
        if self.in_flight()
            || self.local_until.is_some_and(|u| now.0 < u)
            || self.quiet_until.is_some_and(|q| now.0 < q)
        {
            return false;
        }
        if self.known.is_none() && self.acquiring() {
            // The first lease is on its way: what waits is counted under it once it is here.
            return false;
        }
        let waiting: u64 = self.pending.iter().map(Counts::total).sum();
        self.resend
            || !self.pending_probes.is_empty()
            || self.pending.iter().any(|c| c.failures > 0)
            || waiting >= u64::from(self.opts.max_batch)
    }

    /// Seals what waits into numbered batches and returns the report to send to `/report`: the
    /// oldest unacknowledged batches that fit in one request. `None` when a report is already
    /// in flight, or when nothing waits and `force` (renew the lease anyway) is false.
    pub fn begin_flush(&mut self, force: bool) -> Option<Exchange> {
        self.expire_overdue();
        if self.in_flight.is_some() {
            return None;
        }
        self.drop_expired();
        self.seal();
        self.resend = false;
        if self.outbox.is_empty() && !force {
            return None;
        }
        let req = self.report();
        self.in_flight = Some(InFlight {
            batches: req.batches.len(),
            sent_at: self.now,
            round: core::mem::take(&mut self.next_round),
        });
        Some(req)
    }

    /// A report of the oldest unacknowledged batches that fit in one request, with what waits
    /// sealed into batches first.
    fn report(&mut self) -> Exchange {
        self.seal();
        let mut req = Exchange {
            client: self.id.as_str().into(),
            session: self.session,
            batches: Vec::new(),
        };
        let limit = if self.one_at_a_time { 1 } else { MAX_BATCHES };
        for (batch, _) in self.outbox.iter().take(limit) {
            let len = req.encoded_len_bound() + batch.encoded_len_bound();
            if len > MAX_BODY_BYTES && !req.batches.is_empty() {
                break;
            }
            req.batches.push(batch.clone());
        }
        self.requests += 1;
        req
    }

    /// The coordinator's answer to `/report`.
    fn on_flush_reply(&mut self, now: LocalTime, reply: &ExchangeReply) {
        self.tick(now);
        let Some(flight) = self.in_flight.take() else {
            // The answer to a report given up on (abandoned, overdue): its numbers may belong
            // to a session since left behind, so its acknowledgements and refusals are not
            // trusted (what it acknowledged goes again and is recognised); its lease is news.
            self.on_lease(&reply.lease, self.now);
            return;
        };
        let sent_at = flight.sent_at;
        let mut refused = 0u64;
        let mut reason = None;
        let mut resync = false;
        self.outbox.retain(|(b, _)| {
            if let Some(r) = reply.refused.iter().find(|r| r.seq == b.seq) {
                if r.last_applied.is_some() {
                    // Numbered too far ahead: kept, and renumbered below (in a new session: the
                    // numbers after the last applied one are not reused, see `renumber`).
                    resync = true;
                    return true;
                }
                refused += b.outcomes();
                reason.get_or_insert_with(|| r.reason.clone());
                return false;
            }
            !reply.acked.contains(&b.seq)
        });
        if let Some(reason) = reason {
            self.drop_outcomes(refused, &reason);
        }
        if resync {
            self.renumber();
        }
        if self.outbox.is_empty() {
            self.one_at_a_time = false;
        }
        self.on_lease(&reply.lease, sent_at);
    }

    /// The coordinator refused a batch numbered too far past the last it applied for this
    /// session: none of the outbox's batches was applied. They move to a new session, numbered
    /// from 1, and go with the next report. A new session rather than the numbers after the
    /// last applied one: a report still on its way (abandoned, overdue) may carry those numbers
    /// for other batches, which would then count twice, or make these count as its duplicates.
    fn renumber(&mut self) {
        self.session = next_session(self.session);
        let mut seq = 0;
        for (b, _) in self.outbox.iter_mut() {
            seq += 1;
            b.seq = seq;
        }
        self.next_seq = seq + 1;
        self.resend = !self.outbox.is_empty();
    }

    /// The coordinator refused the whole report with a 4xx `status`. It is not an outage of the
    /// upstream: the client falls back to its local breaker, as when the coordinator cannot be
    /// reached, and asks again after `retry_unreachable_ms`. A report the coordinator found
    /// malformed or too large (400, 413: it would refuse it again) is never sent again
    /// unchanged: a report of several batches is sent one batch at a time from now on, and a
    /// single refused batch is dropped. Any other refusal (401 or 403: a rotated token; 404: a
    /// name not deployed yet) keeps the batches for later. A 429 (the coordinator's bound on a
    /// session's requests, or a proxy's limit) is no outage: the lease in hand is kept, and nothing is
    /// sent for `retry_unreachable_ms`.
    fn on_flush_refused(&mut self, now: LocalTime, status: u16, reason: &str) {
        self.tick(now);
        let sent = self.in_flight.take().map_or(0, |f| f.batches);
        if status == 429 {
            return self.hold_off();
        }
        if matches!(status, 400 | 413) {
            if sent > 1 {
                self.one_at_a_time = true;
            } else if let Some((b, _)) = self.outbox.pop_front() {
                self.drop_outcomes(b.outcomes(), reason);
            }
        }
        self.decide_locally(reason.to_string(), Some(status));
    }

    /// The coordinator refused an `/acquire` with a 4xx `status`: as
    /// [`on_unreachable`](Self::on_unreachable), with the status in the event (a 429: as in
    /// [`on_flush_refused`](Self::on_flush_refused)).
    fn on_acquire_refused(&mut self, now: LocalTime, status: u16, reason: &str) {
        self.tick(now);
        self.acquires.pop_front();
        if status == 429 {
            return self.hold_off();
        }
        self.decide_locally(reason.to_string(), Some(status));
    }

    /// After a 429: nothing is sent for `retry_unreachable_ms` (longer than the coordinator's
    /// retry-after), the batches wait, and the lease in hand is still acted on; only once it
    /// runs out does the local breaker decide, until then. No [`ClientEvent::Local`]: the
    /// coordinator answers.
    fn hold_off(&mut self) {
        self.quiet_until = Some(self.now.saturating_add(self.opts.retry_unreachable_ms));
    }

    /// The coordinator could not be reached (network error, time-out, overload, a 5xx, an
    /// answer that is not the protocol's). `was_flush`: the failed request was the report from
    /// `begin_flush`; it will be sent again, unchanged, while it is younger than
    /// [`RESEND_WINDOW_MS`].
    fn on_unreachable(&mut self, now: LocalTime, was_flush: bool, reason: &str) {
        self.tick(now);
        if was_flush {
            self.in_flight = None;
        } else {
            self.acquires.pop_front();
        }
        self.decide_locally(reason.into(), None);
    }

    fn decide_locally(&mut self, reason: String, status: Option<u16>) {
        if self.local_until.is_none() {
            self.push_event(ClientEvent::Local { reason, status });
        }
        self.local_until = Some(self.now.saturating_add(self.opts.retry_unreachable_ms));
    }

    fn admit_locally(&mut self, now: u64, until: u64) -> Decision {
        if self.opts.fail_closed {
            return Decision::Reject(Rejected {
                reason: RejectReason::Open,
                retry_after_ms: until.saturating_sub(now).max(1),
            });
        }
        match self.local.acquire(Timestamp(now)).result {
            Ok(permit) => Decision::Admit(Ticket {
                kind: TicketKind::Local {
                    permit,
                    generation: self.known.map(|k| k.generation),
                },
            }),
            Err(r) => Decision::Reject(r),
        }
    }

    fn lease_ticket(&self, permit: Option<Permit>) -> Ticket {
        Ticket {
            kind: TicketKind::Lease {
                generation: self.known.map(|k| k.generation),
                permit,
            },
        }
    }

    /// A lease runs from when its request was sent: an answer that took long is worth less. An
    /// OPEN one is asked again after one lease at most, so that a `reset()` (or an open period
    /// the coordinator shortened) reaches every client within one lease. Every lease a reply
    /// carries passes here, brought within the protocol's limits first
    /// ([`Lease::within_limits`]): no reply makes a client stop asking for longer than an hour.
    fn on_lease(&mut self, lease: &Lease, start: u64) {
        let lease = &lease.within_limits();
        let mut refusal = None;
        let until = match (lease.state, lease.mode) {
            (_, Mode::Disabled) | (State::Closed, _) => start.saturating_add(lease.lease_ms),
            (State::Open, mode) => {
                let back_at = start.saturating_add(lease.retry_after_ms.max(1));
                let reason = if mode == Mode::Isolated {
                    RejectReason::Isolated
                } else {
                    RejectReason::Open
                };
                refusal = Some((reason, back_at));
                back_at.min(start.saturating_add(lease.lease_ms))
            }
            (State::HalfOpen, _) => start,
        };
        let before = self.known.map(|k| k.state);
        let generation = self.known.map(|k| k.generation);
        if before.is_none() && self.local_until.is_none() {
            // Outcomes of calls admitted before the first lease (by the local breaker, while it
            // was on its way: moments ago) count under it. Those decided while the coordinator
            // was unreachable, maybe minutes ago, stay without a generation: statistics only.
            for c in self.pending.iter_mut().filter(|c| c.generation.is_none()) {
                c.generation = Some(lease.generation);
            }
        }
        if before != Some(lease.state) {
            self.push_event(ClientEvent::StateChanged {
                from: before,
                to: lease.state,
            });
        }
        self.known = Some(Known {
            state: lease.state,
            mode: lease.mode,
            generation: lease.generation,
            until,
            refusal,
            throttle_ppm: lease.throttle_ppm,
        });
        if self.local_until.take().is_some() {
            self.push_event(ClientEvent::Recovered);
        }
        self.align_local(lease, generation);
    }

    /// The fleet's view replaces this process's own once the coordinator says CLOSED after
    /// hearing every outcome this process saw, or after a new round (another generation: it
    /// closed again after probes, or an operator reset it): a local breaker that this process's
    /// failures opened closes, so that its refusals last one round trip at most when the fleet
    /// (which may run other settings, or count other processes' successes) disagrees.
    fn align_local(&mut self, lease: &Lease, generation: Option<u32>) {
        if lease.state != State::Closed || lease.mode != Mode::Automatic {
            return;
        }
        let now = Timestamp(self.now);
        let heard_all = self.pending.is_empty() && self.outbox.is_empty();
        let round = generation.is_some_and(|g| g != lease.generation);
        if (round || heard_all) && self.local.state_at(now) != State::Closed {
            let _ = self.local.reset(now);
        }
    }

    /// Decides about a call at `now` without waiting for the coordinator, for a host whose
    /// callers cannot wait (the synchronous `isHealthy()`): never answers
    /// [`Decision::Acquire`] or [`Decision::Refresh`]. Where [`admit`](Self::admit) would ask the
    /// coordinator, it answers from what this process knows and leaves the request to send in
    /// the background ([`take_background`](Self::take_background)):
    /// - no lease yet, or the CLOSED lease ran out, or the coordinator is due to be tried again
    ///   while deciding locally: the local breaker decides (it has seen every outcome of this process);
    /// - OPEN past its retry-after, or HALF_OPEN: refused until the coordinator grants a probe;
    ///   the permit a background `/acquire` brings waits for the next call
    ///   ([`PARKED_PERMIT_MS`]).
    pub fn admit_now(&mut self, now: LocalTime) -> Decision {
        let t = self.tick(now);
        let d = match self.decide(LocalTime(t)) {
            Decision::Acquire => {
                if !self.acquiring() {
                    self.background = Some(Background::Acquire);
                }
                match self.known {
                    Some(k)
                        if self.local_until.is_none()
                            && k.state != State::Closed
                            && k.mode != Mode::Disabled =>
                    {
                        Decision::Reject(Rejected {
                            reason: RejectReason::Open,
                            retry_after_ms: 1,
                        })
                    }
                    _ => self.admit_locally(t, t),
                }
            }
            Decision::Refresh => {
                if !self.in_flight() {
                    self.background = Some(Background::Refresh);
                }
                self.admit_locally(t, t)
            }
            d => d,
        };
        self.tally(d)
    }

    /// What [`admit_now`](Self::admit_now) left to send in the background, once.
    pub fn take_background(&mut self) -> Option<Background> {
        self.background.take()
    }

    /// Feeds the coordinator's answer to an `/acquire` sent in the background: its lease is
    /// taken, and a probe permit waits for the next call ([`PARKED_PERMIT_MS`]). Returns whether
    /// a report is due (a permit given back).
    fn on_background_reply(&mut self, now: LocalTime, reply: &ExchangeReply) -> bool {
        let t = self.now.max(now.0);
        if let Decision::Admit(ticket) = self.take_reply(now, reply) {
            if ticket.is_probe() {
                self.expire_parked();
                if let Some((old, _)) = self.parked.replace((ticket, t + PARKED_PERMIT_MS)) {
                    let _ = self.settle(LocalTime(t), old, Outcome::Ignored);
                }
            }
            // A CLOSED permit is no more than the lease it came with.
        }
        self.flush_due(LocalTime(self.now))
    }

    /// A parked permit no call took in time is given back to the fleet.
    fn expire_parked(&mut self) {
        if let Some((ticket, until)) = self.parked {
            if self.now >= until {
                self.parked = None;
                let _ = self.settle(LocalTime(self.now), ticket, Outcome::Ignored);
            }
        }
    }

    /// Whether an `/acquire` is in flight, younger than `request_deadline_ms`.
    fn acquiring(&self) -> bool {
        self.acquires
            .back()
            .is_some_and(|&sent| self.now.saturating_sub(sent) < self.opts.request_deadline_ms)
    }

    /// The state this process acts on at `now`: the coordinator's, except that a local breaker
    /// this process's own failures opened refuses under a CLOSED lease, and that the local
    /// breaker decides before the first lease and while the coordinator is unreachable.
    pub fn state_at(&self, now: LocalTime) -> State {
        let local = self.local.state_at(Timestamp(now.0.max(self.now)));
        match self.known {
            Some(k) if self.local_until.is_none() => match (k.state, k.mode) {
                (State::Closed, Mode::Automatic) => local,
                (state, _) => state,
            },
            _ => local,
        }
    }

    /// What a call would be told at `now`, without taking anything: `Err` with the refusal
    /// [`admit`](Self::admit) would give, `Ok` when it would admit or ask the coordinator (the
    /// fleet's throttle draws per call and is not read here).
    pub fn peek(&self, now: LocalTime) -> Result<(), Rejected> {
        let now = now.0.max(self.now);
        let local = || {
            if self.opts.fail_closed && self.local_until.is_some_and(|u| now < u) {
                return Err(Rejected {
                    reason: RejectReason::Open,
                    retry_after_ms: self.local_until.unwrap_or(now).saturating_sub(now).max(1),
                });
            }
            self.local.peek(Timestamp(now))
        };
        match self.known {
            Some(k) if self.local_until.is_none() => match (k.state, k.mode, k.refusal) {
                (_, Mode::Disabled, _) => Ok(()),
                (State::Closed, _, _) => local(),
                (_, _, Some((reason, back_at))) if now < k.until => Err(Rejected {
                    reason,
                    retry_after_ms: back_at.saturating_sub(now).max(1),
                }),
                _ => Ok(()),
            },
            _ => local(),
        }
    }

    /// Seals what waits into batches within the limits, oldest outcomes first.
    fn seal(&mut self) {
        while !self.pending.is_empty() || !self.pending_probes.is_empty() {
            if self.outbox.len() >= MAX_BATCHES {
                // Unreachable for long: keep what the outbox holds and what one more batch
                // would, give up the rest.
                self.trim_pending();
                return;
            }
            let take = self.pending_probes.len().min(MAX_PROBES_PER_BATCH);
            let probes: Vec<ProbeReport> = self.pending_probes.drain(..take).collect();
            let room = MAX_OUTCOMES_PER_BATCH - probes.len() as u64;
            let counts = take_counts(&mut self.pending, room);
            let batch = Batch {
                seq: self.next_seq,
                counts,
                probes,
            };
            self.next_seq += 1;
            self.outbox.push_back((batch, self.now));
        }
    }

    fn trim_pending(&mut self) {
        let room = MAX_OUTCOMES_PER_BATCH.saturating_sub(self.pending_probes.len() as u64);
        let kept = take_counts(&mut self.pending, room);
        let lost: u64 = self.pending.iter().map(Counts::total).sum();
        self.pending = kept;
        let probes_lost = self
            .pending_probes
            .len()
            .saturating_sub(MAX_PROBES_PER_BATCH) as u64;
        self.pending_probes.truncate(MAX_PROBES_PER_BATCH);
        if lost + probes_lost > 0 {
            self.drop_outcomes(
                lost + probes_lost,
                "more outcomes waiting than a client keeps while the coordinator is unreachable",
            );
        }
    }

    fn drop_expired(&mut self) {
        let now = self.now;
        let mut lost = 0u64;
        while let Some((b, sealed)) = self.outbox.front() {
            if now.saturating_sub(*sealed) < RESEND_WINDOW_MS {
                break;
            }
            lost += b.outcomes();
            self.outbox.pop_front();
        }
        if lost > 0 {
            self.drop_outcomes(lost, "not acknowledged within the resend window");
        }
    }

    fn drop_outcomes(&mut self, outcomes: u64, reason: &str) {
        self.dropped = self.dropped.saturating_add(outcomes);
        // One event per reason while the host has not read it.
        if let Some(ClientEvent::Dropped {
            outcomes: n,
            reason: r,
        }) = self.events.back_mut()
        {
            if r == reason {
                *n = n.saturating_add(outcomes);
                return;
            }
        }
        self.push_event(ClientEvent::Dropped {
            outcomes,
            reason: reason.to_string(),
        });
    }

    /// Events wait for the host; a host that never reads them does not make them pile up.
    fn push_event(&mut self, e: ClientEvent) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// The throttle's draw for one call under a lease that carries `ppm`.
    fn shed(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.rng.next_unit() * 1e6 < f64::from(ppm)
    }

    /// A call shed under the lease of `generation`: a request for the fleet's throttle window.
    fn count_throttled(&mut self, generation: Option<u32>) {
        let room = self.pending.len() < MAX_GENERATIONS_PER_BATCH;
        match self.pending.iter_mut().find(|c| c.generation == generation) {
            Some(c) if c.total() < MAX_OUTCOMES_PER_BATCH => {
                c.throttled = c.throttled.saturating_add(1)
            }
            None if room => self.pending.push(Counts {
                generation,
                throttled: 1,
                ..Counts::default()
            }),
            // A batch already full of outcomes: the shed call goes uncounted rather than
            // sealing a batch of its own (it is only a hint for the window).
            _ => {}
        }
    }

    fn count(&mut self, generation: Option<u32>, outcome: Outcome) {
        let idx = match self.pending.iter().position(|c| c.generation == generation) {
            Some(i) => i,
            None => {
                if self.pending.len() >= MAX_GENERATIONS_PER_BATCH {
                    // Outcomes of long-gone generations are stale whatever their number: fold the
                    // oldest entry into "no generation" to keep the batch bounded.
                    let oldest = self.pending.remove(0);
                    self.fold_stale(oldest);
                }
                self.pending.push(Counts {
                    generation,
                    ..Counts::default()
                });
                self.pending.len() - 1
            }
        };
        let full = self
            .pending
            .get(idx)
            .is_some_and(|c| c.total() >= MAX_OUTCOMES_PER_BATCH);
        if full {
            if self.outbox.len() >= MAX_BATCHES {
                return self.drop_outcomes(
                    1,
                    "more outcomes waiting than a client keeps while the coordinator is unreachable",
                );
            }
            // One batch's worth of one generation waits: seal it (a report is due anyway).
            self.seal();
            return self.count(generation, outcome);
        }
        if let Some(c) = self.pending.get_mut(idx) {
            match outcome {
                Outcome::Success => c.successes += 1,
                Outcome::Failure => c.failures += 1,
                Outcome::Ignored => c.ignored += 1,
            }
        }
    }

    fn fold_stale(&mut self, c: Counts) {
        if let Some(none) = self.pending.iter_mut().find(|p| p.generation.is_none()) {
            none.successes = none.successes.saturating_add(c.successes);
            none.failures = none.failures.saturating_add(c.failures);
            none.ignored = none.ignored.saturating_add(c.ignored);
            none.throttled = none.throttled.saturating_add(c.throttled);
        } else {
            self.pending.insert(
                0,
                Counts {
                    generation: None,
                    ..c
                },
            );
        }
    }
}

/// The session a client moves to after a gap refusal: drawn from the current one (a sans-IO
/// client has no randomness of its own), in 1..=2^53, never the same.
fn next_session(session: u64) -> u64 {
    let mut z = session.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let next = (z & (MAX_SEQ - 1)).max(1);
    if next == session {
        next % (MAX_SEQ - 1) + 1
    } else {
        next
    }
}

/// Takes up to `room` outcomes from `pending` (oldest entries first, splitting one if needed).
fn take_counts(pending: &mut Vec<Counts>, mut room: u64) -> Vec<Counts> {
    let mut out = Vec::new();
    while room > 0 && !pending.is_empty() {
        let Some(c) = pending.first_mut() else { break };
        if c.total() <= room {
            room -= c.total();
            out.push(pending.remove(0));
            continue;
        }
        // Split: successes first, then ignored, then failures, as the coordinator applies them.
        let mut part = Counts {
            generation: c.generation,
            ..Counts::default()
        };
        for (from, to) in [
            (&mut c.successes, &mut part.successes),
            (&mut c.ignored, &mut part.ignored),
            (&mut c.failures, &mut part.failures),
            (&mut c.throttled, &mut part.throttled),
        ] {
            let n = u64::from(*from).min(room) as u32;
            *from -= n;
            *to += n;
            room -= u64::from(n);
        }
        out.push(part);
    }
    out
}
