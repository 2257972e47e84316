//! The whole breaker state as versioned plain data: what a Durable Object or a Redis key stores.

use alloc::vec::Vec;

use crate::breaker::{
    Breaker, BreakerConfig, Counter, Mode, ProbeLease, State, Stats, ThrottleWindow,
};
use crate::error::{terse, ConfigError, SnapshotError};
use crate::rng::SplitMix64;

/// The snapshot format this build writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a [`Breaker`] knows, except its configuration (which the host supplies again on
/// restore, so that a redeploy with new settings takes effect).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot {
    /// Format version; [`SNAPSHOT_VERSION`] when written by this build.
    pub version: u32,
    /// The state.
    pub state: State,
    /// The manual mode.
    pub mode: Mode,
    /// Transition counter that invalidates older permits.
    pub generation: u32,
    /// The latest time seen (ms since the epoch).
    pub last_now: u64,
    /// When it last opened.
    pub opened_at: u64,
    /// When the open period ends.
    pub open_until: u64,
    /// Consecutive failed half-open rounds.
    pub failed_probe_rounds: u32,
    /// Successful probes in the current half-open round.
    pub half_open_successes: u32,
    /// Probes in flight.
    pub probes: Vec<ProbeLease>,
    /// The next probe slot identifier.
    pub next_probe_id: u32,
    /// The trip rule's memory.
    pub counter: Counter,
    /// The jitter generator's state.
    pub rng: u64,
    /// Running totals.
    pub stats: Stats,
    /// The adaptive throttle's window (empty without a throttle, and then left out).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "ThrottleWindow::is_empty")
    )]
    pub throttle: ThrottleWindow,
}

impl Breaker {
    /// The breaker's state as plain data.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: SNAPSHOT_VERSION,
            state: self.state,
            mode: self.mode,
            generation: self.generation,
            last_now: self.last_now,
            opened_at: self.opened_at,
            open_until: self.open_until,
            failed_probe_rounds: self.failed_probe_rounds,
            half_open_successes: self.half_open_successes,
            probes: self.probes.clone(),
            next_probe_id: self.next_probe_id,
            counter: self.counter.clone(),
            rng: self.rng.state(),
            stats: self.stats,
            throttle: self.throttle,
        }
    }

    /// Rebuilds a breaker from `snapshot` under `config`. An invalid configuration, a snapshot of
    /// another format version, a window that no longer fits the trip rule, or values no breaker
    /// can hold are errors, never panics.
    pub fn restore(config: BreakerConfig, snapshot: Snapshot) -> Result<Self, RestoreError> {
        config.validate().map_err(RestoreError::Config)?;
        snapshot.check(&config).map_err(RestoreError::Snapshot)?;
        let mut counter = snapshot.counter;
        counter.reserve_for(&config.trip);
        let mut probes = snapshot.probes;
        probes.reserve_exact((config.half_open_max_probes as usize).saturating_sub(probes.len()));
        Ok(Breaker {
            config,
            state: snapshot.state,
            mode: snapshot.mode,
            generation: snapshot.generation,
            last_now: snapshot.last_now,
            opened_at: snapshot.opened_at,
            open_until: snapshot.open_until,
            failed_probe_rounds: snapshot.failed_probe_rounds,
            half_open_successes: snapshot.half_open_successes,
            probes,
            next_probe_id: snapshot.next_probe_id,
            counter,
            bucket_cache: Default::default(),
            // A throttle switched off by a redeploy forgets its window.
            throttle: match config.throttle_rule() {
                Some(_) => snapshot.throttle,
                None => ThrottleWindow::default(),
            },
            rng: SplitMix64::new(snapshot.rng),
            stats: snapshot.stats,
        })
    }
}

/// Why [`Breaker::restore`] failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RestoreError {
    /// The configuration is invalid.
    Config(ConfigError),
    /// The snapshot is unreadable or does not fit the configuration.
    Snapshot(SnapshotError),
}

// A `SnapshotError`'s words, here beside the version they name (`src/error.rs` stays a leaf).
impl core::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SnapshotError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported snapshot version {v} (this build reads version {SNAPSHOT_VERSION})"
                )
            }
            SnapshotError::ConfigMismatch(what) => {
                write!(f, "snapshot does not match the configuration: {what}")
            }
            SnapshotError::Corrupt(what) => write!(f, "corrupt snapshot: {what}"),
        }
    }
}

impl core::error::Error for SnapshotError {}

impl core::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RestoreError::Config(e) => e.fmt(f),
            RestoreError::Snapshot(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for RestoreError {}

impl Snapshot {
    /// Checks the snapshot against the configuration it is to be restored under.
    pub fn check(&self, config: &BreakerConfig) -> Result<(), SnapshotError> {
        use SnapshotError::{ConfigMismatch, Corrupt};
        if self.version != SNAPSHOT_VERSION {
            return Err(SnapshotError::UnsupportedVersion(self.version));
        }
        if self.probes.len() > config.half_open_max_probes as usize {
            return Err(ConfigMismatch(terse(
                "more probes in flight than half_open_max_probes",
            )));
        }
        if !self.probes.is_empty() && self.state != State::HalfOpen {
            return Err(Corrupt(terse("probes in flight outside HALF_OPEN")));
        }
        if self.half_open_successes != 0 && self.state != State::HalfOpen {
            return Err(Corrupt(terse("half-open successes outside HALF_OPEN")));
        }
        if self.mode == Mode::Isolated && self.state != State::Open {
            return Err(Corrupt(terse("isolated but not OPEN")));
        }
        if self.state == State::Open && self.open_until < self.opened_at {
            return Err(Corrupt(terse("open period ends before it starts")));
        }
        if config.throttle_rule().is_some() && !self.throttle.fits() {
            return Err(Corrupt(terse(
                "a throttle bucket out of its slot or with more accepts than requests",
            )));
        }
        self.counter.check(&config.trip)
    }
}
