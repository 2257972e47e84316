//! The shared breakers' status page: one HTML document, written once for every host (the Rust
//! Worker's `GET /admin/status`, `breakerRoutes`' through wasm, and `statusPage()` of
//! `breakwater/store` for an app's own route), from the breakers' [`StateView`]s.
//!
//! For an operator whose provider is down: every breaker with its state and since when, when it
//! lets a probe through, the settings it runs under in words beside their fingerprint, its last
//! state changes, what it counted in each of the last minutes (calls, failures, refusals, sheds),
//! the throttle and the sessions it hears from. No script, no external asset, no style attribute:
//! the one `<style>` element is allowed by its hash ([`CSP`]), so the page passes
//! `default-src 'none'`. It reloads itself every [`REFRESH_S`] seconds (a `<meta>` refresh) and
//! reads on a phone (one column below 40 em).

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use super::protocol::{Minute, StateView, ACTIVITY_MINUTES};
use crate::breaker::{Mode, State};

/// How often the page reloads itself, in seconds.
pub const REFRESH_S: u32 = 5;

/// The page's style sheet: the one `<style>` element, allowed by its hash in [`CSP`].
pub const STYLE: &str = "\
:root{color-scheme:light dark;--ok:#1a7f37;--bad:#cf222e;--mid:#9a6700;--line:#8884}\
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;max-width:72em}\
h1{font-size:1.3em;margin:0}h2{font-size:1.15em;margin:0 0 .5em}h3{font-size:1em;margin:1em 0 .3em}\
header p{margin:.2em 0 1em;opacity:.8}\
.b{border:1px solid var(--line);border-left:.5em solid var(--ok);border-radius:.4em;padding:.8em 1em;margin:0 0 1em}\
.b.OPEN{border-left-color:var(--bad)}.b.HALF_OPEN{border-left-color:var(--mid)}\
.s{display:inline-block;padding:.05em .5em;border-radius:.3em;color:#fff;background:var(--ok);font-weight:600;margin-right:.4em}\
.OPEN .s{background:var(--bad)}.HALF_OPEN .s{background:var(--mid)}\
.grid{display:grid;grid-template-columns:1fr 1fr;gap:0 2em}\
@media (max-width:40em){.grid{grid-template-columns:1fr}td:nth-child(4),th:nth-child(4){display:none}}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:0}dt{opacity:.75}dd{margin:0}\
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}\
th,td{text-align:right;padding:.1em .25em;border-bottom:1px solid var(--line)}th:first-child,td:first-child{text-align:left}\
ol{margin:0;padding-left:1.2em}.fp{font-family:ui-monospace,monospace;opacity:.75}\
.warn{color:var(--bad)}meter{width:3em}.b>*{min-width:0}.grid>*{min-width:0;overflow-x:auto}\
";

/// The `Content-Security-Policy` the page is served with: nothing but its own style element
/// (`STYLE`'s SHA-256, checked by a test).
pub const CSP: &str =
    "default-src 'none'; style-src 'sha256-4TZZm8fpACoxJh+GvG6mR8kP6ms9q8TrMhqPzSQ6IiE='; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every host answers the page with (beside its status, 200).
pub const HEADERS: [(&str, &str); 5] = [
    ("content-type", "text/html; charset=utf-8"),
    ("content-security-policy", CSP),
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// The page for `views`, as of `now` (ms since the epoch: the host's clock, which the views'
/// times are compared with).
pub fn render(views: &[StateView], now: u64) -> String {
    let mut out = String::with_capacity(4096 + 3072 * views.len());
    let open = views
        .iter()
        .filter(|v| v.lease.state != State::Closed)
        .count();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_S}\">\
         <title>{} · breakwater</title><style>{STYLE}</style></head><body><header>\
         <h1>breakwater: shared breakers</h1><p>{} breaker{}, {} not closed · as of {} UTC · \
         reloads every {REFRESH_S} s</p></header><main>",
        if open == 0 {
            "all closed"
        } else {
            "NOT CLOSED"
        },
        views.len(),
        if views.len() == 1 { "" } else { "s" },
        open,
        clock(now, true),
    );
    if views.is_empty() {
        out.push_str("<p>No breaker is served here.</p>");
    }
    for v in views {
        breaker(&mut out, v, now);
    }
    out.push_str("</main></body></html>");
    out
}

/// [`render`] for views as JSON (an array of `/state` answers, as the hosts gather them);
/// `None` when they are unreadable.
pub fn render_json(views: &str, now: u64) -> Option<String> {
    let views: alloc::vec::Vec<StateView> = super::json::from_str(views).ok()?;
    Some(render(&views, now))
}

fn breaker(out: &mut String, v: &StateView, now: u64) {
    let state = v.lease.state;
    let label = state_name(state);
    let _ = write!(
        out,
        "<section class=\"b {label}\"><h2><span class=\"s\">{label}</span>{}</h2><div class=\"grid\"><div><dl>",
        Html(&v.name)
    );
    item(out, "since", &since(v, now));
    if state != State::Closed {
        item(out, "probes", &probe_time(v, now));
    }
    if v.lease.mode != Mode::Automatic {
        let mode = match v.lease.mode {
            Mode::Isolated => "isolated by an operator: open until reset",
            _ => "disabled: every call admitted",
        };
        item(out, "mode", mode);
    }
    item(out, "probes in flight", &format!("{}", v.probes_in_flight));
    item(out, "throttle", &throttle(v.lease.throttle_ppm));
    item(
        out,
        "sessions",
        &format!("{} heard from in the last 15 min", v.sessions),
    );
    item(
        out,
        "since the record began",
        &format!(
            "{} calls, {} failures, opened {} time{}",
            v.stats
                .successes
                .saturating_add(v.stats.failures)
                .saturating_add(v.stats.ignored),
            v.stats.failures,
            v.stats.opened,
            if v.stats.opened == 1 { "" } else { "s" }
        ),
    );
    out.push_str("</dl>");
    settings(out, v);
    out.push_str("</div><div>");
    minutes(out, &v.minutes, now);
    transitions(out, v, now);
    out.push_str("</div></div></section>");
}

fn settings(out: &mut String, v: &StateView) {
    let _ = write!(
        out,
        "<h3>Settings</h3><p>{}</p><p class=\"fp\">fingerprint {}</p>",
        Html(&v.settings),
        v.options
    );
    if let Some(m) = &v.options_mismatch {
        let _ = write!(
            out,
            "<p class=\"warn\">This host is configured differently (fingerprint {}): the stored \
             settings were {}.</p>",
            m.configured,
            Html(&m.resolution)
        );
    }
    if let Some(e) = &v.restore_error {
        let _ = write!(out, "<p class=\"warn\">{}</p>", Html(e));
    }
}

fn minutes(out: &mut String, minutes: &[Minute], now: u64) {
    let _ = write!(out, "<h3>Last {ACTIVITY_MINUTES} minutes</h3>");
    let this = now / 60_000;
    // From the first minute that counted anything, to this one.
    let Some(first) = minutes
        .iter()
        .map(|m| m.at / 60_000)
        .filter(|&m| m <= this && m + ACTIVITY_MINUTES > this)
        .min()
    else {
        out.push_str("<p>Nothing counted.</p>");
        return;
    };
    out.push_str(
        "<table><thead><tr><th>UTC</th><th>calls</th><th>failures</th><th></th>\
         <th>refused</th><th>shed</th></tr></thead><tbody>",
    );
    for k in (0..=this - first).rev() {
        let Some(minute) = this.checked_sub(k) else {
            continue;
        };
        let m = minutes
            .iter()
            .find(|m| m.at / 60_000 == minute)
            .copied()
            .unwrap_or(Minute {
                at: minute * 60_000,
                ..Minute::default()
            });
        // The failures' share, in hundredths.
        let share = (m.failures.saturating_mul(100))
            .checked_div(m.calls)
            .unwrap_or(0)
            .min(100);
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td><meter min=\"0\" max=\"100\" low=\"10\" \
             high=\"50\" optimum=\"0\" value=\"{share}\"></meter></td><td>{}</td><td>{}</td></tr>",
            minute_of(m.at),
            if k == 0 { " (now)" } else { "" },
            m.calls,
            m.failures,
            m.refused,
            m.shed
        );
    }
    out.push_str("</tbody></table>");
}

fn transitions(out: &mut String, v: &StateView, now: u64) {
    out.push_str("<h3>Last state changes</h3>");
    if v.transitions.is_empty() {
        out.push_str("<p>None since the record began.</p>");
        return;
    }
    out.push_str("<ol reversed>");
    for t in v.transitions.iter().rev() {
        let _ = write!(
            out,
            "<li>{} → {} at {} ({} ago)</li>",
            state_name(t.from),
            state_name(t.to),
            clock(t.at, false),
            ago(now, t.at)
        );
    }
    out.push_str("</ol>");
}

fn item(out: &mut String, term: &str, text: &str) {
    let _ = write!(out, "<dt>{term}</dt><dd>{}</dd>", Html(text));
}

/// Since when the breaker is in its state: the last change, or when it opened.
fn since(v: &StateView, now: u64) -> String {
    let at = v
        .transitions
        .last()
        .filter(|t| t.to == v.lease.state)
        .map(|t| t.at)
        .or(v.opened_at.filter(|_| v.lease.state == State::Open));
    match at {
        Some(at) => format!("{} UTC ({} ago)", clock(at, false), ago(now, at)),
        None => String::from("the record began (no change seen)"),
    }
}

fn probe_time(v: &StateView, now: u64) -> String {
    match (v.lease.state, v.open_until) {
        (State::Open, Some(until)) if until > now => format!(
            "the first in {} s (at {} UTC)",
            (until - now).div_ceil(1_000),
            clock(until, false)
        ),
        (State::Open, Some(_)) => String::from("the next caller probes"),
        (State::Open, None) => String::from("none until reset"),
        _ => format!("in progress ({} in flight)", v.probes_in_flight),
    }
}

fn throttle(ppm: u32) -> String {
    if ppm == 0 {
        String::from("sheds nothing")
    } else {
        format!(
            "sheds {} % of calls",
            crate::float::plain(f64::from(ppm) / 10_000.0)
        )
    }
}

/// How long ago, in whole seconds (whole minutes past one).
fn ago(now: u64, at: u64) -> String {
    let s = now.saturating_sub(at) / 1_000;
    if s < 60 {
        format!("{s} s")
    } else {
        super::spec::duration(s / 60 * 60_000)
    }
}

/// `hh:mm` of a time in ms since the epoch (UTC).
fn minute_of(ms: u64) -> String {
    let m = ms / 60_000;
    format!("{:02}:{:02}", m / 60 % 24, m % 60)
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Closed => "CLOSED",
        State::Open => "OPEN",
        State::HalfOpen => "HALF_OPEN",
    }
}

/// `hh:mm:ss`, or `yyyy-mm-dd hh:mm:ss` with the date, of a time in ms since the epoch (UTC).
fn clock(ms: u64, date: bool) -> String {
    let s = ms / 1_000;
    let (h, m, sec) = (s / 3_600 % 24, s / 60 % 60, s % 60);
    if !date {
        return format!("{h:02}:{m:02}:{sec:02}");
    }
    let (y, mo, d) = civil(s / 86_400);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}:{sec:02}")
}

/// The proleptic Gregorian date of a day since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Text with `& < > " '` escaped for HTML.
struct Html<'a>(&'a str);

impl core::fmt::Display for Html<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            let (plain, tail) = rest.split_at(i);
            f.write_str(plain)?;
            let mut chars = tail.chars();
            f.write_str(match chars.next() {
                Some('&') => "&amp;",
                Some('<') => "&lt;",
                Some('>') => "&gt;",
                Some('"') => "&quot;",
                _ => "&#39;",
            })?;
            rest = chars.as_str();
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::{civil, clock, Html};
    use alloc::format;

    #[test]
    fn dates_and_times() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(20_791), (2026, 12, 4));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(clock(1_796_398_445_000, true), "2026-12-04 17:34:05");
        assert_eq!(clock(59_999, false), "00:00:59");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            format!("{}", Html("<a href='x'>&\"</a>")),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(format!("{}", Html("plain é")), "plain é");
    }
}
