//! Read GSNs for command logging: the write-after-read order that re-executing stored
//! procedures needs and page GSNs alone do not give. Taurus's readLV (Xia et al., VLDB 2021,
//! Section 3.2, Alg. 1 lines 5 and 15), with one GSN per page in place of an LSN vector per
//! tuple.
//!
//! Next to each page clock (`pages.rs`, the same slot) a *read GSN* and a *pending* count:
//!
//! * A transaction that will be logged raises the read GSN of every page it read to its commit
//!   GSN in `commit`, before the engine installs its writes and releases its locks (Alg. 1
//!   line 15), and a transaction that writes a page takes its GSN above the page's read GSN
//!   (line 5, at commit here, where gsn re-reads its page clocks). So a writer that overwrites
//!   what an earlier transaction read is re-executed after it.
//! * Under 2PL a reader holds its row locks until after `commit`, so a writer of the same row
//!   locks it only after the raise. Under OCC (Section 4.3, Alg. 6), and for a row inserted into
//!   a range a transaction scanned (Section 3.4: scan twice), no lock orders the reader's raise
//!   before the writer's look. Departure, as in `taurus/worker.rs`: Alg. 6 raises readLV
//!   before validation with the LV the reader has then, which a GSN taken later would exceed;
//!   instead the reader marks the page pending (count up, SeqCst, then a fence) before it
//!   validates or recounts, and counts down after its raise at commit; the writer, after its
//!   lock (or, for an insert, after its key is in the index) and a fence, waits until the page
//!   has no pending reader before it reads the read GSN. Either the reader's validation sees
//!   the writer, or the writer waits for the reader's raise. A transaction waits only before it
//!   marks anything itself, and a marked one waits for nobody: no deadlock.
//! * A scan or a miss over more than `MAX_ABSENT_PAGES` pages (`worker.rs`) raises (and
//!   marks) one wide read GSN instead, which every insert waits for and takes its GSN above.
//! * Read-only transactions are never re-executed: they raise and mark nothing.
//!
//! Kept only under command logging: data logging's path is unchanged.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, AtomicU64, fence};

use super::pages::PageTable;

/// The read GSNs and pending counts of every page slot, and the wide ones.
pub(crate) struct ReadClocks {
    gsn: Box<[AtomicU64]>,
    pending: Box<[AtomicU32]>,
    wide_gsn: AtomicU64,
    wide_pending: AtomicU32,
}

impl std::fmt::Debug for ReadClocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadClocks")
            .field("slots", &self.gsn.len())
            .finish()
    }
}

impl ReadClocks {
    /// `slots`: the page table's (a power of two).
    pub(crate) fn new(slots: usize) -> ReadClocks {
        ReadClocks {
            gsn: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            pending: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            wide_gsn: AtomicU64::new(0),
            wide_pending: AtomicU32::new(0),
        }
    }

    /// Bytes kept.
    pub(crate) fn bytes(&self) -> u64 {
        (self.gsn.len() * (8 + 4)) as u64
    }

    /// The read GSN of `slot` (`None`: the wide one), once no reader is pending on it.
    pub(crate) fn settled_read(&self, slot: Option<usize>) -> u64 {
        let (g, p) = self.cells(slot);
        let mut spins = 0u32;
        while p.load(SeqCst) != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        g.load(SeqCst)
    }

    /// The read GSN of `slot` now.
    pub(crate) fn get(&self, slot: usize) -> u64 {
        self.gsn[slot].load(SeqCst)
    }

    /// Raise the read GSN of `slot` (`None`: the wide one) to `gsn`.
    pub(crate) fn raise(&self, slot: Option<usize>, gsn: u64) {
        self.cells(slot).0.fetch_max(gsn, SeqCst);
    }

    /// Mark `slot` (`None`: the wide one) pending.
    pub(crate) fn mark(&self, slot: Option<usize>) {
        self.cells(slot).1.fetch_add(1, SeqCst);
    }

    /// Take back a [`Self::mark`].
    pub(crate) fn unmark(&self, slot: Option<usize>) {
        self.cells(slot).1.fetch_sub(1, SeqCst);
    }

    fn cells(&self, slot: Option<usize>) -> (&AtomicU64, &AtomicU32) {
        match slot {
            Some(s) => (&self.gsn[s], &self.pending[s]),
            None => (&self.wide_gsn, &self.wide_pending),
        }
    }
}

/// A worker's side of the read GSNs for its running transaction: the pages it marked
/// pending and whether it read wide.
#[derive(Debug, Default)]
pub(super) struct ReadMarks {
    /// Slots marked pending (`None`: the wide read GSN).
    marked: Vec<Option<usize>>,
    /// The transaction read more pages than it names (a wide miss or scan).
    pub wide: bool,
}

impl ReadMarks {
    /// OCC, after the engine locked the write set and before it validates (Taurus Alg. 6
    /// lines 6-12): take `tx` above the settled read GSN of every page written, then, if the
    /// transaction writes (only a logged transaction is re-executed), mark every page it read
    /// pending.
    pub(super) fn before_validate(
        &mut self,
        r: &ReadClocks,
        touched: &[(usize, bool)],
        tx: &mut u64,
    ) {
        // After the engine's lock of the write set.
        fence(SeqCst);
        let mut writes = false;
        for &(slot, written) in touched {
            if written {
                writes = true;
                *tx = (*tx).max(r.settled_read(Some(slot)));
            }
        }
        if writes {
            for &(slot, written) in touched {
                if !written {
                    self.mark(r, Some(slot));
                }
            }
        }
        // Before the engine's validation reads the rows' lock words.
        fence(SeqCst);
    }

    /// Mark `slot` (`None`: wide) pending, once per transaction.
    pub(super) fn mark(&mut self, r: &ReadClocks, slot: Option<usize>) {
        if !self.marked.contains(&slot) {
            r.mark(slot);
            self.marked.push(slot);
        }
    }

    /// A range scan of `table` over `(a, b)` about to be recounted (`on_scan`): a transaction
    /// that writes marks the range's pages pending (or, over more than `max_pages` pages, the
    /// wide read GSN) and notes them read in `touched`, so that its commit raises their read
    /// GSNs and an insert into the range is re-executed after it.
    pub(super) fn scanned(
        &mut self,
        r: &ReadClocks,
        pages: &PageTable,
        table: u32,
        (a, b): (u64, u64),
        max_pages: u64,
        touched: &mut Vec<(usize, bool)>,
    ) {
        if !touched.iter().any(|t| t.1) {
            // Read-only: never re-executed.
            return;
        }
        let rpp = pages.rows_per_page();
        let (first, last) = (a / rpp, b / rpp);
        if last - first < max_pages {
            for page in first..=last {
                let slot = pages.slot(table, page * rpp);
                self.mark(r, Some(slot));
                touched.push((slot, false));
            }
        } else {
            self.mark(r, None);
            self.wide = true;
        }
        // Before the engine's recount reads the index.
        fence(SeqCst);
    }

    /// An insert into page `slot`, after its key is in the index: `tx` above the page's and
    /// the wide settled read GSNs.
    pub(super) fn inserted(r: &ReadClocks, slot: usize, tx: &mut u64) {
        fence(SeqCst);
        *tx = (*tx)
            .max(r.settled_read(Some(slot)))
            .max(r.settled_read(None));
    }

    /// At commit, before the GSN is taken: `tx` above the read GSN of every page written.
    pub(super) fn before_insert(r: &ReadClocks, touched: &[(usize, bool)], tx: &mut u64) {
        for &(slot, written) in touched {
            if written {
                *tx = (*tx).max(r.get(slot));
            }
        }
    }

    /// The transaction is in the log with GSN `gsn`: raise the read GSN of every page it read
    /// (and the wide one if it read wide), then take back its marks.
    pub(super) fn committed(&mut self, r: &ReadClocks, touched: &[(usize, bool)], gsn: u64) {
        for &(slot, written) in touched {
            if !written {
                r.raise(Some(slot), gsn);
            }
        }
        if self.wide {
            r.raise(None, gsn);
        }
        self.release(r);
    }

    /// Take back the marks (the transaction committed or aborted).
    pub(super) fn release(&mut self, r: &ReadClocks) {
        for slot in self.marked.drain(..) {
            r.unmark(slot);
        }
        self.wide = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_gsns_only_grow_and_a_pending_reader_is_waited_for() {
        let r = std::sync::Arc::new(ReadClocks::new(4));
        r.raise(Some(1), 7);
        r.raise(Some(1), 5);
        assert_eq!(r.get(1), 7);
        r.mark(None);
        let r2 = std::sync::Arc::clone(&r);
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            r2.raise(None, 9);
            r2.unmark(None);
        });
        // The writer waits for the pending reader's raise.
        assert_eq!(r.settled_read(None), 9);
        assert!(t.join().is_ok());
        assert_eq!(r.settled_read(Some(1)), 7);
    }
}
