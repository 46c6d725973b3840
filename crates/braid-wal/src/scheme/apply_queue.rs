//! [`ApplyQueue`]: the operations a recovery thread has read but not applied yet, applied in
//! the order they were read with their rows announced ahead ([`Lookahead`]).
//!
//! A single-log recovery (`shared_scan.rs`: serial's shares, Taurus's one-stream path,
//! Plover's one log) reads a record and applies its share's operations at once, so every
//! row the apply touches is a memory miss of its own: the index bucket, then the row, one
//! after the other. Queuing a few dozen records' operations first lets the replay announce
//! the rows of the records after the one it applies ([`Replay::prefetch`]), as Silo-R's
//! pipeline and the batch recoveries already do, so the misses overlap one another and the
//! apply. The queue is one buffer reused for the whole scan: its operations stay in cache,
//! and recovery holds no more of the log than before.
//!
//! Order: records are applied in the order pushed, and a record's runs in payload order, so
//! each key sees its operations in stream order, as without the queue. A record whose apply
//! fails is reported with its own stream, position and transaction.

use std::ops::Range;

use super::shared_scan::Share;
use super::{LogKind, Lookahead, Replay, replay_failed};
use crate::payload::PayloadError;
use crate::{Lsn, WalError};

/// One run of operations to apply: whose it is and where its bytes are in the queue.
struct Queued {
    stream: u32,
    txn: u64,
    lsn: Lsn,
    ops: Range<usize>,
}

/// A share's operations read and not yet applied (see the module doc).
#[derive(Default)]
pub(crate) struct ApplyQueue {
    runs: Vec<Queued>,
    bytes: Vec<u8>,
}

impl ApplyQueue {
    /// Runs queued before the queue is applied: enough to announce a few batches of
    /// [`Lookahead::BATCH`] ahead, few enough that the queued bytes stay in cache.
    const RUNS: usize = 128;

    /// Queue the operations of `share` in the redo `payload` of transaction `txn` at `lsn`
    /// of `stream`, applying the queue first if it is full. A malformed payload is `bad`'s
    /// error.
    pub(crate) fn push(
        &mut self,
        share: &Share,
        (txn, lsn): (u64, Lsn),
        payload: &[u8],
        bad: impl Fn(PayloadError) -> WalError,
        (replay, stream): (&dyn Replay, u32),
    ) -> Result<(), WalError> {
        if self.runs.len() >= Self::RUNS {
            self.apply(replay)?;
        }
        share.runs(payload, bad, |run| {
            self.queue(stream, txn, lsn, run);
            Ok(())
        })
    }

    /// Queue `ops` (operations already split to a share) of transaction `txn` at `lsn` of
    /// `stream`, applying the queue first if it is full.
    pub(crate) fn push_ops(
        &mut self,
        (stream, txn, lsn): (u32, u64, Lsn),
        ops: &[u8],
        replay: &dyn Replay,
    ) -> Result<(), WalError> {
        if self.runs.len() >= Self::RUNS {
            self.apply(replay)?;
        }
        if !ops.is_empty() {
            self.queue(stream, txn, lsn, ops);
        }
        Ok(())
    }

    fn queue(&mut self, stream: u32, txn: u64, lsn: Lsn, ops: &[u8]) {
        let from = self.bytes.len();
        self.bytes.extend_from_slice(ops);
        self.runs.push(Queued {
            stream,
            txn,
            lsn,
            ops: from..self.bytes.len(),
        });
    }

    /// Apply every queued run, in order, through `replay`; the queue is empty after.
    pub(crate) fn apply(&mut self, replay: &dyn Replay) -> Result<(), WalError> {
        let n = self.runs.len();
        let mut ahead = Lookahead::default();
        for i in 0..n {
            ahead.before(i, n, |items, step| {
                let mut ops = self.runs[items].iter().map(|q| &self.bytes[q.ops.clone()]);
                replay.prefetch(LogKind::Data, &mut ops, step);
            });
            let q = &self.runs[i];
            replay
                .apply(q.txn, LogKind::Data, &self.bytes[q.ops.clone()])
                .map_err(|e| replay_failed(q.stream, q.lsn, q.txn, e))?;
        }
        self.runs.clear();
        self.bytes.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::payload::{RedoBuf, RedoOp, decode_redo};
    use crate::scheme::{Prefetch, ReplayError};
    use std::sync::Mutex;

    /// Records what it is asked: each apply's (txn, keys), and each key announced per step.
    #[derive(Default)]
    struct Seen {
        applied: Mutex<Vec<(u64, Vec<u64>)>>,
        located: Mutex<Vec<u64>>,
        loaded: Mutex<Vec<u64>>,
        fail_txn: Option<u64>,
    }

    fn keys(p: &[u8]) -> Vec<u64> {
        decode_redo(p).map(|o| o.unwrap().key()).collect()
    }

    impl Replay for Seen {
        fn apply(&self, txn: u64, _: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
            if self.fail_txn == Some(txn) {
                return Err("refused".into());
            }
            self.applied.lock().unwrap().push((txn, keys(payload)));
            Ok(())
        }

        fn prefetch(&self, _: LogKind, payloads: &mut dyn Iterator<Item = &[u8]>, step: Prefetch) {
            let to = match step {
                Prefetch::Locate => &self.located,
                Prefetch::Body => &self.loaded,
            };
            for p in payloads {
                to.lock().unwrap().extend(keys(p));
            }
        }
    }

    fn payload(keys: &[u64]) -> Vec<u8> {
        let mut b = RedoBuf::default();
        for &key in keys {
            b.push(&RedoOp::Delete { table: 1, key });
        }
        b.bytes
    }

    fn bad(e: PayloadError) -> WalError {
        WalError::Misuse(crate::Misuse::Payload {
            scheme: "test",
            source: e,
        })
    }

    #[test]
    fn applies_every_run_in_order_and_announces_each_before_its_apply() {
        let seen = Seen::default();
        let mut q = ApplyQueue::default();
        let share = Share { part: 0, n: 1 };
        // More records than the queue holds, so it is applied while pushing too.
        let n = 3 * ApplyQueue::RUNS as u64 + 5;
        for txn in 0..n {
            let p = payload(&[2 * txn, 2 * txn + 1]);
            q.push(&share, (txn, 100 * txn), &p, bad, (&seen, 0))
                .unwrap();
        }
        q.apply(&seen).unwrap();
        let applied = seen.applied.lock().unwrap().clone();
        let want: Vec<(u64, Vec<u64>)> = (0..n).map(|t| (t, vec![2 * t, 2 * t + 1])).collect();
        assert_eq!(applied, want, "every run once, in the order pushed");
        let all: Vec<u64> = (0..2 * n).collect();
        for (step, got) in [("Locate", &seen.located), ("Body", &seen.loaded)] {
            let mut got = got.lock().unwrap().clone();
            got.sort_unstable();
            assert_eq!(got, all, "every key announced once at {step}");
        }
        assert!(
            q.runs.is_empty() && q.bytes.is_empty(),
            "applied means empty"
        );
    }

    #[test]
    fn a_share_queues_only_its_own_keys() {
        let p = payload(&(0..64).collect::<Vec<_>>());
        let mut got = Vec::new();
        for part in 0..2 {
            let seen = Seen::default();
            let mut q = ApplyQueue::default();
            q.push(&Share { part, n: 2 }, (7, 0), &p, bad, (&seen, 0))
                .unwrap();
            q.apply(&seen).unwrap();
            let mine: Vec<u64> = seen
                .applied
                .lock()
                .unwrap()
                .iter()
                .flat_map(|(t, k)| {
                    assert_eq!(*t, 7);
                    k.clone()
                })
                .collect();
            assert!(!mine.is_empty(), "share {part} got none of 64 keys");
            got.extend(mine);
        }
        got.sort_unstable();
        assert_eq!(
            got,
            (0..64).collect::<Vec<_>>(),
            "the shares split the keys"
        );
    }

    #[test]
    fn a_failed_apply_names_its_own_record() {
        let seen = Seen {
            fail_txn: Some(5),
            ..Seen::default()
        };
        let mut q = ApplyQueue::default();
        let share = Share { part: 0, n: 1 };
        for txn in 0..10 {
            q.push(&share, (txn, 1000 + txn), &payload(&[txn]), bad, (&seen, 3))
                .unwrap();
        }
        let e = q.apply(&seen).unwrap_err().to_string();
        assert!(e.contains("1005"), "the failing record's position: {e}");
        assert_eq!(
            seen.applied.lock().unwrap().len(),
            5,
            "those before it applied"
        );
    }
}
