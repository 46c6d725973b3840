//! The running NV-Logging log (Huang et al. 2014, Sections 4.2-4.4 and 5.1-5.2): the global
//! LSN, per-worker DRAM log objects copied into pre-allocated persistent slots, the two
//! persistence policies, the durable frontier that acknowledges commits, and abort objects.
//!
//! # Inserting a log object
//!
//! A [`LogWriter`] (one per worker) owns a DRAM buffer, allocated once and reused, in which it
//! builds each log object completely (a braid record whose `lsn` is the object's LSN). It takes
//! the object's LSN from the global 64-bit counter (one `fetch_add`; a transaction whose payload
//! needs several objects takes that many consecutive LSNs at once), waits if the entry of that
//! LSN still belongs to an untruncated object (the index is full), and copies the object into
//! the slot of its entry. Then, in the order of Section 5.2:
//!
//! * **flush-on-insert**: the object is copied with streaming stores (or stores and cache-line
//!   flushes, [`PmemWrite`]), a fence makes it durable, then the entry's state word
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
//! Waiters spin briefly, then yield, then sleep for short growing intervals (on a machine with
//! few cores a spinning waiter steals the CPU from the worker it waits for).
//!
//! # Aborts
//!
//! Section 4.4: a transaction that aborts after some of its objects were inserted gets an
//! abort object, so recovery drops those objects. The engine hands the scheme a whole
//! transaction at commit, so through the scheme seam this only happens when a commit fails
//! between two objects of one transaction; [`LogWriter::insert`] with `commit = false` and
//! [`LogWriter::abort`] expose it to engines that log per update.
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

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use braid_pmem::{CACHE_LINE, Region};
use crossbeam_utils::CachePadded;

use super::layout::{self, Layout};
use super::{FlushPolicy, PerTxnOptions};
use crate::device::pmem::PmemWrite;
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp, align_up};
use crate::scheme::DurabilityWait;
use crate::{Lsn, WalError};

/// How long an insert waits for index space before the log is declared stuck.
pub const FULL_WAIT: Duration = Duration::from_secs(20);

/// Phases of a DRAM slot state word.
const EMPTY: u64 = 0;
const FILLED: u64 = 1;
const PERSISTING: u64 = 2;
const PERSISTED: u64 = 3;

#[inline]
fn pack(lsn: u64, lines: u64, phase: u64) -> u64 {
    (lsn << 16) | (lines << 2) | phase
}

#[inline]
fn unpack(w: u64) -> (u64, u64, u64) {
    (w >> 16, (w >> 2) & 0x3FFF, w & 3)
}

/// Counters of a running log.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerTxnStats {
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

/// State shared by writers, tickets and the background threads.
pub(crate) struct Shared {
    pub(crate) region: Region,
    pub(crate) layout: Layout,
    pub(crate) opts: PerTxnOptions,
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
    slots: Box<[AtomicU64]>,
    poison: OnceLock<WalError>,
    pub(crate) closed: AtomicBool,
    /// Closing finished: the background threads persisted what they could and stopped.
    pub(crate) stopped: AtomicBool,
    /// Writers waiting for index space.
    pub(crate) space_waiters: AtomicUsize,
    /// The flush daemon sleeps (flush-on-commit): the next filled object wakes it.
    pub(crate) daemon_asleep: AtomicBool,
    pub(crate) daemon: OnceLock<Thread>,
    pub(crate) backup: OnceLock<Thread>,
    pub(crate) objects: AtomicU64,
    pub(crate) bytes: AtomicU64,
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
        opts: PerTxnOptions,
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
            daemon_asleep: AtomicBool::new(false),
            daemon: OnceLock::new(),
            backup: OnceLock::new(),
            objects: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            daemon_persisted: AtomicU64::new(0),
            helped: AtomicU64::new(0),
            truncations: AtomicU64::new(0),
            backed_up: AtomicU64::new(0),
            backup_marks: Default::default(),
            ckpt_floor: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> PerTxnStats {
        PerTxnStats {
            objects: self.objects.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
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
            cause: cause.to_string(),
        });
        self.wake_threads();
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

    fn check_open(&self) -> Result<(), WalError> {
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        if self.closed.load(Acquire) {
            return Err(WalError::Closed(0));
        }
        Ok(())
    }

    /// Block until the entry of `lsn` is free (`lsn < head + entries`).
    fn wait_for_space(&self, lsn: Lsn) -> Result<(), WalError> {
        if lsn < self.head.load(Acquire) + self.layout.entries {
            return Ok(());
        }
        self.space_waiters.fetch_add(1, SeqCst);
        let mut backoff = Backoff::new();
        let started = Instant::now();
        let result = loop {
            if let Some(t) = self.backup.get() {
                t.unpark();
            }
            if lsn < self.head.load(Acquire) + self.layout.entries {
                break Ok(());
            }
            if let Some(e) = self.poisoned() {
                break Err(e);
            }
            if self.closed.load(Acquire) {
                break Err(WalError::Closed(0));
            }
            if started.elapsed() > FULL_WAIT {
                break Err(WalError::LogFull {
                    what: format!(
                        "index of {} entries (no truncation freed an entry for LSN {lsn} within {FULL_WAIT:?})",
                        self.layout.entries
                    ),
                });
            }
            backoff.snooze();
        };
        self.space_waiters.fetch_sub(1, SeqCst);
        result
    }

    /// Mark `lsn` persisted (its object and its state word are durable).
    #[inline]
    fn mark_persisted(&self, lsn: Lsn, lines: u64) {
        self.slots[self.layout.index_of(lsn)].store(pack(lsn, lines, PERSISTED), SeqCst);
    }

    /// Move the frontier over every consecutive persisted object; returns it.
    pub(crate) fn advance(&self) -> Lsn {
        loop {
            let f = self.frontier.load(SeqCst);
            let mut to = f;
            loop {
                let (l, _, phase) = unpack(self.slots[self.layout.index_of(to)].load(SeqCst));
                if l != to || phase != PERSISTED {
                    break;
                }
                to += 1;
            }
            if to == f {
                return f;
            }
            // A region whose persistence failed (a failed msync of a page-cache region, kept
            // by the region and recorded before the objects were marked) must not have
            // objects reported durable: poison the log instead of moving the frontier.
            if let Err(e) = self.region.check() {
                self.poison(&e.into());
                return f;
            }
            if self
                .frontier
                .compare_exchange(f, to, SeqCst, SeqCst)
                .is_ok()
            {
                // Keep going: objects past `to` may have been marked meanwhile.
                continue;
            }
        }
    }

    /// Persist the state word of `lsn` (its object is durable already).
    #[inline]
    fn set_state(&self, lsn: Lsn) {
        let off = self.layout.state_off(lsn);
        self.region.store_u64(off, layout::state_word(lsn));
        self.region.flush(off, 8);
    }

    /// flush-on-commit: claim `lsn` if it is filled and persist it. True if the object is
    /// persistent now (by anyone).
    pub(crate) fn try_persist(&self, lsn: Lsn) -> bool {
        let slot = &self.slots[self.layout.index_of(lsn)];
        let w = slot.load(Acquire);
        let (l, lines, phase) = unpack(w);
        if l != lsn {
            return false;
        }
        match phase {
            PERSISTED => true,
            FILLED => {
                if slot
                    .compare_exchange(w, pack(lsn, lines, PERSISTING), AcqRel, Acquire)
                    .is_err()
                {
                    return false;
                }
                self.region
                    .flush(self.layout.slot_off(lsn), (lines as usize) * CACHE_LINE);
                self.region.fence();
                self.set_state(lsn);
                self.region.fence();
                self.mark_persisted(lsn, lines);
                true
            }
            _ => false,
        }
    }

    /// flush-on-commit, daemon side: claim every filled object in `[from, to)` (at most
    /// `max`), persist them with one fence for the objects and one for their state words.
    /// Returns how many were persisted.
    pub(crate) fn persist_batch(
        &self,
        from: Lsn,
        to: Lsn,
        max: usize,
        batch: &mut Vec<(Lsn, u64)>,
    ) -> usize {
        batch.clear();
        for lsn in from..to {
            if batch.len() >= max {
                break;
            }
            let slot = &self.slots[self.layout.index_of(lsn)];
            let w = slot.load(Acquire);
            let (l, lines, phase) = unpack(w);
            if l == lsn
                && phase == FILLED
                && slot
                    .compare_exchange(w, pack(lsn, lines, PERSISTING), AcqRel, Acquire)
                    .is_ok()
            {
                batch.push((lsn, lines));
            }
        }
        if batch.is_empty() {
            return 0;
        }
        for &(lsn, lines) in batch.iter() {
            self.region
                .flush(self.layout.slot_off(lsn), (lines as usize) * CACHE_LINE);
        }
        self.region.fence();
        for &(lsn, _) in batch.iter() {
            self.set_state(lsn);
        }
        self.region.fence();
        for &(lsn, lines) in batch.iter() {
            self.mark_persisted(lsn, lines);
        }
        self.daemon_persisted.fetch_add(batch.len() as u64, Relaxed);
        batch.len()
    }

    /// Block until every object below `end` is persistent.
    pub(crate) fn wait_durable(&self, end: Lsn) -> Result<(), WalError> {
        let mut backoff = Backoff::new();
        loop {
            if self.frontier.load(Acquire) >= end {
                return Ok(());
            }
            if let Some(e) = self.poisoned() {
                return Err(e);
            }
            self.help(end);
            if self.advance() >= end {
                return Ok(());
            }
            if self.stopped.load(Acquire) && self.advance() < end {
                // Closing persisted every filled object: what is missing now never comes.
                return Err(WalError::Closed(0));
            }
            backoff.snooze();
        }
    }

    /// Non-blocking: under flush-on-commit it persists the filled objects below `end` the
    /// daemon has not reached (bounded work, no waiting), as a committing transaction does.
    pub(crate) fn is_durable(&self, end: Lsn) -> Result<bool, WalError> {
        if self.frontier.load(Acquire) >= end {
            return Ok(true);
        }
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        self.help(end);
        Ok(self.advance() >= end)
    }

    /// flush-on-commit: persist every filled object between the frontier and `end` (Section
    /// 4.3: "if the object has not yet been asynchronously persisted, persistence is ensured by
    /// calling the procedure flush-on-insert").
    fn help(&self, end: Lsn) {
        if self.opts.flush != FlushPolicy::Commit {
            return;
        }
        let f = self.frontier.load(Acquire);
        let mut helped = 0;
        for lsn in f..end {
            let slot = &self.slots[self.layout.index_of(lsn)];
            let was_filled = {
                let (l, _, phase) = unpack(slot.load(Acquire));
                l == lsn && phase == FILLED
            };
            if was_filled && self.try_persist(lsn) {
                helped += 1;
            }
        }
        if helped > 0 {
            self.helped.fetch_add(helped, Relaxed);
        }
    }

    /// Persist the tail hint (every LSN below `frontier` is persistent).
    pub(crate) fn persist_tail(&self, frontier: Lsn) {
        if self.region.load_u64(layout::TAIL_OFF) < frontier {
            self.region.store_u64(layout::TAIL_OFF, frontier);
            self.region.persist(layout::TAIL_OFF, 8);
        }
    }
}

/// Spin, then yield, then sleep for growing intervals (up to 200 µs).
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { step: 0 }
    }

    pub(crate) fn snooze(&mut self) {
        if self.step < 6 {
            for _ in 0..(1 << self.step) {
                std::hint::spin_loop();
            }
        } else if self.step < 12 {
            std::thread::yield_now();
        } else {
            let us = 1u64 << (self.step - 12).min(7);
            std::thread::sleep(Duration::from_micros(us.min(200)));
        }
        self.step = self.step.saturating_add(1);
    }
}

/// The promise of one commit: durable once the frontier passes `end`.
pub struct PerTxnTicket {
    shared: Arc<Shared>,
    end: Lsn,
}

impl PerTxnTicket {
    pub(crate) fn new(shared: Arc<Shared>, end: Lsn) -> PerTxnTicket {
        PerTxnTicket { shared, end }
    }

    /// One past the last LSN this ticket waits for.
    pub fn end(&self) -> Lsn {
        self.end
    }
}

impl DurabilityWait for PerTxnTicket {
    fn wait(&self) -> Result<(), WalError> {
        self.shared.wait_durable(self.end)
    }
    fn is_durable(&self) -> Result<bool, WalError> {
        self.shared.is_durable(self.end)
    }
}

/// A worker's handle: its reusable DRAM object buffer and its open transaction.
pub struct LogWriter {
    shared: Arc<Shared>,
    /// The DRAM log object, allocated once (one slot) and reused.
    buf: Vec<u8>,
    /// The transaction with objects inserted but no commit or abort object yet.
    open: Option<u64>,
    /// Caller flag bits added to every object (the checkpoint epoch bit).
    flags: u8,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl LogWriter {
    /// Caller flag bits (within `record::FLAG_MASK`, besides the commit bit) that the next
    /// objects carry.
    pub fn set_flags(&mut self, flags: u8) {
        self.flags = flags & crate::record::FLAG_MASK & !FLAG_COMMIT;
    }

    pub(crate) fn new(shared: Arc<Shared>) -> LogWriter {
        let buf = vec![0u8; shared.layout.slot_size];
        LogWriter {
            shared,
            buf,
            open: None,
            flags: 0,
        }
    }

    /// Insert `payload` of transaction `txn` as one or more log objects (consecutive LSNs;
    /// payloads larger than a slot are split and concatenated again at recovery). With
    /// `commit` the last object ends the transaction. Returns one past the last LSN used: the
    /// transaction is durable, with everything before it, once the frontier reaches it.
    pub fn insert(
        &mut self,
        txn: u64,
        kind: Kind,
        payload: &[u8],
        commit: bool,
    ) -> Result<Lsn, WalError> {
        let sh = &*self.shared;
        sh.check_open()?;
        let chunk = sh.layout.chunk();
        let n = payload.len().div_ceil(chunk).max(1) as u64;
        if n > sh.layout.entries / 4 {
            return Err(WalError::RecordTooLarge {
                len: payload.len(),
                max: chunk * (sh.layout.entries / 4) as usize,
            });
        }
        let first = sh.next_lsn.fetch_add(n, SeqCst);
        if first + n > layout::MAX_LSN {
            let e = WalError::Config("pertxn LSN space exhausted".into());
            sh.poison(&e);
            return Err(e);
        }
        self.open = Some(txn);
        for i in 0..n {
            let lsn = first + i;
            let part = &payload[(i as usize * chunk).min(payload.len())
                ..((i as usize + 1) * chunk).min(payload.len())];
            let last = i + 1 == n;
            if let Err(e) = sh.wait_for_space(lsn) {
                // LSNs from here on stay unfilled: nothing after them can be acknowledged.
                sh.poison(&e);
                return Err(e);
            }
            write_object(
                sh,
                &mut self.buf,
                lsn,
                txn,
                kind,
                self.flags | if last && commit { FLAG_COMMIT } else { 0 },
                part,
            );
        }
        if commit {
            self.open = None;
        }
        match sh.opts.flush {
            FlushPolicy::Insert => {
                sh.advance();
            }
            FlushPolicy::Commit => {
                if sh.daemon_asleep.swap(false, AcqRel)
                    && let Some(t) = sh.daemon.get()
                {
                    t.unpark();
                }
            }
        }
        let consumed = sh
            .frontier
            .load(Relaxed)
            .saturating_sub(sh.head.load(Relaxed));
        if consumed >= sh.truncate_at
            && let Some(t) = sh.backup.get()
        {
            t.unpark();
        }
        Ok(first + n)
    }

    /// Write an abort object for `txn` if it has objects without a commit (Section 4.4).
    /// Returns the end LSN of the abort object, or `None` if there was nothing to abort.
    pub fn abort(&mut self, txn: u64) -> Result<Option<Lsn>, WalError> {
        if self.open != Some(txn) {
            return Ok(None);
        }
        let end = self.insert(txn, Kind::Abort, &[], false)?;
        self.open = None;
        Ok(Some(end))
    }

    /// The transaction with objects but no commit yet, if any.
    pub fn open_txn(&self) -> Option<u64> {
        self.open
    }
}

/// Build the object in the DRAM buffer `buf` and copy it into its slot (Section 5.2 order).
fn write_object(
    sh: &Shared,
    buf: &mut [u8],
    lsn: Lsn,
    txn: u64,
    kind: Kind,
    flags: u8,
    part: &[u8],
) {
    {
        let payload = [part];
        let spec = RecordSpec {
            kind,
            flags,
            txn,
            stamp: &Stamp::None,
            payload: &payload,
        };
        let len = spec.encoded_len();
        // `insert` split the payload so every object fits its slot.
        debug_assert!(len <= buf.len());
        let obj = &mut buf[..len];
        spec.encode(lsn, 0, sh.layout.salt, obj);
        let off = sh.layout.slot_off(lsn);
        let lines = align_up(len).div_ceil(CACHE_LINE) as u64;
        sh.objects.fetch_add(1, Relaxed);
        sh.bytes.fetch_add(len as u64, Relaxed);
        match sh.opts.flush {
            FlushPolicy::Insert => {
                match sh.opts.write {
                    PmemWrite::NonTemporal => sh.region.write_nt(off, obj),
                    PmemWrite::StoreFlush => {
                        sh.region.write(off, obj);
                        sh.region.flush(off, len);
                    }
                }
                sh.region.fence();
                sh.set_state(lsn);
                sh.region.fence();
                sh.mark_persisted(lsn, lines);
            }
            FlushPolicy::Commit => {
                sh.region.write(off, obj);
                sh.slots[sh.layout.index_of(lsn)].store(pack(lsn, lines, FILLED), SeqCst);
            }
        }
    }
}
