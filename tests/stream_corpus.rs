//! The stream transcripts of tests/fixtures/llm (each names its source: the providers' API
//! references, the SDKs' and the AI SDK's recorded fixtures), read with Node and replayed
//! through the core's stream rules (`breakwater::stream`) as an event stream's bytes, cut at
//! every size from 1 byte up: what each event shows, and how the stream counts. The npm
//! package's guard (tests/js/stream-corpus.test.mjs) and the Rust services' guard
//! (tests/stream_guard.rs) replay the same corpus.

use breakwater::stream::{
    Progress, Reading, Settled, SseItem, SseSplitter, Step, Stop, StreamLimits, Watch,
};
use breakwater::Ending;

#[path = "common/llm.rs"]
mod llm;

struct Transcript {
    name: String,
    body: Vec<u8>,
    cut: bool,
    expect: Option<serde_json::Value>,
    /// The outcome the corpus documents (tests/fixtures/llm/index.mjs `documented`).
    documented: Option<String>,
}

/// Every stream transcript of the corpus, as the bytes an event stream carries.
fn corpus() -> Vec<Transcript> {
    llm::corpus()
        .iter()
        .filter(|t| t.get("events").is_some())
        .map(|t| {
            let mut body = String::new();
            for e in t["events"].as_array().unwrap() {
                if let Some(c) = e.get("comment") {
                    body += &format!(":{}\n\n", c.as_str().unwrap());
                } else if let Some(data) = e.get("data") {
                    if let Some(name) = e.get("event").and_then(|n| n.as_str()) {
                        body += &format!("event: {name}\n");
                    }
                    for line in data.as_str().unwrap().split('\n') {
                        body += &format!("data: {line}\n");
                    }
                    body += "\n";
                }
            }
            Transcript {
                name: t["name"].as_str().unwrap().into(),
                body: body.into_bytes(),
                cut: t["cut"].as_bool() == Some(true),
                expect: Some(t["expect"].clone()).filter(|e| !e.is_null()),
                documented: t["documented"].as_str().map(String::from),
            }
        })
        .collect()
}

/// What the events of a stream show, read one by one.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    first: Option<Progress>,
    ending: Option<Ending>,
    error_before: bool,
    error_after: bool,
    malformed: bool,
}

fn readings(body: &[u8], chunk: usize) -> Vec<Reading> {
    let mut sse = SseSplitter::new();
    let mut out = Vec::new();
    for c in body.chunks(chunk) {
        sse.push(c, &mut |i| {
            out.push(match i {
                SseItem::Comment => Reading::KEEP_ALIVE,
                SseItem::Event { name, data, .. } => Reading::event(name, data),
            })
        });
    }
    out
}

fn seen(rs: &[Reading]) -> Seen {
    let mut s = Seen::default();
    for r in rs {
        if r.error.is_some() {
            if s.first.is_none() {
                s.error_before = true;
            } else {
                s.error_after = true;
            }
        }
        s.malformed |= r.malformed;
        if matches!(r.progress, Progress::Output | Progress::Thinking) && s.first.is_none() {
            s.first = Some(r.progress);
        }
        if let Some(e) = r.ending {
            if s.ending != Some(Ending::Declined) {
                s.ending = Some(e);
            }
        }
    }
    s
}

/// How the watch (no limits) settles the stream: the last step.
fn settle(rs: &[Reading], cut: bool) -> Step {
    let mut w = Watch::new(StreamLimits::default(), 0);
    for (i, r) in rs.iter().enumerate() {
        let step = w.item(i as u64, r);
        if matches!(step, Step::Fail(_) | Step::Cut { .. } | Step::End(_)) {
            return step;
        }
    }
    if cut {
        w.broke(rs.len() as u64)
    } else {
        w.end(rs.len() as u64)
    }
}

fn name_of(p: Option<Progress>) -> &'static str {
    match p {
        Some(Progress::Output) => "output",
        Some(Progress::Thinking) => "thinking",
        _ => "none",
    }
}

fn ending_name(e: Option<Ending>) -> &'static str {
    match e {
        Some(Ending::Complete) => "complete",
        Some(Ending::Truncated) => "truncated",
        Some(Ending::Declined) => "declined",
        Some(Ending::Failed) => "failed",
        Some(Ending::Unknown) | None => "none",
    }
}

#[test]
fn every_transcript_reads_as_documented_at_every_chunk_size() {
    let all = corpus();
    assert!(all.iter().filter(|t| t.expect.is_some()).count() >= 19);
    for t in &all {
        let whole = readings(&t.body, t.body.len().max(1));
        // The same readings whatever the network's chunking.
        for chunk in [1, 2, 3, 7, 64, 1000] {
            assert_eq!(
                readings(&t.body, chunk),
                whole,
                "{} in chunks of {chunk}",
                t.name
            );
        }
        let Some(expect) = &t.expect else { continue };
        let s = seen(&whole);
        let error = if s.error_before {
            "before"
        } else if s.error_after {
            "after"
        } else {
            "none"
        };
        assert_eq!(
            (name_of(s.first), ending_name(s.ending), error, s.malformed),
            (
                expect["progress"].as_str().unwrap(),
                expect["ending"].as_str().unwrap(),
                expect["error"].as_str().unwrap(),
                expect["malformed"].as_bool().unwrap()
            ),
            "{}",
            t.name
        );
    }
}

#[test]
fn every_transcript_settles_as_documented() {
    for t in corpus().iter().filter(|t| t.expect.is_some()) {
        let step = settle(&readings(&t.body, 5), t.cut);
        let got = match step {
            Step::Fail(_) => "fail",
            Step::Cut { counted: true, .. } => "cut",
            Step::End(Settled::Success) => "success",
            Step::End(Settled::Ignored) => "ignored",
            other => panic!("{}: {other:?}", t.name),
        };
        assert_eq!(Some(got), t.documented.as_deref(), "{}: {step:?}", t.name);
    }
}

#[test]
fn before_the_first_word_each_trouble_fails_the_attempt_with_its_cause() {
    let all = corpus();
    let find = |n: &str| {
        all.iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let step = |n: &str| {
        let t = find(n);
        settle(&readings(&t.body, 9), t.cut)
    };
    assert!(matches!(
        step("anthropicMalformedBeforeContent"),
        Step::Fail(Stop::Malformed)
    ));
    assert!(matches!(
        step("anthropicResetBeforeContent"),
        Step::Fail(Stop::Broken)
    ));
    match step("anthropicOverloadedBeforeText") {
        Step::Fail(Stop::Error(Some(f))) => assert_eq!(f.status, 529),
        other => panic!("{other:?}"),
    }
    match step("openaiChatEmptyRoleChunk") {
        Step::Fail(Stop::Error(Some(_))) => {}
        other => panic!("the empty role chunk began the answer: {other:?}"),
    }
    assert!(matches!(
        step("openaiChatOpenRouterKeepAliveOnly"),
        Step::Fail(Stop::Empty)
    ));
}

#[test]
fn search_results_between_pauses_keep_the_idle_limit_from_running_out() {
    // anthropicWebSearch pauses 400 ms before and after its result block: with a 600 ms idle
    // limit the stream stands only if the result block counts as the model working.
    let all = llm::corpus();
    let t = all
        .iter()
        .find(|t| t["name"] == "anthropicWebSearch")
        .expect("in the corpus");
    let events = &t["events"];
    let limits = StreamLimits {
        idle_ms: Some(600),
        ..StreamLimits::default()
    };
    let mut w = Watch::new(limits, 0);
    let mut now = 0;
    let mut last = Step::Hold;
    for e in events.as_array().unwrap() {
        if let Some(ms) = e.get("delayMs").and_then(|d| d.as_u64()) {
            now += ms;
            assert_eq!(w.tick(now), None, "cut at {now} ms");
            continue;
        }
        now += 5;
        let data = e["data"].as_str().unwrap();
        let name = e.get("event").and_then(|n| n.as_str()).unwrap_or("");
        last = w.item(now, &Reading::event(name.as_bytes(), data.as_bytes()));
    }
    assert_eq!(
        w.end(now),
        Step::End(Settled::Success),
        "last step {last:?}"
    );
}
