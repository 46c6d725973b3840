//! Results: one [`Row`] per timed point (append-128, append-4k, tpcb, account-update, ycsb-a,
//! ycsb-b, ycsb; a system, its variant, a thread count, a size and TPC-B's branches), the
//! median of its runs, each with its ratio to the best peer (none at a point where any run of
//! any system failed: the point is invalid, and the failed system's row carries no figures),
//! one [`ReopenRow`] per system for the reopen workload, one [`KillRow`] for the kill
//! workload and one [`MemoryRow`] for the memory workload, written as `peers.json` (arrays
//! `runs`, `reopen`, `kill`, `memory`), `peers.csv` (the timed runs), `peers-reopen.csv`,
//! `peers-kill.csv` (a line per round) and `peers-memory.csv`, printed as one table per
//! workload ([`Group`]), and the timed runs drawn as a plot.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::machine::Machine;
use crate::workload::Measured;

pub mod plot;
pub mod table;

/// One run of one system at one thread count (and record size).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// `append-128`, `append-4k` (see [`append_workload`]), `tpcb`, `account-update`,
    /// `ycsb-a`, `ycsb-b` or `ycsb`.
    pub workload: String,
    /// System name; braid's start with `braid`, a tuned variant's ends in ` tuned`.
    pub system: String,
    /// `default` or `tuned` (see `crate::systems::Variant`).
    pub variant: String,
    /// Writer or worker threads.
    pub threads: usize,
    /// TPC-B's branches (the thread count with one branch per thread, or 1); none elsewhere.
    pub branches: Option<u64>,
    /// Record size of the append workload, value size of the YCSB rows; none for TPC-B.
    pub record_bytes: Option<usize>,
    /// Whether the point is valid: every run of every system at this workload, thread count
    /// and size succeeded. A row of an invalid point keeps its figures only if its own runs
    /// all succeeded (the failed system's row has none), and no row there has a ratio.
    pub valid: bool,
    /// Runs of this system at this point that failed (listed in the report's `failures`).
    pub failed_runs: usize,
    /// Durable appends or transactions per second: operations finished inside the window over
    /// the window; the median of the repeated runs (the other figures of the row are that
    /// run's). Null (NaN in the CSV) where a run of this system failed.
    pub per_s: f64,
    /// Runs taken of this point (`--repeat`), and the lowest and highest `per_s` among them.
    pub repeats: usize,
    /// Lowest `per_s` of the repeated runs.
    pub per_s_min: f64,
    /// Highest `per_s` of the repeated runs.
    pub per_s_max: f64,
    /// The slowest thread's operations per second (finished inside the window).
    pub thread_min_per_s: f64,
    /// The fastest thread's operations per second.
    pub thread_max_per_s: f64,
    /// Latency percentiles of the operations finished inside the window, microseconds.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// `per_s` over the best peer's (non-braid, default or tuned) at the same workload,
    /// threads and size; none where the point is invalid.
    pub ratio_to_best_peer: Option<f64>,
    /// The best peer there (system name, variant included).
    pub best_peer: Option<String>,
    /// fdatasync/fsync calls per second of the window, counted in process (every system
    /// alike, see `sync_source`).
    pub syncs_per_s: Option<f64>,
    /// Bytes passed to write system calls per fdatasync/fsync over the window.
    pub bytes_per_sync: Option<f64>,
    /// Where the sync figures come from.
    pub sync_source: Option<String>,
    /// The system's own count of log flushes per second, where it keeps one (braid's stream
    /// statistics), a cross-check of `syncs_per_s`.
    pub own_flushes_per_s: Option<f64>,
    /// Transactions of the window that aborted at least once (and were retried until they
    /// committed), per second; none for appends.
    pub aborts_per_s: Option<f64>,
    /// Conflicts retried by the transactions of the window (attempts = ops + retries).
    pub retries: Option<u64>,
    /// Operations finished inside the window.
    pub ops: u64,
    /// Seconds of the window.
    pub seconds: f64,
    /// Operations that finished after the window (not counted).
    pub late_ops: u64,
    /// Seconds from the end of the window until the last thread stopped.
    pub drain_s: f64,
    /// Crate or library version.
    pub version: String,
    /// The durable setting and configuration used, in words.
    pub durability: String,
    /// Logical CPUs.
    pub cores: usize,
    /// Kernel release.
    pub kernel: String,
    /// File system type of the data directory.
    pub fs_type: String,
    /// Git revision of the braid tree.
    pub git_rev: String,
}

impl Row {
    /// A row with the figures of `m` and nothing else filled in.
    pub fn measured(m: &Measured) -> Row {
        let per_s = m.per_s();
        Row {
            valid: true,
            per_s,
            per_s_min: per_s,
            per_s_max: per_s,
            repeats: 1,
            thread_min_per_s: m.thread_min_per_s().unwrap_or(0.0),
            thread_max_per_s: m.thread_max_per_s().unwrap_or(0.0),
            p50_us: m.us(50.0),
            p99_us: m.us(99.0),
            p999_us: m.us(99.9),
            mean_us: m.mean_us(),
            syncs_per_s: m.sync.syncs_per_s,
            bytes_per_sync: m.sync.bytes_per_sync,
            sync_source: Some(crate::systems::SYNC_SOURCE.to_string()),
            own_flushes_per_s: m.sync.own_flushes_per_s,
            aborts_per_s: Some(m.aborts_per_s()),
            retries: Some(m.retries),
            ops: m.ops,
            seconds: m.window.as_secs_f64(),
            late_ops: m.late_ops,
            drain_s: m.drain.as_secs_f64(),
            ..Row::default()
        }
    }

    /// The row of a point where `failed` of this system's `repeats` runs failed: no figures
    /// (no median of the runs that survived), the point invalid.
    pub fn failed(point: &Point, failed: usize, repeats: usize) -> Row {
        Row {
            workload: point.workload.clone(),
            system: point.system.clone(),
            variant: point.variant.clone(),
            threads: point.threads,
            branches: point.branches,
            record_bytes: point.record_bytes,
            valid: false,
            failed_runs: failed,
            repeats,
            per_s: f64::NAN,
            per_s_min: f64::NAN,
            per_s_max: f64::NAN,
            thread_min_per_s: f64::NAN,
            thread_max_per_s: f64::NAN,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            mean_us: f64::NAN,
            seconds: f64::NAN,
            drain_s: f64::NAN,
            ..Row::default()
        }
    }

    /// The median run of `runs` (of one point, by `per_s`; the upper median of an even
    /// count), with the count and the range of all of them.
    pub fn median_of(mut runs: Vec<Row>) -> Option<Row> {
        runs.sort_by(|a, b| a.per_s.total_cmp(&b.per_s));
        let n = runs.len();
        let (lo, hi) = (runs.first()?.per_s, runs.last()?.per_s);
        let mut mid = runs.swap_remove(n / 2);
        mid.repeats = n;
        mid.per_s_min = lo;
        mid.per_s_max = hi;
        Some(mid)
    }

    /// The row of one point from its runs: the median if all `repeats` succeeded, else
    /// [`Row::failed`].
    pub fn of_point(point: &Point, runs: Vec<Row>, repeats: usize) -> Option<Row> {
        let failed = repeats.saturating_sub(runs.len());
        if failed > 0 {
            Some(Row::failed(point, failed, repeats))
        } else {
            Row::median_of(runs)
        }
    }

    /// braid's own rows (compared with the peers, never one of them).
    pub fn is_braid(&self) -> bool {
        self.system.starts_with("braid")
    }

    /// The system with its variant, as tables and plots label it (`rocksdb default`,
    /// `rocksdb tuned`).
    pub fn label(&self) -> String {
        let v = &self.variant;
        if v.is_empty() || self.system.ends_with(v.as_str()) {
            self.system.clone()
        } else {
            format!("{} {v}", self.system)
        }
    }

    fn same_point(&self, o: &Row) -> bool {
        self.workload == o.workload
            && self.threads == o.threads
            && self.record_bytes == o.record_bytes
            && self.branches == o.branches
    }
}

/// What names one system's row at one point.
#[derive(Debug, Clone)]
pub struct Point {
    /// The workload.
    pub workload: String,
    /// The system's name.
    pub system: String,
    /// Its variant.
    pub variant: String,
    /// Threads.
    pub threads: usize,
    /// Record or value size.
    pub record_bytes: Option<usize>,
    /// TPC-B's branches (tpcb only).
    pub branches: Option<u64>,
}

/// The workload name of appends of `bytes`-byte records: `append-128`, `append-4k`.
pub fn append_workload(bytes: usize) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("append-{}k", bytes / 1024)
    } else {
        format!("append-{bytes}")
    }
}

/// One table of timed runs (and one plot panel): a workload (and record size); TPC-B's rows
/// in two, one branch per thread and a single branch (the 1-thread row, one branch, is both).
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The rows' workload.
    pub workload: String,
    /// The rows' record size.
    pub record_bytes: Option<usize>,
    /// TPC-B only: `Some(true)` a single branch, `Some(false)` one branch per thread.
    pub single_branch: Option<bool>,
}

impl Group {
    /// The groups `r` belongs to.
    pub fn of(r: &Row) -> Vec<Group> {
        let g = |single_branch| Group {
            workload: r.workload.clone(),
            record_bytes: r.record_bytes,
            single_branch,
        };
        match r.branches {
            Some(b) => {
                let mut v = Vec::new();
                if b == r.threads as u64 {
                    v.push(g(Some(false)));
                }
                if b == 1 {
                    v.push(g(Some(true)));
                }
                v
            }
            None => vec![g(None)],
        }
    }

    /// Whether `r` is in this group.
    pub fn contains(&self, r: &Row) -> bool {
        Group::of(r).contains(self)
    }

    /// Every group of `runs`, in the order they first appear.
    pub fn all(runs: &[Row]) -> Vec<Group> {
        let mut out: Vec<Group> = Vec::new();
        for g in runs.iter().flat_map(Group::of) {
            if !out.contains(&g) {
                out.push(g);
            }
        }
        out
    }

    /// What the group measures, in words, from the report's descriptions of its workloads.
    pub fn title(&self, report: &Report) -> String {
        let described = report
            .workloads
            .iter()
            .find(|w| w.name == self.workload)
            .map(|w| w.description.clone());
        let base = match (self.workload.as_str(), self.record_bytes, described) {
            (w, Some(b), _) if w.starts_with("append") => {
                format!("Log appends, {} records, each durable", table::size(b))
            }
            (_, _, Some(d)) => d,
            ("ycsb", _, None) => match &report.ycsb {
                Some(c) => format!("Durable transactions (YCSB: {})", c.describe()),
                None => "Durable transactions (YCSB)".to_string(),
            },
            (w, _, None) => w.to_string(),
        };
        match self.single_branch {
            Some(true) => format!("{base}; a single branch (every thread updates its row)"),
            Some(false) => format!("{base}; one branch per thread"),
            None => base,
        }
    }
}

/// A workload that ran, in words (the tables' titles).
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadInfo {
    /// Its name in the rows.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// A run that failed, kept in the report.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The workload (as in [`Row::workload`], or `reopen`, `kill`, `memory`).
    pub workload: String,
    /// System name.
    pub system: String,
    /// Its variant.
    pub variant: String,
    /// Threads.
    pub threads: usize,
    /// Record size (append only).
    pub record_bytes: Option<usize>,
    /// TPC-B's branches (tpcb only).
    pub branches: Option<u64>,
    /// The error and its causes.
    pub error: String,
}

/// The reopen workload's result for one system (see [`crate::workload::reopen`]).
#[derive(Debug, Clone, Serialize)]
pub struct ReopenRow {
    /// `reopen`.
    pub workload: String,
    /// System name.
    pub system: String,
    /// `default` or `tuned`.
    pub variant: String,
    /// Crate or library version.
    pub version: String,
    /// Whether the child committed in the system's durable setting.
    pub load_durable: bool,
    /// The setting the child committed under, in words.
    pub load_setting: String,
    /// The child's threads (and the reopened store's).
    pub threads: usize,
    /// Accounts in the table.
    pub accounts: u64,
    /// Transactions committed before the kill.
    pub txns: u64,
    /// Seconds the child took to commit them.
    pub load_seconds: f64,
    /// The child's commits per second.
    pub load_per_s: f64,
    /// Conflicts the child retried.
    pub retries: u64,
    /// Bytes of log files in the store's directory at the kill (their lengths).
    pub log_bytes: u64,
    /// Disk allocated to the log files at the kill (preallocated space included).
    pub log_allocated_bytes: u64,
    /// Bytes of the other files (data) at the kill (their lengths).
    pub data_bytes: u64,
    /// Disk allocated to the data files at the kill.
    pub data_allocated_bytes: u64,
    /// Milliseconds from the start of the reopen until the store answered a read.
    pub reopen_ms: f64,
    /// The best peer's (non-braid, lowest) `reopen_ms` over this one's: above 1 is faster.
    pub ratio_to_best_peer: Option<f64>,
}

/// One round of the kill workload (see [`crate::workload::kill`]).
#[derive(Debug, Clone, Serialize)]
pub struct KillRound {
    /// The round, from 0.
    pub round: u32,
    /// Seconds the child's open took (round 0: create and load; later: recover).
    pub open_seconds: f64,
    /// Milliseconds from the child's threads starting to the kill.
    pub kill_after_ms: f64,
    /// Transactions the child acknowledged in this round.
    pub acked: u64,
    /// Transactions of this round found committed whose acknowledgement was not written
    /// before the kill (at most one per thread).
    pub committed_unacked: u64,
    /// History rows after the reopen (all rounds so far).
    pub history: u64,
    /// Acknowledged transactions (of any round so far) missing after the reopen.
    pub lost: u64,
    /// Where the first lost one is, in words.
    pub lost_example: Option<String>,
    /// Milliseconds from the start of the reopen until the store answered a read.
    pub reopen_ms: f64,
}

/// The kill workload's result for one system: its rounds and their totals.
#[derive(Debug, Clone, Serialize)]
pub struct KillRow {
    /// `kill`.
    pub workload: String,
    /// System name.
    pub system: String,
    /// `default` or `tuned` (see `crate::systems::Variant`).
    pub variant: String,
    /// Crate or library version.
    pub version: String,
    /// The durable setting the child ran under, in words.
    pub durability: String,
    /// The child's threads.
    pub threads: usize,
    /// TPC-B's branches (one per thread).
    pub branches: u64,
    /// Accounts per branch.
    pub accounts_per_branch: u64,
    /// Transactions acknowledged over all rounds.
    pub acked: u64,
    /// Transactions found committed without an acknowledgement, over all rounds.
    pub committed_unacked: u64,
    /// Acknowledged transactions missing at any check (the most at one; a lost transaction
    /// stays lost, so that is the last round's count).
    pub lost: u64,
    /// The median of the rounds' reopen times, milliseconds.
    pub reopen_ms: f64,
    /// The longest reopen, milliseconds.
    pub reopen_ms_max: f64,
    /// Every round.
    pub rounds: Vec<KillRound>,
}

impl KillRow {
    /// The row of `sys` from its `rounds` under `cfg`.
    pub fn new(
        sys: &dyn crate::systems::TxnSystem,
        cfg: &crate::workload::kill::Config,
        rounds: Vec<KillRound>,
    ) -> KillRow {
        let mut reopen: Vec<f64> = rounds.iter().map(|r| r.reopen_ms).collect();
        reopen.sort_by(f64::total_cmp);
        KillRow {
            workload: "kill".into(),
            system: sys.name(),
            variant: sys.variant().as_str().into(),
            version: sys.version(),
            durability: sys.durability(),
            threads: cfg.threads,
            branches: cfg.scale().branches,
            accounts_per_branch: cfg.accounts_per_branch,
            acked: rounds.iter().map(|r| r.acked).sum(),
            committed_unacked: rounds.iter().map(|r| r.committed_unacked).sum(),
            lost: rounds.iter().map(|r| r.lost).max().unwrap_or(0),
            reopen_ms: reopen.get(reopen.len() / 2).copied().unwrap_or(0.0),
            reopen_ms_max: reopen.last().copied().unwrap_or(0.0),
            rounds,
        }
    }
}

/// A line of `peers-kill.csv`: one round of one system (see [`KillRound`]).
#[derive(Debug, Serialize)]
struct KillCsv<'a> {
    system: &'a str,
    variant: &'a str,
    threads: usize,
    round: u32,
    open_seconds: f64,
    kill_after_ms: f64,
    acked: u64,
    committed_unacked: u64,
    history: u64,
    lost: u64,
    reopen_ms: f64,
    lost_example: Option<&'a str>,
}

/// The memory workload's result for one system (see [`crate::workload::memory`]).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryRow {
    /// System name.
    pub system: String,
    /// `default` or `tuned`.
    pub variant: String,
    /// Crate or library version.
    pub version: String,
    /// An in-memory engine (every row resident), rather than one paging from disk.
    pub in_memory: bool,
    /// What the system caches, in words.
    pub cache_setting: String,
    /// Rows loaded (8-byte key, 8-byte balance).
    pub rows: u64,
    /// VmRSS before the open, bytes.
    pub rss_before_bytes: u64,
    /// VmRSS after the load, bytes.
    pub rss_after_bytes: u64,
    /// (after - before) / rows.
    pub bytes_per_row: f64,
}

/// Everything one invocation measured.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The machine and tree.
    pub machine: Machine,
    /// Seconds each run was timed.
    pub seconds_per_run: f64,
    /// Runs of every point; each row is the median one.
    pub repeat: usize,
    /// Accounts in the transaction workload's table (and the reopen workload's).
    pub accounts: u64,
    /// The YCSB workload's parameters (the 2-access `ycsb`), if it ran.
    pub ycsb: Option<crate::workload::ycsb::Config>,
    /// TPC-B's parameters, if tpcb or kill ran.
    pub tpcb: Option<crate::workload::tpcb::Params>,
    /// The kill workload's settings, if it ran.
    pub kill_config: Option<crate::workload::kill::Config>,
    /// Every workload that ran, in words.
    pub workloads: Vec<WorkloadInfo>,
    /// How the reopen workload measures, in words, if it ran.
    pub reopen_method: Option<String>,
    /// How the memory workload measures, in words, if it ran.
    pub memory_method: Option<String>,
    /// The timed runs.
    pub runs: Vec<Row>,
    /// Reopen after `kill -9`, one row per system.
    pub reopen: Vec<ReopenRow>,
    /// `kill -9` under load, one row per system.
    pub kill: Vec<KillRow>,
    /// Resident memory per row, one row per system.
    pub memory: Vec<MemoryRow>,
    /// Runs that failed.
    pub failures: Vec<Failure>,
}

impl Report {
    /// Stamp every row with the machine, mark the rows of a point where a run failed
    /// invalid, and compute every other row's ratio to the best peer.
    pub fn finish(&mut self) {
        let invalid: Vec<bool> = self
            .runs
            .iter()
            .map(|r| {
                self.runs
                    .iter()
                    .any(|o| o.same_point(r) && o.failed_runs > 0)
            })
            .collect();
        let best: Vec<Option<(f64, String)>> = self
            .runs
            .iter()
            .map(|r| {
                self.runs
                    .iter()
                    .filter(|o| !o.is_braid() && o.same_point(r))
                    .fold(None, |b: Option<(f64, String)>, o| match b {
                        Some((x, _)) if x >= o.per_s => b,
                        _ => Some((o.per_s, o.system.clone())),
                    })
            })
            .collect();
        for ((r, best), invalid) in self.runs.iter_mut().zip(best).zip(invalid) {
            r.valid = !invalid;
            let best = best.filter(|(b, _)| *b > 0.0 && !invalid);
            r.ratio_to_best_peer = best.as_ref().map(|(b, _)| r.per_s / b);
            r.best_peer = best.map(|(_, name)| name);
            r.cores = self.machine.cores;
            r.kernel.clone_from(&self.machine.kernel);
            r.fs_type.clone_from(&self.machine.fs_type);
            r.git_rev.clone_from(&self.machine.git_rev);
        }
        let best_reopen = self
            .reopen
            .iter()
            .filter(|r| !r.system.starts_with("braid"))
            .map(|r| r.reopen_ms)
            .fold(None, |b: Option<f64>, x| Some(b.map_or(x, |b| b.min(x))));
        for r in &mut self.reopen {
            r.ratio_to_best_peer = best_reopen
                .filter(|_| r.reopen_ms > 0.0)
                .map(|b| b / r.reopen_ms);
        }
    }

    /// Write `peers.json` and `peers.csv` into `out`.
    pub fn write(&self, out: &Path) -> Result<()> {
        std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
        let json = out.join("peers.json");
        std::fs::write(&json, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("write {}", json.display()))?;
        let csv_path = out.join("peers.csv");
        let mut w = csv::Writer::from_path(&csv_path)
            .with_context(|| format!("write {}", csv_path.display()))?;
        for r in &self.runs {
            w.serialize(r)?;
        }
        w.flush()?;
        write_csv(&out.join("peers-reopen.csv"), &self.reopen)?;
        let kill: Vec<KillCsv<'_>> = self
            .kill
            .iter()
            .flat_map(|k| {
                k.rounds.iter().map(move |r| KillCsv {
                    system: &k.system,
                    variant: &k.variant,
                    threads: k.threads,
                    round: r.round,
                    open_seconds: r.open_seconds,
                    kill_after_ms: r.kill_after_ms,
                    acked: r.acked,
                    committed_unacked: r.committed_unacked,
                    history: r.history,
                    lost: r.lost,
                    reopen_ms: r.reopen_ms,
                    lost_example: r.lost_example.as_deref(),
                })
            })
            .collect();
        write_csv(&out.join("peers-kill.csv"), &kill)?;
        write_csv(&out.join("peers-memory.csv"), &self.memory)?;
        Ok(())
    }
}

/// Write `rows` as CSV to `path`, or remove a stale `path` if there are none.
fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    if rows.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("remove {}", path.display()))
            }
            _ => Ok(()),
        };
    }
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("write {}", path.display()))?;
    for r in rows {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, threads: usize, per_s: f64) -> Row {
        Row {
            workload: append_workload(128),
            system: system.into(),
            variant: if system.ends_with("tuned") {
                "tuned"
            } else {
                "default"
            }
            .into(),
            threads,
            record_bytes: Some(128),
            per_s,
            ..Row::default()
        }
    }

    fn report(runs: Vec<Row>) -> Report {
        Report {
            machine: Machine::probe(Path::new("/")),
            seconds_per_run: 1.0,
            repeat: 3,
            accounts: 10,
            ycsb: None,
            tpcb: None,
            kill_config: None,
            workloads: vec![],
            reopen_method: None,
            memory_method: None,
            reopen: vec![],
            kill: vec![],
            memory: vec![],
            runs,
            failures: vec![],
        }
    }

    #[test]
    fn ratios_are_to_the_best_peer_at_the_same_point() {
        let mut r = report(vec![
            row("braid-wal serial", 1, 300.0),
            row("rocksdb", 1, 100.0),
            row("fjall", 1, 150.0),
            row("fjall tuned", 1, 200.0),
            row("braid-wal serial", 4, 50.0),
            row("rocksdb", 4, 100.0),
        ]);
        r.finish();
        let ratios: Vec<_> = r.runs.iter().map(|x| x.ratio_to_best_peer).collect();
        assert_eq!(
            ratios,
            vec![
                Some(1.5),
                Some(0.5),
                Some(0.75),
                Some(1.0),
                Some(0.5),
                Some(1.0)
            ]
        );
        assert_eq!(r.runs[0].best_peer.as_deref(), Some("fjall tuned"));
        assert!(r.runs.iter().all(|x| x.valid));
        let text = table::render(&r);
        assert!(text.contains("Log appends, 128 B records"));
        assert!(text.contains("1.50x"));
        assert!(text.contains("fjall tuned"));
        assert!(text.contains("rocksdb default"));
    }

    /// A point where one run of one system failed: that system's row has no figures (not
    /// the median of its two runs that succeeded), every row there is invalid and has no
    /// ratio, and the other points are untouched.
    #[test]
    fn a_failed_run_makes_its_point_invalid() {
        let point = Point {
            workload: append_workload(128),
            system: "rocksdb".into(),
            variant: "default".into(),
            threads: 4,
            record_bytes: Some(128),
            branches: None,
        };
        let survivors = vec![row("rocksdb", 4, 90.0), row("rocksdb", 4, 110.0)];
        let Some(failed) = Row::of_point(&point, survivors, 3) else {
            panic!("a failed point still has a row");
        };
        assert_eq!(failed.failed_runs, 1);
        assert!(failed.per_s.is_nan(), "{}", failed.per_s);
        let all = vec![
            row("rocksdb", 1, 1.0),
            row("rocksdb", 1, 2.0),
            row("rocksdb", 1, 3.0),
        ];
        let Some(median) = Row::of_point(&point, all, 3) else {
            panic!("a point has a row");
        };
        assert_eq!(
            (median.per_s, median.repeats, median.failed_runs),
            (2.0, 3, 0)
        );

        let mut r = report(vec![
            row("braid-wal serial", 1, 300.0),
            row("rocksdb", 1, 100.0),
            row("braid-wal serial", 4, 50.0),
            failed,
            row("fjall", 4, 100.0),
        ]);
        r.finish();
        let valid: Vec<_> = r.runs.iter().map(|x| x.valid).collect();
        assert_eq!(valid, [true, true, false, false, false]);
        let ratios: Vec<_> = r.runs.iter().map(|x| x.ratio_to_best_peer).collect();
        assert_eq!(ratios, [Some(3.0), Some(1.0), None, None, None]);
        let json = serde_json::to_value(&r.runs[3]).unwrap_or_default();
        assert!(json["per_s"].is_null(), "{json}");
        let text = table::render(&r);
        assert!(text.contains("INVALID: 1 of 3 runs failed"), "{text}");
        assert!(text.contains("invalid"), "{text}");
    }

    #[test]
    fn tpcb_rows_group_by_branches_and_compare_at_their_own() {
        let tpcb = |system: &str, threads: usize, branches: u64, per_s: f64| Row {
            workload: "tpcb".into(),
            system: system.into(),
            threads,
            branches: Some(branches),
            per_s,
            ..Row::default()
        };
        let mut r = Report {
            machine: Machine::probe(Path::new("/")),
            seconds_per_run: 1.0,
            repeat: 1,
            accounts: 10,
            ycsb: None,
            tpcb: None,
            kill_config: None,
            workloads: vec![],
            reopen_method: None,
            memory_method: None,
            reopen: vec![],
            kill: vec![],
            memory: vec![],
            runs: vec![
                tpcb("braid-engine serial", 1, 1, 10.0),
                tpcb("sqlite", 1, 1, 5.0),
                tpcb("braid-engine serial", 4, 4, 40.0),
                tpcb("sqlite", 4, 4, 20.0),
                tpcb("braid-engine serial", 4, 1, 30.0),
                tpcb("sqlite", 4, 1, 3.0),
            ],
            failures: vec![],
        };
        r.finish();
        let ratios: Vec<_> = r.runs.iter().map(|x| x.ratio_to_best_peer).collect();
        assert_eq!(
            ratios,
            vec![
                Some(2.0),
                Some(1.0),
                Some(2.0),
                Some(1.0),
                Some(10.0),
                Some(1.0)
            ]
        );
        let groups = Group::all(&r.runs);
        assert_eq!(groups.len(), 2);
        assert_eq!(r.runs.iter().filter(|x| groups[0].contains(x)).count(), 4);
        assert_eq!(r.runs.iter().filter(|x| groups[1].contains(x)).count(), 4);
        assert_eq!(append_workload(4096), "append-4k");
        assert_eq!(append_workload(100), "append-100");
    }
}
