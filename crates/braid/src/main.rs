//! `braid`: benchmark, crash-test, recover and inspect braid's logging schemes side by side.

/// mimalloc, on 2 MiB pages once `main` has called `braid_pmem::heap::start`
/// (`braid_pmem::heap` says why and what it measured).
#[global_allocator]
static HEAP: braid_pmem::heap::Heap = braid_pmem::heap::Heap;

mod follow;
mod inspect;

#[cfg(feature = "crash-test")]
use braid_lab::crash;
use braid_lab::{bench, output, recover, replot, report, rewind};

use clap::{Parser, Subcommand};

/// Scalable logging and recovery for in-memory transactional systems.
#[derive(Debug, Parser)]
#[command(name = "braid", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run a workload under each logging scheme and compare throughput, latency and log volume
    /// (`braid bench rewind` runs the persistent-memory transaction experiments instead).
    Bench(Box<BenchCmd>),
    /// Recover a database directory and report replay speed.
    Recover(recover::RecoverArgs),
    /// Follow a database on the nats device as a hot standby: replay its log as it grows,
    /// report the lag, and take over on `braid promote`.
    Follow(follow::FollowArgs),
    /// Ask the standby following a database (`braid follow`) to fence the writer and take over.
    Promote(follow::PromoteArgs),
    /// Crash a running database (kill -9 or simulated power failure) and check recovery.
    #[cfg(feature = "crash-test")]
    CrashTest(crash::CrashArgs),
    /// Show a database's log streams and records.
    Inspect(inspect::InspectArgs),
    /// Run the experiments that mirror the papers' headline figures; write plots and a summary.
    Report(report::ReportArgs),
    /// Draw saved `braid bench` results (JSON) again: throughput and p50/p90/p99/p99.9 commit
    /// latency against threads, one figure per metric.
    Plot(replot::PlotArgs),
    #[cfg(feature = "crash-test")]
    #[command(hide = true)]
    CrashChild(crash::ChildArgs),
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchCmd {
    #[command(subcommand)]
    sub: Option<BenchSub>,
    #[command(flatten)]
    args: bench::BenchArgs,
}

#[derive(Debug, Subcommand)]
enum BenchSub {
    /// REWIND persistent-memory transactions: 1-word transactions, the B+-tree mix, fence
    /// sensitivity, rollback and recovery.
    Rewind(rewind::RewindCmd),
}

fn main() {
    // First, while the process has one thread: the heap's 2 MiB pages.
    braid_pmem::heap::start();
    let cli = Cli::parse();
    // The tree's state before any command writes its outputs (see `output::revision`).
    let _ = output::revision();
    let result = match cli.cmd {
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            Ok(())
        }
        Some(Cmd::Bench(b)) => match *b {
            BenchCmd {
                sub: Some(BenchSub::Rewind(a)),
                ..
            } => rewind::run_cmd(a),
            BenchCmd { args, .. } => bench::run(args),
        },
        Some(Cmd::Recover(a)) => recover::run(a),
        Some(Cmd::Inspect(a)) => inspect::run(a),
        Some(Cmd::Follow(a)) => follow::run(a),
        Some(Cmd::Promote(a)) => follow::promote(a),
        Some(Cmd::Report(a)) => report::run(a),
        Some(Cmd::Plot(a)) => replot::run(a),
        #[cfg(feature = "crash-test")]
        Some(Cmd::CrashChild(a)) => crash::child(a),
        #[cfg(feature = "crash-test")]
        Some(Cmd::CrashTest(a)) => match crash::run(a) {
            Ok(true) => Ok(()),
            Ok(false) => {
                eprintln!("crash-test found violations");
                std::process::exit(1);
            }
            Err(e) => Err(e),
        },
    };
    if let Err(e) = result {
        // The chain of causes, each once: the libraries' errors show their typed kind (and
        // its own source) in their message and keep it as their source too.
        let mut text = String::new();
        for cause in e.chain().map(|c| c.to_string()) {
            if !text.contains(&cause) {
                if !text.is_empty() {
                    text.push_str(": ");
                }
                text.push_str(&cause);
            }
        }
        eprintln!("braid: {text}");
        std::process::exit(2);
    }
}
