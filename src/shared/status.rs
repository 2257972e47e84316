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

use alloc::string::String;

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
    let mut p = Page(String::with_capacity(4096 + 3072 * views.len()));
    let open = views
        .iter()
        .filter(|v| v.lease.state != State::Closed)
        .count() as u64;
    p.s(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"",
    );
    p.n(REFRESH_S.into());
    p.s("\"><title>");
    p.s(if open == 0 {
        "all closed"
    } else {
        "NOT CLOSED"
    });
    p.s(" · breakwater</title><style>");
    p.s(STYLE);
    p.s("</style></head><body><header><h1>breakwater: shared breakers</h1><p>");
    p.count(views.len() as u64, "breaker");
    p.s(", ");
    p.n(open);
    p.s(" not closed · as of ");
    p.date(now);
    p.s(" UTC · reloads every ");
    p.n(REFRESH_S.into());
    p.s(" s</p></header><main>");
    if views.is_empty() {
        p.s(
            "<p>No breaker is served here: list them in the <code>names</code> option of \
             breakerRoutes, in BREAKERS, or in the breakers given to statusPage.</p>",
        );
    }
    for v in views {
        breaker(&mut p, v, now);
    }
    p.s("</main></body></html>");
    p.0
}

/// [`render`] for views as JSON (an array of `/state` answers, as the hosts gather them);
/// `None` when they are unreadable.
pub fn render_json(views: &str, now: u64) -> Option<String> {
    let views: alloc::vec::Vec<StateView> = super::json::from_str(views).ok()?;
    Some(render(&views, now))
}

fn breaker(p: &mut Page, v: &StateView, now: u64) {
    let state = v.lease.state;
    let label = state_name(state);
    p.s("<section class=\"b ");
    p.s(label);
    p.s("\"><h2><span class=\"s\">");
    p.s(label);
    p.s("</span>");
    p.esc(&v.name);
    p.s("</h2><div class=\"grid\"><div><dl>");
    p.term("since");
    since(p, v, now);
    if state != State::Closed {
        p.term("probes");
        probe_time(p, v, now);
    }
    if v.lease.mode != Mode::Automatic {
        p.term("mode");
        p.s(match v.lease.mode {
            Mode::Isolated => "isolated by an operator: open until reset",
            _ => "disabled: every call admitted",
        });
    }
    p.term("probes in flight");
    p.n(v.probes_in_flight as u64);
    p.term("throttle");
    throttle(p, v.lease.throttle_ppm);
    p.term("sessions");
    p.n(v.sessions as u64);
    p.s(" heard from in the last 15 min");
    p.term("since the record began");
    let st = &v.stats;
    p.count(
        st.successes
            .saturating_add(st.failures)
            .saturating_add(st.ignored),
        "call",
    );
    p.s(", ");
    p.count(st.failures, "failure");
    p.s(", opened ");
    p.count(st.opened, "time");
    p.s("</dd></dl>");
    settings(p, v);
    p.s("</div><div>");
    minutes(p, &v.minutes, now);
    transitions(p, v, now);
    p.s("</div></div></section>");
}

fn settings(p: &mut Page, v: &StateView) {
    p.s("<h3>Settings</h3><p>");
    p.esc(&v.settings);
    p.s("</p><p class=\"fp\">fingerprint ");
    p.n(v.options);
    p.s("</p>");
    if let Some(m) = &v.options_mismatch {
        p.s("<p class=\"warn\">This host is configured differently (fingerprint ");
        p.n(m.configured);
        p.s("): the stored settings were ");
        p.esc(&m.resolution);
        p.s(".</p>");
    }
    if let Some(e) = &v.restore_error {
        p.s("<p class=\"warn\">");
        p.esc(e);
        p.s("</p>");
    }
}

fn minutes(p: &mut Page, minutes: &[Minute], now: u64) {
    p.s("<h3>Last ");
    p.n(ACTIVITY_MINUTES);
    p.s(" minutes</h3>");
    let this = now / 60_000;
    // From the first minute that counted anything, to this one.
    let Some(first) = minutes
        .iter()
        .map(|m| m.at / 60_000)
        .filter(|&m| m <= this && m + ACTIVITY_MINUTES > this)
        .min()
    else {
        p.s("<p>Nothing counted.</p>");
        return;
    };
    p.s(
        "<table><thead><tr><th>UTC</th><th>calls</th><th>failures</th><th></th>\
         <th>refused</th><th>shed</th></tr></thead><tbody>",
    );
    for minute in first..=this {
        let m = minutes
            .iter()
            .find(|m| m.at / 60_000 == minute)
            .copied()
            .unwrap_or_default();
        p.s("<tr><td>");
        p.two(minute / 60 % 24);
        p.s(":");
        p.two(minute % 60);
        if minute == this {
            p.s(" (now)");
        }
        p.s("</td><td>");
        p.n(m.calls);
        p.s("</td><td>");
        p.n(m.failures);
        // The failures' share, in hundredths.
        p.s("</td><td><meter min=\"0\" max=\"100\" low=\"10\" high=\"50\" optimum=\"0\" value=\"");
        p.n(m
            .failures
            .saturating_mul(100)
            .checked_div(m.calls)
            .unwrap_or(0)
            .min(100));
        p.s("\"></meter></td><td>");
        p.n(m.refused);
        p.s("</td><td>");
        p.n(m.shed);
        p.s("</td></tr>");
    }
    p.s("</tbody></table>");
}

fn transitions(p: &mut Page, v: &StateView, now: u64) {
    p.s("<h3>Last state changes</h3>");
    if v.transitions.is_empty() {
        p.s("<p>None since the record began.</p>");
        return;
    }
    p.s("<ol reversed>");
    for t in v.transitions.iter().rev() {
        p.s("<li>");
        p.s(state_name(t.from));
        p.s(" → ");
        p.s(state_name(t.to));
        p.s(" at ");
        p.clock(t.at);
        p.s(" (");
        ago(p, now, t.at);
        p.s(" ago)</li>");
    }
    p.s("</ol>");
}

/// Since when the breaker is in its state: the last change, or when it opened.
fn since(p: &mut Page, v: &StateView, now: u64) {
    let at = v
        .transitions
        .last()
        .filter(|t| t.to == v.lease.state)
        .map(|t| t.at)
        .or(v.opened_at.filter(|_| v.lease.state == State::Open));
    match at {
        Some(at) => {
            p.clock(at);
            p.s(" UTC (");
            ago(p, now, at);
            p.s(" ago)");
        }
        None => p.s("the record began (no change seen)"),
    }
}

fn probe_time(p: &mut Page, v: &StateView, now: u64) {
    match (v.lease.state, v.open_until) {
        (State::Open, Some(until)) if until > now => {
            p.s("the first in ");
            p.n((until - now).div_ceil(1_000));
            p.s(" s (at ");
            p.clock(until);
            p.s(" UTC)");
        }
        (State::Open, Some(_)) => p.s("the next caller probes"),
        (State::Open, None) => p.s("none until reset"),
        _ => {
            p.s("in progress (");
            p.n(v.probes_in_flight as u64);
            p.s(" in flight)");
        }
    }
}

fn throttle(p: &mut Page, ppm: u32) {
    if ppm == 0 {
        return p.s("sheds nothing");
    }
    // Per mille, with one decimal.
    let tenths = u64::from(ppm).div_ceil(1_000);
    p.s("sheds ");
    p.n(tenths / 10);
    if tenths % 10 != 0 {
        p.s(".");
        p.n(tenths % 10);
    }
    p.s(" % of calls");
}

/// How long ago, in whole seconds (whole minutes past two).
fn ago(p: &mut Page, now: u64, at: u64) {
    let s = now.saturating_sub(at) / 1_000;
    if s < 120 {
        p.n(s);
        p.s(" s");
    } else {
        p.n(s / 60);
        p.s(" min");
    }
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Closed => "CLOSED",
        State::Open => "OPEN",
        State::HalfOpen => "HALF_OPEN",
    }
}

/// The page as it is written: text, numbers and escaped text pushed in turn (no `core::fmt`,
/// whose formatting would cost the coordinator's wasm module kilobytes).
struct Page(String);

impl Page {
    #[inline(never)]
    fn s(&mut self, text: &str) {
        self.0.push_str(text);
    }

    #[inline(never)]
    fn n(&mut self, n: u64) {
        super::json::push_uint(&mut self.0, n);
    }

    /// `n` and the noun, plural unless `n` is 1.
    #[inline(never)]
    fn count(&mut self, n: u64, noun: &str) {
        self.n(n);
        self.s(" ");
        self.s(noun);
        if n != 1 {
            self.s("s");
        }
    }

    /// Two digits.
    #[inline(never)]
    fn two(&mut self, n: u64) {
        if n < 10 {
            self.s("0");
        }
        self.n(n);
    }

    /// A `<dt>`, and the `<dd>` its text follows in (closed by the next term).
    #[inline(never)]
    fn term(&mut self, term: &str) {
        if self.0.ends_with("<dl>") {
            self.s("<dt>");
        } else {
            self.s("</dd><dt>");
        }
        self.s(term);
        self.s("</dt><dd>");
    }

    /// `hh:mm:ss` of a time in ms since the epoch (UTC).
    #[inline(never)]
    fn clock(&mut self, ms: u64) {
        let s = ms / 1_000;
        self.two(s / 3_600 % 24);
        self.s(":");
        self.two(s / 60 % 60);
        self.s(":");
        self.two(s % 60);
    }

    /// `yyyy-mm-dd hh:mm:ss` (UTC).
    fn date(&mut self, ms: u64) {
        let (y, m, d) = civil(ms / 86_400_000);
        self.n(y);
        self.s("-");
        self.two(m);
        self.s("-");
        self.two(d);
        self.s(" ");
        self.clock(ms);
    }

    /// Text with `& < > " '` escaped for HTML.
    #[inline(never)]
    fn esc(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '&' => self.s("&amp;"),
                '<' => self.s("&lt;"),
                '>' => self.s("&gt;"),
                '"' => self.s("&quot;"),
                '\'' => self.s("&#39;"),
                c => self.0.push(c),
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{civil, Page};
    use alloc::string::String;

    fn page(f: impl FnOnce(&mut Page)) -> String {
        let mut p = Page(String::new());
        f(&mut p);
        p.0
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(20_791), (2026, 12, 4));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(page(|p| p.date(1_796_398_445_000)), "2026-12-04 15:34:05");
        assert_eq!(page(|p| p.clock(59_999)), "00:00:59");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            page(|p| p.esc("<a href='x'>&\"</a>")),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(page(|p| p.esc("plain é")), "plain é");
    }

    #[test]
    fn throttle_and_ages() {
        assert_eq!(page(|p| super::throttle(p, 0)), "sheds nothing");
        assert_eq!(page(|p| super::throttle(p, 250_000)), "sheds 25 % of calls");
        assert_eq!(
            page(|p| super::throttle(p, 123_456)),
            "sheds 12.4 % of calls"
        );
        assert_eq!(page(|p| super::ago(p, 200_000, 100_500)), "99 s");
        assert_eq!(page(|p| super::ago(p, 500_000, 100_000)), "6 min");
    }
}
