//! What one item of a streamed answer says: an event of a `text/event-stream` body, or a chunk
//! of an SDK's stream object (its JSON), read by one rule for every provider.

use super::scan::{walk, Scalar, ITEM};
use crate::retry::{Code, Ending};

/// What an item shows of the model at work.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Progress {
    /// Nothing of the answer: a marker (`message_start`, a role chunk, a block boundary), an
    /// empty field, an ending, an error.
    #[default]
    None,
    /// The connection is alive, which says nothing of the model: Anthropic's `ping`, an SSE
    /// comment, a keep-alive event.
    KeepAlive,
    /// The model is thinking: a reasoning or thinking delta, a thought part, its signature.
    Thinking,
    /// The answer itself: text, a refusal's words, a tool call or its input, a server tool's
    /// result (web search, code execution), an image, a compaction block.
    Output,
}

/// An error carried inside the stream (an HTTP 200 answer saying it failed).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StreamFailure {
    /// The provider's code, when the table knows it (`overloaded_error`...).
    pub code: Option<Code>,
    /// The status it stands for: a numeric code the error gave (Gemini's 429), else the code's
    /// ([`Code::status`]), else 500.
    pub status: u16,
}

/// What one item says; an item may say several things (text and its finish reason).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Reading {
    /// How far it shows the model working.
    pub progress: Progress,
    /// The ending it names (a stop or finish reason, `response.completed`...).
    pub ending: Option<Ending>,
    /// The error it carries.
    pub error: Option<StreamFailure>,
    /// An event whose data begins as JSON and is not: a broken frame.
    pub malformed: bool,
}

/// Where an item came from: its type names are read differently.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Source {
    /// An event of a `text/event-stream` body: a JSON `type` this reader does not know is a
    /// marker unless it names a delta.
    Events,
    /// A chunk of a stream object (an SDK's events, the AI SDK's parts): any chunk of a shape this
    /// reader does not know is the answer.
    Objects,
}

impl Reading {
    /// An item that is only the connection being kept alive.
    pub const KEEP_ALIVE: Reading = Reading {
        progress: Progress::KeepAlive,
        ending: None,
        error: None,
        malformed: false,
    };

    /// An SSE event: its `event:` field (empty for none) and its data.
    ///
    /// ```
    /// use breakwater::stream::{Progress, Reading};
    /// use breakwater::Ending;
    /// let r = Reading::event(b"content_block_delta", br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#);
    /// assert_eq!(r.progress, Progress::Output);
    /// let r = Reading::event(b"message_delta", br#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#);
    /// assert_eq!((r.progress, r.ending), (Progress::None, Some(Ending::Complete)));
    /// assert_eq!(Reading::event(b"ping", br#"{"type":"ping"}"#).progress, Progress::KeepAlive);
    /// ```
    pub fn event(event: &[u8], data: &[u8]) -> Reading {
        match event {
            b"ping" | b"keepalive" | b"keep-alive" => return Reading::KEEP_ALIVE,
            b"error" => {
                let mut r = Reading::json(data, Source::Events);
                if r.error.is_none() {
                    r.error = Some(failure(data, None));
                }
                r.progress = Progress::None;
                return r;
            }
            _ => {}
        }
        Reading::json(data, Source::Events)
    }

    /// A chunk's JSON (an event's data, or an SDK's stream event serialised); text that is not
    /// JSON is the answer itself (a plain text stream), except `[DONE]`.
    pub fn json(data: &[u8], source: Source) -> Reading {
        let text = trim(data);
        match text.first() {
            None => return Reading::default(),
            Some(b'{' | b'[') => {}
            Some(_) if text == b"[DONE]" => return Reading::default(),
            Some(_) => {
                return Reading {
                    progress: Progress::Output,
                    ..Reading::default()
                }
            }
        }
        let mut f = Facts::default();
        if walk(text, &mut |p, s| f.see(p.keys(), s)).is_none() {
            return Reading {
                malformed: true,
                ..Reading::default()
            };
        }
        f.reading(text, source)
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    s.get(start..end).unwrap_or_default()
}

fn failure(data: &[u8], numeric: Option<u16>) -> StreamFailure {
    let code = Code::in_body(data);
    let status = numeric
        .filter(|s| (400..=599).contains(s))
        .or(code.map(Code::status))
        .unwrap_or(500);
    StreamFailure { code, status }
}

/// What the walk saw, decided on once it ends (a chunk's fields come in any order).
#[derive(Default)]
struct Facts<'a> {
    /// The top-level `type`.
    ty: &'a [u8],
    /// Anthropic's `delta.type`, `content_block.type`.
    delta_type: &'a [u8],
    block_type: &'a [u8],
    /// Words seen where the answer goes, and where thinking goes.
    output: bool,
    thinking: bool,
    /// Gemini: a part's text, a part marked `thought`, a part of another kind.
    part_text: bool,
    part_thought: bool,
    part_other: bool,
    /// Words under Anthropic's `delta`, the AI SDK's `delta`, a block's own text.
    delta_words: bool,
    block_words: bool,
    /// A Responses `output_item` that is not a message or reasoning.
    item_tool: bool,
    /// Choices, candidates or a Responses event: the shapes whose content has a known place.
    known_shape: bool,
    /// The ending's reason as named.
    reason: Option<&'a [u8]>,
    /// An error: at the top (`error`), or a failed response's.
    error: bool,
    error_status: Option<u16>,
}

fn words(s: Scalar<'_>) -> bool {
    matches!(s, Scalar::Str(w) if !w.is_empty())
}

impl<'a> Facts<'a> {
    fn see(&mut self, keys: &[&'a [u8]], s: Scalar<'a>) {
        let str = match s {
            Scalar::Str(w) => w,
            _ => b"",
        };
        match keys {
            [b"type"] => self.ty = str,
            [b"delta", b"type"] => self.delta_type = str,
            [b"delta", b"stop_reason"] if !str.is_empty() => self.reason = Some(str),
            [b"delta", ..] => self.delta_words |= words(s),
            [b"content_block", b"type"] => self.block_type = str,
            [b"content_block", ..] => self.block_words |= words(s),
            // OpenAI Chat (and the compatible APIs): the role is not content; reasoning is
            // thinking; any other field with words is the answer.
            [b"choices", ITEM, b"delta", b"role"] => self.known_shape = true,
            [b"choices", ITEM, b"delta", field, ..] => {
                self.known_shape = true;
                if words(s) {
                    if matches!(
                        *field,
                        b"reasoning_content" | b"reasoning" | b"reasoning_details" | b"thinking"
                    ) {
                        self.thinking = true;
                    } else {
                        self.output = true;
                    }
                }
            }
            [b"choices", ITEM, b"finish_reason"] if !str.is_empty() => self.reason = Some(str),
            [b"choices", ..] => self.known_shape = true,
            // Gemini.
            [b"candidates", ITEM, b"content", b"parts", ITEM, field, ..] => {
                self.known_shape = true;
                match *field {
                    b"text" => self.part_text |= words(s),
                    b"thought" => self.part_thought |= s == Scalar::Bool(true),
                    b"thoughtSignature" => {}
                    _ => self.part_other |= words(s),
                }
            }
            [b"candidates", ITEM, b"finishReason"] if !str.is_empty() => self.reason = Some(str),
            [b"candidates", ..] => self.known_shape = true,
            [b"promptFeedback", b"blockReason"] if !str.is_empty() => self.reason = Some(str),
            // The Responses API.
            [b"response", b"incomplete_details", b"reason"] if !str.is_empty() => {
                self.reason = Some(str)
            }
            [b"response", b"error", rest @ ..] => self.see_error(rest, s),
            [b"item", b"type"] => self.item_tool = !matches!(str, b"message" | b"reasoning"),
            // The AI SDK's `finish` part: a reason, or `{ unified, raw }` (raw asked when
            // unified says little).
            [b"finishReason"] if !str.is_empty() => self.reason = Some(str),
            [b"finishReason", b"unified"] if !str.is_empty() => {
                self.reason = self.reason.or(Some(str))
            }
            [b"finishReason", b"raw"]
                if !str.is_empty()
                    && self.reason.is_none_or(|r| Ending::of(r) == Ending::Unknown) =>
            {
                self.reason = Some(str)
            }
            [b"error", rest @ ..] => self.see_error(rest, s),
            _ => {}
        }
    }

    /// A field of an error object (or the error itself, a string).
    fn see_error(&mut self, rest: &[&[u8]], s: Scalar<'_>) {
        if s == Scalar::Null {
            return;
        }
        self.error = true;
        if let ([b"code"] | [b"error", b"code"], Scalar::Num(n)) = (rest, s) {
            self.error_status = core::str::from_utf8(n).ok().and_then(|n| n.parse().ok());
        }
    }

    fn reading(self, data: &[u8], source: Source) -> Reading {
        let ty = self.ty;
        let mut ending = self.reason.map(Ending::of);
        let mut error = self.error;
        let progress = match ty {
            b"ping" | b"keepalive" => Progress::KeepAlive,
            b"error" => {
                error = true;
                Progress::None
            }
            // Anthropic.
            b"content_block_delta" if self.delta_words => match self.delta_type {
                b"thinking_delta" | b"signature_delta" => Progress::Thinking,
                _ => Progress::Output,
            },
            b"content_block_start" => match self.block_type {
                b"text" if self.block_words => Progress::Output,
                b"thinking" | b"redacted_thinking" if self.block_words => Progress::Thinking,
                b"text" | b"thinking" | b"redacted_thinking" | b"" => Progress::None,
                // A tool call, a server tool's call or result, a compaction block, an image.
                _ => Progress::Output,
            },
            b"message_start"
            | b"message_delta"
            | b"message_stop"
            | b"content_block_stop"
            | b"content_block_delta" => Progress::None,
            // The Responses API.
            b"response.completed" | b"response.failed" => {
                ending = Some(Ending::of(ty.get(9..).unwrap_or_default()));
                error |= ty == b"response.failed";
                Progress::None
            }
            b"response.image_generation_call.partial_image" => Progress::Output,
            b"response.output_item.done" if self.item_tool => Progress::Output,
            _ if ty.starts_with(b"response.") => {
                if ty.ends_with(b".delta") && self.delta_words {
                    if contains(ty, b"reasoning") {
                        Progress::Thinking
                    } else {
                        Progress::Output
                    }
                } else {
                    Progress::None
                }
            }
            // The AI SDK's parts.
            b"text-delta" | b"tool-input-delta" if self.delta_words => Progress::Output,
            b"reasoning-delta" if self.delta_words => Progress::Thinking,
            b"tool-call" | b"tool-result" | b"tool-approval-request" | b"file" | b"source" => {
                Progress::Output
            }
            b"reasoning-file" => Progress::Thinking,
            b"text-delta" | b"tool-input-delta" | b"reasoning-delta" | b"stream-start"
            | b"response-metadata" | b"text-start" | b"text-end" | b"reasoning-start"
            | b"reasoning-end" | b"tool-input-start" | b"tool-input-end" | b"finish"
            | b"start-step" | b"finish-step" | b"start" | b"raw" | b"custom" => Progress::None,
            // Chat Completions and Gemini (no type): where their content goes.
            b"" if self.known_shape => {
                if self.output || self.part_other || (self.part_text && !self.part_thought) {
                    Progress::Output
                } else if self.thinking || self.part_text {
                    Progress::Thinking
                } else {
                    Progress::None
                }
            }
            b"" if error => Progress::None,
            // A shape not known: for an event stream a type naming a delta is the answer; a
            // stream object's chunk is.
            _ => match source {
                Source::Objects => Progress::Output,
                Source::Events if ty.ends_with(b"delta") || ty.is_empty() => Progress::Output,
                Source::Events => Progress::None,
            },
        };
        Reading {
            progress,
            ending,
            error: error.then(|| failure(data, self.error_status)),
            malformed: false,
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
