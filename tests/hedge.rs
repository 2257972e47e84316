//! The hedging policy's budget, over many calls: hedges never outnumber `budget` × calls, whatever
//! the calls' order, the tiers' calm and the settings; and it recovers: once the budget refills, a
//! slow call is hedged again.

use breakwater::{Hedge, HedgeAfter, HedgeConfig, HEDGE_BURST};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn hedges_never_exceed_the_budget(
        budget in prop_oneof![Just(0.1), Just(0.01), Just(1.0), 0.000_001f64..=1.0],
        // Per call: whether it is slow enough to hedge, and whether its tiers are calm.
        calls in proptest::collection::vec((any::<bool>(), any::<bool>(), 0u8..4), 1..3_000),
    ) {
        let mut h = Hedge::new(HedgeConfig { budget, after: HedgeAfter::Millis(500), ..HedgeConfig::default() }).unwrap();
        let mut n = 0u64;
        for (slow, calm, tries) in calls {
            h.call();
            n += 1;
            if slow {
                // A host asking more than once for one call still gets no more than the budget.
                for _ in 0..=tries {
                    h.try_start(calm);
                }
            }
            let started = h.stats().started;
            prop_assert!(started as f64 <= budget * n as f64 + 1e-9, "{started} hedges after {n} calls at {budget}");
            prop_assert!(h.tokens() <= HEDGE_BURST as f64);
        }
    }
}

#[test]
fn a_partial_outage_hedges_a_tenth_of_the_calls_then_recovers() {
    let mut h = Hedge::new(HedgeConfig {
        after: HedgeAfter::Millis(800),
        ..HedgeConfig::default()
    })
    .unwrap();
    // Every call is slow: only one in ten may be hedged.
    let mut hedged = 0;
    for _ in 0..10_000 {
        h.call();
        hedged += h.try_start(true) as u32;
    }
    assert_eq!(hedged, 1_000);
    assert_eq!(h.stats().refused, 9_000);
    // The outage ends: 200 fast calls fill the bucket to its burst, and slow calls hedge again.
    for _ in 0..200 {
        h.call();
    }
    assert_eq!(h.tokens(), HEDGE_BURST as f64);
    assert!(h.try_start(true));
    // A tier HALF_OPEN or shedding holds the hedge and keeps the token.
    let before = h.tokens();
    assert!(!h.try_start(false));
    assert_eq!(h.tokens(), before);
    assert_eq!(h.stats().held, 1);
}
