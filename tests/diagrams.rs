//! The README's pictures stay true to the core: the state diagram's edges are exactly the
//! transitions a breaker makes when driven through a trip, a failed probe and a recovery, and
//! each refusal the table under it names is one the core gives, with the `retryAfterMs` it says.

use std::collections::BTreeSet;

use breakwater::{Breaker, BreakerConfig, Outcome, RejectReason, State, Timestamp, TripRule};

const README: &str = include_str!("../README.md");

/// The `from --> to` edges of the README's ```mermaid `stateDiagram-v2` block (`[*]` left out).
fn diagram_edges() -> BTreeSet<(String, String)> {
    let start = README
        .find("```mermaid\nstateDiagram-v2")
        .expect("README.md has a mermaid state diagram");
    let block = &README[start..];
    let end = block[3..].find("```").expect("the diagram's block ends") + 3;
    block[..end]
        .lines()
        .filter_map(|line| {
            let (from, rest) = line.trim().split_once("-->")?;
            let to = rest.split(':').next()?.trim();
            let from = from.trim();
            (from != "[*]").then(|| (from.to_string(), to.to_string()))
        })
        .collect()
}

fn name(s: State) -> String {
    s.as_str().to_string()
}

/// Every transition a breaker makes through a trip, a failed probe and a recovery.
fn observed_edges() -> BTreeSet<(String, String)> {
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 2 })
        .with_open_duration_ms(1_000);
    let mut b = Breaker::new(config).expect("a valid configuration");
    let mut seen = BTreeSet::new();
    let mut now = 1_700_000_000_000;
    let step = |b: &mut Breaker, now: u64, outcome: Outcome| {
        let admission = b.acquire(Timestamp(now));
        let mut out = Vec::new();
        out.extend(admission.transition);
        let permit = admission.result.expect("admitted");
        out.extend(b.report(Timestamp(now), permit, outcome));
        out
    };
    let script = [
        (0, Outcome::Failure),
        (1, Outcome::Failure),     // trips
        (2_000, Outcome::Failure), // the first probe fails
        (4_000, Outcome::Success), // the next closes
    ];
    for (at, outcome) in script {
        now += at;
        for t in step(&mut b, now, outcome) {
            seen.insert((name(t.from), name(t.to)));
        }
    }
    assert_eq!(b.state(), State::Closed);
    seen
}

#[test]
fn the_state_diagram_draws_every_transition_and_no_other() {
    let drawn = diagram_edges();
    assert!(!drawn.is_empty(), "no edges read from the diagram");
    assert_eq!(drawn, observed_edges());
}

#[test]
fn the_table_names_the_refusals_the_core_gives() {
    let at = README
        .find("| state | a call | a refusal's `retryAfterMs` |")
        .expect("README.md has the table of states");
    let table: &str = README[at..].split("\n\n").next().unwrap_or_default();
    // OPEN: 'open', with the time left in the open period.
    let config = BreakerConfig::new()
        .with_trip(TripRule::ConsecutiveFailures { threshold: 1 })
        .with_open_duration_ms(10_000);
    let mut b = Breaker::new(config).expect("valid");
    let t0 = 1_700_000_000_000;
    let p = b.acquire(Timestamp(t0)).result.expect("admitted");
    b.report(Timestamp(t0), p, Outcome::Failure);
    let r = b.acquire(Timestamp(t0 + 4_000)).result.unwrap_err();
    assert_eq!((r.reason, r.retry_after_ms), (RejectReason::Open, 6_000));
    assert!(
        table.contains("`reason: 'open'`") && table.contains("the time left in the open period")
    );
    // HALF_OPEN with its probe out: 'half-open-full', until the probe's slot frees.
    let _probe = b.acquire(Timestamp(t0 + 10_000)).result.expect("the probe");
    let r = b.acquire(Timestamp(t0 + 10_500)).result.unwrap_err();
    assert_eq!(r.reason, RejectReason::HalfOpenFull);
    assert!(r.retry_after_ms <= BreakerConfig::new().probe_timeout_ms);
    assert!(table.contains("`'half-open-full'`") && table.contains("at most `probeTimeoutMs`"));
    // Isolated: 'isolated', for the open period.
    b.isolate(Timestamp(t0 + 11_000));
    let r = b.acquire(Timestamp(t0 + 11_000)).result.unwrap_err();
    assert_eq!(
        (r.reason, r.retry_after_ms),
        (RejectReason::Isolated, 10_000)
    );
    assert!(table.contains("`'isolated'`") && table.contains("| `resetTimeout` |"));
}

/// The README's lease sequence: every request an isolate sends is one of the breaker service's
/// operations (`/v1/<op>`), and every answer is a lease in one of the core's states, or a permit.
#[test]
fn the_lease_sequence_sends_only_the_protocol_s_operations() {
    use breakwater::shared::routes::Route;
    let start = README
        .find("```mermaid\nsequenceDiagram")
        .expect("README.md has a mermaid sequence diagram");
    let block = &README[start..];
    let end = block[3..].find("```").expect("the diagram's block ends") + 3;
    let states = [State::Closed, State::Open, State::HalfOpen].map(State::as_str);
    let (mut asked, mut answered) = (0, 0);
    for line in block[..end].lines().map(str::trim) {
        if let Some((_, message)) = line.split_once("-->>") {
            let (_, text) = message.split_once(':').expect("an answer has a text");
            let text = text.trim();
            let named = states
                .iter()
                .any(|s| text.starts_with(&format!("lease: {s}")));
            assert!(named || text.starts_with("permit"), "answer {text:?}");
            answered += 1;
        } else if let Some((_, message)) = line.split_once("->>") {
            let (_, text) = message.split_once(':').expect("a request has a text");
            let op = text.split_whitespace().next().unwrap_or_default();
            let op = op.trim_end_matches(':');
            let path = format!("/v1/{op}");
            assert!(
                matches!(Route::of(&path), Route::Service(_)),
                "request {text:?}: {path} is not an operation of the protocol"
            );
            asked += 1;
        }
    }
    assert!(
        asked > 0 && asked == answered,
        "{asked} requests, {answered} answers"
    );
}
