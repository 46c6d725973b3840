//! The engine side of recovery ([`Replay`], with its prefetch hints and the [`Lookahead`]
//! that batches them) and what recovery reports ([`RecoveryReport`]).

use std::ops::Range;
use std::sync::Arc;

use super::LogKind;
use crate::scan::ScanEnd;
use crate::{Lsn, WalError};

/// The engine side of recovery.
pub trait Replay: Sync {
    /// Re-apply one committed transaction: redo images (data logging) or a re-executed command.
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError>;

    /// A hint that the records of `payloads` will be applied soon, so that the engine can
    /// start loading what [`Replay::apply`] will touch: a replay loop announces a batch of
    /// records at [`Prefetch::Locate`] some records ahead and again at [`Prefetch::Body`]
    /// nearer, overlapping the memory misses of the next records with one
    /// another and with the work on this one. It must not change any state. The default does
    /// nothing.
    fn prefetch(&self, kind: LogKind, payloads: &mut dyn Iterator<Item = &[u8]>, step: Prefetch) {
        let _ = (kind, payloads, step);
    }

    /// Test hook (braid-wal's own tests): a Taurus parallel replay worker looked for a record
    /// to replay in the final cut (every record admitted) and found none ready; it then waits
    /// until another worker finishes a record. The default does nothing.
    #[cfg(test)]
    fn replay_idle(&self) {}
}

/// How near its apply a record is announced to [`Replay::prefetch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefetch {
    /// Far ahead: find the rows and start loading their headers.
    Locate,
    /// Near: the headers are in cache; start loading the bytes the apply writes.
    Body,
}

/// Announces the items of a replay loop to [`Replay::prefetch`] in batches: before the apply
/// of a batch of [`Lookahead::BATCH`] items, the batch after it is loaded ([`Prefetch::Body`])
/// and the one after that located ([`Prefetch::Locate`]). A batch's look-ups are issued back to
/// back, with no locked instruction between them, so their index misses overlap one another;
/// each row latch taken later (a locked instruction waits for every earlier load) then waits
/// once per batch rather than once per item.
#[derive(Debug, Default)]
pub(crate) struct Lookahead {
    /// The next item that starts a batch.
    mark: usize,
    /// Items below these were announced at each step.
    located: usize,
    loaded: usize,
}

impl Lookahead {
    /// Items per batch (on Silo-R's recovery of 1 KB YCSB rows, 2 threads, batches of 4, 8 and
    /// 16 were within run-to-run noise of one another).
    pub(crate) const BATCH: usize = 8;

    /// Before item `i` of `n` is applied: when it starts a batch, `hint(items, step)` announces
    /// the items the steps have not reached yet. Items may be skipped (`i` may jump).
    pub(crate) fn before(
        &mut self,
        i: usize,
        n: usize,
        mut hint: impl FnMut(Range<usize>, Prefetch),
    ) {
        if i < self.mark {
            return;
        }
        self.mark = i + Self::BATCH;
        let locate_to = (i + 3 * Self::BATCH).min(n);
        let from = self.located.max(i);
        if from < locate_to {
            hint(from..locate_to, Prefetch::Locate);
        }
        self.located = self.located.max(locate_to);
        let load_to = (i + 2 * Self::BATCH).min(n);
        let from = self.loaded.max(i);
        if from < load_to {
            hint(from..load_to, Prefetch::Body);
        }
        self.loaded = self.loaded.max(load_to);
    }
}

/// An error raised by the engine while replaying a transaction.
pub type ReplayError = Box<dyn std::error::Error + Send + Sync>;

/// What recovery found and did.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// Transactions replayed.
    pub txns: u64,
    /// Records decoded (including ones not replayed).
    pub records: u64,
    /// Log bytes read.
    pub bytes: u64,
    /// Largest transaction id seen, so new ids never repeat one in the log.
    pub max_txn: u64,
    /// How each stream ended.
    pub ends: Vec<ScanEnd>,
    /// Seconds spent scanning and replaying.
    pub seconds: f64,
    /// Transactions found in the log but not replayed (not committed, or depending on
    /// something lost), over all streams.
    pub skipped: u64,
    /// Transaction records found in the log that the checkpoint recovery started from already
    /// holds (not replayed).
    pub covered: u64,
    /// Recovery stages the scheme times, in order (gsn: seconds spent in `scan`, `plan`,
    /// `partition`, `apply`; taurus, whose stages overlap: seconds from the start of recovery
    /// to the `first apply`, to the end of `read` and of `replay`); empty otherwise.
    pub stages: Vec<(&'static str, f64)>,
    /// How the log was replayed, for schemes with a choice (taurus: `parallel`, or `serial`
    /// for the fallback or one replay thread); `None` otherwise.
    pub plan: Option<&'static str>,
}

/// Wrap a replay failure with the position it happened at.
pub(crate) fn replay_failed(stream: u32, lsn: Lsn, txn: u64, e: ReplayError) -> WalError {
    WalError::Replay {
        stream,
        lsn,
        txn,
        cause: Arc::from(e),
    }
}

#[cfg(test)]
mod lookahead_tests {
    use super::{Lookahead, Prefetch};

    /// Every item applied in order, or with some skipped, is located, then loaded, before its
    /// apply, once at each step; in order, never more than three batches early.
    #[test]
    fn every_item_is_located_then_loaded_before_its_apply() {
        for (n, step_by) in [(0, 1), (5, 1), (100, 1), (100, 3), (37, 7)] {
            let mut ahead = Lookahead::default();
            let mut seen: Vec<(usize, Prefetch, usize)> = Vec::new();
            let mut applied = Vec::new();
            for i in (0..n).step_by(step_by) {
                ahead.before(i, n, |items, step| seen.extend(items.map(|j| (j, step, i))));
                applied.push(i);
            }
            for &i in &applied {
                let at = |step| {
                    seen.iter()
                        .filter(|&&(j, s, _)| j == i && s == step)
                        .map(|&(_, _, when)| when)
                        .collect::<Vec<_>>()
                };
                let (l, b) = (at(Prefetch::Locate), at(Prefetch::Body));
                assert_eq!((l.len(), b.len()), (1, 1), "item {i} of {n}: {seen:?}");
                let l_pos = seen
                    .iter()
                    .position(|&(j, s, _)| j == i && s == Prefetch::Locate);
                let b_pos = seen
                    .iter()
                    .position(|&(j, s, _)| j == i && s == Prefetch::Body);
                assert!(l_pos < b_pos, "item {i} of {n}");
                assert!(b[0] <= i, "item {i} of {n}");
                if step_by == 1 {
                    assert!(i - l[0] < 3 * Lookahead::BATCH, "item {i} of {n}");
                }
            }
            assert!(seen.iter().all(|&(j, _, _)| j < n));
        }
    }
}
