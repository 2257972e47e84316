//! The numeric boundary the npm package is built on (`src/wasm/`, feature `wasm`): numbers in,
//! numbers out, never a trap. It creates JavaScript values, so it runs only on wasm32, under Node
//! and headless Chromium (`wasm-pack test`, see scripts/test-js.sh). The core's behaviours behind
//! it are tested in tests/breaker.rs, tests/retry.rs and tests/snapshot.rs, which run natively too.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::wasm::{check, WasmBreaker, WasmBudget, WasmRetry};

const NOW: f64 = 1_700_000_000_000.0;

/// trip, threshold, window, min calls, window kind, size, open, jitter, factor, max open,
/// probes, successes, probe timeout, seed.
fn cfg(threshold: f64) -> Vec<f64> {
    vec![
        0.0, threshold, 0.0, 0.0, 0.0, 0.0, 30_000.0, 0.0, 1.0, 300_000.0, 1.0, 1.0, 30_000.0, 7.0,
    ]
}

fn state(b: &WasmBreaker) -> f64 {
    b.info(NOW)[0]
}

#[test]
fn permits_are_numbers_and_transitions_are_codes() {
    let mut b = WasmBreaker::create(&cfg(2.0)).unwrap();
    let h = b.acquire(NOW);
    assert!(h >= 0.0);
    assert_eq!(b.report(NOW, NOW, h, 1), 0);
    let h = b.acquire(NOW);
    assert_eq!(b.report(NOW, NOW, h, 1), 1 + 1, "CLOSED → OPEN");
    assert_eq!(state(&b), 1.0);
    // Rejected: -(retry_after_ms × 4 + reason), reason 0 = open.
    assert_eq!(b.acquire(NOW + 1_000.0), -(29_000.0 * 4.0));
    let probe = b.acquire(NOW + 30_000.0);
    assert!(probe >= 2.0);
    assert_eq!(
        b.info(NOW + 30_000.0)[12],
        1.0 + 3.0 + 2.0,
        "OPEN → HALF_OPEN"
    );
    let full = b.acquire(NOW + 30_000.0);
    assert_eq!(-full % 4.0, 1.0, "half-open full");
    assert_eq!(
        b.report(NOW + 30_001.0, NOW + 30_000.0, probe, 0),
        1 + 6,
        "HALF_OPEN → CLOSED"
    );
}

#[test]
fn garbage_handles_and_outcomes_are_ignored() {
    let mut b = WasmBreaker::create(&cfg(1.0)).unwrap();
    for h in [f64::NAN, -2.0, -0.5, f64::INFINITY, 9.1e15, 123_456_789.0] {
        assert_eq!(b.report(NOW, NOW, h, 1), 0);
    }
    assert_eq!(state(&b), 0.0);
    let h = b.acquire(NOW);
    assert_eq!(
        b.report(NOW, NOW, h, 99),
        0,
        "unknown outcome codes count as ignored"
    );
    assert_eq!(state(&b), 0.0);
}

#[test]
fn a_handle_of_minus_one_reports_without_a_permit() {
    let mut b = WasmBreaker::create(&cfg(2.0)).unwrap();
    assert_eq!(b.report(NOW, 0.0, -1.0, 1), 0);
    assert_eq!(b.report(NOW, 0.0, -1.0, 1), 1 + 1, "CLOSED → OPEN");
    let probe = b.acquire(NOW + 30_000.0);
    assert!(probe >= 2.0);
    assert_eq!(
        b.report(NOW + 30_000.0, 0.0, -1.0, 0),
        1 + 6,
        "the probe's success closes"
    );
}

#[test]
fn bad_configuration_is_refused_and_explained_not_a_trap() {
    let mut c = cfg(1.0);
    c[7] = 2.0;
    assert!(WasmBreaker::create(&c).is_none());
    assert_eq!(check(0, &c, &[]), "open_jitter|a fraction in [0, 1)");
    assert_eq!(check(0, &cfg(1.0), &[]), "");
    assert!(WasmBreaker::create(&[]).is_none());
    assert!(WasmBreaker::create(&[f64::NAN; 14]).is_none());
    assert!(WasmRetry::create(&[0.0], false, &[]).is_none());
    assert!(check(2, &[0.0], &[]).starts_with("max_attempts|"));
    assert!(WasmBudget::create(&[1.0, 0.0, 20.0]).is_none());
    assert!(check(3, &[1.0, 0.0, 20.0], &[]).starts_with("budget.ttl_ms|"));
}

#[test]
fn snapshots_round_trip_as_numbers_and_garbage_never_panics() {
    let mut b = WasmBreaker::create(&cfg(1.0)).unwrap();
    let h = b.acquire(NOW);
    let _ = b.report(NOW, NOW, h, 1);
    let data = b.snapshot();
    let r = WasmBreaker::restore(&cfg(1.0), &data).unwrap();
    assert_eq!(r.info(NOW)[0], 1.0);
    assert_eq!(r.info(NOW)[2], NOW + 30_000.0, "open until");
    assert_eq!(check(1, &cfg(1.0), &data), "");
    // Every truncation is refused, and every single corrupted number is refused or
    // accepted; never a trap.
    for n in 0..data.len() {
        assert!(WasmBreaker::restore(&cfg(1.0), &data[..n]).is_none());
        assert!(check(1, &cfg(1.0), &data[..n]).starts_with("snapshot|"));
    }
    for i in 0..data.len() {
        for bad in [-1.0, 0.5, f64::NAN, 1e300, 4_294_967_296.0, 3.0] {
            let mut d = data.clone();
            d[i] = bad;
            let _ = WasmBreaker::restore(&cfg(1.0), &d);
        }
    }
}

#[test]
fn retry_decisions_and_classification_are_numbers() {
    let r = WasmRetry::create(
        &[4.0, 1_000.0, 2.0, 16_000.0, -1.0, 0.0, 0.0, 60_000.0, 1.0],
        false,
        &[],
    )
    .unwrap();
    assert_eq!(r.decide(NOW, NOW, 1, 0.0, true, -1.0, 0.5), 1_000.0);
    assert_eq!(r.decide(NOW, NOW, 2, 1_000.0, true, 5_000.0, 0.5), 5_000.0);
    assert_eq!(r.decide(NOW, NOW, 4, 0.0, true, -1.0, 0.5), -2.0);
    assert_eq!(r.decide(NOW, NOW, 1, 0.0, false, -1.0, 0.5), -1.0);
    assert_eq!(r.decide(NOW, NOW, 1, 0.0, true, 3_600_000.0, 0.5), -4.0);
    let v = r.classify(529, 0, 0);
    assert_eq!((v & 15, v >> 4 & 1, v >> 5), (3, 1, 1));
    let v = r.classify(429, 1, 0);
    assert_eq!((v & 15, v >> 4 & 1, v >> 5), (4, 0, 1));
    let v = r.classify(0, 0, 4);
    assert_eq!((v & 15, v >> 5), (9, 2));
    let only_418 = WasmRetry::create(
        &[4.0, 1_000.0, 2.0, 16_000.0, -1.0, 1.0, 0.0, 60_000.0, 1.0],
        true,
        &[418.0],
    )
    .unwrap();
    assert_eq!(only_418.classify(418, 0, 0) >> 4 & 1, 1);
    assert_eq!(only_418.classify(503, 0, 0) >> 4 & 1, 0);
}
