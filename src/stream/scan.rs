//! A JSON walker that keeps nothing: it calls a visitor with each scalar and the keys that lead
//! to it, and says whether the text was JSON at all. Strings are handed over raw (escapes kept):
//! the reader only compares ASCII names and asks whether a value is empty.

/// How many keys of a path the visitor sees; deeper values are visited with the first ones.
pub(crate) const PATH: usize = 8;
/// Containers nested deeper than this are not JSON a provider sends: the text is refused.
const MAX_DEPTH: usize = 64;
/// The key an array's element stands under in a path.
pub(crate) const ITEM: &[u8] = b"[]";

/// One scalar of the document.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Scalar<'a> {
    /// A string's bytes between the quotes, escapes as they came.
    Str(&'a [u8]),
    /// A number's text.
    Num(&'a [u8]),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// An empty object or array (`{}`, `[]`): visited so that its key is seen.
    Empty,
}

/// The keys from the root to the value being read (array elements as [`ITEM`]).
pub(crate) struct Path<'a> {
    keys: [&'a [u8]; PATH],
    depth: usize,
}

impl<'a> Path<'a> {
    /// The keys the visitor sees: all of them, or the first [`PATH`].
    pub(crate) fn keys(&self) -> &[&'a [u8]] {
        &self.keys[..self.depth.min(PATH)]
    }
    fn push(&mut self, key: &'a [u8]) {
        if let Some(k) = self.keys.get_mut(self.depth) {
            *k = key;
        }
        self.depth += 1;
    }
}

/// Walks `text`, calling `visit` with every scalar; `None` when `text` is not one JSON value.
pub(crate) fn walk<'a>(text: &'a [u8], visit: &mut dyn FnMut(&Path<'a>, Scalar<'a>)) -> Option<()> {
    let mut w = Walker { s: text, i: 0 };
    let mut path = Path {
        keys: [b""; PATH],
        depth: 0,
    };
    w.value(&mut path, visit)?;
    w.ws();
    (w.i == text.len()).then_some(())
}

struct Walker<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Walker<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Expects `b` (after white space) and steps over it.
    fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek()? == b).then(|| self.i += 1)
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => self.i += 2,
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
        let s = self.s.get(start..self.i)?;
        self.i += 1;
        Some(s)
    }

    /// The bytes of a number or a literal, up to the next delimiter.
    fn word(&mut self) -> &'a [u8] {
        let start = self.i;
        while matches!(
            self.peek(),
            Some(b'0'..=b'9' | b'a'..=b'z' | b'-' | b'+' | b'.' | b'E')
        ) {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    fn value(
        &mut self,
        path: &mut Path<'a>,
        visit: &mut dyn FnMut(&Path<'a>, Scalar<'a>),
    ) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'{' => self.container(path, visit, b'}'),
            b'[' => self.container(path, visit, b']'),
            b'"' => {
                let s = self.string()?;
                visit(path, Scalar::Str(s));
                Some(())
            }
            _ => {
                let w = self.word();
                let scalar = match w {
                    b"true" => Scalar::Bool(true),
                    b"false" => Scalar::Bool(false),
                    b"null" => Scalar::Null,
                    [b'-' | b'0'..=b'9', ..] => Scalar::Num(w),
                    _ => return None,
                };
                visit(path, scalar);
                Some(())
            }
        }
    }

    /// An object (`close` `}`) or an array (`]`), the opening byte next.
    fn container(
        &mut self,
        path: &mut Path<'a>,
        visit: &mut dyn FnMut(&Path<'a>, Scalar<'a>),
        close: u8,
    ) -> Option<()> {
        if path.depth >= MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            visit(path, Scalar::Empty);
            return Some(());
        }
        let depth = path.depth;
        loop {
            let key = if close == b'}' {
                let k = self.string()?;
                self.eat(b':')?;
                k
            } else {
                ITEM
            };
            path.push(key);
            self.value(path, visit)?;
            path.depth = depth;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn scalars(text: &str) -> Option<Vec<(Vec<&str>, Scalar<'_>)>> {
        let mut out = Vec::new();
        walk(text.as_bytes(), &mut |p, s| {
            let keys = p
                .keys()
                .iter()
                .map(|k| core::str::from_utf8(k).unwrap())
                .collect();
            out.push((keys, s));
        })?;
        Some(out)
    }

    #[test]
    fn visits_every_scalar_with_its_path() {
        let got = scalars(r#" {"a":{"b":[1,"x",{"c":null}]},"d":true,"e":[] } "#).unwrap();
        assert_eq!(
            got,
            [
                (alloc::vec!["a", "b", "[]"], Scalar::Num(b"1")),
                (alloc::vec!["a", "b", "[]"], Scalar::Str(b"x")),
                (alloc::vec!["a", "b", "[]", "c"], Scalar::Null),
                (alloc::vec!["d"], Scalar::Bool(true)),
                (alloc::vec!["e"], Scalar::Empty),
            ]
        );
    }

    #[test]
    fn strings_keep_their_escapes() {
        let got = scalars(r#"{"t":"a\"b\\"}"#).unwrap();
        assert_eq!(got[0].1, Scalar::Str(br#"a\"b\\"#));
    }

    #[test]
    fn refuses_what_is_not_one_json_value() {
        for bad in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_de"#,
            "{",
            "[1,]",
            r#"{"a" 1}"#,
            "{} {}",
            "nope",
            "",
            "\"open",
        ] {
            assert!(scalars(bad).is_none(), "{bad}");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(scalars(&deep).is_none());
        let fine = "[".repeat(60) + &"]".repeat(60);
        assert!(scalars(&fine).is_some());
    }

    #[test]
    fn deep_paths_keep_their_first_keys() {
        let got =
            scalars(r#"{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":"deep"}}}}}}}}}"#).unwrap();
        assert_eq!(got[0].0.len(), PATH);
        assert_eq!(got[0].0[0], "a");
    }
}
