//! A worker's log writer in NV-Logging (Huang et al. 2014, Sections 4.2, 4.4 and 5.2): it
//! builds each log object in its reusable DRAM buffer, takes consecutive LSNs from the global
//! counter, copies the object into its pre-allocated persistent slot in the order of the
//! persistence policy, and writes abort objects (see the module docs of `log.rs`, "Inserting a
//! log object").

use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Relaxed, SeqCst};

use braid_pmem::CACHE_LINE;

use super::layout;
use super::log::{Shared, WriterStats};
use super::{FlushPolicy, ObjectPlace};
use crate::device::pmem::PmemWrite;
use crate::proxy::AppendCost;
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp, align_up};
use crate::{Lsn, WalError};

/// A worker's handle: its reusable DRAM object buffer and its open transaction.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct LogWriter {
    shared: Arc<Shared>,
    /// The DRAM log object, allocated once (one slot) and reused.
    buf: Vec<u8>,
    /// The transaction with objects inserted but no commit or abort object yet.
    open: Option<u64>,
    /// Caller flag bits added to every object (the checkpoint epoch bit).
    flags: u8,
    /// What the last insert did to shared memory ([`LogWriter::cost`]).
    cost: AppendCost,
    /// This writer's object and byte counts.
    stats: Arc<WriterStats>,
    /// The worker counts as a busy thread while it has a writer (it holds no stream slot).
    _busy: crate::stream::BusyThread,
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
    pub(crate) fn set_flags(&mut self, flags: u8) {
        self.flags = flags & crate::record::FLAG_MASK & !FLAG_COMMIT;
    }

    pub(crate) fn new(shared: Arc<Shared>) -> LogWriter {
        let buf = vec![0u8; shared.layout.slot_size];
        let stats = shared.stats_cell();
        LogWriter {
            stats,
            shared,
            buf,
            open: None,
            flags: 0,
            cost: AppendCost::default(),
            _busy: crate::stream::BusyThread::new(),
        }
    }

    /// Insert `payload` of transaction `txn` as one or more log objects (consecutive LSNs;
    /// payloads larger than a slot are split and concatenated again at recovery). With
    /// `commit` the last object ends the transaction. Returns one past the last LSN used: the
    /// transaction is durable, with everything before it, once the frontier reaches it.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn insert(
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
        // The global LSN counter (NV-Logging's one shared read-modify-write); per object its
        // index entry (eight to a line) and, flushing on insert, its state word in the region
        // (also shared with neighbours). Statistics are the writer's own.
        let per_object = if matches!(sh.opts.flush, FlushPolicy::Insert) {
            2
        } else {
            1
        };
        let mut cost = AppendCost {
            rmw: 1,
            lines: 1 + n * per_object,
        };
        let first = sh.next_lsn.fetch_add(n, SeqCst);
        if first + n > layout::MAX_LSN {
            let e = WalError::LogFull {
                ring: crate::FullRing::PertxnLsns,
            };
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
            let written = write_object(
                sh,
                &self.stats,
                &mut self.buf,
                lsn,
                txn,
                kind,
                self.flags | if last && commit { FLAG_COMMIT } else { 0 },
                part,
            );
            if let Err(e) = written {
                // The object is not persistent and never will be: poison, as above.
                sh.poison(&e);
                return Err(e);
            }
        }
        if commit {
            self.open = None;
        }
        // flush-on-insert: the objects are persistent; the frontier moves over them when a
        // commit waits for it (or the backup thread passes), not here, so an insert makes no
        // read-modify-write on the frontier every worker moves. flush-on-commit: wake the
        // daemon if it sleeps (read first: the swap only when it does).
        if sh.opts.flush == FlushPolicy::Commit && sh.daemon_asleep.load(Relaxed) {
            cost.rmw += 1;
            cost.lines += 1;
            if sh.daemon_asleep.swap(false, AcqRel)
                && let Some(t) = sh.daemon.get()
            {
                t.unpark();
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
        self.cost = cost;
        Ok(first + n)
    }

    /// What the last successful insert did to memory other writers also write (see
    /// [`crate::proxy`]): the LSN counter, the statistics words, the index entries, the
    /// frontier or the daemon's flag.
    pub(crate) fn cost(&self) -> AppendCost {
        self.cost
    }

    /// Write an abort object for `txn` if it has objects without a commit (Section 4.4).
    /// Returns the end LSN of the abort object, or `None` if there was nothing to abort.
    pub(crate) fn abort(&mut self, txn: u64) -> Result<Option<Lsn>, WalError> {
        if self.open != Some(txn) {
            return Ok(None);
        }
        let end = self.insert(txn, Kind::Abort, &[], false)?;
        self.open = None;
        Ok(Some(end))
    }

    /// The transaction with objects but no commit yet, if any.
    pub(crate) fn open_txn(&self) -> Option<u64> {
        self.open
    }
}

/// Build the object in the DRAM buffer `buf` and copy it into its slot (Section 5.2 order).
/// Fails only where the object goes through the file system ([`ObjectPlace::File`]) and a
/// write or sync fails.
#[allow(clippy::too_many_arguments)]
fn write_object(
    sh: &Shared,
    stats: &WriterStats,
    buf: &mut [u8],
    lsn: Lsn,
    txn: u64,
    kind: Kind,
    flags: u8,
    part: &[u8],
) -> Result<(), WalError> {
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
        stats.add(1, len as u64);
        match sh.opts.flush {
            FlushPolicy::Insert if sh.opts.place == ObjectPlace::File => {
                // NV-Disk's path (Huang et al., Table 3, NV-Disk+decentralized-logging): the
                // object, then its state word, each written and synced through the file
                // system by this worker, in the order of Section 5.2.
                sh.region.write_file(off, obj)?;
                sh.region.write_file(
                    sh.layout.state_off(lsn),
                    &layout::state_word(lsn).to_ne_bytes(),
                )?;
                sh.mark_persisted(lsn, lines);
            }
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
                sh.mark_filled(lsn, lines);
            }
        }
    }
    Ok(())
}
