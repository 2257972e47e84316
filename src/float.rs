//! Floats to and from text, for the messages that carry them (error texts, the Prometheus text,
//! the shared protocol's JSON): the shortest digits that read back to the same bits, laid out by
//! the caller.
//!
//! Natively these come from `core` (`{:e}` and `str::parse`). In the shared breaker's wasm modules
//! (feature `wasm-shared`: the lease client's, and the coordinator's, whose `wasm-coordinator`
//! enables it) they come from the JavaScript host, which the ECMAScript specification binds to
//! the same answers (`String(x)`: the shortest digits, nearest first; `Number(text)`: round to
//! nearest): `core`'s float formatting and parsing, with their tables, were a fifth of such a
//! module. The main module keeps `core`'s (its JavaScript words the errors; it prints no float).

use alloc::string::String;
use core::fmt;

/// The shortest decimal digits of a finite, non-zero `|x|` that read back to `x`, and where the
/// decimal point goes: `|x| = 0.d₁d₂… × 10^point`.
pub(crate) struct Digits {
    buf: [u8; 17],
    len: usize,
    /// The decimal point's place.
    pub point: i32,
}

impl Digits {
    /// Of `|x|` (finite, non-zero).
    pub fn of(x: f64) -> Digits {
        Digits::parse(&shortest_text(x.abs()))
    }

    /// From a shortest representation in any of the usual spellings: `12.5`, `0.001`, `1e21`,
    /// `1e+21`, `1.5e-7`.
    fn parse(text: &str) -> Digits {
        let (mantissa, exp) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
            None => (text, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut d = Digits {
            buf: [0; 17],
            len: 0,
            point: int.len() as i32 + exp,
        };
        for b in int.bytes().chain(frac.bytes()) {
            if d.len == 0 && b == b'0' {
                d.point -= 1;
            } else if let Some(slot) = d.buf.get_mut(d.len) {
                *slot = b;
                d.len += 1;
            }
        }
        while d.len > 1 && d.buf.get(d.len - 1) == Some(&b'0') {
            d.len -= 1;
        }
        d
    }

    /// The digits, as ASCII.
    pub fn digits(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

/// Pushes ASCII bytes.
pub(crate) fn push(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        out.push(char::from(b));
    }
}

/// Pushes `n` zeros.
pub(crate) fn zeros(out: &mut String, n: i32) {
    for _ in 0..n {
        out.push('0');
    }
}

/// A float as `core`'s `Display` writes it (`30`, `0.1`, `1000000000000000000000`, `-0`,
/// `NaN`, `inf`), with no formatting flags.
pub(crate) struct Plain(pub f64);

impl fmt::Display for Plain {
    #[cfg(not(all(target_arch = "wasm32", feature = "wasm-shared")))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }

    #[cfg(all(target_arch = "wasm32", feature = "wasm-shared"))]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&plain(self.0))
    }
}

/// [`Plain`]'s text, from [`Digits`].
#[cfg_attr(
    not(all(target_arch = "wasm32", feature = "wasm-shared")),
    allow(dead_code)
)]
pub(crate) fn plain(x: f64) -> String {
    plain_from(x, Digits::of)
}

/// [`plain`] with the digits `digits` gives.
fn plain_from(x: f64, digits: impl Fn(f64) -> Digits) -> String {
    let mut out = String::new();
    if x.is_nan() {
        out.push_str("NaN");
        return out;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    if x.is_infinite() {
        out.push_str("inf");
    } else if x == 0.0 {
        out.push('0');
    } else {
        let d = digits(x);
        let digits = d.digits();
        let n = digits.len() as i32;
        if d.point <= 0 {
            out.push_str("0.");
            zeros(&mut out, -d.point);
            push(&mut out, digits);
        } else if d.point >= n {
            push(&mut out, digits);
            zeros(&mut out, d.point - n);
        } else {
            let (int, frac) = digits.split_at(d.point as usize);
            push(&mut out, int);
            out.push('.');
            push(&mut out, frac);
        }
    }
    out
}

/// The double nearest to a decimal number's text (JSON's syntax), if it is one: exactly by
/// [`fast_parse`] when it can, else by `core`.
#[cfg(not(all(target_arch = "wasm32", feature = "wasm-shared")))]
pub(crate) fn parse(text: &str) -> Option<f64> {
    fast_parse(text).or_else(|| text.parse::<f64>().ok())
}

/// Clinger's fast path: when the digits (at most 15) and the power of ten (at most 22) are both
/// exact doubles, one multiplication or division rounds the exact value once, to nearest: the
/// answer of any exact reader. Most numbers of the protocol's settings (`0.1`, `50`, `12.5`,
/// `1e-7`) take it, so they need neither `core`'s reader nor a call to the JavaScript host.
fn fast_parse(text: &str) -> Option<f64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.strip_prefix('+').unwrap_or(e).parse::<i32>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: u64 = 0;
    let mut count = 0;
    for b in int.bytes().chain(frac.bytes()) {
        if !b.is_ascii_digit() {
            return None;
        }
        if digits > 0 || b != b'0' {
            count += 1;
        }
        digits = digits.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    let exp = exp.checked_sub(i32::try_from(frac.len()).ok()?)?;
    if count > 15 || !(-22..=22).contains(&exp) {
        return None;
    }
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let pow = *POW10.get(exp.unsigned_abs() as usize)?;
    let x = if exp < 0 {
        digits as f64 / pow
    } else {
        digits as f64 * pow
    };
    Some(if neg { -x } else { x })
}

/// `core`'s shortest digits, except that where two candidates are exactly as near to `x`
/// (`1350448540234015.25` between `…15.2` and `…15.3`), the even one, as JavaScript and
/// serde_json pick (`core` picks the upper).
#[cfg(not(all(target_arch = "wasm32", feature = "wasm-shared")))]
fn shortest_text(x: f64) -> String {
    use alloc::vec::Vec;

    let shortest = alloc::format!("{x:e}");
    let Some((m, e)) = shortest.split_once('e') else {
        return shortest;
    };
    let digits: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
    if digits.last().is_none_or(|d| d % 2 == 0) {
        return shortest;
    }
    // An odd last digit: a tie, if the even neighbour on either side reads back to `x` too and
    // `x` is exactly half way (checked on its exact digits, which only then are computed).
    let spell = |digits: &[u8]| {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let mut s = String::from(core::str::from_utf8(first).unwrap_or("0"));
        if !rest.is_empty() {
            s.push('.');
            s.push_str(core::str::from_utf8(rest).unwrap_or("0"));
        }
        s.push('e');
        s.push_str(e);
        s
    };
    for up in [false, true] {
        let mut other = digits.clone();
        let Some(last) = other.last_mut() else {
            return shortest;
        };
        match (up, *last) {
            (true, b'9') => continue,
            (true, d) => *last = d + 1,
            (false, d) => *last = d - 1,
        }
        let text = spell(&other);
        if text.parse::<f64>().ok() != Some(x) {
            continue;
        }
        // No double has more than 767 significant digits.
        let exact = alloc::format!("{x:.800e}");
        let exact: Vec<u8> = exact
            .split_once('e')
            .map(|(m, _)| m.bytes().filter(u8::is_ascii_digit).collect())
            .unwrap_or_default();
        let n = digits.len();
        let low = if up { &digits } else { &other };
        let half_way = exact.get(..n) == Some(low.as_slice())
            && exact.get(n) == Some(&b'5')
            && exact
                .get(n + 1..)
                .is_some_and(|r| r.iter().all(|&d| d == b'0'));
        if half_way {
            return text;
        }
    }
    shortest
}

#[cfg(all(target_arch = "wasm32", feature = "wasm-shared"))]
mod host {
    #[wasm_bindgen::prelude::wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_name = Number)]
        pub fn number(text: &str) -> f64;
        #[wasm_bindgen(js_name = String)]
        pub fn string(x: f64) -> alloc::string::String;
    }
}

/// The double nearest to a decimal number's text (JSON's syntax), if it is one: exactly by
/// [`fast_parse`] when it can, else by the host.
#[cfg(all(target_arch = "wasm32", feature = "wasm-shared"))]
pub(crate) fn parse(text: &str) -> Option<f64> {
    fast_parse(text).or_else(|| Some(host::number(text)).filter(|x| !x.is_nan()))
}

#[cfg(all(target_arch = "wasm32", feature = "wasm-shared"))]
fn shortest_text(x: f64) -> String {
    host::string(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Random, SplitMix64};
    use alloc::format;

    /// How JavaScript's `String(x)` spells the shortest digits (the shared wasm's source):
    /// an exponent from 1e21 up and below 1e-6, with a sign.
    fn js_string(x: f64) -> String {
        let e = format!("{x:e}");
        let (m, exp) = e.split_once('e').unwrap();
        let exp: i32 = exp.parse().unwrap();
        if (-7..21).contains(&exp) {
            format!("{x}")
        } else if exp < 0 {
            format!("{m}e{exp}")
        } else {
            format!("{m}e+{exp}")
        }
    }

    fn cases() -> impl Iterator<Item = f64> {
        let fixed = [
            0.1,
            0.5,
            1.0,
            2.0,
            30.0,
            12.5,
            33.333333333333336,
            1e-7,
            1e-5,
            1.5e-7,
            1e15,
            1e16,
            1e21,
            1e22,
            123456789012345680000.0,
            5e-324,
            1.7976931348623157e308,
            0.3,
            2.5e-5,
        ];
        let mut rng = SplitMix64::new(0x1234_5678_9abc_def0);
        let random = core::iter::repeat_with(move || f64::from_bits(rng.next_u64()))
            .filter(|x| x.is_finite())
            .take(20_000);
        fixed.into_iter().chain(random)
    }

    #[test]
    fn plain_writes_what_core_writes_from_either_spelling_of_the_digits() {
        let core_digits = |x: f64| Digits::parse(&format!("{:e}", x.abs()));
        for x in cases() {
            let d = core_digits(x);
            for text in [js_string(x.abs()), format!("{}", x.abs())] {
                let e = Digits::parse(&text);
                assert_eq!(
                    (e.digits(), e.point),
                    (d.digits(), d.point),
                    "{x:e} from {text}"
                );
            }
            assert_eq!(plain_from(x, core_digits), format!("{x}"), "{x:e}");
        }
        for x in [0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(plain(x), format!("{x}"));
        }
    }

    #[test]
    fn a_tie_between_two_shortest_candidates_goes_to_the_even_one() {
        // Exactly 1350448540234015.25: as near to ...15.2 as to ...15.3.
        let x: f64 = 1_350_448_540_234_015.3;
        assert_eq!(x - 1_350_448_540_234_015.0, 0.25);
        assert_eq!(shortest_text(x), "1.3504485402340152e15");
        assert_eq!(format!("{x:e}"), "1.3504485402340153e15");
        assert_eq!(shortest_text(0.1), "1e-1");
    }

    #[test]
    fn the_fast_path_reads_what_core_reads() {
        for x in cases() {
            for text in [format!("{x}"), format!("{x:e}"), js_string(x)] {
                if let Some(fast) = fast_parse(&text) {
                    assert_eq!(
                        fast.to_bits(),
                        text.parse::<f64>().unwrap().to_bits(),
                        "{text}"
                    );
                }
            }
        }
        for (text, x) in [
            ("0.1", 0.1),
            ("50", 50.0),
            ("12.5", 12.5),
            ("1e-7", 1e-7),
            ("-0", -0.0),
        ] {
            assert_eq!(
                fast_parse(text).map(f64::to_bits),
                Some(f64::to_bits(x)),
                "{text}"
            );
        }
        for text in ["1e23", "0.1234567890123456", "1e-23", "12345678901234567"] {
            assert_eq!(fast_parse(text), None, "{text}");
        }
    }
}
