//! Transactions (REWIND §4.2-§4.4): logging, commit, rollback, allocation and deferred frees.
//!
//! * [`Tx::write`] reads the old value, appends an UPDATE record (address, old, new) and only
//!   then stores in place (write-ahead logging, §4.2). Writes are split into the aligned
//!   8-byte words they touch; a word that does not change is not logged.
//! * Under the Batch layout the in-place stores are deferred in a small per-transaction
//!   buffer until the records covering them are synced: when the group is full
//!   (`batch_group` records, §3.3 "the compiler needs to reorder the log calls and place them
//!   in batches above the corresponding user writes"), at commit, or before an unlogged store
//!   to the same words. Reads inside the transaction see the buffered values. The records
//!   wait with them (Batch and Sealed, one layer): a group's records go to the log under one
//!   lock of it just before the sync that makes them durable (at commit together with END),
//!   since no record of a grouped log is durable, nor any store it covers applied, before
//!   that sync. A group that does not fit fails whole (after a checkpoint and a retry under
//!   no-force); a rollback drops the records not yet in the log with their stores.
//! * Force (§4.3): user stores are non-temporal; commit fences them, appends END, then clears
//!   the transaction's records (END last) after processing its DELETE records. A one-layer
//!   log finds them by scanning the log backwards (§4.6, [`crate::CommitClear::Scan`]) unless
//!   the pool keeps their positions ([`crate::CommitClear::KeptPositions`]); a two-layer log
//!   removes them by key. No-force:
//!   user stores are cached; commit appends END; checkpoints clear the log. Batch commits log
//!   END in the same group as the last records (§3.3: "commit log records can be reordered
//!   safely before the user writes").
//! * Rollback (§4.4): a ROLLBACK record, then for each UPDATE of the transaction, newest
//!   first, a CLR and the old value restored (persisted at once under force, so that only the
//!   last undo can be missing after a crash, which recovery redoes), then END.
//! * [`Tx::init`] stores into an object allocated by the same transaction without logging
//!   (choice beyond the paper): rollback frees the object so its old content never matters,
//!   and the store is flushed and fenced before END, so it is durable when the transaction
//!   commits under either policy.
//! * Every transaction reserves log room for its own CLRs, ROLLBACK and END as it logs, so a
//!   started transaction can always roll back; a forward record that does not fit fails with
//!   `LogFull` (after a checkpoint and a retry under no-force).

use std::sync::atomic::Ordering;

use braid_pmem::Words;

use crate::alloc::{BLOCK_HDR, header, parse_header};
use crate::pool::{Finished, Inner, Log, Policy, RecRef, checkpoint};
use crate::pptr::{PPtr, Persist};
use crate::record::{Kind, Rec};
use crate::{Refusal, RewindError};

/// Memory a data structure is written through: a REWIND transaction ([`Tx`]) or plain
/// non-recoverable stores ([`crate::RawMem`]). Offsets are pool offsets; word accesses are
/// 8-byte aligned.
pub trait Mem {
    /// Read the word at `off`.
    fn read_u64(&self, off: u64) -> u64;
    /// Read `out.len()` bytes at `off`.
    fn read_bytes(&self, off: u64, out: &mut [u8]);
    /// The whole pool as one view whose word `off / 8` is what [`Mem::read_u64`] would read
    /// at `off`, bounds-checked once: for a reader that loads many words (a tree search).
    /// `None` while a transaction has stores buffered (Batch layout), which only its own
    /// loads see.
    fn words(&self) -> Option<Words<'_>>;
    /// Write the word at `off` (logged in a transaction).
    fn write_u64(&mut self, off: u64, v: u64) -> Result<(), RewindError>;
    /// Write `b` at `off` (logged in a transaction, word by word).
    fn write_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError>;
    /// Store into an object allocated by this same transaction (not logged).
    fn init_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError>;
    /// Allocate `size` bytes; returns the object's offset.
    fn alloc(&mut self, size: usize) -> Result<u64, RewindError>;
    /// Free the object at `off` (deferred until commit in a transaction).
    fn free(&mut self, off: u64) -> Result<(), RewindError>;
    /// Whether a store through this memory is logged (a transaction: a rewritten word costs
    /// a log record, so rewriting many words of an object can cost more than a fresh copy)
    /// rather than plain (the non-recoverable twin).
    fn logs_stores(&self) -> bool;
}

/// The per-transaction vectors, kept per thread between transactions (boxed, so that taking
/// and returning them moves one pointer) so that a transaction allocates nothing once its
/// thread has run one of the same size.
#[derive(Default)]
struct Bufs {
    /// Records in the log.
    recs: Vec<RecRef>,
    /// Cache lines named by this transaction's UPDATE records (repeats skipped when adjacent).
    lines: Vec<usize>,
    allocs: Vec<usize>,
    frees: Vec<usize>,
    /// Batch: deferred stores (word offset, value), oldest first.
    pending: Vec<(usize, u64)>,
    /// Grouped one-layer logs: forward records not yet in the log, each with the log room
    /// it reserves (see the module documentation), oldest first.
    queued: Vec<(Rec, usize)>,
}

impl Bufs {
    fn clear(&mut self) {
        self.recs.clear();
        self.lines.clear();
        self.allocs.clear();
        self.frees.clear();
        self.pending.clear();
        self.queued.clear();
    }
}

thread_local! {
    // Boxed so that a transaction takes and returns its vectors as one pointer.
    #[allow(clippy::vec_box)]
    static SPARE: std::cell::RefCell<Vec<Box<Bufs>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// No vectors: what a transaction's [`Held`] reads as once they are handed back.
static NO_BUFS: Bufs = Bufs {
    recs: Vec::new(),
    lines: Vec::new(),
    allocs: Vec::new(),
    frees: Vec::new(),
    pending: Vec::new(),
    queued: Vec::new(),
};

/// A transaction's [`Bufs`]: present from [`Tx::new`] until the transaction is dropped,
/// which hands them back to its thread.
struct Held(Option<Box<Bufs>>);

impl std::ops::Deref for Held {
    type Target = Bufs;
    #[inline]
    fn deref(&self) -> &Bufs {
        // `None` only while `Drop for Tx` runs.
        self.0.as_deref().unwrap_or(&NO_BUFS)
    }
}

impl std::ops::DerefMut for Held {
    #[inline]
    fn deref_mut(&mut self) -> &mut Bufs {
        // `None` only while `Drop for Tx` runs (nothing is then written).
        self.0.get_or_insert_with(Box::default)
    }
}

/// A running transaction (see the module documentation).
pub struct Tx<'p> {
    p: &'p Inner,
    log: &'p Log,
    /// The queue of finished transactions of `log` (no-force checkpoints).
    finished: &'p std::sync::Mutex<Finished>,
    txid: u64,
    /// Records appended (the two-layer key number).
    n: u64,
    /// Forward records appended (added to the pool's statistics once, on drop).
    fwd: u64,
    /// Log records reserved and not yet used.
    held: usize,
    b: Held,
    batch: bool,
    force: bool,
    group: usize,
    need_fence: bool,
    /// Records in the log after this transaction's END (no-force: checkpoint trigger).
    live_after: Option<usize>,
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.fwd > 0 {
            self.p.stats.records.fetch_add(self.fwd, Ordering::Relaxed);
        }
        let Some(mut b) = self.b.0.take() else {
            return;
        };
        b.clear();
        // A thread being torn down has no spare list any more; the vectors are just freed.
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                s.push(b);
            }
        });
    }
}

impl<'p> Tx<'p> {
    pub(crate) fn new(p: &'p Inner, li: usize) -> Tx<'p> {
        let log = &p.logs[li];
        let b = SPARE
            .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.pop()))
            .ok()
            .flatten()
            .unwrap_or_default();
        Tx {
            p,
            log,
            finished: &p.finished[li],
            txid: p.next_txid.fetch_add(1, Ordering::Relaxed),
            n: 0,
            fwd: 0,
            held: 0,
            b: Held(Some(b)),
            batch: log.is_batch(),
            force: p.cfg.policy == Policy::Force,
            group: p.cfg.batch_group,
            need_fence: false,
            live_after: None,
        }
    }

    /// This transaction's identifier.
    pub fn id(&self) -> u64 {
        self.txid
    }

    /// Whether the transaction logged nothing yet (no record in the log or queued).
    fn logged_nothing(&self) -> bool {
        self.b.recs.is_empty() && self.b.queued.is_empty()
    }

    /// Append a forward record (UPDATE or DELETE), reserving room for what undoing and
    /// finishing it will log; under a grouped log, queue it for the next sync.
    fn append_fwd(&mut self, rec: Rec) -> Result<(), RewindError> {
        let b = &mut *self.b;
        let first = b.recs.is_empty() && b.queued.is_empty();
        let hold = usize::from(rec.kind == Kind::Update) + if first { 2 } else { 0 };
        if self.batch {
            b.queued.push((rec, hold));
            return Ok(());
        }
        let at = match self.log.append(&rec, self.n, Some(hold)) {
            Err(RewindError::LogFull { .. }) if !self.force => {
                checkpoint(self.p)?;
                self.log.append(&rec, self.n, Some(hold))?
            }
            r => r?,
        };
        self.n += 1;
        self.held += hold;
        self.b.recs.push(at);
        self.fwd += 1;
        Ok(())
    }

    /// Append a record paid for by an earlier reservation (CLR, ROLLBACK, END).
    fn append_reserved(&mut self, rec: Rec) -> Result<RecRef, RewindError> {
        let hold = if self.held == 0 { Some(0) } else { None };
        let at = self.log.append(&rec, self.n, hold)?;
        self.held = self.held.saturating_sub(1);
        self.n += 1;
        Ok(at)
    }

    #[inline]
    fn apply(&mut self, addr: usize, v: u64) {
        let r = &self.p.r;
        if self.force {
            r.write_nt(addr, &v.to_le_bytes());
            self.need_fence = true;
        } else {
            r.store_u64(addr, v);
        }
    }

    /// Append the queued records to the log, under one lock (none if they do not fit: then
    /// after a checkpoint and a retry under no-force).
    fn log_queued(&mut self) -> Result<(), RewindError> {
        if self.b.queued.is_empty() {
            return Ok(());
        }
        let b = &mut *self.b;
        match self.log.append_many(&b.queued, self.n, &mut b.recs) {
            Err(RewindError::LogFull { .. }) if !self.force => {
                checkpoint(self.p)?;
                self.log.append_many(&b.queued, self.n, &mut b.recs)?;
            }
            r => r?,
        }
        self.queued_appended();
        Ok(())
    }

    /// Account for the queued records, now in the log.
    fn queued_appended(&mut self) {
        let k = self.b.queued.len();
        self.n += k as u64;
        self.fwd += k as u64;
        self.held += self.b.queued.iter().map(|&(_, h)| h).sum::<usize>();
        self.b.queued.clear();
    }

    fn flush_pending(&mut self) -> Result<(), RewindError> {
        self.log_queued()?;
        if self.b.pending.is_empty() {
            return Ok(());
        }
        self.log.sync();
        let pending = std::mem::take(&mut self.b.pending);
        for &(a, v) in &pending {
            self.apply(a, v);
        }
        self.b.pending = pending;
        self.b.pending.clear();
        Ok(())
    }

    #[inline]
    fn read_word(&self, addr: usize) -> u64 {
        let pending = &self.b.pending;
        if !pending.is_empty()
            && let Some(&(_, v)) = pending.iter().rev().find(|(a, _)| *a == addr)
        {
            return v;
        }
        self.p.r.load_u64(addr)
    }

    /// Logged store of one aligned word.
    fn write_word(&mut self, addr: usize, new: u64) -> Result<(), RewindError> {
        let old = self.read_word(addr);
        if old == new {
            return Ok(());
        }
        self.append_fwd(Rec::update(self.txid, addr as u64, old, new))?;
        let line = addr & !63;
        let b = &mut *self.b;
        if b.lines.last() != Some(&line) {
            b.lines.push(line);
        }
        if self.batch {
            b.pending.push((addr, new));
            if b.pending.len() >= self.group {
                self.flush_pending()?;
            }
        } else {
            self.apply(addr, new);
        }
        Ok(())
    }

    /// Read a value (seeing this transaction's own writes).
    pub fn read<T: Persist>(&self, p: PPtr<T>) -> T {
        let mut buf = [0u8; 64];
        if T::SIZE <= buf.len() {
            self.read_into(p.offset(), &mut buf[..T::SIZE]);
            T::load(&buf[..T::SIZE])
        } else {
            let mut v = vec![0u8; T::SIZE];
            self.read_into(p.offset(), &mut v);
            T::load(&v)
        }
    }

    fn read_into(&self, off: u64, out: &mut [u8]) {
        let off = off as usize;
        self.p.r.read(off, out);
        for &(a, v) in &self.b.pending {
            let (lo, hi) = (a.max(off), (a + 8).min(off + out.len()));
            if lo < hi {
                let b = v.to_le_bytes();
                out[lo - off..hi - off].copy_from_slice(&b[lo - a..hi - a]);
            }
        }
    }

    /// Logged in-place write (REWIND's `log` call followed by the store).
    pub fn write<T: Persist>(&mut self, p: PPtr<T>, v: T) -> Result<(), RewindError> {
        if T::SIZE == 8 && p.offset().is_multiple_of(8) {
            // One aligned word (a u64, a pointer): no staging buffer, no word loop.
            let mut b = [0u8; 8];
            v.store(&mut b);
            return self.write_word(p.offset() as usize, u64::from_le_bytes(b));
        }
        let mut buf = [0u8; 64];
        if T::SIZE <= buf.len() {
            v.store(&mut buf[..T::SIZE]);
            self.write_range(p.offset(), &buf[..T::SIZE])
        } else {
            let mut b = vec![0u8; T::SIZE];
            v.store(&mut b);
            self.write_range(p.offset(), &b)
        }
    }

    fn write_range(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        let off = off as usize;
        let end = off + b.len();
        let mut w = off & !7;
        while w < end {
            let new = if w >= off && w + 8 <= end {
                let mut a = [0u8; 8];
                a.copy_from_slice(&b[w - off..w - off + 8]);
                u64::from_le_bytes(a)
            } else {
                let mut cur = self.read_word(w).to_le_bytes();
                let (lo, hi) = (w.max(off), (w + 8).min(end));
                cur[lo - w..hi - w].copy_from_slice(&b[lo - off..hi - off]);
                u64::from_le_bytes(cur)
            };
            self.write_word(w, new)?;
            w += 8;
        }
        Ok(())
    }

    /// Unlogged store into an object allocated by this transaction (see the module docs).
    pub fn init<T: Persist>(&mut self, p: PPtr<T>, v: T) -> Result<(), RewindError> {
        let mut b = vec![0u8; T::SIZE];
        v.store(&mut b);
        self.init_range(p.offset(), &b)
    }

    fn init_range(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        let off = off as usize;
        let fresh = self.b.allocs.iter().any(|&blk| {
            let size = self.p.alloc.usable(blk);
            off >= blk + BLOCK_HDR && off + b.len() <= blk + BLOCK_HDR + size
        });
        if !fresh {
            return Err(Refusal::InitOutsideObject {
                at: off as u64,
                len: b.len(),
            }
            .into());
        }
        if self
            .b
            .pending
            .iter()
            .any(|&(a, _)| a + 8 > off && a < off + b.len())
        {
            self.flush_pending()?;
        }
        let r = &self.p.r;
        r.write(off, b);
        r.flush(off, b.len());
        self.need_fence = true;
        Ok(())
    }

    /// Allocate `size` bytes in this transaction (undone if it rolls back).
    pub fn alloc<T>(&mut self, size: usize) -> Result<PPtr<T>, RewindError> {
        let (block, class) = self.p.alloc.take(size)?;
        if let Err(e) = self.write_word(block, header(class, true)) {
            self.p.alloc.release(block);
            return Err(e);
        }
        self.b.allocs.push(block);
        Ok(PPtr::from_offset((block + BLOCK_HDR) as u64))
    }

    /// Free an object: a DELETE record now, the actual free once it is safe (after commit
    /// under force, at the next checkpoint under no-force).
    pub fn free<T>(&mut self, p: PPtr<T>) -> Result<(), RewindError> {
        let off = p.offset();
        // In the heap; the header is read as this transaction sees it (a block it allocated
        // under the Batch layout has its header store still buffered).
        let block = self.p.alloc.heap_block(off)?;
        match parse_header(self.read_word(block)) {
            Some((_, true)) => {}
            Some((_, false)) => return Err(RewindError::DoubleFree(off)),
            None => return Err(RewindError::BadPointer(off)),
        }
        if self.b.frees.contains(&block) {
            return Err(RewindError::DoubleFree(off));
        }
        self.p.alloc.begin_free(off)?;
        if let Err(e) = self.append_fwd(Rec::delete(self.txid, block as u64)) {
            self.p.alloc.cancel_free(block);
            return Err(e);
        }
        self.b.frees.push(block);
        Ok(())
    }

    /// Set the pool's root pointer (logged).
    pub fn set_root<T>(&mut self, p: PPtr<T>) -> Result<(), RewindError> {
        self.write_word(crate::pool::H_ROOT, p.offset())
    }

    /// Commit (§4.3). On failure the transaction is left to be rolled back. By reference, as
    /// [`Tx::rollback`]: the caller keeps the transaction where it is (moving it in and out
    /// copied a few hundred bytes per transaction).
    pub(crate) fn commit(&mut self) -> Result<(), RewindError> {
        if self.logged_nothing() {
            if self.need_fence {
                self.p.r.fence();
            }
            self.p.stats.commits.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let end = match self.log_end() {
            Ok(e) => e,
            Err(RewindError::LogFull { .. }) if !self.force && !self.b.queued.is_empty() => {
                // The queued records did not fit (none went in): make room, outside the cut
                // lock a checkpoint takes, and try once more.
                checkpoint(self.p)?;
                self.log_end()?
            }
            Err(e) => return Err(e),
        };
        self.log.unreserve(self.held);
        self.held = 0;
        let p = self.p;
        if self.force {
            for &b in &self.b.frees {
                p.alloc.mark_free(b);
            }
            if !self.b.frees.is_empty() {
                p.r.fence();
            }
            if let Err(e) = self
                .log
                .clear_tx(self.txid, &self.b.recs, end, p.cfg.commit_clear)
            {
                // Committed and durable; the records are cleared by the next recovery.
                self.b.recs.clear();
                return Err(e);
            }
            for &b in &self.b.frees {
                p.alloc.release(b);
            }
        } else {
            let cap = self.log.capacity() as f64;
            let live = match self.live_after {
                Some(n) => n,
                None => self.log.live(),
            };
            if live as f64 > cap * p.cfg.checkpoint_fraction {
                // The transaction is committed whatever happens here; a failed checkpoint
                // leaves the records for the next one or for recovery.
                let _ = checkpoint(p);
            }
        }
        p.stats.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Number the transaction and log its END; under no-force, queue it for the checkpoint
    /// while the commit side of the cut lock is still held (see `pool::checkpoint`).
    fn log_end(&mut self) -> Result<RecRef, RewindError> {
        let p = self.p;
        let _cut = p.cut.read().unwrap_or_else(|e| e.into_inner());
        let seq = p.commit_seq.fetch_add(1, Ordering::SeqCst) + 1;
        let at = self.append_end(seq)?;
        if !self.force {
            let mut q = self.finished.lock().unwrap_or_else(|e| e.into_inner());
            q.push(seq, &self.b.recs, at, &self.b.lines, &self.b.frees);
        }
        Ok(at)
    }

    fn append_end(&mut self, seq: u64) -> Result<RecRef, RewindError> {
        let p = self.p;
        let end = Rec::end(self.txid, seq, false);
        if self.batch {
            if self.force {
                self.flush_pending()?;
                p.r.fence();
                let at = self.append_reserved(end)?;
                self.log.sync();
                Ok(at)
            } else {
                // The queued records, END, the release of what the transaction reserved and
                // the sync under one lock of the log.
                let held = self.held + self.b.queued.iter().map(|&(_, h)| h).sum::<usize>();
                let hold = if held == 0 { Some(0) } else { None };
                let release = held.saturating_sub(1);
                let log = self.log;
                let before = self.b.recs.len();
                let b = &mut *self.b;
                let r = log.append_end(&b.queued, &mut b.recs, &end, self.n, hold, release);
                if self.b.recs.len() > before {
                    // The queued records went in (all of them: a group fits whole or not).
                    self.queued_appended();
                }
                let (at, live) = r?;
                self.held = 0;
                self.n += 1;
                self.live_after = Some(live);
                let pending = std::mem::take(&mut self.b.pending);
                for &(a, v) in &pending {
                    self.apply(a, v);
                }
                self.b.pending = pending;
                self.b.pending.clear();
                Ok(at)
            }
        } else {
            if self.force || self.need_fence {
                p.r.fence();
            }
            self.append_reserved(end)
        }
    }

    /// Leave the transaction unfinished (see `Pool::abandon_transaction`): its queued
    /// records are logged and its deferred stores applied after syncing the log, as a crash
    /// could find them.
    pub(crate) fn abandon(mut self) -> Result<(), RewindError> {
        self.flush_pending()?;
        self.log.sync();
        Ok(())
    }

    /// Commit up to the END record and stop (see `Pool::crash_before_clearing`): under force
    /// the records stay in the log and the deferred frees unprocessed, as a crash between
    /// logging END and clearing leaves them; under no-force this is a commit without its
    /// checkpoint check.
    pub(crate) fn commit_uncleared(mut self) -> Result<(), RewindError> {
        if self.logged_nothing() {
            if self.need_fence {
                self.p.r.fence();
            }
            return Ok(());
        }
        self.log_end()?;
        self.log.unreserve(self.held);
        self.held = 0;
        self.log.sync();
        Ok(())
    }

    /// Roll back (§4.4).
    pub(crate) fn rollback(&mut self) -> Result<(), RewindError> {
        let p = self.p;
        // Deferred stores never reached memory; their records are compensated below like
        // the others (restoring a value that is still there), or, still queued, dropped with
        // them.
        self.b.pending.clear();
        self.b.queued.clear();
        if self.b.recs.is_empty() {
            for &b in &self.b.frees {
                p.alloc.cancel_free(b);
            }
            p.stats.aborts.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let rb = self.append_reserved(Rec::rollback(self.txid))?;
        self.b.recs.push(rb);
        let mine = self.log.tx_records_rev(self.txid)?;
        let mut skip = 0usize;
        for (_, rec) in mine {
            match rec.kind {
                Kind::Clr => skip += 1,
                Kind::Update if skip > 0 => skip -= 1,
                Kind::Update => {
                    let c = self.append_reserved(Rec::clr(self.txid, rec.addr, rec.old))?;
                    self.b.recs.push(c);
                    let a = rec.addr as usize;
                    p.r.store_u64(a, rec.old);
                    if self.force {
                        p.r.persist(a, 8);
                    }
                }
                _ => {}
            }
        }
        let end = {
            let _cut = p.cut.read().unwrap_or_else(|e| e.into_inner());
            let seq = p.commit_seq.fetch_add(1, Ordering::SeqCst) + 1;
            let at = self.append_reserved(Rec::end(self.txid, seq, true))?;
            self.log.sync();
            if !self.force {
                let mut q = self.finished.lock().unwrap_or_else(|e| e.into_inner());
                q.push(seq, &self.b.recs, at, &self.b.lines, &[]);
            }
            at
        };
        self.log.unreserve(self.held);
        self.held = 0;
        if self.force {
            self.log
                .clear_tx(self.txid, &self.b.recs, end, p.cfg.commit_clear)?;
        }
        for &b in &self.b.allocs {
            p.alloc.release(b);
        }
        for &b in &self.b.frees {
            p.alloc.cancel_free(b);
        }
        p.stats.aborts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

impl Mem for Tx<'_> {
    #[inline]
    fn read_u64(&self, off: u64) -> u64 {
        self.read_word(off as usize)
    }
    #[inline]
    fn read_bytes(&self, off: u64, out: &mut [u8]) {
        self.read_into(off, out)
    }
    #[inline]
    fn words(&self) -> Option<Words<'_>> {
        if self.b.pending.is_empty() {
            let r = &self.p.r;
            Some(r.words(0, r.len() / 8))
        } else {
            None
        }
    }
    #[inline]
    fn write_u64(&mut self, off: u64, v: u64) -> Result<(), RewindError> {
        self.write_word(off as usize, v)
    }
    #[inline]
    fn write_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        self.write_range(off, b)
    }
    fn init_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        self.init_range(off, b)
    }
    fn alloc(&mut self, size: usize) -> Result<u64, RewindError> {
        Tx::alloc::<u8>(self, size).map(PPtr::offset)
    }
    fn free(&mut self, off: u64) -> Result<(), RewindError> {
        Tx::free(self, PPtr::<u8>::from_offset(off))
    }
    fn logs_stores(&self) -> bool {
        true
    }
}
