//! The shared breakers' status page (src/shared/status.rs): its CSP allows its style sheet and
//! nothing else, it shows every breaker through an outage and its recovery, and it escapes what
//! it shows.

use base64::Engine;
use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::status::{render, render_json, CSP, STYLE};
use sha2::{Digest, Sha256};

#[test]
fn the_csp_names_the_style_sheets_hash() {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
    assert!(
        CSP.contains(&format!("style-src 'sha256-{hash}'")),
        "CSP {CSP:?} lacks the style sheet's hash {hash}"
    );
    let page = render(&[], 0);
    assert!(page.contains(&format!("<style>{STYLE}</style>")));
    assert_eq!(page.matches("<style").count(), 1);
    for banned in [
        "<script", " style=", "<link", "<img", "http://", "https://", "src=",
    ] {
        assert!(!page.contains(banned), "{banned}");
    }
    assert!(render_json("[]", 0).is_some());
    assert!(render_json("{", 0).is_none());
}

use breakwater::shared::protocol::{Batch, Counts, Exchange, ProbeReport, WireOutcome};
use breakwater::shared::{Coordinator, OnMismatch, SharedSpec};
use breakwater::{BreakerConfig, State, Timestamp, TripRule};

/// 2026-12-04 10:00:00 UTC.
const T0: u64 = 1_796_378_400_000;

fn spec() -> SharedSpec {
    SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::ConsecutiveFailures { threshold: 3 })
            .with_open_duration_ms(30_000)
            .with_probe_timeout_ms(10_000),
    )
    .with_lease_ms(1_000)
}

/// One step the way the Redis store takes it: the record read, one step, the record written.
fn step<T>(stored: &mut Option<String>, f: impl FnOnce(&mut Coordinator) -> T) -> T {
    let mut c =
        Coordinator::load_json("llm", spec(), stored.as_deref(), OnMismatch::Adopt).unwrap();
    let out = f(&mut c);
    *stored = Some(c.record_json().unwrap());
    out
}

fn report(seq: u64, generation: u32, successes: u32, failures: u32) -> Exchange {
    Exchange {
        client: "app-1".into(),
        session: 1,
        batches: vec![Batch {
            seq,
            counts: vec![Counts {
                generation: Some(generation),
                successes,
                failures,
                ignored: 0,
                throttled: 0,
            }],
            probes: vec![],
        }],
    }
}

#[test]
fn an_outage_and_its_recovery_through_stored_records() {
    let mut stored = None;
    let g = step(&mut stored, |c| c.breaker().generation());
    // 10:00:05 — 40 calls fine; 10:01:10 — 2 fine, then 3 failures open it.
    step(&mut stored, |c| {
        c.exchange(
            Timestamp(T0 + 5_000),
            &report(1, g, 40, 0),
            ExchangeOp::Report,
        )
        .unwrap()
    });
    let opened = step(&mut stored, |c| {
        c.exchange(
            Timestamp(T0 + 70_000),
            &report(2, g, 2, 3),
            ExchangeOp::Report,
        )
        .unwrap();
        c.breaker().state()
    });
    assert_eq!(opened, State::Open);
    let page = step(&mut stored, |c| {
        let v = c.view(Timestamp(T0 + 80_000));
        assert_eq!(v.transitions.len(), 1);
        assert_eq!(
            (v.transitions[0].from, v.transitions[0].to),
            (State::Closed, State::Open)
        );
        assert_eq!(v.transitions[0].at, T0 + 70_000);
        let minutes: Vec<_> = v
            .minutes
            .iter()
            .map(|m| (m.at - T0, m.calls, m.failures))
            .collect();
        assert_eq!(minutes, [(0, 40, 0), (60_000, 5, 3)]);
        assert_eq!(v.settings, "opens after 3 consecutive failures; stays open 30 s; then 1 probe at a time, 1 success to close, a probe unheard of for 10 s freed; clients ask again every 1 s");
        render(&[v], T0 + 80_000)
    });
    assert!(
        page.contains("<section class=\"b OPEN\"><h2><span class=\"s\">OPEN</span>llm</h2>"),
        "{page}"
    );
    assert!(page.contains("<dd>10:01:10 UTC (10 s ago)</dd>"), "{page}");
    assert!(
        page.contains("the first in 20 s (at 10:01:40 UTC)"),
        "{page}"
    );
    assert!(
        page.contains("<li>CLOSED → OPEN at 10:01:10 (10 s ago)</li>"),
        "{page}"
    );
    assert!(
        page.contains("<td>10:01 (now)</td><td>5</td><td>3</td>"),
        "{page}"
    );
    assert!(
        page.contains("opens after 3 consecutive failures"),
        "{page}"
    );
    assert!(
        page.contains("45 calls, 3 failures, opened 1 time<"),
        "{page}"
    );
    assert!(
        page.contains("<title>NOT CLOSED · breakwater</title>"),
        "{page}"
    );

    // 10:01:41 — a probe is granted, and succeeds: CLOSED again.
    let probe = step(&mut stored, |c| {
        let (reply, _) = c
            .exchange(
                Timestamp(T0 + 101_000),
                &Exchange {
                    client: "app-1".into(),
                    session: 1,
                    batches: vec![],
                },
                ExchangeOp::Acquire,
            )
            .unwrap();
        reply.permit.unwrap()
    });
    step(&mut stored, |c| {
        let done = Exchange {
            client: "app-1".into(),
            session: 1,
            batches: vec![Batch {
                seq: 3,
                counts: vec![],
                probes: vec![ProbeReport {
                    generation: probe.generation,
                    id: probe.probe.unwrap(),
                    issued_at: probe.issued_at,
                    outcome: WireOutcome::Success,
                }],
            }],
        };
        c.exchange(Timestamp(T0 + 102_000), &done, ExchangeOp::Report)
            .unwrap();
    });
    let (v, page) = step(&mut stored, |c| {
        let v = c.view(Timestamp(T0 + 125_000));
        let page = render(std::slice::from_ref(&v), T0 + 125_000);
        (v, page)
    });
    let path: Vec<_> = v.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        path,
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed)
        ]
    );
    assert!(page.contains("<section class=\"b CLOSED\">"), "{page}");
    assert!(
        page.contains("<title>all closed · breakwater</title>"),
        "{page}"
    );
    assert!(page.contains("<dd>10:01:42 UTC (23 s ago)</dd>"), "{page}");
    // The JSON a host gathers renders the same page.
    let json = format!("[{}]", breakwater::shared::json::to_string(&v));
    assert_eq!(render_json(&json, T0 + 125_000).unwrap(), page);
    // Eleven minutes later the minutes have aged out; the changes stay.
    let v = step(&mut stored, |c| {
        c.view(Timestamp(T0 + 11 * 60_000 + 125_000))
    });
    assert!(v.minutes.is_empty(), "{:?}", v.minutes);
    assert_eq!(v.transitions.len(), 3);
    let quiet = render(&[v], T0 + 11 * 60_000 + 125_000);
    assert!(
        quiet.contains("<h3>Last 10 minutes</h3><p>Nothing counted.</p>"),
        "{quiet}"
    );
}

#[test]
fn only_the_last_changes_are_kept_and_names_are_escaped() {
    let mut c = Coordinator::fresh("a<b>&\"c\"", spec()).unwrap();
    let mut now = T0;
    for seq in 1..=12u64 {
        let g = c.breaker().generation();
        c.exchange(Timestamp(now), &report(seq, g, 0, 3), ExchangeOp::Report)
            .unwrap();
        now += 31_000;
        c.isolate(Timestamp(now));
        c.reset(Timestamp(now));
    }
    let v = c.view(Timestamp(now));
    assert_eq!(
        v.transitions.len(),
        breakwater::shared::protocol::RECENT_TRANSITIONS
    );
    assert_eq!(v.transitions.last().unwrap().to, State::Closed);
    let page = render(&[v], now);
    assert!(page.contains("a&lt;b&gt;&amp;&quot;c&quot;"));
    assert!(!page.contains("a<b>"));
}

#[test]
fn settings_in_words() {
    use breakwater::{Throttle, Window};
    let rate = SharedSpec::new(
        BreakerConfig::new()
            .with_trip(TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 20,
                window: Window::Millis(60_000),
            })
            .with_open_duration_ms(1_500)
            .with_open_jitter(0.1)
            .with_open_backoff(2.0, 300_000)
            .with_half_open_max_probes(3)
            .with_half_open_success_threshold(2)
            .with_throttle(Throttle::new()),
    )
    .with_lease_ms(250);
    assert_eq!(
        rate.describe(),
        "opens when 50 % of the calls of the last 1 min fail (at least 20 calls); stays open \
         1.5 s ± 10 %, × 2 after each failed probe round, up to 5 min; then 3 probes at a time, \
         2 successes to close, a probe unheard of for 30 s freed; clients ask again every 250 ms; \
         sheds load when calls exceed 2 × successes over 2 min (from 20 calls, at most 80 %)"
    );
    // The throttle is part of the fingerprint; settings without one keep theirs.
    let plain = SharedSpec::new(BreakerConfig::new());
    let throttled = SharedSpec::new(BreakerConfig::new().with_throttle(Throttle::new()));
    assert_ne!(plain.fingerprint(), throttled.fingerprint());
}

#[test]
fn a_clock_stepped_back_starts_the_minutes_afresh_and_they_count_again() {
    let mut stored = None;
    let g = step(&mut stored, |c| c.breaker().generation());
    step(&mut stored, |c| {
        c.exchange(
            Timestamp(T0 + 5_000),
            &report(1, g, 7, 0),
            ExchangeOp::Report,
        )
        .unwrap()
    });
    // The clock steps back an hour: nothing counted before it is shown as counted after it.
    let back = T0 - 3_600_000;
    let v = step(&mut stored, |c| {
        c.exchange(Timestamp(back), &report(2, g, 3, 1), ExchangeOp::Report)
            .unwrap();
        c.view(Timestamp(back + 1_000))
    });
    let minutes: Vec<_> = v
        .minutes
        .iter()
        .map(|m| (m.at, m.calls, m.failures))
        .collect();
    assert_eq!(minutes, [(back / 60_000 * 60_000, 4, 1)]);
    // And on: the next minute counts by itself.
    let v = step(&mut stored, |c| {
        c.exchange(
            Timestamp(back + 60_000),
            &report(3, g, 2, 0),
            ExchangeOp::Report,
        )
        .unwrap();
        c.view(Timestamp(back + 61_000))
    });
    let counts: Vec<_> = v.minutes.iter().map(|m| (m.calls, m.failures)).collect();
    assert_eq!(counts, [(4, 1), (2, 0)]);
}

#[test]
fn a_record_written_before_the_page_reads_and_is_written_back_as_it_was() {
    let mut stored = None;
    let g = step(&mut stored, |c| c.breaker().generation());
    step(&mut stored, |c| {
        c.exchange(Timestamp(T0), &report(1, g, 1, 3), ExchangeOp::Report)
            .unwrap()
    });
    // The record as an earlier version wrote it: no changes, no minutes.
    let mut old: serde_json::Value = serde_json::from_str(stored.as_deref().unwrap()).unwrap();
    let fields = old.as_object_mut().unwrap();
    assert!(fields.remove("transitions").is_some() && fields.remove("marks").is_some());
    let old = old.to_string();
    let c = Coordinator::load_json("llm", spec(), Some(&old), OnMismatch::Adopt).unwrap();
    let written = c.record_json().unwrap();
    assert!(
        !written.contains("\"transitions\"") && !written.contains("\"marks\""),
        "a read adds nothing to the record: {written}"
    );
    let v = c.view(Timestamp(T0 + 1_000));
    assert_eq!(v.lease.state, State::Open);
    assert!(v.transitions.is_empty() && v.minutes.is_empty());
    let page = render(&[v], T0 + 1_000);
    assert!(
        page.contains("<dt>since</dt><dd>10:00:00 UTC (1 s ago)</dd>"),
        "{page}"
    );
    assert!(
        page.contains("<p>None since the record began.</p>"),
        "{page}"
    );
}

/// The docs say what the page keeps in words; they must say what the core keeps.
#[test]
fn the_docs_state_the_page_as_it_is() {
    use breakwater::shared::protocol::{ACTIVITY_MINUTES, RECENT_TRANSITIONS};
    use breakwater::shared::status::REFRESH_S;
    let word = |n: u64| {
        [
            "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
            "eleven", "twelve",
        ][n as usize]
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // The guide that describes the page (in the published crate too).
    let readme = std::fs::read_to_string(root.join("docs/cloudflare.md"))
        .unwrap()
        .replace('\n', " ");
    // js/README.md is not in the published crate (whose tests run unpacked): checked in the
    // repository.
    let js = std::fs::read_to_string(root.join("js/README.md")).map(|t| t.replace('\n', " "));
    let changes = format!("its last {} state changes", word(RECENT_TRANSITIONS as u64));
    let minutes = format!("each of the last {} minutes", word(ACTIVITY_MINUTES));
    let refresh = format!("reloads itself every {REFRESH_S} s");
    for text in [&changes, &minutes, &refresh] {
        assert!(
            readme.contains(text.as_str()),
            "docs/cloudflare.md lacks {text:?}"
        );
    }
    if let Ok(js) = js {
        assert!(
            js.contains(minutes.as_str()),
            "js/README.md lacks {minutes:?}"
        );
    }
}
