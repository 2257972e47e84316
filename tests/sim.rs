//! The outage simulator: the seeds' numbers, determinism, errors that name the field, the SVG.
#![cfg(feature = "sim")]

use breakwater::sim::{self, Format, Report, Scenario, Strategy, StrategyReport};
use breakwater::{BreakerConfig, TripRule, Window};
use breakwater::{Jitter, RetryPolicy};

fn report(name: &str) -> Report {
    let scenario = sim::builtin(name).expect("built-in scenario parses");
    sim::run(&scenario).expect("built-in scenario runs")
}

/// The hung-LLM scenario's report, computed once for the tests that only read it.
fn hung_llm() -> &'static Report {
    static REPORT: std::sync::OnceLock<Report> = std::sync::OnceLock::new();
    REPORT.get_or_init(|| report("hung-llm"))
}

fn get(report: &Report, s: Strategy) -> &StrategyReport {
    report.get(s).expect("strategy was run")
}

#[test]
fn agent_tool_breaker_makes_11_real_calls_where_retries_alone_make_21() {
    let r = &report("agent-tool");
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
fn hung_llm_breaker_cuts_upstream_calls_during_the_outage() {
    let r = hung_llm();
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
fn hung_llm_users_stop_being_affected_sooner_with_a_breaker() {
    let r = hung_llm();
    let after = |s| {
        get(r, s)
            .affected_after_recovery_ms
            .expect("the upstream recovers at a fixed time in hung-llm")
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
    let scenario = sim::builtin("hung-llm").unwrap();
    let a = hung_llm().clone();
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
    let r = hung_llm();
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
    assert!(svg.contains(">half-open</text>"), "no breaker state axis");
    assert!(svg.contains("<polyline"), "no line series");
}

/// Runs the `breakwater-sim` binary with `args`: its exit status, stdout and stderr.
fn sim<I, A>(args: I) -> (Option<i32>, String, String)
where
    I: IntoIterator<Item = A>,
    A: AsRef<std::ffi::OsStr>,
{
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_breakwater-sim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn binary_writes_the_table_and_the_svg_and_exits_2_on_a_bad_file() {
    let dir = std::env::temp_dir().join(format!("breakwater-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("agent-tool.svg");
    let (code, table, stderr) = sim([
        "run".as_ref(),
        "agent-tool".as_ref(),
        "--svg".as_ref(),
        svg.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        table.contains("shared breaker") && table.contains("retry only"),
        "{table}"
    );
    assert_well_formed_xml(&std::fs::read_to_string(&svg).unwrap());

    let (_, json, _) = sim(["run", "agent-tool", "--json"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["strategies"][3]["upstream_calls"], 11);

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, format!("{MINIMAL}\n[retry]\nmax_attempts = -1\n")).unwrap();
    let (code, _, stderr) = sim(["run".as_ref(), bad.as_os_str()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("retry.max_attempts"));

    // Every range mistake is printed, not only the first.
    let mistakes = format!(
        "{}instances = 0\n[retry]\nmax_attempts = 0\n[breaker]\nopen_jitter = 2.0\n",
        MINIMAL.replace(
            "requests_per_user_per_s = 1.0",
            "requests_per_user_per_s = 0.0"
        )
    );
    std::fs::write(&bad, mistakes).unwrap();
    let (code, _, stderr) = sim(["run".as_ref(), bad.as_os_str()]);
    assert_eq!(code, Some(2));
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

// ----- Retry-After per failure phase -----

/// One request at t = 0 against an upstream answering 429 (after 50 ms) for `phase_ms`, retried
/// once after a fixed 1 s backoff; `phase_extra` adds to the 429 phase.
fn rate_limited_for(phase_ms: u64, phase_extra: &str, retry_extra: &str) -> Report {
    let text = format!(
        r#"
name = "429"
duration_ms = 1000
strategies = ["retry_only"]
load = {{ at_ms = [0] }}

[upstream]
latency_ms = 100
latency_jitter = 0.0
error_latency_ms = 50

[[upstream.phases]]
kind = "error"
status = 429
duration_ms = {phase_ms}
{phase_extra}

[retry]
max_attempts = 2
base_delay_ms = 1000
max_delay_ms = 1000
jitter = "none"
{retry_extra}
"#
    );
    let scenario = Scenario::parse(&text, Format::Toml).unwrap_or_else(|e| panic!("{e}"));
    sim::run(&scenario).unwrap()
}

/// [`rate_limited_for`] a minute.
fn one_rate_limited_request(phase_extra: &str, retry_extra: &str) -> Report {
    rate_limited_for(60_000, phase_extra, retry_extra)
}

/// The seconds in which the upstream received a call.
fn seconds_with_calls(r: &StrategyReport) -> Vec<usize> {
    let calls = &r.timeline.calls;
    (0..calls.len()).filter(|i| calls[*i] > 0).collect()
}

#[test]
fn retry_waits_for_the_phases_retry_after() {
    let r = one_rate_limited_request("retry_after_ms = 7000", "");
    let retry = get(&r, Strategy::RetryOnly);
    assert_eq!(retry.upstream_calls, 2);
    // The 429 arrives at 50 ms; the second attempt waits 7 s for it, not the 1 s backoff.
    assert_eq!(seconds_with_calls(retry), vec![0, 7]);
    // Its 429 arrives at 7 050 + 50 ms, and the request gives up.
    assert_eq!(retry.latency_p50_ms, 7_100);
    assert_eq!(retry.failed, 1);
}

#[test]
fn retry_uses_its_backoff_without_retry_after() {
    let r = one_rate_limited_request("", "");
    let retry = get(&r, Strategy::RetryOnly);
    assert_eq!(retry.upstream_calls, 2);
    assert_eq!(seconds_with_calls(retry), vec![0, 1]);
    assert_eq!(retry.latency_p50_ms, 1_100);
}

#[test]
fn retry_after_shorter_than_the_backoff_keeps_the_backoff() {
    let r = one_rate_limited_request("retry_after_ms = 200", "");
    assert_eq!(get(&r, Strategy::RetryOnly).latency_p50_ms, 1_100);
}

#[test]
fn retry_after_beyond_max_retry_after_ends_the_retries_at_once() {
    let r = one_rate_limited_request("retry_after_ms = 7000", "max_retry_after_ms = 5000");
    let retry = get(&r, Strategy::RetryOnly);
    assert_eq!(retry.upstream_calls, 1);
    assert_eq!(retry.latency_p50_ms, 50);
}

#[test]
fn a_retry_after_the_rate_limit_succeeds() {
    // The 429s stop after 5 s; the retry, 5 s after the first answer, is served.
    let r = rate_limited_for(5_000, "retry_after_ms = 5000", "");
    let retry = get(&r, Strategy::RetryOnly);
    assert_eq!((retry.succeeded, retry.upstream_calls), (1, 2));
    assert_eq!(retry.latency_p50_ms, 5_150);
}

#[test]
fn retry_after_is_refused_where_no_error_carries_it() {
    let phase = |kind: &str, extra: &str| {
        toml_error(&format!(
            "[[upstream.phases]]\nkind = \"{kind}\"\nduration_ms = 1000\n{extra}\n"
        ))
    };
    for kind in ["stalled", "healthy"] {
        let e = phase(kind, "retry_after_ms = 3000");
        assert_names(&e, "upstream.phases[0].retry_after_ms");
        assert!(
            e.to_string().contains("3000") && e.to_string().contains(kind),
            "{e}"
        );
    }
    let e = phase("error", "status = 400\nretry_after_ms = 3000");
    assert_names(&e, "upstream.phases[0].retry_after_ms");
    assert!(e.to_string().contains("400"), "{e}");
    let e = phase("error", "status = 429\nretry_after_ms = 90000000");
    assert_names(&e, "upstream.phases[0].retry_after_ms");
    assert!(e.to_string().contains("90000000"), "{e}");
    let e = json_error(
        r#"{"name":"t","duration_ms":1000,"load":{"at_ms":[0]},
            "upstream":{"phases":[{"kind":"error","duration_ms":1,"retry_after_ms":-1}]}}"#,
    );
    assert_names(&e, "upstream.phases[0].retry_after_ms");
    // Accepted on a retried status of an error or flapping phase.
    for kind in ["error", "flapping"] {
        let text = format!(
            "{MINIMAL}[[upstream.phases]]\nkind = \"{kind}\"\nstatus = 503\nduration_ms = 1\nretry_after_ms = 0\n"
        );
        Scenario::parse(&text, Format::Toml).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

// ----- arrivals spread over the instances -----

const SPREAD: &str = r#"
name = "spread"
duration_ms = 30000
instances = 3
strategies = ["breaker_per_instance", "shared_breaker"]
load = { arrivals_per_s = 30.0 }
[upstream]
latency_ms = 200
error_latency_ms = 20
[[upstream.phases]]
kind = "healthy"
duration_ms = 5000
[[upstream.phases]]
kind = "error"
duration_ms = 10000
[retry]
max_attempts = 1
[breaker]
trip = { kind = "consecutive_failures", threshold = 5 }
open_duration_ms = 60000
"#;

#[test]
fn arrivals_without_users_go_round_robin_over_the_instances() {
    let r = sim::run(&Scenario::parse(SPREAD, Format::Toml).unwrap()).unwrap();
    assert_eq!(r.requests_per_instance.len(), 3);
    assert_eq!(r.requests_per_instance.iter().sum::<u64>(), r.requests);
    let (min, max) = (
        *r.requests_per_instance.iter().min().unwrap(),
        *r.requests_per_instance.iter().max().unwrap(),
    );
    assert!(max - min <= 1, "{:?}", r.requests_per_instance);
    assert!(min > 200, "{:?}", r.requests_per_instance);
    // Every instance's own breaker meets the outage and opens; the shared one opens once.
    assert_eq!(get(&r, Strategy::BreakerPerInstance).breaker_opened, 3);
    assert_eq!(get(&r, Strategy::SharedBreaker).breaker_opened, 1);
    // Each per-instance breaker needs its own 5 consecutive failures before it opens (answers to
    // calls sent before the outage may still reset the count): more calls get through.
    let per = get(&r, Strategy::BreakerPerInstance).upstream_calls_during_outage;
    let shared = get(&r, Strategy::SharedBreaker).upstream_calls_during_outage;
    assert!(
        per >= 3 * 5 && shared >= 5 && per > shared,
        "{per} vs {shared}"
    );
    let table = r.to_string();
    assert!(table.contains("3 instances ("), "{table}");
}

#[test]
fn explicit_times_without_users_go_round_robin_too() {
    let text =
        "name = \"t\"\nduration_ms = 10000\ninstances = 2\nload = { at_ms = [0, 1, 2, 3, 4] }\n";
    let r = sim::run(&Scenario::parse(text, Format::Toml).unwrap()).unwrap();
    assert_eq!(r.requests_per_instance, vec![3, 2]);
}

#[test]
fn fewer_users_than_instances_is_refused() {
    let e = toml_error("instances = 3\n");
    assert_names(&e, "load.users");
    assert!(e.to_string().contains("2 user(s) for 3 instances"), "{e}");
    let e = Scenario::parse(
        "name = \"t\"\nduration_ms = 1000\ninstances = 2\nload = { requests_per_user_per_s = 1.0 }\n",
        Format::Toml,
    )
    .unwrap_err();
    assert_names(&e, "load.users");
    let e = Scenario::parse(
        "name = \"t\"\nduration_ms = 1000\ninstances = 4\nload = { users = 3, arrivals_per_s = 1.0 }\n",
        Format::Toml,
    )
    .unwrap_err();
    assert_names(&e, "load.users");
}

// ----- output files -----

#[test]
fn binary_creates_the_missing_folders_of_its_output_files() {
    let dir = std::env::temp_dir().join(format!("breakwater-sim-dirs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let svg = dir.join("out/run/agent-tool.svg");
    let (code, _, stderr) = sim([
        "run".as_ref(),
        "agent-tool".as_ref(),
        "--svg".as_ref(),
        svg.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));

    let recording = dir.join("recording.json");
    std::fs::write(
        &recording,
        r#"{"instances": 2, "strategies": [{"strategy": "shared_breaker", "calls": [3, 1],
            "rejected": [0, 2], "breaker_open": [0, 1]}]}"#,
    )
    .unwrap();
    let plotted = dir.join("out/plot/live.svg");
    let (code, _, stderr) = sim([
        "plot".as_ref(),
        recording.as_os_str(),
        "--svg".as_ref(),
        plotted.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(std::fs::read_to_string(&plotted).unwrap().contains("<svg"));

    // A parent that is a file is reported, with exit status 2.
    let blocked = dir.join("recording.json/inside.svg");
    let (code, _, stderr) = sim([
        "run".as_ref(),
        "agent-tool".as_ref(),
        "--svg".as_ref(),
        blocked.as_os_str(),
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("recording.json"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ----- the SVG's layout -----

/// The opening tags named `name` in `svg`, as their text between `<` and `>`.
fn tags<'a>(svg: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let rest = &svg[i..];
            &rest[..rest.find('>').expect("tag closes")]
        })
        .collect()
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {tag}"))
}

/// `[x0, y0, x1, y1]` of a `<rect>`.
fn rect_box(tag: &str) -> [f64; 4] {
    let (x, y) = (num(tag, "x"), num(tag, "y"));
    [x, y, x + num(tag, "width"), y + num(tag, "height")]
}

fn boxes_with_class(svg: &str, class: &str) -> Vec<[f64; 4]> {
    tags(svg, "rect")
        .into_iter()
        .filter(|t| attr(t, "class") == Some(class))
        .map(rect_box)
        .collect()
}

fn overlaps(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

fn inside(p: (f64, f64), b: [f64; 4]) -> bool {
    p.0 >= b[0] - 0.05 && p.0 <= b[2] + 0.05 && p.1 >= b[1] - 0.05 && p.1 <= b[3] + 0.05
}

/// The `<text>` elements: tag and content.
fn texts(svg: &str) -> Vec<(&str, &str)> {
    svg.match_indices("<text ")
        .map(|(i, _)| {
            let rest = &svg[i..];
            let end = rest.find('>').unwrap();
            let close = rest.find("</text>").unwrap();
            (&rest[..end], &rest[end + 1..close])
        })
        .collect()
}

fn assert_readable_layout(svg: &str, report: &Report) {
    let width = num(tags(svg, "svg")[0], "width");
    let height = num(tags(svg, "svg")[0], "height");
    let plots = boxes_with_class(svg, "plot-area");
    let breakers = report
        .strategies
        .iter()
        .filter(|r| r.strategy.has_breaker())
        .count();
    assert_eq!(plots.len(), report.strategies.len() + breakers);
    for (i, a) in plots.iter().enumerate() {
        assert!(a[0] >= 0.0 && a[1] >= 0.0 && a[2] <= width && a[3] <= height);
        for b in plots.iter().skip(i + 1) {
            assert!(!overlaps(*a, *b), "plots overlap: {a:?} {b:?}");
        }
    }
    // The legend is one box, outside every plotting area, and holds its entries.
    let legend = boxes_with_class(svg, "legend-box");
    assert_eq!(legend.len(), 1, "one legend");
    let legend = legend[0];
    for p in &plots {
        assert!(!overlaps(legend, *p), "legend {legend:?} covers plot {p:?}");
    }
    let entries: Vec<_> = texts(svg)
        .into_iter()
        .filter(|(t, _)| attr(t, "class") == Some("legend-text"))
        .collect();
    assert!(entries.len() >= 2, "legend entries: {entries:?}");
    for (tag, text) in &entries {
        let (x, y) = (num(tag, "x"), num(tag, "y"));
        let right = x + text.chars().count() as f64 * num(tag, "font-size") * 0.6;
        assert!(
            inside((x, y), legend) && right <= legend[2] + 0.5,
            "{text} outside the legend"
        );
    }
    // Every line of data is drawn inside a plotting area.
    let lines = tags(svg, "polyline");
    assert!(lines.len() >= report.strategies.len());
    for line in lines {
        for point in attr(line, "points").unwrap().split_whitespace() {
            let (x, y) = point.split_once(',').unwrap();
            let p = (x.parse().unwrap(), y.parse().unwrap());
            assert!(
                plots.iter().any(|b| inside(p, *b)),
                "{p:?} outside the plots"
            );
        }
    }
    // No text sits on the data, and none runs off the picture.
    for (tag, text) in texts(svg) {
        let (x, y) = (num(tag, "x"), num(tag, "y"));
        assert!(
            !plots.iter().any(|b| inside((x, y), *b)),
            "{text:?} on a plot"
        );
        let w = text.chars().count() as f64 * num(tag, "font-size") * 0.6;
        let (left, right) = match attr(tag, "text-anchor") {
            Some("middle") => (x - w / 2.0, x + w / 2.0),
            Some("end") => (x - w, x),
            _ => (x, x + w),
        };
        if attr(tag, "transform").is_none() {
            assert!(
                left >= 0.0 && right <= width,
                "{text:?} runs off: {left}..{right}"
            );
        }
        assert!(y > 0.0 && y < height, "{text:?} at y {y}");
    }
    // Every axis says what it measures.
    let titles: Vec<&str> = texts(svg)
        .into_iter()
        .filter(|(t, _)| attr(t, "class") == Some("axis-title"))
        .map(|(_, text)| text)
        .collect();
    let count = |s: &str| titles.iter().filter(|t| **t == s).count();
    assert_eq!(
        count("time since start (s)"),
        report.strategies.len(),
        "{titles:?}"
    );
    assert_eq!(
        count("attempts per second"),
        report.strategies.len(),
        "{titles:?}"
    );
    assert_eq!(count("breaker") + count("breakers"), breakers, "{titles:?}");
}

#[test]
fn svg_legend_stays_off_the_plots_and_every_axis_is_titled() {
    for name in ["hung-llm", "agent-tool"] {
        let r = if name == "hung-llm" {
            hung_llm().clone()
        } else {
            report(name)
        };
        assert_readable_layout(&sim::render_svg(&r).unwrap(), &r);
    }
    let flapping = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/flapping.json");
    let text = std::fs::read_to_string(flapping).unwrap();
    let r = sim::run(&Scenario::parse(&text, Format::Json).unwrap()).unwrap();
    assert_readable_layout(&sim::render_svg(&r).unwrap(), &r);
}

#[test]
fn svg_time_axis_switches_to_minutes_for_long_runs() {
    let text = "name = \"long\"\nduration_ms = 3600000\nstrategies = [\"no_protection\"]\nload = { at_ms = [0] }\n";
    let r = sim::run(&Scenario::parse(text, Format::Toml).unwrap()).unwrap();
    let svg = sim::render_svg(&r).unwrap();
    assert!(svg.contains(">time since start (min)</text>"));
    // About one point per pixel, not one per second.
    let points = attr(tags(&svg, "polyline")[0], "points").unwrap();
    assert!(
        points.split_whitespace().count() < 2_100,
        "{}",
        points.len()
    );
}

#[test]
fn table_and_svg_use_failed_fast_for_requests_and_rejected_for_attempts() {
    let r = hung_llm();
    let table = r.to_string();
    let svg = sim::render_svg(r).unwrap();
    for s in [Strategy::BreakerPerInstance, Strategy::SharedBreaker] {
        let b = get(r, s);
        assert!(
            b.rejected_attempts > b.failed_fast,
            "{s}: retries are rejected too"
        );
        let caption = format!(
            "{} requests failed fast, {} attempts rejected by the breaker",
            b.failed_fast, b.rejected_attempts
        );
        assert!(svg.contains(&caption), "{s}: no {caption:?}");
        assert!(
            table.contains(&format!("{} {}", s.label(), b.rejected_attempts)),
            "{table}"
        );
    }
    assert!(
        table.contains("attempts rejected by the breaker"),
        "{table}"
    );
    for text in [&table, &svg] {
        assert!(!text.contains("attempts failed fast"), "{text}");
        assert!(!text.contains("calls failed fast"), "{text}");
    }
}

#[test]
fn rate_limited_retries_honouring_retry_after_send_fewer_calls_into_the_limit() {
    let with = sim::builtin("rate-limited").expect("built in");
    assert_eq!(with.upstream.phases[1].retry_after_ms, Some(20_000));
    let mut without = with.clone();
    without.upstream.phases[1].retry_after_ms = None;
    let (a, b) = (sim::run(&with).unwrap(), sim::run(&without).unwrap());
    let (ra, rb) = (get(&a, Strategy::RetryOnly), get(&b, Strategy::RetryOnly));
    // Waiting for the window to reopen: fewer calls while limited, more requests answered (some
    // retries land after the limit lifts), at the cost of users waiting for it.
    assert!(
        ra.upstream_calls_during_outage < rb.upstream_calls_during_outage,
        "{} vs {}",
        ra.upstream_calls_during_outage,
        rb.upstream_calls_during_outage
    );
    assert!(
        ra.succeeded > rb.succeeded,
        "{} vs {}",
        ra.succeeded,
        rb.succeeded
    );
    assert!(ra.latency_p99_ms >= 20_000, "{}", ra.latency_p99_ms);
    assert!(rb.latency_p99_ms < 20_000, "{}", rb.latency_p99_ms);
    // Three instances, each with its own breaker needing 5 failures, against one shared breaker.
    assert_eq!(a.requests_per_instance.len(), 3);
    let per = get(&a, Strategy::BreakerPerInstance);
    let shared = get(&a, Strategy::SharedBreaker);
    assert_eq!(per.breaker_opened, 3);
    assert_eq!(shared.breaker_opened, 1);
    assert!(per.upstream_calls_during_outage >= 3 * shared.upstream_calls_during_outage);
}

#[test]
fn a_capacity_belongs_to_an_overloaded_phase_only() {
    for (phase, message) in [
        ("kind = \"overloaded\"\nduration_ms = 1000", "at least 1"),
        (
            "kind = \"overloaded\"\nduration_ms = 1000\nconcurrency = 0",
            "at least 1",
        ),
        (
            "kind = \"error\"\nduration_ms = 1000\nconcurrency = 5",
            "only an `overloaded` phase",
        ),
    ] {
        let text = format!("{MINIMAL}\n[[upstream.phases]]\n{phase}\n");
        let e = Scenario::parse(&text, Format::Toml).unwrap_err();
        assert_names(&e, "upstream.phases[0].concurrency");
        assert!(e.to_string().contains(message), "{e}");
    }
    let ok = format!(
        "{MINIMAL}\n[[upstream.phases]]\nkind = \"overloaded\"\nduration_ms = 1000\nconcurrency = 3\n"
    );
    assert!(Scenario::parse(&ok, Format::Toml).is_ok());
}

/// The heavy-tailed provider: 3 % of first tokens take about 30 s. A hedge on a second provider
/// like it, within a 10 % budget, must at least halve the 99th percentile for at most 12 % extra
/// requests, and never spend more than the budget; without a heavy tail it hedges nearly nothing.
#[test]
fn hedging_halves_the_heavy_tail_within_its_budget() {
    let s = sim::builtin("heavy-tail").unwrap();
    let h = sim::run(&s).unwrap().hedging.unwrap();
    assert_eq!(h.requests, sim::run(&s).unwrap().requests);
    assert!(h.plain_p99_ms >= 20_000, "{h:?}");
    assert!(h.hedged_p99_ms * 2 <= h.plain_p99_ms, "{h:?}");
    assert!(h.extra_share() <= 0.12, "{h:?}");
    assert!(h.extra_requests as f64 <= 0.1 * h.requests as f64, "{h:?}");
    assert!(h.hedged_p50_ms <= h.plain_p50_ms, "{h:?}");
    // A partial outage where every call is slow: the budget, not the tail, limits the hedges.
    let mut all_slow = s.clone();
    all_slow.upstream.slow_share = 1.0;
    let h = sim::run(&all_slow).unwrap().hedging.unwrap();
    assert!(h.extra_requests as f64 <= 0.1 * h.requests as f64, "{h:?}");
    assert!(h.extra_requests * 100 >= h.requests * 9, "{h:?}");
    // No tail: the auto delay sits at the top of the jitter and almost no call passes it.
    let mut calm = s.clone();
    calm.upstream.slow_share = 0.0;
    let h = sim::run(&calm).unwrap().hedging.unwrap();
    assert!(h.extra_share() <= 0.06, "{h:?}");
    assert!(sim::run(&calm).unwrap().to_string().contains("with hedge"));
}

#[test]
fn a_hedge_and_a_heavy_tail_are_checked_by_name() {
    assert_names(&toml_error("[hedge]\nbudget = 0.0\n"), "hedge.budget");
    assert_names(
        &toml_error("[hedge]\nafter = { millis = 0 }\n"),
        "hedge.after.millis",
    );
    assert_names(
        &toml_error("[upstream]\nslow_share = 1.5\n"),
        "upstream.slow_share",
    );
    let e =
        Scenario::parse(&format!("{MINIMAL}[hedge]\nbugdet = 0.1\n"), Format::Toml).unwrap_err();
    assert!(e.to_string().contains("bugdet"), "{e}");
    let ok = Scenario::parse(
        &format!("{MINIMAL}[hedge]\nafter = {{ millis = 900 }}\nbudget = 0.05\n"),
        Format::Toml,
    )
    .unwrap();
    assert_eq!(ok.hedge.unwrap().after, breakwater::HedgeAfter::Millis(900));
}

/// The format reference in scenarios/README.md is a scenario as written: it parses, and its
/// `[hedge]` section and heavy tail are what the reference says.
#[test]
fn the_format_reference_of_the_scenarios_readme_parses_as_written() {
    let readme = include_str!("../scenarios/README.md");
    let start = readme.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let block = &readme[start..][..readme[start..].find("```").unwrap()];
    let s = Scenario::parse(block, Format::Toml).unwrap_or_else(|e| panic!("{e}"));
    let h = s.hedge.expect("the [hedge] section");
    assert_eq!(
        (h.after, h.budget, h.quantile),
        (breakwater::HedgeAfter::Auto, 0.1, 0.95)
    );
    assert_eq!((s.upstream.slow_share, s.upstream.slow_ms), (0.0, 30_000));
    assert!(sim::run(&s).unwrap().hedging.is_some());
}
