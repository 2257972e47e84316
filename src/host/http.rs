//! What the service integrations share: an `http::Response`'s status and headers read by the
//! crate's LLM rules ([`Classifier::classify_response`]).

use http::HeaderMap;

use crate::clock::Timestamp;
use crate::retry::{Classifier, Code, ResponseVerdict};

/// Classifies a response by its status, its provider `code` (from its body, if read) and its
/// `retry-after-ms`, `retry-after` and `x-should-retry` headers.
pub(crate) fn classify(
    classifier: &Classifier,
    status: u16,
    code: Option<Code>,
    headers: &HeaderMap,
    now: Timestamp,
) -> ResponseVerdict {
    classifier.classify_response(status, code, now, |name| {
        headers.get(name).and_then(|v| v.to_str().ok())
    })
}
