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
//! | `breakwater_calls_total{result}` | counter | `success`, `failure`, `ignored`, `rejected` |
//! | `breakwater_fallbacks_total` | counter | calls answered by a fallback (alert when above ~5 % of calls) |
//! | `breakwater_retries` | histogram | retries per guarded call (a p50 above 0: the provider is degraded) |
//! | `breakwater_retry_delay_seconds` | histogram | waiting that retries added to a call |

use core::fmt::{self, Write};

use crate::breaker::{Admission, Outcome, State, Transition};
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

    fn render(&self, out: &mut impl Write, name: &str, breaker: &EscapedLabel<'_>) -> fmt::Result {
        for (bound, count) in self.cumulative() {
            writeln!(
                out,
                "{name}_bucket{{breaker=\"{breaker}\",le=\"{bound}\"}} {count}"
            )?;
        }
        writeln!(
            out,
            "{name}_bucket{{breaker=\"{breaker}\",le=\"+Inf\"}} {}",
            self.count()
        )?;
        writeln!(out, "{name}_sum{{breaker=\"{breaker}\"}} {}", self.sum)?;
        writeln!(
            out,
            "{name}_count{{breaker=\"{breaker}\"}} {}",
            self.count()
        )
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
            fallbacks: 0,
            retries: Histogram::new([0.0, 1.0, 2.0, 3.0, 5.0, 8.0]),
            retry_delay: Histogram::new([0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0]),
        }
    }

    /// Counts what an [`Admission`] decided (and the transition it carried).
    #[inline]
    pub fn on_admission(&mut self, admission: &Admission) {
        if admission.result.is_err() {
            self.rejected = self.rejected.saturating_add(1);
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

    /// `(successes, failures, ignored, rejected)`.
    pub fn calls(&self) -> (u64, u64, u64, u64) {
        (self.successes, self.failures, self.ignored, self.rejected)
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
    let all = breakers.into_iter();
    writeln!(out, "# TYPE breakwater_state gauge")?;
    for (name, m) in all.clone() {
        let name = EscapedLabel(name);
        for (label, s) in [
            ("closed", State::Closed),
            ("open", State::Open),
            ("half_open", State::HalfOpen),
        ] {
            writeln!(
                out,
                "breakwater_state{{breaker=\"{name}\",state=\"{label}\"}} {}",
                (m.state == s) as u8
            )?;
        }
    }
    writeln!(out, "# TYPE breakwater_opened_total counter")?;
    for (name, m) in all.clone() {
        let name = EscapedLabel(name);
        writeln!(
            out,
            "breakwater_opened_total{{breaker=\"{name}\"}} {}",
            m.opened
        )?;
    }
    writeln!(out, "# TYPE breakwater_calls_total counter")?;
    for (name, m) in all.clone() {
        let name = EscapedLabel(name);
        for (label, n) in [
            ("success", m.successes),
            ("failure", m.failures),
            ("ignored", m.ignored),
            ("rejected", m.rejected),
        ] {
            writeln!(
                out,
                "breakwater_calls_total{{breaker=\"{name}\",result=\"{label}\"}} {n}"
            )?;
        }
    }
    writeln!(out, "# TYPE breakwater_fallbacks_total counter")?;
    for (name, m) in all.clone() {
        let name = EscapedLabel(name);
        writeln!(
            out,
            "breakwater_fallbacks_total{{breaker=\"{name}\"}} {}",
            m.fallbacks
        )?;
    }
    writeln!(out, "# TYPE breakwater_incident_seconds histogram")?;
    for (name, m) in all.clone() {
        m.incidents
            .render(out, "breakwater_incident_seconds", &EscapedLabel(name))?;
    }
    writeln!(out, "# TYPE breakwater_retries histogram")?;
    for (name, m) in all.clone() {
        m.retries
            .render(out, "breakwater_retries", &EscapedLabel(name))?;
    }
    writeln!(out, "# TYPE breakwater_retry_delay_seconds histogram")?;
    for (name, m) in all {
        m.retry_delay
            .render(out, "breakwater_retry_delay_seconds", &EscapedLabel(name))?;
    }
    Ok(())
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
