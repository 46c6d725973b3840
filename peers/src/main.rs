//! peers: braid measured beside what its users would otherwise pick, every system in its
//! documented durable setting, on the same directory of a real file system.
//!
//! * `append`: N writer threads append records (128 B and 4 KiB by default), each waited for
//!   until durable: braid-wal (serial; taurus with N streams), raft-engine, okaywal, RocksDB's
//!   WAL and fjall.
//!   Rows `append-128`, `append-4k`.
//! * `tpcb`: full TPC-B (account, teller and branch updates and a history insert, one durable
//!   transaction), at one branch per thread and at a single branch (`--branches`), 10 tellers
//!   and `--accounts-per-branch` accounts per branch: braid-engine (serial, the default;
//!   taurus), SQLite, redb, fjall and RocksDB ([`workload::tpcb`]).
//! * `account-update`: TPC-B's account update alone (a single-row read-modify-write), each
//!   commit durable before the thread's next, on the same systems ([`workload::txn`]).
//! * `ycsb-a`, `ycsb-b`: YCSB's workloads A (50% reads, 50% updates) and B (95% reads), one
//!   operation per durable transaction, keys Zipf 0.99 over 100,000 rows of 100 B values; the
//!   same systems ([`workload::ycsb`]). `ycsb` (not run by default): the transaction as the
//!   Taurus paper (and braid's own benchmark) runs it, 2 accesses, each a read with p=0.5 else
//!   an update, keys Zipf theta 0.6.
//! * `reopen`: reopen time after `kill -9` of a child process that committed 1,000,000
//!   account updates, and the store's log and data bytes at the kill ([`workload::reopen`]).
//! * `kill`: `kill -9` of a child process under full TPC-B load, 5 rounds on one directory;
//!   after each, the reopen time and a check that every acknowledged transaction is there
//!   and every balance agrees with the history rows ([`workload::kill`]).
//! * `memory`: resident memory per row after loading 1,000,000 accounts in a child process
//!   ([`workload::memory`]); braid-engine is in-memory, the others page from disk.
//!
//! Peers with settings their documentation recommends for durable throughput run in their
//! default and their tuned variant (`--variants`, every row says which), in every workload.
//! Every run gets a fresh directory under `--dir`, is checked after a reopen (what was
//! acknowledged must read back), and its directory is removed; a point where any run failed
//! is reported invalid. Results go to `--out`/peers.{json,csv,svg,png} (and peers-reopen.csv,
//! peers-kill.csv, peers-memory.csv) and to the terminal as tables with each system's ratio
//! to the best peer. `scripts/peers.sh` builds and runs this. The hidden subcommands
//! `__reopen-child`, `__kill-child` and `__memory-child` are the child processes of the
//! reopen, kill and memory workloads.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

mod machine;
mod output;
mod synccount;
mod systems;
mod workload;

use output::{Failure, Report, Row};

/// The workloads, in the order they run.
const WORKLOADS: [&str; 9] = [
    "append",
    "tpcb",
    "account-update",
    "ycsb-a",
    "ycsb-b",
    "ycsb",
    "reopen",
    "kill",
    "memory",
];

/// The YCSB workloads: their names and mixes.
const YCSB_WORKLOADS: [&str; 3] = ["ycsb-a", "ycsb-b", "ycsb"];

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
    /// Rows of the account-update workload's accounts table (also the reopen workload's).
    #[arg(long, default_value_t = 100_000)]
    accounts: u64,
    /// TPC-B's accounts per branch (TPC-B: 100,000), for the tpcb and kill workloads.
    #[arg(long, default_value_t = 100_000)]
    accounts_per_branch: u64,
    /// TPC-B's settings, comma-separated: `per-thread` (one branch per thread, TPC-B's
    /// scaling), `single` (every thread in one branch: one hot branch row).
    #[arg(long, value_delimiter = ',', default_value = "per-thread,single")]
    branches: Vec<String>,
    /// Rows of the YCSB workload's table (100-byte values).
    #[arg(long, default_value_t = 100_000)]
    ycsb_rows: u64,
    /// Zipf exponent of the keys of the `ycsb` workload (0: uniform); YCSB A and B use 0.99.
    #[arg(long, default_value_t = workload::ycsb::DEFAULT_THETA)]
    ycsb_theta: f64,
    /// Account updates the reopen workload commits before the kill -9.
    #[arg(long, default_value_t = 1_000_000)]
    reopen_txns: u64,
    /// Threads the reopen workload's child commits from, where it commits durably (braid
    /// groups the commits of many threads into one sync, and so do RocksDB and taurus).
    #[arg(long, default_value_t = 64)]
    reopen_threads: usize,
    /// Threads the reopen workload's child commits from where it commits under a relaxed
    /// setting (no commit waits for a sync, so more threads only contend for the cores).
    #[arg(long, default_value_t = 1)]
    reopen_relaxed_threads: usize,
    /// Threads (and branches) of the kill workload's child.
    #[arg(long, default_value_t = 16)]
    kill_threads: usize,
    /// Rounds of kill -9 and reopen on one directory.
    #[arg(long, default_value_t = 5)]
    kill_rounds: u32,
    /// The kill comes a random time in MIN,MAX milliseconds after the child's threads start.
    #[arg(long, value_delimiter = ',', default_value = "500,2000")]
    kill_after_ms: Vec<u64>,
    /// Rows the memory workload loads.
    #[arg(long, default_value_t = 1_000_000)]
    memory_rows: u64,
    /// Workloads to run, comma-separated: append, tpcb, account-update, ycsb-a, ycsb-b, ycsb,
    /// reopen, kill, memory (all but ycsb by default).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "append,tpcb,account-update,ycsb-a,ycsb-b,reopen,kill,memory"
    )]
    workloads: Vec<String>,
    /// Only systems whose name contains one of these (comma-separated); all by default.
    #[arg(long, value_delimiter = ',')]
    systems: Vec<String>,
    /// Which configurations of the systems to run, comma-separated: default (each system's
    /// documented defaults), tuned (the settings its documentation recommends for durable
    /// throughput, for the systems that have such settings).
    #[arg(long, value_delimiter = ',', default_value = "default,tuned")]
    variants: Vec<systems::Variant>,
    /// Where the systems keep their data (a real file system, not tmpfs); every run removes
    /// what it creates. Default: target/peers-data of the braid tree.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Where peers.json, peers.csv, peers.svg and peers.png go. Default: target/peers.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The child processes of the reopen, kill and memory workloads.
    #[command(subcommand)]
    child: Option<ChildCmd>,
}

/// What a child process of this harness does (hidden: the harness starts them).
#[derive(Debug, Subcommand)]
enum ChildCmd {
    /// Create a store, commit account updates, report, wait to be killed.
    #[command(name = "__reopen-child", hide = true)]
    Reopen {
        #[arg(long)]
        system: String,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        threads: usize,
        #[arg(long)]
        accounts: u64,
        #[arg(long)]
        txns: u64,
    },
    /// Open a TPC-B store (create it in round 0), report, run TPC-B printing every
    /// acknowledged transaction, until killed.
    #[command(name = "__kill-child", hide = true)]
    Kill {
        #[arg(long)]
        system: String,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        threads: usize,
        #[arg(long)]
        accounts_per_branch: u64,
        #[arg(long)]
        round: u32,
    },
    /// Load rows into a store and report the resident memory before and after.
    #[command(name = "__memory-child", hide = true)]
    Memory {
        #[arg(long)]
        system: String,
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        rows: u64,
    },
}

/// The transactional system called `name`.
fn txn_system(name: &str) -> Result<Box<dyn systems::TxnSystem>> {
    systems::txn_systems()
        .into_iter()
        .find(|s| s.name() == name)
        .with_context(|| format!("no transactional system is called {name:?}"))
}

fn run_child(cmd: ChildCmd) -> Result<()> {
    match cmd {
        ChildCmd::Reopen {
            system,
            dir,
            threads,
            accounts,
            txns,
        } => workload::reopen::child(txn_system(&system)?.as_ref(), &dir, threads, accounts, txns),
        ChildCmd::Kill {
            system,
            dir,
            threads,
            accounts_per_branch,
            round,
        } => workload::kill::child(
            txn_system(&system)?.as_ref(),
            &dir,
            threads,
            accounts_per_branch,
            round,
        ),
        ChildCmd::Memory { system, dir, rows } => {
            workload::memory::child(txn_system(&system)?.as_ref(), &dir, rows)
        }
    }
}

/// The braid tree this harness lives in.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One timed run to do.
enum Job<'a> {
    Append(&'a dyn systems::AppendSystem, usize, usize),
    /// TPC-B at (threads, branches).
    Tpcb(&'a dyn systems::TxnSystem, usize, u64),
    AccountUpdate(&'a dyn systems::TxnSystem, usize),
    /// A YCSB workload by name.
    Ycsb(&'a dyn systems::TxnSystem, usize, &'static str),
}

impl Job<'_> {
    fn describe(&self) -> output::Point {
        let (workload, system, variant, threads, record_bytes, branches) = match *self {
            Job::Append(s, t, b) => (
                output::append_workload(b),
                s.name(),
                s.variant(),
                t,
                Some(b),
                None,
            ),
            Job::Tpcb(s, t, b) => ("tpcb".into(), s.name(), s.variant(), t, None, Some(b)),
            Job::AccountUpdate(s, t) => (
                "account-update".into(),
                s.name(),
                s.variant(),
                t,
                None,
                None,
            ),
            Job::Ycsb(s, t, w) => (
                w.into(),
                s.name(),
                s.variant(),
                t,
                Some(systems::YCSB_VALUE_BYTES),
                None,
            ),
        };
        output::Point {
            workload,
            system,
            variant: variant.as_str().into(),
            threads,
            record_bytes,
            branches,
        }
    }
}

/// One run done once per system, in a child process.
enum Once<'a> {
    Reopen(&'a dyn systems::TxnSystem),
    Kill(&'a dyn systems::TxnSystem),
    Memory(&'a dyn systems::TxnSystem),
}

/// The mix of the YCSB workload `name`.
fn ycsb_config(args: &Args, name: &str) -> workload::ycsb::Config {
    match name {
        "ycsb-a" => workload::ycsb::Config::ycsb_a(args.ycsb_rows),
        "ycsb-b" => workload::ycsb::Config::ycsb_b(args.ycsb_rows),
        _ => workload::ycsb::Config::new(args.ycsb_rows, args.ycsb_theta),
    }
}

/// The branch counts of TPC-B at `threads` threads under the `--branches` settings (one
/// branch per thread, a single branch; the same point once).
fn tpcb_branches(args: &Args, threads: usize) -> Vec<u64> {
    let mut out = Vec::new();
    for s in &args.branches {
        let b = if s == "single" { 1 } else { threads as u64 };
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// The kill workload's settings from the flags.
fn kill_config(args: &Args) -> workload::kill::Config {
    let ms = |i: usize| args.kill_after_ms.get(i).copied().unwrap_or(0);
    workload::kill::Config {
        threads: args.kill_threads,
        accounts_per_branch: args.accounts_per_branch,
        rounds: args.kill_rounds,
        kill_after_min_ms: ms(0),
        kill_after_max_ms: ms(1),
    }
}

/// Whether `--systems` and `--variants` pick the system called `name` in `variant`.
fn wanted(args: &Args, name: &str, variant: systems::Variant) -> bool {
    (args.systems.is_empty() || args.systems.iter().any(|f| name.contains(f.as_str())))
        && args.variants.contains(&variant)
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if let Some(cmd) = args.child.take() {
        return run_child(cmd);
    }
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
        if !WORKLOADS.contains(&w.as_str()) {
            bail!("unknown workload {w:?}: one of {}", WORKLOADS.join(", "));
        }
    }
    let runs = |w: &str| args.workloads.iter().any(|x| x == w);
    if runs("reopen")
        && (args.reopen_txns == 0 || args.reopen_threads == 0 || args.reopen_relaxed_threads == 0)
    {
        bail!("--reopen-txns, --reopen-threads and --reopen-relaxed-threads must be positive");
    }
    if runs("memory") && args.memory_rows == 0 {
        bail!("--memory-rows must be positive");
    }
    for w in YCSB_WORKLOADS.into_iter().filter(|w| runs(w)) {
        workload::ycsb::Draw::new(&ycsb_config(&args, w))?;
    }
    if (runs("tpcb") || runs("kill")) && args.accounts_per_branch == 0 {
        bail!("--accounts-per-branch must be positive");
    }
    if args.branches.is_empty()
        || args
            .branches
            .iter()
            .any(|b| b != "per-thread" && b != "single")
    {
        bail!("--branches takes per-thread and/or single");
    }
    if runs("kill") {
        let k = kill_config(&args);
        if args.kill_after_ms.len() != 2 || k.kill_after_min_ms > k.kill_after_max_ms {
            bail!("--kill-after-ms takes MIN,MAX milliseconds");
        }
        if k.threads == 0 || k.threads >= 1 << 16 || k.rounds == 0 {
            bail!("--kill-threads (below 65,536) and --kill-rounds must be positive");
        }
    }
    let exe = std::env::current_exe().context("the path of this binary")?;
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
                for s in appends
                    .iter()
                    .filter(|s| wanted(&args, &s.name(), s.variant()))
                {
                    jobs.push(Job::Append(s.as_ref(), t, b));
                }
            }
        }
    }
    if runs("tpcb") {
        for &t in &args.threads {
            for b in tpcb_branches(&args, t) {
                for s in txns
                    .iter()
                    .filter(|s| wanted(&args, &s.name(), s.variant()))
                {
                    jobs.push(Job::Tpcb(s.as_ref(), t, b));
                }
            }
        }
    }
    if runs("account-update") {
        for &t in &args.threads {
            for s in txns
                .iter()
                .filter(|s| wanted(&args, &s.name(), s.variant()))
            {
                jobs.push(Job::AccountUpdate(s.as_ref(), t));
            }
        }
    }
    for w in YCSB_WORKLOADS.into_iter().filter(|w| runs(w)) {
        for &t in &args.threads {
            for s in txns
                .iter()
                .filter(|s| wanted(&args, &s.name(), s.variant()))
            {
                jobs.push(Job::Ycsb(s.as_ref(), t, w));
            }
        }
    }
    let mut once = Vec::new();
    if runs("reopen") {
        for s in txns
            .iter()
            .filter(|s| wanted(&args, &s.name(), s.variant()))
        {
            once.push(Once::Reopen(s.as_ref()));
        }
    }
    if runs("kill") {
        for s in txns
            .iter()
            .filter(|s| wanted(&args, &s.name(), s.variant()))
        {
            once.push(Once::Kill(s.as_ref()));
        }
    }
    if runs("memory") {
        for s in txns
            .iter()
            .filter(|s| wanted(&args, &s.name(), s.variant()))
        {
            once.push(Once::Memory(s.as_ref()));
        }
    }
    if jobs.is_empty() && once.is_empty() {
        bail!(
            "no system matches --systems {:?} --variants {:?}",
            args.systems,
            args.variants
        );
    }

    let duration = Duration::from_secs_f64(args.seconds);
    let bar = ProgressBar::new((jobs.len() * args.repeat + once.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs (eta {eta}) {msg}",
        )?
        .progress_chars("=> "),
    );
    let tpcb_params = workload::tpcb::Params::new(args.accounts_per_branch);
    let kill = kill_config(&args);
    let mut report = Report {
        machine,
        seconds_per_run: args.seconds,
        repeat: args.repeat,
        accounts: args.accounts,
        ycsb: runs("ycsb").then(|| ycsb_config(&args, "ycsb")),
        tpcb: (runs("tpcb") || runs("kill")).then(|| tpcb_params.clone()),
        kill_config: runs("kill").then(|| kill.clone()),
        workloads: WORKLOADS
            .into_iter()
            .filter(|w| runs(w))
            .filter_map(|w| describe_workload(&args, w, &tpcb_params, &kill))
            .collect(),
        reopen_method: runs("reopen").then(|| reopen_method(&args)),
        memory_method: runs("memory").then(|| MEMORY_METHOD.to_string()),
        runs: Vec::new(),
        reopen: Vec::new(),
        kill: Vec::new(),
        memory: Vec::new(),
        failures: Vec::new(),
    };
    let mut taken: Vec<Vec<Row>> = jobs.iter().map(|_| Vec::new()).collect();
    for round in 0..args.repeat {
        for (i, job) in jobs.iter().enumerate() {
            let point = job.describe();
            let label = format!(
                "{} {} ({}) {}t{}{} (run {} of {})",
                point.workload,
                point.system,
                point.variant,
                point.threads,
                point
                    .record_bytes
                    .map_or_else(String::new, |b| format!(" {b}B")),
                point
                    .branches
                    .map_or_else(String::new, |b| format!(" {b} branch(es)")),
                round + 1,
                args.repeat
            );
            bar.set_message(label.clone());
            let run_dir = dir.join(format!("run-{i}"));
            let result = run_job(job, &run_dir, &args, duration, &|| bar.tick());
            let cleanup = remove(&run_dir);
            match result.and_then(|row| cleanup.map(|()| row)) {
                Ok(row) => taken[i].push(row),
                Err(e) => {
                    bar.println(format!("FAILED {label}: {e:#}"));
                    report.failures.push(Failure {
                        workload: point.workload,
                        system: point.system,
                        variant: point.variant,
                        threads: point.threads,
                        record_bytes: point.record_bytes,
                        branches: point.branches,
                        error: format!("{e:#}"),
                    });
                }
            }
            bar.inc(1);
        }
    }
    for (i, job) in once.iter().enumerate() {
        let (workload, system, variant, threads) = match *job {
            Once::Reopen(s) => ("reopen", s.name(), s.variant(), reopen_threads(&args, s)),
            Once::Kill(s) => ("kill", s.name(), s.variant(), args.kill_threads),
            Once::Memory(s) => ("memory", s.name(), s.variant(), 1),
        };
        let label = format!("{workload} {system}");
        bar.set_message(label.clone());
        let run_dir = dir.join(format!("{workload}-{i}"));
        let tick = || bar.tick();
        let result = remove(&run_dir)
            .and_then(|()| {
                std::fs::create_dir_all(&run_dir)
                    .with_context(|| format!("create {}", run_dir.display()))
            })
            .and_then(|()| match *job {
                Once::Reopen(s) => workload::reopen::run(
                    s,
                    &exe,
                    &run_dir,
                    threads,
                    args.accounts,
                    args.reopen_txns,
                    &tick,
                )
                .map(|r| report.reopen.push(r)),
                Once::Kill(s) => workload::kill::run(s, &exe, &run_dir, &kill, &tick).map(|r| {
                    if r.lost > 0 {
                        let example = r.rounds.iter().find_map(|x| x.lost_example.clone());
                        bar.println(format!(
                            "LOST {} acknowledged transaction(s) under kill -9: {system}; {}",
                            r.lost,
                            example.unwrap_or_default()
                        ));
                    }
                    report.kill.push(r)
                }),
                Once::Memory(s) => {
                    workload::memory::run(s, &exe, &run_dir, args.memory_rows, &tick)
                        .map(|r| report.memory.push(r))
                }
            });
        if let Err(e) = result.and(remove(&run_dir)) {
            bar.println(format!("FAILED {label}: {e:#}"));
            report.failures.push(Failure {
                workload: workload.into(),
                system,
                variant: variant.as_str().into(),
                threads,
                record_bytes: None,
                branches: None,
                error: format!("{e:#}"),
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // A point where a run failed gets no median of the runs that survived (Row::of_point),
    // and `finish` marks every row of it invalid.
    report.runs = jobs
        .iter()
        .zip(taken)
        .filter_map(|(job, runs)| Row::of_point(&job.describe(), runs, args.repeat))
        .collect();
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

/// The threads the reopen workload's child for `sys` commits from.
fn reopen_threads(args: &Args, sys: &dyn systems::TxnSystem) -> usize {
    if sys.relaxed_setting().is_some() {
        args.reopen_relaxed_threads
    } else {
        args.reopen_threads
    }
}

/// Workload `w` in words, for the report and the tables' titles (`None` where the report says
/// it in a method of its own).
fn describe_workload(
    args: &Args,
    w: &str,
    tpcb: &workload::tpcb::Params,
    kill: &workload::kill::Config,
) -> Option<output::WorkloadInfo> {
    let description = match w {
        "tpcb" => format!("Durable transactions ({})", tpcb.describe()),
        "account-update" => format!(
            "Durable transactions (account update: one row read and written, TPC-B's account \
             update alone, no teller, branch or history; {} accounts drawn uniformly)",
            args.accounts
        ),
        "ycsb-a" => format!(
            "Durable transactions (YCSB A: {})",
            ycsb_config(args, w).describe()
        ),
        "ycsb-b" => format!(
            "Durable transactions (YCSB B: {})",
            ycsb_config(args, w).describe()
        ),
        "ycsb" => format!(
            "Durable transactions (YCSB as the Taurus paper runs it: {})",
            ycsb_config(args, w).describe()
        ),
        "kill" => kill.describe(),
        _ => return None,
    };
    Some(output::WorkloadInfo {
        name: w.into(),
        description,
    })
}

/// The reopen workload's method, in words, for the report.
fn reopen_method(args: &Args) -> String {
    format!(
        "A child process creates the store ({} accounts), commits {} account updates \
         and reports their sum of deltas; the parent kill -9s it (SIGKILL: a process crash, the \
         page cache keeps what it wrote; not a power cut), then times the reopen until a read \
         answers, and checks that the balances hold every delta. A child marked RELAXED \
         committed under a setting that survives kill -9 but not a power cut, because \
         1,000,000 durable commits of that system take minutes; it commits from {} thread(s), \
         a durable one from {}. One reopen per system, page cache warm.",
        args.accounts, args.reopen_txns, args.reopen_relaxed_threads, args.reopen_threads
    )
}

/// The memory workload's method, in words, for the report.
const MEMORY_METHOD: &str = "A child process loads the rows (8-byte key, 8-byte balance) and \
    reports (VmRSS after the load - VmRSS before the open) / rows. braid-engine is an in-memory \
    engine: every row stays resident. The others keep their tables on disk and page them \
    through caches, so their figure is what their caches and write buffers hold after the load \
    and depends on those settings (listed per system).";

fn run_job(
    job: &Job<'_>,
    run_dir: &Path,
    args: &Args,
    duration: Duration,
    tick: &dyn Fn(),
) -> Result<Row> {
    remove(run_dir)?;
    std::fs::create_dir_all(run_dir).with_context(|| format!("create {}", run_dir.display()))?;
    let row = match *job {
        Job::Append(s, threads, bytes) => {
            workload::append::run(s, run_dir, threads, bytes, duration, tick)
        }
        Job::Tpcb(s, threads, branches) => {
            let scale = systems::TpcbScale {
                branches,
                accounts_per_branch: args.accounts_per_branch,
            };
            workload::tpcb::run(s, run_dir, threads, scale, duration, tick)
        }
        Job::AccountUpdate(s, threads) => {
            workload::txn::run(s, run_dir, threads, args.accounts, duration, tick)
        }
        Job::Ycsb(s, threads, w) => {
            let cfg = ycsb_config(args, w);
            workload::ycsb::run(s, run_dir, threads, w, &cfg, duration, tick)
        }
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use anyhow::{Context as _, Result};

    /// An empty scratch directory for a test, on the disk under this crate's target dir (braid
    /// refuses tmpfs), named after the test and this process.
    pub fn scratch(name: &str) -> Result<PathBuf> {
        let dir = super::repo()
            .join("peers/target/test-data")
            .join(format!("{name}-{}", std::process::id()));
        super::remove(&dir)?;
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(dir)
    }
}
