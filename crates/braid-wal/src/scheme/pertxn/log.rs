//! The running NV-Logging log (Huang et al. 2014, Sections 4.2-4.4 and 5.1-5.2): the global
//! LSN, per-worker DRAM log objects copied into pre-allocated persistent slots, the two
//! persistence policies, the durable frontier that acknowledges commits, and abort objects.
//!
//! # Inserting a log object
//!
//! A [`LogWriter`](super::LogWriter) (one per worker) owns a DRAM buffer, allocated once and reused, in which it
//! builds each log object completely (a braid record whose `lsn` is the object's LSN). It takes
//! the object's LSN from the global 64-bit counter (one `fetch_add`; a transaction whose payload
//! needs several objects takes that many consecutive LSNs at once), waits if the entry of that
//! LSN still belongs to an untruncated object (the index is full), and copies the object into
//! the slot of its entry. Then, in the order of Section 5.2:
//!
//! * **flush-on-insert**: the object is copied with streaming stores (or stores and cache-line
//!   flushes, [`PmemWrite`](crate::device::pmem::PmemWrite)), a fence makes it durable, then the entry's state word
//!   (`lsn << 1 | 1`, one atomic 8-byte store) is written, flushed and fenced. The worker does
//!   this itself before `commit` returns.
//! * **flush-on-commit**: the object is copied with ordinary cached stores and marked *filled*
//!   in DRAM; the flush daemon later claims filled objects in LSN order, writes back their
//!   lines, fences once for the whole batch, then writes, flushes and fences their state words.
//!   A commit whose ticket is waited on (or polled) persists every filled object it depends on
//!   itself (the paper's "persistence is ensured by calling the procedure flush-on-insert").
//!   Choice: the paper's daemon copies the DRAM object to NVRAM; here the worker copies it to
//!   its slot with cached stores and the daemon does the write-back, so the volatile copy the
//!   daemon persists is the cache's and no second copy is made. Either way nothing of the
//!   object is trusted before its state word is set, and the emulated NVM latency (charged per
//!   written-back line) is paid by the daemon, off the commit path.
//!
//! # Acknowledgement without a global lock
//!
//! Early lock release lets a transaction read writes whose objects are not persistent yet, so a
//! commit may be acknowledged only when every object with a smaller LSN is persistent too. Each
//! index entry has a DRAM state word packing (LSN, object lines, phase). The *frontier* is the
//! smallest LSN not known persistent. Whoever persists an object marks its entry `PERSISTED`
//! and then tries to advance the frontier: it scans forward from the frontier over consecutive
//! persisted entries and moves it with one compare-and-swap. No lock is taken: the marks are
//! `SeqCst` stores and the scans `SeqCst` loads, so of two threads marking LSNs `a < b`, the
//! one that marks last sees the other's mark when it scans; the frontier therefore never stops
//! short of a persisted run for lack of a thread to move it. A ticket resolves once the
//! frontier passes its transaction's last LSN. The only shared words on the hot path are the
//! LSN counter (one `fetch_add`) and the frontier (one CAS per run of objects).
//!
//! Waiters wait in the log's [`Progress`](crate::wait::Progress): they spin briefly, yield,
//! then park until the frontier moves (every successful compare-and-swap of the frontier
//! notifies), the head moves (a truncation), or the log is poisoned or closed (on a machine
//! with few cores a spinning waiter steals the CPU from the worker it waits for).
//!
//! # Aborts
//!
//! Section 4.4: a transaction that aborts after some of its objects were inserted gets an
//! abort object, so recovery drops those objects. The engine hands the scheme a whole
//! transaction at commit, so through the scheme seam this only happens when a commit fails
//! between two objects of one transaction; [`LogWriter::insert`](super::LogWriter::insert) with `commit = false` and
//! [`LogWriter::abort`](super::LogWriter::abort) expose it to engines that log per update.
//!
//! # Failures
//!
//! An allocated LSN must be filled, or the frontier never passes it. Nothing can fail between
//! the allocation and the copy except waiting for index space; if that wait ends in an error
//! (the backup thread failed, the log was closed, or no space came for [`FULL_WAIT`]) the log
//! is poisoned: every later insert and every ticket not yet durable fails with the cause.
//! Persisting cannot report an error where it happens (a failed `msync` of a region on a
//! page-cache file system is kept by the region); the frontier asks the region
//! ([`Region::check`]) before every advance and poisons the log on a failure, so no object
//! persisted after it is reported durable.
//!
//! Files: this one holds the shared state (index entries, counters, poisoning, waiting for
//! index space); `writer.rs` inserts log objects; `frontier.rs` persists them and moves the
//! durable frontier; `daemon.rs` runs the flush daemon and the backup thread.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use braid_pmem::Region;
use crossbeam_utils::CachePadded;

use super::PerTxnConfig;
use super::layout::Layout;
use crate::wait::Progress;
use crate::{Lsn, WalError};

/// How long an insert waits for index space before the log is declared stuck.
pub(crate) const FULL_WAIT: Duration = Duration::from_secs(20);

/// Phases of a DRAM slot state word.
pub(super) const EMPTY: u64 = 0;
pub(super) const FILLED: u64 = 1;
pub(super) const PERSISTING: u64 = 2;
pub(super) const PERSISTED: u64 = 3;

#[inline]
pub(super) fn pack(lsn: u64, lines: u64, phase: u64) -> u64 {
    (lsn << 16) | (lines << 2) | phase
}

#[inline]
pub(super) fn unpack(w: u64) -> (u64, u64, u64) {
    (w >> 16, (w >> 2) & 0x3FFF, w & 3)
}

/// Counters of a running log (the tests print them all in their failure messages).
#[derive(Debug, Clone, Copy, Default)]
#[cfg(test)]
#[allow(dead_code)]
pub(crate) struct PerTxnStats {
    /// Objects inserted.
    pub objects: u64,
    /// Object bytes copied into slots (records with padding).
    pub bytes: u64,
    /// Objects persisted by the flush daemon (flush-on-commit).
    pub daemon_persisted: u64,
    /// Objects persisted by a waiting commit (flush-on-commit).
    pub helped: u64,
    /// Truncations (head advances).
    pub truncations: u64,
    /// Objects copied to the backup files.
    pub backed_up: u64,
}

/// One writer's counts, written by that writer only (a relaxed load and store), on lines of
/// their own.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct WriterStats {
    objects: AtomicU64,
    bytes: AtomicU64,
}

impl WriterStats {
    /// Count `objects` objects of `bytes` bytes.
    #[inline]
    pub(crate) fn add(&self, objects: u64, bytes: u64) {
        self.objects
            .store(self.objects.load(Relaxed) + objects, Relaxed);
        self.bytes.store(self.bytes.load(Relaxed) + bytes, Relaxed);
    }
}

/// State shared by writers, tickets and the background threads.
pub(crate) struct Shared {
    pub(crate) region: Region,
    pub(crate) layout: Layout,
    pub(crate) opts: PerTxnConfig,
    /// Consumed entries that trigger truncation.
    pub(crate) truncate_at: u64,
    /// The global LSN counter: the next object's LSN.
    pub(crate) next_lsn: CachePadded<AtomicU64>,
    /// Every object below it is persistent.
    pub(crate) frontier: CachePadded<AtomicU64>,
    /// DRAM copy of the persistent head, published after the truncated entries were cleared:
    /// the entry of LSN `l` may be written once `l < head + entries`.
    pub(crate) head: CachePadded<AtomicU64>,
    /// Per entry: packed (lsn, lines, phase).
    pub(super) slots: Box<[AtomicU64]>,
    poison: OnceLock<WalError>,
    pub(crate) closed: AtomicBool,
    /// Closing finished: the background threads persisted what they could and stopped.
    pub(crate) stopped: AtomicBool,
    /// Writers waiting for index space.
    pub(crate) space_waiters: AtomicUsize,
    /// Tickets waiting for the frontier and writers waiting for index space wait here;
    /// notified when the frontier or the head moves and when the log is poisoned or closed.
    pub(crate) progress: Progress,
    /// The flush daemon sleeps (flush-on-commit): the next filled object wakes it.
    pub(crate) daemon_asleep: AtomicBool,
    pub(crate) daemon: OnceLock<Thread>,
    pub(crate) backup: OnceLock<Thread>,
    /// Each writer's object and byte counts (single-writer words: a global statistics word
    /// would be one more read-modify-write every worker makes per object), and the sums of
    /// writers that are gone.
    pub(crate) writer_stats: parking_lot::Mutex<Vec<Arc<WriterStats>>>,
    pub(crate) daemon_persisted: AtomicU64,
    pub(crate) helped: AtomicU64,
    pub(crate) truncations: AtomicU64,
    pub(crate) backed_up: AtomicU64,
    /// (object LSN, backup byte LSN) of some backed-up objects, oldest first, about one per
    /// MiB of backup: where checkpoint truncation may cut the backup files.
    pub(crate) backup_marks: parking_lot::Mutex<std::collections::VecDeque<(Lsn, Lsn)>>,
    /// Objects below this are held by a durable checkpoint: truncation drops them from the
    /// index without backing them up.
    pub(crate) ckpt_floor: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        region: Region,
        layout: Layout,
        opts: PerTxnConfig,
        next: Lsn,
        head: Lsn,
    ) -> Shared {
        let truncate_at = match opts.truncate_entries {
            0 => layout.entries / 2,
            n => n.min(layout.entries),
        }
        .max(1);
        Shared {
            region,
            layout,
            opts,
            truncate_at,
            next_lsn: CachePadded::new(AtomicU64::new(next)),
            frontier: CachePadded::new(AtomicU64::new(next)),
            head: CachePadded::new(AtomicU64::new(head)),
            slots: (0..layout.entries)
                .map(|_| AtomicU64::new(pack(0, 0, EMPTY)))
                .collect(),
            poison: OnceLock::new(),
            closed: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            space_waiters: AtomicUsize::new(0),
            progress: Progress::new(),
            daemon_asleep: AtomicBool::new(false),
            daemon: OnceLock::new(),
            backup: OnceLock::new(),
            writer_stats: Default::default(),
            daemon_persisted: AtomicU64::new(0),
            helped: AtomicU64::new(0),
            truncations: AtomicU64::new(0),
            backed_up: AtomicU64::new(0),
            backup_marks: Default::default(),
            ckpt_floor: AtomicU64::new(0),
        }
    }

    /// A new writer's statistics cell (the cells of writers that are gone are folded into
    /// one, so a log that hands out many writers keeps a short list).
    pub(crate) fn stats_cell(&self) -> Arc<WriterStats> {
        let cell = Arc::new(WriterStats::default());
        let mut cells = self.writer_stats.lock();
        if cells.iter().filter(|c| Arc::strong_count(c) == 1).count() > 1 {
            let retired = WriterStats::default();
            cells.retain(|c| {
                if Arc::strong_count(c) > 1 {
                    return true;
                }
                retired.add(c.objects.load(Relaxed), c.bytes.load(Relaxed));
                false
            });
            cells.push(Arc::new(retired));
        }
        cells.push(Arc::clone(&cell));
        cell
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> PerTxnStats {
        let (objects, bytes) = self.writer_stats.lock().iter().fold((0, 0), |(o, b), c| {
            (o + c.objects.load(Relaxed), b + c.bytes.load(Relaxed))
        });
        PerTxnStats {
            objects,
            bytes,
            daemon_persisted: self.daemon_persisted.load(Relaxed),
            helped: self.helped.load(Relaxed),
            truncations: self.truncations.load(Relaxed),
            backed_up: self.backed_up.load(Relaxed),
        }
    }

    /// Record the first failure; later ones keep it.
    pub(crate) fn poison(&self, cause: &WalError) {
        let _ = self.poison.set(WalError::Poisoned {
            stream: 0,
            during: "the per-transaction log".to_string(),
            cause: Arc::new(cause.clone()),
        });
        self.wake_threads();
        self.progress.notify();
    }

    pub(crate) fn poisoned(&self) -> Option<WalError> {
        self.poison.get().cloned()
    }

    pub(crate) fn wake_threads(&self) {
        if let Some(t) = self.daemon.get() {
            t.unpark();
        }
        if let Some(t) = self.backup.get() {
            t.unpark();
        }
    }

    pub(super) fn check_open(&self) -> Result<(), WalError> {
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        if self.closed.load(Acquire) {
            return Err(WalError::Closed(0));
        }
        Ok(())
    }

    /// Block until the entry of `lsn` is free (`lsn < head + entries`).
    pub(super) fn wait_for_space(&self, lsn: Lsn) -> Result<(), WalError> {
        if lsn < self.head.load(Acquire) + self.layout.entries {
            return Ok(());
        }
        self.space_waiters.fetch_add(1, SeqCst);
        // The backup thread truncates sooner for a waiter (it reads `space_waiters`), and
        // notifies once it moved the head.
        if let Some(t) = self.backup.get() {
            t.unpark();
        }
        let deadline = Instant::now() + FULL_WAIT;
        let result = self
            .progress
            .wait_until(deadline, || {
                if lsn < self.head.load(Acquire) + self.layout.entries {
                    return Some(Ok(()));
                }
                if let Some(e) = self.poisoned() {
                    return Some(Err(e));
                }
                self.closed
                    .load(Acquire)
                    .then_some(Err(WalError::Closed(0)))
            })
            .unwrap_or_else(|| {
                Err(WalError::LogFull {
                    ring: crate::FullRing::PertxnIndex {
                        entries: self.layout.entries,
                        lsn,
                        waited: FULL_WAIT,
                    },
                })
            });
        self.space_waiters.fetch_sub(1, SeqCst);
        result
    }
}
