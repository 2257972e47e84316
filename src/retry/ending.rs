//! How an LLM answer ended, and what a provider's error code means: the one table every host
//! asks (the stream guard, the AI SDK middleware, `withRetry`, the Rust hosts).
//!
//! An answer that arrived is not always a success, and an error is not always an outage. A model
//! that declines a prompt (Anthropic's `refusal`, OpenAI's `content_filter`, Gemini's `SAFETY`)
//! answered correctly: retrying will not convince it, and sending the prompt to another provider
//! is the app's decision, not the breaker's. A spent quota is a 429 that waiting does not cure.
//! Providers spell these differently (`tool_use` and `tool_calls`, `content_filter` and the AI
//! SDK's `content-filter`, Gemini's upper case); [`Ending::of`] and [`Code::of`] read all of them.
//!
//! Both take bytes, so a host passes what the wire carried without decoding it first: ASCII is
//! compared case-insensitively, with `-` read as `_`.

/// How an answer ended, by its finish or stop reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ending {
    /// The model finished: `end_turn`, `stop`, `tool_use`, `tool_calls`, `STOP`, `completed`...
    Complete,
    /// The output limit cut it: `max_tokens`, `length`, `max_output_tokens`... With text it is an
    /// answer; without (a reasoning model spent its budget) the app has to see it, not the breaker.
    Truncated,
    /// The model or the provider's filter declined: `refusal`, `content_filter`, `SAFETY`... Not
    /// an outage and not worth a retry.
    Declined,
    /// The provider says the answer failed: the AI SDK's `error` (and AI SDK 7's `interrupted`,
    /// a stream that ended without a finish), the Responses API's `failed`.
    Failed,
    /// A reason this table does not know (`other`, `unknown`): judged by the content alone.
    Unknown,
}

// Each group is one string of names: the source reads as the providers spell them, and
// `ENDINGS` (below) keeps only their hashes. Anthropic's `stop_reason`, OpenAI's `finish_reason`
// (and the Responses API's `status`), Gemini's `finishReason`, the AI SDK's unified reasons (`-`
// is read as `_`), in the order of [`Ending`].
const ENDING_NAMES: [&[u8]; 4] = [
    b"end_turn stop_sequence tool_use pause_turn compaction stop tool_calls function_call completed",
    b"max_tokens length max_output_tokens model_context_window_exceeded",
    b"refusal content_filter safety recitation blocklist prohibited_content spii image_safety \
      image_prohibited_content image_recitation malformed_function_call unexpected_tool_call",
    b"error failed interrupted",
];
const ENDINGS: Names<{ count(&ENDING_NAMES) }, 4> = Names::of(&ENDING_NAMES);

impl Ending {
    /// The ending a finish or stop reason names (any provider's spelling).
    pub fn of(reason: &[u8]) -> Ending {
        match ENDINGS.group(reason) {
            Some(0) => Ending::Complete,
            Some(1) => Ending::Truncated,
            Some(2) => Ending::Declined,
            Some(3) => Ending::Failed,
            _ => Ending::Unknown,
        }
    }
}

/// What a provider's error code or type means, beyond its HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The quota, credit or spend limit is used up (`insufficient_quota`, `billing_error`, a
    /// per-day quota): waiting minutes will not cure it.
    QuotaExhausted,
    /// `overloaded_error`.
    Overloaded,
    /// A rate limit (`rate_limit_error`, `rate_limit_exceeded`, `RESOURCE_EXHAUSTED`).
    RateLimited,
    /// The prompt was refused by a content policy (`content_policy_violation`, `invalid_prompt`).
    Declined,
    /// The prompt is longer than the model's context (`context_length_exceeded`).
    ContextLength,
    /// A request error (`invalid_request_error`, `INVALID_ARGUMENT`).
    BadRequest,
    /// The key is wrong (`authentication_error`, `invalid_api_key`).
    Unauthenticated,
    /// The key may not do this (`permission_error`, `PERMISSION_DENIED`).
    Forbidden,
    /// No such model or resource (`not_found_error`, `model_not_found`).
    NotFound,
    /// The request is too large (`request_too_large`).
    TooLarge,
    /// The provider failed (`api_error`, `server_error`, `INTERNAL`).
    Server,
    /// The provider is unavailable (`UNAVAILABLE`).
    Unavailable,
    /// The provider ran out of time (`timeout_error`, `DEADLINE_EXCEEDED`).
    Timeout,
}

// The names of each code, in the order of [`Code::ALL`] (OpenAI, Anthropic and Gemini spellings).
const CODE_NAMES: [&[u8]; 13] = [
    b"insufficient_quota billing_hard_limit_reached billing_not_active quota_exceeded billing_error \
      credit_balance_too_low credit_balance_exhausted project_spend_limit_exceeded \
      organization_spend_limit_exceeded enforced_spend_limit_reached",
    b"overloaded_error",
    b"rate_limit_error rate_limit_exceeded resource_exhausted",
    b"content_policy_violation content_filter invalid_prompt",
    b"context_length_exceeded",
    b"invalid_request_error invalid_argument failed_precondition",
    b"authentication_error invalid_api_key unauthenticated",
    b"permission_error permission_denied",
    b"not_found_error model_not_found not_found",
    b"request_too_large",
    b"api_error server_error internal",
    b"unavailable",
    b"timeout_error deadline_exceeded",
];
const CODES: Names<{ count(&CODE_NAMES) }, 13> = Names::of(&CODE_NAMES);

// Phrases that say a quota is spent where the code does not: Anthropic answers a spent credit
// balance or a reached spend limit with a 400 `invalid_request_error`; Gemini's quota ids name
// their period (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`: tomorrow, not in a minute).
// Not "exceeded your current quota": Gemini says it of a per-minute limit too.
const QUOTA_PHRASES: &[u8] = b"credit balance is too low|api usage limits|perday";

impl Code {
    /// Every code, in the order of [`Code::index`].
    pub const ALL: [Code; 13] = [
        Code::QuotaExhausted,
        Code::Overloaded,
        Code::RateLimited,
        Code::Declined,
        Code::ContextLength,
        Code::BadRequest,
        Code::Unauthenticated,
        Code::Forbidden,
        Code::NotFound,
        Code::TooLarge,
        Code::Server,
        Code::Unavailable,
        Code::Timeout,
    ];

    /// The code an error code or type names (any provider's spelling), if the table has it.
    pub fn of(code: &[u8]) -> Option<Code> {
        CODES.group(code).and_then(|i| Code::ALL.get(i).copied())
    }

    /// What everything an error says comes to: `codes` (its code, type and status fields, one a
    /// line) and `texts` (its messages and quota ids, one a line). A spent quota outweighs any
    /// other reading (OpenAI's `insufficient_quota` comes as a 429 beside `rate_limit`-like
    /// types; Anthropic says a spent credit balance only in the message of an
    /// `invalid_request_error`), then a content policy's refusal, then the first code known.
    pub fn read(codes: &[u8], texts: &[u8]) -> Option<Code> {
        let mut found = None;
        for line in codes.split(|&b| b == b'\n') {
            match Code::of(line) {
                Some(Code::QuotaExhausted) => return Some(Code::QuotaExhausted),
                Some(Code::Declined) => found = Some(Code::Declined),
                c => found = found.or(c),
            }
        }
        Code::in_text(texts).or(found)
    }

    /// What a provider's JSON error body says, read without parsing it: the string values of its
    /// `code`, `type` and `status` fields at any depth (OpenAI's `error.code` and `error.type`,
    /// Anthropic's `error.type`, Gemini's `error.status`) and the whole text for a spent quota,
    /// weighed as in [`Code::read`]. Only the first [`Code::BODY_LIMIT`] bytes are read.
    ///
    /// ```
    /// use breakwater::Code;
    /// // OpenAI's API reference, "Error codes": a 429 for a spent quota.
    /// let openai = br#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    /// assert_eq!(Code::in_body(openai), Some(Code::QuotaExhausted));
    /// // Anthropic's API reference, "Errors": 529.
    /// let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    /// assert_eq!(Code::in_body(anthropic), Some(Code::Overloaded));
    /// assert_eq!(Code::in_body(b"<html>502 Bad Gateway</html>"), None);
    /// ```
    pub fn in_body(body: &[u8]) -> Option<Code> {
        let body = body.get(..Self::BODY_LIMIT).unwrap_or(body);
        let mut found = None;
        let mut at = 0;
        while let Some((value, next)) = next_code_field(body, at) {
            match Code::of(value) {
                Some(Code::QuotaExhausted) => return Some(Code::QuotaExhausted),
                Some(Code::Declined) => found = Some(Code::Declined),
                c => found = found.or(c),
            }
            at = next;
        }
        Code::in_text(body).or(found)
    }

    /// How much of a body [`Code::in_body`] reads: error bodies are short, and a longer one is
    /// not an API's error.
    pub const BODY_LIMIT: usize = 16 * 1024;

    /// [`Code::QuotaExhausted`] if `text` (an error message, a quota id) says a quota is spent.
    pub fn in_text(text: &[u8]) -> Option<Code> {
        contains_any(text, QUOTA_PHRASES).then_some(Code::QuotaExhausted)
    }

    /// The HTTP status the code stands for where none came with it (an error event in a 200
    /// stream): 529 for `overloaded_error`, 429 for a rate limit or a spent quota...
    pub const fn status(self) -> u16 {
        match self {
            Code::QuotaExhausted | Code::RateLimited => 429,
            Code::Overloaded => 529,
            Code::Declined | Code::ContextLength | Code::BadRequest => 400,
            Code::Unauthenticated => 401,
            Code::Forbidden => 403,
            Code::NotFound => 404,
            Code::TooLarge => 413,
            Code::Server => 500,
            Code::Unavailable => 503,
            Code::Timeout => 504,
        }
    }

    /// A small number for hosts that pass codes as numbers: 1 + its place in [`Code::ALL`].
    pub fn index(self) -> u32 {
        Code::ALL
            .iter()
            .position(|&c| c == self)
            .map_or(0, |i| i as u32 + 1)
    }

    /// The code of [`Code::index`] `i`; `None` for 0 and anything out of range.
    pub fn from_index(i: u32) -> Option<Code> {
        Code::ALL.get((i as usize).checked_sub(1)?).copied()
    }
}

const fn fold(b: u8) -> u8 {
    match b {
        b'-' => b'_',
        _ => b.to_ascii_lowercase(),
    }
}

// A name is known by the FNV-1a hash of its folded bytes: 4 bytes a name in the binary (the
// npm package's .wasm) instead of its text. Two known names with one hash fail the build (see
// `Names::of`); an unknown string read as a known name would need a 32-bit collision with one of
// the few dozen names.
const fn hash(s: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < s.len() {
        h = (h ^ fold(s[i]) as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

/// The hashes of groups of space-separated names: `N` names in `G` groups.
struct Names<const N: usize, const G: usize> {
    hashes: [u32; N],
    // The end of each group in `hashes`.
    ends: [u8; G],
}

// How many names the groups hold.
const fn count(groups: &[&[u8]]) -> usize {
    let (mut n, mut g) = (0, 0);
    while g < groups.len() {
        let mut i = 0;
        while i < groups[g].len() {
            if groups[g][i] == b' ' && (i == 0 || groups[g][i - 1] != b' ') {
                n += 1;
            }
            i += 1;
        }
        n += 1;
        g += 1;
    }
    n
}

impl<const N: usize, const G: usize> Names<N, G> {
    // Evaluated by the compiler only (its panics are build errors).
    const fn of(groups: &[&[u8]; G]) -> Self {
        let mut names = Names {
            hashes: [0; N],
            ends: [0; G],
        };
        let mut n = 0;
        let mut g = 0;
        while g < G {
            let group = groups[g];
            let mut start = 0;
            while start < group.len() {
                let mut end = start;
                while end < group.len() && group[end] != b' ' {
                    end += 1;
                }
                let (_, rest) = group.split_at(start);
                let (name, _) = rest.split_at(end - start);
                assert!(!name.is_empty(), "an empty name");
                let h = hash(name);
                let mut k = 0;
                while k < n {
                    assert!(names.hashes[k] != h, "two names with one hash");
                    k += 1;
                }
                names.hashes[n] = h;
                n += 1;
                start = end;
                while start < group.len() && group[start] == b' ' {
                    start += 1;
                }
            }
            names.ends[g] = n as u8;
            g += 1;
        }
        assert!(n == N);
        names
    }

    /// The group of the name `s` is (compared folded), if any.
    fn group(&self, s: &[u8]) -> Option<usize> {
        if s.is_empty() {
            return None;
        }
        let h = hash(s);
        let i = self.hashes.iter().position(|&x| x == h)?;
        self.ends.iter().position(|&end| i < end as usize)
    }
}

/// Whether `text` holds one of the `|`-separated phrases.
/// The next `"code"`, `"type"` or `"status"` key at or after `from` whose value is a string:
/// the value (up to its closing quote; codes hold no escapes) and where to go on from.
fn next_code_field(body: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let mut i = from;
    while i < body.len() {
        let rest = body.get(i..)?;
        let key = [&b"\"code\""[..], b"\"type\"", b"\"status\""]
            .into_iter()
            .find(|k| rest.starts_with(k));
        let Some(key) = key else {
            i += 1;
            continue;
        };
        let mut j = i + key.len();
        let skip = |j: &mut usize| {
            while body.get(*j).is_some_and(|b| b.is_ascii_whitespace()) {
                *j += 1;
            }
        };
        skip(&mut j);
        if body.get(j) != Some(&b':') {
            i += 1;
            continue;
        }
        j += 1;
        skip(&mut j);
        if body.get(j) != Some(&b'"') {
            i = j;
            continue;
        }
        let start = j + 1;
        let len = body.get(start..)?.iter().position(|&b| b == b'"')?;
        return Some((body.get(start..start + len)?, start + len + 1));
    }
    None
}

fn contains_any(text: &[u8], phrases: &[u8]) -> bool {
    (0..text.len()).any(|from| {
        let mut at = 0;
        while at < phrases.len() {
            let mut i = 0;
            while let (Some(&p), Some(&t)) = (phrases.get(at + i), text.get(from + i)) {
                if p == b'|' || p != fold(t) {
                    break;
                }
                i += 1;
            }
            if phrases.get(at + i).is_none_or(|&p| p == b'|') {
                return true;
            }
            while at < phrases.len() && phrases[at] != b'|' {
                at += 1;
            }
            at += 1;
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec::Vec;

    #[test]
    fn spellings_of_one_reason_agree() {
        for r in ["tool_calls", "tool-calls", "TOOL_CALLS"] {
            assert_eq!(Ending::of(r.as_bytes()), Ending::Complete, "{r}");
        }
        for r in ["content_filter", "content-filter", "SAFETY"] {
            assert_eq!(Ending::of(r.as_bytes()), Ending::Declined, "{r}");
        }
        assert_eq!(Ending::of(b"other"), Ending::Unknown);
        assert_eq!(Ending::of(b""), Ending::Unknown);
    }

    // What the hashes stand for: the folded string is one of a group's names.
    fn spelled(groups: &[&[u8]], s: &[u8]) -> Option<usize> {
        let folded: Vec<u8> = s.iter().map(|&b| fold(b)).collect();
        groups.iter().position(|g| {
            g.split(|&b| b == b' ')
                .any(|n| !n.is_empty() && n == folded)
        })
    }

    #[test]
    fn hashes_read_exactly_the_names() {
        let mut tried = Vec::new();
        for groups in [&ENDING_NAMES[..], &CODE_NAMES[..]] {
            for name in groups.iter().flat_map(|g| g.split(|&b| b == b' ')) {
                let upper: Vec<u8> = name.to_ascii_uppercase();
                let dashed: Vec<u8> = name
                    .iter()
                    .map(|&b| if b == b'_' { b'-' } else { b })
                    .collect();
                tried.extend([name.to_vec(), upper, dashed]);
                tried.extend((0..name.len()).map(|n| name[..n].to_vec()));
                tried.extend((1..name.len()).map(|n| name[n..].to_vec()));
                for extra in [&b" "[..], b"_", b"s", b"\n", b"\x01"] {
                    tried.push([name, extra].concat());
                    tried.push([extra, name].concat());
                }
            }
            tried.extend(
                [&b"stop tool_use"[..], b"end_turnstop", b"", b" ", b"other"].map(<[u8]>::to_vec),
            );
        }
        for s in &tried {
            assert_eq!(
                ENDINGS.group(s),
                spelled(&ENDING_NAMES, s),
                "{:?}",
                String::from_utf8_lossy(s)
            );
            assert_eq!(
                CODES.group(s),
                spelled(&CODE_NAMES, s),
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
    }

    #[test]
    fn indexes_round_trip() {
        for c in Code::ALL {
            assert_eq!(Code::from_index(c.index()), Some(c));
        }
        assert_eq!(Code::from_index(0), None);
        assert_eq!(Code::from_index(99), None);
    }

    #[test]
    fn a_spent_quota_outweighs_other_readings() {
        assert_eq!(
            Code::read(
                b"invalid_request_error",
                b"Your credit balance is too low to access the API."
            ),
            Some(Code::QuotaExhausted)
        );
        assert_eq!(
            Code::read(
                b"RESOURCE_EXHAUSTED\n",
                b"GenerateRequestsPerDayPerProjectPerModel-FreeTier\n"
            ),
            Some(Code::QuotaExhausted)
        );
        assert_eq!(
            Code::read(b"requests\nrate_limit_exceeded", b""),
            Some(Code::RateLimited)
        );
        assert_eq!(
            Code::read(b"invalid_request_error\ncontent_policy_violation", b""),
            Some(Code::Declined)
        );
        assert_eq!(Code::read(b"", b"nothing here"), None);
    }

    #[test]
    fn geminis_per_minute_quota_is_not_spent() {
        // vercel/ai packages/google/src/__fixtures__/google-429-retry-info.json: OpenAI's words
        // for a spent quota, said of a per-minute limit.
        let m = br#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(Code::in_text(m), None);
        assert_eq!(
            Code::read(b"RESOURCE_EXHAUSTED", m),
            Some(Code::RateLimited)
        );
    }

    #[test]
    fn quota_phrases_are_found_in_any_case() {
        let id = b"GenerateRequestsPerDayPerProjectPerModel-FreeTier";
        assert_eq!(Code::in_text(id), Some(Code::QuotaExhausted));
        assert_eq!(
            Code::in_text(b"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
            None
        );
        assert_eq!(Code::in_text(b"short"), None);
    }
}
