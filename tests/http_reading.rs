//! Reading HTTP answers: `Code::in_body` on any bytes, `Classifier::classify_response` on any
//! headers. An attacker (or a proxy's HTML error page) controls both; neither may panic, and what
//! they read must not depend on anything past the limits.

use breakwater::{Class, Classifier, Code, Outcome, Timestamp};
use proptest::prelude::*;

const NOW: Timestamp = Timestamp(1_700_000_000_000);

fn lookup<'a>(headers: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
    move |name| headers.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn any_body_is_read_without_panicking(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Code::in_body(&body);
    }

    /// JSON-like bodies built from the tokens that matter, cut anywhere.
    #[test]
    fn cut_and_shuffled_error_bodies_read_without_panicking(
        parts in proptest::collection::vec(prop_oneof![
            Just("\"code\""), Just("\"type\""), Just("\"status\""), Just(":"), Just(" "),
            Just("\""), Just("insufficient_quota"), Just("overloaded_error"), Just("{"), Just("}"),
        ], 0..40),
        cut in any::<usize>(),
    ) {
        let body = parts.concat();
        let cut = cut % (body.len() + 1);
        let _ = Code::in_body(&body.as_bytes()[..cut]);
    }

    #[test]
    fn any_headers_classify_without_panicking(
        status in 0u16..1000,
        retry_after in ".{0,40}",
        retry_after_ms in ".{0,40}",
        should in ".{0,10}",
    ) {
        let headers = [
            ("retry-after", retry_after.as_str()),
            ("retry-after-ms", retry_after_ms.as_str()),
            ("x-should-retry", should.as_str()),
        ];
        let r = Classifier::new().classify_response(status, None, NOW, lookup(&headers));
        if let Some(ms) = r.retry_after_ms {
            prop_assert!(ms <= breakwater::MAX_DURATION_MS);
        }
    }
}

#[test]
fn only_the_first_body_limit_bytes_are_read() {
    let mut body = vec![b' '; Code::BODY_LIMIT];
    body.extend_from_slice(br#"{"error":{"type":"insufficient_quota"}}"#);
    assert_eq!(Code::in_body(&body), None);
    assert_eq!(
        Code::in_body(br#"{"error":{"type":"insufficient_quota"}}"#),
        Some(Code::QuotaExhausted)
    );
}

#[test]
fn a_body_with_spaces_and_any_depth_is_read() {
    // Gemini's shape (https://ai.google.dev/gemini-api/docs/troubleshooting), status at depth 2.
    let gemini = br#"{ "error" : { "code" : 503 , "message" : "The model is overloaded.", "status" : "UNAVAILABLE" } }"#;
    assert_eq!(Code::in_body(gemini), Some(Code::Unavailable));
    // A key that is not a string value is skipped, the next one read.
    assert_eq!(
        Code::in_body(br#"{"code":429,"type":"rate_limit_error"}"#),
        Some(Code::RateLimited)
    );
    assert_eq!(
        Code::in_body(b"<html><body>502 Bad Gateway</body></html>"),
        None
    );
}

#[test]
fn should_retry_speaks_only_for_errors_and_only_in_its_two_words() {
    let c = Classifier::new();
    let yes = [("x-should-retry", " TRUE ")];
    let no = [("x-should-retry", "false")];
    let junk = [("x-should-retry", "maybe")];
    assert!(
        c.classify_response(400, None, NOW, lookup(&yes))
            .verdict
            .retryable
    );
    assert!(
        !c.classify_response(503, None, NOW, lookup(&no))
            .verdict
            .retryable
    );
    assert!(
        c.classify_response(503, None, NOW, lookup(&junk))
            .verdict
            .retryable
    );
    let ok = c.classify_response(200, None, NOW, lookup(&no));
    assert_eq!(ok.verdict.class, Class::Success);
    assert!(!ok.is_error());
    // How the breaker counts is the status's and code's alone.
    assert_eq!(
        c.classify_response(400, None, NOW, lookup(&yes))
            .verdict
            .outcome,
        Outcome::Ignored
    );
    assert_eq!(
        c.classify_response(503, None, NOW, lookup(&no))
            .verdict
            .outcome,
        Outcome::Failure
    );
}

#[test]
fn retry_after_ms_comes_first_then_retry_after_in_either_form() {
    let c = Classifier::new();
    let both = [("retry-after-ms", "1500.2"), ("retry-after", "30")];
    assert_eq!(
        c.classify_response(429, None, NOW, lookup(&both))
            .retry_after_ms,
        Some(1_501)
    );
    let bad_ms = [("retry-after-ms", "soon"), ("retry-after", "30")];
    assert_eq!(
        c.classify_response(429, None, NOW, lookup(&bad_ms))
            .retry_after_ms,
        Some(30_000)
    );
    // An HTTP-date 90 s after NOW (Tue, 14 Nov 2023 22:13:20 GMT).
    let date = [("retry-after", "Tue, 14 Nov 2023 22:14:50 GMT")];
    assert_eq!(
        c.classify_response(503, None, NOW, lookup(&date))
            .retry_after_ms,
        Some(90_000)
    );
    assert_eq!(
        c.classify_response(503, None, NOW, lookup(&[]))
            .retry_after_ms,
        None
    );
}
