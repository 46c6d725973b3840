//! The persistent pool: region layout, configuration, the set of logs, checkpoints (REWIND
//! §4.6) and the entry point of transactions.
//!
//! Region layout (all offsets fixed by the configuration and the region size, so a reopened
//! pool finds everything again): a 256-byte header (magic, version, size, the configuration,
//! the root pointer, the heap bounds and the persistent top-of-heap word), one 512-byte
//! descriptor per log, the logs' node arenas, then the heap. The magic is written and
//! persisted last at creation, so a crash during creation leaves no pool.
//!
//! Choices where the paper is open:
//! * Per-thread logs (the distributed log of §5.3): a thread uses log `t mod n`, where `t` is
//!   a process-wide thread number; each log has its own lock, so threads beyond `n` share.
//! * Checkpoints (no-force) remove whole transactions in commit order, END last, after
//!   flushing the cache lines their records name (the paper flushes "the cache"; user mode
//!   cannot, and the records say exactly which lines a transaction dirtied). The set removed is
//!   a prefix of the commit order: the commit sequence is read under a write lock that every
//!   commit holds (read side) while it assigns its number and appends its END, so no
//!   transaction below the cut is still committing. Removing only a prefix keeps redo, which
//!   replays committed transactions in commit order, from ever replaying an older write over
//!   a newer one whose record was already removed. This replaces the paper's CHECKPOINT record,
//!   which marks the same boundary for a single log. The removal is done in bulk, with a
//!   fence before it, one after every removed transaction's other records and one after their
//!   END records: before removing anything the checkpoint persists its cut (the highest commit
//!   number it covers) in the pool header, and recovery does not redo transactions at or
//!   below the cut, whose writes the checkpoint made durable. So a crash half-way through the
//!   removal, which may leave any subset of those records, never lets redo replay an older
//!   write over a newer one, and a checkpoint costs four fences whatever it removes (REWIND's
//!   per-transaction removal costs two fences per transaction). Commit numbers keep growing
//!   across recoveries (they restart above the cut), so the cut never needs resetting.
//! * A no-force pool checkpoints by itself when a log passes `checkpoint_fraction` of its
//!   capacity after a commit, or is full.
//!
//! Files: `config.rs` (the configuration), `layout.rs` (header and descriptor offsets),
//! `open.rs` (creating, opening and recovering), `logs.rs` (one- or two-layer logs behind one
//! interface), `checkpoint.rs`; this one holds the pool handle and transactions' entry point.

mod checkpoint;
mod config;
mod layout;
mod logs;
mod open;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use braid_pmem::{PmemStats, Region};

use crate::alloc::{Allocator, HeapReport};
use crate::pptr::PPtr;
use crate::tx::Tx;
use crate::{CheckError, RewindError};

pub(crate) use checkpoint::{Finished, checkpoint};
pub use config::{CommitClear, Layers, LogMode, Policy, PoolConfig};
pub(crate) use layout::{H_CUT, H_ROOT};
pub(crate) use logs::{Log, RecRef};

pub(crate) struct Inner {
    pub r: Region,
    pub cfg: PoolConfig,
    pub logs: Vec<Log>,
    pub alloc: Allocator,
    pub next_txid: AtomicU64,
    pub commit_seq: AtomicU64,
    /// Commits hold the read side while they number themselves and log END; a checkpoint
    /// takes the write side to read a cut of the commit order.
    pub cut: RwLock<()>,
    /// Per log, the finished transactions no checkpoint removed yet (no-force).
    pub finished: Vec<Mutex<Finished>>,
    /// A checkpoint failed after taking the queues: the next one scans the logs.
    pub rescan: AtomicBool,
    /// Serialises checkpoints; holds one spare queue per log to swap with `finished`.
    pub ckpt: Mutex<Vec<Finished>>,
    /// Distinct lines the last checkpoint wrote back: the size its successor's set of
    /// lines starts from (a hint; the set grows as needed).
    pub ckpt_lines: AtomicUsize,
    pub stats: Counters,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub commits: AtomicU64,
    pub aborts: AtomicU64,
    pub records: AtomicU64,
    pub checkpoints: AtomicU64,
}

/// Counters of a pool since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStats {
    /// Transactions committed.
    pub commits: u64,
    /// Transactions rolled back.
    pub aborts: u64,
    /// UPDATE and DELETE records appended by transactions.
    pub records: u64,
    /// Checkpoints that removed at least one transaction.
    pub checkpoints: u64,
    /// Records currently in the logs.
    pub live_records: u64,
}

/// A REWIND pool. Cheap to clone (shared handle); Send + Sync.
#[derive(Clone)]
pub struct Pool {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("config", &self.inner.cfg)
            .field("region", &self.inner.r)
            .finish()
    }
}

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static THREAD_NO: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn thread_no() -> usize {
    THREAD_NO.with(|c| {
        if c.get() == usize::MAX {
            c.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        c.get()
    })
}

impl Pool {
    /// Run `f` as one transaction. `Ok` commits (durable when this returns); `Err` rolls
    /// back and returns the error; a panic rolls back and continues unwinding.
    pub fn transaction<R, E, F>(&self, f: F) -> Result<R, E>
    where
        F: FnOnce(&mut Tx<'_>) -> Result<R, E>,
        E: From<RewindError>,
    {
        let mut tx = self.begin();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut tx))) {
            Ok(Ok(v)) => match tx.commit() {
                Ok(()) => Ok(v),
                Err(e) => {
                    tx.rollback().map_err(E::from)?;
                    Err(E::from(e))
                }
            },
            Ok(Err(e)) => {
                tx.rollback().map_err(E::from)?;
                Err(e)
            }
            Err(panic) => {
                // The transaction is rolled back before the panic continues; a failure of the
                // rollback itself is left for recovery at the next open.
                let _ = tx.rollback();
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Run `f` as a transaction and then abandon it, neither committing nor rolling back:
    /// what a crash right after `f` leaves in the log (its records and its in-place writes).
    /// If `f` fails, the transaction is dropped unfinished as it stood (records not yet
    /// synced may be lost, as in a crash during `f`) and the error is returned.
    ///
    /// For recovery experiments and tests (e.g. timing recovery of many unfinished
    /// transactions): the pool may go on running transactions that write other words (this
    /// one's reserved log room stays taken), and is then dropped and its region reopened
    /// with [`Pool::open_in`], whose recovery undoes the transaction.
    pub fn abandon_transaction<R, F>(&self, f: F) -> Result<R, RewindError>
    where
        F: FnOnce(&mut Tx<'_>) -> Result<R, RewindError>,
    {
        let mut tx = self.begin();
        let v = f(&mut tx)?;
        tx.abandon()?;
        Ok(v)
    }

    /// A transaction on this thread's log.
    fn begin(&self) -> Tx<'_> {
        let inner = &*self.inner;
        Tx::new(inner, thread_no() % inner.logs.len())
    }

    /// Run `f` as a transaction and commit it up to its END record, then stop where a crash
    /// between logging END and clearing the log would (REWIND §5.1, the recovery half of
    /// Fig. 4): under force its records stay in the log, to be skipped and cleared by the
    /// next recovery; under no-force this is a commit (checkpoints clear the log anyway).
    /// If `f` fails, the transaction is dropped unfinished as [`Pool::abandon_transaction`]
    /// drops it and the error is returned.
    ///
    /// For recovery experiments and tests, like [`Pool::abandon_transaction`]: the pool may
    /// go on running transactions that write other words, and is then dropped and its region
    /// reopened with [`Pool::open_in`].
    pub fn crash_before_clearing<R, F>(&self, f: F) -> Result<R, RewindError>
    where
        F: FnOnce(&mut Tx<'_>) -> Result<R, RewindError>,
    {
        let mut tx = self.begin();
        let v = f(&mut tx)?;
        tx.commit_uncleared()?;
        Ok(v)
    }

    /// The root object (null until a transaction sets it with [`Tx::set_root`]).
    pub fn root<T>(&self) -> PPtr<T> {
        PPtr::from_offset(self.inner.r.load_u64(H_ROOT))
    }

    /// Read a value outside a transaction.
    pub fn read<T: crate::Persist>(&self, p: PPtr<T>) -> T {
        let mut buf = [0u8; 256];
        let mut v;
        let b: &mut [u8] = if T::SIZE <= buf.len() {
            &mut buf[..T::SIZE]
        } else {
            v = vec![0u8; T::SIZE];
            &mut v
        };
        self.inner.r.read(p.offset() as usize, b);
        T::load(b)
    }

    /// The region under the pool.
    pub fn region(&self) -> &Region {
        &self.inner.r
    }

    /// The pool's configuration (as stored in the pool at creation).
    pub fn config(&self) -> PoolConfig {
        self.inner.cfg
    }

    /// Persistence counters of the region (flushes, fences).
    pub fn pmem_stats(&self) -> PmemStats {
        self.inner.r.stats()
    }

    /// Counters since the pool was opened.
    pub fn stats(&self) -> PoolStats {
        let s = &self.inner.stats;
        PoolStats {
            commits: s.commits.load(Ordering::Relaxed),
            aborts: s.aborts.load(Ordering::Relaxed),
            records: s.records.load(Ordering::Relaxed),
            checkpoints: s.checkpoints.load(Ordering::Relaxed),
            live_records: self.inner.logs.iter().map(|l| l.live() as u64).sum(),
        }
    }

    /// Walk the heap (allocated blocks, free blocks).
    pub fn heap_report(&self) -> Result<HeapReport, RewindError> {
        self.inner.alloc.report()
    }

    /// Check that the allocator's free lists hold exactly the free blocks (tests).
    pub fn check_allocator(&self) -> Result<(), CheckError> {
        self.inner.alloc.check_free_lists()
    }

    /// Check the AVL indexes of two-layer logs (tests); returns the records they hold.
    pub fn check_logs(&self) -> Result<usize, CheckError> {
        let mut n = 0;
        for l in &self.inner.logs {
            match l {
                Log::Two(t) => n += t.check()?,
                Log::One(s) => n += s.live(),
            }
        }
        Ok(n)
    }

    /// Usable bytes of the object at `p` (its block's size).
    pub fn usable_size<T>(&self, p: PPtr<T>) -> Result<usize, RewindError> {
        let b = self.inner.alloc.block_of(p.offset())?;
        Ok(self.inner.alloc.usable(b))
    }

    /// Checkpoint (REWIND §4.6, no-force): flush the data of completed transactions, process
    /// their deferred frees, and remove their records, in commit order. Returns the number
    /// of transactions removed. Under force it only removes leftovers (none in normal runs).
    pub fn checkpoint(&self) -> Result<usize, RewindError> {
        checkpoint(&self.inner)
    }

    /// Non-transactional allocation for non-recoverable code (the B+-tree twin, bulk
    /// loading): the header is persisted at once and nothing is logged.
    pub fn raw_alloc(&self, size: usize) -> Result<PPtr<u8>, RewindError> {
        let a = &self.inner.alloc;
        let (block, class) = a.take(size)?;
        let r = &self.inner.r;
        r.store_u64(block, crate::alloc::header(class, true));
        r.persist(block, 8);
        Ok(PPtr::from_offset((block + crate::alloc::BLOCK_HDR) as u64))
    }

    /// Non-transactional free (see [`Pool::raw_alloc`]).
    pub fn raw_free<T>(&self, p: PPtr<T>) -> Result<(), RewindError> {
        let a = &self.inner.alloc;
        let block = a.block_of(p.offset())?;
        a.mark_free(block);
        self.inner.r.fence();
        a.release(block);
        Ok(())
    }

    /// Set the root pointer outside a transaction (non-recoverable code).
    pub fn raw_set_root<T>(&self, p: PPtr<T>) {
        self.inner.r.store_u64(H_ROOT, p.offset());
        self.inner.r.persist(H_ROOT, 8);
    }
}
