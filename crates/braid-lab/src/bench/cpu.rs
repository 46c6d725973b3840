//! Every thread's CPU time over a bench run's measured window, grouped by what the thread does
//! (its role): the time breakdowns of the report (Wang & Johnson Figs. 5 and 7, NV-Logging
//! Fig. 15, Taurus Fig. 15) count the log's own threads (flushers, commit daemons, the backup
//! thread) with the workers, as the papers' perf samples of every thread did.
//!
//! How: Linux keeps each thread's CPU time in `/proc/self/task/<tid>/schedstat` (its first
//! field, nanoseconds on a CPU; `stat`'s utime + stime in clock ticks where scheduler
//! statistics are off). The bench reads every thread of the process just before its workers
//! start and just after they have all finished (the log's threads still live then: the
//! database is not yet closed), and each worker reads its own time when it starts and when it
//! ends, since it is gone by the second reading. A thread is given its role by its name
//! (`comm`, cut to 15 bytes by the kernel): braid names every thread it starts. The
//! process's total over the window (`/proc/self/stat`, in clock ticks, which counts threads
//! that exited within the window too, such as a RAID-0 flush's per-device writers) is kept
//! beside the roles as a check.
//!
//! A value read for a thread that is on a CPU lags by at most one scheduler tick (the kernel
//! brings a running thread's sum up to date at its ticks and switches), a few milliseconds
//! over runs of about a second.

use std::collections::BTreeMap;

use serde::Serialize;

/// The roles, in the order tables show them, with the thread-name prefixes that give them
/// (names as the kernel keeps them: at most 15 bytes).
pub const ROLES: [(&str, &[&str]); 8] = [
    ("worker", &["braid-worker"]),
    ("flusher", &["braid-flush"]),
    (
        "daemon",
        &["braid-gsn-commi", "braid-pertxn-fl", "braid-silor-epo"],
    ),
    ("backup", &["braid-pertxn-ba"]),
    ("destage", &["braid-destage"]),
    ("checkpoint", &["braid-checkpoi"]),
    ("harness", &[]),
    ("exited", &[]),
];

/// The workers' role.
pub const WORKER: &str = "worker";
/// The bench itself (its main thread, progress bars) and any thread braid did not name.
pub const HARNESS: &str = "harness";
/// What the process spent beyond the threads alive at the end of the window (threads that
/// exited within it), from the process's total; at least 0, in clock ticks.
pub const EXITED: &str = "exited";

/// The name braid gives bench worker `i`'s thread.
pub fn worker_name(i: usize) -> String {
    format!("braid-worker-{i}")
}

/// The role of a thread named `comm`.
pub fn role(comm: &str) -> &'static str {
    ROLES
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| comm.starts_with(p)))
        .map_or(HARNESS, |(r, _)| *r)
}

/// Whether `role` is one of the log's own threads, neither a worker nor the bench itself:
/// flushers, daemons, the backup and destage threads, the checkpoint thread (it exists to
/// truncate the log), and threads that exited within the window (RAID-0's per-device writers
/// of one flush). The breakdowns count them as log work beside the workers' log insertion.
pub fn is_log_thread(role: &str) -> bool {
    !matches!(role, WORKER | HARNESS)
}

/// Clock ticks per second of `/proc`'s utime and stime (`USER_HZ`: 100 on every Linux
/// architecture braid builds for).
const TICKS_PER_S: u64 = 100;

/// A thread's CPU time and its time runnable but waiting for a CPU (on a run queue), ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadTimes {
    pub cpu_ns: u64,
    /// `None` where scheduler statistics are off.
    pub runqueue_ns: Option<u64>,
}

/// The CPU time and run-queue wait of a thread's `schedstat` text, ns (its first two
/// fields); `None` if scheduler statistics are off (all fields 0) or the text is not one.
fn schedstat(text: &str) -> Option<ThreadTimes> {
    let mut f = text.split_whitespace();
    let ns: u64 = f.next()?.parse().ok()?;
    let wait: u64 = f.next()?.parse().ok()?;
    let slices: u64 = f.next()?.parse().ok()?;
    (ns > 0 || wait > 0 || slices > 0).then_some(ThreadTimes {
        cpu_ns: ns,
        runqueue_ns: Some(wait),
    })
}

/// The CPU time of a thread's `schedstat` text, ns.
#[cfg(test)]
fn schedstat_ns(text: &str) -> Option<u64> {
    schedstat(text).map(|t| t.cpu_ns)
}

/// utime + stime of a `stat` text (a thread's or the process's), ns.
fn stat_ns(text: &str) -> Option<u64> {
    // The name in parentheses may hold spaces: the fields that follow start after its ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) * (1_000_000_000 / TICKS_PER_S))
}

/// The times of the thread whose `/proc` directory is `dir`.
fn thread_times(dir: &std::path::Path) -> Option<ThreadTimes> {
    std::fs::read_to_string(dir.join("schedstat"))
        .ok()
        .and_then(|t| schedstat(&t))
        .or_else(|| {
            std::fs::read_to_string(dir.join("stat"))
                .ok()
                .and_then(|t| stat_ns(&t))
                .map(|cpu_ns| ThreadTimes {
                    cpu_ns,
                    runqueue_ns: None,
                })
        })
}

/// The CPU time of the thread whose `/proc` directory is `dir`, ns.
fn thread_ns(dir: &std::path::Path) -> Option<u64> {
    thread_times(dir).map(|t| t.cpu_ns)
}

/// The calling thread's times so far; `None` off Linux.
pub fn this_thread() -> Option<ThreadTimes> {
    thread_times(std::path::Path::new("/proc/thread-self"))
}

impl ThreadTimes {
    /// What passed from `start` to `self` (a later reading of the same thread).
    pub fn since(self, start: ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu_ns: self.cpu_ns.saturating_sub(start.cpu_ns),
            runqueue_ns: self
                .runqueue_ns
                .zip(start.runqueue_ns)
                .map(|(a, b)| a.saturating_sub(b)),
        }
    }
}

/// Every thread of the process at one moment: its id, name and CPU time (ns), and the
/// process's total (ns, clock-tick resolution, exited threads included).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    threads: BTreeMap<u32, (String, u64)>,
    process_ns: Option<u64>,
}

impl Snapshot {
    /// Read `/proc/self/task`; empty off Linux.
    pub fn take() -> Snapshot {
        let mut threads = BTreeMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
            for e in dir.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                let p = e.path();
                // A thread that exits between the listing and the reads is skipped.
                let (Ok(comm), Some(ns)) = (std::fs::read_to_string(p.join("comm")), thread_ns(&p))
                else {
                    continue;
                };
                threads.insert(tid, (comm.trim_end().to_string(), ns));
            }
        }
        let process_ns = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|t| stat_ns(&t));
        Snapshot {
            threads,
            process_ns,
        }
    }
}

/// CPU seconds per role over a window, and the process's total.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuTime {
    /// Seconds of CPU per role ([`ROLES`]), the roles with none left out.
    pub seconds: BTreeMap<String, f64>,
    /// The whole process over the window (clock-tick resolution), exited threads included.
    pub process_s: Option<f64>,
    /// Of the workers' runnable time, the share they spent on a CPU (their CPU time over it
    /// plus their time waiting on a run queue); `None` where the run queue is not reported.
    /// A worker-side timer (log insertion, locks) reads the wall clock, and a worker waiting
    /// for a CPU inside a timed stretch lengthens it: times this share it is CPU time.
    pub workers_on_cpu: Option<f64>,
}

impl CpuTime {
    /// The window from `before` to `after`, with the workers' own times (`workers_ns`, each
    /// measured by the worker over its life, which lies within the window) in place of theirs
    /// in the snapshots (the workers are gone by `after`). A thread absent from `before`
    /// started within the window and counts from 0; workers' threads found in the snapshots
    /// are left out, being counted by `workers_ns`.
    pub fn between(before: &Snapshot, after: &Snapshot, workers: &[ThreadTimes]) -> CpuTime {
        let workers_ns: Vec<u64> = workers.iter().map(|w| w.cpu_ns).collect();
        let waits: Option<Vec<u64>> = workers.iter().map(|w| w.runqueue_ns).collect();
        let on_cpu = waits.filter(|_| !workers.is_empty()).and_then(|w| {
            let (cpu, wait) = (workers_ns.iter().sum::<u64>(), w.iter().sum::<u64>());
            (cpu + wait > 0).then(|| cpu as f64 / (cpu + wait) as f64)
        });
        CpuTime {
            workers_on_cpu: on_cpu,
            ..CpuTime::of_cpu(before, after, &workers_ns)
        }
    }

    /// [`CpuTime::between`] with the workers' CPU times only.
    fn of_cpu(before: &Snapshot, after: &Snapshot, workers_ns: &[u64]) -> CpuTime {
        let mut ns: BTreeMap<&'static str, u64> = BTreeMap::new();
        for (tid, (comm, end)) in &after.threads {
            let r = role(comm);
            if r == WORKER {
                continue;
            }
            let start = before.threads.get(tid).map_or(0, |(_, s)| *s);
            *ns.entry(r).or_default() += end.saturating_sub(start);
        }
        let workers: u64 = workers_ns.iter().sum();
        if !workers_ns.is_empty() {
            *ns.entry(WORKER).or_default() += workers;
        }
        let process_ns = after
            .process_ns
            .zip(before.process_ns)
            .map(|(a, b)| a.saturating_sub(b));
        if let Some(p) = process_ns {
            let counted: u64 = ns.values().sum();
            // Clock ticks against nanoseconds: only a gap of more than two ticks is a thread
            // that exited, not rounding.
            let exited = p.saturating_sub(counted);
            if exited > 2 * (1_000_000_000 / TICKS_PER_S) {
                ns.insert(EXITED, exited);
            }
        }
        CpuTime {
            seconds: ns
                .into_iter()
                .filter(|(_, v)| *v > 0)
                .map(|(r, v)| (r.to_string(), v as f64 / 1e9))
                .collect(),
            process_s: process_ns.map(|p| p as f64 / 1e9),
            workers_on_cpu: None,
        }
    }

    /// Nanoseconds of CPU per committed transaction of each role, over `commits`.
    pub fn per_txn_ns(&self, commits: u64) -> BTreeMap<String, f64> {
        self.seconds
            .iter()
            .map(|(r, s)| (r.clone(), s * 1e9 / commits.max(1) as f64))
            .collect()
    }
}

/// `per_txn` (ns per committed transaction by role) as "worker 1234, flusher 56" in the
/// order of [`ROLES`].
pub fn text(per_txn: &BTreeMap<String, f64>) -> String {
    ROLES
        .iter()
        .filter_map(|(r, _)| per_txn.get(*r).map(|v| format!("{r} {v:.0}")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn threads_get_their_roles_by_name() {
        assert_eq!(role(&worker_name(3)), WORKER);
        assert_eq!(role("braid-flush-12"), "flusher");
        // The kernel keeps 15 bytes of a name.
        assert_eq!(role(&"braid-gsn-commit"[..15]), "daemon");
        assert_eq!(role(&"braid-pertxn-flush"[..15]), "daemon");
        assert_eq!(role(&"braid-pertxn-backup"[..15]), "backup");
        assert_eq!(role(&"braid-silor-epoch"[..15]), "daemon");
        assert_eq!(role("braid-destage-0"), "destage");
        assert_eq!(role(&"braid-checkpoint"[..15]), "checkpoint");
        assert_eq!(role("braid"), HARNESS);
        assert!(is_log_thread("flusher") && is_log_thread("daemon"));
        assert!(!is_log_thread(WORKER) && !is_log_thread(HARNESS));
    }

    #[test]
    fn proc_texts_parse() {
        assert_eq!(schedstat_ns("88221 2887652 2\n"), Some(88221));
        assert_eq!(schedstat_ns("0 0 0\n"), None);
        assert_eq!(schedstat_ns("x"), None);
        // A name with a space and a parenthesis; utime 7 and stime 3 ticks.
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(stat_ns(stat), Some(10 * 10_000_000));
    }

    fn snap(threads: &[(u32, &str, u64)], process: Option<u64>) -> Snapshot {
        Snapshot {
            threads: threads
                .iter()
                .map(|&(t, c, n)| (t, (c.to_string(), n)))
                .collect(),
            process_ns: process,
        }
    }

    #[test]
    fn a_window_sums_each_role_and_counts_new_threads_from_zero() {
        let before = snap(&[(1, "braid", 5_000), (2, "braid-flush-0", 1_000)], Some(0));
        let after = snap(
            &[
                (1, "braid", 6_000),
                (2, "braid-flush-0", 4_000),
                (3, "braid-flush-1", 2_000),
                (4, "braid-gsn-commi", 500),
                (5, "braid-worker-0", 9_999),
            ],
            // 1 s in all: the threads above account for a few microseconds, so most of it
            // is threads that exited within the window.
            Some(1_000_000_000),
        );
        let w = |cpu_ns, wait| ThreadTimes {
            cpu_ns,
            runqueue_ns: Some(wait),
        };
        let t = CpuTime::between(
            &before,
            &after,
            &[w(300_000_000, 100_000_000), w(200_000_000, 400_000_000)],
        );
        // 0.5 s on a CPU of 1 s runnable.
        assert_eq!(t.workers_on_cpu, Some(0.5));
        assert_eq!(t.seconds["flusher"], 5_000.0 / 1e9);
        assert_eq!(t.seconds["daemon"], 500.0 / 1e9);
        assert_eq!(t.seconds[HARNESS], 1_000.0 / 1e9);
        // The workers' own times, not the snapshot of one still alive.
        assert_eq!(t.seconds[WORKER], 0.5);
        assert!((t.seconds[EXITED] - (0.5 - 6_500.0 / 1e9)).abs() < 1e-12);
        assert_eq!(t.process_s, Some(1.0));
        let per = t.per_txn_ns(1_000);
        assert_eq!(per[WORKER], 500_000.0);
        let per = t.per_txn_ns(1);
        assert!(
            text(&per).starts_with("worker 500000000, flusher 5000, daemon 500, harness 1000"),
            "{}",
            text(&per)
        );
        // Within two ticks of the threads' sum: no exited threads.
        let after = snap(&[(5, "braid-worker-0", 1)], Some(10_000_000));
        let unreported = ThreadTimes {
            cpu_ns: 1,
            runqueue_ns: None,
        };
        let t = CpuTime::between(&Snapshot::default(), &after, &[unreported]);
        assert!(!t.seconds.contains_key(EXITED));
        assert_eq!(t.workers_on_cpu, None);
        let late = ThreadTimes {
            cpu_ns: 10,
            runqueue_ns: Some(7),
        };
        let early = ThreadTimes {
            cpu_ns: 4,
            runqueue_ns: Some(2),
        };
        assert_eq!(
            late.since(early),
            ThreadTimes {
                cpu_ns: 6,
                runqueue_ns: Some(5)
            }
        );
    }

    #[test]
    fn this_machine_s_threads_are_read() {
        // Off Linux there is no /proc: nothing to read, and nothing claimed.
        if !std::path::Path::new("/proc/self/task").exists() {
            return;
        }
        let s = Snapshot::take();
        assert!(!s.threads.is_empty());
        assert!(this_thread().is_some());
    }
}
