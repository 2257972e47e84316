//! The SVG timeline: one panel per strategy with the upstream calls per second and the attempts
//! rejected by the breaker per second over a shaded outage window, and, for the strategies with a
//! breaker, a strip below it with the breaker's state. The legend sits in the header, above every
//! panel, so it never covers a curve. Written directly as SVG: every plotting area is a
//! `<rect class="plot-area">`, the legend a `<g class="legend">` framed by a
//! `<rect class="legend-box">`, and axis titles are `<text class="axis-title">`.

use core::fmt::{self, Write};
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use super::report::{Report, StrategyReport, Timeline};
use super::SimError;

/// Width of the picture, in pixels.
const WIDTH: f64 = 1_100.0;
/// Left edge of every plotting area (room for tick labels and the vertical axis title).
const LEFT: f64 = 100.0;
/// Right margin.
const RIGHT: f64 = 28.0;
/// Height of the calls plot.
const PLOT_HEIGHT: f64 = 170.0;
/// Height of the breaker-state strip.
const STRIP_HEIGHT: f64 = 50.0;
/// Space between the calls plot and the strip.
const STRIP_GAP: f64 = 16.0;
/// Space above a plot for the panel's caption.
const CAPTION: f64 = 30.0;
/// Space below the lowest plot for tick labels and the time axis title.
const X_AXIS: f64 = 44.0;
/// Space between panels.
const PANEL_GAP: f64 = 18.0;
/// The hedging panel's height: a caption and two bars.
const HEDGING_HEIGHT: f64 = 110.0;
const HEDGED: &str = "#2ca02c";

const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
const DEGRADED: &str = "#e6e6e6";
const CALLS: &str = "#1f77b4";
const REJECTED: &str = "#ff7f0e";
const BREAKER: &str = "#d62728";
const AXIS: &str = "#444444";
const GRID: &str = "#e4e4e4";

fn chart_err(e: fmt::Error) -> SimError {
    SimError::Chart(e.to_string())
}

/// A generous estimate of a text's width in pixels (sans-serif averages ~0.55 em a character).
fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().count() as f64 * font_size * 0.6
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The smallest of 1, 2, 5 × 10^k that is at least `x` (and at least `min`).
fn nice_step(x: f64, min: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return min;
    }
    let magnitude = 10f64.powf(x.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= x)
        .unwrap_or(10.0 * magnitude);
    step.max(min)
}

/// Tick values `0, step, 2 step, …` up to `max`.
fn ticks(max: f64, step: f64) -> Vec<f64> {
    let n = (max / step + 1e-9).floor().clamp(0.0, 1_000.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

fn number(v: f64, step: f64) -> String {
    if step >= 1.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The time axis: its unit (seconds, minutes or hours by the run's length) and ticks.
struct TimeAxis {
    /// Seconds covered.
    seconds: f64,
    /// Seconds per unit shown.
    unit_s: f64,
    title: &'static str,
    step: f64,
}

impl TimeAxis {
    fn new(seconds: f64) -> Self {
        let (unit_s, title) = if seconds > 6.0 * 3_600.0 {
            (3_600.0, "time since start (h)")
        } else if seconds > 1_800.0 {
            (60.0, "time since start (min)")
        } else {
            (1.0, "time since start (s)")
        };
        let span = seconds / unit_s;
        TimeAxis {
            seconds,
            unit_s,
            title,
            step: nice_step(span / 10.0, 0.0),
        }
    }
}

/// A plotting area: pixels `[x0, x1] × [y0, y1]` (y down) for data `[0, seconds] × [0, y_max]`.
#[derive(Clone, Copy)]
struct Area {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
    seconds: f64,
    y_max: f64,
}

impl Area {
    fn x(&self, seconds: f64) -> f64 {
        let t = (seconds / self.seconds).clamp(0.0, 1.0);
        self.x0 + t * (self.x1 - self.x0)
    }

    fn y(&self, v: f64) -> f64 {
        let t = if self.y_max > 0.0 {
            (v / self.y_max).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.y1 - t * (self.y1 - self.y0)
    }
}

/// A per-bucket series as per-second values, merged `group` buckets at a time (their mean), so a
/// long run keeps about one point per pixel.
fn rates(values: impl Iterator<Item = f64>, len: usize, group: usize) -> Vec<f64> {
    let all: Vec<f64> = values.collect();
    let group = group.max(1);
    (0..len.div_ceil(group))
        .map(|g| {
            let slice = all.get(g * group..((g + 1) * group).min(all.len()));
            let sum: f64 = slice.map_or(0.0, |s| s.iter().sum());
            sum / group as f64
        })
        .collect()
}

/// The points of a step line: value `i` holds over `[i, i + 1)` groups.
fn step_points(area: &Area, values: &[f64], group_s: f64) -> Result<String, fmt::Error> {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        let y = area.y(*v);
        for x in [area.x(i as f64 * group_s), area.x((i + 1) as f64 * group_s)] {
            if !out.is_empty() {
                out.push(' ');
            }
            write!(out, "{x:.1},{y:.1}")?;
        }
    }
    Ok(out)
}

struct Svg {
    out: String,
}

impl Svg {
    /// A data series as a line: `class` names it for the tests (`calls`, `rejected`, `breaker`).
    fn series(&mut self, class: &str, color: &str, width: f64, points: &str) -> fmt::Result {
        writeln!(
            self.out,
            "<polyline class=\"series {class}\" fill=\"none\" stroke=\"{color}\" \
             stroke-width=\"{width}\" points=\"{points}\"/>"
        )
    }

    fn text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        anchor: &str,
        class: &str,
        s: &str,
    ) -> fmt::Result {
        writeln!(
            self.out,
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" \
             text-anchor=\"{anchor}\" {FONT} fill=\"#222\">{}</text>",
            escape(s)
        )
    }

    /// A vertical axis title, centred on `[y0, y1]` at `x`.
    fn vertical_title(&mut self, x: f64, y0: f64, y1: f64, s: &str) -> fmt::Result {
        let y = (y0 + y1) / 2.0;
        writeln!(
            self.out,
            "<text class=\"axis-title\" x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"12\" \
             text-anchor=\"middle\" {FONT} fill=\"#222\" transform=\"rotate(-90 {x:.1} {y:.1})\">{}</text>",
            escape(s)
        )
    }

    fn rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, attrs: &str) -> fmt::Result {
        writeln!(
            self.out,
            "<rect x=\"{x0:.1}\" y=\"{y0:.1}\" width=\"{:.1}\" height=\"{:.1}\" {attrs}/>",
            (x1 - x0).max(0.0),
            (y1 - y0).max(0.0)
        )
    }

    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, stroke: &str) -> fmt::Result {
        writeln!(
            self.out,
            "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x1:.1}\" y2=\"{y1:.1}\" stroke=\"{stroke}\" \
             stroke-width=\"1\"/>"
        )
    }

    /// The frame, the outage shading and the vertical grid of a plotting area.
    fn area(&mut self, a: &Area, time: &TimeAxis, r: &StrategyReport) -> fmt::Result {
        self.rect(
            a.x0,
            a.y0,
            a.x1,
            a.y1,
            "class=\"plot-area\" fill=\"#ffffff\" stroke=\"none\"",
        )?;
        if let Some(start) = r.outage_start_ms {
            let end = r.recovered_at_ms.map_or(a.seconds, |t| t as f64 / 1_000.0);
            let (x0, x1) = (a.x(start as f64 / 1_000.0), a.x(end));
            self.rect(x0, a.y0, x1, a.y1, &format!("fill=\"{DEGRADED}\""))?;
        }
        for t in ticks(time.seconds / time.unit_s, time.step) {
            let x = a.x(t * time.unit_s);
            self.line(x, a.y0, x, a.y1, GRID)?;
        }
        Ok(())
    }

    fn axes_frame(&mut self, a: &Area) -> fmt::Result {
        self.line(a.x0, a.y1, a.x1, a.y1, AXIS)?;
        self.line(a.x0, a.y0, a.x0, a.y1, AXIS)
    }

    fn time_ticks(&mut self, a: &Area, time: &TimeAxis) -> fmt::Result {
        for t in ticks(time.seconds / time.unit_s, time.step) {
            let x = a.x(t * time.unit_s);
            self.line(x, a.y1, x, a.y1 + 4.0, AXIS)?;
            self.text(
                x,
                a.y1 + 16.0,
                11.0,
                "middle",
                "tick",
                &number(t, time.step),
            )?;
        }
        self.text(
            (a.x0 + a.x1) / 2.0,
            a.y1 + 34.0,
            12.0,
            "middle",
            "axis-title",
            time.title,
        )
    }
}

/// One legend entry: its swatch and its text.
enum Swatch {
    Area(&'static str),
    Line(&'static str),
}

/// Draws `report`'s timelines as an SVG document.
pub fn render_svg(report: &Report) -> Result<String, SimError> {
    draw(report).map_err(chart_err)
}

/// The seconds in which calls or rejections were recorded (the breaker's state is sampled on
/// while pending client timeouts run out; its flat tail is not worth the width).
fn seconds_of(tl: &Timeline) -> f64 {
    tl.calls.len().max(tl.rejected.len()) as f64 * tl.bucket_ms as f64 / 1_000.0
}

fn draw(report: &Report) -> Result<String, fmt::Error> {
    // The arrival window, the last bucket or the last recovery, whichever ends later.
    let seconds = report
        .strategies
        .iter()
        .map(|r| {
            let recovered = r.recovered_at_ms.or(r.outage_start_ms).unwrap_or(0);
            seconds_of(&r.timeline).max(recovered as f64 / 1_000.0)
        })
        .fold(report.duration_ms as f64 / 1_000.0, f64::max)
        .max(1.0);
    let time = TimeAxis::new(seconds);
    let plot_width = WIDTH - LEFT - RIGHT;
    // Merge buckets so that a long run keeps about one point per pixel.
    let buckets = report
        .strategies
        .iter()
        .map(|r| r.timeline.len())
        .max()
        .unwrap_or(0);
    let group = buckets.div_ceil(plot_width as usize).max(1);
    // One scale for every panel, so the panels compare at a glance.
    let peak = report
        .strategies
        .iter()
        .flat_map(|r| {
            let per_s = 1_000.0 / r.timeline.bucket_ms as f64;
            let len = r.timeline.len();
            let calls = rates(
                r.timeline.calls.iter().map(|c| *c as f64 * per_s),
                len,
                group,
            );
            let rejected = rates(
                r.timeline.rejected.iter().map(|c| *c as f64 * per_s),
                len,
                group,
            );
            calls.into_iter().chain(rejected)
        })
        .fold(0.0, f64::max);
    // About five ticks, whole numbers once there is at least one call a second, and headroom
    // so that the peak does not run along the frame.
    let y_step = match peak {
        p if p <= 0.0 => 1.0,
        p if p >= 1.0 => nice_step(p / 5.0, 1.0),
        p => nice_step(p / 5.0, 0.0),
    };
    let y_max = ((peak * 1.05 / y_step).ceil() * y_step).max(y_step);

    let any_breaker = report.strategies.iter().any(|r| r.strategy.has_breaker());
    let any_outage = report
        .strategies
        .iter()
        .any(|r| r.outage_start_ms.is_some());
    let mut legend: Vec<(Swatch, &str)> = Vec::new();
    if any_outage {
        legend.push((Swatch::Area(DEGRADED), "upstream degraded"));
    }
    legend.push((Swatch::Line(CALLS), "upstream calls per second"));
    if any_breaker {
        legend.push((
            Swatch::Line(REJECTED),
            "attempts rejected by the breaker per second",
        ));
        legend.push((
            Swatch::Area(BREAKER),
            "breaker state (several breakers: their mean, half-open counting ½)",
        ));
    }
    // Lay the legend out in rows under the title, left to right.
    let legend_font = 12.0;
    let entry_width = |text: &str| 22.0 + text_width(text, legend_font) + 18.0;
    let mut rows: Vec<Vec<(f64, usize)>> = std::vec![Vec::new()];
    let mut x = 10.0;
    for (i, (_, text)) in legend.iter().enumerate() {
        let w = entry_width(text);
        if x + w > plot_width - 10.0 && rows.last().is_some_and(|r| !r.is_empty()) {
            rows.push(Vec::new());
            x = 10.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((x, i));
        }
        x += w;
    }
    let legend_width = rows
        .iter()
        .filter_map(|row| row.last())
        .map(|(x, i)| x + legend.get(*i).map_or(0.0, |(_, t)| entry_width(t)))
        .fold(0.0, f64::max);
    let (legend_x, legend_y) = (LEFT, 58.0);
    let legend_height = rows.len() as f64 * 20.0 + 8.0;
    let header = legend_y + legend_height + 16.0;

    let panel_height = |r: &StrategyReport| {
        CAPTION
            + PLOT_HEIGHT
            + if r.strategy.has_breaker() {
                STRIP_GAP + STRIP_HEIGHT
            } else {
                0.0
            }
            + X_AXIS
    };
    let height = header
        + report
            .strategies
            .iter()
            .map(|r| panel_height(r) + PANEL_GAP)
            .sum::<f64>()
        + if report.hedging.is_some() {
            HEDGING_HEIGHT
        } else {
            0.0
        };

    let mut svg = Svg { out: String::new() };
    writeln!(
        svg.out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH:.0} {height:.0}\">"
    )?;
    svg.rect(0.0, 0.0, WIDTH, height, "fill=\"#ffffff\"")?;
    let instances = if report.instances == 1 {
        String::from("1 instance")
    } else {
        format!("{} instances", report.instances)
    };
    svg.text(
        10.0,
        26.0,
        18.0,
        "start",
        "title",
        &format!(
            "breakwater-sim: {} ({} requests, {instances})",
            report.scenario, report.requests
        ),
    )?;
    if !report.description.is_empty() {
        svg.text(10.0, 46.0, 12.0, "start", "subtitle", &report.description)?;
    }

    writeln!(svg.out, "<g class=\"legend\">")?;
    svg.rect(
        legend_x,
        legend_y,
        legend_x + legend_width,
        legend_y + legend_height,
        "class=\"legend-box\" fill=\"#ffffff\" stroke=\"#999999\"",
    )?;
    for (row_index, row) in rows.iter().enumerate() {
        let y = legend_y + 4.0 + row_index as f64 * 20.0 + 10.0;
        for (x, i) in row {
            let Some((swatch, text)) = legend.get(*i) else {
                continue;
            };
            let x = legend_x + x;
            match swatch {
                Swatch::Area(colour) => svg.rect(
                    x,
                    y - 6.0,
                    x + 16.0,
                    y + 6.0,
                    &format!("fill=\"{colour}\" fill-opacity=\"0.6\" stroke=\"{colour}\""),
                )?,
                Swatch::Line(colour) => writeln!(
                    svg.out,
                    "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
                    x + 16.0
                )?,
            }
            svg.text(x + 22.0, y + 4.0, legend_font, "start", "legend-text", text)?;
        }
    }
    writeln!(svg.out, "</g>")?;

    let mut top = header;
    for r in &report.strategies {
        let tl = &r.timeline;
        let per_s = 1_000.0 / tl.bucket_ms as f64;
        let group_s = group as f64 * tl.bucket_ms as f64 / 1_000.0;
        let len = tl.len();
        writeln!(svg.out, "<g class=\"panel\">")?;
        let mut caption = format!(
            "{}: {} upstream calls",
            r.strategy.label(),
            r.upstream_calls
        );
        if r.strategy.has_breaker() {
            write!(
                caption,
                ", {} requests failed fast, {} attempts rejected by the breaker",
                r.failed_fast, r.rejected_attempts
            )?;
        }
        svg.text(10.0, top + 18.0, 13.0, "start", "caption", &caption)?;

        let plot = Area {
            x0: LEFT,
            y0: top + CAPTION,
            x1: WIDTH - RIGHT,
            y1: top + CAPTION + PLOT_HEIGHT,
            seconds,
            y_max,
        };
        svg.area(&plot, &time, r)?;
        for v in ticks(y_max, y_step) {
            let y = plot.y(v);
            if v > 0.0 {
                svg.line(plot.x0, y, plot.x1, y, GRID)?;
            }
            svg.line(plot.x0 - 4.0, y, plot.x0, y, AXIS)?;
            svg.text(
                plot.x0 - 7.0,
                y + 4.0,
                11.0,
                "end",
                "tick",
                &number(v, y_step),
            )?;
        }
        svg.vertical_title(22.0, plot.y0, plot.y1, "attempts per second")?;
        if r.strategy.has_breaker() {
            let rejected = rates(tl.rejected.iter().map(|c| *c as f64 * per_s), len, group);
            svg.series(
                "rejected",
                REJECTED,
                1.2,
                &step_points(&plot, &rejected, group_s)?,
            )?;
        }
        let calls = rates(tl.calls.iter().map(|c| *c as f64 * per_s), len, group);
        svg.series("calls", CALLS, 1.2, &step_points(&plot, &calls, group_s)?)?;
        svg.axes_frame(&plot)?;
        let mut lowest = plot;

        if r.strategy.has_breaker() {
            let strip = Area {
                x0: LEFT,
                y0: plot.y1 + STRIP_GAP,
                x1: WIDTH - RIGHT,
                y1: plot.y1 + STRIP_GAP + STRIP_HEIGHT,
                seconds,
                y_max: 1.0,
            };
            svg.area(&strip, &time, r)?;
            let several = r.strategy == super::Strategy::BreakerPerInstance && report.instances > 1;
            let labels = if several {
                [(0.0, "all closed"), (0.5, "½"), (1.0, "all open")]
            } else {
                [(0.0, "closed"), (0.5, "half-open"), (1.0, "open")]
            };
            for (v, label) in labels {
                let y = strip.y(v);
                svg.line(strip.x0 - 4.0, y, strip.x0, y, AXIS)?;
                svg.text(strip.x0 - 7.0, y + 4.0, 11.0, "end", "tick", label)?;
            }
            let title = if several { "breakers" } else { "breaker" };
            svg.vertical_title(22.0, strip.y0, strip.y1, title)?;
            let levels = rates(
                tl.breaker_open.iter().copied(),
                tl.breaker_open.len(),
                group,
            );
            if !levels.is_empty() {
                let line = step_points(&strip, &levels, group_s)?;
                let (start, end) = (strip.x(0.0), strip.x(levels.len() as f64 * group_s));
                writeln!(
                    svg.out,
                    "<polygon class=\"series breaker\" fill=\"{BREAKER}\" fill-opacity=\"0.3\" stroke=\"none\" \
                     points=\"{start:.1},{:.1} {line} {end:.1},{:.1}\"/>",
                    strip.y1, strip.y1
                )?;
                svg.series("breaker", BREAKER, 1.5, &line)?;
            }
            svg.axes_frame(&strip)?;
            lowest = strip;
        }
        svg.time_ticks(&lowest, &time)?;
        writeln!(svg.out, "</g>")?;
        top += panel_height(r) + PANEL_GAP;
    }
    if let Some(h) = &report.hedging {
        hedging(&mut svg, top, h)?;
    }
    writeln!(svg.out, "</svg>")?;
    Ok(svg.out)
}

/// The hedging panel: time to first token without and with a hedge, as bars of p99 with p50
/// marked, on one scale, and the extra requests the hedge cost.
fn hedging(svg: &mut Svg, top: f64, h: &super::HedgingReport) -> fmt::Result {
    writeln!(svg.out, "<g class=\"hedging\">")?;
    svg.text(
        10.0,
        top + 18.0,
        13.0,
        "start",
        "caption",
        &format!(
            "hedging: time to first token, {} requests; a second provider asked after {}, budget {} % of calls",
            h.requests,
            h.after,
            h.budget * 100.0
        ),
    )?;
    let scale = (WIDTH - RIGHT - LEFT - 330.0) / h.plain_p99_ms.max(h.hedged_p99_ms).max(1) as f64;
    let rows = [
        (
            "without hedge",
            h.plain_p50_ms,
            h.plain_p99_ms,
            CALLS,
            String::new(),
        ),
        (
            "with hedge",
            h.hedged_p50_ms,
            h.hedged_p99_ms,
            HEDGED,
            format!(
                ", +{} requests ({:.1} %)",
                h.extra_requests,
                h.extra_share() * 100.0
            ),
        ),
    ];
    for (i, (label, p50, p99, colour, extra)) in rows.into_iter().enumerate() {
        let y = top + CAPTION + 8.0 + i as f64 * 30.0;
        svg.text(LEFT - 7.0, y + 14.0, 12.0, "end", "tick", label)?;
        let x1 = LEFT + (p99 as f64 * scale).max(1.0);
        svg.rect(
            LEFT,
            y,
            x1,
            y + 20.0,
            &format!("fill=\"{colour}\" fill-opacity=\"0.6\" stroke=\"{colour}\""),
        )?;
        let x50 = LEFT + p50 as f64 * scale;
        svg.line(x50, y - 2.0, x50, y + 22.0, AXIS)?;
        svg.text(
            x1 + 8.0,
            y + 14.0,
            12.0,
            "start",
            "legend-text",
            &format!(
                "p99 {}, p50 {}{extra}",
                super::duration(p99),
                super::duration(p50)
            ),
        )?;
    }
    writeln!(svg.out, "</g>")
}
