//! The experiments of `braid report`, as values: which paper and figure each is, the paper's
//! claim, how it is scaled to this machine, the `braid bench` runs it makes, and the verdict it
//! draws from what was measured. The experiments themselves are in [`super::wj`],
//! [`super::nvlog`], [`super::taurus`] and [`super::rewind`], one file per paper.

use braid_engine::log::LogKind;

use super::plot::{Chart, Figure, Key, X, Y};
use super::verdict::{Measured, Verdict};
use crate::bench::BenchArgs;
use crate::common::{DeviceKind, WorkloadKind};
use braid_wal::scheme::RecoveryPlan;

/// One experiment: a section of the summary, one figure of a paper.
pub struct Experiment {
    /// What `--only` matches, and the stem of its data files.
    pub id: &'static str,
    /// The section's heading.
    pub title: &'static str,
    /// The paper the experiment reproduces.
    pub paper: &'static str,
    /// The paper's figure.
    pub figure: &'static str,
    /// What the paper claims, with its numbers.
    pub claim: &'static str,
    /// How the paper's experiment is scaled to this machine, and what is emulated.
    pub scaled: String,
    pub body: Body,
    /// The verdict: the claim's parts checked against what the body measured.
    pub verdict: fn(&Measured) -> Verdict,
}

/// What an experiment runs.
pub enum Body {
    /// Bench runs, each with its table and figure.
    Runs(Vec<Run>),
    /// One bench run per x value (a workload parameter), each with its table named by its
    /// run; one figure of them all.
    Sweep {
        runs: Vec<(f64, Run)>,
        figure: Figure,
    },
    /// Bench runs whose databases are kept and then recovered, repeatedly, with each number
    /// of recovery threads and each replay plan; a table and a bar figure of the medians.
    Recovery {
        runs: Vec<Run>,
        threads: Vec<usize>,
        /// taurus replay plans to recover with (`None`: the default, auto).
        plans: &'static [Option<RecoveryPlan>],
        figure: Figure,
    },
    /// Bench runs whose gsn databases are kept and recovered, repeatedly, with each
    /// (scanners, appliers) pair of Wang & Johnson's recovery pipeline (§3.2); a table and a
    /// bar figure of the medians.
    Pipelines {
        runs: Vec<Run>,
        pipelines: Vec<(usize, usize)>,
        figure: Figure,
    },
    /// `braid bench rewind --experiment all`, and the plots it draws.
    Rewind { plots: &'static [&'static str] },
    /// Runs drawn anew, one x value each, as a figure of their own (a time breakdown): runs
    /// an earlier entry made (same id, same configuration) are taken from it rather than run
    /// again, and have their table there; the others run here and have their table here.
    Breakdown {
        runs: Vec<(f64, Run)>,
        figure: Figure,
    },
}

/// One `braid bench` sweep over [`Var`]s: its id (names its data files), the workload and
/// threads every variant shares, and its figure.
pub struct Run {
    pub id: String,
    /// The x value the run stands for, in a table of a sweep or recovery (e.g. theta).
    pub x: Option<f64>,
    pub bench: Bench,
    pub vars: Vec<Var>,
    pub figure: Option<Figure>,
}

/// One variant of a run: the schemes and logging kinds it measures under options of its own.
pub struct Var {
    /// Names the variant in tables and plots ("" for the schemes' defaults).
    pub label: &'static str,
    pub schemes: &'static [&'static str],
    pub logging: &'static [LogKind],
    /// What the variant changes in the run's bench options, in order.
    pub set: Vec<fn(&mut BenchArgs)>,
}

/// The machine's cores (`available_parallelism`), where the thread sweeps end.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The worker-thread counts of a figure whose paper sweeps threads up to `paper_max`, on this
/// machine: 1, 2, 4, ... doubling while below the top, then the top, which is the machine's
/// cores or `paper_max`, whichever is fewer. On 2 cores that is 1 and 2; on 64 cores for a
/// paper axis to 80 it is 1, 2, 4, ..., 64, the paper's curve up to the machine's size.
pub fn sweep(paper_max: usize) -> Vec<usize> {
    doubling_to(top(paper_max))
}

/// 1, 2, 4, ... below `top`, then `top`.
fn doubling_to(top: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |t| t.checked_mul(2))
        .take_while(|&t| t < top)
        .collect();
    v.push(top);
    v
}

/// Where a figure's single-point comparisons are taken: the top of [`sweep`].
pub fn top(paper_max: usize) -> usize {
    cores().min(paper_max).max(1)
}

/// `threads` as "1, 2 and 4".
pub fn list(threads: &[usize]) -> String {
    match threads {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!(
            "{} and {last}",
            init.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The paper's largest worker-thread count in Taurus's Figs. 5-10 (Section 5.1: "at most 80
/// worker threads").
pub const TAURUS_WORKERS: usize = 80;

impl Var {
    /// `schemes` with data logging at their defaults, logging per update as Shore-MT does
    /// (the engine Wang & Johnson and NV-Logging measure).
    pub fn per_update(schemes: &'static [&'static str]) -> Var {
        Var {
            label: "",
            schemes,
            logging: DATA,
            set: vec![per_update],
        }
    }
}

/// Per-update records (`--records update`), as in Shore-MT.
pub fn per_update(a: &mut BenchArgs) {
    a.engine.records = braid_wal::scheme::Records::Update;
}

/// Data logging alone.
pub const DATA: &[LogKind] = &[LogKind::Data];
/// Data and command logging.
pub const BOTH: &[LogKind] = &[LogKind::Data, LogKind::Command];

/// The bench options a run sets for every variant; the rest are bench's defaults, the
/// report's `--seconds` and `--repeat`, and with `--quick` small tables.
#[derive(Debug, Clone)]
pub struct Bench {
    pub workload: WorkloadKind,
    pub threads: Vec<usize>,
    pub nvm_delays: Option<Vec<u64>>,
    pub theta: Option<f64>,
    /// YCSB: rows each transaction accesses (`--ycsb-accesses`), instead of the default.
    pub accesses: Option<usize>,
    /// Log streams (`--logs`), instead of each variant's own or the bench's default.
    pub logs: Option<usize>,
    pub tatp_mix: Option<&'static str>,
    pub tpcc_mix: Option<&'static str>,
    /// Seconds per run, instead of the report's.
    pub seconds: Option<f64>,
    /// Runs per configuration, instead of the report's.
    pub repeat: Option<usize>,
    /// End each run once this many transactions committed (`braid bench --commits`), so that
    /// every scheme's log holds as many and their recoveries replay logs of one size;
    /// `seconds` is then only a cap. `--quick` takes a twentieth.
    pub commits: Option<u64>,
}

impl Bench {
    /// `workload` on `threads`, everything else at its default.
    pub fn new(workload: WorkloadKind, threads: &[usize]) -> Bench {
        Bench {
            workload,
            threads: threads.to_vec(),
            nvm_delays: None,
            theta: None,
            accesses: None,
            logs: None,
            tatp_mix: None,
            tpcc_mix: None,
            seconds: None,
            repeat: None,
            commits: None,
        }
    }

    /// TPC-C with one transaction type alone.
    pub fn tpcc(mix: &'static str, threads: &[usize]) -> Bench {
        let mut b = Bench::new(WorkloadKind::Tpcc, threads);
        b.tpcc_mix = Some(mix);
        b
    }
}

/// Where a DRAM file system is (emulated devices keep their files there, so the emulated
/// speed, not the disk under /var/tmp, is what they pay).
pub const SHM: &str = "/dev/shm/braid-report";

/// File log devices in `/dev/shm`, each stream on a device of its own, paced to `mbps` MB/s and
/// `sync_us` per flush (0 and 0: not paced).
pub fn paced(a: &mut BenchArgs, mbps: f64, sync_us: u64) {
    a.device = Some(vec![DeviceKind::File]);
    a.dir = Some(SHM.into());
    a.engine.device_mbps = Some(mbps);
    a.engine.device_sync_us = Some(sync_us);
}

/// The paper's log devices: "eight NVMe SSDs" (Xia et al. 2021 §5.2) and eight HDDs (§5.3).
pub const PAPER_DEVICES: usize = 8;

/// The log devices of a Taurus figure, and the logs the parallel schemes spread over (one per
/// device): one per worker at the top of the machine's sweep, up to the paper's eight. Every
/// device is written at the top of the sweep, as the paper's are at its 80 workers (16 logs,
/// "each worker is assigned to a log manager", §3): with more devices than workers, Taurus,
/// whose worker i writes log i mod n, would leave some idle while serial logging on RAID-0
/// stripes over all of them. (The paper puts two log files on each disk "to better exploit
/// the bandwidth" of a real SSD; an emulated device has no internal parallelism to exploit,
/// so one log per device.)
pub fn devices() -> usize {
    top(TAURUS_WORKERS).min(PAPER_DEVICES)
}

/// Transactions each recovery figure's logging runs commit before their logs are recovered
/// (all schemes alike, so recoveries compare logs of one size).
pub const RECOVERY_TXNS: u64 = 100_000;

/// The most seconds a run that stops at a commit count may take.
pub const COMMITS_CAP_S: f64 = 60.0;

/// The parallel schemes' log count, and Taurus as the paper configures it (Section 3: "each
/// worker is assigned to a log manager": worker i writes log i mod n, braid's default; with
/// fewer workers than logs the others stay idle, as at the paper's low thread counts) with its
/// record-LV compression (Section 4.1, Alg. 5) on.
pub fn parallel(a: &mut BenchArgs) {
    a.logs = Some(vec![devices()]);
    a.engine.taurus.compress = braid_wal::scheme::LvCompress::On;
}

/// Serial logging on a RAID-0 of [`devices`] devices, in 16 KiB stripe units: a group-commit
/// flush here carries at most the workers' pipelines (about 100 KB of YCSB records at 2
/// workers), so 16 KiB units spread one flush over every device, as the paper's far larger
/// flushes spread over its RAID-0 (64 KiB units would put most flushes on one or two devices).
pub fn raid0(a: &mut BenchArgs) {
    a.engine.stripe = devices();
    a.engine.stripe_kb = 16;
}

/// Silo-R acknowledges a commit once its epoch is durable, tens of milliseconds later; a
/// worker keeps this many commits in flight so that the epoch, not the client, bounds it.
pub const SILOR_INFLIGHT: usize = 65_536;

/// Optimistic concurrency control, as Silo-R needs.
pub fn occ(a: &mut BenchArgs) {
    a.engine.cc = braid_engine::Cc::Occ;
}

/// Throughput against worker threads, one line per configuration.
pub fn vs_threads(id: &str, title: &str) -> Figure {
    lines_vs_threads(id, title, "txn/s", Y::TxnPerS, false)
}

/// `y` against worker threads, one line per configuration (without `none` if `skip_none`).
pub fn lines_vs_threads(
    id: &str,
    title: &str,
    y_label: &'static str,
    y: Y,
    skip_none: bool,
) -> Figure {
    Figure {
        stem: id.to_string(),
        title: title.to_string(),
        x_label: "worker threads",
        y_label,
        chart: Chart::Lines {
            x: X::Threads,
            y,
            key: Key::Label,
            skip_none,
        },
    }
}

/// Bars, one per configuration, of `y_label`.
pub fn bars(id: &str, title: &str, y_label: &'static str) -> Figure {
    Figure {
        stem: id.to_string(),
        title: title.to_string(),
        x_label: "",
        y_label,
        chart: Chart::Bars,
    }
}

/// A run named `id` of `bench` over `vars`, drawn by `figure`.
pub fn run(id: &str, bench: Bench, vars: Vec<Var>, figure: Option<Figure>) -> Run {
    Run {
        id: id.to_string(),
        x: None,
        bench,
        vars,
        figure,
    }
}

/// Every experiment of the report, in the order of the summary.
pub fn all() -> Vec<Experiment> {
    let mut v = super::wj::all();
    v.extend(super::nvlog::all());
    v.extend(super::taurus::all());
    v.extend(super::rewind::all());
    v.extend(super::beyond::all());
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn sweeps_double_up_to_the_machine_and_end_at_its_top() {
        assert_eq!(doubling_to(1), vec![1]);
        assert_eq!(doubling_to(2), vec![1, 2]);
        assert_eq!(doubling_to(24), vec![1, 2, 4, 8, 16, 24]);
        assert_eq!(doubling_to(64), vec![1, 2, 4, 8, 16, 32, 64]);
        let s = sweep(80);
        assert_eq!(s.last(), Some(&top(80)));
        assert!(top(80) <= 80 && top(80) <= cores());
        assert_eq!(list(&[1, 2, 4]), "1, 2 and 4");
        assert_eq!(list(&[2]), "2");
    }

    use super::*;

    #[test]
    fn every_paper_figure_the_report_promises_is_there_once() {
        let ids: Vec<&str> = all().iter().map(|e| e.id).collect();
        assert_eq!(
            ids,
            [
                "wj-fig4",
                "wj-fig5",
                "wj-fig6",
                "wj-fig7",
                "wj-fig8",
                "wj-recovery",
                "nvlog-fig11",
                "nvlog-fig12",
                "nvlog-fig13",
                "nvlog-fig14",
                "nvlog-fig15",
                "nvlog-fig16",
                "taurus-fig5",
                "taurus-fig6",
                "taurus-fig7",
                "taurus-fig8",
                "taurus-fig9",
                "taurus-fig10",
                "taurus-fig11",
                "taurus-fig11b",
                "taurus-fig12",
                "taurus-fig12b",
                "taurus-fig13",
                "taurus-fig13b",
                "taurus-fig14",
                "taurus-fig15",
                "taurus-fig16",
                "rewind-fig3",
                "rewind-fig4",
                "rewind-fig5",
                "rewind-fig6",
                "rewind-fig7",
                "rewind-fig8",
                "rewind-fig9",
                "rewind-fig10",
                "rewind-fig11",
                "beyond-rfa",
                "beyond-autonomous"
            ]
        );
        let mut run_ids: Vec<String> = Vec::new();
        for e in all() {
            let runs: Vec<Run> = match e.body {
                Body::Runs(r)
                | Body::Recovery { runs: r, .. }
                | Body::Pipelines { runs: r, .. } => r,
                Body::Sweep { runs, .. } => runs.into_iter().map(|(_, r)| r).collect(),
                Body::Rewind { .. } => Vec::new(),
                // A breakdown's runs are an earlier entry's, or its own.
                Body::Breakdown { runs, .. } => runs
                    .into_iter()
                    .map(|(_, r)| r)
                    .filter(|r| {
                        let earlier = run_ids.contains(&r.id);
                        assert!(earlier || r.id.starts_with(e.id), "{} in {}", r.id, e.id);
                        !earlier
                    })
                    .collect(),
            };
            for r in runs {
                assert!(r.id.starts_with(e.id), "{} in {}", r.id, e.id);
                assert!(
                    r.id == e.id || r.id.as_bytes().get(e.id.len()) == Some(&b'-'),
                    "{} in {}",
                    r.id,
                    e.id
                );
                assert!(!run_ids.contains(&r.id), "run id {} twice", r.id);
                assert!(!r.vars.is_empty(), "{} has no variant", r.id);
                run_ids.push(r.id);
            }
        }
    }
}
