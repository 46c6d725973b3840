//! `braid bench`: run a workload under each scheme, thread count and repeat, count commits
//! acknowledged as durable, and report medians with the ratio to no logging from the same run.
//!
//! Workers pipeline their commits: a commit returns a ticket at once (early lock release) and
//! the worker goes on with the next transaction, retiring tickets as they become durable (the
//! Taurus paper's asynchronous commit). A transaction counts, and its latency (commit start to
//! acknowledgement) is recorded, only when its ticket resolves; transactions still in flight when
//! the time is up are waited for and counted, and the elapsed time includes that wait.
//!
//! Each run also records the scheme's own counters ([`braid_engine::DbStats::scheme_counters`]); for
//! gsn the results carry straggler signals per 10,000 commits of passive group commit (Wang &
//! Johnson Sec. 4.1), counted by that run's scheme instance alone.
//!
//! [`sweep`] expands the command line into configurations, [`run`](mod@run) measures one of
//! them once, [`summary`] repeats and summarises them, [`output`] prints and writes the results.

mod arrivals;
pub mod cpu;
mod floor;
mod output;
mod run;
mod summary;
mod sweep;

use std::path::PathBuf;

use braid_engine::{Options, log::LogKind};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::common::{self, DeviceKind, EngineArgs, OltpArgs, WorkloadKind, YcsbArgs};

pub use output::{save, save_quiet};
pub use run::{RunResult, run_once};
pub(crate) use summary::median;
pub use summary::{ConfigResult, measure, measure_variants};
pub use sweep::{Point, Variant, sweep_points, variant_points};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Workload to run.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Ycsb)]
    pub workload: WorkloadKind,
    /// Schemes to compare, comma-separated (default: every scheme; pertxn, whose log is a
    /// persistent-memory region, only on pmem).
    #[arg(long, value_delimiter = ',', value_parser = common::scheme_name)]
    pub scheme: Option<Vec<&'static str>>,
    /// Logging kinds, comma-separated: data, command.
    #[arg(long, value_delimiter = ',', default_value = Options::default().logging.name(), value_parser = common::trimmed::<LogKind>)]
    pub logging: Vec<LogKind>,
    /// Log devices, comma-separated: pmem, file, nats (default: every scheme on pmem, and
    /// beside them what a library user gets by default: serial on the file device, fdatasync'd
    /// on the root file system).
    #[arg(long, value_delimiter = ',', value_parser = common::device_kind)]
    pub device: Option<Vec<DeviceKind>>,
    /// Parent directory for the databases (default: a temporary directory in /dev/shm, or
    /// /var/tmp for the file device).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Worker thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = common::trimmed::<usize>)]
    pub threads: Vec<usize>,
    /// Log stream counts, comma-separated (default: the thread count; serial always uses one).
    #[arg(long, value_delimiter = ',', value_parser = common::trimmed::<usize>)]
    pub logs: Option<Vec<usize>>,
    /// Emulated NVM write delays to sweep, ns per persisted cache line, comma-separated
    /// (overrides --nvm-delay-ns).
    #[arg(long, value_delimiter = ',', value_parser = common::trimmed::<u64>)]
    pub nvm_delays: Option<Vec<u64>>,
    /// Seconds per run (default 5, shortened when the sweep is large so that measuring takes
    /// at most about a minute; loading the tables comes on top).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Runs per configuration (the table shows the median).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Write results as JSON here (the default is untracked; published results are written to
    /// `results/` only when asked for).
    #[arg(long, default_value = "target/braid/bench.json")]
    pub json: PathBuf,
    /// Write results as CSV here (default: the JSON path with a .csv extension).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw plots of the sweep (SVG and PNG) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Keep each run's database directory (for `braid recover` / `braid inspect`).
    #[arg(long)]
    pub keep: bool,
    /// Most commits a worker keeps in flight before it waits for the oldest (default: 256,
    /// or for a scheme that acknowledges in batches, as Silo-R's epochs, enough to cover two
    /// batches at a million commits per second per worker; the value used is recorded with
    /// every result).
    #[arg(long)]
    pub inflight: Option<usize>,
    /// End each run once this many transactions committed (each worker commits its share,
    /// rounded up), or at --seconds if that comes first: runs whose logs hold equal numbers of
    /// transactions, for comparing recoveries (recorded with every result).
    #[arg(long)]
    pub commits: Option<u64>,
    /// Open loop: offer this many transactions per second in all (each worker its share, as
    /// Poisson arrivals), and count each transaction's latency from its scheduled arrival
    /// (see `bench/arrivals.rs`); without it each worker starts its next transaction when it
    /// may (closed loop). Recorded with every result. Use with --sync-commit for the latency
    /// of each commit as its client sees it.
    #[arg(long, value_name = "TXN_PER_S")]
    pub offered_rate: Option<f64>,
    /// Draw N transactions per worker from the workload's own generator before each run's
    /// clock starts, then take them in turn (a transaction redrawn after a conflict is the
    /// next one; once all were taken, the first again), as the Taurus paper's code draws every
    /// query before its run; 0 draws each transaction in the timed loop. Costs N x (the
    /// transaction's parameter bytes + 12) of memory per worker, 56 B for YCSB's 2 accesses
    /// (1,000,000: 56 MB per worker; TPC-C's New-Order a few hundred bytes), and the time to
    /// draw them before every run. Not for marked YCSB. Recorded with every result.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub pregenerate: usize,
    /// Announce the rows of the coming transactions to the engine's prefetch
    /// (`Worker::prefetch`) in batches of B transactions, each batch located two batches
    /// before it runs and loaded one batch before, so a transaction's index and row misses
    /// overlap those that run before it; 0 never prefetches. The coming transactions are those
    /// of --pregenerate, or else each is drawn three batches before it runs (the same
    /// transactions in the same order; not for marked YCSB). Workloads whose transactions'
    /// rows the parameters name (YCSB) use it; others ignore it. Recorded with every result.
    #[arg(long, value_name = "B", default_value_t = 8)]
    pub prefetch_ahead: usize,
    /// Seed of the workload generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[command(flatten)]
    pub ycsb: YcsbArgs,
    #[command(flatten)]
    pub oltp: OltpArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Commits a worker keeps in flight by default: enough to keep a group commit full.
pub const DEFAULT_INFLIGHT: usize = 256;
/// Commits per second per worker a batch-acknowledging scheme's default window is sized for:
/// above any rate one worker reaches here, so the batch, not the window, bounds the client.
const BATCH_COVER_RATE: f64 = 1e6;

/// Wrapper to get [`BenchArgs`] with every default filled in.
#[derive(Debug, clap::Parser)]
struct Defaults {
    #[command(flatten)]
    bench: BenchArgs,
}

impl BenchArgs {
    /// Every option at its default, as `braid bench` with no option runs.
    pub fn defaults() -> anyhow::Result<BenchArgs> {
        use clap::Parser as _;
        Ok(Defaults::try_parse_from(["bench"])?.bench)
    }

    /// Where the CSV goes.
    pub fn csv_path(&self) -> PathBuf {
        self.csv
            .clone()
            .unwrap_or_else(|| self.json.with_extension("csv"))
    }

    /// Commits each worker keeps in flight with `spec`'s scheme: `--inflight`, or the default
    /// window ([`DEFAULT_INFLIGHT`], widened for a scheme that acknowledges in batches).
    pub fn inflight(&self, spec: &braid_engine::log::SchemeSpec) -> usize {
        if let Some(n) = self.inflight {
            return n.max(1);
        }
        match spec.acknowledges_every() {
            Some(every) => {
                let cover = (2.0 * every.as_secs_f64() * BATCH_COVER_RATE).ceil() as usize;
                cover.max(DEFAULT_INFLIGHT)
            }
            None => DEFAULT_INFLIGHT,
        }
    }

    /// Seconds per run.
    pub fn seconds(&self) -> f64 {
        self.seconds.unwrap_or(5.0)
    }
}

pub fn run(mut args: BenchArgs) -> anyhow::Result<()> {
    let workload = common::workload(args.workload, &args.ycsb, &args.oltp, false)?;
    let points = sweep_points(&args)?;
    if args.seconds.is_none() {
        let runs = (points.len() * args.repeat.max(1)) as f64;
        args.seconds = Some((60.0 / runs).clamp(1.0, 5.0));
    }
    let mp = MultiProgress::new();
    let total = (points.len() * args.repeat.max(1)) as u64;
    let overall = mp.add(ProgressBar::new(total));
    overall.set_style(
        ProgressStyle::with_template("bench {wide_msg} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    overall.set_message(workload.name().to_string());
    let results = measure(&args, &workload, &points, &mp, &overall)?;
    overall.finish_and_clear();
    output::print_table(&results);
    save(&args, &results)?;
    if let Some(dir) = &args.plot {
        let files = crate::plot::bench_plots(dir, &results)?;
        for f in files {
            println!("plot written to {}", f.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::Parser as _;

    fn parse(args: &[&str]) -> BenchArgs {
        Defaults::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .unwrap()
            .bench
    }

    #[test]
    fn lists_are_comma_separated() {
        let d = parse(&[]);
        assert_eq!(d.threads, vec![1, 2]);
        assert_eq!(d.logging, vec![LogKind::Data]);
        assert_eq!(d.device, None);
        assert!(d.scheme.is_none() && d.logs.is_none() && d.nvm_delays.is_none());
        let a = parse(&[
            "--scheme",
            "none,serial, taurus",
            "--threads",
            "1,2,4",
            "--logging",
            "data,command",
            "--device",
            "pmem,FILE",
            "--logs",
            "1,2",
            "--nvm-delays",
            "0,100",
        ]);
        assert_eq!(a.scheme, Some(vec!["none", "serial", "taurus"]));
        assert_eq!(a.threads, vec![1, 2, 4]);
        assert_eq!(a.logging, vec![LogKind::Data, LogKind::Command]);
        assert_eq!(a.device, Some(vec![DeviceKind::Pmem, DeviceKind::File]));
        assert_eq!(a.logs, Some(vec![1, 2]));
        assert_eq!(a.nvm_delays, Some(vec![0, 100]));
        assert!(
            Defaults::try_parse_from(["bench", "--scheme", "serial,nosuch"]).is_err(),
            "an unknown scheme is refused"
        );
    }

    #[test]
    fn variants_share_one_none_baseline_per_thread_count() {
        let v = |label: &str, args: &[&str]| Variant {
            label: label.into(),
            args: parse(args),
        };
        let variants = [
            v(
                "",
                &[
                    "--scheme",
                    "none,serial",
                    "--threads",
                    "1,2",
                    "--device",
                    "pmem",
                ],
            ),
            v("TX-D", &["--scheme", "none,gsn", "--threads", "1,2"]),
            v("PG-D", &["--scheme", "gsn", "--threads", "2"]),
        ];
        let points = variant_points(&variants).unwrap();
        let none: Vec<usize> = points
            .iter()
            .filter(|p| p.scheme == crate::common::NONE)
            .map(|p| p.threads)
            .collect();
        assert_eq!(none, [1, 2], "one baseline per thread count");
        let of = |i: usize| -> Vec<(&str, usize)> {
            points
                .iter()
                .filter(|p| p.variant == i && p.scheme != crate::common::NONE)
                .map(|p| (p.scheme, p.threads))
                .collect()
        };
        assert_eq!(of(0), [("serial", 1), ("serial", 2)]);
        assert_eq!(of(1), [("gsn", 1), ("gsn", 2)]);
        assert_eq!(of(2), [("gsn", 2)]);
    }

    /// With no --device, every scheme runs on pmem and serial runs on the file device
    /// beside them (the library's durable default); a named device list is taken as it is.
    #[test]
    fn the_default_sweep_adds_serial_on_files() {
        let at = |args: &[&str]| -> Vec<(&str, DeviceKind)> {
            sweep_points(&parse(args))
                .unwrap()
                .iter()
                .map(|p| (p.scheme, p.device))
                .collect()
        };
        let scheme = ["--scheme", "none,serial,taurus", "--threads", "1"];
        assert_eq!(
            at(&scheme),
            [
                ("none", DeviceKind::Null),
                ("serial", DeviceKind::Pmem),
                ("taurus", DeviceKind::Pmem),
                ("serial", DeviceKind::File),
            ]
        );
        let named = [&scheme[..], &["--device", "pmem"]].concat();
        assert_eq!(at(&named).len(), 3);
        assert_eq!(at(&["--scheme", "taurus", "--threads", "1"]).len(), 1);
    }

    /// Every scheme on the file device leaves out pertxn, whose log is a persistent-memory
    /// region, unless it is named.
    #[test]
    fn a_sweep_of_every_scheme_on_files_leaves_out_the_region_scheme() {
        let on_files = |args: &[&str]| -> Vec<&str> {
            sweep_points(&parse(args))
                .unwrap()
                .iter()
                .filter(|p| p.device == DeviceKind::File)
                .map(|p| p.scheme)
                .collect()
        };
        let every = on_files(&["--device", "file", "--threads", "1"]);
        assert!(every.contains(&"serial") && every.contains(&"taurus"));
        assert!(!every.contains(&"pertxn"), "{every:?}");
        let named = on_files(&["--device", "file", "--threads", "1", "--scheme", "pertxn"]);
        assert_eq!(named, ["pertxn"]);
    }
}
