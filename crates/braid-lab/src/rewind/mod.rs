//! `braid bench rewind`: the REWIND experiments (Chatzistergiou et al., VLDB 2015) on
//! braid-rewind — 1-word transactions and fences per transaction (Fig. 3), the B+-tree mix
//! against the non-recoverable twin (Fig. 7), fence sensitivity (Fig. 10) and rollback and
//! recovery time (Fig. 8), checkpoint overhead (Fig. 6), commit, rollback and recovery amid
//! skip records and against the fraction recovered (Figs. 3 right, 4 and 5), the multi-threaded B+-tree (Fig. 9) and TPC-C New-Order (§5.3,
//! Fig. 11) — printed as tables, written as JSON and drawn. On request also B+-tree inserts
//! and lookups of random keys (the PMDK comparison), which `--experiment all` does not run.
//! The B+-tree mix also runs the Berkeley DB and PMDK peer programs found in `--peers`
//! (Fig. 7 right).
//!
//! One file per experiment: [`word_tx`], [`btree_mix`] (with its peers in [`peers`]),
//! [`fence`], [`recovery`], [`checkpoint`], [`skip_records`], [`btree_threads`], [`insert_lookup`], [`tpcc`]; [`setup`] holds
//! what they share.

mod btree_mix;
mod btree_threads;
mod checkpoint;
mod fence;
mod insert_lookup;
mod peers;
mod recovery;
mod setup;
mod skip_records;
mod tpcc;
mod word_tx;

use std::path::{Path, PathBuf};

use braid_rewind::{LogLayout, LogMode, Policy, PoolConfig};
use clap::{Args, ValueEnum};

use crate::plot::{self, Series};
use setup::Backing;

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
    /// Fig. 6: checkpoint overhead of Simple, Optimized and Batch over checkpoint intervals.
    Checkpoint,
    /// Figs. 3 right, 4 and 5: commit, rollback and recovery amid other transactions'
    /// records (skip records), and the cost against the fraction of transactions recovered.
    SkipRecords,
    /// Fig. 9: the B+-tree with lookups and insert/delete pairs on 1, 2, ... threads.
    BtreeThreads,
    /// TPC-C New-Order (Fig. 11): the twin and REWIND over the naive layout, REWIND over the
    /// co-designed layout with a shared log and with per-thread logs, on the machine's cores
    /// up to the paper's ten threads.
    Tpcc,
    /// The eight experiments above.
    All,
    /// B+-tree inserts (one transaction each) and lookups of random keys, as
    /// `scripts/pmdk-bench.sh` runs them against PMDK (not part of `all`).
    InsertLookup,
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
    /// Directory the pool files live in (a DRAM file system or a DAX mount).
    #[arg(long, default_value = "/dev/shm")]
    pub dir: PathBuf,
    /// word-tx: transactions per run (instead of the default or `--quick` count).
    #[arg(long)]
    pub transactions: Option<u64>,
    /// insert-lookup: keys inserted and looked up (instead of the default or `--quick` count).
    #[arg(long)]
    pub keys: Option<u64>,
    /// word-tx and insert-lookup: run only the configurations with these labels,
    /// comma-separated (as the tables print them, e.g. `sealed-1l-nf` for word-tx, `nvm` and
    /// `sealed-nf` for insert-lookup; default: all).
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<String>>,
    /// btree-threads: the thread counts, comma-separated (default: 1, 2, 4, ... doubling
    /// while below the machine's cores, then the cores).
    #[arg(long, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
}

/// The machine's cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// 1, 2, 4, ... doubling while below `top`, then `top`.
fn doubling_to(top: usize) -> Vec<usize> {
    let top = top.max(1);
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |t| t.checked_mul(2))
        .take_while(|&t| t < top)
        .collect();
    v.push(top);
    v
}

/// The paper's TPC-C terminals (§5.3: "ten threads ... to simulate the ten terminals").
pub const TPCC_PAPER_THREADS: usize = 10;

/// The NVM write latency REWIND's evaluation charges per cache line written (Section 5: "We
/// set the NVM write latency to 510 processor cycles (150 ns)", a busy loop after each line's
/// flush), charged here by braid-pmem's `write_delay_ns` on every persisted line of the
/// pools, the non-recoverable twin's included. `insert-lookup` runs without it: it is
/// compared with PMDK, which runs on the same DRAM file system with no such delay.
pub const NVM_WRITE_NS: u64 = 150;

/// Where the B+-tree mix looks for its peer programs unless told (`scripts/rewind-peers.sh`
/// builds them there).
pub const DEFAULT_PEERS: &str = "target/peers";

/// `braid bench rewind`'s options: the experiments' ([`RewindArgs`]) and where the B+-tree
/// mix's peer programs are.
#[derive(Debug, Clone, Args)]
pub struct RewindCmd {
    #[command(flatten)]
    pub args: RewindArgs,
    /// btree-mix and recovery: directory holding the Berkeley DB and PMDK peer programs
    /// built by `scripts/rewind-peers.sh` (run if present).
    #[arg(long, default_value = DEFAULT_PEERS)]
    pub peers: PathBuf,
    /// Emulated NVM write latency per persisted cache line, ns (the paper's 150; 0 for none).
    /// Recorded in the JSON; Berkeley DB is charged it per line of file data it writes, PMDK
    /// runs without it.
    #[arg(long, default_value_t = NVM_WRITE_NS)]
    pub nvm_write_ns: u64,
}

/// Run `braid bench rewind` as the command line asked.
pub fn run_cmd(cmd: RewindCmd) -> anyhow::Result<()> {
    run_with_peers(cmd.args, &cmd.peers, cmd.nvm_write_ns)
}

/// Run the experiments `args` asks for, the mix's peers looked for in [`DEFAULT_PEERS`].
pub fn run(args: RewindArgs) -> anyhow::Result<()> {
    run_with_peers(args, Path::new(DEFAULT_PEERS), NVM_WRITE_NS)
}

/// Run the experiments `args` asks for, the mix's peers looked for in `peers_dir`, with
/// `nvm_ns` of emulated NVM write latency per persisted line (not for `insert-lookup`).
pub fn run_with_peers(args: RewindArgs, peers_dir: &Path, nvm_ns: u64) -> anyhow::Result<()> {
    let want = |x: Experiment| args.experiment == Experiment::All || args.experiment == x;
    let backing = Backing::Dir(args.dir.clone());
    let mut out = serde_json::Map::new();
    let emulation = format!(
        "persistent memory emulated by files on {} with {nvm_ns} ns of NVM write latency per \
         persisted cache line (busy-wait; REWIND's Section 5 charges 150 ns); Berkeley DB is \
         charged it per 64-byte line of file data it writes (the paper charged its writes to \
         PMFS); PMDK and insert-lookup run without it",
        args.dir.display()
    );
    println!("{emulation}");
    out.insert("nvm_write_ns".into(), nvm_ns.into());
    out.insert("emulation".into(), emulation.into());
    if want(Experiment::WordTx) {
        let mut cfg = word_tx::WordTxConfig {
            backing: backing.clone(),
            runs: args.runs,
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.transactions = 5_000;
            cfg.intensity_transactions = 2_000;
        }
        if let Some(n) = args.transactions {
            cfg.transactions = n;
        }
        if let Some(only) = &args.variants {
            cfg.variants.retain(|v| only.contains(&v.label));
            anyhow::ensure!(
                !cfg.variants.is_empty(),
                "--variants names no word-tx variant"
            );
        }
        let r = word_tx::word_tx(&cfg)?;
        println!(
            "1-word transactions (non-recoverable persisted stores: {:.0}/s)",
            r.raw_stores_per_sec
        );
        println!(
            "{:<34} {:>12} {:>10} {:>10} {:>10} {:>10}",
            "variant", "tx/s", "ns/tx", "fences/tx", "lines/tx", "x raw"
        );
        for row in &r.rows {
            println!(
                "{:<34} {:>12.0} {:>10.0} {:>10.2} {:>10.2} {:>10.2}",
                row.label,
                row.tx_per_sec,
                row.ns_per_tx,
                row.fences_per_tx,
                row.lines_flushed_per_tx,
                row.slowdown_vs_raw
            );
        }
        println!("update intensity (Fig. 3 left): time over non-recoverable stores");
        let mut series: Vec<Series> = Vec::new();
        for row in r.rows.iter().filter(|x| x.label.starts_with("optimized")) {
            plot::add_point(&mut series, &row.label, (100.0, row.slowdown_vs_raw));
        }
        for p in &r.intensity {
            plot::add_point(&mut series, &p.label, (p.intensity * 100.0, p.overhead));
            println!(
                "{:<34} {:>5.0}% {:>8} ns computed {:>8.2}x",
                p.label,
                p.intensity * 100.0,
                p.compute_ns,
                p.overhead
            );
        }
        plot::line_chart(
            &args.plot.join("rewind-fig3-intensity"),
            "REWIND: logging overhead against update intensity",
            "update intensity (%)",
            "time over non-recoverable stores",
            &series,
        )?;
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
        out.insert("word_tx".into(), serde_json::to_value(&r)?);
    }
    if want(Experiment::BtreeMix) {
        let mut cfg = btree_mix::BTreeMixConfig {
            backing: backing.clone(),
            runs: args.runs,
            update_fractions: vec![0.0, 0.1, 0.5, 1.0],
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.records = 5_000;
            cfg.operations = 5_000;
        }
        let mut r = btree_mix::btree_mix(&cfg)?;
        let own: Vec<String> = cfg.systems.iter().map(|s| s.label()).collect();
        let peers = peers::run(peers_dir, &cfg);
        r.points.extend(peers.points);
        peers::set_ratios(&mut r.points);
        r.points
            .sort_by(|a, b| a.update_fraction.total_cmp(&b.update_fraction));
        println!(
            "\nB+-tree mix ({} records, {} operations): time over the non-recoverable twin",
            cfg.records, cfg.operations
        );
        println!(
            "{:<34} {:>8} {:>12} {:>10} {:>8} {:>10}",
            "system", "updates", "ops/s", "seconds", "x twin", "fences/op"
        );
        let mut series: Vec<Series> = Vec::new();
        for p in &r.points {
            println!(
                "{:<34} {:>7.0}% {:>12.0} {:>10.4} {:>8} {:>10}",
                p.system,
                p.update_fraction * 100.0,
                p.ops_per_sec,
                p.seconds,
                p.ratio_vs_nvm
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into()),
                if p.fences_per_op.is_finite() {
                    format!("{:.1}", p.fences_per_op)
                } else {
                    "-".into()
                }
            );
            if let Some(ratio) = p.ratio_vs_nvm.filter(|_| own.contains(&p.system)) {
                plot::add_point(&mut series, &p.system, (p.update_fraction * 100.0, ratio));
            }
        }
        plot::line_chart(
            &args.plot.join("rewind-fig7"),
            "REWIND B+-tree mix: time over the non-recoverable twin",
            "update fraction (%)",
            "time ratio",
            &series,
        )?;
        peers::plot(&args.plot, &r.points)?;
        let mut v = serde_json::to_value(&r)?;
        v["peers"] = peers.record;
        v["not_obtainable"] = peers::not_obtainable();
        out.insert("btree_mix".into(), v);
    }
    if want(Experiment::Fence) {
        let mut cfg = fence::FenceConfig::default();
        cfg.mix.backing = backing.clone();
        cfg.mix.runs = args.runs;
        cfg.mix.write_delay_ns = nvm_ns;
        if args.quick {
            cfg.mix.records = 5_000;
            cfg.mix.operations = 10_000;
        }
        let r = fence::fence_sensitivity(&cfg)?;
        println!("\nFence sensitivity (100% updates): slowdown over no added fence latency");
        let mut series: Vec<Series> = Vec::new();
        println!(
            "{:<34} {:>9} {:>8} {:>10} {:>12}",
            "system", "fence ns", "slowdown", "fences/op", "records/upd"
        );
        for p in &r.points {
            println!(
                "{:<34} {:>6} ns {:>8.2} {:>10.2} {:>12.2}",
                p.system, p.delay_ns, p.slowdown, p.fences_per_op, p.records_per_update
            );
            plot::add_point(&mut series, &p.system, (p.delay_ns as f64, p.slowdown));
        }
        plot::line_chart(
            &args.plot.join("rewind-fig10"),
            "REWIND: slowdown vs emulated fence latency",
            "extra ns per fence",
            "slowdown",
            &series,
        )?;
        out.insert("fence".into(), serde_json::to_value(&r)?);
    }
    if want(Experiment::Recovery) {
        let mut cfg = recovery::RecoveryConfig {
            backing: backing.clone(),
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.records = 2_000;
            cfg.operations = vec![500];
        }
        let mut r = recovery::rollback_recovery(&cfg)?;
        let (bdb, bdb_record) = peers::run_recovery(peers_dir, &cfg);
        r.points.extend(bdb);
        println!("\nRollback and recovery time");
        for p in &r.points {
            println!(
                "{:<34} {:>8} ops  rollback {:>9.1} ms  recovery {:>9.1} ms",
                p.variant, p.operations, p.rollback_ms, p.recovery_ms
            );
        }
        let mut v = serde_json::to_value(&r)?;
        v["peers"] = serde_json::json!({ "berkeley-db": bdb_record });
        v["not_obtainable"] = peers::not_obtainable();
        out.insert("recovery".into(), v);
    }
    if want(Experiment::Checkpoint) {
        let mut cfg = checkpoint::CheckpointConfig {
            backing: backing.clone(),
            runs: args.runs,
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.records = 40_000;
            cfg.intervals = vec![1_000, 8_000];
        }
        let r = checkpoint::checkpoint_overhead(&cfg)?;
        println!(
            "\nCheckpoint overhead ({} records, {} updates per transaction, one layer, no-force)",
            cfg.records, cfg.updates_per_tx
        );
        println!(
            "{:<34} {:>10} {:>12} {:>10} {:>10} {:>10} {:>10}",
            "variant", "every", "checkpoints", "seconds", "without", "overhead", "lines/rec"
        );
        let mut series: Vec<Series> = Vec::new();
        for p in &r.points {
            println!(
                "{:<34} {:>10} {:>12} {:>10.4} {:>10.4} {:>9.1}% {:>4.2}/{:<4.2}",
                p.variant,
                p.interval,
                p.checkpoints,
                p.seconds,
                p.seconds_without,
                p.overhead_pct,
                p.lines_per_record,
                p.lines_per_record_without
            );
            plot::add_point(&mut series, &p.variant, (p.interval as f64, p.overhead_pct));
        }
        plot::line_chart(
            &args.plot.join("rewind-fig6"),
            "REWIND: checkpoint overhead against the checkpoint interval",
            "log records between checkpoints",
            "overhead (%)",
            &series,
        )?;
        out.insert("checkpoint".into(), serde_json::to_value(&r)?);
    }
    if want(Experiment::SkipRecords) {
        let mut cfg = skip_records::SkipConfig {
            backing: backing.clone(),
            runs: args.runs,
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.skips = vec![100, 400];
            cfg.repeats = 20;
            cfg.fraction_skips = vec![10, 150];
            cfg.fractions = vec![0.0, 0.5, 1.0];
            cfg.transactions = 20;
        }
        let r = skip_records::skip_records(&cfg)?;
        println!(
            "\nSkip records (force; a target of {} updates amid other transactions' records)",
            cfg.target_updates
        );
        println!(
            "{:<34} {:>6} {:>9} {:>9} {:>11} {:>13} {:>13}",
            "variant", "skip", "overhead", "program", "commit us", "rollback us", "recovery us"
        );
        let (mut over, mut back, mut rec) = (Vec::new(), Vec::new(), Vec::new());
        for p in &r.points {
            println!(
                "{:<34} {:>6} {:>9.2} {:>9.2} {:>11.1} {:>13.1} {:>13.1}",
                p.variant,
                p.skip,
                p.overhead,
                p.program_overhead,
                p.commit_us,
                p.rollback_us,
                p.recovery_us
            );
            let x = p.skip as f64;
            plot::add_point(&mut over, &p.variant, (x, p.overhead));
            plot::add_point(&mut back, &p.variant, (x, p.rollback_us));
            plot::add_point(&mut rec, &p.variant, (x, p.recovery_us));
        }
        for (name, title, y, series) in [
            (
                "rewind-fig3-skip",
                "REWIND: the target transaction's overhead against skip records (force)",
                "time over non-recoverable stores",
                &over,
            ),
            (
                "rewind-fig4-rollback",
                "REWIND: single-transaction rollback against skip records",
                "rollback (us)",
                &back,
            ),
            (
                "rewind-fig4-recovery",
                "REWIND: recovery of one transaction against skip records",
                "recovery (us)",
                &rec,
            ),
        ] {
            plot::line_chart(&args.plot.join(name), title, "skip records", y, series)?;
        }
        println!(
            "\nLogging and recovery against the fraction of {} transactions recovered (one layer)",
            cfg.transactions
        );
        println!(
            "{:<10} {:>6} {:>9} {:>10} {:>10} {:>12} {:>10}",
            "policy", "skip", "fraction", "run ms", "clear ms", "recovery ms", "total ms"
        );
        let mut series: Vec<Series> = Vec::new();
        for p in &r.fraction_points {
            println!(
                "{:<10} {:>6} {:>9.2} {:>10.2} {:>10.2} {:>12.2} {:>10.2}",
                p.policy, p.skip, p.fraction, p.run_ms, p.clear_ms, p.recovery_ms, p.total_ms
            );
            plot::add_point(
                &mut series,
                &format!("{} skip {}", p.policy, p.skip),
                (p.fraction * 100.0, p.total_ms),
            );
        }
        plot::line_chart(
            &args.plot.join("rewind-fig5"),
            "REWIND: logging plus recovery against the fraction recovered",
            "transactions recovered (%)",
            "total ms",
            &series,
        )?;
        out.insert("skip_records".into(), serde_json::to_value(&r)?);
    }
    if args.experiment == Experiment::InsertLookup {
        let mut cfg = insert_lookup::InsertLookupConfig {
            backing: backing.clone(),
            runs: args.runs,
            ..Default::default()
        };
        if args.quick {
            cfg.keys = 5_000;
        }
        if let Some(n) = args.keys {
            cfg.keys = n;
        }
        if let Some(only) = &args.variants {
            cfg.systems.retain(|s| only.contains(&s.label()));
            anyhow::ensure!(
                !cfg.systems.is_empty(),
                "--variants names no insert-lookup system"
            );
        }
        let r = insert_lookup::btree_insert_lookup(&cfg)?;
        println!(
            "B+-tree inserts (one transaction each) and lookups of {} random keys",
            cfg.keys
        );
        println!(
            "{:<34} {:>12} {:>12} {:>10} {:>10}",
            "system", "inserts/s", "lookups/s", "fences/ins", "lines/ins"
        );
        for row in &r.rows {
            println!(
                "{:<34} {:>12.0} {:>12.0} {:>10.2} {:>10.2}",
                row.system,
                row.inserts_per_sec,
                row.lookups_per_sec,
                row.fences_per_insert,
                row.lines_flushed_per_insert
            );
        }
        out.insert("btree_insert_lookup".into(), serde_json::to_value(&r)?);
    }
    if want(Experiment::BtreeThreads) {
        let mut cfg = btree_threads::BTreeThreadsConfig {
            backing: backing.clone(),
            runs: args.runs,
            threads: args.threads.clone().unwrap_or_else(|| doubling_to(cores())),
            write_delay_ns: nvm_ns,
            ..Default::default()
        };
        if args.quick {
            cfg.records = 5_000;
            cfg.operations_per_thread = 20_000;
        }
        let r = btree_threads::btree_threads(&cfg)?;
        println!(
            "\nMulti-threaded B+-tree ({} records, {} operations per thread, lookups 20-80%)",
            cfg.records, cfg.operations_per_thread
        );
        println!(
            "{:<34} {:>8} {:>12} {:>10} {:>8}",
            "system", "threads", "ops/s", "seconds", "x twin"
        );
        let mut series: Vec<Series> = Vec::new();
        for p in &r.points {
            println!(
                "{:<34} {:>8} {:>12.0} {:>10.4} {:>8}",
                p.system,
                p.threads,
                p.ops_per_sec,
                p.seconds,
                p.ratio_vs_nvm
                    .map(|x| format!("{x:.2}"))
                    .unwrap_or_else(|| "-".into())
            );
            plot::add_point(&mut series, &p.system, (p.threads as f64, p.ops_per_sec));
        }
        plot::line_chart(
            &args.plot.join("rewind-fig9"),
            "REWIND: multi-threaded B+-tree, operations per second",
            "threads",
            "ops/s",
            &series,
        )?;
        out.insert("btree_threads".into(), serde_json::to_value(&r)?);
    }
    if want(Experiment::Tpcc) {
        let per = if args.quick { 5_000 } else { 20_000 };
        let threads = cores().min(TPCC_PAPER_THREADS);
        let batch = |logs| {
            Some(
                PoolConfig::default()
                    .layout(LogLayout::Batch)
                    .policy(Policy::NoForce)
                    .logs(logs),
            )
        };
        println!("\nTPC-C New-Order ({threads} threads, {per} transactions each)");
        println!(
            "{:<34} {:>12} {:>10} {:>12} {:>8}",
            "system", "tpm", "committed", "rolled back", "seconds"
        );
        let mut rows = Vec::new();
        let mut bars = Vec::new();
        for (label, naive, pool) in [
            ("nvm-naive", true, None),
            ("rewind-naive", true, batch(LogMode::Shared)),
            ("rewind-shared-log", false, batch(LogMode::Shared)),
            (
                "rewind-per-thread-logs",
                false,
                batch(LogMode::PerThread(threads)),
            ),
        ] {
            let cfg = tpcc::TpccConfig {
                backing: backing.clone(),
                threads,
                transactions_per_thread: per,
                pool,
                write_delay_ns: nvm_ns,
                naive,
                ..Default::default()
            };
            let mut runs = Vec::new();
            for _ in 0..args.runs.max(1) {
                runs.push(tpcc::run(&cfg)?);
            }
            runs.sort_by(|a, b| a.tpm.total_cmp(&b.tpm));
            let Some(r) = runs.get(runs.len() / 2) else {
                continue;
            };
            println!(
                "{:<34} {:>12.0} {:>10} {:>12} {:>8.2}",
                label, r.tpm, r.committed, r.rolled_back, r.seconds
            );
            bars.push((label.to_string(), r.tpm));
            rows.push(
                serde_json::json!({"label": label, "naive": naive, "threads": threads,
                "tpm": r.tpm, "committed": r.committed, "rolled_back": r.rolled_back,
                "seconds": r.seconds, "runs": runs.len(),
                "tpm_runs": runs.iter().map(|r| r.tpm).collect::<Vec<_>>()}),
            );
        }
        plot::bar_chart(
            &args.plot.join("rewind-fig11"),
            "REWIND: TPC-C New-Order throughput",
            "tpm",
            &bars,
        )?;
        out.insert("tpcc".into(), serde_json::Value::Array(rows));
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
