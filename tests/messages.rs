//! The shared protocol's messages as the core writes them, every field and every value of every
//! code present, in tests/conformance/messages.json: the JavaScript package's types of these
//! messages are checked against that file (tests/js/wire-types.test.mjs), so they cannot drift
//! from the core. The messages are struct literals: a field added to a message type does not
//! compile here until it is written down, and the file then differs until it is regenerated
//! (`BREAKWATER_BLESS=1 cargo test --features json --test messages`).
#![cfg(feature = "json")]

use breakwater::shared::json;
use breakwater::shared::protocol::{Lease, WirePermit, WireReason, WireRejected};
use breakwater::shared::{
    Batch, Counts, Exchange, ExchangeReply, ProbeReport, Refusal, WireOutcome,
};
use breakwater::{Mode, State};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/conformance/messages.json"
);

/// Every value of a code, by an exhaustive match: a new variant does not compile until listed.
fn outcomes() -> Vec<WireOutcome> {
    let all = vec![
        WireOutcome::Success,
        WireOutcome::Failure,
        WireOutcome::Ignored,
    ];
    for o in &all {
        match o {
            WireOutcome::Success | WireOutcome::Failure | WireOutcome::Ignored => {}
        }
    }
    all
}

fn reasons() -> Vec<WireReason> {
    let all = vec![
        WireReason::Open,
        WireReason::HalfOpenFull,
        WireReason::Isolated,
        WireReason::Throttled,
        WireReason::Full,
    ];
    for r in &all {
        match r {
            WireReason::Open
            | WireReason::HalfOpenFull
            | WireReason::Isolated
            | WireReason::Throttled
            | WireReason::Full => {}
        }
    }
    all
}

fn states() -> Vec<State> {
    let all = vec![State::Closed, State::Open, State::HalfOpen];
    for s in &all {
        match s {
            State::Closed | State::Open | State::HalfOpen => {}
        }
    }
    all
}

fn modes() -> Vec<Mode> {
    let all = vec![Mode::Automatic, Mode::Isolated, Mode::Disabled];
    for m in &all {
        match m {
            Mode::Automatic | Mode::Isolated | Mode::Disabled => {}
        }
    }
    all
}

/// Requests: every field set (counts of each kind, a probe of each outcome), and the least one.
fn exchanges() -> Vec<Exchange> {
    let probes = outcomes()
        .into_iter()
        .enumerate()
        .map(|(i, outcome)| ProbeReport {
            generation: 3,
            id: i as u32,
            issued_at: 1_800_000_000_000,
            outcome,
        })
        .collect();
    vec![
        Exchange {
            client: "app-1".into(),
            session: 4_242,
            batches: vec![Batch {
                seq: 7,
                counts: vec![
                    Counts {
                        generation: Some(3),
                        successes: 10,
                        failures: 2,
                        ignored: 1,
                        throttled: 4,
                    },
                    Counts {
                        generation: None,
                        successes: 1,
                        failures: 0,
                        ignored: 0,
                        throttled: 0,
                    },
                ],
                probes,
            }],
        },
        Exchange {
            client: "app-2".into(),
            session: 1,
            batches: vec![],
        },
    ]
}

/// Answers: every state and mode on a lease, the fleet's throttle, a permit of each kind, a
/// refusal of each reason, acknowledged and refused batches (one numbered too far).
fn replies() -> Vec<ExchangeReply> {
    let lease = |state, mode, throttle_ppm| Lease {
        state,
        mode,
        generation: 3,
        lease_ms: 1_000,
        retry_after_ms: if state == State::Closed { 0 } else { 30_000 },
        now: 1_800_000_000_000,
        throttle_ppm,
    };
    let mut out = Vec::new();
    for (i, state) in states().into_iter().enumerate() {
        for mode in modes() {
            out.push(ExchangeReply {
                lease: lease(state, mode, if i == 0 { 250_000 } else { 0 }),
                permit: None,
                rejected: None,
                acked: vec![],
                refused: vec![],
            });
        }
    }
    for probe in [Some(1), None] {
        out.push(ExchangeReply {
            lease: lease(State::HalfOpen, Mode::Automatic, 0),
            permit: Some(WirePermit {
                generation: 3,
                probe,
                issued_at: 1_800_000_000_000,
            }),
            rejected: None,
            acked: vec![],
            refused: vec![],
        });
    }
    for reason in reasons() {
        out.push(ExchangeReply {
            lease: lease(State::Open, Mode::Automatic, 0),
            permit: None,
            rejected: Some(WireRejected {
                reason,
                retry_after_ms: 1_500,
            }),
            acked: vec![],
            refused: vec![],
        });
    }
    out.push(ExchangeReply {
        lease: lease(State::Closed, Mode::Automatic, 0),
        permit: None,
        rejected: None,
        acked: vec![5, 6],
        refused: vec![
            Refusal {
                seq: 9,
                reason: "numbered too far past the session's last batch".into(),
                last_applied: Some(6),
            },
            Refusal {
                seq: 10,
                reason: "more outcomes than a batch may carry".into(),
                last_applied: None,
            },
        ],
    });
    out
}

/// The file's text: the messages as the core writes them (`json::to_string`), one per line.
fn render() -> String {
    let list = |items: Vec<String>| {
        let body: Vec<String> = items
            .iter()
            .map(|s| format!("    {}", json_string(s)))
            .collect();
        format!("[\n{}\n  ]", body.join(",\n"))
    };
    let exchanges = exchanges().iter().map(json::to_string).collect();
    let replies = replies().iter().map(json::to_string).collect();
    format!(
        "{{\n  \"//\": {},\n  \"exchanges\": {},\n  \"replies\": {}\n}}\n",
        json_string(
            "The shared protocol's messages as the core writes them (tests/messages.rs): every \
             field and every value of every code. tests/js/wire-types.test.mjs checks the \
             package's TypeScript types of them against these texts."
        ),
        list(exchanges),
        list(replies)
    )
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[test]
fn the_conformance_file_holds_the_messages_the_core_writes() {
    let text = render();
    if std::env::var_os("BREAKWATER_BLESS").is_some() {
        std::fs::write(FILE, &text).unwrap();
    }
    let stored = std::fs::read_to_string(FILE).unwrap_or_default();
    assert!(
        stored == text,
        "tests/conformance/messages.json is not what the core writes now; regenerate it with \
         BREAKWATER_BLESS=1 cargo test --features json --test messages, then check the \
         TypeScript types (tests/js/wire-types.test.mjs)"
    );
    // And the core reads every one back to the same message.
    for (e, text) in exchanges()
        .iter()
        .zip(exchanges().iter().map(json::to_string))
    {
        assert_eq!(&json::from_str::<Exchange>(&text).unwrap(), e);
    }
    for (r, text) in replies().iter().zip(replies().iter().map(json::to_string)) {
        assert_eq!(&json::from_str::<ExchangeReply>(&text).unwrap(), r);
    }
}
