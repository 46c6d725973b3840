//! Where open transactions' update records begin, so a checkpoint's cut never starts after one.
//!
//! With one record per transaction, every record reserved before a checkpoint's `start`
//! position belongs to a transaction that entered the old checkpoint epoch (see [`super::cut`]).
//! With per-update records ([`super::Records::Update`], ARIES's write-ahead records) a
//! transaction puts records in the log long before its commit decides its epoch, so the cut's
//! start must not pass the first record of any transaction still open: ARIES starts redo at the
//! oldest active transaction's first LSN for the same reason (Mohan et al. 1992, Sec. 6.1).
//! Whether such a record is in the checkpoint is decided by its transaction's commit record,
//! which carries the epoch.
//!
//! Each worker has a slot per stream holding a position at or before its open transaction's
//! first record on that stream (`u64::MAX` when it has none). The worker writes the slot
//! *before* it reserves the record, with the stream's reserved end read just then; the
//! checkpoint reads the stream's reserved end first and the slots after it ([`OpenTxns::start`]).
//! If a record starts below the end the checkpoint read, its reservation came before that read,
//! so its slot was written before it and the checkpoint sees it, unless the transaction had
//! already finished; and a transaction finishes in the new epoch only after the epoch moved,
//! which is after the checkpoint read the slots. A slot is cleared once the commit or abort
//! record is in the log.
//!
//! Slots are written by their worker only (a store, no read-modify-write) on a cache line of
//! their own; the checkpoint reads them all. A worker claims its slots when its handle is made
//! and gives them back when the handle is dropped ([`OpenSlot`]). A hand-written structure: a
//! vector of padded atomics, which no crate offers with this protocol.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::{Lsn, WalError};

/// No open transaction with records on this stream.
const NONE: u64 = u64::MAX;

/// The open transactions' first positions, per worker and stream.
#[derive(Debug)]
pub(crate) struct OpenTxns {
    streams: usize,
    slots: Vec<CachePadded<AtomicU64>>,
    free: Mutex<Vec<usize>>,
}

/// A worker's claim on its slots in an [`OpenTxns`], given back when dropped.
#[derive(Debug)]
pub(crate) struct OpenSlot {
    open: Arc<OpenTxns>,
    worker: usize,
}

impl OpenSlot {
    /// See [`OpenTxns::note`].
    #[inline]
    pub(crate) fn note(&self, stream: usize, tail: impl FnOnce() -> Lsn) {
        self.open.note(self.worker, stream, tail)
    }
    /// See [`OpenTxns::clear`].
    #[inline]
    pub(crate) fn clear(&self) {
        self.open.clear(self.worker)
    }
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.open.clear(self.worker);
        self.open.free.lock().push(self.worker);
    }
}

impl OpenTxns {
    /// Slots for `workers` workers on `streams` streams.
    pub(crate) fn new(workers: usize, streams: usize) -> OpenTxns {
        OpenTxns {
            streams,
            slots: (0..workers * streams)
                .map(|_| CachePadded::new(AtomicU64::new(NONE)))
                .collect(),
            free: Mutex::new((0..workers).rev().collect()),
        }
    }

    /// Claim a worker's slots, or fail if every worker's are taken.
    pub(crate) fn claim(self: &Arc<Self>) -> Result<OpenSlot, WalError> {
        let worker = self.free.lock().pop().ok_or_else(|| WalError::TooMany {
            what: "scheme workers",
            max: self.slots.len() / self.streams.max(1),
            remedy: "open with a larger max_workers",
        })?;
        Ok(OpenSlot {
            open: self.clone(),
            worker,
        })
    }

    /// Worker `worker` is about to reserve a record on `stream`; `tail` is the stream's
    /// reserved end read now. Notes it if this is the transaction's first record there.
    #[inline]
    pub(crate) fn note(&self, worker: usize, stream: usize, tail: impl FnOnce() -> Lsn) {
        if let Some(slot) = self.slots.get(worker * self.streams + stream)
            && slot.load(SeqCst) == NONE
        {
            slot.store(tail(), SeqCst);
        }
    }

    /// Worker `worker`'s transaction has its commit or abort record in the log.
    #[inline]
    pub(crate) fn clear(&self, worker: usize) {
        let from = worker * self.streams;
        for slot in self.slots.iter().skip(from).take(self.streams) {
            if slot.load(SeqCst) != NONE {
                slot.store(NONE, SeqCst);
            }
        }
    }

    /// A checkpoint's start on `stream` given `tail`, the stream's reserved end read just
    /// before: the smaller of it and every open transaction's first position there.
    pub(crate) fn start(&self, stream: usize, tail: Lsn) -> Lsn {
        self.slots
            .iter()
            .skip(stream)
            .step_by(self.streams.max(1))
            .map(|s| s.load(SeqCst))
            .fold(tail, u64::min)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_claimed_and_given_back() {
        let open = Arc::new(OpenTxns::new(2, 1));
        let a = open.claim().unwrap();
        let b = open.claim().unwrap();
        assert!(open.claim().is_err());
        b.note(0, || 5);
        assert_eq!(open.start(0, 9), 5);
        drop(b);
        // Dropping a handle clears what it noted and frees its slot.
        assert_eq!(open.start(0, 9), 9);
        let c = open.claim().unwrap();
        a.note(0, || 3);
        c.note(0, || 4);
        assert_eq!(open.start(0, 9), 3);
    }

    #[test]
    fn start_is_the_oldest_open_first_record() {
        let open = OpenTxns::new(3, 2);
        assert_eq!(open.start(0, 100), 100);
        open.note(1, 0, || 40);
        // A second record of the same transaction does not move its first position.
        open.note(1, 0, || 70);
        open.note(2, 1, || 10);
        assert_eq!(open.start(0, 100), 40);
        assert_eq!(open.start(1, 100), 10);
        // Older than the tail only.
        assert_eq!(open.start(0, 30), 30);
        open.clear(1);
        assert_eq!(open.start(0, 100), 100);
        assert_eq!(open.start(1, 100), 10);
        open.clear(2);
        assert_eq!(open.start(1, 100), 100);
    }
}
