//! The event counters of one gsn scheme instance: commits, straggler signals and daemon rounds
//! of passive group commit (Wang & Johnson Section 4.1; the signals per 10,000 commits of
//! Section 5.3), and clock records written to lagging file logs.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// The event counters of one gsn scheme instance (for benchmarks and tests).
#[derive(Debug, Default)]
pub(crate) struct GsnCounters {
    pub(crate) commits: AtomicU64,
    pub(crate) signals: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) clock_records: AtomicU64,
}

impl GsnCounters {
    pub(super) fn snapshot(&self) -> GsnStats {
        GsnStats {
            commits: self.commits.load(Relaxed),
            signals: self.signals.load(Relaxed),
            rounds: self.rounds.load(Relaxed),
            clock_records: self.clock_records.load(Relaxed),
        }
    }
}

/// A snapshot of one instance's counters ([`super::Gsn::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GsnStats {
    /// Update transactions committed (workers add theirs in batches of 256 and when they are
    /// dropped, so the count is exact once the workers are gone).
    pub commits: u64,
    /// Straggler signals sent by passive group commit.
    pub signals: u64,
    /// Commit daemon rounds.
    pub rounds: u64,
    /// Clock records written to lagging file logs.
    pub clock_records: u64,
}

impl GsnStats {
    /// Straggler signals per 10,000 commits.
    pub fn signals_per_10k(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.signals as f64 * 10_000.0 / self.commits as f64
        }
    }
}
