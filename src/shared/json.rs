//! The shared protocol's JSON, read and written here for every host: a small reader into a tree
//! of borrowed values and a writer, and [`Wire`], which each message type implements once (in
//! `src/shared/wire.rs`) by naming its fields.
//!
//! The spelling is serde_json's, byte for byte (records and messages outlive deploys, and hosts of
//! two versions meet during one): compact output, fields in declaration order, `null` for an
//! absent value unless the field is left out when empty, integers as written, floats as their
//! shortest representation laid out as serde_json lays them out (`30.0`, `0.1`, `1e-7`, `1e+21`),
//! strings escaped alike. Reading accepts what serde_json's derived readers accepted: whitespace,
//! fields in any order, integers for float fields; and refuses what they refused: unknown fields
//! where the type says so, duplicate or missing fields, fractions for integer fields, values out
//! of range, numbers too large for a double anywhere, trailing characters, more than 127 levels
//! of nesting. Floats are read exactly (correctly rounded), which serde_json did not always do;
//! what this writes is read back to the same bits. One difference, on purpose: serde's derive
//! also read a struct from an array of its fields in order, which no version ever wrote.
//! tests/shared_wire.rs holds this reader to what serde_json writes for every type, and this
//! writer to serde_json's for the types that keep their serde impls (the settings and snapshots).
//!
//! Why not serde: its derived code is instantiated for every message type and every format, and
//! with serde_json it was most of the `breakwater_shared.wasm` the npm package ships; here the
//! work per type is a table of field names and one line per field, and the reading and writing
//! is done once, for every type. The messages and the coordinator's records have no serde impls:
//! this is their one codec, in every build.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt;

use crate::float::{push, zeros, Digits};

/// A parsed JSON value, borrowing from the text where it can.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written (valid JSON number syntax); read it with the type that wants it.
    Number(&'a str),
    /// A string, unescaped.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Value<'a>>),
    /// An object's entries, in order (duplicates kept: readers refuse them where serde did).
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

/// Why a text is not a value of the type asked for: what is wrong, and where (a line and column
/// for the syntax, a path such as `batches[0].seq` for the content).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    what: String,
    path: String,
}

impl Error {
    /// An error about the value at hand (its place is added on the way out).
    #[inline(never)]
    pub fn new(what: impl Into<String>) -> Self {
        Error(Box::new(Inner {
            what: what.into(),
            path: String::new(),
        }))
    }

    /// The same error, inside the field `key` of an object (or, for `[i]`, an array's item).
    #[inline(never)]
    pub(crate) fn at(mut self, key: &str) -> Self {
        let path = &mut self.0.path;
        if !path.is_empty() && !path.starts_with('[') {
            path.insert(0, '.');
        }
        path.insert_str(0, key);
        self
    }

    /// The same error, inside item `i` of an array.
    #[inline(never)]
    pub(crate) fn item(self, i: usize) -> Self {
        self.at(&alloc::format!("[{i}]"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.what)?;
        if !self.0.path.is_empty() {
            write!(f, " at `{}`", self.0.path)?;
        }
        Ok(())
    }
}

impl core::error::Error for Error {}

/// A type as the shared protocol spells it in JSON.
pub trait Wire: Sized {
    /// Writes it.
    fn write(&self, w: &mut Writer);
    /// Reads it from a parsed value.
    fn read(v: &Value<'_>) -> Result<Self, Error>;
}

/// Parses `text` as a `T`.
#[inline(never)]
pub fn from_str<T: Wire>(text: &str) -> Result<T, Error> {
    T::read(&parse(text)?)
}

/// `value` as compact JSON.
#[inline(never)]
pub fn to_string<T: Wire>(value: &T) -> String {
    let mut w = Writer::default();
    value.write(&mut w);
    w.out
}

// ---- reading text ----

/// serde_json's limit (127 arrays or objects deep), which also bounds the reader's stack.
const MAX_DEPTH: u32 = 128;

/// Parses one JSON value (and nothing after it but whitespace).
pub fn parse(text: &str) -> Result<Value<'_>, Error> {
    let mut p = Parser {
        s: text,
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i < text.len() {
        return Err(p.fail("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
    depth: u32,
}

impl<'a> Parser<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// An error at the current position, as line and column (1-based, columns in bytes).
    fn fail(&self, what: &str) -> Error {
        let before = self.s.as_bytes().get(..self.i).unwrap_or_default();
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + before.iter().rev().take_while(|&&b| b != b'\n').count();
        Error::new(alloc::format!("{what} at line {line} column {column}"))
    }

    #[inline(always)]
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn value(&mut self) -> Result<Value<'a>, Error> {
        self.ws();
        let Some(b) = self.peek() else {
            return Err(self.fail("EOF while parsing a value"));
        };
        match b {
            b'"' => Ok(Value::String(self.string()?)),
            b'-' | b'0'..=b'9' => self.number(),
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth >= MAX_DEPTH {
                    return Err(self.fail("recursion limit exceeded"));
                }
                self.i += 1;
                let v = if b == b'[' {
                    self.array()
                } else {
                    self.object()
                };
                self.depth -= 1;
                v
            }
            _ => {
                for (word, v) in [
                    ("null", Value::Null),
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                ] {
                    if self.s.get(self.i..).is_some_and(|r| r.starts_with(word)) {
                        self.i += word.len();
                        return Ok(v);
                    }
                }
                Err(self.fail("expected value"))
            }
        }
    }

    fn array(&mut self) -> Result<Value<'a>, Error> {
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.fail("expected `,` or `]`"));
            }
        }
    }

    fn object(&mut self) -> Result<Value<'a>, Error> {
        let mut entries = Vec::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(Value::Object(entries));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.fail("key must be a string"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.fail("expected `:`"));
            }
            entries.push((key, self.value()?));
            self.ws();
            if self.eat(b'}') {
                return Ok(Value::Object(entries));
            }
            if !self.eat(b',') {
                return Err(self.fail("expected `,` or `}`"));
            }
        }
    }

    /// A number's text, checked against JSON's grammar (no leading zeros, digits after `.` and
    /// `e`); what it is worth is for the reader of the field to say.
    fn number(&mut self) -> Result<Value<'a>, Error> {
        let start = self.i;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let from = p.i;
            while let Some(b'0'..=b'9') = p.peek() {
                p.i += 1;
            }
            p.i - from
        };
        let int_start = self.i;
        let int = digits(self);
        if int > 1 && self.s.as_bytes().get(int_start) == Some(&b'0') {
            // A leading zero: the mistake is the digit after it.
            self.i = int_start + 1;
            return Err(self.fail("invalid number"));
        }
        let mut bad = int == 0;
        if self.eat(b'.') {
            bad |= digits(self) == 0;
        }
        if self.eat(b'e') || self.eat(b'E') {
            let _ = self.eat(b'+') || self.eat(b'-');
            bad |= digits(self) == 0;
        }
        if bad {
            return Err(self.fail("invalid number"));
        }
        let text = self.s.get(start..self.i).unwrap_or_default();
        // As serde_json does, anywhere in the document: a number too large for a double is a
        // mistake of the text, not of the field it is in.
        let float =
            self.i - int_start > 19 || text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
        if float && !crate::float::parse(text).is_some_and(f64::is_finite) {
            return Err(self.fail("number out of range"));
        }
        Ok(Value::Number(text))
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let h = self.s.get(self.i..self.i + 4).and_then(|h| {
            u32::from_str_radix(h, 16)
                .ok()
                .filter(|_| !h.starts_with('+'))
        });
        let Some(h) = h else {
            return Err(self.fail("invalid escape"));
        };
        self.i += 4;
        Ok(h)
    }

    fn string(&mut self) -> Result<Cow<'a, str>, Error> {
        self.i += 1; // the opening quote
        let mut owned: Option<String> = None;
        let mut run = self.i;
        loop {
            // Up to the next quote, escape or control character at once.
            let rest = self.s.as_bytes().get(self.i..).unwrap_or_default();
            self.i += rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(rest.len());
            let Some(b) = self.peek() else {
                return Err(self.fail("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    let tail = self.s.get(run..self.i).unwrap_or_default();
                    self.i += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(tail),
                        Some(mut o) => {
                            o.push_str(tail);
                            Cow::Owned(o)
                        }
                    });
                }
                b'\\' => {
                    let o = owned.get_or_insert_with(String::new);
                    o.push_str(self.s.get(run..self.i).unwrap_or_default());
                    self.i += 1;
                    let e = self.peek();
                    self.i += 1;
                    let c = match e {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let mut c = self.hex4()?;
                            if (0xD800..0xDC00).contains(&c) {
                                // A leading surrogate must be followed by a trailing one.
                                if !(self.eat(b'\\') && self.eat(b'u')) {
                                    return Err(self.fail("lone leading surrogate in hex escape"));
                                }
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(self.fail("invalid unicode code point"));
                                }
                                c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
                            }
                            match char::from_u32(c) {
                                Some(c) => c,
                                None => return Err(self.fail("invalid unicode code point")),
                            }
                        }
                        _ => return Err(self.fail("invalid escape")),
                    };
                    o.push(c);
                    run = self.i;
                }
                0..=0x1f => {
                    return Err(self
                        .fail("control character (\\u0000-\\u001F) found while parsing a string"))
                }
                _ => self.i += 1,
            }
        }
    }
}

// ---- reading values ----

impl<'a> Value<'a> {
    /// What it is, for an error message.
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// The error for a value that is not a `what`.
    #[inline(never)]
    pub fn invalid(&self, what: &str) -> Error {
        Error::new(match self {
            Value::Number(n) => alloc::format!("invalid type: number `{n}`, expected {what}"),
            v => alloc::format!("invalid type: {}, expected {what}", v.kind()),
        })
    }

    /// The string it holds.
    #[inline(never)]
    pub fn str(&self) -> Result<&str, Error> {
        match self {
            Value::String(s) => Ok(s),
            v => Err(v.invalid("a string")),
        }
    }

    /// The items of an array.
    #[inline(never)]
    pub fn items(&self) -> Result<&[Value<'a>], Error> {
        match self {
            Value::Array(a) => Ok(a),
            v => Err(v.invalid("an array")),
        }
    }

    /// The entries of an object.
    #[inline(never)]
    pub fn entries(&self) -> Result<&[(Cow<'a, str>, Value<'a>)], Error> {
        match self {
            Value::Object(o) => Ok(o),
            v => Err(v.invalid("an object")),
        }
    }

    /// An integer in `0..=max` (`what` names the type, for the error).
    #[inline(never)]
    pub fn uint(&self, max: u64, what: &str) -> Result<u64, Error> {
        let Value::Number(n) = self else {
            return Err(self.invalid(what));
        };
        // Integers are written with digits alone (a fraction or an exponent makes a float,
        // which an integer field refuses, as serde did).
        if !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.invalid(what));
        }
        // At most u64::MAX (equal lengths of digits compare as numbers), then without overflow.
        let fits = n.len() < 20 || (n.len() == 20 && *n <= "18446744073709551615");
        Some(n.bytes().fold(0u64, |v, d| {
            v.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
        }))
        .filter(|&v| fits && v <= max)
        .ok_or_else(|| Error::new(alloc::format!("invalid value: {n}, expected {what}")))
    }

    /// A finite number, exactly (the nearest double).
    #[inline(never)]
    pub fn float(&self) -> Result<f64, Error> {
        let Value::Number(n) = self else {
            return Err(self.invalid("a number"));
        };
        match crate::float::parse(n) {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(Error::new(alloc::format!("number out of range: {n}"))),
        }
    }

    /// The value of each field named in `names` (`None` when absent), for an object. A
    /// duplicate field is refused; so is a field not named when `deny_unknown` (the types that
    /// said `deny_unknown_fields`), else it is passed over.
    #[inline(never)]
    pub fn fields<'v>(
        &'v self,
        names: &'static [&'static str],
        deny_unknown: bool,
    ) -> Result<Fields<'v, 'a>, Error> {
        let mut slots = [None; MAX_FIELDS];
        for (key, value) in self.entries()? {
            match names.iter().position(|n| *n == &**key) {
                Some(i) => match slots.get_mut(i) {
                    Some(slot @ None) => *slot = Some(value),
                    _ => return Err(Error::new(alloc::format!("duplicate field `{key}`"))),
                },
                None if deny_unknown => {
                    return Err(Error::new(alloc::format!(
                        "unknown field `{key}`, expected {}",
                        one_of(names)
                    )))
                }
                None => {}
            }
        }
        Ok(Fields {
            names,
            slots,
            error: Cell::new(None),
        })
    }

    /// Which of `names` an externally tagged enum's value names, and its content: a string
    /// (`"variant"`, for unit variants: `content` is `None`) or an object of one entry.
    pub fn variant<'v>(&'v self, names: &[&str]) -> Result<(usize, Option<&'v Value<'a>>), Error> {
        let (tag, content) = match self {
            Value::String(s) => (&**s, None),
            Value::Object(o) if o.len() == 1 => match o.first() {
                Some((k, v)) => (&**k, Some(v)),
                None => return Err(self.invalid("an enum")),
            },
            v => return Err(v.invalid("an object of one entry")),
        };
        variant_index(tag, names).map(|i| (i, content))
    }
}

/// The index of `tag` in `names`.
pub(crate) fn variant_index(tag: &str, names: &[&str]) -> Result<usize, Error> {
    names.iter().position(|n| *n == tag).ok_or_else(|| {
        Error::new(alloc::format!(
            "unknown variant `{tag}`, expected {}",
            one_of(names)
        ))
    })
}

fn one_of(names: &[&str]) -> String {
    let mut s = String::from("one of ");
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('`');
        s.push_str(n);
        s.push('`');
    }
    s
}

/// The most fields a type has ([`ObjectCounters`](super::protocol::ObjectCounters)).
pub(crate) const MAX_FIELDS: usize = 20;

/// An object's fields, by the position of their name in the table given to
/// [`Value::fields`]. Each getter answers `None` on a mistake and keeps it, which
/// [`done`](Self::done) gives back: a type reads its fields in one expression,
/// `f.done((|| Some(T { a: f.req(0)?, b: f.or(1, 0)? }))())`, which stops at the first.
pub struct Fields<'v, 'a> {
    names: &'static [&'static str],
    slots: [Option<&'v Value<'a>>; MAX_FIELDS],
    error: Cell<Option<Error>>,
}

impl<'v, 'a> Fields<'v, 'a> {
    fn name(&self, i: usize) -> &'static str {
        self.names.get(i).copied().unwrap_or_default()
    }

    #[inline(never)]
    fn fail(&self, i: usize, e: Error) {
        self.error.set(Some(e.at(self.name(i))));
    }

    #[inline(never)]
    fn missing(&self, i: usize) {
        let e = Error::new(alloc::format!("missing field `{}`", self.name(i)));
        self.error.set(Some(e));
    }

    fn keep<T>(&self, i: usize, r: Result<T, Error>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(i, e);
                None
            }
        }
    }

    /// Field `i`, which must be there.
    #[inline(never)]
    pub fn req<T: Wire>(&self, i: usize) -> Option<T> {
        match self.raw(i) {
            Some(v) => self.keep(i, T::read(v)),
            None => {
                self.missing(i);
                None
            }
        }
    }

    /// Field `i`, or `default` when absent (`null` is not absent).
    #[inline(never)]
    pub fn or<T: Wire>(&self, i: usize, default: T) -> Option<T> {
        match self.raw(i) {
            Some(v) => self.keep(i, T::read(v)),
            None => Some(default),
        }
    }

    /// Field `i`, which may be absent or `null`.
    pub fn opt<T: Wire>(&self, i: usize) -> Option<Option<T>> {
        self.or(i, None)
    }

    /// Field `i`'s value as it is, if present.
    pub fn raw(&self, i: usize) -> Option<&'v Value<'a>> {
        self.slots.get(i).copied().flatten()
    }

    /// What the getters built, or their mistake.
    pub fn done<T>(&self, built: Option<T>) -> Result<T, Error> {
        match built {
            Some(v) => Ok(v),
            None => Err(self.mistake()),
        }
    }

    #[inline(never)]
    fn mistake(&self) -> Error {
        self.error
            .take()
            .unwrap_or_else(|| Error::new("invalid value"))
    }
}

// ---- writing ----

/// Writes compact JSON. Values written one after the other inside an array or an object are
/// separated by commas; [`key`](Self::key) starts an object's entry.
#[derive(Default)]
pub struct Writer {
    out: String,
    comma: bool,
}

impl Writer {
    fn pre(&mut self) {
        if self.comma {
            self.out.push(',');
        }
    }

    fn done(&mut self) {
        self.comma = true;
    }

    /// `{` or `[`.
    #[inline(never)]
    pub fn open(&mut self, c: char) {
        self.pre();
        self.out.push(c);
        self.comma = false;
    }

    /// `}` or `]`.
    #[inline(never)]
    pub fn close(&mut self, c: char) {
        self.out.push(c);
        self.done();
    }

    /// An object's key; its value comes next.
    #[inline(never)]
    pub fn key(&mut self, k: &str) {
        self.str(k);
        self.out.push(':');
        self.comma = false;
    }

    /// An object's entry.
    pub fn field<T: Wire>(&mut self, k: &str, v: &T) {
        self.key(k);
        v.write(self);
    }

    /// `null`.
    pub fn null(&mut self) {
        self.raw("null");
    }

    /// Text written as it is (a literal the caller knows to be JSON).
    #[inline(never)]
    pub fn raw(&mut self, s: &str) {
        self.pre();
        self.out.push_str(s);
        self.done();
    }

    /// An unsigned integer.
    #[inline(never)]
    pub fn uint(&mut self, v: u64) {
        self.pre();
        push_uint(&mut self.out, v);
        self.done();
    }

    /// A float as serde_json writes it (see `write_float`); `null` when not finite.
    #[inline(never)]
    pub fn float(&mut self, x: f64) {
        if !x.is_finite() {
            return self.null();
        }
        self.pre();
        write_float(&mut self.out, x);
        self.done();
    }

    /// A string, escaped as serde_json escapes it.
    #[inline(never)]
    pub fn str(&mut self, s: &str) {
        self.pre();
        self.out.push('"');
        let bytes = s.as_bytes();
        let mut run = 0;
        while let Some(at) = bytes.get(run..).and_then(|rest| {
            rest.iter()
                .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        }) {
            let i = run + at;
            self.out.push_str(s.get(run..i).unwrap_or_default());
            let b = bytes.get(i).copied().unwrap_or_default();
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                _ => "",
            };
            if short.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.push_str("\\u00");
                for d in [b >> 4, b & 0xf] {
                    self.out
                        .push(char::from(HEX.get(usize::from(d)).copied().unwrap_or(b'0')));
                }
            } else {
                self.out.push_str(short);
            }
            run = i + 1;
        }
        self.out.push_str(s.get(run..).unwrap_or_default());
        self.out.push('"');
        self.done();
    }

    /// What has been written.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Pushes `v` in decimal.
pub(crate) fn push_uint(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(d) = buf.get_mut(i) {
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    out.push_str(core::str::from_utf8(buf.get(i..).unwrap_or_default()).unwrap_or_default());
}

/// `x` (finite) as serde_json writes it (with zmij, since 1.0.146; ryu before wrote the same but
/// for the exponent's `+`): the shortest digits `d` and the decimal point's place `kk`
/// (`|x| = 0.d × 10^kk`) laid out as `1234e7` → `12340000000.0`, `1234e-2` → `12.34`, `1234e-6`
/// → `0.001234`, `1e30` → `1e+30`, `1234e30` → `1.234e+33`, `1e-7`; zero as `0.0`.
fn write_float(out: &mut String, x: f64) {
    if x.is_sign_negative() {
        out.push('-');
    }
    if x == 0.0 {
        out.push_str("0.0");
        return;
    }
    let digits = Digits::of(x);
    let d = digits.digits();
    let n = d.len() as i32;
    let kk = digits.point;
    let k = kk - n;
    if 0 <= k && kk <= 16 {
        push(out, d);
        zeros(out, k);
        out.push_str(".0");
    } else if 0 < kk && kk <= 16 {
        let (int, frac) = d.split_at(kk as usize);
        push(out, int);
        out.push('.');
        push(out, frac);
    } else if -5 < kk && kk <= 0 {
        out.push_str("0.");
        zeros(out, -kk);
        push(out, d);
    } else {
        let (first, rest) = d.split_at(1.min(d.len()));
        push(out, first);
        if !rest.is_empty() {
            out.push('.');
            push(out, rest);
        }
        let e = kk - 1;
        out.push_str(if e < 0 { "e-" } else { "e+" });
        push_uint(out, u64::from(e.unsigned_abs()));
    }
}

/// What serde_json 1.x (without its `float_roundtrip` feature, as this crate used it before it
/// read JSON itself) read back from the text it wrote for `x`: the text's digits as an integer,
/// multiplied or divided by a power of ten, which may land one bit off `x`.
pub(crate) fn read_back_by_serde_json(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let mut text = String::new();
    write_float(&mut text, x);
    let (mantissa, e) = text.split_once('e').unwrap_or((&text, "0"));
    let mut exp: i32 = e.parse().unwrap_or(0);
    let mut sig: u64 = 0;
    let mut frac = false;
    for b in mantissa.bytes() {
        match b {
            b'0'..=b'9' => {
                // At most 17 digits: no overflow.
                sig = sig.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                exp -= i32::from(frac);
            }
            b'.' => frac = true,
            _ => {}
        }
    }
    let mut f = sig as f64;
    loop {
        let a = exp.unsigned_abs();
        if a <= 308 {
            let pow = crate::float::parse(&alloc::format!("1e{a}")).unwrap_or(f64::NAN);
            if exp >= 0 {
                f *= pow;
            } else {
                f /= pow;
            }
            break;
        }
        if f == 0.0 || exp >= 0 {
            break;
        }
        f /= 1e308;
        exp += 308;
    }
    if x.is_sign_negative() {
        -f
    } else {
        f
    }
}

// ---- the primitives ----

macro_rules! uint_wire {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            fn write(&self, w: &mut Writer) {
                w.uint(*self as u64);
            }
            fn read(v: &Value<'_>) -> Result<Self, Error> {
                let n = v.uint(<$t>::MAX as u64, stringify!($t))?;
                Ok(n as $t)
            }
        }
    )*};
}
uint_wire!(u8, u16, u32, u64, usize);

impl Wire for f64 {
    fn write(&self, w: &mut Writer) {
        w.float(*self);
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        v.float()
    }
}

impl Wire for String {
    fn write(&self, w: &mut Writer) {
        w.str(self);
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        v.str().map(String::from)
    }
}

impl<T: Wire> Wire for Option<T> {
    fn write(&self, w: &mut Writer) {
        match self {
            Some(v) => v.write(w),
            None => w.null(),
        }
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        match v {
            Value::Null => Ok(None),
            v => T::read(v).map(Some),
        }
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn write(&self, w: &mut Writer) {
        write_items(w, self);
    }
    #[inline(never)]
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        let items = v.items()?;
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            out.push(T::read(v).map_err(|e| e.item(i))?);
        }
        Ok(out)
    }
}

/// `items` as an array.
pub fn write_items<T: Wire>(w: &mut Writer, items: &[T]) {
    w.open('[');
    for v in items {
        v.write(w);
    }
    w.close(']');
}

/// An array of exactly `N` items.
pub(crate) fn exactly<'v, 'a, const N: usize>(
    v: &'v Value<'a>,
) -> Result<&'v [Value<'a>; N], Error> {
    let items = v.items()?;
    <&[Value<'a>; N]>::try_from(items).map_err(|_| {
        Error::new(alloc::format!(
            "invalid length {}, expected an array of {N}",
            items.len()
        ))
    })
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    fn write(&self, w: &mut Writer) {
        write_items(w, self);
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        let items = exactly::<N>(v)?;
        let mut out = Vec::with_capacity(N);
        for (i, v) in items.iter().enumerate() {
            out.push(T::read(v).map_err(|e| e.item(i))?);
        }
        out.try_into().map_err(|_| Error::new("invalid length"))
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    fn write(&self, w: &mut Writer) {
        w.open('[');
        self.0.write(w);
        self.1.write(w);
        w.close(']');
    }
    fn read(v: &Value<'_>) -> Result<Self, Error> {
        let [a, b] = exactly::<2>(v)?;
        Ok((
            A::read(a).map_err(|e| e.item(0))?,
            B::read(b).map_err(|e| e.item(1))?,
        ))
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::read_back_by_serde_json;
    use crate::rng::{Random, SplitMix64};

    #[test]
    fn reads_floats_back_as_serde_json_did() {
        let mut rng = SplitMix64::new(0x0bad_cafe_f00d_1234);
        let random = core::iter::repeat_with(move || f64::from_bits(rng.next_u64()));
        let fixed = [
            0.1,
            33.333333333333336,
            1e-7,
            1e300,
            5e-324,
            2.2250738585072014e-308,
        ];
        for x in fixed.into_iter().chain(random.take(50_000)) {
            if !x.is_finite() {
                continue;
            }
            let text = serde_json::to_string(&x).unwrap();
            let theirs: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(
                read_back_by_serde_json(x).to_bits(),
                theirs.to_bits(),
                "{text}"
            );
        }
    }
}
