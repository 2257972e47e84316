//! The objects' `/metrics` in the Prometheus text format: what the Rust Worker's route and
//! `breakwater/cloudflare`'s route (through wasm) answer, written once.

use alloc::string::String;
use alloc::vec::Vec;

use super::protocol::{Lease, ObjectCounters, StateView, INCIDENT_BOUNDS_S};
use crate::breaker::{State, Stats};
use crate::metrics::{render_series, Buckets, Families, Series};

/// The objects' state in the Prometheus text format, written by [`crate::render_series`] with the
/// families an object has ([`Families::OBJECT`], counts since each object's record began):
/// `breakwater_state`, `breakwater_opened_total`, `breakwater_calls_total`,
/// `breakwater_incident_seconds`, plus `breakwater_probes_granted_total`.
/// `breakwater_fallbacks_total`, `breakwater_retries` and `breakwater_retry_delay_seconds` are
/// not here: fallbacks and retries happen in the callers (the `SharedCircuitBreaker` client,
/// `withRetry`), which the object never sees; expose them from the callers
/// (`breakwater/prometheus`, or `BreakerMetrics` in Rust).
pub fn render_views(views: &[StateView]) -> String {
    render(
        views
            .iter()
            .map(|v| (v.name.as_str(), v.lease.state, &v.stats, &v.counters)),
    )
}

/// [`render_views`] for views as JSON (a `/state` answer per object, in an array), reading only
/// what the series need; `None` when they are unreadable.
pub fn render_views_json(views: &str) -> Option<String> {
    struct Seen {
        name: String,
        state: State,
        stats: Stats,
        counters: ObjectCounters,
    }
    let parsed = super::json::parse(views).ok()?;
    let mut seen = Vec::new();
    for v in parsed.items().ok()? {
        let f = v
            .fields(&["name", "lease", "stats", "counters"], false)
            .ok()?;
        let lease: Lease = f.req(1)?;
        seen.push(Seen {
            name: f.req(0)?,
            state: lease.state,
            stats: f.req(2)?,
            counters: f.req(3)?,
        });
    }
    Some(render(
        seen.iter()
            .map(|v| (v.name.as_str(), v.state, &v.stats, &v.counters)),
    ))
}

fn render<'a>(
    views: impl Iterator<Item = (&'a str, State, &'a Stats, &'a ObjectCounters)> + Clone,
) -> String {
    let bounds = INCIDENT_BOUNDS_S.map(|b| b as f64);
    let series = views.map(|(name, state, stats, counters)| {
        let incidents = &counters.incidents;
        let (counts, above) = incidents.split_at(bounds.len().min(incidents.len()));
        let buckets = Buckets {
            bounds: &bounds,
            counts,
            overflow: above.iter().fold(0u64, |a, n| a.saturating_add(*n)),
            sum: counters.incident_ms as f64 / 1_000.0,
        };
        let mut s = Series::from_stats(state, stats, buckets);
        s.probes_granted = Some(counters.probes_granted);
        (name, s)
    });
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = render_series(Families::OBJECT, series, &mut out);
    out
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::render_views as render_prometheus;
    use super::StateView;
    use alloc::string::ToString;

    fn view(name: &str, state: &str, opened: u64, incidents: [u64; 11], ms: u64) -> StateView {
        let document = serde_json::json!({
            "name": name,
            "lease": {"state": state, "mode": "automatic", "generation": 3, "lease_ms": 1000,
                      "retry_after_ms": 0, "now": 5},
            "opened_at": null, "open_until": null, "probes_in_flight": 0,
            "stats": {"admitted": 10, "rejected": 4, "successes": 7, "failures": 3, "ignored": 2,
                      "opened": opened},
            "counters": {"incidents": incidents, "incident_ms": ms,
                         "probes_granted": if opened > 0 { 5 } else { 0 }},
            "restore_error": null
        });
        crate::shared::json::from_str(&document.to_string()).unwrap()
    }

    /// The text the Worker wrote with its own writer before it rendered through
    /// `crate::metrics`, byte for byte (one incident of 1–5 s and one above 3600 s).
    #[test]
    fn renders_the_object_series_as_before() {
        let views = [
            view(
                "anthropic",
                "OPEN",
                2,
                [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                3_700_250,
            ),
            view("openai:gpt-4.1/chat", "HALF_OPEN", 0, [0; 11], 0),
        ];
        assert_eq!(render_prometheus(&views), EXPECTED);
        assert_eq!(render_prometheus(&[]), EXPECTED_EMPTY);
    }

    const EXPECTED: &str = "\
# TYPE breakwater_state gauge
breakwater_state{breaker=\"anthropic\",state=\"closed\"} 0
breakwater_state{breaker=\"anthropic\",state=\"open\"} 1
breakwater_state{breaker=\"anthropic\",state=\"half_open\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"closed\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"open\"} 0
breakwater_state{breaker=\"openai:gpt-4.1/chat\",state=\"half_open\"} 1
# TYPE breakwater_opened_total counter
breakwater_opened_total{breaker=\"anthropic\"} 2
breakwater_opened_total{breaker=\"openai:gpt-4.1/chat\"} 0
# TYPE breakwater_calls_total counter
breakwater_calls_total{breaker=\"anthropic\",result=\"success\"} 7
breakwater_calls_total{breaker=\"anthropic\",result=\"failure\"} 3
breakwater_calls_total{breaker=\"anthropic\",result=\"ignored\"} 2
breakwater_calls_total{breaker=\"anthropic\",result=\"rejected\"} 4
breakwater_calls_total{breaker=\"anthropic\",result=\"throttled\"} 0
breakwater_calls_total{breaker=\"anthropic\",result=\"full\"} 0
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"success\"} 7
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"failure\"} 3
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"ignored\"} 2
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"rejected\"} 4
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"throttled\"} 0
breakwater_calls_total{breaker=\"openai:gpt-4.1/chat\",result=\"full\"} 0
# TYPE breakwater_incident_seconds histogram
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"1\"} 0
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"5\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"10\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"30\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"60\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"120\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"300\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"600\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"1800\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"3600\"} 1
breakwater_incident_seconds_bucket{breaker=\"anthropic\",le=\"+Inf\"} 2
breakwater_incident_seconds_sum{breaker=\"anthropic\"} 3700.25
breakwater_incident_seconds_count{breaker=\"anthropic\"} 2
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"1\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"5\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"10\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"30\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"60\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"120\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"300\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"600\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"1800\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"3600\"} 0
breakwater_incident_seconds_bucket{breaker=\"openai:gpt-4.1/chat\",le=\"+Inf\"} 0
breakwater_incident_seconds_sum{breaker=\"openai:gpt-4.1/chat\"} 0
breakwater_incident_seconds_count{breaker=\"openai:gpt-4.1/chat\"} 0
# TYPE breakwater_probes_granted_total counter
breakwater_probes_granted_total{breaker=\"anthropic\"} 5
breakwater_probes_granted_total{breaker=\"openai:gpt-4.1/chat\"} 0
";

    const EXPECTED_EMPTY: &str = "\
# TYPE breakwater_state gauge
# TYPE breakwater_opened_total counter
# TYPE breakwater_calls_total counter
# TYPE breakwater_incident_seconds histogram
# TYPE breakwater_probes_granted_total counter
";
}
