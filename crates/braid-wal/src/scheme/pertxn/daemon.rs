//! The background threads of the NV-Logging log: the flush daemon of flush-on-commit (Huang et
//! al. 2014, Section 4.3) and log truncation with asynchronous backup of cold log objects to
//! segment files (Sections 4.5 and 5.1).
//!
//! **Flush daemon** (`braid-pertxn-flush`, flush-on-commit only): repeatedly claims the filled
//! objects between the frontier and the LSN counter, writes their lines back, fences once,
//! writes their state words, fences again, and advances the frontier. When it finds nothing it
//! announces that it sleeps and parks (at most `daemon_interval`); the next filled object
//! wakes it. At close it persists whatever is still filled.
//!
//! **Truncation** (`braid-pertxn-backup`): once the consumed entries (persistent objects the
//! head has not passed) reach the threshold, or a writer waits for index space, it
//!
//! 1. copies the objects from the head to the frontier into the backup stream (braid records
//!    on a [`crate::device::file::FileDevice`], each stamped with its object's LSN as a GSN
//!    stamp) and waits until they are durable (fdatasync);
//! 2. would take a checkpoint of the tables here: checkpoints do not exist yet, so truncation
//!    only discards objects that are safely in the backup, and recovery reads backup + index;
//! 3. moves the persistent head to the frontier (one atomic 8-byte store, persisted);
//! 4. clears the state words of the entries it passed (stores, flushes, one fence);
//! 5. publishes the head in DRAM, which lets writers reuse those entries and slots.
//!
//! The order makes every crash point safe: until 3 the index still holds everything; after 3
//! recovery ignores entries below the head and reads those objects from the backup.
//!
//! A failure of the backup files (I/O error, no space) poisons the log: truncation cannot
//! proceed, writers would wait for space forever, and the error is the honest answer. So does
//! a persistence failure of the region ([`braid_pmem::Region::check`], a failed `msync`) found
//! before the head is published: entries are not reused unless the new head is durable.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::time::Duration;

use super::layout::{self, ENTRY_LEN, INDEX_OFF};
use super::log::Shared;
use crate::record::{self, Decoded, HEADER_LEN, RecordSpec, Stamp};
use crate::stream::{Stream, StreamWriter};
use crate::{Corruption, Lsn, WalError};

/// How long the truncation thread sleeps between checks when nothing wakes it.
const BACKUP_INTERVAL: Duration = Duration::from_millis(1);
/// Most objects the daemon persists under one pair of fences.
const BATCH: usize = 1024;
/// Truncation reads objects this many LSNs ahead into the cache while it backs up the
/// current one (their first lines: most objects fit in two). Persisted objects were written
/// with streaming stores, so each read of one was a memory miss: a third of the backup
/// thread's time at 2 workers on TPC-C (perf).
const PREFETCH_AHEAD: u64 = 8;
const PREFETCH_LINES: usize = 2;

pub(crate) fn flush_daemon(sh: Arc<Shared>) {
    // A busy thread, as a stream's flusher is (see `crate::stream::BusyThread`).
    let _busy = crate::stream::BusyThread::new();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let stop = sh.closed.load(Acquire);
        let f = sh.frontier.load(Acquire);
        let n = sh.next_lsn.load(Acquire);
        let done = sh.persist_batch(f, n, BATCH, &mut batch);
        sh.advance();
        if done > 0 {
            continue;
        }
        if stop {
            break;
        }
        sh.daemon_asleep.store(true, SeqCst);
        // A writer that filled an object before seeing the flag is caught by this scan.
        let n = sh.next_lsn.load(Acquire);
        if sh.persist_batch(sh.frontier.load(Acquire), n, BATCH, &mut batch) > 0 {
            sh.daemon_asleep.store(false, Relaxed);
            sh.advance();
            continue;
        }
        std::thread::park_timeout(sh.opts.daemon_interval);
        sh.daemon_asleep.store(false, Relaxed);
    }
}

/// The truncation thread's state.
/// Backup bytes between two remembered cut points, at most (a quarter of a backup segment if
/// that is less, so a checkpoint can release backup files at about segment granularity).
const BACKUP_MARK_EVERY: u64 = 1 << 20;

pub(crate) struct Backup {
    pub(crate) sh: Arc<Shared>,
    pub(crate) stream: Stream,
    pub(crate) writer: StreamWriter,
    /// Every object below it is in the backup files.
    pub(crate) backed: Lsn,
    pub(crate) buf: Vec<u8>,
}

impl Backup {
    pub(crate) fn run(mut self) {
        let sh = Arc::clone(&self.sh);
        loop {
            if sh.closed.load(Acquire) {
                break;
            }
            let f = sh.advance();
            let head = sh.head.load(Acquire);
            let consumed = f.saturating_sub(head);
            let need =
                consumed >= sh.truncate_at || (consumed > 0 && sh.space_waiters.load(SeqCst) > 0);
            if need {
                if let Err(e) = self.truncate(head, f) {
                    sh.poison(&e);
                    break;
                }
                continue;
            }
            std::thread::park_timeout(BACKUP_INTERVAL);
        }
    }

    /// Back up `[head, upto)` and move the head to `upto`.
    pub(crate) fn truncate(&mut self, head: Lsn, upto: Lsn) -> Result<(), WalError> {
        let sh = &*self.sh;
        let lay = sh.layout;
        let mut end = None;
        let mark_every = (sh.opts.backup_segment_size / 4).clamp(4096, BACKUP_MARK_EVERY);
        // Objects a durable checkpoint holds need no backup.
        let floor = sh.ckpt_floor.load(Acquire);
        let from = self.backed.max(head).max(floor);
        for lsn in from..(from + PREFETCH_AHEAD).min(upto) {
            sh.region
                .prefetch(lay.slot_off(lsn), lay.slot_size, PREFETCH_LINES);
        }
        for lsn in from..upto {
            if lsn + PREFETCH_AHEAD < upto {
                sh.region.prefetch(
                    lay.slot_off(lsn + PREFETCH_AHEAD),
                    lay.slot_size,
                    PREFETCH_LINES,
                );
            }
            let off = lay.slot_off(lsn);
            sh.region.read(off, &mut self.buf[..HEADER_LEN]);
            let len = record::peek_header(&self.buf).map_or(0, |(len, _, _)| len as usize);
            let bad = |damage: Corruption| WalError::Corrupt {
                file: layout::region_name(&sh.region),
                offset: off as u64,
                damage,
            };
            if !(HEADER_LEN..=lay.slot_size).contains(&len) {
                return Err(bad(Corruption::ObjectLength { lsn, len }));
            }
            sh.region.read(off, &mut self.buf[..len]);
            let rec = match record::decode(&self.buf[..len], lsn, lay.salt) {
                Decoded::Record(r) => r,
                Decoded::Invalid(why) => {
                    return Err(bad(Corruption::Object { lsn, fault: why }));
                }
                Decoded::Empty | Decoded::Truncated { .. } => {
                    return Err(bad(Corruption::Object {
                        lsn,
                        fault: crate::RecordFault::Incomplete,
                    }));
                }
            };
            let stamp = Stamp::Gsn(lsn);
            let payload = [rec.payload];
            let spec = RecordSpec {
                kind: rec.header.kind,
                flags: rec.header.flags,
                txn: rec.header.txn,
                stamp: &stamp,
                payload: &payload,
            };
            let (start, e) = self.writer.append(&spec)?;
            {
                let mut marks = sh.backup_marks.lock();
                if marks.back().is_none_or(|&(_, b)| start >= b + mark_every) {
                    marks.push_back((lsn, start));
                }
            }
            end = Some(e);
        }
        if let Some(end) = end {
            self.stream.wait_durable(end)?;
        }
        self.backed = self.backed.max(upto);
        sh.backed_up.fetch_add(upto.saturating_sub(head), Relaxed);
        sh.region.store_u64(layout::HEAD_OFF, upto);
        sh.region.persist(layout::HEAD_OFF, 8);
        for lsn in head..upto {
            sh.region.store_u64(lay.state_off(lsn), 0);
        }
        flush_entries(sh, head, upto);
        sh.region.fence();
        // Entries are reused only once the new head is durable.
        sh.region.check()?;
        sh.head.store(upto, Release);
        // Writers may be parked waiting for index space.
        sh.progress.notify();
        sh.truncations.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// Write back the index lines of the entries of `[from, to)` (at most two ranges: the index
/// is circular).
pub(crate) fn flush_entries(sh: &Shared, from: Lsn, to: Lsn) {
    if to <= from {
        return;
    }
    let lay = sh.layout;
    let n = (to - from).min(lay.entries) as usize;
    let first = lay.index_of(from);
    let run = n.min(lay.entries as usize - first);
    sh.region
        .flush(INDEX_OFF + first * ENTRY_LEN, run * ENTRY_LEN);
    if run < n {
        sh.region.flush(INDEX_OFF, (n - run) * ENTRY_LEN);
    }
}
