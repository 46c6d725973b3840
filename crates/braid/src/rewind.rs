//! `braid bench rewind`: the REWIND experiments (Chatzistergiou et al., VLDB 2015) on
//! braid-rewind — 1-word transactions and fences per transaction (Fig. 3), the B+-tree mix
//! against the non-recoverable twin (Fig. 7), fence sensitivity (Fig. 10) and rollback and
//! recovery time (Fig. 8) — printed as tables, written as JSON and drawn.

use std::path::PathBuf;

use braid_rewind::bench::{self as rb};
use clap::{Args, ValueEnum};

use crate::plot::{self, Series};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Experiment {
    /// 1-word transactions per second and fences per transaction.
    WordTx,
    /// The B+-tree mix of Fig. 7 over update fractions.
    BtreeMix,
    /// Fig. 10: the 100%-update mix under emulated persist latency.
    Fence,
    /// Fig. 8: rollback and recovery time.
    Recovery,
    All,
}

#[derive(Debug, Clone, Args)]
pub struct RewindArgs {
    #[arg(long, value_enum, default_value_t = Experiment::All)]
    pub experiment: Experiment,
    /// Runs per point (medians are reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Shrink the experiments (for a smoke test).
    #[arg(long)]
    pub quick: bool,
    #[arg(long, default_value = "results/rewind.json")]
    pub json: PathBuf,
    /// Draw plots into this directory.
    #[arg(long, default_value = "results/plots")]
    pub plot: PathBuf,
}

fn e<T>(r: Result<T, braid_rewind::RewindError>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

pub fn run(args: RewindArgs) -> Result<(), String> {
    let want = |x: Experiment| args.experiment == Experiment::All || args.experiment == x;
    let mut out = serde_json::Map::new();
    if want(Experiment::WordTx) {
        let mut cfg = rb::WordTxConfig {
            runs: args.runs,
            ..Default::default()
        };
        if args.quick {
            cfg.transactions = 5_000;
        }
        let r = e(rb::word_tx(&cfg))?;
        println!(
            "1-word transactions (non-recoverable persisted stores: {:.0}/s)",
            r.raw_stores_per_sec
        );
        println!(
            "{:<34} {:>12} {:>10} {:>10} {:>10}",
            "variant", "tx/s", "ns/tx", "fences/tx", "x raw"
        );
        for row in &r.rows {
            println!(
                "{:<34} {:>12.0} {:>10.0} {:>10.1} {:>10.2}",
                row.label, row.tx_per_sec, row.ns_per_tx, row.fences_per_tx, row.slowdown_vs_raw
            );
        }
        let bars: Vec<(String, f64)> = r
            .rows
            .iter()
            .map(|x| (x.label.clone(), x.tx_per_sec))
            .collect();
        plot::bar_chart(
            &args.plot.join("rewind-word-tx"),
            "REWIND: 1-word transactions per second",
            "tx/s",
            &bars,
        )?;
        out.insert(
            "word_tx".into(),
            serde_json::to_value(&r).map_err(|e| e.to_string())?,
        );
    }
    if want(Experiment::BtreeMix) {
        let mut cfg = rb::BTreeMixConfig {
            runs: args.runs,
            update_fractions: vec![0.0, 0.1, 0.5, 1.0],
            ..Default::default()
        };
        if args.quick {
            cfg.records = 5_000;
            cfg.operations = 5_000;
        }
        let r = e(rb::btree_mix(&cfg))?;
        println!(
            "\nB+-tree mix ({} records, {} operations): time over the non-recoverable twin",
            cfg.records, cfg.operations
        );
        println!(
            "{:<34} {:>8} {:>12} {:>8} {:>10}",
            "system", "updates", "ops/s", "x twin", "fences/op"
        );
        let mut series: Vec<Series> = Vec::new();
        for p in &r.points {
            println!(
                "{:<34} {:>7.0}% {:>12.0} {:>8} {:>10.1}",
                p.system,
                p.update_fraction * 100.0,
                p.ops_per_sec,
                p.ratio_vs_nvm
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
                p.fences_per_op
            );
            if let Some(ratio) = p.ratio_vs_nvm {
                match series.iter_mut().find(|s| s.name == p.system) {
                    Some(s) => s.points.push((p.update_fraction * 100.0, ratio)),
                    None => series.push(Series {
                        name: p.system.clone(),
                        points: vec![(p.update_fraction * 100.0, ratio)],
                    }),
                }
            }
        }
        plot::line_chart(
            &args.plot.join("rewind-fig7"),
            "REWIND B+-tree mix: time over the non-recoverable twin",
            "update fraction (%)",
            "time ratio",
            &series,
        )?;
        out.insert(
            "btree_mix".into(),
            serde_json::to_value(&r).map_err(|e| e.to_string())?,
        );
    }
    if want(Experiment::Fence) {
        let mut cfg = rb::FenceConfig::default();
        cfg.mix.runs = args.runs;
        if args.quick {
            cfg.mix.records = 5_000;
            cfg.mix.operations = 2_000;
        }
        let r = e(rb::fence_sensitivity(&cfg))?;
        println!("\nFence sensitivity (100% updates): slowdown over no added latency");
        let mut series: Vec<Series> = Vec::new();
        for p in &r.points {
            println!("{:<34} {:>6} ns {:>8.2}", p.system, p.delay_ns, p.slowdown);
            match series.iter_mut().find(|s| s.name == p.system) {
                Some(s) => s.points.push((p.delay_ns as f64, p.slowdown)),
                None => series.push(Series {
                    name: p.system.clone(),
                    points: vec![(p.delay_ns as f64, p.slowdown)],
                }),
            }
        }
        plot::line_chart(
            &args.plot.join("rewind-fig10"),
            "REWIND: slowdown vs emulated persist latency",
            "extra ns per persisted line",
            "slowdown",
            &series,
        )?;
        out.insert(
            "fence".into(),
            serde_json::to_value(&r).map_err(|e| e.to_string())?,
        );
    }
    if want(Experiment::Recovery) {
        let mut cfg = rb::RecoveryConfig::default();
        if args.quick {
            cfg.records = 2_000;
            cfg.operations = vec![500];
        }
        let r = e(rb::rollback_recovery(&cfg))?;
        println!("\nRollback and recovery time");
        for p in &r.points {
            println!(
                "{:<34} {:>8} ops  rollback {:>9.1} ms  recovery {:>9.1} ms",
                p.variant, p.operations, p.rollback_ms, p.recovery_ms
            );
        }
        out.insert(
            "recovery".into(),
            serde_json::to_value(&r).map_err(|e| e.to_string())?,
        );
    }
    out.insert("machine".into(), crate::output::machine());
    crate::output::write_json(&args.json, &serde_json::Value::Object(out))?;
    println!(
        "\nresults written to {}; plots in {}",
        args.json.display(),
        args.plot.display()
    );
    Ok(())
}
