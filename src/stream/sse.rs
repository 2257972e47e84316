//! A `text/event-stream` body split into events, by the WHATWG rules that matter here: LF, CR or
//! CRLF line ends (a CRLF may straddle two chunks), `event:` and `data:` fields (several `data:`
//! lines joined with LF), comments, one optional space after the colon. The bytes themselves are
//! the host's to pass on untouched; only their meaning is read here.

use alloc::vec::Vec;

/// The most of one event's data (or one line) kept: past it the rest is not kept, and the event
/// is handed over `truncated` (a provider's large event is an answer: a partial image in base64).
pub const MAX_EVENT_BYTES: usize = 1 << 20;
/// The most of an `event:` name kept.
const MAX_NAME: usize = 64;

/// One thing the stream said.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SseItem<'a> {
    /// An event: its `event:` field (empty for none), its data, and whether the data was longer
    /// than [`MAX_EVENT_BYTES`] (only its beginning is here).
    Event {
        /// The `event:` field.
        name: &'a [u8],
        /// The `data:` lines, joined.
        data: &'a [u8],
        /// Longer than [`MAX_EVENT_BYTES`].
        truncated: bool,
    },
    /// A comment line (`: OPENROUTER PROCESSING`): the connection is alive.
    Comment,
}

/// Splits an event stream's bytes, chunk by chunk, into [`SseItem`]s. Memory: at most one line
/// and one event's data, each capped at [`MAX_EVENT_BYTES`].
#[derive(Default, Debug)]
pub struct SseSplitter {
    line: Vec<u8>,
    name: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    truncated: bool,
    /// The last chunk ended in CR: a LF starting the next one ends nothing.
    after_cr: bool,
}

impl SseSplitter {
    /// A splitter at the start of a stream.
    pub fn new() -> Self {
        SseSplitter::default()
    }

    /// Reads `bytes`, calling `out` with every item they complete.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut dyn FnMut(SseItem<'_>)) {
        if self.after_cr {
            self.after_cr = false;
            if let Some((b'\n', rest)) = bytes.split_first() {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.keep(bytes);
                return;
            };
            let (part, rest) = bytes.split_at(end);
            self.keep(part);
            let line = core::mem::take(&mut self.line);
            self.line_ended(&line, out);
            self.line = line;
            self.line.clear();
            let cr = rest.first() == Some(&b'\r');
            bytes = rest.get(1..).unwrap_or_default();
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = bytes.get(1..).unwrap_or_default(),
                    None => self.after_cr = true,
                    _ => {}
                }
            }
        }
    }

    /// Adds to the line, up to the cap.
    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_EVENT_BYTES.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.line
            .extend_from_slice(bytes.get(..room).unwrap_or(bytes));
    }

    fn line_ended(&mut self, line: &[u8], out: &mut dyn FnMut(SseItem<'_>)) {
        if line.is_empty() {
            if self.has_data {
                out(SseItem::Event {
                    name: &self.name,
                    data: &self.data,
                    truncated: self.truncated,
                });
            }
            self.name.clear();
            self.data.clear();
            self.has_data = false;
            self.truncated = false;
            return;
        }
        let colon = line.iter().position(|&b| b == b':');
        if colon == Some(0) {
            return out(SseItem::Comment);
        }
        let (field, value) = match colon {
            Some(c) => {
                let v = line.get(c + 1..).unwrap_or_default();
                (
                    line.get(..c).unwrap_or_default(),
                    v.strip_prefix(b" ").unwrap_or(v),
                )
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.has_data = true;
                let room = MAX_EVENT_BYTES.saturating_sub(self.data.len());
                if value.len() > room {
                    self.truncated = true;
                }
                self.data
                    .extend_from_slice(value.get(..room).unwrap_or(value));
            }
            b"event" => {
                self.name.clear();
                self.name
                    .extend_from_slice(value.get(..MAX_NAME).unwrap_or(value));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut s = SseSplitter::new();
        let mut got = Vec::new();
        for c in chunks {
            s.push(c, &mut |item| {
                got.push(match item {
                    SseItem::Event {
                        name,
                        data,
                        truncated,
                    } => alloc::format!(
                        "{}|{}{}",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(data),
                        if truncated { "|truncated" } else { "" }
                    ),
                    SseItem::Comment => String::from(":"),
                })
            });
        }
        got
    }

    #[test]
    fn splits_events_across_chunks_and_line_ends() {
        let whole: &[u8] = b"event: ping\ndata: {\"type\":\"ping\"}\n\n: keep\n\ndata:a\r\ndata: b\r\n\r\nevent:x\rdata:c\r\r";
        let want = vec!["ping|{\"type\":\"ping\"}", ":", "|a\nb", "x|c"];
        assert_eq!(split(&[whole]), want);
        // Every split point, CR and LF of a CRLF in two chunks included.
        for at in 0..whole.len() {
            let (a, b) = whole.split_at(at);
            assert_eq!(split(&[a, b]), want, "split at {at}");
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(split(&bytes), want);
    }

    #[test]
    fn an_event_without_data_or_end_is_not_handed_over() {
        assert_eq!(
            split(&[b"event: x\n\n", b"data: unfinished\n"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_long_event_is_kept_to_its_cap() {
        let mut s = SseSplitter::new();
        let big = vec![b'x'; MAX_EVENT_BYTES + 10];
        let mut seen = None;
        s.push(b"data: ", &mut |_| {});
        for c in big.chunks(4096) {
            s.push(c, &mut |_| {});
        }
        s.push(b"\n\n", &mut |item| {
            if let SseItem::Event {
                data, truncated, ..
            } = item
            {
                seen = Some((data.len(), truncated));
            }
        });
        assert_eq!(seen, Some((MAX_EVENT_BYTES - 6, true)));
        assert!(s.line.capacity() <= 2 * MAX_EVENT_BYTES);
    }
}
