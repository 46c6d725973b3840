//! Plots of benchmark and recovery results, drawn with plotters as SVG and PNG side by side.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::prelude::*;

use crate::bench::ConfigResult;

/// One line of a line chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Add `point` to the series named `name` in `series`, starting that series if there is none.
pub fn add_point(series: &mut Vec<Series>, name: &str, point: (f64, f64)) {
    match series.iter_mut().find(|s| s.name == name) {
        Some(s) => s.points.push(point),
        None => series.push(Series {
            name: name.to_string(),
            points: vec![point],
        }),
    }
}

fn palette(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

fn draw_lines<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {e}");
    root.fill(&WHITE).map_err(err)?;
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let y1 = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let (x0, x1) = if x0.is_finite() && x1 > x0 {
        (x0, x1)
    } else {
        (x0.min(0.0), x0.max(0.0) + 1.0)
    };
    let pad = (x1 - x0) * 0.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..(y1 * 1.15).max(1e-9))
        .map_err(err)?;
    let mut xs_all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs_all.sort_by(|a, b| a.total_cmp(b));
    xs_all.dedup();
    let integral = xs_all.iter().all(|x| x.fract() == 0.0);
    chart
        .configure_mesh()
        .x_labels(if integral {
            xs_all.len().clamp(2, 12)
        } else {
            10
        })
        .x_label_formatter(&|v| {
            if integral {
                format!("{v:.0}")
            } else {
                human(*v)
            }
        })
        .x_desc(x_label)
        .y_desc(y_label)
        .y_label_formatter(&|v| human(*v))
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let color = palette(i);
        chart
            .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The span of `v` on a log axis: from its least to its greatest positive value, widened by a
/// twentieth of the span's decades at each end (1 to 10 for none, or a single value).
fn log_span(v: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = v
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo / 2.0, hi * 2.0)
    };
    let pad = (hi / lo).powf(0.05);
    (lo / pad, hi * pad)
}

fn draw_log_lines<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {e}");
    root.fill(&WHITE).map_err(err)?;
    let points = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = log_span(points().map(|p| p.0));
    let (y0, y1) = log_span(points().map(|p| p.1));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| human(*v))
        .y_label_formatter(&|v| human(*v))
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let color = palette(i);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Write `stem.svg` and `stem.png` with a line chart on log scales on both axes (points at or
/// below 0 left out); returns both paths.
pub fn log_line_chart(
    stem: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> anyhow::Result<Vec<PathBuf>> {
    prepare(stem)?;
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_log_lines(
        SVGBackend::new(&svg, (900, 560)).into_drawing_area(),
        title,
        x_label,
        y_label,
        series,
    )?;
    draw_log_lines(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        title,
        x_label,
        y_label,
        series,
    )?;
    Ok(vec![svg, png])
}

/// A chart of one slot per name of `names` along x (each labelled under its middle) and 0 to
/// `ymax` along y, its mesh drawn: what bar charts draw their bars on.
pub fn category_chart<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    names: &[String],
    ymax: f64,
) -> anyhow::Result<
    ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {e}");
    let n = names.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n as f64, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (*x - 0.5).round();
            if (x - 0.5 - i).abs() < 0.01 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .y_label_formatter(&|v| human(*v))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

fn draw_bars<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    bars: &[(String, f64)],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {e}");
    root.fill(&WHITE).map_err(err)?;
    let ymax = bars.iter().map(|b| b.1).fold(0.0f64, f64::max).max(1e-9) * 1.15;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut chart = category_chart(&root, title, y_label, &names, ymax)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, b.1)],
                palette(i).filled(),
            )
        }))
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Write `stem.svg` and `stem.png` with a line chart; returns both paths.
pub fn line_chart(
    stem: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> anyhow::Result<Vec<PathBuf>> {
    if series.iter().all(|s| s.points.is_empty()) {
        // Nothing to draw (an experiment run for configurations the chart does not show):
        // no axis range exists, and none is made up.
        return Ok(Vec::new());
    }
    prepare(stem)?;
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_lines(
        SVGBackend::new(&svg, (900, 560)).into_drawing_area(),
        title,
        x_label,
        y_label,
        series,
    )?;
    draw_lines(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        title,
        x_label,
        y_label,
        series,
    )?;
    Ok(vec![svg, png])
}

/// Write `stem.svg` and `stem.png` with a bar chart; returns both paths.
pub fn bar_chart(
    stem: &Path,
    title: &str,
    y_label: &str,
    bars: &[(String, f64)],
) -> anyhow::Result<Vec<PathBuf>> {
    prepare(stem)?;
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_bars(
        SVGBackend::new(&svg, (900, 560)).into_drawing_area(),
        title,
        y_label,
        bars,
    )?;
    draw_bars(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        title,
        y_label,
        bars,
    )?;
    Ok(vec![svg, png])
}

fn prepare(stem: &Path) -> anyhow::Result<()> {
    if let Some(p) = stem.parent() {
        std::fs::create_dir_all(p).with_context(|| format!("{}", p.display()))?;
    }
    Ok(())
}

/// 1234567 -> "1.2M".
pub fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}K", v / 1e3)
    } else if a >= 1e3 {
        // One decimal below 10K, so that axis ticks 3,500 and 4,000 read apart.
        format!("{:.1}K", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

pub fn label(r: &ConfigResult) -> String {
    let mut s = r.scheme.clone();
    if r.scheme != "none" {
        if !r.variant.is_empty() {
            s.push_str(&format!(" {}", r.variant));
        }
        s.push_str(&format!(" {} {}", r.logging, r.device));
    }
    s
}

/// Group results into series by `key`, with x from `x` and y from `y`, skipping rows `keep`
/// rejects.
pub fn group<T>(
    results: &[T],
    key: impl Fn(&T) -> String,
    x: impl Fn(&T) -> f64,
    y: impl Fn(&T) -> Option<f64>,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in results {
        let Some(yv) = y(r) else { continue };
        add_point(&mut out, &key(r), (x(r), yv));
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// The standard plots of a `braid bench` sweep; returns the files written.
pub fn bench_plots(dir: &Path, results: &[ConfigResult]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let w = results
        .first()
        .map(|r| r.workload.clone())
        .unwrap_or_default();
    let threads: Vec<usize> = {
        let mut t: Vec<usize> = results.iter().map(|r| r.threads).collect();
        t.sort();
        t.dedup();
        t
    };
    let delays: Vec<u64> = {
        let mut d: Vec<u64> = results
            .iter()
            .filter(|r| r.scheme != "none")
            .map(|r| r.nvm_delay_ns)
            .collect();
        d.sort();
        d.dedup();
        d
    };
    if threads.len() > 1 {
        let s = group(results, label, |r| r.threads as f64, |r| Some(r.txn_per_s));
        files.extend(line_chart(
            &dir.join(format!("{w}-throughput-vs-threads")),
            &format!("{w}: throughput vs threads"),
            "worker threads",
            "committed txn/s (durable)",
            &s,
        )?);
    }
    if delays.len() > 1 {
        let tmax = threads.last().copied().unwrap_or(1);
        let pick: Vec<ConfigResult> = results
            .iter()
            .filter(|r| r.scheme != "none" && r.threads == tmax)
            .cloned()
            .collect();
        let s = group(
            &pick,
            label,
            |r| r.nvm_delay_ns as f64,
            |r| r.ratio_to_none.map(|x| x * 100.0),
        );
        files.extend(line_chart(
            &dir.join(format!("{w}-vs-nvm-delay")),
            &format!("{w}: throughput vs NVM write delay ({tmax} threads)"),
            "extra delay per persisted line (ns)",
            "% of no logging",
            &s,
        )?);
    }
    let tmax = threads.last().copied().unwrap_or(1);
    let last: Vec<&ConfigResult> = results
        .iter()
        .filter(|r| {
            r.threads == tmax
                && (r.nvm_delay_ns == delays.first().copied().unwrap_or(0) || r.scheme == "none")
        })
        .collect();
    let bars: Vec<(String, f64)> = last
        .iter()
        .filter(|r| r.scheme != "none")
        .filter_map(|r| r.ratio_to_none.map(|x| (label(r), x * 100.0)))
        .collect();
    if !bars.is_empty() {
        files.extend(bar_chart(
            &dir.join(format!("{w}-overhead")),
            &format!("{w}: throughput as % of no logging ({tmax} threads)"),
            "% of no logging",
            &bars,
        )?);
    }
    let lat: Vec<Series> = vec![
        Series {
            name: "p50".into(),
            points: last
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r.p50_us))
                .collect(),
        },
        Series {
            name: "p99".into(),
            points: last
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r.p99_us))
                .collect(),
        },
    ];
    if !last.is_empty() {
        let bars: Vec<(String, f64)> = last
            .iter()
            .map(|r| (format!("{} p99", label(r)), r.p99_us))
            .collect();
        files.extend(bar_chart(
            &dir.join(format!("{w}-latency-p99")),
            &format!("{w}: p99 commit-to-durable latency ({tmax} threads)"),
            "microseconds",
            &bars,
        )?);
        let bars: Vec<(String, f64)> = last
            .iter()
            .map(|r| (format!("{} p50", label(r)), r.p50_us))
            .collect();
        files.extend(bar_chart(
            &dir.join(format!("{w}-latency-p50")),
            &format!("{w}: p50 commit-to-durable latency ({tmax} threads)"),
            "microseconds",
            &bars,
        )?);
        let _ = lat;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A chart without a point (every configuration it shows left out of the run) is not
    /// drawn: there is no axis range to draw it with (the drawing did not return).
    #[test]
    fn empty_line_chart_is_skipped() {
        let d = tempfile::tempdir().unwrap();
        let stem = d.path().join("empty");
        let empty = [Series {
            name: "a".into(),
            points: Vec::new(),
        }];
        assert!(line_chart(&stem, "t", "x", "y", &empty).unwrap().is_empty());
        assert!(line_chart(&stem, "t", "x", "y", &[]).unwrap().is_empty());
        assert!(!stem.with_extension("svg").exists());
    }
}
