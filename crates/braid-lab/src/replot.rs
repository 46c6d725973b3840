//! `braid plot`: draw saved `braid bench` results (their JSON files) again, one figure per
//! metric against worker threads: throughput and the p50, p90, p99 and p99.9 commit latency,
//! one line per scheme (gsn with Remote Flush Avoidance on is a line of its own). Results
//! from several invocations (several sittings, or one scheme per invocation) are drawn
//! together; where one configuration appears more than once, its points are the medians.
//! What the runs only emulated is named in every figure's title, as in every table.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::Value;

use crate::bench::median;
use crate::plot::{Series, line_chart};

/// Options of `braid plot`.
#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Where the figures go (SVG and PNG, one per metric).
    #[arg(long)]
    pub out: PathBuf,
    /// What the figures show, at the start of every title (e.g. "YCSB, root disk"). Unless it
    /// says "emulated", what the runs emulated is appended in their own words.
    #[arg(long, default_value = "")]
    pub title: String,
    /// `braid bench` result files (JSON).
    #[arg(required = true)]
    pub json: Vec<PathBuf>,
}

/// The metrics drawn: (file stem, axis label, JSON field).
const METRICS: &[(&str, &str, &str)] = &[
    ("throughput", "txn/s", "txn_per_s"),
    ("p50", "p50 commit latency, us", "p50_us"),
    ("p90", "p90 commit latency, us", "p90_us"),
    ("p99", "p99 commit latency, us", "p99_us"),
    ("p999", "p99.9 commit latency, us", "p999_us"),
];

/// A result's line: its scheme, and gsn's RFA when on.
fn line(r: &Value) -> String {
    let scheme = r["scheme"].as_str().unwrap_or("?");
    let rfa = r["scheme_options"]["rfa"].as_str() == Some("on") && scheme == "gsn";
    if rfa {
        "gsn + RFA".to_string()
    } else {
        scheme.to_string()
    }
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    let mut rows: Vec<Value> = Vec::new();
    for p in &args.json {
        let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", p.display()))?;
        let results = v["results"]
            .as_array()
            .with_context(|| format!("{}: no `results` (not a braid bench file)", p.display()))?;
        rows.extend(results.iter().cloned());
    }
    let mut emulations: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["emulation"].as_str())
        .collect();
    emulations.sort_unstable();
    emulations.dedup();
    // A title that says what was emulated itself is kept short; otherwise the runs' own
    // words are appended.
    let note = if emulations.is_empty() || args.title.contains("emulated") {
        String::new()
    } else {
        format!(" [emulated: {}]", emulations.join("; "))
    };
    for &(stem, label, field) in METRICS {
        // (line, threads) -> values, medians drawn.
        let mut points: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
        for r in &rows {
            if let (Some(t), Some(y)) = (r["threads"].as_u64(), r[field].as_f64()) {
                points.entry((line(r), t)).or_default().push(y);
            }
        }
        let mut series: Vec<Series> = Vec::new();
        for ((name, t), mut ys) in points {
            crate::plot::add_point(&mut series, &name, (t as f64, median(&mut ys)));
        }
        let title = format!("{} {stem} vs threads{note}", args.title)
            .trim()
            .to_string();
        let files = line_chart(
            &args.out.join(stem),
            &title,
            "worker threads",
            label,
            &series,
        )?;
        for f in files {
            println!("{}", f.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gsn_with_rfa_is_a_line_of_its_own_and_medians_are_drawn() {
        let on = serde_json::json!({"scheme": "gsn", "scheme_options": {"rfa": "on"}});
        let off = serde_json::json!({"scheme": "gsn", "scheme_options": {"rfa": "off"}});
        assert_eq!(line(&on), "gsn + RFA");
        assert_eq!(line(&off), "gsn");
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0]), 2.5);
    }
}
