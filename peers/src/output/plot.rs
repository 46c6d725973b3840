//! The plot: throughput against threads, one panel per table of timed runs
//! ([`super::Group`]: append per record size, TPC-B one branch per thread and a single branch,
//! the account update, YCSB A and B), one line per system and variant (labelled
//! `rocksdb default`, `rocksdb tuned`), drawn with plotters as `peers.svg` and `peers.png`.
//! The reopen, kill and memory workloads are tables only.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::Report;

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 12] = [
        RGBColor(214, 39, 40),
        RGBColor(255, 127, 14),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(0, 0, 0),
        RGBColor(174, 199, 232),
    ];
    C[i % C.len()]
}

/// A panel: its title, and (system, [(threads, per_s)]) lines.
struct Panel {
    title: String,
    unit: &'static str,
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

fn panels(report: &Report) -> Vec<Panel> {
    super::Group::all(&report.runs)
        .into_iter()
        .map(|g| {
            let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            // A system whose run failed at a point has no figure there.
            for r in report
                .runs
                .iter()
                .filter(|r| g.contains(r) && r.failed_runs == 0)
            {
                let p = ((r.threads as f64).log2(), r.per_s);
                let label = r.label();
                match lines.iter_mut().find(|l| l.0 == label) {
                    Some(l) => l.1.push(p),
                    None => lines.push((label, vec![p])),
                }
            }
            for l in &mut lines {
                l.1.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let zipf = crate::workload::ycsb::YCSB_AB_THETA;
            let (title, unit) = match (g.workload.as_str(), g.record_bytes) {
                (w, Some(b)) if w.starts_with("append") => (
                    format!("log appends, {} records", super::table::size(b)),
                    "durable appends/s",
                ),
                ("ycsb", _) => (
                    match &report.ycsb {
                        Some(c) => format!("YCSB 2 accesses, {}", c.distribution()),
                        None => "YCSB".to_string(),
                    },
                    "durable txn/s",
                ),
                ("ycsb-a", _) => (format!("YCSB A (50/50), Zipf {zipf}"), "durable txn/s"),
                ("ycsb-b", _) => (format!("YCSB B (95/5), Zipf {zipf}"), "durable txn/s"),
                ("tpcb", _) => (
                    if g.single_branch == Some(true) {
                        "TPC-B, a single branch".to_string()
                    } else {
                        "TPC-B, one branch per thread".to_string()
                    },
                    "durable txn/s",
                ),
                _ => ("account update (1 row)".to_string(), "durable txn/s"),
            };
            Panel { title, unit, lines }
        })
        .collect()
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing: {e}");
    let xs = p.lines.iter().flat_map(|l| l.1.iter().map(|q| q.0));
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x0.is_finite() && x1 > x0 {
        (x0, x1)
    } else {
        (0.0, 1.0)
    };
    let y1 = p
        .lines
        .iter()
        .flat_map(|l| l.1.iter().map(|q| q.1))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(x0 - 0.2..x1 + 0.2, 0.0..y1 * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc(p.unit)
        .x_labels(((x1 - x0) as usize + 1).min(12))
        .x_label_formatter(&|x| format!("{}", 2f64.powf(x.round()) as u64))
        .y_label_formatter(&|y| {
            if *y >= 1e6 {
                format!("{:.1}M", y / 1e6)
            } else if *y >= 1e3 {
                format!("{:.0}k", y / 1e3)
            } else {
                format!("{y:.0}")
            }
        })
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in p.lines.iter().enumerate() {
        let c = color(i);
        let width = if name.starts_with("braid") { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(width)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&q| Circle::new(q, 3, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, report: &Report) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing: {e}");
    root.fill(&WHITE).map_err(err)?;
    let m = &report.machine;
    let root = root
        .titled(
            &format!(
                "braid and its peers, every commit durable ({} cores, {} on {}, braid {})",
                m.cores, m.fs_type, m.fs_source, m.git_rev
            ),
            ("sans-serif", 18),
        )
        .map_err(err)?;
    let panels = panels(report);
    let (rows, cols) = grid(panels.len());
    let areas = root.split_evenly((rows, cols));
    for (area, p) in areas.iter().zip(&panels) {
        draw_panel(area, p)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Rows and columns of the panels: at most 3 side by side.
fn grid(panels: usize) -> (usize, usize) {
    let cols = panels.clamp(1, 3);
    (panels.max(1).div_ceil(cols), cols)
}

/// Draw `peers.svg` and `peers.png` into `out`.
pub fn write(report: &Report, out: &Path) -> Result<()> {
    let (rows, cols) = grid(panels(report).len());
    let size = (520 * cols as u32, 520 * rows as u32);
    let svg = out.join("peers.svg");
    draw(SVGBackend::new(&svg, size).into_drawing_area(), report)?;
    let png = out.join("peers.png");
    draw(BitMapBackend::new(&png, size).into_drawing_area(), report)?;
    Ok(())
}
