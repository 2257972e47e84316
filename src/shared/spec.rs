//! What every participant of one shared breaker must agree on: the state machine's
//! configuration and the lease length, with a check of what the shared mode can honour and a
//! fingerprint that tells two settings apart.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::json;
use crate::breaker::{BreakerConfig, TripRule, Window};
use crate::error::ConfigError;

/// The default lease: how long a client may admit locally on a CLOSED state before asking again.
pub const DEFAULT_LEASE_MS: u64 = 1_000;
/// The longest lease accepted (one hour).
pub const MAX_LEASE_MS: u64 = 3_600_000;
/// The longest duration a shared breaker accepts in its configuration (one year). Shared
/// records travel through JSON and JavaScript numbers: a timestamp plus a duration must stay
/// below 2^53.
pub const MAX_SHARED_DURATION_MS: u64 = 365 * 24 * 3_600_000;
/// The longest open period, and the longest probe timeout, a shared breaker accepts (one hour,
/// as [`MAX_LEASE_MS`]). One breaker answers for the whole fleet: an open period of a year would
/// refuse every client for a year after the upstream healed, and a probe timeout of a year would
/// hold the breaker HALF_OPEN that long behind one lost probe. With these, a healed upstream is
/// seen at most `max_open_duration_ms × (1 + open_jitter)` (under two hours) after the last
/// failed probe.
pub const MAX_SHARED_OPEN_MS: u64 = 3_600_000;
/// The largest memory a shared breaker's trip rule may keep: the `threshold` of
/// `failures_in_window` (it stores that many failure times) and the `calls` of a count window
/// (that many calls). The record holding it is written at every report; 10 000 keeps it under
/// 320 KiB with every session slot taken ([`MAX_CLIENTS`](super::protocol::MAX_CLIENTS)).
pub const MAX_SHARED_WINDOW_CALLS: u32 = 10_000;
/// Timestamps a coordinator or a lease client works with are clamped to this (2^52 ms, about the
/// year 144 000), so that a clock reading `Infinity` or garbage cannot push a stored time past
/// 2^53.
pub const MAX_SHARED_TIMESTAMP_MS: u64 = 1 << 52;

/// One shared breaker's settings, as one entry of the Worker's `BREAKERS` (JSON; the coordinator
/// of `breakwater/store` gets the same JSON, built from its options):
///
/// ```json
/// { "lease_ms": 1000,
///   "breaker": { "open_duration_ms": 30000,
///                "trip": { "kind": "failure_rate", "threshold_percent": 50,
///                          "minimum_calls": 20, "window": { "millis": 60000 } } } }
/// ```
///
/// Every field is optional and unknown fields are refused, at every level; the trip rule is
/// tagged by `kind` (see [`TripRule`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct SharedSpec {
    /// The state machine's configuration (every field optional; see [`BreakerConfig`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub breaker: BreakerConfig,
    /// How long a client may act on a CLOSED lease before asking again, in ms: the longest a
    /// trip can go unseen by a client that has not failed itself. Default 1 000, at most one
    /// hour.
    #[cfg_attr(feature = "serde", serde(default = "default_lease_ms"))]
    pub lease_ms: u64,
}

#[cfg(feature = "serde")]
fn default_lease_ms() -> u64 {
    DEFAULT_LEASE_MS
}

impl Default for SharedSpec {
    fn default() -> Self {
        Self::new(BreakerConfig::new())
    }
}

/// Why settings are refused for a shared breaker; its words name the field and the value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpecError {
    /// The breaker's own settings are invalid.
    Breaker(ConfigError),
    /// `lease_ms` is 0 or over [`MAX_LEASE_MS`].
    LeaseMs(u64),
    /// A slow-call rule: outcomes travel as counts without durations, so it could never trip.
    SlowCallRule,
    /// A window of more calls than [`MAX_SHARED_WINDOW_CALLS`] (its memory is stored at every
    /// report).
    WindowCalls {
        /// `trip.threshold` or `trip.window.calls`, under `breaker`.
        field: &'static str,
        /// The calls asked for.
        calls: u32,
    },
    /// An open period or probe time-out over [`MAX_SHARED_OPEN_MS`].
    OpenMs {
        /// The field, under `breaker` (`open_duration_ms`).
        field: &'static str,
        /// The milliseconds asked for.
        ms: u64,
    },
    /// A time window over [`MAX_SHARED_DURATION_MS`].
    WindowMs {
        /// `trip.window_ms` or `trip.window.millis`, under `breaker`.
        field: &'static str,
        /// The milliseconds asked for.
        ms: u64,
    },
}

impl SpecError {
    /// The setting it is about, as the settings spell it under `breaker` (`open_duration_ms`,
    /// `trip.threshold`), or `None` for `lease_ms`. With [`refusal`](Self::refusal), what a host
    /// that names settings its own way (the npm package's options) words the error from, instead
    /// of reading these words.
    pub fn breaker_field(&self) -> Option<&'static str> {
        match self {
            SpecError::Breaker(e) => Some(e.field),
            SpecError::LeaseMs(_) => None,
            SpecError::SlowCallRule => Some("trip"),
            SpecError::WindowCalls { field, .. }
            | SpecError::OpenMs { field, .. }
            | SpecError::WindowMs { field, .. } => Some(field),
        }
    }

    /// The value given and why it was refused: `7200000 (a shared breaker accepts at most …)`.
    pub fn refusal(&self) -> SpecRefusal<'_> {
        SpecRefusal(self)
    }
}

/// [`SpecError::refusal`]: the value given and, in parentheses, why it was refused.
#[derive(Clone, Copy, Debug)]
pub struct SpecRefusal<'a>(&'a SpecError);

impl core::fmt::Display for SpecRefusal<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self.0 {
            SpecError::Breaker(e) => write!(
                f,
                "{} (expected {})",
                crate::float::Plain(e.value),
                e.expected
            ),
            SpecError::LeaseMs(ms) => write!(f, "{ms} (expected an integer in 1..={MAX_LEASE_MS})"),
            SpecError::SlowCallRule => f.write_str(
                "slow_call_rate (a shared breaker receives outcomes as counts without durations, \
                 so a slow-call rule could never trip; use failure_rate, consecutive_failures or \
                 failures_in_window)",
            ),
            SpecError::WindowCalls { calls, .. } => write!(
                f,
                "{calls} (a shared breaker accepts at most {MAX_SHARED_WINDOW_CALLS}: its memory \
                 is stored at every report)"
            ),
            SpecError::OpenMs { ms, .. } => write!(
                f,
                "{ms} (a shared breaker accepts at most {MAX_SHARED_OPEN_MS} ms, one hour)"
            ),
            SpecError::WindowMs { ms, .. } => write!(
                f,
                "{ms} (a shared breaker accepts at most {MAX_SHARED_DURATION_MS} ms, one year)"
            ),
        }
    }
}

impl core::fmt::Display for SpecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (self, self.breaker_field()) {
            (SpecError::Breaker(e), _) => write!(f, "`breaker`: {e}"),
            (_, Some(field)) => write!(f, "invalid `breaker.{field}`: {}", self.refusal()),
            (_, None) => write!(f, "invalid `lease_ms`: {}", self.refusal()),
        }
    }
}

impl core::error::Error for SpecError {}

impl SharedSpec {
    /// `breaker` with the default lease.
    pub const fn new(breaker: BreakerConfig) -> Self {
        SharedSpec {
            breaker,
            lease_ms: DEFAULT_LEASE_MS,
        }
    }

    /// Sets [`lease_ms`](Self::lease_ms).
    pub const fn with_lease_ms(mut self, ms: u64) -> Self {
        self.lease_ms = ms;
        self
    }

    /// Checks the configuration, the lease, and what the shared mode cannot honour: outcomes
    /// travel as counts without durations, so a slow-call rule could never trip.
    pub fn validate(&self) -> Result<(), SpecError> {
        let c = &self.breaker;
        c.validate().map_err(SpecError::Breaker)?;
        if self.lease_ms == 0 || self.lease_ms > MAX_LEASE_MS {
            return Err(SpecError::LeaseMs(self.lease_ms));
        }
        if let TripRule::SlowCallRate { .. } = c.trip {
            return Err(SpecError::SlowCallRule);
        }
        // What the trip rule keeps: calls (its memory, stored at every report) and a span.
        let (memory, window) = match c.trip {
            TripRule::FailuresInWindow {
                threshold,
                window_ms,
            } => (
                Some(("trip.threshold", threshold)),
                Some(("trip.window_ms", window_ms)),
            ),
            TripRule::FailureRate {
                window: Window::Calls(n),
                ..
            } => (Some(("trip.window.calls", n)), None),
            TripRule::FailureRate {
                window: Window::Millis(ms),
                ..
            } => (None, Some(("trip.window.millis", ms))),
            _ => (None, None),
        };
        if let Some((field, calls)) = memory.filter(|&(_, n)| n > MAX_SHARED_WINDOW_CALLS) {
            return Err(SpecError::WindowCalls { field, calls });
        }
        for (field, ms) in [
            ("open_duration_ms", c.open_duration_ms),
            ("max_open_duration_ms", c.max_open_duration_ms),
            ("probe_timeout_ms", c.probe_timeout_ms),
        ] {
            if ms > MAX_SHARED_OPEN_MS {
                return Err(SpecError::OpenMs { field, ms });
            }
        }
        if let Some((field, ms)) = window.filter(|&(_, ms)| ms > MAX_SHARED_DURATION_MS) {
            return Err(SpecError::WindowMs { field, ms });
        }
        Ok(())
    }

    /// A fingerprint of everything but the jitter seed (instances seed their own generators):
    /// two settings with the same fingerprint behave alike. 52 bits, so that it survives a
    /// JavaScript number.
    pub fn fingerprint(&self) -> u64 {
        let mut h = Fnv::new();
        let c = &self.breaker;
        match c.trip {
            TripRule::ConsecutiveFailures { threshold } => {
                h.u64(1);
                h.u64(threshold.into());
            }
            TripRule::FailuresInWindow {
                threshold,
                window_ms,
            } => {
                h.u64(2);
                h.u64(threshold.into());
                h.u64(window_ms);
            }
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            } => {
                h.u64(3);
                h.u64(threshold_percent.to_bits());
                h.u64(minimum_calls.into());
                h.window(window);
            }
            TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            } => {
                h.u64(4);
                h.u64(threshold_percent.to_bits());
                h.u64(slow_call_ms);
                h.u64(minimum_calls.into());
                h.window(window);
            }
        }
        h.u64(c.open_duration_ms);
        h.u64(c.open_jitter.to_bits());
        h.u64(c.open_backoff_factor.to_bits());
        h.u64(c.max_open_duration_ms);
        h.u64(c.half_open_max_probes.into());
        h.u64(c.half_open_success_threshold.into());
        h.u64(c.probe_timeout_ms);
        h.u64(self.lease_ms);
        // Only when set, so that settings without a throttle keep the fingerprint they had
        // before it was part of it.
        if let Some(t) = c.throttle {
            h.u64(5);
            h.u64(t.multiplier.to_bits());
            h.u64(t.window_ms);
            h.u64(t.minimum_requests.into());
            h.u64(t.max_rejection_probability.to_bits());
        }
        h.0 & ((1 << 52) - 1)
    }

    /// The settings in words, as the status page and the admin view show them beside the
    /// fingerprint: the trip rule, the open period (its jitter and backoff), the probes, the
    /// lease and the throttle. Numbers as configured (durations in ms, s or min).
    pub fn describe(&self) -> String {
        let c = &self.breaker;
        let mut out = match c.trip {
            TripRule::ConsecutiveFailures { threshold } => {
                format!("opens after {threshold} consecutive failures")
            }
            TripRule::FailuresInWindow {
                threshold,
                window_ms,
            } => format!(
                "opens after {threshold} failures within {}",
                duration(window_ms)
            ),
            TripRule::FailureRate {
                threshold_percent,
                minimum_calls,
                window,
            } => format!(
                "opens when {} % of {} fail (at least {minimum_calls} calls)",
                crate::float::plain(threshold_percent),
                window_words(window)
            ),
            TripRule::SlowCallRate {
                threshold_percent,
                slow_call_ms,
                minimum_calls,
                window,
            } => format!(
                "opens when {} % of {} take over {} (at least {minimum_calls} calls)",
                crate::float::plain(threshold_percent),
                window_words(window),
                duration(slow_call_ms)
            ),
        };
        out.push_str("; stays open ");
        out.push_str(&duration(c.open_duration_ms));
        if c.open_jitter > 0.0 {
            out.push_str(&format!(
                " ± {} %",
                crate::float::plain(c.open_jitter * 100.0)
            ));
        }
        if c.open_backoff_factor > 1.0 {
            out.push_str(&format!(
                ", × {} after each failed probe round, up to {}",
                crate::float::plain(c.open_backoff_factor),
                duration(c.max_open_duration_ms)
            ));
        }
        let probes = c.half_open_max_probes;
        let closes = c.half_open_success_threshold;
        out.push_str(&format!(
            "; then {probes} probe{} at a time, {closes} success{} to close, a probe unheard of \
             for {} freed; clients ask again every {}",
            plural(probes),
            if closes == 1 { "" } else { "es" },
            duration(c.probe_timeout_ms),
            duration(self.lease_ms)
        ));
        if let Some(t) = c.throttle {
            out.push_str(&format!(
                "; sheds load when calls exceed {} × successes over {} (from {} calls, at most \
                 {} %)",
                crate::float::plain(t.multiplier),
                duration(t.window_ms),
                t.minimum_requests,
                crate::float::plain(t.max_rejection_probability * 100.0)
            ));
        }
        out
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn window_words(w: Window) -> String {
    match w {
        Window::Calls(n) => format!("the last {n} calls"),
        Window::Millis(ms) => format!("the calls of the last {}", duration(ms)),
    }
}

/// `ms` in the largest unit it is a whole or simple number of: `250 ms`, `1.5 s`, `30 s`,
/// `2 min`, `1.5 h`.
pub(crate) fn duration(ms: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(3_600_000, "h"), (60_000, "min"), (1_000, "s")];
    for (size, unit) in UNITS {
        // A whole number of the unit, or one with a single decimal.
        if ms >= size && (ms * 10) % size == 0 {
            let tenths = ms * 10 / size;
            return if tenths % 10 == 0 {
                format!("{} {unit}", tenths / 10)
            } else {
                format!("{}.{} {unit}", tenths / 10, tenths % 10)
            };
        }
    }
    format!("{ms} ms")
}

/// Every shared breaker a host serves, by name (the Worker's `BREAKERS`).
pub type Breakers = alloc::collections::BTreeMap<String, SharedSpec>;

/// Parses and checks a `BREAKERS` JSON object: every name valid, every configuration valid (see
/// [`check_breakers`]). The error names the breaker, the field and the value.
pub fn parse_breakers(text: &str) -> Result<Breakers, String> {
    Ok(read_breakers(text)?.into_iter().collect())
}

/// [`parse_breakers`] as a list in the map's order (by name; of a name given twice, the last),
/// without a map (which the shared wasm module would carry only for this).
pub fn read_breakers(text: &str) -> Result<Vec<(String, SharedSpec)>, String> {
    let doc = json::parse(text).map_err(|e| format!("BREAKERS is not valid: {e}"))?;
    let Ok(entries) = doc.entries() else {
        return Err(String::from(
            "BREAKERS is not valid: expected an object mapping breaker names to their settings",
        ));
    };
    let mut list: Vec<(String, SharedSpec)> = Vec::new();
    for (name, entry) in entries {
        // Read entry by entry, so that a mistake names its breaker.
        let spec = <SharedSpec as json::Wire>::read(entry)
            .map_err(|e| format!("BREAKERS[{}] is not valid: {e}", quoted(name)))?;
        match list.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => {
                if let Some(slot) = list.get_mut(i) {
                    slot.1 = spec;
                }
            }
            Err(i) => list.insert(i, (String::from(&**name), spec)),
        }
    }
    for (name, spec) in &list {
        check_breaker(name, spec)?;
    }
    Ok(list)
}

/// [`parse_breakers`] for a document already read (the check command's TOML table, converted).
#[cfg(feature = "json")]
pub fn breakers_from_value(value: serde_json::Value) -> Result<Breakers, String> {
    parse_breakers(&alloc::string::ToString::to_string(&value))
}

/// `name` in double quotes, escaped as JSON.
fn quoted(name: &str) -> String {
    let mut w = json::Writer::default();
    w.str(name);
    w.finish()
}

/// Checks an already parsed `BREAKERS` map: names, configurations, leases, and what the shared
/// mode cannot honour (a slow-call rule: reports carry no durations).
pub fn check_breakers(map: &Breakers) -> Result<(), String> {
    map.iter()
        .try_for_each(|(name, spec)| check_breaker(name, spec))
}

fn check_breaker(name: &str, spec: &SharedSpec) -> Result<(), String> {
    // Worded here rather than by `InvalidName`'s Display, whose quoting (`{:?}`) would bring
    // the Unicode tables of `char::escape_debug` into the shared wasm module (11 KB).
    crate::name::validate_name(name).map_err(|e| {
        format!(
            "BREAKERS: invalid breaker name {}: {}",
            quoted(&e.name),
            e.reason
        )
    })?;
    spec.validate()
        .map_err(|e| format!("BREAKERS[{}]: {e}", quoted(name)))
}

/// FNV-1a, 64 bits: small, stable across builds and platforms.
struct Fnv(u64);

impl Fnv {
    const fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn u64(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn window(&mut self, w: Window) {
        match w {
            Window::Calls(n) => {
                self.u64(1);
                self.u64(n.into());
            }
            Window::Millis(ms) => {
                self.u64(2);
                self.u64(ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[cfg(feature = "json")]
    #[test]
    fn every_trip_rule_is_tagged_by_kind_and_integers_fill_decimal_fields() {
        let cases = [
            (
                r#"{"kind": "consecutive_failures", "threshold": 3}"#,
                TripRule::ConsecutiveFailures { threshold: 3 },
            ),
            (
                r#"{"kind": "failures_in_window", "threshold": 5, "window_ms": 60000}"#,
                TripRule::FailuresInWindow {
                    threshold: 5,
                    window_ms: 60_000,
                },
            ),
            (
                r#"{"kind": "failure_rate", "threshold_percent": 50, "minimum_calls": 20, "window": {"millis": 60000}}"#,
                TripRule::FailureRate {
                    threshold_percent: 50.0,
                    minimum_calls: 20,
                    window: Window::Millis(60_000),
                },
            ),
            (
                r#"{"kind": "slow_call_rate", "threshold_percent": 12.5, "slow_call_ms": 5000, "minimum_calls": 10, "window": {"calls": 100}}"#,
                TripRule::SlowCallRate {
                    threshold_percent: 12.5,
                    slow_call_ms: 5_000,
                    minimum_calls: 10,
                    window: Window::Calls(100),
                },
            ),
        ];
        for (text, rule) in cases {
            let parsed: TripRule = serde_json::from_str(text).unwrap();
            assert_eq!(parsed, rule, "{text}");
            assert_eq!(json::from_str::<TripRule>(text).unwrap(), rule, "{text}");
            let written = serde_json::to_string(&rule).unwrap();
            assert_eq!(json::to_string(&rule), written);
            assert_eq!(serde_json::from_str::<TripRule>(&written).unwrap(), rule);
            assert!(written.contains(r#""kind":"#), "{written}");
        }
    }

    #[cfg(feature = "json")]
    #[test]
    fn every_field_is_optional_and_unknown_fields_are_refused_at_every_level() {
        let spec: SharedSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, SharedSpec::default());
        assert_eq!(json::from_str::<SharedSpec>("{}").unwrap(), spec);
        let spec: SharedSpec = serde_json::from_str(
            r#"{"breaker": {"open_duration_ms": 5, "open_backoff_factor": 2}}"#,
        )
        .unwrap();
        let expected = BreakerConfig::new()
            .with_open_duration_ms(5)
            .with_open_backoff(2.0, BreakerConfig::new().max_open_duration_ms);
        assert_eq!(spec, SharedSpec::new(expected));
        for (bad, named) in [
            (r#"{"leese_ms": 1}"#, "leese_ms"),
            (r#"{"breaker": {"open_duration": 1}}"#, "open_duration"),
            (
                r#"{"breaker": {"trip": {"kind": "consecutive_failures", "threshold": 3, "window_ms": 1}}}"#,
                "window_ms",
            ),
            (
                r#"{"breaker": {"trip": {"kind": "failure_rate", "threshold_percent": 50, "minimum_calls": 1, "window": {"seconds": 1}}}}"#,
                "seconds",
            ),
            (
                r#"{"breaker": {"trip": {"kind": "sometimes"}}}"#,
                "sometimes",
            ),
            (
                r#"{"breaker": {"trip": {"consecutive_failures": {"threshold": 3}}}}"#,
                "kind",
            ),
        ] {
            let e = format!("{}", serde_json::from_str::<SharedSpec>(bad).unwrap_err());
            assert!(e.contains(named), "{bad}: {e}");
            let e = format!("{}", json::from_str::<SharedSpec>(bad).unwrap_err());
            assert!(e.contains(named), "{bad}: {e}");
        }
    }

    #[test]
    fn fingerprint_ignores_the_seed_and_sees_everything_else() {
        let base = SharedSpec::default();
        let seeded = SharedSpec::new(BreakerConfig::new().with_seed(42));
        assert_eq!(base.fingerprint(), seeded.fingerprint());
        let others = [
            base.with_lease_ms(2_000),
            SharedSpec::new(BreakerConfig::new().with_open_duration_ms(1)),
            SharedSpec::new(
                BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 6 }),
            ),
            SharedSpec::new(BreakerConfig::new().with_half_open_max_probes(2)),
        ];
        for o in others {
            assert_ne!(base.fingerprint(), o.fingerprint(), "{o:?}");
            assert!(o.fingerprint() < 1 << 52);
        }
    }

    #[test]
    fn refuses_what_the_shared_mode_cannot_honour() {
        let slow = SharedSpec::new(BreakerConfig::new().with_trip(TripRule::SlowCallRate {
            threshold_percent: 50.0,
            slow_call_ms: 1_000,
            minimum_calls: 10,
            window: Window::Calls(10),
        }));
        assert_eq!(slow.validate(), Err(SpecError::SlowCallRule));
        assert!(SpecError::SlowCallRule
            .to_string()
            .contains("slow_call_rate"));
        let long = SharedSpec::new(BreakerConfig::new().with_probe_timeout_ms(1 << 50));
        let e = long.validate().unwrap_err().to_string();
        assert!(e.contains("breaker.probe_timeout_ms") && e.contains("1125899906842624"));
        let lease = SharedSpec::default().with_lease_ms(0);
        assert_eq!(lease.validate(), Err(SpecError::LeaseMs(0)));
        assert!(SpecError::LeaseMs(0).to_string().contains("`lease_ms`: 0"));
        assert!(SharedSpec::default().validate().is_ok());
    }
}
