//! peers: braid measured beside what its users would otherwise pick, every system in its
//! documented durable setting, on the same directory of a real file system.
//!
//! * `append`: N writer threads append records (128 B and 4 KiB by default), each waited for
//!   until durable: braid-wal (serial; taurus with N streams), raft-engine, okaywal, RocksDB's
//!   WAL and fjall.
//! * `txn`: TPC-B's account update, each commit durable before the thread's next:
//!   braid-engine (serial, the default; taurus), SQLite, redb, fjall and RocksDB.
//!
//! Every run gets a fresh directory under `--dir`, is checked after a reopen (what was
//! acknowledged must read back), and its directory is removed. Results go to
//! `--out`/peers.{json,csv,svg,png} and to the terminal as tables with each system's ratio to
//! the best peer. `scripts/peers.sh` builds and runs this.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

mod machine;
mod output;
mod synccount;
mod systems;
mod workload;

use output::{Failure, Report, Row};

/// braid beside raft-engine, okaywal, RocksDB, fjall, SQLite and redb, all durable.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Seconds each run is timed.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Runs of every point; each row is the median run. The rounds go over every point in
    /// turn, so a slow spell of the machine spreads over all systems.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    threads: Vec<usize>,
    /// Record sizes of the append workload in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128,4096")]
    record_bytes: Vec<usize>,
    /// Rows of the transaction workload's accounts table.
    #[arg(long, default_value_t = 100_000)]
    accounts: u64,
    /// Workloads to run, comma-separated: append, txn.
    #[arg(long, value_delimiter = ',', default_value = "append,txn")]
    workloads: Vec<String>,
    /// Only systems whose name contains one of these (comma-separated); all by default.
    #[arg(long, value_delimiter = ',')]
    systems: Vec<String>,
    /// Where the systems keep their data (a real file system, not tmpfs); every run removes
    /// what it creates. Default: target/peers-data of the braid tree.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where peers.json, peers.csv, peers.svg and peers.png go. Default: target/peers.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The braid tree this harness lives in.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One run to do.
enum Job<'a> {
    Append(&'a dyn systems::AppendSystem, usize, usize),
    Txn(&'a dyn systems::TxnSystem, usize),
}

impl Job<'_> {
    fn describe(&self) -> (String, String, usize, Option<usize>) {
        match *self {
            Job::Append(s, t, b) => ("append".into(), s.name(), t, Some(b)),
            Job::Txn(s, t) => ("txn".into(), s.name(), t, None),
        }
    }
}

fn wanted(filter: &[String], name: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()))
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !args.seconds.is_finite() || args.seconds <= 0.0 {
        bail!("--seconds must be positive");
    }
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if args.threads.is_empty() || args.threads.contains(&0) {
        bail!("--threads needs positive thread counts");
    }
    for w in &args.workloads {
        if w != "append" && w != "txn" {
            bail!("unknown workload {w:?}: append or txn");
        }
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| repo().join("target/peers-data"));
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo().join("target/peers"));
    let created_dir = !dir.exists();
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let machine = machine::Machine::probe(&dir);
    if matches!(machine.fs_type.as_str(), "tmpfs" | "ramfs") {
        bail!(
            "{} is on {}: durability would be emulated; pick a directory on a disk with --dir",
            dir.display(),
            machine.fs_type
        );
    }

    let appends = systems::append_systems();
    let txns = systems::txn_systems();
    let mut jobs = Vec::new();
    if args.workloads.iter().any(|w| w == "append") {
        for &b in &args.record_bytes {
            for &t in &args.threads {
                for s in appends.iter().filter(|s| wanted(&args.systems, &s.name())) {
                    jobs.push(Job::Append(s.as_ref(), t, b));
                }
            }
        }
    }
    if args.workloads.iter().any(|w| w == "txn") {
        for &t in &args.threads {
            for s in txns.iter().filter(|s| wanted(&args.systems, &s.name())) {
                jobs.push(Job::Txn(s.as_ref(), t));
            }
        }
    }
    if jobs.is_empty() {
        bail!("no system matches --systems {:?}", args.systems);
    }

    let duration = Duration::from_secs_f64(args.seconds);
    let bar = ProgressBar::new((jobs.len() * args.repeat) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs (eta {eta}) {msg}",
        )?
        .progress_chars("=> "),
    );
    let mut report = Report {
        machine,
        seconds_per_run: args.seconds,
        repeat: args.repeat,
        accounts: args.accounts,
        runs: Vec::new(),
        failures: Vec::new(),
    };
    let mut taken: Vec<Vec<Row>> = jobs.iter().map(|_| Vec::new()).collect();
    for round in 0..args.repeat {
        for (i, job) in jobs.iter().enumerate() {
            let (workload, system, threads, bytes) = job.describe();
            let label = format!(
                "{workload} {system} {threads}t{} (run {} of {})",
                bytes.map_or_else(String::new, |b| format!(" {b}B")),
                round + 1,
                args.repeat
            );
            bar.set_message(label.clone());
            let run_dir = dir.join(format!("run-{i}"));
            let result = run_job(job, &run_dir, args.accounts, duration, &|| bar.tick());
            let cleanup = remove(&run_dir);
            match result.and_then(|row| cleanup.map(|()| row)) {
                Ok(row) => taken[i].push(row),
                Err(e) => {
                    bar.println(format!("FAILED {label}: {e:#}"));
                    report.failures.push(Failure {
                        workload,
                        system,
                        threads,
                        record_bytes: bytes,
                        error: format!("{e:#}"),
                    });
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    report.runs = taken.into_iter().filter_map(Row::median_of).collect();
    if created_dir {
        // Only if empty: never remove what someone else keeps there.
        let _ = std::fs::remove_dir(&dir);
    }

    report.finish();
    report.write(&out)?;
    output::plot::write(&report, &out).context("plot")?;
    print!("{}", output::table::render(&report));
    println!(
        "wrote {}/peers.{{json,csv,svg,png}}",
        out.canonicalize().unwrap_or(out.clone()).display()
    );
    if !report.failures.is_empty() {
        bail!("{} run(s) failed", report.failures.len());
    }
    Ok(())
}

fn run_job(
    job: &Job<'_>,
    run_dir: &Path,
    accounts: u64,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    remove(run_dir)?;
    std::fs::create_dir_all(run_dir).with_context(|| format!("create {}", run_dir.display()))?;
    let row = match *job {
        Job::Append(s, threads, bytes) => {
            workload::append::run(s, run_dir, threads, bytes, duration, tick)
        }
        Job::Txn(s, threads) => workload::txn::run(s, run_dir, threads, accounts, duration, tick),
    }?;
    Ok(row)
}

fn remove(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("remove {}", dir.display())),
    }
}
