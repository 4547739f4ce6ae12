//! SVG charts for the reports (plotters, SVG backend only: text stays SVG
//! text, so no font library is needed): [`ratios`] of ours/peer per cell,
//! and the [`residency`] of a traced file over time, one line per run.

use anyhow::{Result, anyhow};
use mapwise_core::trace::Trace;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::Serialize;

/// One chart written beside a report, as results.json lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ChartFile {
    /// File name inside the report directory (`ratios.svg`).
    pub file: String,
    /// What it shows, one line (the image's alt text in REPORT.md).
    pub what: String,
    /// The SVG text.
    #[serde(skip)]
    pub svg: String,
}

impl ChartFile {
    /// (file name, bytes) for [`crate::output::publish`].
    #[must_use]
    pub fn output(&self) -> (&str, &[u8]) {
        (self.file.as_str(), self.svg.as_bytes())
    }

    /// `ratios.svg`: contender 0 / contender 1 of `metric` per cell, a
    /// [`ratios`] chart titled `title`, described as `what`.
    pub fn ratios<'a>(
        cells: impl IntoIterator<Item = &'a crate::cell::CellRuns>,
        metric: &str,
        (title, what): (&str, &str),
        target: Option<f64>,
    ) -> Result<Self> {
        let bar =
            |c: &crate::cell::CellRuns| Some(RatioBar::of(&c.label, &c.ratio(0, 1, metric).0?));
        let bars: Vec<RatioBar> = cells.into_iter().filter_map(bar).collect();
        let svg = ratios(title, &bars, target)?;
        Ok(Self { file: "ratios.svg".to_owned(), what: what.to_owned(), svg })
    }
}

/// The `## Charts and residency traces` section: the image of each of `charts`, then the
/// paragraph on the traces ([`crate::traces::Traces::paragraph`]).
pub fn section(report: &mut crate::report::Report, charts: &[ChartFile], traces: Option<String>) {
    report.section("Charts and residency traces");
    for c in charts {
        report.image(&c.what, &c.file);
    }
    if let Some(p) = traces {
        report.text(p);
    }
}

/// One bar of a ratio chart.
#[derive(Debug, Clone)]
pub struct RatioBar {
    /// Row label (the cell).
    pub label: String,
    /// Median of the per-pair ratios (ours / peer).
    pub median: f64,
    /// Smallest per-pair ratio.
    pub min: f64,
    /// Largest per-pair ratio.
    pub max: f64,
}

impl RatioBar {
    /// The bar of a cell labelled `label` whose per-pair ratios are `s`.
    #[must_use]
    pub fn of(label: impl Into<String>, s: &super::stats::Summary) -> RatioBar {
        RatioBar { label: label.into(), median: s.median, min: s.min, max: s.max }
    }
}

const WIDTH: u32 = 760;
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
];

/// A chart with a linear f64 y axis and an f64 x axis `X` (linear or log).
type Chart<'a, 'b, X> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>;

/// Draw the series legend (lower right) and finish the SVG.
fn legend_and_present<'b, X>(
    chart: &mut Chart<'b, 'b, X>,
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    Ok(root.present()?)
}

/// Spread of ratios beyond which bars near parity would be slivers: log axis.
const LOG_SPREAD: f64 = 20.0;

/// The x range of a ratio chart, `(from, to, logarithmic)`: linear from 0
/// to a little past the largest value (parity and the target included), or
/// logarithmic around the positive finite values when they spread widely.
fn ratio_axis(bars: &[RatioBar], target: Option<f64>) -> (f64, f64, bool) {
    let values: Vec<f64> = bars
        .iter()
        .flat_map(|b| [b.min, b.median, b.max])
        .chain([1.0])
        .chain(target)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let hi = values.iter().copied().fold(1.0f64, f64::max);
    let lo = values.iter().copied().fold(1.0f64, f64::min);
    if hi / lo > LOG_SPREAD { (lo / 1.5, hi * 1.5, true) } else { (0.0, hi * 1.1, false) }
}

/// The ticks of a log axis: 1, 2 and 5 times the powers of ten in range.
fn log_ticks(from: f64, to: f64) -> Vec<f64> {
    if !(from > 0.0 && to > from && to.is_finite()) {
        return Vec::new();
    }
    // Decades of a ratio axis: a few, far inside i32.
    #[expect(clippy::cast_possible_truncation)]
    let (lo, hi) = (from.log10().floor() as i32, to.log10().ceil() as i32);
    (lo..=hi)
        .flat_map(|k| {
            [1.0, 2.0, 5.0].map(|m: f64| {
                // Dividing by an exact power of ten keeps 0.2 as 0.2.
                if k < 0 { m / 10f64.powi(-k) } else { m * 10f64.powi(k) }
            })
        })
        .filter(|v| (from..=to).contains(v))
        .collect()
}

/// A horizontal bar chart of time ratios ours / peer: the median as a bar,
/// min–max as a whisker, parity at 1.0 and the target, when given, as
/// lines; the axis turns logarithmic for a wide spread (its label says so).
pub fn ratios(title: &str, bars: &[RatioBar], target: Option<f64>) -> Result<String> {
    let mut svg = String::new();
    let rows = bars.len().max(1);
    let height = 90 + 34 * u32::try_from(rows).unwrap_or(u32::MAX / 64);
    let (from, to, log) = ratio_axis(bars, target);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        #[expect(clippy::cast_precision_loss)]
        let y_max = rows as f64;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(220);
        if log {
            let mut chart = builder.build_cartesian_2d(
                (from..to).log_scale().with_key_points(log_ticks(from, to)),
                0.0..y_max,
            )?;
            draw_ratio_bars(&mut chart, &root, bars, target, (from, to), log)?;
        } else {
            let mut chart = builder.build_cartesian_2d(from..to, 0.0..y_max)?;
            draw_ratio_bars(&mut chart, &root, bars, target, (from, to), log)?;
        }
    }
    Ok(with_title(svg, title))
}

/// `svg` with a `<title>` (plotters writes none) for browsers and readers.
fn with_title(svg: String, title: &str) -> String {
    let Some(end) = svg.find('>') else {
        return svg;
    };
    let escaped = title.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!("{}\n<title>{escaped}</title>{}", &svg[..=end], &svg[end + 1..])
}

/// The mesh, bars, whiskers, lines and legend of [`ratios`] on `chart`.
fn draw_ratio_bars<'b, X>(
    chart: &mut Chart<'b, 'b, X>,
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    bars: &[RatioBar],
    target: Option<f64>,
    (from, to): (f64, f64),
    log: bool,
) -> Result<()>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let rows = bars.len().max(1);
    #[expect(clippy::cast_precision_loss)]
    let y_max = rows as f64;
    // A value the axis cannot show (NaN, or at or below its start) sits at it.
    let at = |v: f64| {
        if v.is_finite() && v > from { v.min(to) } else { from }
    };
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows * 2 + 1)
        .y_label_formatter(&|y| {
            // Label the bar centres (k + 0.5) only.
            let k = y - 0.5;
            if (k - k.round()).abs() < 1e-6 && k >= 0.0 {
                #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let i = rows - 1 - k.round() as usize;
                labels.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc(format!(
            "time ratio ours / peer (median, min–max){}: below 1 is faster",
            if log { ", log scale" } else { "" }
        ))
        .draw()?;
    for (i, b) in bars.iter().enumerate() {
        #[expect(clippy::cast_precision_loss)]
        let y = (rows - 1 - i) as f64;
        let color = PALETTE[i % PALETTE.len()];
        chart.draw_series([Rectangle::new(
            [(from, y + 0.2), (at(b.median), y + 0.8)],
            color.mix(0.75).filled(),
        )])?;
        // The whisker: min–max, and a tick at each end.
        let whisker =
            [(b.min, 0.5, b.max, 0.5), (b.min, 0.35, b.min, 0.65), (b.max, 0.35, b.max, 0.65)];
        let paths = whisker.map(|(x0, y0, x1, y1)| {
            PathElement::new(vec![(at(x0), y + y0), (at(x1), y + y1)], BLACK.stroke_width(2))
        });
        chart.draw_series(paths)?;
    }
    let parity = (1.0, "parity (1.0)".to_owned(), BLACK.stroke_width(1), BLACK.into());
    let red = RED.stroke_width(2);
    let target = target.map(|t| (t, format!("target ({t}×)"), red, red));
    for (x, label, style, legend) in [Some(parity), target].into_iter().flatten() {
        chart
            .draw_series([PathElement::new(vec![(x, 0.0), (x, y_max)], style)])?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], legend));
    }
    legend_and_present(chart, root)
}

/// The y axis of a residency chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Resident pages / the file's pages, 0–100 %.
    Percent,
    /// Resident OS pages, for runs that touch a few pages of a large file.
    Pages,
}

/// `(seconds since the first sample, y)` of every frame of `t`.
#[expect(clippy::cast_precision_loss)]
fn residency_points(t: &Trace, scale: Scale) -> Vec<(f64, f64)> {
    let base = t.frames.first().map_or(0, |f| f.t_us);
    let point = |f: &mapwise_core::trace::Frame| {
        let resident = f.resident_pages() as f64;
        let y = match scale {
            Scale::Percent => 100.0 * resident / f.total_pages(t.header.os_page_size).max(1) as f64,
            Scale::Pages => resident,
        };
        (f.t_us.saturating_sub(base) as f64 / 1e6, y)
    };
    t.frames.iter().map(point).collect()
}

/// The traced file's residency in `scale` over time, one line per (legend,
/// trace): seconds since each trace's first sample.
pub fn residency(title: &str, series: &[(String, &Trace)], scale: Scale) -> Result<String> {
    let points: Vec<(String, Vec<(f64, f64)>)> =
        series.iter().map(|(label, t)| (label.clone(), residency_points(t, scale))).collect();
    let t_max =
        points.iter().flat_map(|(_, p)| p.iter().map(|&(t, _)| t)).fold(0.0f64, f64::max).max(0.05);
    if points.iter().all(|(_, p)| p.is_empty()) {
        return Err(anyhow!("chart: no frames to draw"));
    }
    let (y_max, y_desc) = match scale {
        Scale::Percent => (100.0, "% of the file resident"),
        Scale::Pages => {
            let most =
                points.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0f64, f64::max);
            ((most * 1.15).max(most + 1.0), "resident pages of the file")
        }
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 360)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..y_max)?;
        // Pages are whole: at most one label per page, none between pages.
        let y_labels = match scale {
            Scale::Percent => 11,
            Scale::Pages => (1..=11).take_while(|&n| f64::from(n - 1) <= y_max).count(),
        };
        let y_fmt = |y: &f64| match scale {
            Scale::Pages if y.fract() != 0.0 => String::new(),
            Scale::Pages => format!("{y:.0}"),
            Scale::Percent => format!("{y}"),
        };
        chart
            .configure_mesh()
            .x_desc("seconds since the run started")
            .y_desc(y_desc)
            .y_labels(y_labels)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for (i, (label, pts)) in points.into_iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart.draw_series(LineSeries::new(pts, color.stroke_width(2)))?.label(label).legend(
                move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)),
            );
        }
        legend_and_present(&mut chart, &root)?;
    }
    Ok(with_title(svg, title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::trace::Frame;

    fn bar(label: &str, median: f64) -> RatioBar {
        RatioBar { label: label.into(), median, min: median, max: median }
    }

    #[test]
    fn ratio_charts_label_every_bar_and_the_target() {
        let s = crate::stats::Summary::of(&[0.8, 0.9, 1.1]).unwrap();
        let bars = [RatioBar::of("cold plain", &s), bar("warm populate", f64::NAN)];
        let svg = ratios("bolt-scan <ours & Go>", &bars, Some(0.7)).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("\n<title>bolt-scan &lt;ours &amp; Go&gt;</title>"), "escaped title");
        for needle in ["cold plain", "warm populate", "target (0.7×)", "parity"] {
            assert!(svg.contains(needle), "no {needle}");
        }
        assert!(!svg.contains("log scale"));
    }

    #[test]
    fn wide_ratio_spreads_get_a_log_axis() {
        // Narrow: linear from 0 to 10 % past the largest (here the target).
        let (from, to, log) = ratio_axis(&[bar("a", 0.9), bar("b", 1.2)], Some(1.5));
        assert_eq!((from, log), (0.0, false));
        assert!((to - 1.65).abs() < 1e-12);
        // 0.05 to 53: logarithmic, a step of 1.5 beyond each end.
        let wide = [bar("kept handle, mmap", 0.05), bar("warm, direct", 53.0)];
        let (from, to, log) = ratio_axis(&wide, None);
        assert!(log && (from - 0.05 / 1.5).abs() < 1e-12 && (to - 53.0 * 1.5).abs() < 1e-9);
        // NaN and non-positive values neither widen the axis nor break it.
        let (_, _, log) = ratio_axis(&[bar("x", f64::NAN), bar("y", 0.0), bar("z", 2.0)], None);
        assert!(!log);
        assert_eq!(log_ticks(0.03, 80.0), [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert!(log_ticks(0.0, 1.0).is_empty());
        let svg = ratios("in-process", &wide, None).unwrap();
        assert!(svg.contains("log scale") && svg.contains("warm, direct"));
    }

    #[test]
    fn residency_charts_draw_each_trace_as_a_share_or_in_pages() {
        // A 400-page file of which 0, 2, then 4 pages are resident.
        let t = crate::traces::tests::trace(
            "f.rrd",
            vec![
                Frame::from_bitmap(10_000, 400 * 4096, true, &[0; 7], 400),
                Frame::from_bitmap(60_000, 400 * 4096, true, &[0b11, 0, 0, 0, 0, 0, 0], 400),
                Frame::from_bitmap(110_000, 400 * 4096, true, &[0, 0, 0, 0, 0, 0, 0xF], 400),
            ],
        );
        assert_eq!(residency_points(&t, Scale::Pages), [(0.0, 0.0), (0.05, 2.0), (0.1, 4.0)]);
        assert_eq!(residency_points(&t, Scale::Percent), [(0.0, 0.0), (0.05, 0.5), (0.1, 1.0)]);
        let two = [("ours plain".into(), &t), ("Go plain".into(), &t)];
        let svg = residency("cold scans", &two, Scale::Percent).unwrap();
        assert!(svg.contains("ours plain") && svg.contains("% of the file resident"));
        let svg = residency("cold updates", &two[..1], Scale::Pages).unwrap();
        assert!(svg.contains("resident pages of the file") && svg.contains("<title>cold updates"));
        // y runs 0..5 pages: whole-page labels only (each on a line of its own).
        for label in ["0", "1", "2", "3", "4"] {
            assert!(svg.contains(&format!(">\n{label}\n<")), "no y label {label}");
        }
        assert!(!svg.contains(">\n0.5\n<"), "fractional page label");
        let empty = Trace { frames: vec![], ..t.clone() };
        assert!(residency("x", &[("e".into(), &empty)], Scale::Percent).is_err());
    }
}
