//! SVG charts for the reports (plotters, SVG backend only: text stays
//! SVG text, so no font library is needed).
//!
//! * [`ratios`] — ours/peer per cell: the median as a bar, min–max as a
//!   whisker, 1.0 (parity) and the target as vertical lines.
//! * [`residency`] — the traced file's resident share over time, one line
//!   per run (from residency traces), to show why a run is fast.

use anyhow::{Result, anyhow};
use mapwise_core::trace::Trace;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

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

const WIDTH: u32 = 760;
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
];

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("chart: {e}")
}

/// Both charts' coordinate system: seconds or ratios against a share.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draw the series legend (lower right) and finish the SVG.
fn legend_and_present<'b>(
    chart: &mut Chart<'b, 'b>,
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// A horizontal bar chart of ratios (time ours / time peer, lower is
/// better for us) with parity at 1.0 and, when given, the target line.
///
/// # Errors
/// When plotters fails to draw (it does not on finite inputs).
pub fn ratios(title: &str, bars: &[RatioBar], target: Option<f64>) -> Result<String> {
    let mut svg = String::new();
    let rows = bars.len().max(1);
    let height = 90 + 34 * u32::try_from(rows).unwrap_or(u32::MAX / 64);
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    let top = bars
        .iter()
        .map(|b| finite(b.max).max(finite(b.median)))
        .chain([1.0, target.unwrap_or(0.0)])
        .fold(0.0f64, f64::max)
        * 1.1;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        #[allow(clippy::cast_precision_loss)]
        let y_max = rows as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(220)
            .build_cartesian_2d(0.0..top, 0.0..y_max)
            .map_err(err)?;
        let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&|y| {
                // Label the bar centres (k + 0.5) only.
                let k = y - 0.5;
                if (k - k.round()).abs() < 1e-6 && k >= 0.0 {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let i = rows - 1 - k.round() as usize;
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc("time ratio ours / peer (median, min–max): below 1 is faster")
            .draw()
            .map_err(err)?;
        for (i, b) in bars.iter().enumerate() {
            #[allow(clippy::cast_precision_loss)]
            let y = (rows - 1 - i) as f64;
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series([Rectangle::new(
                    [(0.0, y + 0.2), (finite(b.median), y + 0.8)],
                    color.mix(0.75).filled(),
                )])
                .map_err(err)?;
            chart
                .draw_series([
                    PathElement::new(
                        vec![(finite(b.min), y + 0.5), (finite(b.max), y + 0.5)],
                        BLACK.stroke_width(2),
                    ),
                    PathElement::new(
                        vec![(finite(b.min), y + 0.35), (finite(b.min), y + 0.65)],
                        BLACK.stroke_width(2),
                    ),
                    PathElement::new(
                        vec![(finite(b.max), y + 0.35), (finite(b.max), y + 0.65)],
                        BLACK.stroke_width(2),
                    ),
                ])
                .map_err(err)?;
        }
        chart
            .draw_series([PathElement::new(
                vec![(1.0, 0.0), (1.0, y_max)],
                BLACK.stroke_width(1),
            )])
            .map_err(err)?
            .label("parity (1.0)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
        if let Some(t) = target {
            chart
                .draw_series([PathElement::new(
                    vec![(t, 0.0), (t, y_max)],
                    RED.stroke_width(2),
                )])
                .map_err(err)?
                .label(format!("target ({t}×)"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED.stroke_width(2)));
        }
        legend_and_present(&mut chart, &root)?;
    }
    Ok(svg)
}

/// Resident share of the traced file over time, one line per trace:
/// `(legend label, trace)`. Time is seconds since each trace's first
/// sample; the share is resident OS pages / the file's OS pages at that
/// sample, in percent.
///
/// # Errors
/// When there is nothing to draw or plotters fails.
pub fn residency(title: &str, series: &[(String, &Trace)]) -> Result<String> {
    let points: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(label, t)| {
            let base = t.frames.first().map_or(0, |f| f.t_us);
            let ps = t.header.os_page_size;
            let pts = t
                .frames
                .iter()
                .map(|f| {
                    #[allow(clippy::cast_precision_loss)]
                    let secs = (f.t_us - base) as f64 / 1e6;
                    let total = f.total_pages(ps).max(1);
                    #[allow(clippy::cast_precision_loss)]
                    let pct = 100.0 * f.resident_pages() as f64 / total as f64;
                    (secs, pct)
                })
                .collect();
            (label.clone(), pts)
        })
        .collect();
    let t_max = points
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(t, _)| t))
        .fold(0.0f64, f64::max)
        .max(0.05);
    if points.iter().all(|(_, p)| p.is_empty()) {
        return Err(anyhow!("chart: no frames to draw"));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..t_max * 1.02, 0.0..100.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds since the run started")
            .y_desc("% of the file resident")
            .draw()
            .map_err(err)?;
        for (i, (label, pts)) in points.into_iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
        }
        legend_and_present(&mut chart, &root)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::trace::{Frame, Header};

    #[test]
    fn ratio_chart_has_every_label_and_the_target() {
        let bars = vec![
            RatioBar {
                label: "cold plain".into(),
                median: 0.9,
                min: 0.8,
                max: 1.1,
            },
            RatioBar {
                label: "warm populate".into(),
                median: f64::NAN,
                min: 0.5,
                max: 0.7,
            },
        ];
        let svg = ratios("bolt-scan", &bars, Some(0.7)).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for needle in [
            "cold plain",
            "warm populate",
            "target (0.7×)",
            "parity",
            "bolt-scan",
        ] {
            assert!(svg.contains(needle), "no {needle}");
        }
    }

    #[test]
    fn residency_chart_draws_each_trace() {
        let t = Trace {
            header: Header {
                path: "f".into(),
                label: "l".into(),
                os_page_size: 4096,
                interval_us: 50_000,
                started_unix_ms: 0,
            },
            frames: vec![
                Frame::from_bitmap(0, 4 * 4096, true, &[0], 4),
                Frame::from_bitmap(50_000, 4 * 4096, true, &[0b11], 4),
                Frame::from_bitmap(100_000, 4 * 4096, true, &[0b1111], 4),
            ],
            truncated_tail: false,
        };
        let svg = residency(
            "cold scans",
            &[("ours plain".into(), &t), ("Go plain".into(), &t)],
        )
        .unwrap();
        assert!(svg.contains("ours plain") && svg.contains("Go plain"));
        assert!(svg.contains("% of the file resident"));
        let empty = Trace {
            frames: vec![],
            ..t.clone()
        };
        assert!(residency("x", &[("e".into(), &empty)]).is_err());
    }
}
