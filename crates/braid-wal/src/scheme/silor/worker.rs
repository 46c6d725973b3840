//! A SiloR worker (Zheng et al., OSDI 2014, Section 4.1; Silo, SOSP 2013, Section 4.2): at
//! commit it takes its TID (see `epoch.rs`), appends one value-log record stamped with it to
//! its stream, stamps the rows it wrote with the TID, and returns a ticket that resolves once
//! the durable epoch reaches the TID's epoch.
//!
//! The engine calls `commit` with the write set locked (OCC after validation, 2PL with every
//! lock held) and installs the writes after it returns, so a row's TID is the one of its last
//! writer by the time anyone can write it again, and the next writer's TID is larger (the WAW
//! order recovery installs by). Where the engine keeps rows, the TID is word 0 of the row's
//! [`RowMeta`](crate::scheme::RowMeta) slot; rows named by identity only (the log layer used
//! without an engine) have it in a sharded map that is never evicted (the log layer alone
//! is used by tests and tools with small key sets).
//!
//! Choices where the paper is vague:
//!
//! * A key deleted and inserted again is a new row whose slot starts at 0, which would lose
//!   the WAW order of delete and insert. Every deleting transaction raises a global
//!   `delete_floor` to its TID at commit (before the key leaves the index), and every
//!   inserting transaction takes a TID above it (after its key entered the index).
//! * A read-only transaction logs nothing; its ticket waits for the epoch of the largest TID
//!   it read (or of the delete floor: it may have seen a key's absence), so it is acknowledged
//!   only once what it saw is durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use parking_lot::Mutex;

use super::Shared;
use super::durable::EpochWait;
use super::epoch::{epoch_of, next_tid};
use crate::WalError;
use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use crate::scheme::cut::epoch_flag;
use crate::scheme::{CommitRequest, LogKind, RowRef, SchemeWorker, Ticket};
use crate::stream::StreamWriter;

/// Shards of [`RowTids`] (a power of two).
const SHARDS: usize = 64;

/// One shard of [`RowTids`]: (table, key) -> TID.
type Shard = Mutex<HashMap<(u32, u64), u64>>;

/// TIDs of rows named by identity only.
#[derive(Debug)]
pub(crate) struct RowTids(Box<[Shard]>);

impl Default for RowTids {
    fn default() -> Self {
        RowTids((0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect())
    }
}

/// A row's hash (multiplicative, golden ratio): the high bits pick a shard here and a replay
/// bucket in `recovery.rs`.
#[inline]
pub(super) fn row_hash(table: u32, key: u64) -> u64 {
    (key ^ (u64::from(table) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl RowTids {
    fn shard(&self, table: u32, key: u64) -> &Shard {
        &self.0[(row_hash(table, key) >> 58) as usize & (SHARDS - 1)]
    }
    fn get(&self, table: u32, key: u64) -> u64 {
        self.shard(table, key)
            .lock()
            .get(&(table, key))
            .copied()
            .unwrap_or(0)
    }
    fn set(&self, table: u32, key: u64, tid: u64) {
        let mut g = self.shard(table, key).lock();
        let e = g.entry((table, key)).or_insert(0);
        *e = (*e).max(tid);
    }
    /// Bytes held (approximate).
    pub(crate) fn bytes(&self) -> u64 {
        self.0.iter().map(|s| s.lock().capacity() as u64 * 24).sum()
    }
}

/// The TID word of a row's slot.
fn row_tid<'a>(row: &RowRef<'a>) -> Option<&'a std::sync::atomic::AtomicU64> {
    row.meta.map(|m| &m.words(1, || {})[0])
}

/// One worker thread's view of SiloR.
pub(crate) struct SilorWorker {
    sh: Arc<Shared>,
    /// Its announcement slot.
    w: usize,
    writer: StreamWriter,
    /// This worker's previous TID.
    last: u64,
    /// Rows named by identity only: (table, key, written).
    ids: Vec<(u32, u64, bool)>,
    inserts: bool,
    deletes: bool,
    proxy: ProxyCounter,
}

impl SilorWorker {
    pub(crate) fn new(sh: Arc<Shared>, w: usize) -> Result<SilorWorker, WalError> {
        let slot = sh.epochs.claim().ok_or_else(|| WalError::TooMany {
            what: "silor workers",
            max: sh.epochs.workers(),
            remedy: "open with a larger max_workers",
        })?;
        // Workers map onto streams round robin.
        let writer = match sh.streams[w % sh.streams.len()].writer() {
            Ok(mut wr) => {
                // The epoch thread waits for every stream at each epoch's end and flushes what
                // is ready itself (SiloR's loggers write at epoch boundaries, not per commit):
                // a record does not wake the flusher, which would cost a wake-up every few
                // commits. A backlog of 64 KiB still does (`StreamWriter::append`).
                wr.set_commits_waited(true);
                wr
            }
            Err(e) => {
                sh.epochs.release(slot);
                return Err(e);
            }
        };
        let proxy = sh.board.counter();
        Ok(SilorWorker {
            sh,
            w: slot,
            writer,
            last: 0,
            ids: Vec::new(),
            inserts: false,
            deletes: false,
            proxy,
        })
    }

    fn reset(&mut self) {
        self.ids.clear();
        self.inserts = false;
        self.deletes = false;
    }

    /// The largest TID among the rows the transaction touched.
    fn seen(&self, req: &CommitRequest<'_>) -> u64 {
        let mut seen = 0;
        for i in 0..req.rows.len() {
            if let Some(t) = row_tid(&req.rows.get(i).row) {
                seen = seen.max(t.load(SeqCst));
            }
        }
        for &(t, k, _) in &self.ids {
            seen = seen.max(self.sh.rows.get(t, k));
        }
        seen
    }

    fn ticket(&self, epoch: u64) -> Ticket {
        if self.sh.durable.get() >= epoch {
            return Ticket::DURABLE;
        }
        Ticket::waiter(Box::new(EpochWait {
            durable: Arc::clone(&self.sh.durable),
            epoch,
        }))
    }

    fn commit_in(&mut self, e: u64, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        let seen = self.seen(req);
        if req.read_only {
            let dep = seen.max(self.sh.delete_floor.load(SeqCst));
            self.sh.epochs.leave(self.w, None);
            return Ok(self.ticket(epoch_of(dep)));
        }
        let floor = if self.inserts {
            self.sh.delete_floor.load(SeqCst)
        } else {
            0
        };
        let tid = next_tid(e, self.last, seen.max(floor));
        let payload = [req.payload];
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT | epoch_flag(req.epoch),
            txn: req.txn,
            stamp: &Stamp::Gsn(tid),
            payload: &payload,
        };
        if let Err(err) = self.writer.append(&spec) {
            self.sh.epochs.leave(self.w, None);
            return Err(err);
        }
        self.proxy.append(self.writer.cost());
        for i in 0..req.rows.len() {
            let a = req.rows.get(i);
            if a.write
                && let Some(t) = row_tid(&a.row)
            {
                // The engine holds the row's write lock: no other writer stores here now.
                t.store(tid, SeqCst);
            }
        }
        for &(t, k, written) in &self.ids {
            if written {
                self.sh.rows.set(t, k, tid);
            }
        }
        if self.deletes {
            self.sh.delete_floor.fetch_max(tid, SeqCst);
            self.proxy.shared(1, 1);
        }
        self.last = tid;
        self.sh.epochs.leave(self.w, Some(epoch_of(tid)));
        Ok(self.ticket(epoch_of(tid)))
    }
}

impl Drop for SilorWorker {
    fn drop(&mut self) {
        self.sh.epochs.release(self.w);
    }
}

impl SchemeWorker for SilorWorker {
    fn on_read(&mut self, row: RowRef<'_>) {
        if row.meta.is_none() {
            self.ids.push((row.table, row.key, false));
        }
    }
    fn on_write(&mut self, row: RowRef<'_>) {
        if row.meta.is_none() {
            self.ids.push((row.table, row.key, true));
        }
    }
    fn on_insert(&mut self, _table: u32, _key: u64) {
        self.inserts = true;
    }
    fn on_delete(&mut self, _table: u32, _key: u64) {
        self.deletes = true;
    }
    fn abort(&mut self, _rows: &dyn crate::scheme::AccessSet) {
        self.reset();
    }
    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        self.proxy.commit();
        if req.kind == LogKind::Command {
            self.reset();
            return Err(WalError::Unsupported(crate::Unsupported::Scheme {
                scheme: "silor",
                refused: crate::Refused::CommandLogging,
                why: super::NO_COMMAND_LOGGING,
            }));
        }
        let e = self.sh.epochs.enter(self.w);
        let r = self.commit_in(e, req);
        self.reset();
        r
    }
}
