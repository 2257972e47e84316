//! The SVG timeline: one panel per strategy with the upstream calls per second, the attempts
//! failed fast per second and the breaker state, over a shaded outage window. Drawn with
//! plotters' SVG backend.

use std::format;
use std::string::{String, ToString};

use plotters::prelude::*;

use super::report::Report;
use super::SimError;

const PANEL_HEIGHT: u32 = 260;
const WIDTH: u32 = 1_100;

fn chart_err<E: core::fmt::Display>(e: E) -> SimError {
    SimError::Chart(e.to_string())
}

/// A per-bucket series as a step line: bucket `i` holds its value over `[i, i + 1)`.
fn steps(values: impl Iterator<Item = f64>) -> impl Iterator<Item = (f64, f64)> {
    values
        .enumerate()
        .flat_map(|(i, v)| [(i as f64, v), (i as f64 + 1.0, v)])
}

/// Draws `report`'s timelines as an SVG document.
pub fn render_svg(report: &Report) -> Result<String, SimError> {
    let n = report.strategies.len().max(1);
    let height = PANEL_HEIGHT.saturating_mul(n as u32).saturating_add(40);
    let seconds = report
        .strategies
        .iter()
        .map(|r| r.timeline.len())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let peak = report
        .strategies
        .iter()
        .map(|r| {
            r.timeline
                .peak_calls()
                .max(r.timeline.rejected.iter().copied().max().unwrap_or(0))
        })
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.45; // headroom for the legend
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        let title = format!(
            "breakwater-sim: {} ({} requests, {} instance(s))",
            report.scenario, report.requests, report.instances
        );
        let (header, body) = root.split_vertically(40);
        header
            .draw_text(
                &title,
                &("sans-serif", 20).into_font().color(&BLACK),
                (10, 10),
            )
            .map_err(chart_err)?;
        let panels = body.split_evenly((n, 1));
        for (panel, r) in panels.iter().zip(report.strategies.iter()) {
            let tl = &r.timeline;
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{}: {} upstream calls, {} attempts failed fast",
                        r.strategy.label(),
                        r.upstream_calls,
                        r.rejected_attempts
                    ),
                    ("sans-serif", 15),
                )
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(55)
                .right_y_label_area_size(55)
                .build_cartesian_2d(0f64..seconds, 0f64..peak)
                .map_err(chart_err)?
                .set_secondary_coord(0f64..seconds, 0f64..1.05f64);
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc("per second")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| {
                    if (y - y.round()).abs() < 1e-9 {
                        format!("{y:.0}")
                    } else {
                        format!("{y:.1}")
                    }
                })
                .light_line_style(WHITE)
                .draw()
                .map_err(chart_err)?;
            if r.strategy.has_breaker() {
                chart
                    .configure_secondary_axes()
                    .y_desc("breaker open")
                    .draw()
                    .map_err(chart_err)?;
            }
            if let Some(start) = r.outage_start_ms {
                let start = start as f64 / tl.bucket_ms as f64;
                let end = r
                    .recovered_at_ms
                    .map_or(seconds, |t| t as f64 / tl.bucket_ms as f64);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(start, 0.0), (end, peak)],
                        RGBColor(255, 228, 228).filled(),
                    )))
                    .map_err(chart_err)?
                    .label("upstream degraded")
                    .legend(|(x, y)| {
                        Rectangle::new(
                            [(x, y - 5), (x + 16, y + 5)],
                            RGBColor(255, 228, 228).filled(),
                        )
                    });
            }
            let blue = RGBColor(31, 119, 180);
            chart
                .draw_series(LineSeries::new(
                    steps(tl.calls.iter().map(|c| *c as f64)),
                    blue.stroke_width(1),
                ))
                .map_err(chart_err)?
                .label("upstream calls/s")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], blue));
            if r.strategy.has_breaker() {
                let orange = RGBColor(255, 127, 14);
                chart
                    .draw_series(LineSeries::new(
                        steps(tl.rejected.iter().map(|c| *c as f64)),
                        orange.stroke_width(1),
                    ))
                    .map_err(chart_err)?
                    .label("failed fast/s")
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], orange));
                let red = RGBColor(214, 39, 40);
                chart
                    .draw_secondary_series(LineSeries::new(
                        steps(tl.breaker_open.iter().copied()),
                        red.stroke_width(2),
                    ))
                    .map_err(chart_err)?
                    .label("breaker (0 closed, 0.5 half-open, 1 open; averaged)")
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], red));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(chart_err)?;
        }
        root.present().map_err(chart_err)?;
    }
    Ok(out)
}
