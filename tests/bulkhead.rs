//! The bulkhead (a concurrency limit with a bounded FIFO queue) in the core: admission, the
//! line, time-outs, cancels, leases that free what a crashed caller never gave back, and 10 000
//! random operations after which nothing is leaked (liveness: once the calls stop, every slot is
//! free and nobody waits).

use std::collections::HashSet;

use breakwater::bulkhead::{Bulkhead, BulkheadConfig, Entry, Slot, Ticket, Wake};
use breakwater::{Random, RejectReason, SplitMix64, Timestamp};

const T0: u64 = 1_700_000_000_000;

fn admitted(e: Entry) -> Slot {
    match e {
        Entry::Admitted(s) => s,
        other => panic!("expected a slot, got {other:?}"),
    }
}

fn queued(e: Entry) -> Ticket {
    match e {
        Entry::Queued { ticket, .. } => ticket,
        other => panic!("expected a place in line, got {other:?}"),
    }
}

#[test]
fn slots_then_the_line_then_refusals() {
    let mut b = Bulkhead::new(BulkheadConfig::new(2).with_queue(2, 5_000)).unwrap();
    let t = Timestamp(T0);
    let s1 = admitted(b.enter(t));
    let _s2 = admitted(b.enter(t));
    let q1 = queued(b.enter(t));
    let q2 = queued(b.enter(t));
    match b.enter(t) {
        Entry::Full(r) => {
            assert_eq!(r.reason, RejectReason::Full);
            assert!(r.retry_after_ms >= 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((b.in_flight(), b.queued()), (2, 2));
    // First in, first out; the waiter's slot has its ticket's number.
    assert_eq!(
        b.leave(t, s1),
        Some(Wake::Admitted {
            ticket: q1,
            slot: Slot(q1.0)
        })
    );
    assert_eq!(b.queued(), 1);
    assert!(b.cancel(q2));
    assert!(!b.cancel(q2), "a ticket leaves the line once");
    let s = b.stats();
    assert_eq!((s.admitted, s.queued, s.full, s.cancelled), (3, 2, 1, 1));
}

#[test]
fn no_queue_refuses_at_once_and_a_left_slot_is_free_again() {
    let mut b = Bulkhead::new(BulkheadConfig::new(1)).unwrap();
    let t = Timestamp(T0);
    let s = admitted(b.enter(t));
    assert!(matches!(b.enter(t), Entry::Full(_)));
    assert_eq!(b.leave(t, s), None);
    assert_eq!(b.leave(t, s), None, "leaving twice frees nothing more");
    let s2 = admitted(b.enter(t));
    assert!(matches!(b.enter(t), Entry::Full(_)));
    assert_eq!(b.leave(t, s2), None);
    assert_eq!(b.in_flight(), 0);
}

#[test]
fn a_waiter_times_out_and_is_never_run_late() {
    let mut b = Bulkhead::new(BulkheadConfig::new(1).with_queue(1, 1_000)).unwrap();
    let s = admitted(b.enter(Timestamp(T0)));
    let Entry::Queued { ticket, deadline } = b.enter(Timestamp(T0)) else {
        panic!()
    };
    assert_eq!(deadline, T0 + 1_000);
    assert_eq!(b.next_deadline(), Some(T0 + 1_000));
    assert_eq!(b.poll(Timestamp(T0 + 999)), None);
    // The slot frees after the deadline: the waiter is timed out, not handed it.
    assert_eq!(b.leave(Timestamp(T0 + 1_000), s), None);
    match b.poll(Timestamp(T0 + 1_000)) {
        Some(Wake::TimedOut {
            ticket: t,
            rejected,
        }) => {
            assert_eq!(t, ticket);
            assert_eq!(rejected.reason, RejectReason::Full);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.poll(Timestamp(T0 + 1_000)), None);
    assert_eq!(b.stats().timed_out, 1);
    assert_eq!(b.next_deadline(), None);
}

#[test]
fn a_slot_never_given_back_is_freed_after_its_lease() {
    // A crashed handler never leaves: its slot is freed after `lease_ms`, and a waiter gets it.
    let mut b = Bulkhead::new(
        BulkheadConfig::new(1)
            .with_queue(1, 60_000)
            .with_lease_ms(30_000),
    )
    .unwrap();
    let _lost = admitted(b.enter(Timestamp(T0)));
    let ticket = queued(b.enter(Timestamp(T0 + 1)));
    assert_eq!(b.next_deadline(), Some(T0 + 30_000));
    assert_eq!(b.poll(Timestamp(T0 + 29_999)), None);
    match b.poll(Timestamp(T0 + 30_000)) {
        Some(Wake::Admitted { ticket: t, .. }) => assert_eq!(t, ticket),
        other => panic!("{other:?}"),
    }
    assert_eq!(b.stats().expired, 1);
    assert_eq!(b.in_flight(), 1);
}

#[test]
fn a_newcomer_does_not_jump_the_line() {
    let mut b = Bulkhead::new(
        BulkheadConfig::new(1)
            .with_queue(2, 60_000)
            .with_lease_ms(1_000),
    )
    .unwrap();
    let _lost = admitted(b.enter(Timestamp(T0)));
    let first = queued(b.enter(Timestamp(T0)));
    // The lease runs out; before anyone polls, a newcomer arrives: it queues behind.
    let second = queued(b.enter(Timestamp(T0 + 1_000)));
    assert_eq!(b.next_deadline(), Some(T0 + 1_000), "poll at once");
    match b.poll(Timestamp(T0 + 1_000)) {
        Some(Wake::Admitted { ticket, .. }) => assert_eq!(ticket, first),
        other => panic!("{other:?}"),
    }
    assert!(b.cancel(second));
}

#[test]
fn bad_settings_name_the_field() {
    let cases = [
        (BulkheadConfig::new(0), "max_concurrent", 0.0),
        (BulkheadConfig::new(100_001), "max_concurrent", 100_001.0),
        (
            BulkheadConfig::new(1).with_queue(100_001, 1),
            "max_queued",
            100_001.0,
        ),
        (
            BulkheadConfig::new(1).with_queue(1, 0),
            "queue_timeout_ms",
            0.0,
        ),
        (BulkheadConfig::new(1).with_lease_ms(0), "lease_ms", 0.0),
    ];
    for (config, field, value) in cases {
        let e = Bulkhead::new(config).unwrap_err();
        assert_eq!((e.field, e.value), (field, value));
    }
}

#[test]
fn ten_thousand_random_operations_leak_nothing() {
    for seed in 0..5u64 {
        let (max, max_queued) = (4u32, 3u32);
        let mut b = Bulkhead::new(
            BulkheadConfig::new(max)
                .with_queue(max_queued, 500)
                .with_lease_ms(2_000),
        )
        .unwrap();
        let mut rng = SplitMix64::new(seed);
        let mut now = T0;
        // Each slot held, with when it was given (a slot older than its lease is gone already).
        let mut held: Vec<(Slot, u64)> = Vec::new();
        let mut waiting: HashSet<Ticket> = HashSet::new();
        let wake =
            |w: Wake, now: u64, held: &mut Vec<(Slot, u64)>, waiting: &mut HashSet<Ticket>| match w
            {
                Wake::Admitted { ticket, slot } => {
                    assert!(
                        waiting.remove(&ticket),
                        "woke a ticket that was not waiting"
                    );
                    held.push((slot, now));
                }
                Wake::TimedOut { ticket, .. } => {
                    assert!(
                        waiting.remove(&ticket),
                        "timed out a ticket that was not waiting"
                    );
                }
            };
        for _ in 0..10_000 {
            now += rng.next_u64() % 50;
            let t = Timestamp(now);
            match rng.next_u64() % 5 {
                0 | 1 => match b.enter(t) {
                    Entry::Admitted(s) => held.push((s, now)),
                    Entry::Queued { ticket, .. } => {
                        assert!(waiting.insert(ticket));
                    }
                    Entry::Full(r) => assert_eq!(r.reason, RejectReason::Full),
                },
                2 if !held.is_empty() => {
                    // A call ends, or (one in ten) its caller crashes and never leaves.
                    let i = (rng.next_u64() % held.len() as u64) as usize;
                    let (s, given) = held.swap_remove(i);
                    if rng.next_u64() % 10 != 0 {
                        let before = b.in_flight();
                        let live = now - given < 2_000;
                        match b.leave(t, s) {
                            // Handed on: still as many in flight (fewer if leases ran out;
                            // one more if this slot had run out and another was free).
                            Some(w) => {
                                wake(w, now, &mut held, &mut waiting);
                                assert!(!live || b.in_flight() <= before);
                            }
                            None => assert!(!live || b.in_flight() < before),
                        }
                    }
                }
                3 if !waiting.is_empty() => {
                    let ticket = *waiting.iter().next().unwrap();
                    assert!(b.cancel(ticket));
                    waiting.remove(&ticket);
                }
                _ => {
                    while let Some(w) = b.poll(t) {
                        wake(w, now, &mut held, &mut waiting);
                    }
                }
            }
            assert!(b.in_flight() <= max as usize);
            assert!(b.queued() <= max_queued as usize);
            assert_eq!(b.queued(), waiting.len());
        }
        // Liveness: the calls stop; those still held end; time passes; nothing is left.
        while let Some((s, _)) = held.pop() {
            if let Some(w) = b.leave(Timestamp(now), s) {
                wake(w, now, &mut held, &mut waiting);
            }
        }
        now += 3_000;
        while let Some(w) = b.poll(Timestamp(now)) {
            wake(w, now, &mut held, &mut waiting);
        }
        for (s, _) in held.drain(..) {
            assert_eq!(b.leave(Timestamp(now), s), None);
        }
        now += 3_000;
        assert_eq!(b.poll(Timestamp(now)), None);
        assert_eq!((b.in_flight(), b.queued()), (0, 0), "seed {seed}");
        assert!(waiting.is_empty());
        let s = b.stats();
        assert!(s.expired > 0 && s.timed_out > 0 && s.cancelled > 0, "{s:?}");
        // Every slot ever given was left or expired: a fresh bulkhead's worth of room.
        for _ in 0..max {
            let _ = admitted(b.enter(Timestamp(now)));
        }
    }
}

#[test]
fn a_clock_stepped_back_keeps_leases_and_waits_as_long_as_they_were() {
    // Ten minutes back (an NTP correction): a slot lost by a crashed caller is freed after its
    // lease on the new clock, not ten minutes later; a waiter times out on time. Readings a few
    // seconds behind (skew between readers) are no time passing.
    let mut b = Bulkhead::new(
        BulkheadConfig::new(1)
            .with_queue(1, 5_000)
            .with_lease_ms(30_000),
    )
    .unwrap();
    let _lost = admitted(b.enter(Timestamp(T0)));
    let back = T0 - 600_000;
    let ticket = queued(b.enter(Timestamp(back)));
    assert_eq!(b.poll(Timestamp(back + 4_999)), None);
    match b.poll(Timestamp(back + 5_000)) {
        Some(Wake::TimedOut { ticket: t, .. }) => assert_eq!(t, ticket),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        b.enter(Timestamp(back + 29_999)),
        Entry::Queued { .. } | Entry::Full(_)
    ));
    let _ = b.poll(Timestamp(back + 30_000));
    assert_eq!(b.in_flight(), 1, "the lost slot was freed and given on");
    assert_eq!(b.stats().expired, 1);
    // Skew: 5 s behind is no step.
    let mut c = Bulkhead::new(BulkheadConfig::new(1).with_lease_ms(30_000)).unwrap();
    let _s = admitted(c.enter(Timestamp(T0)));
    assert!(matches!(c.enter(Timestamp(T0 - 5_000)), Entry::Full(_)));
    assert_eq!(c.in_flight(), 1);
}
