//! What an experiment measured ([`Measured`]): bench results and recoveries looked up by run,
//! scheme, variant, logging kind and threads ([`Key`]); the quantities the verdicts derive
//! from a configuration's result (CPU time per transaction, the log threads' share,
//! transactions per flush); and how the verdicts write numbers (`1.23x`, `123.4 K`, `12%`).

use serde::Serialize;

use crate::bench::ConfigResult;

/// Everything one experiment measured.
#[derive(Debug, Default)]
pub struct Measured {
    /// Bench results of each run: its id, its x value, its configurations.
    pub runs: Vec<(String, Option<f64>, Vec<ConfigResult>)>,
    pub recoveries: Vec<RecoveryRow>,
    /// `braid bench rewind`'s JSON.
    pub rewind: Option<serde_json::Value>,
}

/// One recovery configuration: the median of its repeated recoveries.
#[derive(Debug, Clone, Serialize)]
pub struct RecoveryRow {
    pub run: String,
    pub x: Option<f64>,
    pub scheme: String,
    pub variant: String,
    pub logging: String,
    pub device: String,
    pub threads: usize,
    /// The taurus plan asked for (`auto`, `parallel`, `serial`), or "" for other schemes.
    pub plan_asked: String,
    /// The plan recovery used (taurus), or "".
    pub plan_used: String,
    pub txns: u64,
    pub txn_per_s: f64,
    /// Each recovery's txn/s.
    pub repeats: Vec<f64>,
}

/// What to look a configuration up by (`variant` "" for the schemes' defaults).
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    pub scheme: &'a str,
    pub variant: &'a str,
    pub logging: &'a str,
    pub threads: usize,
}

/// `scheme` with data logging at its defaults, at `threads`.
pub fn data(scheme: &str, threads: usize) -> Key<'_> {
    Key {
        scheme,
        variant: "",
        logging: "data",
        threads,
    }
}

impl<'a> Key<'a> {
    pub fn variant(mut self, v: &'a str) -> Key<'a> {
        self.variant = v;
        self
    }
    pub fn command(mut self) -> Key<'a> {
        self.logging = "command";
        self
    }
}

impl Measured {
    /// The results of run `id`.
    pub fn run(&self, id: &str) -> &[ConfigResult] {
        self.runs
            .iter()
            .find(|(r, _, _)| r == id)
            .map(|(_, _, c)| c.as_slice())
            .unwrap_or(&[])
    }

    /// The configuration of run `id` that `k` names (no logging: `none` at `k.threads`).
    pub fn get(&self, id: &str, k: Key<'_>) -> Option<&ConfigResult> {
        self.run(id).iter().find(|c| {
            c.scheme == k.scheme
                && c.threads == k.threads
                && (c.scheme == crate::common::NONE
                    || (c.variant == k.variant && c.logging == k.logging))
        })
    }

    /// Median txn/s of what `k` names in run `id`.
    pub fn tps(&self, id: &str, k: Key<'_>) -> Option<f64> {
        self.get(id, k).map(|c| c.txn_per_s)
    }

    /// The recovery row of run `id` for `k` (threads: recovery threads) and `plan` asked.
    pub fn recovery(&self, id: &str, k: Key<'_>, plan: &str) -> Option<&RecoveryRow> {
        self.recoveries.iter().find(|r| {
            r.run == id
                && r.scheme == k.scheme
                && r.variant == k.variant
                && r.logging == k.logging
                && r.threads == k.threads
                && r.plan_asked == plan
        })
    }
}

/// Every engine thread's CPU time per committed transaction of `c`, ns: its workers and the
/// log's own threads (flushers, daemons, ...), not the bench's own thread (see
/// `crate::bench::cpu`); `None` where it was not read. What the time breakdowns split.
pub fn cpu_per_txn(c: &ConfigResult) -> Option<f64> {
    if c.cpu_ns_per_txn.is_empty() {
        return None;
    }
    Some(
        c.cpu_ns_per_txn
            .iter()
            .filter(|(r, _)| r.as_str() != crate::bench::cpu::HARNESS)
            .fold(0.0, |a, (_, v)| a + v),
    )
}

/// A worker-side timer's `ns` of `c` (log insertion, locks, access hooks, aborted attempts:
/// wall time on the worker) as CPU time: times the workers' share of their runnable time on a
/// CPU ([`crate::bench::cpu::CpuTime::workers_on_cpu`]), since a worker waiting for a CPU
/// inside a timed stretch lengthens it without working; unchanged where that share was not
/// read.
pub fn worker_cpu(c: &ConfigResult, ns: f64) -> f64 {
    ns * c.workers_on_cpu.unwrap_or(1.0)
}

/// The CPU time of `c`'s log threads (flushers, daemons, backup, destage, checkpoint; see
/// `crate::bench::cpu::is_log_thread`) per committed transaction, ns (0 where none ran or
/// it was not read).
pub fn log_threads_per_txn(c: &ConfigResult) -> f64 {
    c.cpu_ns_per_txn
        .iter()
        .filter(|(r, _)| crate::bench::cpu::is_log_thread(r))
        .fold(0.0, |a, (_, v)| a + v)
}

/// `c`'s log threads' CPU per committed transaction by role, as "flusher 120 ns, daemon 40 ns"
/// ("none" where none ran).
pub fn log_threads_text(c: &ConfigResult) -> String {
    let t: Vec<String> = c
        .cpu_ns_per_txn
        .iter()
        .filter(|(r, _)| crate::bench::cpu::is_log_thread(r))
        .map(|(r, v)| format!("{r} {v:.0} ns"))
        .collect();
    if t.is_empty() {
        "none".to_string()
    } else {
        t.join(", ")
    }
}

/// Transactions per log flush over the runs of `c` (group commit's batch size).
pub fn per_flush(c: &ConfigResult) -> f64 {
    let (commits, flushes) = c
        .runs
        .iter()
        .fold((0u64, 0u64), |(a, b), r| (a + r.commits, b + r.log_flushes));
    commits as f64 / flushes.max(1) as f64
}

/// `x` as "1.23x" (or "42.6x" from 10 up).
pub fn times(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

/// `x` txn/s as "123.4 K".
pub fn k(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else {
        format!("{:.1} K", x / 1e3)
    }
}

/// `x` as a percentage.
pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}
