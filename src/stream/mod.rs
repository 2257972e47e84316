//! The stream guard's rules, once for every host: what each event of a streamed LLM answer says
//! ([`Reading`]: the model working, or only the connection; an ending; an error carried in a 200
//! answer; a broken frame), an event stream's bytes split into events ([`SseSplitter`]), and the
//! judgement of one stream over time ([`Watch`]: when the answer began, when the model went
//! silent, how the stream counts). Sans-IO: bytes and times in, a [`Step`] out. The npm package's
//! guard (`breaker.stream`) and the Rust services' one (`GuardedBody`, features `tower` and
//! `reqwest-middleware`) act on it.
//!
//! Progress, content and keep-alives are three things. Any sign of the model working (text,
//! thinking, tool input, a server tool's result, an image, a compaction block) is progress and
//! keeps the model's limits from running out; keep-alives (Anthropic's `ping`, SSE comments)
//! prove the connection only; markers and empty fields (a role chunk whose fields are `""` and
//! `[]`) are nothing.
//!
//! ```
//! use breakwater::stream::{Progress, Reading, Source, Step, StreamLimits, Watch};
//! let limits = StreamLimits { idle_ms: Some(1_000), ..StreamLimits::default() };
//! let mut watch = Watch::new(limits, 0);
//! // OpenAI's role chunk, its fields empty: nothing yet.
//! let role = Reading::json(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[]}}]}"#, Source::Events);
//! assert_eq!(watch.item(10, &role), Step::Hold);
//! let text = Reading::json(br#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#, Source::Events);
//! assert_eq!(watch.item(20, &text), Step::Begin);
//! assert_eq!(watch.deadline(), Some(1_020));
//! ```

mod read;
mod scan;
mod sse;
mod watch;

pub use read::{Progress, Reading, Source, StreamFailure};
pub use sse::{SseItem, SseSplitter, MAX_EVENT_BYTES};
pub use watch::{Limit, Settled, Step, Stop, StreamLimits, Watch};
