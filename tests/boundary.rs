//! The numeric boundary the npm package is built on (`src/wasm/`, feature `wasm`): numbers in,
//! numbers out, handles into one table, arrays through one scratch buffer, never a trap. It runs
//! only on wasm32, under Node and headless Chromium (`wasm-pack test`, see scripts/test-js.sh).
//! The core's behaviours behind it are tested in tests/breaker.rs, tests/retry.rs and
//! tests/snapshot.rs, which run natively too.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::wasm::layout::{cfg as c, info as i, refusal, reject, retry as r};
use breakwater::wasm::{
    acquire, breaker, budget_new, budget_op, classify, decide, info, io, peek, read_text, release,
    report, retry, snapshot,
};

const NOW: f64 = 1_700_000_000_000.0;

/// Writes `data` into the scratch buffer, as the TypeScript layer does; returns its length.
fn put(data: &[f64]) -> u32 {
    let p = io(data.len() as u32);
    // SAFETY: `io` made the buffer at least `data.len()` numbers long.
    unsafe { core::slice::from_raw_parts_mut(p, data.len()) }.copy_from_slice(data);
    data.len() as u32
}

/// `len` numbers of the scratch buffer from `p`.
fn get(p: *const f64, len: usize) -> Vec<f64> {
    // SAFETY: the boundary wrote at least `len` numbers there.
    unsafe { core::slice::from_raw_parts(p, len) }.to_vec()
}

/// A consecutive-failures configuration with this threshold.
fn cfg(threshold: f64) -> Vec<f64> {
    let mut v = vec![0.0; c::LEN];
    v[c::THRESHOLD] = threshold;
    v[c::OPEN_DURATION] = 30_000.0;
    v[c::OPEN_BACKOFF] = 1.0;
    v[c::MAX_OPEN_DURATION] = 300_000.0;
    v[c::PROBES] = 1.0;
    v[c::PROBE_SUCCESSES] = 1.0;
    v[c::PROBE_TIMEOUT] = 30_000.0;
    v[c::SEED] = 7.0;
    v
}

fn new_breaker(cfg: &[f64]) -> u32 {
    let h = breaker(put(cfg));
    assert!(h > 0, "refused: {h}");
    h as u32
}

fn state(h: u32, now: f64) -> f64 {
    get(info(h, now), i::LEN)[i::STATE]
}

fn snapshot_of(h: u32) -> Vec<f64> {
    let n = snapshot(h);
    get(io(n), n as usize)
}

#[test]
fn permits_are_numbers_and_transitions_are_codes() {
    let b = new_breaker(&cfg(2.0));
    let h = acquire(b, NOW);
    assert!(h >= 0.0);
    assert_eq!(report(b, NOW, NOW, h, 1), 0);
    let h = acquire(b, NOW);
    assert_eq!(report(b, NOW, NOW, h, 1), 1 + 1, "CLOSED → OPEN");
    assert_eq!(state(b, NOW), 1.0);
    // Rejected: -(retry_after_ms × 8 + reason), reason 0 = open.
    assert_eq!(reject::SCALE, 8);
    assert_eq!(acquire(b, NOW + 1_000.0), -(29_000.0 * 8.0));
    assert_eq!(peek(b, NOW + 1_000.0), -(29_000.0 * 8.0));
    let probe = acquire(b, NOW + 30_000.0);
    assert!(probe >= 2.0);
    assert_eq!(
        get(info(b, NOW + 30_000.0), i::LEN)[i::TRANSITION],
        1.0 + 3.0 + 2.0,
        "OPEN → HALF_OPEN"
    );
    let full = acquire(b, NOW + 30_000.0);
    assert_eq!(-full % 8.0, reject::HALF_OPEN_FULL as f64, "half-open full");
    assert_eq!(
        report(b, NOW + 30_001.0, NOW + 30_000.0, probe, 0),
        1 + 6,
        "HALF_OPEN → CLOSED"
    );
    release(b);
}

#[test]
fn info_says_what_the_closed_fast_path_may_skip() {
    use breakwater::wasm::layout::{fast, trip, window_kind};
    let consecutive = new_breaker(&cfg(2.0));
    let mut window = cfg(2.0);
    window[c::TRIP] = trip::FAILURES_IN_WINDOW as f64;
    window[c::WINDOW_MS] = 60_000.0;
    let mut rate = cfg(50.0);
    rate[c::TRIP] = trip::FAILURE_RATE as f64;
    rate[c::MINIMUM_CALLS] = 10.0;
    rate[c::WINDOW_SIZE] = 100.0;
    let mut slow = rate.clone();
    slow[c::TRIP] = trip::SLOW_CALL_RATE as f64;
    slow[c::WINDOW_MS] = 500.0;
    slow[c::WINDOW_KIND] = window_kind::MILLIS as f64;
    slow[c::WINDOW_SIZE] = 60_000.0;
    for (b, bits) in [
        (consecutive, fast::ADMIT),
        (new_breaker(&window), fast::ADMIT),
        (new_breaker(&rate), fast::ADMIT),
        (new_breaker(&slow), fast::ADMIT | fast::TIMED),
    ] {
        assert_eq!(get(info(b, NOW), i::LEN)[i::FAST], bits as f64);
        release(b);
    }
    // A handle that names no breaker: refused as isolated, with no wait.
    assert_eq!(acquire(consecutive, NOW), reject::NO_BREAKER as f64);
    assert_eq!(peek(consecutive, NOW), reject::NO_BREAKER as f64);
}

#[test]
fn garbage_permits_and_outcomes_are_ignored() {
    let b = new_breaker(&cfg(1.0));
    for h in [f64::NAN, -2.0, -0.5, f64::INFINITY, 9.1e15, 123_456_789.0] {
        assert_eq!(report(b, NOW, NOW, h, 1), 0);
    }
    assert_eq!(state(b, NOW), 0.0);
    let h = acquire(b, NOW);
    assert_eq!(
        report(b, NOW, NOW, h, 99),
        0,
        "unknown outcome codes count as ignored"
    );
    assert_eq!(state(b, NOW), 0.0);
    release(b);
}

#[test]
fn handles_that_name_no_breaker_get_empty_answers() {
    let b = new_breaker(&cfg(1.0));
    let budget = {
        put(&[10_000.0, 10.0, 20.0]);
        budget_new()
    };
    assert!(budget > 0);
    // 0, a handle of another kind, one never issued, one released: no trap, no effect.
    release(b);
    for h in [0, budget as u32, u32::MAX, 1_000_000, b] {
        assert!(acquire(h, NOW) < 0.0, "handle {h}");
        assert_eq!(report(h, NOW, NOW, 0.0, 1), 0);
        assert_eq!(snapshot(h), 0);
        release(h);
    }
    assert_eq!(budget_op(b, NOW, 2), 0.0, "a breaker's handle is no budget");
    // The released handle is reused, and the budget released above along with the rest.
    let again = new_breaker(&cfg(1.0));
    assert!(again == b || again == budget as u32);
    release(again);
}

#[test]
fn a_permit_of_minus_one_reports_without_a_permit() {
    let b = new_breaker(&cfg(2.0));
    assert_eq!(report(b, NOW, 0.0, -1.0, 1), 0);
    assert_eq!(report(b, NOW, 0.0, -1.0, 1), 1 + 1, "CLOSED → OPEN");
    let probe = acquire(b, NOW + 30_000.0);
    assert!(probe >= 2.0);
    assert_eq!(
        report(b, NOW + 30_000.0, 0.0, -1.0, 0),
        1 + 6,
        "the probe's success closes"
    );
    release(b);
}

#[test]
fn bad_configuration_is_refused_with_a_code_not_a_trap() {
    let mut bad = cfg(1.0);
    bad[c::OPEN_JITTER] = 2.0;
    assert_eq!(breaker(put(&bad)), -(refusal::CONFIG as i32));
    assert_eq!(breaker(put(&[f64::NAN; c::LEN])), -(refusal::CONFIG as i32));
    // A length shorter than a configuration reads what the buffer holds; longer than the
    // buffer is cut to it: never out of bounds.
    put(&cfg(1.0));
    let h = breaker(0);
    assert!(h > 0);
    release(h as u32);
    // Whatever the buffer holds after the configuration is read as a snapshot: refused or not,
    // no trap.
    let h = breaker(u32::MAX);
    if h > 0 {
        release(h as u32);
    }
    assert_eq!(retry(put(&[0.0; r::LEN])), -(refusal::CONFIG as i32));
    put(&[1.0, 0.0, 20.0]);
    assert_eq!(budget_new(), -(refusal::CONFIG as i32));
}

#[test]
fn snapshots_round_trip_as_numbers_and_garbage_never_traps() {
    let b = new_breaker(&cfg(1.0));
    let h = acquire(b, NOW);
    let _ = report(b, NOW, NOW, h, 1);
    let data = snapshot_of(b);
    let with = |d: &[f64]| [cfg(1.0).as_slice(), d].concat();
    let r = breaker(put(&with(&data)));
    assert!(r > 0);
    let got = get(info(r as u32, NOW), i::LEN);
    assert_eq!(got[i::STATE], 1.0);
    assert_eq!(got[i::OPEN_UNTIL], NOW + 30_000.0, "open until");
    release(r as u32);
    // Every truncation is refused, and every single corrupted number is refused or accepted;
    // never a trap.
    for n in 1..data.len() {
        let code = breaker(put(&with(&data[..n])));
        assert_eq!(code, -(refusal::MALFORMED as i32), "truncated at {n}");
    }
    let mut version = data.clone();
    version[0] = 99.0;
    assert_eq!(breaker(put(&with(&version))), -(refusal::VERSION as i32));
    let mut other = cfg(1.0);
    other[c::TRIP] = 2.0;
    other[c::THRESHOLD] = 50.0;
    other[c::MINIMUM_CALLS] = 10.0;
    other[c::WINDOW_SIZE] = 100.0;
    assert_eq!(
        breaker(put(&[other.as_slice(), &data].concat())),
        -(refusal::MISMATCH as i32),
        "a consecutive-failures snapshot under a failure-rate rule"
    );
    for k in 0..data.len() {
        for bad in [-1.0, 0.5, f64::NAN, 1e300, 4_294_967_296.0, 3.0] {
            let mut d = data.clone();
            d[k] = bad;
            let h = breaker(put(&with(&d)));
            if h > 0 {
                release(h as u32);
            }
        }
    }
    release(b);
}

#[test]
fn retry_decisions_and_classification_are_numbers() {
    let mut p = vec![0.0; r::LEN];
    p[r::MAX_ATTEMPTS] = 4.0;
    p[r::BASE_DELAY] = 1_000.0;
    p[r::FACTOR] = 2.0;
    p[r::MAX_DELAY] = 16_000.0;
    p[r::DEADLINE] = -1.0;
    p[r::MAX_RETRY_AFTER] = 60_000.0;
    let h = retry(put(&p)) as u32;
    assert!(h > 0);
    assert_eq!(decide(h, NOW, NOW, 1, 0.0, true, -1.0, 0.5), 1_000.0);
    assert_eq!(decide(h, NOW, NOW, 2, 1_000.0, true, 5_000.0, 0.5), 5_000.0);
    assert_eq!(decide(h, NOW, NOW, 4, 0.0, true, -1.0, 0.5), -2.0);
    assert_eq!(decide(h, NOW, NOW, 1, 0.0, false, -1.0, 0.5), -1.0);
    assert_eq!(decide(h, NOW, NOW, 1, 0.0, true, 3_600_000.0, 0.5), -4.0);
    // Handle 0: the core's default classifier.
    for k in [h, 0] {
        let v = classify(k, 529, 0, 0);
        assert_eq!((v & 15, v >> 4 & 1, v >> 5), (3, 1, 1));
        let v = classify(k, 429, 1, 0);
        assert_eq!((v & 15, v >> 4 & 1, v >> 5), (4, 0, 1));
        let v = classify(k, 0, 0, 4);
        assert_eq!((v & 15, v >> 5), (9, 2));
    }
    release(h);
    p[r::USE_RETRYABLE] = 1.0;
    let only_418 = retry(put(&[p.as_slice(), &[418.0]].concat())) as u32;
    assert_eq!(classify(only_418, 418, 0, 0) >> 4 & 1, 1);
    assert_eq!(classify(only_418, 503, 0, 0) >> 4 & 1, 0);
    release(only_418);
}

/// Writes `text` into the scratch buffer one char code a number, as js/src/classify.ts does.
fn put_text(text: &str) -> u32 {
    put(&text.bytes().map(f64::from).collect::<Vec<_>>())
}

#[test]
fn strings_are_read_as_numbers_and_garbage_never_traps() {
    // 0: codes, a byte 1, texts → `Code::index | status << 8`.
    assert_eq!(
        read_text(put_text("overloaded_error\n\u{1}"), 0),
        2 | 529 << 8
    );
    assert_eq!(
        read_text(
            put_text("invalid_request_error\n\u{1}Your credit balance is too low"),
            0
        ),
        1 | 429 << 8
    );
    assert_eq!(read_text(put_text("\u{1}"), 0), 0);
    // Otherwise a finish reason: 0 complete … 4 unknown.
    assert_eq!(read_text(put_text("end_turn"), 1), 0);
    assert_eq!(read_text(put_text("content-filter"), 1), 2);
    assert_eq!(read_text(put_text("other"), 1), 4);
    // Lengths past the buffer, nothing written, numbers that are no bytes: answers, not traps.
    assert_eq!(read_text(0, 0), 0);
    assert_eq!(read_text(u32::MAX, 1), 4);
    put(&[f64::NAN, -1.0, 1e300, 300.0]);
    assert!(read_text(4, 0) < 1 << 16);
    let long = "x".repeat(10_000);
    assert_eq!(read_text(put_text(&long), 1), 4);
    // A 1 (for `classify`) is the code `read_text` calls 1: a spent quota.
    let v = classify(0, 429, 1, 0);
    assert_eq!(v & 15, 4);
}
