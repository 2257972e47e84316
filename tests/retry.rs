//! Behaviour of the retry policy, Retry-After parsing, the budget and classification. Each test
//! body runs natively and compiled to wasm32 under Node and headless Chromium (scripts/test-js.sh).

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use breakwater::Class;
use breakwater::{
    parse_retry_after, parse_retry_after_ms, AttemptFailure, Classifier, GiveUpReason, Jitter,
    Outcome, RetryBudget, RetryDecision, RetryPolicy, Signal, SplitMix64, Timestamp,
};

const NOW: Timestamp = Timestamp(784_111_777_000); // Sun, 06 Nov 1994 08:49:37 GMT

fn retryable() -> AttemptFailure {
    AttemptFailure {
        retryable: true,
        retry_after_ms: None,
    }
}

fn delays(policy: &RetryPolicy, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    let mut state = policy.start(NOW);
    let mut out = Vec::new();
    while let RetryDecision::Retry { delay_ms, .. } =
        policy.decide(&mut state, NOW, retryable(), &mut rng, None)
    {
        out.push(delay_ms);
    }
    out
}

#[test]
fn without_jitter_delays_double_up_to_the_cap() {
    let p = RetryPolicy::new()
        .with_max_attempts(7)
        .with_jitter(Jitter::None)
        .with_base_delay_ms(1_000)
        .with_max_delay_ms(16_000);
    assert_eq!(delays(&p, 1), [1_000, 2_000, 4_000, 8_000, 16_000, 16_000]);
}

#[test]
fn max_attempts_counts_the_first_attempt() {
    let p = RetryPolicy::new().with_max_attempts(4);
    let mut rng = SplitMix64::new(1);
    let mut s = p.start(NOW);
    let mut attempts = vec![s.attempts];
    loop {
        match p.decide(&mut s, NOW, retryable(), &mut rng, None) {
            RetryDecision::Retry { attempt, .. } => attempts.push(attempt),
            RetryDecision::GiveUp(r) => {
                assert_eq!(r, GiveUpReason::AttemptsExhausted);
                break;
            }
        }
    }
    assert_eq!(attempts, [1, 2, 3, 4]);
}

#[test]
fn every_jitter_stays_inside_its_bounds() {
    let base = RetryPolicy::new()
        .with_max_attempts(12)
        .with_base_delay_ms(100)
        .with_max_delay_ms(5_000);
    for seed in 0..200 {
        let exp = |i: usize| (100u64 << i).min(5_000);
        let full = delays(&base.with_jitter(Jitter::Full), seed);
        let equal = delays(&base.with_jitter(Jitter::Equal), seed);
        let prop = delays(&base.with_jitter(Jitter::Proportional(0.3)), seed);
        let decor = delays(&base.with_jitter(Jitter::Decorrelated), seed);
        for i in 0..11 {
            let e = exp(i);
            assert!(full[i] <= e, "full {i}: {} > {e}", full[i]);
            assert!(
                equal[i] >= e / 2 && equal[i] <= e,
                "equal {i}: {}",
                equal[i]
            );
            let lo = (e as f64 * 0.7) as u64;
            let hi = ((e as f64 * 1.3) as u64).min(5_000);
            assert!(
                prop[i] >= lo && prop[i] <= hi,
                "±30% {i}: {} not in {lo}..{hi}",
                prop[i]
            );
            assert!(
                decor[i] >= 100 && decor[i] <= 5_000,
                "decorrelated {i}: {}",
                decor[i]
            );
            if i > 0 {
                assert!(decor[i] <= (decor[i - 1] * 3).max(100));
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_delays() {
    let p = RetryPolicy::new().with_max_attempts(10);
    assert_eq!(delays(&p, 42), delays(&p, 42));
    assert_ne!(delays(&p, 42), delays(&p, 43));
}

#[test]
fn attempt_ten_thousand_is_still_a_finite_capped_delay() {
    for jitter in [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Proportional(1.0),
    ] {
        let p = RetryPolicy::new()
            .with_jitter(jitter)
            .with_factor(1e300)
            .with_base_delay_ms(1 << 53)
            .with_max_delay_ms(1 << 53);
        let mut rng = SplitMix64::new(9);
        for retry in [1, 2, 64, 1_000, 9_999, 10_000, u32::MAX] {
            let d = p.backoff(retry, u64::MAX, &mut rng);
            assert!(d <= 1 << 53, "{jitter:?} retry {retry}: {d}");
        }
        let p = RetryPolicy::new().with_jitter(jitter).with_base_delay_ms(0);
        assert_eq!(
            p.backoff(10_000, 0, &mut rng),
            0,
            "{jitter:?}: zero base, zero delay"
        );
    }
    let p = RetryPolicy::new()
        .with_jitter(Jitter::None)
        .with_factor(1.0001)
        .with_base_delay_ms(1_000)
        .with_max_delay_ms(1_000_000);
    // 1.0001^9999 ≈ 2.718: no loss of precision from iterating.
    let d = p.backoff(10_000, 0, &mut SplitMix64::new(1));
    assert!((2_710..=2_720).contains(&d), "{d}");
}

#[test]
fn retry_after_is_honoured_up_to_the_maximum() {
    let p = RetryPolicy::new()
        .with_jitter(Jitter::None)
        .with_base_delay_ms(1_000)
        .with_max_retry_after_ms(30_000);
    let mut rng = SplitMix64::new(1);
    let mut s = p.start(NOW);
    let server = |ms| AttemptFailure {
        retryable: true,
        retry_after_ms: Some(ms),
    };
    // The server asks for more than the backoff: wait what it asks.
    assert_eq!(
        p.decide(&mut s, NOW, server(20_000), &mut rng, None),
        RetryDecision::Retry {
            delay_ms: 20_000,
            attempt: 2
        }
    );
    // Less than the backoff: the backoff wins (never sooner than either).
    assert_eq!(
        p.decide(&mut s, NOW, server(5), &mut rng, None),
        RetryDecision::Retry {
            delay_ms: 2_000,
            attempt: 3
        }
    );
    // Beyond the maximum: give up at once rather than wait.
    assert_eq!(
        p.decide(&mut s, NOW, server(30_001), &mut rng, None),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong {
            retry_after_ms: 30_001
        })
    );
    // The default maximum refuses an hour's wait.
    let p = RetryPolicy::new();
    let mut s = p.start(NOW);
    assert_eq!(
        p.decide(&mut s, NOW, server(3_600_000), &mut rng, None),
        RetryDecision::GiveUp(GiveUpReason::RetryAfterTooLong {
            retry_after_ms: 3_600_000
        })
    );
}

#[test]
fn the_deadline_stops_retries_that_would_start_too_late() {
    let p = RetryPolicy::new()
        .with_jitter(Jitter::None)
        .with_max_attempts(10)
        .with_deadline_ms(Some(5_000));
    let mut rng = SplitMix64::new(1);
    let mut s = p.start(NOW);
    let mut now = NOW;
    let mut made = vec![];
    loop {
        match p.decide(&mut s, now, retryable(), &mut rng, None) {
            RetryDecision::Retry { delay_ms, .. } => {
                made.push(delay_ms);
                now = now.saturating_add(delay_ms + 100); // the attempt itself takes 100 ms
            }
            RetryDecision::GiveUp(r) => {
                assert_eq!(r, GiveUpReason::DeadlineExceeded);
                break;
            }
        }
    }
    assert_eq!(
        made,
        [1_000, 2_000],
        "a 4 s wait at +3.2 s would pass the 5 s deadline"
    );
}

#[test]
fn errors_that_are_not_retryable_give_up_at_once() {
    let p = RetryPolicy::new();
    let mut s = p.start(NOW);
    let d = p.decide(
        &mut s,
        NOW,
        AttemptFailure {
            retryable: false,
            retry_after_ms: None,
        },
        &mut SplitMix64::new(1),
        None,
    );
    assert_eq!(d, RetryDecision::GiveUp(GiveUpReason::NotRetryable));
    assert_eq!(s.attempts, 1);
}

#[test]
fn retry_after_parses_seconds_and_all_three_http_dates() {
    assert_eq!(parse_retry_after("0", NOW), Some(0));
    assert_eq!(parse_retry_after(" 120 ", NOW), Some(120_000));
    assert_eq!(parse_retry_after("1.5", NOW), Some(1_500));
    assert_eq!(parse_retry_after("0.0001", NOW), Some(1), "rounds up");
    for date in [
        "Sun, 06 Nov 1994 08:51:37 GMT",
        "Sunday, 06-Nov-94 08:51:37 GMT",
        "Sun Nov  6 08:51:37 1994",
    ] {
        assert_eq!(parse_retry_after(date, NOW), Some(120_000), "{date}");
    }
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", NOW),
        Some(0),
        "a date in the past means now"
    );
    assert_eq!(
        parse_retry_after(
            "Thu, 29 Feb 2024 00:00:00 GMT",
            Timestamp(1_709_164_800_000 - 1_000)
        ),
        Some(1_000),
        "leap day"
    );
}

#[test]
fn retry_after_garbage_is_none_and_huge_values_saturate() {
    for bad in [
        "",
        "   ",
        "-1",
        "soon",
        "1e3",
        "12abc",
        "1.",
        ".5",
        "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT extra",
        "Sun, 06 Nov 1969 08:49:37 GMT",
        "Sun Nov 123 08:49:37 1994",
        "\u{1F600}",
    ] {
        assert_eq!(parse_retry_after(bad, NOW), None, "{bad:?}");
    }
    let huge = "99999999999999999999999999999999";
    assert_eq!(parse_retry_after(huge, NOW), Some(1 << 52));
    assert_eq!(parse_retry_after_ms(huge), Some(1 << 52));
    assert_eq!(parse_retry_after_ms("1500"), Some(1_500));
    assert_eq!(parse_retry_after_ms("20.2"), Some(21));
    assert_eq!(parse_retry_after_ms("-3"), None);
}

#[test]
fn the_budget_caps_retries_to_a_share_of_calls() {
    // 20 % of calls plus 1 retry/s over a 10 s window: 10 + 0.2 × calls.
    let mut budget = RetryBudget::new(10_000, 1, 20.0).unwrap();
    let t = Timestamp(1_000_000);
    for _ in 0..100 {
        budget.deposit(t);
    }
    let granted = (0..1_000).filter(|_| budget.try_withdraw(t)).count();
    assert_eq!(granted, 30);
    // Once the window has moved past, the budget refills to its floor.
    let later = Timestamp(1_000_000 + 11_000);
    let granted = (0..1_000).filter(|_| budget.try_withdraw(later)).count();
    assert_eq!(granted, 10);
}

#[test]
fn an_exhausted_budget_ends_the_retries() {
    let p = RetryPolicy::new().with_max_attempts(10);
    let mut budget = RetryBudget::new(1_000, 0, 50.0).unwrap();
    budget.deposit(NOW);
    budget.deposit(NOW);
    let mut rng = SplitMix64::new(1);
    let mut s = p.start(NOW);
    assert!(matches!(
        p.decide(&mut s, NOW, retryable(), &mut rng, Some(&mut budget)),
        RetryDecision::Retry { .. }
    ));
    assert_eq!(
        p.decide(&mut s, NOW, retryable(), &mut rng, Some(&mut budget)),
        RetryDecision::GiveUp(GiveUpReason::BudgetExhausted)
    );
}

#[test]
fn invalid_retry_and_budget_settings_name_the_field() {
    let base = RetryPolicy::new();
    let cases = [
        (base.with_max_attempts(0), "max_attempts"),
        (
            base.with_max_attempts(breakwater::MAX_ATTEMPTS + 1),
            "max_attempts",
        ),
        (base.with_factor(0.9), "factor"),
        (base.with_factor(f64::NAN), "factor"),
        (base.with_factor(f64::INFINITY), "factor"),
        (base.with_base_delay_ms(u64::MAX), "base_delay_ms"),
        (base.with_max_delay_ms(10), "max_delay_ms"),
        (base.with_deadline_ms(Some(u64::MAX)), "deadline_ms"),
        (base.with_jitter(Jitter::Proportional(1.5)), "jitter"),
        (base.with_jitter(Jitter::Proportional(-0.1)), "jitter"),
        (base.with_max_retry_after_ms(u64::MAX), "max_retry_after_ms"),
    ];
    for (p, field) in cases {
        assert_eq!(p.validate().unwrap_err().field, field, "{p:?}");
    }
    assert!(base.validate().is_ok());
    assert_eq!(
        RetryBudget::new(10, 1, 20.0).unwrap_err().field,
        "budget.ttl_ms"
    );
    assert_eq!(
        RetryBudget::new(10_000, 1, f64::INFINITY)
            .unwrap_err()
            .field,
        "budget.retry_percent"
    );
}

#[test]
fn classification_follows_how_llm_apis_fail() {
    let c = Classifier::new();
    for s in [408, 429, 500, 502, 503, 504, 529] {
        let v = c.classify_status(s, None);
        assert!(v.retryable, "{s}");
        assert_eq!(v.outcome, Outcome::Failure, "{s}");
    }
    assert_eq!(c.classify_status(529, None).class, Class::Overloaded);
    assert_eq!(c.classify_status(429, None).class, Class::RateLimited);
    for s in [400, 401, 403, 404, 422] {
        let v = c.classify_status(s, None);
        assert!(!v.retryable, "{s}");
        assert_eq!(
            v.outcome,
            Outcome::Ignored,
            "{s}: a bad prompt must not open the circuit"
        );
        assert_eq!(v.class, Class::ClientError);
    }
    let quota = c.classify_status(429, Some("insufficient_quota"));
    assert_eq!(quota.class, Class::QuotaExhausted);
    assert!(!quota.retryable);
    assert_eq!(quota.outcome, Outcome::Failure);
    let quota = c.classify(&Signal {
        status: Some(429),
        error_code: Some("insufficient_quota"),
        ..Signal::default()
    });
    assert_eq!(
        (quota.class, quota.retryable),
        (Class::QuotaExhausted, false)
    );
    let v = c.classify_status(501, None);
    assert!(!v.retryable);
    assert_eq!(v.outcome, Outcome::Failure);
    assert_eq!(c.classify_status(200, None).outcome, Outcome::Success);

    let net = c.classify(&Signal {
        network_error: true,
        ..Signal::default()
    });
    assert!(net.retryable && net.outcome == Outcome::Failure);
    let timeout = c.classify(&Signal {
        timeout: true,
        ..Signal::default()
    });
    assert_eq!(timeout.class, Class::Timeout);
    let aborted = c.classify(&Signal {
        cancelled: true,
        status: Some(503),
        ..Signal::default()
    });
    assert_eq!(
        (aborted.retryable, aborted.outcome),
        (false, Outcome::Ignored)
    );
}

#[test]
fn classification_can_be_configured_per_status() {
    use breakwater::StatusSet;
    let c = Classifier::new().with_retryable(StatusSet::of(&[429, 529, 409]));
    assert!(c.classify_status(409, None).retryable);
    assert_eq!(c.classify_status(409, None).outcome, Outcome::Failure);
    assert!(!c.classify_status(503, None).retryable);
    assert_eq!(
        c.classify_status(503, None).outcome,
        Outcome::Failure,
        "still a failure"
    );
    let c = Classifier::new().with_failures(StatusSet::empty());
    assert_eq!(c.classify_status(503, None).outcome, Outcome::Ignored);
    assert!(!StatusSet::of(&[700]).contains(700));
}

#[test]
fn a_conflict_is_retried_as_the_official_sdks_do() {
    // anthropic-sdk-typescript and openai-node retry 408, 409, 429 and 5xx (`shouldRetry`).
    let v = Classifier::new().classify_status(409, None);
    assert!(v.retryable);
    assert_eq!(v.class, Class::Transient);
}

#[test]
fn provider_codes_say_more_than_the_status() {
    use breakwater::Code;
    let c = Classifier::new();
    let at = |status: u16, code: &str| c.classify_status(status, Some(code));
    // A spent quota or credit, whatever its status: not retried, counted.
    for (status, code) in [
        (429, "insufficient_quota"),
        (429, "billing_hard_limit_reached"),
        (429, "billing_not_active"),
        (402, "billing_error"),
        // Anthropic answers a spent credit balance with a 400 and says so only in words.
        (
            400,
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        ),
        // Gemini's per-day quota (a QuotaFailure violation's quotaId).
        (429, "GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
    ] {
        let v = at(status, code);
        assert_eq!(
            (v.class, v.retryable, v.outcome),
            (Class::QuotaExhausted, false, Outcome::Failure),
            "{status} {code}"
        );
    }
    // A per-minute quota is a rate limit: waiting cures it.
    let v = at(429, "GenerateRequestsPerMinutePerProjectPerModel-FreeTier");
    assert_eq!((v.class, v.retryable), (Class::RateLimited, true));
    let v = at(429, "RESOURCE_EXHAUSTED");
    assert_eq!((v.class, v.retryable), (Class::RateLimited, true));
    // A content policy's refusal: neither retried nor counted.
    for code in [
        "content_policy_violation",
        "invalid_prompt",
        "content_filter",
    ] {
        let v = at(400, code);
        assert_eq!(
            (v.class, v.retryable, v.outcome),
            (Class::Declined, false, Outcome::Ignored),
            "{code}"
        );
    }
    // A code with no status (an error event inside a 200 stream) stands for its status.
    let event = |code: &str| {
        c.classify(&Signal {
            error_code: Some(code),
            ..Signal::default()
        })
    };
    assert_eq!(event("overloaded_error").class, Class::Overloaded);
    assert!(event("overloaded_error").retryable);
    assert_eq!(event("rate_limit_exceeded").class, Class::RateLimited);
    assert_eq!(event("invalid_request_error").outcome, Outcome::Ignored);
    assert_eq!(event("api_error").outcome, Outcome::Failure);
    assert_eq!(Code::of(b"overloaded_error").map(Code::status), Some(529));
    assert_eq!(Code::of(b"INTERNAL").map(Code::status), Some(500));
    assert_eq!(Code::of(b"something_else"), None);
}

#[test]
fn endings_in_every_providers_spelling() {
    use breakwater::Ending;
    let cases: &[(&str, Ending)] = &[
        // Anthropic `stop_reason`
        ("end_turn", Ending::Complete),
        ("tool_use", Ending::Complete),
        ("pause_turn", Ending::Complete),
        ("max_tokens", Ending::Truncated),
        ("model_context_window_exceeded", Ending::Truncated),
        ("refusal", Ending::Declined),
        // OpenAI Chat `finish_reason`, Responses `status` and `incomplete_details.reason`
        ("stop", Ending::Complete),
        ("tool_calls", Ending::Complete),
        ("length", Ending::Truncated),
        ("content_filter", Ending::Declined),
        ("completed", Ending::Complete),
        ("max_output_tokens", Ending::Truncated),
        ("failed", Ending::Failed),
        // Gemini `finishReason`
        ("STOP", Ending::Complete),
        ("MAX_TOKENS", Ending::Truncated),
        ("SAFETY", Ending::Declined),
        ("PROHIBITED_CONTENT", Ending::Declined),
        ("FINISH_REASON_UNSPECIFIED", Ending::Unknown),
        // The AI SDK's unified reasons
        ("tool-calls", Ending::Complete),
        ("content-filter", Ending::Declined),
        ("error", Ending::Failed),
        // AI SDK 7: the stream ended without a finish
        ("interrupted", Ending::Failed),
        ("other", Ending::Unknown),
        ("unknown", Ending::Unknown),
    ];
    for &(reason, ending) in cases {
        assert_eq!(Ending::of(reason.as_bytes()), ending, "{reason}");
    }
}
