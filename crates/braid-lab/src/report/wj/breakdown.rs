//! Wang & Johnson's time breakdowns (Figs. 5 and 7): the paper splits Shore-MT's time with
//! perf stack samples of every thread into log work, log contention, other contention and
//! other work. braid runs no profiler; it splits the CPU time of one committed transaction of
//! a gsn variant at each thread count, every thread of the engine counted (the workers and the
//! log's own threads: flushers, the commit daemon; read from `/proc` by `braid bench`, see
//! `crate::bench::cpu`), with the workers' own timers from the same runs (see [`Split`]), and
//! draws one stacked bar per workload and thread count.

use crate::bench::ConfigResult;
use crate::common::NONE;
use crate::report::plot::Stack;
use crate::report::verdict::{cpu_per_txn, log_threads_per_txn, worker_cpu};

/// The segments of a bar, bottom first.
pub const SEGMENTS: [&str; 6] = [
    "other work (the transaction without logging, 1 thread)",
    "other contention (its growth to N threads)",
    "log work (log insertion, 1 thread)",
    "log contention (insertion's growth to N threads)",
    "log work on the log's own threads (flushers, commit daemon)",
    "other logging cost",
];

/// How the split is made, for an entry's `scaled` text.
pub const HOW: &str = "The paper splits Shore-MT's time with perf stack samples of every \
    thread; braid runs no profiler and splits the CPU time of a committed transaction, every \
    thread of the engine counted (the workers and the log's own threads: flushers and the \
    commit daemon, read from /proc over each run and divided by its committed transactions), \
    with what bench measures in the same runs: *other work* is `none`'s (no logging) CPU time \
    per transaction at 1 thread (braid's index, record and locking work: it has no buffer or \
    lock manager of its own), *other contention* what that time grows by from 1 to N threads; \
    *log work* the variant's log insertion time in the worker at 1 thread (sampled on one \
    transaction in 16; a wall-clock timer, counted as CPU time by the share of their runnable \
    time the workers spent on a CPU, from /proc's run-queue wait, so a loaded machine's \
    preemptions do not count as log work), *log contention* what insertion grows by from 1 to N threads; *log work \
    on the log's own threads* the CPU time of its flushers and commit daemon at N threads; \
    *other logging cost* the rest of the workers' CPU time (waiting for durability by \
    spinning, cache misses the log causes; 0 where the measured parts exceed the total). Time a \
    thread spends blocked is no CPU time and is in no bar, as in the paper's samples. The \
    bars are shares of the total.";

/// One committed transaction's CPU time at one thread count, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub threads: usize,
    /// Every engine thread's CPU time per committed transaction.
    pub total: f64,
    pub other_work: f64,
    pub other_contention: f64,
    pub log_work: f64,
    pub log_contention: f64,
    /// The log's own threads (flushers, commit daemon) per committed transaction.
    pub log_threads: f64,
    /// The rest; negative when the measured parts exceed the total.
    pub rest: f64,
}

impl Split {
    pub fn share(&self, ns: f64) -> f64 {
        ns / self.total.max(1.0)
    }

    /// The segments as shares of the total, in [`SEGMENTS`]' order (the rest at least 0).
    pub fn shares(&self) -> [f64; 6] {
        [
            self.share(self.other_work),
            self.share(self.other_contention),
            self.share(self.log_work),
            self.share(self.log_contention),
            self.share(self.log_threads),
            self.share(self.rest.max(0.0)),
        ]
    }

    /// Everything logging costs, as a share: log work and contention, the log's own threads
    /// and the rest.
    pub fn logging(&self) -> f64 {
        let s = self.shares();
        s[2] + s[3] + s[4] + s[5]
    }

    /// The shares as text.
    pub fn text(&self) -> String {
        let s = self.shares();
        format!(
            "at {} threads: other work {:.1}%, other contention {:.1}%, log work {:.1}%, log \
             contention {:.1}%, the log's own threads {:.1}%, other logging cost {:.1}% (of \
             {:.2} us of CPU per transaction)",
            self.threads,
            s[0] * 100.0,
            s[1] * 100.0,
            s[2] * 100.0,
            s[3] * 100.0,
            s[4] * 100.0,
            s[5] * 100.0,
            self.total / 1e3
        )
    }
}

/// The split of the gsn variant `label` at `threads` among one workload's `rows`, with `none`
/// and the variant at 1 thread from the same rows; `None` if one of them is missing or its
/// CPU time was not read.
pub fn split(rows: &[&ConfigResult], label: &str, threads: usize) -> Option<Split> {
    let find = |scheme: &str, t: usize| {
        rows.iter().copied().find(|c| {
            c.scheme == scheme && (scheme == NONE || c.variant == label) && c.threads == t
        })
    };
    let (c, one, none, none1) = (
        find("gsn", threads)?,
        find("gsn", 1)?,
        find(NONE, threads)?,
        find(NONE, 1)?,
    );
    let total = cpu_per_txn(c)?;
    let other_work = cpu_per_txn(none1)?;
    let other_contention = (cpu_per_txn(none)? - other_work).max(0.0);
    let log_work = worker_cpu(one, one.log_insert_ns);
    let log_contention = (worker_cpu(c, c.log_insert_ns) - log_work).max(0.0);
    let log_threads = log_threads_per_txn(c);
    Some(Split {
        threads,
        total,
        other_work,
        other_contention,
        log_work,
        log_contention,
        log_threads,
        rest: total - other_work - other_contention - log_work - log_contention - log_threads,
    })
}

/// The rows of the run with x value `x`.
pub fn of(rows: &[(f64, ConfigResult)], x: f64) -> Vec<&ConfigResult> {
    rows.iter()
        .filter(|(v, _)| *v == x)
        .map(|(_, c)| c)
        .collect()
}

/// The splits of `label` in the run with x value `x`, by thread count.
pub fn splits(rows: &[(f64, ConfigResult)], x: f64, label: &str) -> Vec<Split> {
    let of = of(rows, x);
    let mut threads: Vec<usize> = of
        .iter()
        .filter(|c| c.variant == label)
        .map(|c| c.threads)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    threads
        .into_iter()
        .filter_map(|t| split(&of, label, t))
        .collect()
}

/// One stacked bar per run (titled by `titles`, the run with x value i the i-th) and thread
/// count of `label`, each segment a share of the total.
pub fn stacks(rows: &[(f64, ConfigResult)], titles: &[&str], label: &str) -> Vec<Stack> {
    let mut out = Vec::new();
    for (i, title) in titles.iter().enumerate() {
        for s in splits(rows, i as f64, label) {
            out.push(Stack::of_shares(
                format!("{title} {}t", s.threads),
                &SEGMENTS,
                &s.shares(),
            ));
        }
    }
    out
}

#[cfg(test)]
pub mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::bench::cpu::WORKER;

    /// A result of `scheme` (variant `label` unless `none`) at `threads` with `tps` committed
    /// txn/s and `insert` ns of log insertion, its workers busy all the time (CPU time per
    /// transaction: threads over txn/s) and the log's threads idle.
    pub fn row(scheme: &str, label: &str, threads: usize, tps: f64, insert: f64) -> ConfigResult {
        ConfigResult {
            scheme: scheme.to_string(),
            variant: label.to_string(),
            threads,
            txn_per_s: tps,
            log_insert_ns: insert,
            cpu_ns_per_txn: [(WORKER.to_string(), threads as f64 * 1e9 / tps)].into(),
            ..ConfigResult::default()
        }
    }

    /// `c` with its log's threads taking `ns` of CPU per transaction (`role`).
    pub fn with_log_threads(mut c: ConfigResult, role: &str, ns: f64) -> ConfigResult {
        c.cpu_ns_per_txn.insert(role.to_string(), ns);
        c
    }

    #[test]
    fn split_adds_up_and_clips_the_rest() {
        // none: 1 us per transaction at 1 thread, 1.5 us at 2; TX-D: 2 us and 3 us of the
        // workers' CPU, inserts 300 ns and 500 ns, and its flushers 400 ns at 2 threads.
        let rows = [
            row(NONE, "", 1, 1e6, 0.0),
            row(NONE, "", 2, 2e6 / 1.5, 0.0),
            row("gsn", "TX-D", 1, 5e5, 300.0),
            with_log_threads(row("gsn", "TX-D", 2, 2e6 / 3.0, 500.0), "flusher", 400.0),
        ];
        let refs: Vec<&ConfigResult> = rows.iter().collect();
        let s = split(&refs, "TX-D", 2).unwrap();
        assert!((s.total - 3400.0).abs() < 1e-6);
        assert!((s.other_work - 1000.0).abs() < 1e-6);
        assert!((s.other_contention - 500.0).abs() < 1e-6);
        assert!((s.log_work - 300.0).abs() < 1e-6);
        assert!((s.log_contention - 200.0).abs() < 1e-6);
        assert!((s.log_threads - 400.0).abs() < 1e-6);
        assert!((s.rest - 1000.0).abs() < 1e-6);
        assert!((s.shares().iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((s.logging() - 1900.0 / 3400.0).abs() < 1e-9);
        assert!(split(&refs, "TX-V", 2).is_none());
        // The workers waited on a run queue for half their runnable time: their wall-clock
        // insertion timer counts half as CPU time.
        let mut loaded = rows.clone();
        for c in &mut loaded {
            c.workers_on_cpu = Some(0.5);
        }
        let refs: Vec<&ConfigResult> = loaded.iter().collect();
        let s = split(&refs, "TX-D", 2).unwrap();
        assert!((s.log_work - 150.0).abs() < 1e-6);
        assert!((s.log_contention - 100.0).abs() < 1e-6);
        assert!((s.rest - 1250.0).abs() < 1e-6);
        // A run whose CPU time was not read has no split.
        let mut unread = rows.clone();
        unread[3].cpu_ns_per_txn.clear();
        let refs: Vec<&ConfigResult> = unread.iter().collect();
        assert!(split(&refs, "TX-D", 2).is_none());
    }
}
