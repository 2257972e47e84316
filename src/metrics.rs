//! What to watch, per breaker, counted from the decisions the core already returns.
//!
//! The state machine needs no extra work on its hot path to be observed: a host feeds this
//! collector the [`Admission`]s, [`Outcome`]s and [`Transition`]s it already handles, plus the
//! two facts only the host knows (a fallback was served; a call needed so many retries), and
//! renders them in the Prometheus text format. Counting is a handful of integer additions and
//! never allocates; rendering writes into any [`core::fmt::Write`].
//!
//! The series, all labelled `breaker="<name>"`:
//!
//! | series | type | meaning |
//! | --- | --- | --- |
//! | `breakwater_state{state}` | gauge | 1 for the current state (`closed`, `open`, `half_open`) |
//! | `breakwater_opened_total` | counter | times the breaker opened |
//! | `breakwater_incident_seconds` | histogram | from opening to closing again: the upstream's incident as the breaker saw it |
//! | `breakwater_calls_total{result}` | counter | `success`, `failure`, `ignored`, `rejected` (by the state: open, half-open full, isolated), `throttled` (shed by the adaptive throttle), `full` (refused by a concurrency limit) |
//! | `breakwater_fallbacks_total` | counter | calls answered by a fallback (alert when above ~5 % of calls) |
//! | `breakwater_retries` | histogram | retries per guarded call (a p50 above 0: the provider is degraded) |
//! | `breakwater_retry_delay_seconds` | histogram | waiting that retries added to a call |
//! | `breakwater_probes_granted_total` | counter | half-open probe permits a shared breaker's object granted (the Worker's `/metrics`) |
//!
//! [`render_prometheus`] writes what [`BreakerMetrics`] counted. [`render_series`] writes the
//! same series from plain numbers ([`Series`]), for a host that counts elsewhere: the Worker's
//! `/metrics` renders its objects' state, `Stats` and counters through it, with the families
//! an object has ([`Families::OBJECT`]).

use core::fmt::{self, Write};

use crate::float::Plain;

use crate::breaker::{Admission, Outcome, State, Stats, Transition};
use crate::clock::Timestamp;

/// A fixed-bucket histogram (cumulative buckets are computed when rendering).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Histogram<const N: usize> {
    bounds: [f64; N],
    counts: [u64; N],
    overflow: u64,
    sum: f64,
}

impl<const N: usize> Histogram<N> {
    /// An empty histogram with these upper bounds (ascending).
    pub const fn new(bounds: [f64; N]) -> Self {
        Histogram {
            bounds,
            counts: [0; N],
            overflow: 0,
            sum: 0.0,
        }
    }

    /// Records one value.
    pub fn observe(&mut self, value: f64) {
        let value = if value.is_finite() { value } else { 0.0 };
        self.sum += value;
        match self.bounds.iter().position(|&b| value <= b) {
            Some(i) => {
                if let Some(c) = self.counts.get_mut(i) {
                    *c = c.saturating_add(1);
                }
            }
            None => self.overflow = self.overflow.saturating_add(1),
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.counts
            .iter()
            .fold(self.overflow, |acc, &c| acc.saturating_add(c))
    }

    /// Sum of the values recorded.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// `(upper bound, values ≤ bound)` pairs, cumulative, without `+Inf`.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut acc = 0u64;
        self.bounds
            .iter()
            .zip(self.counts.iter())
            .map(move |(&b, &c)| {
                acc = acc.saturating_add(c);
                (b, acc)
            })
    }

    /// Its data as [`Buckets`], for [`Series`].
    pub fn buckets(&self) -> Buckets<'_> {
        Buckets {
            bounds: &self.bounds,
            counts: &self.counts,
            overflow: self.overflow,
            sum: self.sum,
        }
    }
}

/// A histogram's data as plain numbers: upper bounds (ascending), the values counted in each
/// bucket (not cumulative), those above the last bound, and their sum. Bounds and counts are
/// paired in order; the cumulative `_bucket` series and `_count` are computed when rendering.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Buckets<'a> {
    /// Upper bounds, ascending.
    pub bounds: &'a [f64],
    /// Values in each bucket (at most the bound, above the previous one).
    pub counts: &'a [u64],
    /// Values above the last bound.
    pub overflow: u64,
    /// Sum of every value.
    pub sum: f64,
}

impl Buckets<'_> {
    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.counts
            .iter()
            .fold(self.overflow, |acc, &c| acc.saturating_add(c))
    }

    fn render(&self, out: &mut impl Write, name: &str, breaker: &EscapedLabel<'_>) -> fmt::Result {
        let mut acc = 0u64;
        for (bound, count) in self.bounds.iter().zip(self.counts.iter()) {
            acc = acc.saturating_add(*count);
            writeln!(
                out,
                "{name}_bucket{{breaker=\"{breaker}\",le=\"{}\"}} {acc}",
                Plain(*bound)
            )?;
        }
        let count = self.count();
        writeln!(
            out,
            "{name}_bucket{{breaker=\"{breaker}\",le=\"+Inf\"}} {count}"
        )?;
        writeln!(
            out,
            "{name}_sum{{breaker=\"{breaker}\"}} {}",
            Plain(self.sum)
        )?;
        writeln!(out, "{name}_count{{breaker=\"{breaker}\"}} {count}")
    }
}

/// The metrics of one breaker.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerMetrics {
    state: State,
    opened: u64,
    incident_started: Option<Timestamp>,
    /// Incident lengths, seconds.
    pub incidents: Histogram<10>,
    successes: u64,
    failures: u64,
    ignored: u64,
    rejected: u64,
    throttled: u64,
    fallbacks: u64,
    /// Retries per guarded call.
    pub retries: Histogram<6>,
    /// Delay added by retries, seconds.
    pub retry_delay: Histogram<9>,
}

impl Default for BreakerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl BreakerMetrics {
    /// Nothing counted yet; the breaker CLOSED.
    pub const fn new() -> Self {
        BreakerMetrics {
            state: State::Closed,
            opened: 0,
            incident_started: None,
            incidents: Histogram::new([
                1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1_800.0, 3_600.0,
            ]),
            successes: 0,
            failures: 0,
            ignored: 0,
            rejected: 0,
            throttled: 0,
            fallbacks: 0,
            retries: Histogram::new([0.0, 1.0, 2.0, 3.0, 5.0, 8.0]),
            retry_delay: Histogram::new([0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0]),
        }
    }

    /// Counts what an [`Admission`] decided (and the transition it carried).
    #[inline]
    pub fn on_admission(&mut self, admission: &Admission) {
        if let Err(r) = admission.result {
            let n = if r.reason == crate::breaker::RejectReason::Throttled {
                &mut self.throttled
            } else {
                &mut self.rejected
            };
            *n = n.saturating_add(1);
        }
        if let Some(t) = admission.transition {
            self.on_transition(&t);
        }
    }

    /// Counts a reported outcome.
    #[inline]
    pub fn on_outcome(&mut self, outcome: Outcome) {
        let c = match outcome {
            Outcome::Success => &mut self.successes,
            Outcome::Failure => &mut self.failures,
            Outcome::Ignored => &mut self.ignored,
        };
        *c = c.saturating_add(1);
    }

    /// Follows a state change: counts openings and measures incidents (first opening to the
    /// next close, however many half-open rounds failed in between).
    pub fn on_transition(&mut self, t: &Transition) {
        self.state = t.to;
        match t.to {
            State::Open => {
                self.opened = self.opened.saturating_add(1);
                if self.incident_started.is_none() {
                    self.incident_started = Some(t.at);
                }
            }
            State::Closed => {
                if let Some(start) = self.incident_started.take() {
                    self.incidents
                        .observe(t.at.saturating_since(start) as f64 / 1_000.0);
                }
            }
            State::HalfOpen => {}
        }
    }

    /// A call was answered by the host's fallback.
    #[inline]
    pub fn on_fallback(&mut self) {
        self.fallbacks = self.fallbacks.saturating_add(1);
    }

    /// A guarded call finished after `retries` retries that waited `delay_ms` in all.
    #[inline]
    pub fn on_retries(&mut self, retries: u32, delay_ms: u64) {
        self.retries.observe(retries as f64);
        self.retry_delay.observe(delay_ms as f64 / 1_000.0);
    }

    /// The state as last seen through a transition.
    pub fn state(&self) -> State {
        self.state
    }

    /// Times opened.
    pub fn opened(&self) -> u64 {
        self.opened
    }

    /// `(successes, failures, ignored, rejected)`; `rejected` leaves out the calls the adaptive
    /// throttle shed ([`throttled`](Self::throttled)).
    pub fn calls(&self) -> (u64, u64, u64, u64) {
        (self.successes, self.failures, self.ignored, self.rejected)
    }

    /// Calls the adaptive throttle shed.
    pub fn throttled(&self) -> u64 {
        self.throttled
    }

    /// Fallbacks served.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// Renders every series of this breaker in the Prometheus text exposition format (version
    /// 0.0.4). To expose several breakers, use [`render_prometheus`] so that each metric family
    /// is declared once.
    pub fn render_prometheus(&self, breaker: &str, out: &mut impl Write) -> fmt::Result {
        render_prometheus([(breaker, self)], out)
    }
}

/// Renders the series of several breakers in the Prometheus text exposition format (version
/// 0.0.4), one `# TYPE` line per metric family. Breaker names go into the `breaker` label; names
/// from [`validate_name`](crate::validate_name) need no escaping, and any other name is escaped.
pub fn render_prometheus<'a, I>(breakers: I, out: &mut impl Write) -> fmt::Result
where
    I: IntoIterator<Item = (&'a str, &'a BreakerMetrics)>,
    I::IntoIter: Clone,
{
    let all = breakers.into_iter().map(|(name, m)| (name, m.series()));
    render_series(Families::HOST, all, out)
}

impl BreakerMetrics {
    /// These counts as [`Series`], every family included.
    pub fn series(&self) -> Series<'_> {
        Series {
            state: self.state,
            opened: self.opened,
            successes: self.successes,
            failures: self.failures,
            ignored: self.ignored,
            rejected: self.rejected,
            throttled: self.throttled,
            full: 0,
            fallbacks: Some(self.fallbacks),
            incidents: self.incidents.buckets(),
            retries: Some(self.retries.buckets()),
            retry_delay: Some(self.retry_delay.buckets()),
            probes_granted: None,
        }
    }
}

/// One breaker's series as plain numbers, whoever counted them: [`BreakerMetrics`] in a Rust
/// host, or a shared breaker's Durable Object (its `Stats`, state and counters). Rendered by
/// [`render_series`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Series<'a> {
    /// `breakwater_state`: the current state.
    pub state: State,
    /// `breakwater_opened_total`.
    pub opened: u64,
    /// `breakwater_calls_total{result="success"}`.
    pub successes: u64,
    /// `breakwater_calls_total{result="failure"}`.
    pub failures: u64,
    /// `breakwater_calls_total{result="ignored"}`.
    pub ignored: u64,
    /// `breakwater_calls_total{result="rejected"}`: refused by the state.
    pub rejected: u64,
    /// `breakwater_calls_total{result="throttled"}`: shed by the adaptive throttle.
    pub throttled: u64,
    /// `breakwater_calls_total{result="full"}`: refused by a concurrency limit
    /// ([`Bulkhead`](crate::bulkhead::Bulkhead)), which the host counts.
    pub full: u64,
    /// `breakwater_fallbacks_total`, where the renderer's host serves fallbacks.
    pub fallbacks: Option<u64>,
    /// `breakwater_incident_seconds`.
    pub incidents: Buckets<'a>,
    /// `breakwater_retries`, where the host retries.
    pub retries: Option<Buckets<'a>>,
    /// `breakwater_retry_delay_seconds`, where the host retries.
    pub retry_delay: Option<Buckets<'a>>,
    /// `breakwater_probes_granted_total`, where the breaker grants probe permits to others (a
    /// shared breaker's object).
    pub probes_granted: Option<u64>,
}

impl<'a> Series<'a> {
    /// The series of a breaker in `state` with these running totals and incidents; the optional
    /// families are left out (set them on the result).
    pub fn from_stats(state: State, stats: &Stats, incidents: Buckets<'a>) -> Self {
        Series {
            state,
            opened: stats.opened,
            successes: stats.successes,
            failures: stats.failures,
            ignored: stats.ignored,
            rejected: stats.rejected.saturating_sub(stats.throttled),
            throttled: stats.throttled,
            full: 0,
            fallbacks: None,
            incidents,
            retries: None,
            retry_delay: None,
            probes_granted: None,
        }
    }
}

/// Which optional metric families an exposition declares. `breakwater_state`,
/// `breakwater_opened_total`, `breakwater_calls_total` and `breakwater_incident_seconds` are
/// always declared; a breaker whose [`Series`] lacks a declared optional family has no sample
/// in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Families {
    /// `breakwater_fallbacks_total`.
    pub fallbacks: bool,
    /// `breakwater_retries` and `breakwater_retry_delay_seconds`.
    pub retries: bool,
    /// `breakwater_probes_granted_total`.
    pub probes_granted: bool,
}

impl Families {
    /// What a host that runs the calls counts ([`BreakerMetrics`]): fallbacks and retries.
    pub const HOST: Families = Families {
        fallbacks: true,
        retries: true,
        probes_granted: false,
    };
    /// What a shared breaker's object counts: probe permits granted. Fallbacks and retries
    /// happen in its clients, which the object never sees.
    pub const OBJECT: Families = Families {
        fallbacks: false,
        retries: false,
        probes_granted: true,
    };
}

/// Renders the series of several breakers in the Prometheus text exposition format (version
/// 0.0.4), one `# TYPE` line per declared family, in this order: `breakwater_state`,
/// `breakwater_opened_total`, `breakwater_calls_total`, `breakwater_fallbacks_total`,
/// `breakwater_incident_seconds`, `breakwater_retries`, `breakwater_retry_delay_seconds`,
/// `breakwater_probes_granted_total`. Names are escaped as in [`render_prometheus`].
pub fn render_series<'a, I>(families: Families, breakers: I, out: &mut impl Write) -> fmt::Result
where
    I: IntoIterator<Item = (&'a str, Series<'a>)>,
    I::IntoIter: Clone,
{
    let mut x = Exposition {
        breakers: breakers.into_iter(),
        out,
    };
    x.states()?;
    x.counter("breakwater_opened_total", |m| Some(m.opened))?;
    x.calls()?;
    if families.fallbacks {
        x.counter("breakwater_fallbacks_total", |m| m.fallbacks)?;
    }
    x.histogram("breakwater_incident_seconds", |m| Some(m.incidents))?;
    if families.retries {
        x.histogram("breakwater_retries", |m| m.retries)?;
        x.histogram("breakwater_retry_delay_seconds", |m| m.retry_delay)?;
    }
    if families.probes_granted {
        x.counter("breakwater_probes_granted_total", |m| m.probes_granted)?;
    }
    Ok(())
}

/// [`render_series`] at work: each method writes one family, its `# TYPE` line and then its
/// samples, breaker by breaker.
struct Exposition<'o, I, W> {
    breakers: I,
    out: &'o mut W,
}

impl<'a, I, W> Exposition<'_, I, W>
where
    I: Iterator<Item = (&'a str, Series<'a>)> + Clone,
    W: Write,
{
    /// `breakwater_state`: one sample per state, 1 for the breaker's and 0 for the others.
    fn states(&mut self) -> fmt::Result {
        writeln!(self.out, "# TYPE breakwater_state gauge")?;
        for (name, m) in self.breakers.clone() {
            let name = EscapedLabel(name);
            for (label, s) in [
                ("closed", State::Closed),
                ("open", State::Open),
                ("half_open", State::HalfOpen),
            ] {
                writeln!(
                    self.out,
                    "breakwater_state{{breaker=\"{name}\",state=\"{label}\"}} {}",
                    (m.state == s) as u8
                )?;
            }
        }
        Ok(())
    }

    /// `breakwater_calls_total`: one sample per result.
    fn calls(&mut self) -> fmt::Result {
        writeln!(self.out, "# TYPE breakwater_calls_total counter")?;
        for (name, m) in self.breakers.clone() {
            let name = EscapedLabel(name);
            for (label, n) in [
                ("success", m.successes),
                ("failure", m.failures),
                ("ignored", m.ignored),
                ("rejected", m.rejected),
                ("throttled", m.throttled),
                ("full", m.full),
            ] {
                writeln!(
                    self.out,
                    "breakwater_calls_total{{breaker=\"{name}\",result=\"{label}\"}} {n}"
                )?;
            }
        }
        Ok(())
    }

    /// A counter of one sample per breaker; a breaker whose `count` is `None` has none.
    fn counter(&mut self, family: &str, count: impl Fn(&Series<'a>) -> Option<u64>) -> fmt::Result {
        writeln!(self.out, "# TYPE {family} counter")?;
        for (name, m) in self.breakers.clone() {
            if let Some(n) = count(&m) {
                let name = EscapedLabel(name);
                writeln!(self.out, "{family}{{breaker=\"{name}\"}} {n}")?;
            }
        }
        Ok(())
    }

    /// A histogram; a breaker whose `histogram` is `None` has no samples in it.
    fn histogram(
        &mut self,
        family: &str,
        histogram: impl Fn(&Series<'a>) -> Option<Buckets<'a>>,
    ) -> fmt::Result {
        writeln!(self.out, "# TYPE {family} histogram")?;
        for (name, m) in self.breakers.clone() {
            if let Some(h) = histogram(&m) {
                h.render(self.out, family, &EscapedLabel(name))?;
            }
        }
        Ok(())
    }
}

/// Writes a label value with `\`, `"` and newlines escaped.
struct EscapedLabel<'a>(&'a str);

impl fmt::Display for EscapedLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec::Vec;

    fn families(text: &str) -> Vec<&str> {
        text.lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .collect()
    }

    #[test]
    fn object_families_are_state_calls_incidents_and_probes() {
        let stats = Stats {
            successes: 7,
            failures: 3,
            ignored: 2,
            rejected: 6,
            throttled: 2,
            opened: 1,
            ..Stats::default()
        };
        let bounds = [1.0, 5.0];
        let counts = [0, 2];
        let mut series = Series::from_stats(
            State::HalfOpen,
            &stats,
            Buckets {
                bounds: &bounds,
                counts: &counts,
                overflow: 1,
                sum: 12.5,
            },
        );
        series.probes_granted = Some(9);
        let mut text = String::new();
        render_series(Families::OBJECT, [("a/b", series)], &mut text).unwrap();
        assert_eq!(
            families(&text),
            [
                "breakwater_state gauge",
                "breakwater_opened_total counter",
                "breakwater_calls_total counter",
                "breakwater_incident_seconds histogram",
                "breakwater_probes_granted_total counter",
            ]
        );
        for line in [
            "breakwater_state{breaker=\"a/b\",state=\"half_open\"} 1",
            "breakwater_opened_total{breaker=\"a/b\"} 1",
            "breakwater_calls_total{breaker=\"a/b\",result=\"rejected\"} 4",
            "breakwater_calls_total{breaker=\"a/b\",result=\"throttled\"} 2",
            "breakwater_incident_seconds_bucket{breaker=\"a/b\",le=\"5\"} 2",
            "breakwater_incident_seconds_bucket{breaker=\"a/b\",le=\"+Inf\"} 3",
            "breakwater_incident_seconds_sum{breaker=\"a/b\"} 12.5",
            "breakwater_incident_seconds_count{breaker=\"a/b\"} 3",
            "breakwater_probes_granted_total{breaker=\"a/b\"} 9",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn a_declared_family_a_breaker_lacks_has_no_sample() {
        let host = BreakerMetrics::new();
        let stats = Stats::default();
        let none = Series::from_stats(State::Closed, &stats, host.incidents.buckets());
        let mut text = String::new();
        render_series(
            Families::HOST,
            [("host", host.series()), ("object", none)],
            &mut text,
        )
        .unwrap();
        assert_eq!(families(&text).len(), 7);
        assert!(text.contains("breakwater_fallbacks_total{breaker=\"host\"} 0"));
        assert!(!text.contains("breakwater_fallbacks_total{breaker=\"object\"}"));
        assert!(!text.contains("breakwater_retries_count{breaker=\"object\"}"));
        assert!(text.contains("breakwater_incident_seconds_count{breaker=\"object\"} 0"));
    }
}
