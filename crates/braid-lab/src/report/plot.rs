//! The report's figures: what each draws ([`Figure`]), and the one path by which every figure
//! is drawn (SVG and PNG under `plots/`) and shown in the summary ([`Ctx::figure`]).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::prelude::*;

use crate::bench::ConfigResult;
use crate::plot::{self, Series};

use super::Ctx;

/// One figure of the report.
pub struct Figure {
    /// File name under `plots/`, without extension.
    pub stem: String,
    pub title: String,
    pub x_label: &'static str,
    pub y_label: &'static str,
    pub chart: Chart,
}

/// How a figure shows its data.
pub enum Chart {
    /// Lines of bench results.
    Lines {
        x: X,
        y: Y,
        key: Key,
        /// Leave `none` (no logging) out.
        skip_none: bool,
    },
    /// Lines of bench results' txn/s against the swept value, both axes on log scales (a
    /// throughput over several orders of magnitude of a parameter).
    LogLog { key: Key },
    /// Labelled bars (of bench results: each configuration's txn/s).
    Bars,
    /// Stacked bars computed from bench results (a time breakdown): one bar per [`Stack`],
    /// its segments bottom first, named in the legend.
    Stacked(fn(&[(f64, ConfigResult)]) -> Vec<Stack>),
    /// Lines computed from bench results (a quantity derived from their throughputs, such as
    /// transactions per second per dollar against a price ratio).
    Derived(fn(&[(f64, ConfigResult)]) -> Vec<Series>),
}

/// One bar of a [`Chart::Stacked`] figure: its label and its segments (name, value), bottom
/// first; a segment's name is its legend entry and colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    pub label: String,
    pub parts: Vec<(String, f64)>,
}

impl Stack {
    /// A bar of `shares` (fractions of its total) as percentages, segment i named `names[i]`.
    pub fn of_shares(label: String, names: &[&str], shares: &[f64]) -> Stack {
        Stack {
            label,
            parts: names
                .iter()
                .zip(shares)
                .map(|(n, v)| (n.to_string(), v * 100.0))
                .collect(),
        }
    }
}

/// A line chart's x axis.
pub enum X {
    Threads,
    NvmDelay,
    /// The value the experiment swept (the one each run was made at).
    Sweep,
}

/// A line chart's y axis.
pub enum Y {
    TxnPerS,
    /// The commit latency's 99th percentile, us.
    P99Us,
    /// Mean latency of one log insertion (per record inserted).
    RecordInsertNs,
}

/// What a line stands for.
pub enum Key {
    /// A configuration: scheme, logging kind and device ([`plot::label`]).
    Label,
    /// A scheme and logging kind.
    SchemeLogging,
}

/// What a figure is drawn from.
pub enum Data<'a> {
    /// Bench results, each with the swept value of the run it came from.
    Results(&'a [(f64, ConfigResult)]),
    Bars(&'a [(String, f64)]),
}

impl Chart {
    /// The lines of a line chart from bench results.
    fn series(&self, rows: &[(f64, ConfigResult)]) -> Vec<Series> {
        let (x, y, key, skip_none) = match self {
            Chart::Lines {
                x,
                y,
                key,
                skip_none,
            } => (x, y, key, *skip_none),
            Chart::LogLog { key } => (&X::Sweep, &Y::TxnPerS, key, false),
            _ => return Vec::new(),
        };
        let kept: Vec<&(f64, ConfigResult)> = rows
            .iter()
            .filter(|(_, r)| !skip_none || r.scheme != crate::common::NONE)
            .collect();
        plot::group(
            &kept,
            |(_, r)| match key {
                Key::Label => plot::label(r),
                Key::SchemeLogging => format!("{} {}", r.scheme, r.logging),
            },
            |(swept, r)| match x {
                X::Threads => r.threads as f64,
                X::NvmDelay => r.nvm_delay_ns as f64,
                X::Sweep => *swept,
            },
            |(_, r)| {
                Some(match y {
                    Y::TxnPerS => r.txn_per_s,
                    Y::P99Us => r.p99_us,
                    Y::RecordInsertNs => r.record_insert_ns,
                })
            },
        )
    }
}

impl Ctx<'_> {
    /// Draw `fig` from `data` and show it in the summary.
    pub fn figure(&mut self, fig: &Figure, data: Data<'_>) -> anyhow::Result<()> {
        let stem = self.args.out.join("plots").join(&fig.stem);
        // Figures computed from the results rather than drawn from them.
        let computed = match (&fig.chart, &data) {
            (Chart::Stacked(stacks), Data::Results(rows)) => Some(stacked_chart(
                &stem,
                &fig.title,
                fig.y_label,
                &stacks(rows),
            )?),
            (Chart::Derived(lines), Data::Results(rows)) => Some(plot::line_chart(
                &stem,
                &fig.title,
                fig.x_label,
                fig.y_label,
                &lines(rows),
            )?),
            (Chart::LogLog { .. }, Data::Results(rows)) => Some(plot::log_line_chart(
                &stem,
                &fig.title,
                fig.x_label,
                fig.y_label,
                &fig.chart.series(rows),
            )?),
            _ => None,
        };
        if let Some(files) = computed {
            self.images(&files);
            return Ok(());
        }
        let files = match data {
            Data::Results(rows) if matches!(fig.chart, Chart::Bars) => {
                let bars: Vec<(String, f64)> = rows
                    .iter()
                    .filter(|(_, r)| r.scheme != crate::common::NONE)
                    .map(|(_, r)| (plot::label(r), r.txn_per_s))
                    .collect();
                plot::bar_chart(&stem, &fig.title, fig.y_label, &bars)?
            }
            Data::Results(rows) => plot::line_chart(
                &stem,
                &fig.title,
                fig.x_label,
                fig.y_label,
                &fig.chart.series(rows),
            )?,
            Data::Bars(bars) => plot::bar_chart(&stem, &fig.title, fig.y_label, bars)?,
        };
        self.images(&files);
        Ok(())
    }
}

/// Colours of a stacked chart's segments.
const SEGMENT_COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];

/// The segment names of `stacks`, in the order they first appear.
fn segment_names(stacks: &[Stack]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in stacks {
        for (name, _) in &s.parts {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

fn draw_stacked<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    stacks: &[Stack],
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing: {e}");
    root.fill(&WHITE).map_err(err)?;
    let height = |s: &Stack| s.parts.iter().map(|p| p.1.max(0.0)).sum::<f64>();
    // Room above the tallest bar for the legend.
    let ymax = stacks.iter().map(height).fold(0.0f64, f64::max).max(1e-9) * 1.45;
    let labels: Vec<String> = stacks.iter().map(|s| s.label.clone()).collect();
    let mut chart = plot::category_chart(&root, title, y_label, &labels, ymax)?;
    for (k, name) in segment_names(stacks).iter().enumerate() {
        let colour = SEGMENT_COLOURS[k % SEGMENT_COLOURS.len()];
        let rects: Vec<Rectangle<(f64, f64)>> = stacks
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let at = s.parts.iter().position(|p| p.0 == *name)?;
                let below: f64 = s.parts[..at].iter().map(|p| p.1.max(0.0)).sum();
                let top = below + s.parts[at].1.max(0.0);
                Some(Rectangle::new(
                    [(i as f64 + 0.2, below), (i as f64 + 0.8, top)],
                    colour.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.filled()));
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

/// Write `stem.svg` and `stem.png` with a stacked bar chart of `stacks`; returns both paths.
pub fn stacked_chart(
    stem: &Path,
    title: &str,
    y_label: &str,
    stacks: &[Stack],
) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(p) = stem.parent() {
        std::fs::create_dir_all(p).with_context(|| format!("{}", p.display()))?;
    }
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    draw_stacked(
        SVGBackend::new(&svg, (900, 560)).into_drawing_area(),
        title,
        y_label,
        stacks,
    )?;
    draw_stacked(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        title,
        y_label,
        stacks,
    )?;
    Ok(vec![svg, png])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stacked_chart_is_written_with_its_segments_in_order() {
        let stacks = [
            Stack {
                label: "A".into(),
                parts: vec![("x".into(), 60.0), ("y".into(), 40.0)],
            },
            Stack {
                label: "B".into(),
                parts: vec![("x".into(), 20.0), ("z".into(), 80.0)],
            },
        ];
        assert_eq!(segment_names(&stacks), ["x", "y", "z"]);
        let dir = std::env::temp_dir().join(format!("braid-stacked-{}", std::process::id()));
        let files = stacked_chart(&dir.join("s"), "t", "%", &stacks);
        let ok = files.as_ref().is_ok_and(|f| f.iter().all(|p| p.exists()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(ok, "{files:?}");
    }
}
