//! Metrics counted from the core's decisions, rendered for Prometheus and read back by a real
//! parser of the text format.

use std::collections::HashMap;

use breakwater::{Breaker, BreakerConfig, BreakerMetrics, Outcome, State, Timestamp, TripRule};
use prometheus_parse::{Scrape, Value};

fn scrape(metrics: &BreakerMetrics, name: &str) -> Scrape {
    let mut text = String::new();
    metrics.render_prometheus(name, &mut text).unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    Scrape::parse(lines).expect("the Prometheus text format")
}

fn value(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<_> = s
        .samples
        .iter()
        .filter(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}: {found:?}");
    match &found[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{metric}: {other:?}"),
    }
}

/// A scripted outage: 3 failures open the breaker, 4 calls are rejected, the first probe fails
/// (reopen), the second succeeds 20 s after the first opening; then healthy traffic.
#[test]
fn counts_are_exact_after_a_scripted_outage() {
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
        .with_open_duration_ms(10_000);
    let mut b = Breaker::new(config).unwrap();
    let mut m = BreakerMetrics::new();
    let call = |b: &mut Breaker, m: &mut BreakerMetrics, t: u64, outcome: Outcome| {
        let a = b.acquire(Timestamp(t));
        m.on_admission(&a);
        if let Ok(p) = a.result {
            m.on_outcome(outcome);
            if let Some(tr) = b.report(Timestamp(t), p, outcome) {
                m.on_transition(&tr);
            }
        } else {
            m.on_fallback();
        }
    };
    call(&mut b, &mut m, 0, Outcome::Success);
    call(&mut b, &mut m, 1, Outcome::Ignored);
    for t in 2..5 {
        call(&mut b, &mut m, t, Outcome::Failure);
    }
    assert_eq!(m.state(), State::Open);
    for t in 5..9 {
        call(&mut b, &mut m, t, Outcome::Success);
    }
    call(&mut b, &mut m, 10_004, Outcome::Failure); // probe fails: reopen
    call(&mut b, &mut m, 20_004, Outcome::Success); // probe succeeds: close
    for t in 0..5 {
        call(&mut b, &mut m, 20_010 + t, Outcome::Success);
    }
    m.on_retries(0, 0);
    m.on_retries(2, 3_000);
    m.on_retries(3, 7_000);

    assert_eq!(m.calls(), (7, 4, 1, 4));
    assert_eq!(m.opened(), 2);
    assert_eq!(m.fallbacks(), 4);

    let s = scrape(&m, "anthropic/claude");
    let b_ = ("breaker", "anthropic/claude");
    assert_eq!(
        value(&s, "breakwater_state", &[b_, ("state", "closed")]),
        1.0
    );
    assert_eq!(value(&s, "breakwater_state", &[b_, ("state", "open")]), 0.0);
    assert_eq!(value(&s, "breakwater_opened_total", &[b_]), 2.0);
    assert_eq!(
        value(&s, "breakwater_calls_total", &[b_, ("result", "success")]),
        7.0
    );
    assert_eq!(
        value(&s, "breakwater_calls_total", &[b_, ("result", "failure")]),
        4.0
    );
    assert_eq!(
        value(&s, "breakwater_calls_total", &[b_, ("result", "rejected")]),
        4.0
    );
    assert_eq!(value(&s, "breakwater_fallbacks_total", &[b_]), 4.0);

    // One incident, from the first opening (t = 4) to the close (t = 20 004): 20 s.
    let hist: HashMap<String, &prometheus_parse::Sample> = s
        .samples
        .iter()
        .filter(|x| x.metric.starts_with("breakwater_"))
        .map(|x| (x.metric.clone(), x))
        .collect();
    match &hist["breakwater_incident_seconds"].value {
        Value::Histogram(buckets) => {
            let le = |bound: f64| {
                buckets
                    .iter()
                    .find(|h| h.less_than == bound)
                    .map(|h| h.count)
                    .unwrap()
            };
            assert_eq!(le(10.0), 0.0);
            assert_eq!(le(30.0), 1.0);
            assert_eq!(le(f64::INFINITY), 1.0);
        }
        other => panic!("{other:?}"),
    }
    match &hist["breakwater_retries"].value {
        Value::Histogram(buckets) => {
            let at = |bound: f64| buckets.iter().find(|h| h.less_than == bound).unwrap().count;
            assert_eq!((at(0.0), at(2.0), at(3.0), at(8.0)), (1.0, 2.0, 3.0, 3.0));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn label_values_are_escaped() {
    let m = BreakerMetrics::new();
    let mut text = String::new();
    m.render_prometheus("we\"ird\\na\nme", &mut text).unwrap();
    assert!(
        text.contains(r#"breakwater_opened_total{breaker="we\"ird\\na\nme"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"breakwater_retries_count{breaker="we\"ird\\na\nme"} 0"#),
        "{text}"
    );
    // Every line is still one sample: the parser reads as many samples as a plain name gives.
    let plain = scrape(&m, "plain");
    let weird = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    assert_eq!(weird.samples.len(), plain.samples.len());
}

#[test]
fn several_breakers_share_one_declaration_per_family() {
    let mut a = BreakerMetrics::new();
    let b = BreakerMetrics::new();
    a.on_outcome(Outcome::Failure);
    let mut text = String::new();
    breakwater::render_prometheus([("anthropic", &a), ("openai", &b)], &mut text).unwrap();
    for family in [
        "breakwater_state",
        "breakwater_calls_total",
        "breakwater_incident_seconds",
        "breakwater_retries",
    ] {
        let declared = text
            .lines()
            .filter(|l| l.starts_with(&format!("# TYPE {family} ")))
            .count();
        assert_eq!(declared, 1, "{family}");
    }
    let s = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let anthropic = ("breaker", "anthropic");
    let openai = ("breaker", "openai");
    assert_eq!(
        value(
            &s,
            "breakwater_calls_total",
            &[anthropic, ("result", "failure")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "breakwater_calls_total",
            &[openai, ("result", "failure")]
        ),
        0.0
    );
}
