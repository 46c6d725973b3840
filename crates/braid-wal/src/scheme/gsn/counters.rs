//! The event counters of one gsn scheme instance: commits, straggler signals (sent, and those
//! that helped) and daemon rounds of passive group commit (Wang & Johnson Section 4.1; the
//! signals per 10,000 commits of Section 5.3), clock records written to lagging file logs, and
//! with Remote Flush Avoidance the commits acknowledged locally and those that needed a remote
//! flush (Haubenschild et al. 2020 report the share of the latter).
//! The daemon's counters are written by the daemon only; commits are counted per worker in
//! its commit-queue lane (`shared.rs`), so no worker writes a statistics word of the scheme.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// The event counters of one gsn scheme instance (for benchmarks and tests).
#[derive(Debug, Default)]
pub(crate) struct GsnCounters {
    pub(crate) signals: AtomicU64,
    pub(crate) signals_helped: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) clock_records: AtomicU64,
    /// Autonomous commit: waits of commits that needed a remote flush for a log not yet
    /// durable up to their GSN (each led that log's flush when none was under way: log
    /// stealing).
    pub(crate) log_waits: AtomicU64,
}

impl GsnCounters {
    pub(super) fn snapshot(&self, commits: u64, rfa: (u64, u64, u64, u64)) -> GsnStats {
        GsnStats {
            commits,
            rfa_local: rfa.0,
            rfa_remote: rfa.1,
            dep_logs: rfa.2,
            all_logs: rfa.3,
            signals: self.signals.load(Relaxed),
            signals_helped: self.signals_helped.load(Relaxed),
            rounds: self.rounds.load(Relaxed),
            clock_records: self.clock_records.load(Relaxed),
            log_waits: self.log_waits.load(Relaxed),
        }
    }
}

/// A snapshot of one instance's counters ([`super::Gsn::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GsnStats {
    /// Update transactions committed.
    pub commits: u64,
    /// Straggler signals sent by passive group commit.
    pub signals: u64,
    /// Of those, signals that helped: the handler published on the straggler's behalf, and
    /// the daemon's next bound rose above what held it back when it signalled.
    pub signals_helped: u64,
    /// Commit daemon rounds.
    pub rounds: u64,
    /// Clock records written to lagging file logs.
    pub clock_records: u64,
    /// Autonomous commit: waits for a log's flush by commits that needed a remote flush.
    pub log_waits: u64,
    /// Remote Flush Avoidance: commits acknowledged by their own log's flush alone.
    pub rfa_local: u64,
    /// Remote Flush Avoidance: commits that needed a remote flush.
    pub rfa_remote: u64,
    /// Autonomous commit: the logs those commits depended on, summed.
    pub dep_logs: u64,
    /// Autonomous commit: those commits that fell back to waiting for every log.
    pub all_logs: u64,
}

impl GsnStats {
    /// Straggler signals per 10,000 commits.
    #[cfg(test)]
    pub(crate) fn signals_per_10k(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.signals as f64 * 10_000.0 / self.commits as f64
        }
    }
}
