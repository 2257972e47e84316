//! The outage simulator: the seeds' numbers, determinism, errors that name the field, the SVG.
#![cfg(feature = "sim")]

use breakwater::breaker::{BreakerConfig, TripRule, Window};
use breakwater::sim::{self, Format, Report, Scenario, Strategy, StrategyReport};
use breakwater::{Jitter, RetryPolicy};

fn report(name: &str) -> Report {
    let scenario = sim::builtin(name).expect("built-in scenario parses");
    sim::run(&scenario).expect("built-in scenario runs")
}

/// Seed 000's report, computed once for the tests that only read it.
fn seed000() -> &'static Report {
    static REPORT: std::sync::OnceLock<Report> = std::sync::OnceLock::new();
    REPORT.get_or_init(|| report("seed000"))
}

fn get(report: &Report, s: Strategy) -> &StrategyReport {
    report.get(s).expect("strategy was run")
}

#[test]
fn seed003_breaker_makes_11_real_calls_where_retries_alone_make_21() {
    let r = &report("seed003");
    assert_eq!(r.requests, 7);
    assert_eq!(get(r, Strategy::RetryOnly).upstream_calls, 21);
    assert_eq!(get(r, Strategy::NoProtection).upstream_calls, 7);
    for s in [Strategy::BreakerPerInstance, Strategy::SharedBreaker] {
        let b = get(r, s);
        assert_eq!(b.upstream_calls, 11, "{s}");
        // Runs 4 and 5 are refused without touching the tool; runs 6 and 7 succeed.
        assert_eq!(b.failed_fast, 2, "{s}");
        assert_eq!(b.succeeded, 2, "{s}");
        assert_eq!(b.failed, 3, "{s}");
        assert_eq!(b.breaker_opened, 1, "{s}");
    }
    // Without the breaker the tool is hammered every run and never comes back in time.
    assert_eq!(get(r, Strategy::RetryOnly).succeeded, 0);
}

#[test]
fn seed000_breaker_cuts_upstream_calls_during_the_outage() {
    let r = seed000();
    let none = get(r, Strategy::NoProtection);
    let retry = get(r, Strategy::RetryOnly);
    assert!(retry.upstream_calls_during_outage > none.upstream_calls_during_outage);
    assert!(retry.peak_upstream_calls_per_s > none.peak_upstream_calls_per_s);
    for s in [Strategy::BreakerPerInstance, Strategy::SharedBreaker] {
        let b = get(r, s);
        assert!(
            b.upstream_calls_during_outage < none.upstream_calls_during_outage,
            "{s}: {} vs no protection {}",
            b.upstream_calls_during_outage,
            none.upstream_calls_during_outage
        );
        assert!(b.upstream_calls_during_outage < retry.upstream_calls_during_outage);
        assert!(b.upstream_calls < retry.upstream_calls);
        assert!(b.failed_fast > 0 && b.rejected_attempts >= b.failed_fast);
        assert!(b.breaker_opened > 0);
    }
}

#[test]
fn seed000_users_stop_being_affected_sooner_with_a_breaker() {
    let r = seed000();
    let after = |s| {
        get(r, s)
            .affected_after_recovery_ms
            .expect("the upstream recovers at a fixed time in seed 000")
    };
    let none = after(Strategy::NoProtection);
    let retry = after(Strategy::RetryOnly);
    for s in [Strategy::BreakerPerInstance, Strategy::SharedBreaker] {
        let b = get(r, s);
        assert!(after(s) < none, "{s}: {} vs no protection {none}", after(s));
        assert!(after(s) < retry, "{s}: {} vs retry only {retry}", after(s));
        assert!(!b.still_affected_at_end, "{s}");
        assert!(b.succeeded > get(r, Strategy::NoProtection).succeeded);
        assert!(b.latency_p50_ms <= get(r, Strategy::RetryOnly).latency_p50_ms);
    }
    // Retries without a breaker turn the outage into a much longer incident than no protection.
    assert!(retry > none);
    let incident = get(r, Strategy::RetryOnly).incident_ms().unwrap_or(0);
    let outage = get(r, Strategy::RetryOnly)
        .recovered_at_ms
        .zip(get(r, Strategy::RetryOnly).outage_start_ms)
        .map(|(end, start)| end - start)
        .unwrap_or(0);
    assert!(
        incident > 5 * outage,
        "incident {incident} vs outage {outage}"
    );
}

#[test]
fn same_seed_gives_the_same_report_and_another_seed_another() {
    let scenario = sim::builtin("seed000").unwrap();
    let a = seed000().clone();
    let b = sim::run(&scenario).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(sim::render_svg(&a).unwrap(), sim::render_svg(&b).unwrap());

    let mut other = scenario.clone();
    other.seed += 1;
    let c = sim::run(&other).unwrap();
    assert_ne!(a.strategies, c.strategies);
}

#[test]
fn every_example_scenario_file_parses_and_runs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.to_string_lossy().to_string();
        if !(name.ends_with(".toml") || name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let scenario = Scenario::parse(&text, Format::from_path(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let report = sim::run(&scenario).unwrap();
        assert_eq!(report.strategies.len(), scenario.strategies.len());
        seen += 1;
    }
    assert!(seen >= 3, "expected the TOML and JSON examples, saw {seen}");
}

// ----- errors name the field -----

const MINIMAL: &str = r#"
name = "t"
duration_ms = 10000
load = { users = 2, requests_per_user_per_s = 1.0 }
"#;

fn toml_error(extra: &str) -> sim::ScenarioError {
    let text = format!("{MINIMAL}{extra}");
    match Scenario::parse(&text, Format::Toml) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

fn json_error(text: &str) -> sim::ScenarioError {
    match Scenario::parse(text, Format::Json) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e,
    }
}

/// The one mistake `e` reports.
fn only(e: &sim::ScenarioError) -> &sim::FieldError {
    match e.errors.as_slice() {
        [one] => one,
        _ => panic!("expected one mistake: {e}"),
    }
}

fn assert_names(e: &sim::ScenarioError, field: &str) {
    assert_eq!(only(e).field, field, "{e}");
    assert!(e.to_string().contains(field), "{e}");
}

#[test]
fn minimal_scenario_is_accepted() {
    let s = Scenario::parse(MINIMAL, Format::Toml).unwrap();
    assert_eq!(s.instances, 1);
    assert_eq!(s.strategies, Strategy::ALL.to_vec());
    assert_eq!(s.retry, RetryPolicy::new());
    assert_eq!(s.breaker, BreakerConfig::new());
}

#[test]
fn retry_and_breaker_are_the_core_types_with_their_defaults() {
    let extra = r#"
[retry]
factor = 3
jitter = { proportional = 1 }

[breaker]
open_duration_ms = 5
open_backoff_factor = 2
trip = { kind = "failure_rate", threshold_percent = 50, minimum_calls = 20, window = { millis = 60000 } }
"#;
    let s = Scenario::parse(&format!("{MINIMAL}{extra}"), Format::Toml).unwrap();
    assert_eq!(
        s.retry,
        RetryPolicy::new()
            .with_factor(3.0)
            .with_jitter(Jitter::Proportional(1.0))
    );
    let trip = TripRule::FailureRate {
        threshold_percent: 50.0,
        minimum_calls: 20,
        window: Window::Millis(60_000),
    };
    assert_eq!(
        s.breaker,
        BreakerConfig::new()
            .with_trip(trip)
            .with_open_duration_ms(5)
            .with_open_backoff(2.0, BreakerConfig::new().max_open_duration_ms)
    );
}

#[test]
fn a_breaker_from_wrangler_toml_is_a_scenario_breaker_as_it_is() {
    let toml = include_str!("../wrangler.toml");
    let start = toml.find("BREAKERS = '''").unwrap() + "BREAKERS = '''".len();
    let end = start + toml[start..].find("'''").unwrap();
    let breakers: serde_json::Value = serde_json::from_str(&toml[start..end]).unwrap();
    let openai = &breakers["openai"]["breaker"];
    assert!(openai.is_object(), "{breakers}");
    let scenario = serde_json::json!({
        "name": "t",
        "duration_ms": 1000,
        "load": { "arrivals_per_s": 1 },
        "breaker": openai,
    });
    let s = Scenario::parse(&scenario.to_string(), Format::Json).unwrap();
    assert_eq!(
        s.breaker.trip,
        TripRule::FailureRate {
            threshold_percent: 50.0,
            minimum_calls: 20,
            window: Window::Millis(60_000),
        }
    );
}

#[test]
fn unknown_fields_are_named() {
    assert_names(&toml_error("colour = 3\n"), "colour");
    assert_names(
        &toml_error("[retry]\nmax_atempts = 3\n"),
        "retry.max_atempts",
    );
    assert_names(
        &toml_error("[breaker]\nopen_duration = 3\n"),
        "breaker.open_duration",
    );
    assert_names(
        &toml_error("[[upstream.phases]]\nkind = \"error\"\nduration_ms = 1\nstatsu = 503\n"),
        "upstream.phases[0].statsu",
    );
    let e = json_error(r#"{"name":"t","duration_ms":1000,"load":{"arrivals_per_s":1,"userz":3}}"#);
    assert_names(&e, "load.userz");
}

#[test]
fn negative_values_are_named() {
    let e = Scenario::parse(
        &MINIMAL.replace("duration_ms = 10000", "duration_ms = -5"),
        Format::Toml,
    )
    .unwrap_err();
    assert_names(&e, "duration_ms");
    assert_names(
        &toml_error("[retry]\nbase_delay_ms = -100\n"),
        "retry.base_delay_ms",
    );
    assert_names(
        &toml_error("[upstream]\nlatency_jitter = -0.5\n"),
        "upstream.latency_jitter",
    );
    let e = json_error(r#"{"name":"t","duration_ms":1000,"load":{"arrivals_per_s":-2}}"#);
    assert_names(&e, "load.arrivals_per_s");
}

#[test]
fn wrong_types_are_named() {
    assert_names(&toml_error("instances = \"four\"\n"), "instances");
    assert_names(
        &toml_error("[breaker]\nopen_jitter = \"lots\"\n"),
        "breaker.open_jitter",
    );
    let e = json_error(r#"{"name":"t","duration_ms":"soon","load":{"arrivals_per_s":1}}"#);
    assert_names(&e, "duration_ms");
    let e = json_error(r#"{"name":"t","duration_ms":1000,"load":{"at_ms":[1,"x"]}}"#);
    assert_names(&e, "load.at_ms[1]");
}

#[test]
fn bad_trip_rules_are_named() {
    let e = toml_error("[breaker]\ntrip = { kind = \"sometimes\", threshold = 3 }\n");
    assert!(only(&e).field.starts_with("breaker.trip"), "{e}");
    assert!(only(&e).message.contains("sometimes"), "{e}");
    assert_names(
        &toml_error("[breaker]\ntrip = { kind = \"consecutive_failures\", threshold = 0 }\n"),
        "breaker.trip.threshold",
    );
    let e = toml_error("[breaker]\ntrip = { kind = \"consecutive_failures\", window_ms = 5 }\n");
    assert!(only(&e).field.starts_with("breaker.trip"), "{e}");
    // The spelling of BREAKERS before trip rules were tagged by `kind`.
    let e = toml_error("[breaker]\ntrip = { consecutive_failures = { threshold = 5 } }\n");
    assert!(only(&e).field.starts_with("breaker.trip"), "{e}");
    assert!(only(&e).message.contains("kind"), "{e}");
    assert_names(
        &toml_error(
            "[breaker]\ntrip = { kind = \"failure_rate\", threshold_percent = 150.0, minimum_calls = 5, window = { calls = 10 } }\n",
        ),
        "breaker.trip.threshold_percent",
    );
}

#[test]
fn out_of_range_values_are_named_by_the_core_validators() {
    assert_names(
        &toml_error("[retry]\nmax_attempts = 0\n"),
        "retry.max_attempts",
    );
    assert_names(
        &toml_error("[breaker]\nopen_jitter = 1.5\n"),
        "breaker.open_jitter",
    );
    assert_names(&toml_error("[budget]\nttl_ms = 5\n"), "budget.ttl_ms");
    assert_names(&toml_error("instances = 0\n"), "instances");
    assert_names(
        &toml_error(
            "[[upstream.phases]]\nkind = \"flapping\"\nduration_ms = 1\nprobability = 1.5\n",
        ),
        "upstream.phases[0].probability",
    );
    let both = MINIMAL.replace(
        "requests_per_user_per_s = 1.0",
        "arrivals_per_s = 3.0, at_ms = [1]",
    );
    assert_names(&Scenario::parse(&both, Format::Toml).unwrap_err(), "load");
}

#[test]
fn every_mistake_is_reported_at_once_each_with_its_field_and_value() {
    let text = r#"
name = "t"
duration_ms = 10000
instances = 0
strategies = ["retry_only", "shared_breaker", "retry_only"]
load = { users = 2, requests_per_user_per_s = -1.5 }

[[upstream.phases]]
kind = "error"
duration_ms = 1000
[[upstream.phases]]
kind = "flapping"
duration_ms = 1000
probability = 1.5
status = 200

[retry]
max_attempts = 0

[breaker]
trip = { kind = "consecutive_failures", threshold = 0 }

[budget]
ttl_ms = 5
"#;
    let e = Scenario::parse(text, Format::Toml).unwrap_err();
    assert_eq!(
        e.fields().collect::<Vec<_>>(),
        [
            "instances",
            "strategies[2]",
            "load.requests_per_user_per_s",
            "upstream.phases[1].probability",
            "upstream.phases[1].status",
            "retry.max_attempts",
            "breaker.trip.threshold",
            "budget.ttl_ms",
        ],
        "{e}"
    );
    let values = [
        "0 ",
        "\"retry_only\" ",
        "-1.5 ",
        "1.5 ",
        "200 ",
        "0 ",
        "0 ",
        "5 ",
    ];
    for (mistake, value) in e.errors.iter().zip(values) {
        assert!(mistake.message.starts_with(value), "{mistake}");
    }
    let shown = e.to_string();
    assert!(
        shown.starts_with("invalid scenario, 8 mistakes:"),
        "{shown}"
    );
    assert_eq!(shown.lines().count(), 9, "{shown}");
}

#[test]
fn json_scenarios_report_every_mistake_too() {
    let e = json_error(
        r#"{"name": "", "duration_ms": 0, "load": {"arrivals_per_s": 1, "at_ms": [5]},
            "upstream": {"latency_jitter": 1, "concurrency": 0},
            "breaker": {"open_jitter": 1}}"#,
    );
    assert_eq!(
        e.fields().collect::<Vec<_>>(),
        [
            "name",
            "duration_ms",
            "load",
            "load.at_ms[0]",
            "upstream.latency_jitter",
            "upstream.concurrency",
            "breaker.open_jitter",
        ],
        "{e}"
    );
    assert!(
        e.errors[2].message.contains("arrivals_per_s and at_ms"),
        "{e}"
    );
}

// ----- the SVG -----

/// A small well-formedness check: tags nest and close, attributes are quoted, and `&` starts an
/// entity.
fn assert_well_formed_xml(xml: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                entity.find(';').is_some_and(|j| j < 10),
                "bare & in {text:?}"
            );
        }
        rest = &rest[open..];
        if let Some(body) = rest.strip_prefix("<?") {
            rest = &body[body.find("?>").expect("unclosed <?") + 2..];
            continue;
        }
        if let Some(body) = rest.strip_prefix("<!--") {
            rest = &body[body.find("-->").expect("unclosed comment") + 3..];
            continue;
        }
        // Find the tag's end, skipping quoted attribute values.
        let mut quote = None;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '>') => {
                    end = Some(i);
                    break;
                }
                (None, '<') => panic!("'<' inside a tag: {}", &rest[..i]),
                _ => {}
            }
        }
        let end = end.expect("unclosed tag");
        let tag = &rest[1..end];
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop().expect("closing tag without an opening one");
            assert_eq!(top, name.trim(), "mismatched closing tag");
        } else if !tag.ends_with('/') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().expect("empty tag");
            stack.push(name.to_string());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
}

#[test]
fn svg_timeline_is_well_formed_with_one_panel_per_strategy() {
    let r = seed000();
    let svg = sim::render_svg(r).unwrap();
    assert_well_formed_xml(&svg);
    assert!(svg.trim_start().starts_with("<svg"));
    assert!(svg.contains("http://www.w3.org/2000/svg"));
    for s in Strategy::ALL {
        assert!(
            svg.contains(&format!("{}: ", s.label())),
            "no panel for {s}"
        );
    }
    assert!(svg.contains("breaker open"));
    assert!(svg.contains("<polyline"), "no line series");
}

#[test]
fn binary_writes_the_table_and_the_svg_and_exits_2_on_a_bad_file() {
    let exe = env!("CARGO_BIN_EXE_breakwater-sim");
    let dir = std::env::temp_dir().join(format!("breakwater-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("seed003.svg");
    let out = std::process::Command::new(exe)
        .args(["run", "seed003", "--svg"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("shared breaker") && table.contains("retry only"),
        "{table}"
    );
    assert_well_formed_xml(&std::fs::read_to_string(&svg).unwrap());

    let json = std::process::Command::new(exe)
        .args(["run", "seed003", "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["strategies"][3]["upstream_calls"], 11);

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, format!("{MINIMAL}\n[retry]\nmax_attempts = -1\n")).unwrap();
    let out = std::process::Command::new(exe)
        .arg("run")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("retry.max_attempts"));

    // Every range mistake is printed, not only the first.
    let mistakes = format!(
        "{}instances = 0\n[retry]\nmax_attempts = 0\n[breaker]\nopen_jitter = 2.0\n",
        MINIMAL.replace(
            "requests_per_user_per_s = 1.0",
            "requests_per_user_per_s = 0.0"
        )
    );
    std::fs::write(&bad, mistakes).unwrap();
    let out = std::process::Command::new(exe)
        .arg("run")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for field in [
        "`instances`",
        "`load.requests_per_user_per_s`",
        "`retry.max_attempts`",
        "`breaker.open_jitter`",
    ] {
        assert!(stderr.contains(field), "{field} missing from: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
