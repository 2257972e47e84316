//! `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; and `retry-after-ms`.

use crate::breaker::MAX_DURATION_MS;
use crate::clock::Timestamp;

/// Parses a `Retry-After` value into milliseconds from `now`: whole (or fractional) seconds, or
/// an HTTP-date in any of the three formats HTTP allows. A date in the past gives 0. Garbage,
/// negative numbers and dates that do not exist give `None`. Never overflows: results are capped
/// at 2^53 ms.
///
/// ```
/// use breakwater::{parse_retry_after, Timestamp};
/// let now = Timestamp(784_111_777_000); // Sun, 06 Nov 1994 08:49:37 GMT
/// assert_eq!(parse_retry_after("120", now), Some(120_000));
/// assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now), Some(120_000));
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: Timestamp) -> Option<u64> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if v.as_bytes()[0].is_ascii_digit() {
        return parse_seconds(v);
    }
    let at = parse_http_date(v)?;
    Some(at.saturating_since(now).min(MAX_DURATION_MS))
}

/// Parses a `retry-after-ms` value (milliseconds, possibly fractional, as OpenAI and Anthropic
/// send it). Rounds up; `None` for garbage or negative values.
pub fn parse_retry_after_ms(value: &str) -> Option<u64> {
    let (whole, frac) = parse_decimal(value.trim())?;
    Some(whole.saturating_add((frac > 0) as u64).min(MAX_DURATION_MS))
}

/// Seconds with an optional fraction, as milliseconds (rounded up).
fn parse_seconds(v: &str) -> Option<u64> {
    let (whole, frac_micro) = parse_decimal(v)?;
    let ms = whole
        .saturating_mul(1_000)
        .saturating_add(frac_micro.div_ceil(1_000));
    Some(ms.min(MAX_DURATION_MS))
}

/// `digits[.digits]` → (integer part, fraction in millionths). Saturates on huge values.
fn parse_decimal(v: &str) -> Option<(u64, u64)> {
    let (int, frac) = match v.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (v, None),
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole = int.bytes().fold(0u64, |acc, b| {
        acc.saturating_mul(10).saturating_add((b - b'0') as u64)
    });
    let mut micro = 0u64;
    if let Some(f) = frac {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut scale = 100_000u64;
        for b in f.bytes() {
            micro += (b - b'0') as u64 * scale;
            scale /= 10;
        }
    }
    Some((whole, micro))
}

/// Parses an HTTP-date: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850
/// form (`Sunday, 06-Nov-94 08:49:37 GMT`) or asctime (`Sun Nov  6 08:49:37 1994`).
pub fn parse_http_date(v: &str) -> Option<Timestamp> {
    let mut parts = v.split_ascii_whitespace();
    let first = parts.next()?;
    if let Some(day_name) = first.strip_suffix(',') {
        if !day_name.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        let second = parts.next()?;
        if second.contains('-') {
            // RFC 850: 06-Nov-94 08:49:37 GMT
            let mut dmy = second.split('-');
            let day = num(dmy.next()?, 2)?;
            let month = month(dmy.next()?)?;
            let yy = num(dmy.next()?, 2)?;
            if dmy.next().is_some() {
                return None;
            }
            // RFC 9110: a two-digit year more than 50 years in the future is in the past century;
            // without a clock here, read 70–99 as 19xx and 00–69 as 20xx.
            let year = if yy >= 70 { 1900 + yy } else { 2000 + yy };
            let time = parts.next()?;
            if parts.next()? != "GMT" || parts.next().is_some() {
                return None;
            }
            return to_timestamp(year, month, day, time);
        }
        // IMF-fixdate: 06 Nov 1994 08:49:37 GMT
        let day = num(second, 2)?;
        let month = month(parts.next()?)?;
        let year = num(parts.next()?, 4)?;
        let time = parts.next()?;
        if parts.next()? != "GMT" || parts.next().is_some() {
            return None;
        }
        return to_timestamp(year, month, day, time);
    }
    // asctime: Sun Nov  6 08:49:37 1994
    if !first.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let month = month(parts.next()?)?;
    let day_str = parts.next()?;
    if day_str.len() > 2 {
        return None;
    }
    let day = num(day_str, day_str.len())?;
    let time = parts.next()?;
    let year = num(parts.next()?, 4)?;
    if parts.next().is_some() {
        return None;
    }
    to_timestamp(year, month, day, time)
}

fn num(s: &str, len: usize) -> Option<u64> {
    if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.bytes().fold(0, |acc, b| acc * 10 + (b - b'0') as u64))
}

fn month(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.iter().position(|m| *m == s).map(|i| i as u64 + 1)
}

fn to_timestamp(year: u64, month: u64, day: u64, time: &str) -> Option<Timestamp> {
    let mut hms = time.split(':');
    let h = num(hms.next()?, 2)?;
    let m = num(hms.next()?, 2)?;
    let s = num(hms.next()?, 2)?;
    if hms.next().is_some() || h > 23 || m > 59 || s > 60 {
        return None;
    }
    if year < 1970 || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + h * 3_600 + m * 60 + s;
    Some(Timestamp(secs * 1_000))
}

fn is_leap(y: u64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date (Howard Hinnant's algorithm), for years >= 1970.
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
