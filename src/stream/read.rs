//! What one item of a streamed answer says: an event of a `text/event-stream` body, or a chunk
//! of an SDK's stream object (its JSON), read by one rule for every provider.

use super::scan::{walk, Scalar, ITEM};
use super::sse::SseItem;
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
                    r.error = Some(failure(b"", b"", None));
                }
                r.progress = Progress::None;
                return r;
            }
            _ => {}
        }
        Reading::json(data, Source::Events)
    }

    /// What an event stream's item says: a comment keeps the connection alive; an event longer
    /// than [`MAX_EVENT_BYTES`](super::MAX_EVENT_BYTES), its JSON cut by the splitter, is a
    /// provider's large event (a partial image in base64): the answer, not a broken frame.
    pub fn item(item: &SseItem<'_>) -> Reading {
        match *item {
            SseItem::Comment => Reading::KEEP_ALIVE,
            SseItem::Event {
                name,
                data,
                truncated,
            } => {
                let r = Reading::event(name, data);
                if truncated && r.malformed {
                    Reading {
                        progress: Progress::Output,
                        ..Reading::default()
                    }
                } else {
                    r
                }
            }
        }
    }

    /// A chunk's JSON (an event's data, or an SDK's stream event serialised); text that is not
    /// JSON is the answer itself (a plain text stream), except `[DONE]`.
    pub fn json(data: &[u8], source: Source) -> Reading {
        let text = trim(data);
        match text.first() {
            None => return Reading::default(),
            _ if text == b"[DONE]" => return Reading::default(),
            Some(b'{' | b'[') => {}
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
        f.reading(source)
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

/// The most of an error's codes read (its `code`, `type` and `status` strings, a line each).
const CODES: usize = 192;

/// An error of `codes` (one a line) and `message`, with `numeric` the error's numeric `code`
/// (Gemini's 429, OpenRouter's 502).
fn failure(codes: &[u8], message: &[u8], numeric: Option<u16>) -> StreamFailure {
    let code = Code::read(codes, message);
    let status = numeric
        .filter(|s| (400..=599).contains(s))
        .or(code.map(Code::status))
        .unwrap_or(500);
    StreamFailure { code, status }
}

/// What the walk saw, decided on once it ends (a chunk's fields come in any order).
struct Facts<'a> {
    /// The top-level `type`, Anthropic's `delta.type` and `content_block.type`.
    ty: &'a [u8],
    delta_type: &'a [u8],
    block_type: &'a [u8],
    /// Words seen where the answer goes, and where thinking goes (Chat Completions, Gemini).
    output: bool,
    thinking: bool,
    /// Gemini: a part's text, a part marked `thought`.
    part_text: bool,
    part_thought: bool,
    /// Words under `delta` (Anthropic's object, the Responses API's and the AI SDK's string),
    /// under Anthropic's `content_block`.
    delta_words: bool,
    block_words: bool,
    /// A Responses `output_item` that is not a message or reasoning.
    item_tool: bool,
    /// The model's refusal in words (Chat Completions' `delta.refusal`).
    refused: bool,
    /// An AI SDK `raw` part: a provider's chunk, or what did not parse (then nothing).
    raw: bool,
    /// Choices or candidates: the shapes whose content has a known place.
    known_shape: bool,
    /// The ending's reason as named; the AI SDK's `raw` one, asked when the unified one says little.
    reason: Option<&'a [u8]>,
    raw_reason: Option<&'a [u8]>,
    /// An error: at the top (`error`), or a failed response's; its numeric code.
    error: bool,
    error_status: Option<u16>,
    /// Its code, type and status strings (a line each, up to [`CODES`] bytes) and its message.
    codes: [u8; CODES],
    codes_len: usize,
    message: &'a [u8],
}

impl Default for Facts<'_> {
    fn default() -> Self {
        Facts {
            ty: b"",
            delta_type: b"",
            block_type: b"",
            output: false,
            thinking: false,
            part_text: false,
            part_thought: false,
            delta_words: false,
            block_words: false,
            item_tool: false,
            refused: false,
            raw: false,
            known_shape: false,
            reason: None,
            raw_reason: None,
            error: false,
            error_status: None,
            codes: [0; CODES],
            codes_len: 0,
            message: b"",
        }
    }
}

/// What a field at a path tells.
#[derive(Clone, Copy)]
enum Fact {
    Type,
    DeltaType,
    BlockType,
    Reason,
    RawReason,
    DeltaWords,
    BlockWords,
    /// Chat Completions' `delta.<field>`: the field is the path's fourth key.
    ChatField,
    /// Gemini's `parts[].<field>`: the field is the path's sixth key.
    PartField,
    Shape,
    /// Chat Completions' `object`: a chunk of that shape even without choices (a usage chunk).
    Object,
    ItemType,
    Error,
}

/// Any one key of a path; [`REST`] ends a pattern that matches every path it begins.
const ANY: &[u8] = b"*";
const REST: &[u8] = b"..";

/// Where each provider puts what the guard reads, first match wins. A table rather than a
/// `match` on byte strings: the .wasm carries it as data (a `match` compiles each comparison).
const PATHS: &[(&[&[u8]], Fact)] = &[
    (&[b"type"], Fact::Type),
    // Anthropic: a delta's type and words, its stop reason; a block's type and words.
    (&[b"delta", b"type"], Fact::DeltaType),
    (&[b"delta", b"stop_reason"], Fact::Reason),
    (&[b"delta", REST], Fact::DeltaWords),
    // The AI SDK's `fullStream` parts carry a delta's words as `text` (`textDelta` before 5).
    (&[b"text"], Fact::DeltaWords),
    (&[b"textDelta"], Fact::DeltaWords),
    (&[b"content_block", b"type"], Fact::BlockType),
    (&[b"content_block", REST], Fact::BlockWords),
    // OpenAI Chat (and the compatible APIs): the role is not content, reasoning is thinking,
    // any other field with words is the answer.
    (&[b"choices", ITEM, b"delta", ANY, REST], Fact::ChatField),
    (&[b"choices", ITEM, b"finish_reason"], Fact::Reason),
    (&[b"choices", REST], Fact::Shape),
    (&[b"object"], Fact::Object),
    // Gemini.
    (
        &[b"candidates", ITEM, b"content", b"parts", ITEM, ANY, REST],
        Fact::PartField,
    ),
    (&[b"candidates", ITEM, b"finishReason"], Fact::Reason),
    (&[b"candidates", REST], Fact::Shape),
    (&[b"promptFeedback", b"blockReason"], Fact::Reason),
    // The Responses API.
    (
        &[b"response", b"incomplete_details", b"reason"],
        Fact::Reason,
    ),
    (&[b"response", b"error", REST], Fact::Error),
    (&[b"item", b"type"], Fact::ItemType),
    // The AI SDK's `finish` part: a reason, or `{ unified, raw }`.
    (&[b"finishReason"], Fact::Reason),
    (&[b"finishReason", b"unified"], Fact::Reason),
    (&[b"finishReason", b"raw"], Fact::RawReason),
    (&[b"error", REST], Fact::Error),
];

/// Chat Completions' fields that hold thinking.
const THINKING_FIELDS: &[&[u8]] = &[
    b"reasoning_content",
    b"reasoning",
    b"reasoning_details",
    b"thinking",
];

fn matches(pattern: &[&[u8]], keys: &[&[u8]]) -> bool {
    let mut k = keys.iter();
    for &p in pattern {
        if p == REST {
            return true;
        }
        match k.next() {
            Some(&key) if p == ANY || p == key => {}
            _ => return false,
        }
    }
    k.next().is_none()
}

/// How a `type` reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    KeepAlive,
    Error,
    /// Anthropic's `content_block_delta`: words under `delta`, thinking by the delta's type.
    BlockDelta,
    /// Anthropic's `content_block_start`: by the block's type.
    BlockStart,
    /// The Responses API's ending events (the ending is in the type's name).
    ResponseEnd,
    /// The answer, whatever it holds (a tool call, a file, a partial image).
    Output,
    Thinking,
    /// The answer when it has words in `delta`.
    OutputDelta,
    ThinkingDelta,
    /// A Responses output item done: the answer if it is a tool's.
    ItemDone,
    /// Nothing of the answer.
    Marker,
}

/// The types every provider and the AI SDK name, and how each reads. Others: see `unlisted`.
const TYPES: &[(&[u8], Kind)] = &[
    (b"ping", Kind::KeepAlive),
    (b"keepalive", Kind::KeepAlive),
    (b"error", Kind::Error),
    // Anthropic.
    (b"content_block_delta", Kind::BlockDelta),
    (b"content_block_start", Kind::BlockStart),
    (b"message_start", Kind::Marker),
    (b"message_delta", Kind::Marker),
    (b"message_stop", Kind::Marker),
    (b"content_block_stop", Kind::Marker),
    // The Responses API (its other `response.*` events: by their names, in `unlisted`).
    (b"response.completed", Kind::ResponseEnd),
    (b"response.failed", Kind::ResponseEnd),
    (
        b"response.image_generation_call.partial_image",
        Kind::Output,
    ),
    (b"response.output_item.done", Kind::ItemDone),
    // The AI SDK's stream parts.
    (b"text-delta", Kind::OutputDelta),
    (b"tool-input-delta", Kind::OutputDelta),
    (b"reasoning-delta", Kind::ThinkingDelta),
    (b"tool-call", Kind::Output),
    (b"tool-result", Kind::Output),
    (b"tool-approval-request", Kind::Output),
    (b"file", Kind::Output),
    (b"source", Kind::Output),
    (b"reasoning-file", Kind::Thinking),
    (b"stream-start", Kind::Marker),
    (b"response-metadata", Kind::Marker),
    (b"text-start", Kind::Marker),
    (b"text-end", Kind::Marker),
    (b"reasoning-start", Kind::Marker),
    (b"reasoning-end", Kind::Marker),
    (b"tool-input-start", Kind::Marker),
    (b"tool-input-end", Kind::Marker),
    (b"finish", Kind::Marker),
    (b"start-step", Kind::Marker),
    (b"finish-step", Kind::Marker),
    (b"start", Kind::Marker),
    (b"raw", Kind::Marker),
    (b"custom", Kind::Marker),
];

/// Anthropic's block types that are nothing until they hold words (others are the answer: a
/// tool call, a server tool's call or result, a compaction block).
const WORD_BLOCKS: &[&[u8]] = &[b"text", b"thinking", b"redacted_thinking", b""];

fn find<T: Copy>(table: &[(&[u8], T)], name: &[u8]) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

impl<'a> Facts<'a> {
    fn see(&mut self, keys: &[&'a [u8]], s: Scalar<'a>) {
        // The AI SDK's `raw` part (`includeRawChunks`) is read as the provider's chunk it holds.
        let keys = match keys.split_first() {
            Some((&b"rawValue", inner)) => inner,
            Some((&b"type", [])) if s == Scalar::Str(b"raw") => {
                self.raw = true;
                return;
            }
            _ => keys,
        };
        let Some(&(_, fact)) = PATHS.iter().find(|(p, _)| matches(p, keys)) else {
            return;
        };
        let str = match s {
            Scalar::Str(w) => Some(w).filter(|w| !w.is_empty()),
            _ => None,
        };
        let key = |i: usize| keys.get(i).copied().unwrap_or_default();
        match fact {
            Fact::Type => self.ty = str.unwrap_or_default(),
            Fact::DeltaType => self.delta_type = str.unwrap_or_default(),
            Fact::BlockType => self.block_type = str.unwrap_or_default(),
            Fact::Reason => self.reason = self.reason.or(str),
            Fact::RawReason => self.raw_reason = str,
            Fact::DeltaWords => self.delta_words |= str.is_some(),
            Fact::BlockWords => self.block_words |= str.is_some(),
            Fact::ChatField => {
                self.known_shape = true;
                if str.is_some() && key(3) != b"role" {
                    if THINKING_FIELDS.contains(&key(3)) {
                        self.thinking = true;
                    } else {
                        self.output = true;
                        // A refusal's words: the answer is declined, whatever finish follows.
                        self.refused |= key(3) == b"refusal";
                    }
                }
            }
            Fact::PartField => {
                self.known_shape = true;
                match key(5) {
                    b"text" => self.part_text |= str.is_some(),
                    b"thought" => self.part_thought |= s == Scalar::Bool(true),
                    b"thoughtSignature" => {}
                    _ => self.output |= str.is_some(),
                }
            }
            Fact::Shape => self.known_shape = true,
            Fact::Object => self.known_shape |= str == Some(b"chat.completion.chunk"),
            Fact::ItemType => self.item_tool = !matches!(str, Some(b"message" | b"reasoning")),
            Fact::Error => {
                if s == Scalar::Null {
                    return;
                }
                self.error = true;
                match (s, key(keys.len().saturating_sub(1))) {
                    (Scalar::Num(n), b"code") => self.error_status = number(n),
                    (Scalar::Str(m), b"message") => self.message = m,
                    (Scalar::Str(c), b"code" | b"type" | b"status") => {
                        let at = self.codes_len;
                        if let Some(room) = self.codes.get_mut(at..at + c.len() + 1) {
                            room[..c.len()].copy_from_slice(c);
                            room[c.len()] = b'\n';
                            self.codes_len += c.len() + 1;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// What the item says, decided once the walk has seen all of it.
    fn reading(self, source: Source) -> Reading {
        let kind = find(TYPES, self.ty).unwrap_or_else(|| self.unlisted(source));
        // The Responses API's ending events name how the response ended, whatever reason came
        // before them.
        let ended = (kind == Kind::ResponseEnd).then(|| {
            if self.ty == b"response.failed" {
                Ending::Failed
            } else {
                Ending::Complete
            }
        });
        let error = self.error || kind == Kind::Error || ended == Some(Ending::Failed);
        Reading {
            progress: self.progress(kind),
            ending: ended.or_else(|| self.ending()),
            error: error.then(|| {
                let codes = self.codes.get(..self.codes_len).unwrap_or_default();
                failure(codes, self.message, self.error_status)
            }),
            malformed: false,
        }
    }

    /// How an item reads whose `type` is not in [`TYPES`] (or that has none).
    fn unlisted(&self, source: Source) -> Kind {
        let ty = self.ty;
        if ty.starts_with(b"response.") {
            // The Responses API's deltas: reasoning's are thinking, the others the answer.
            match (ty.ends_with(b".delta"), contains(ty, b"reasoning")) {
                (true, true) => Kind::ThinkingDelta,
                (true, false) => Kind::OutputDelta,
                _ => Kind::Marker,
            }
        } else if !ty.is_empty() {
            // A type not known: for an event stream one naming a delta is the answer; a
            // stream object's chunk is.
            if source == Source::Objects || ty.ends_with(b"delta") {
                Kind::Output
            } else {
                Kind::Marker
            }
        } else if self.known_shape {
            // Chat Completions and Gemini, by where their words are.
            if self.output || (self.part_text && !self.part_thought) {
                Kind::Output
            } else if self.thinking || self.part_text {
                Kind::Thinking
            } else {
                Kind::Marker
            }
        } else if self.error {
            Kind::Error
        } else if self.raw {
            // A raw part of no provider's shape (a frame that did not parse): the parts say it.
            Kind::Marker
        } else {
            // JSON of a shape not known, without a type: the answer.
            Kind::Output
        }
    }

    /// What an item of `kind` shows of the model at work, by the words it carries.
    fn progress(&self, kind: Kind) -> Progress {
        match kind {
            Kind::KeepAlive => Progress::KeepAlive,
            Kind::BlockDelta if !self.delta_words => Progress::None,
            Kind::BlockDelta => match self.delta_type {
                b"thinking_delta" | b"signature_delta" => Progress::Thinking,
                _ => Progress::Output,
            },
            Kind::BlockStart if WORD_BLOCKS.contains(&self.block_type) => {
                match (self.block_words, self.block_type) {
                    (false, _) => Progress::None,
                    (true, b"text") => Progress::Output,
                    (true, _) => Progress::Thinking,
                }
            }
            Kind::BlockStart | Kind::Output => Progress::Output,
            Kind::OutputDelta if self.delta_words => Progress::Output,
            Kind::ThinkingDelta if self.delta_words => Progress::Thinking,
            Kind::Thinking => Progress::Thinking,
            Kind::ItemDone if self.item_tool => Progress::Output,
            // An error and an ending (`ResponseEnd`) say nothing of the answer.
            _ => Progress::None,
        }
    }

    /// The ending the item's reason names. A refusal declines the answer, whatever finish
    /// follows.
    fn ending(&self) -> Option<Ending> {
        if self.refused || self.ty == b"response.refusal.delta" {
            return Some(Ending::Declined);
        }
        let mut reason = self.reason;
        // The AI SDK's unified reason says little (`other`): its raw one is asked.
        if reason.is_none_or(|r| Ending::of(r) == Ending::Unknown) {
            reason = self.raw_reason.or(reason);
        }
        reason.map(Ending::of)
    }
}

/// A small decimal number (an error's numeric code).
fn number(n: &[u8]) -> Option<u16> {
    if n.is_empty() || n.len() > 4 {
        return None;
    }
    n.iter().try_fold(0u16, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u16)
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(json: &str) -> Progress {
        Reading::json(json.as_bytes(), Source::Objects).progress
    }

    #[test]
    fn the_ai_sdks_raw_parts_are_the_providers_chunks() {
        let refusal = r#"{"type":"raw","rawValue":{"id":"c","choices":[{"index":0,"delta":{"refusal":"I can't"}}]}}"#;
        let r = Reading::json(refusal.as_bytes(), Source::Objects);
        assert_eq!(
            (r.progress, r.ending),
            (Progress::Output, Some(Ending::Declined))
        );
        let ping = r#"{"type":"raw","rawValue":{"type":"ping"}}"#;
        assert_eq!(progress(ping), Progress::KeepAlive);
        let role = r#"{"type":"raw","rawValue":{"choices":[{"delta":{"role":"assistant","content":""}}]}}"#;
        assert_eq!(progress(role), Progress::None);
        let usage = r#"{"type":"raw","rawValue":{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":8}}}"#;
        assert_eq!(progress(usage), Progress::None);
        let unparsed = r#"{"type":"raw","rawValue":"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_de"}"#;
        assert_eq!(progress(unparsed), Progress::None);
    }

    #[test]
    fn the_ai_sdks_parts_in_each_version() {
        // LanguageModel stream parts (`delta`), fullStream parts (`text`), AI SDK 4 (`textDelta`).
        assert_eq!(
            progress(r#"{"type":"text-delta","id":"1","delta":"Hi"}"#),
            Progress::Output
        );
        assert_eq!(
            progress(r#"{"type":"text-delta","id":"1","text":"Hi"}"#),
            Progress::Output
        );
        assert_eq!(
            progress(r#"{"type":"text-delta","textDelta":"Hi"}"#),
            Progress::Output
        );
        assert_eq!(
            progress(r#"{"type":"reasoning-delta","id":"r","text":"hmm"}"#),
            Progress::Thinking
        );
        assert_eq!(
            progress(r#"{"type":"text-delta","id":"1","delta":""}"#),
            Progress::None
        );
        assert_eq!(
            progress(r#"{"type":"text-start","id":"1"}"#),
            Progress::None
        );
        assert_eq!(
            progress(r#"{"type":"tool-call","toolCallId":"c","toolName":"f","input":"{}"}"#),
            Progress::Output
        );
        let finish = Reading::json(
            br#"{"type":"finish","finishReason":{"unified":"other","raw":"refusal"}}"#,
            Source::Objects,
        );
        assert_eq!(finish.ending, Some(Ending::Declined));
        let error = Reading::json(br#"{"type":"error","error":{}}"#, Source::Objects);
        assert_eq!(error.error.map(|e| e.status), Some(500));
    }

    #[test]
    fn empty_fields_are_not_content() {
        let usage = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"total_tokens":8}}"#;
        assert_eq!(progress(usage), Progress::None);
        assert_eq!(
            progress(r#"{"object":"chat.completion.chunk","usage":{"total_tokens":8}}"#),
            Progress::None
        );
        let role = r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"","tool_calls":[]},"finish_reason":null}]}"#;
        assert_eq!(progress(role), Progress::None);
        assert_eq!(
            progress(r#"{"choices":[{"delta":{"reasoning_content":"so"}}]}"#),
            Progress::Thinking
        );
        assert_eq!(
            progress(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]}"#
            ),
            Progress::Output
        );
        assert_eq!(
            progress(r#"{"candidates":[{"content":{"parts":[{"text":""}]}}]}"#),
            Progress::None
        );
        assert_eq!(
            progress(r#"{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}]}}]}"#),
            Progress::Thinking
        );
    }

    #[test]
    fn errors_carry_their_status() {
        let gemini = Reading::json(
            br#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}"#,
            Source::Events,
        );
        assert_eq!(gemini.error.map(|e| e.status), Some(429));
        let anthropic = Reading::event(
            b"error",
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(
            anthropic.error,
            Some(StreamFailure {
                code: Some(Code::Overloaded),
                status: 529
            })
        );
        let spent = Reading::json(br#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low"}}"#, Source::Events);
        assert_eq!(spent.error.and_then(|e| e.code), Some(Code::QuotaExhausted));
        let not_json = Reading::event(b"error", b"upstream went away");
        assert_eq!(not_json.error.map(|e| e.status), Some(500));
        // `"error": null` is no error.
        let created = Reading::json(
            br#"{"type":"response.created","response":{"error":null}}"#,
            Source::Events,
        );
        assert_eq!((created.error, created.progress), (None, Progress::None));
    }

    #[test]
    fn an_events_reading_from_the_splitter() {
        assert_eq!(Reading::item(&SseItem::Comment), Reading::KEEP_ALIVE);
        let cut =
            br#"{"type":"response.image_generation_call.partial_image","partial_image_b64":"iVBOR"#;
        let big = SseItem::Event {
            name: b"",
            data: cut,
            truncated: true,
        };
        assert_eq!(Reading::item(&big).progress, Progress::Output);
        assert!(!Reading::item(&big).malformed);
        let broken = SseItem::Event {
            name: b"",
            data: cut,
            truncated: false,
        };
        assert!(Reading::item(&broken).malformed);
    }

    #[test]
    fn broken_frames_and_plain_text() {
        assert!(
            Reading::json(
                br#"{"type":"content_block_delta","delta":{"type":"text_de"#,
                Source::Events
            )
            .malformed
        );
        assert!(!Reading::json(b"[DONE]", Source::Events).malformed);
        assert_eq!(
            Reading::json(b"plain words", Source::Events).progress,
            Progress::Output
        );
        assert_eq!(
            Reading::json(b"  ", Source::Events).progress,
            Progress::None
        );
    }
}
