//! The report's figures: what each draws ([`Figure`]), and the one path by which every figure
//! is drawn (SVG and PNG under `plots/`) and shown in the summary ([`Ctx::figure`]).

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
    /// Labelled bars (of bench results: each configuration's txn/s).
    Bars,
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
    /// Mean log insertion latency.
    InsertNs,
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
        let Chart::Lines {
            x,
            y,
            key,
            skip_none,
        } = self
        else {
            return Vec::new();
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
                    Y::InsertNs => r.log_insert_ns,
                })
            },
        )
    }
}

impl Ctx<'_> {
    /// Draw `fig` from `data` and show it in the summary.
    pub fn figure(&mut self, fig: &Figure, data: Data<'_>) -> anyhow::Result<()> {
        let stem = self.args.out.join("plots").join(&fig.stem);
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
