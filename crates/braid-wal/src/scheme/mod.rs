//! The scheme seam: what the engine asks of a logging scheme, whatever the scheme is.
//!
//! The engine calls a [`SchemeWorker`] on every row access (naming the row by table and key;
//! the scheme keeps whatever order it tracks, GSNs or LSN vectors, in its own structures), on
//! range scans, inserts and deletes, and at commit with the transaction's log payload (redo
//! images or a command); the record is in the log buffer when `commit` returns, and the engine
//! then releases its locks early. A scheme never knows table layouts: payloads are bytes built
//! with [`crate::payload`].
//!
//! Recovery is the scheme's too: [`open`] scans the scheme's streams, decides which transactions
//! committed and in what (partial) order, and hands each one to a [`Replay`] implemented by the
//! engine, then starts the streams for new appends at the valid end.
//!
//! Schemes are found by name in `registry`: a scheme is one folder here and one line in
//! [`SCHEMES`].

pub(crate) mod aether;
mod apply_queue;
pub(crate) mod autonomous;
mod central;
mod config;
pub(crate) mod cut;
mod feed;
pub(crate) mod follow;
pub(crate) mod gsn;
mod key_range;
pub(crate) mod none;
pub(crate) mod nvdisk;
pub(crate) mod open_txns;
pub(crate) mod pertxn;
pub(crate) mod plover;
pub(crate) mod registry;
mod replay;
mod row;
pub(crate) mod serial;
mod shared_scan;
pub(crate) mod silor;
mod storage;
pub(crate) mod taurus;
mod ticket;

#[cfg(feature = "testing")]
pub use self::ticket::DurabilityWait;
#[cfg(not(feature = "testing"))]
pub(crate) use self::ticket::DurabilityWait;
pub use self::{
    autonomous::AutonomousConfig,
    config::{LogKind, Records, RecoveryPlan, SchemeConfig},
    cut::{Cut, Positions},
    follow::Follower,
    gsn::{CommitProtocol, GsnConfig, Partition},
    none::{NAME as NONE, NoLogging, NoneConfig},
    nvdisk::NvDiskConfig,
    pertxn::{FlushPolicy, ObjectPlace, PerTxnConfig},
    plover::PloverConfig,
    registry::{LogPlace, SCHEMES, SchemeDef, SchemeSpec, names},
    replay::{Prefetch, RecoveryReport, Replay, ReplayError},
    row::{Access, AccessSet, NoRows, RowMeta, RowRef},
    serial::SerialConfig,
    silor::SilorConfig,
    storage::{RegionStorage, Storage},
    taurus::{LV_SAMPLE_EVERY, LvCompress, LvSimd, TaurusConfig},
    ticket::Ticket,
};
pub(crate) use self::{
    replay::{Lookahead, replay_failed},
    row::ROW_META_WORDS,
};
pub use crate::proxy::Proxies;
pub use crate::stream::{Stream, StreamStats};

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use crate::{Lsn, WalError};

/// One write of a transaction under per-update records ([`Records::Update`]), handed to the
/// scheme as it happens.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRecord<'a> {
    /// The transaction id (the one its commit will carry).
    pub txn: u64,
    /// The row written (`on_write` named it first).
    pub row: RowRef<'a>,
    /// One encoded [`crate::payload`] redo operation: the write's after-image.
    pub payload: &'a [u8],
}

/// What the engine hands a scheme at commit.
#[derive(Clone, Copy)]
pub struct CommitRequest<'a> {
    /// The transaction id (unique, above [`RecoveryReport::max_txn`] of the last recovery).
    pub txn: u64,
    /// What the payload holds.
    pub kind: LogKind,
    /// Encoded redo operations or command; empty for read-only transactions.
    pub payload: &'a [u8],
    /// The transaction wrote nothing: schemes log nothing for it, but its ticket still waits
    /// for what it read to be durable where the scheme tracks that.
    pub read_only: bool,
    /// The checkpoint epoch the transaction commits in; its low bit goes into the record
    /// (`cut::FLAG_EPOCH`) so recovery can tell what a checkpoint already holds.
    pub epoch: u64,
    /// The rows the transaction wrote, each with where its redo operation lies in `payload`
    /// (data logging), so a scheme that places operations by row (gsn's page partitioning)
    /// never decodes the payload. Empty under command logging and when the caller does not
    /// say (then such a scheme decodes `payload` as [`crate::payload`] redo operations).
    pub writes: &'a [Written],
    /// The transaction's access set ([`NoRows`] when the caller names rows by identity).
    pub rows: &'a dyn AccessSet,
    /// Update records this transaction already put in the log through
    /// [`SchemeWorker::log_update`] ([`Records::Update`]): when non-zero, `payload` is empty
    /// and the commit inserts a commit record after them.
    pub updates: u32,
}

impl fmt::Debug for CommitRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitRequest")
            .field("txn", &self.txn)
            .field("kind", &self.kind)
            .field("payload_len", &self.payload.len())
            .field("read_only", &self.read_only)
            .field("epoch", &self.epoch)
            .field("writes", &self.writes)
            .field("rows", &self.rows.len())
            .field("updates", &self.updates)
            .finish()
    }
}

/// A row a committing transaction wrote (see [`CommitRequest::writes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The row's table.
    pub table: u32,
    /// The row's key.
    pub key: u64,
    /// The bytes of `CommitRequest::payload` holding this row's redo operation.
    pub op: std::ops::Range<u32>,
}

impl Written {
    /// This row's redo operation in `payload`; a [`Misuse::WriteOutside`](crate::Misuse)
    /// naming `scheme` if its range lies outside it.
    pub(crate) fn op_in<'p>(
        &self,
        payload: &'p [u8],
        scheme: &'static str,
    ) -> Result<&'p [u8], WalError> {
        let (from, to) = (self.op.start as usize, self.op.end as usize);
        payload.get(from..to).ok_or_else(|| {
            WalError::Misuse(crate::Misuse::WriteOutside {
                scheme,
                table: self.table,
                key: self.key,
                from,
                to,
                len: payload.len(),
            })
        })
    }
}

/// One worker thread's view of the scheme.
pub trait SchemeWorker: Send {
    /// After the engine locked (2PL) or read (OCC) a row.
    fn on_read(&mut self, _row: RowRef<'_>) {}
    /// After the engine locked a row for writing.
    fn on_write(&mut self, _row: RowRef<'_>) {}
    /// Put the transaction's record (or, after update records, its commit record) in the log
    /// buffer; returns the durability ticket.
    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError>;
    /// Per-update records ([`Records::Update`]): put one write's redo image in the log now.
    /// Only called on schemes whose [`SchemeDef::update_records_refusal`] is `None`.
    fn log_update(&mut self, up: &UpdateRecord<'_>) -> Result<(), WalError> {
        let _ = up;
        Err(WalError::Unsupported(crate::Unsupported::Scheme {
            scheme: "this",
            refused: crate::Refused::UpdateRecords,
            why: "this scheme logs one record per transaction; per-update records are not supported",
        }))
    }
    /// The transaction aborted before `commit` (`rows`: its access set). A scheme that took
    /// update records for it may log an abort record.
    fn abort(&mut self, _rows: &dyn AccessSet) {}
    /// OCC only: after the engine locked the write set, before it validates the read set
    /// (Taurus Alg. 6 lines 8-11). `rows` are the ones `on_read` and `on_write` named.
    fn before_validate(&mut self, _rows: &dyn AccessSet) {}
    /// A range scan of ordered table `table` over `[lo, hi]` is about to be validated: the
    /// engine calls this at commit, once per scanned range, right before it counts the range
    /// again (the scan-twice phantom check, Taurus Sec. 3.4), under 2PL and OCC alike. Whatever
    /// the scheme publishes here is in place before the recount reads the index; from here on
    /// the transaction either aborts or commits without waiting for anyone.
    fn on_scan(&mut self, _table: u32, _lo: Bound<u64>, _hi: Bound<u64>) {}
    /// The transaction found no row where it looked: a read or write of `table` over
    /// `[lo, hi]` (a point miss is `lo == hi == key`) or a range scan there, which may have
    /// missed rows a commit not yet durable deleted. Called during execution, for every
    /// concurrency control, before the miss is returned to the transaction. A scheme that
    /// waits only for the writers of the rows a read-only transaction read (the central log's
    /// read-only commit) must wait for more once this is called; gsn reads the clocks of the
    /// pages the miss covers, taurus the writeLV of a missed key's bucket.
    fn on_absent(&mut self, _table: u32, _lo: Bound<u64>, _hi: Bound<u64>) {}
    /// Key `key` was just inserted into the index of `table` (the row is in the index, locked
    /// by this transaction; `on_write` for the row came first). Called during execution.
    fn on_insert(&mut self, _table: u32, _key: u64) {}
    /// This transaction will delete `key` from `table` (`on_write` for the row came first; the
    /// key leaves the index when the transaction installs its writes, after `commit`).
    fn on_delete(&mut self, _table: u32, _key: u64) {}
}

/// A running scheme.
pub trait Scheme: Send + Sync {
    /// The scheme's name (its [`SchemeDef::name`]).
    fn name(&self) -> &'static str;
    /// A handle for worker thread `worker`.
    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError>;
    /// The scheme's streams (for statistics and inspection).
    fn streams(&self) -> &[Stream];
    /// Flush everything and stop background threads.
    fn close(&self) -> Result<(), WalError>;
    /// Bytes of ordering metadata the scheme keeps outside the rows, now (Taurus: its row and
    /// range LV table; gsn: its page clocks). The engine divides it by the row count for its
    /// per-row memory report. Schemes with none return 0.
    fn metadata_bytes(&self) -> u64 {
        0
    }
    /// Each stream's reserved end now (every record reserved so far starts before it), for a
    /// checkpoint's cut.
    fn positions(&self) -> cut::Positions {
        let lsns: Vec<Lsn> = self.streams().iter().map(|s| s.tail()).collect();
        let marks = vec![0; lsns.len()];
        cut::Positions { lsns, marks }
    }
    /// A checkpoint's keep positions ([`cut::Cut::keeps`]), taken right before its start
    /// positions: each stream's reserved end, moved back to the first record of any
    /// transaction still open under per-update records (see `open_txns`).
    fn keeps(&self) -> Vec<Lsn> {
        self.positions().lsns
    }
    /// Block until every record before `lsns` (one per stream) is durable.
    fn wait_durable(&self, lsns: &[Lsn]) -> Result<(), WalError> {
        for (s, &l) in self.streams().iter().zip(lsns) {
            s.wait_durable(l)?;
        }
        Ok(())
    }
    /// A durable checkpoint holds every transaction whose records lie before `lsns`: give the
    /// log space before them back (segments removed, ring heads advanced).
    fn truncate(&self, lsns: &[Lsn]) -> Result<(), WalError> {
        for (s, &l) in self.streams().iter().zip(lsns) {
            s.device().release(l.min(s.durable()))?;
        }
        Ok(())
    }
    /// Log bytes the scheme's devices hold now (from each stream's first kept byte to its end).
    fn log_bytes(&self) -> u64 {
        self.streams()
            .iter()
            .map(|s| {
                s.tail()
                    .saturating_sub(crate::scan::StreamSource::start(&**s.device()))
            })
            .sum()
    }
    /// `None` if what the scheme acknowledges survives a power cut on this machine; else what
    /// its storage only emulates (persistent memory on a RAM file system, files in tmpfs, no
    /// log at all), to be named wherever its results appear. By default, from its streams'
    /// devices.
    fn emulation(&self) -> Option<String> {
        let mut notes: Vec<String> = self
            .streams()
            .iter()
            .filter_map(|s| s.device().info().emulation)
            .collect();
        notes.dedup();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
    /// Scheme-specific event counters of this instance since it was opened, as (name, value)
    /// pairs (gsn: `commits`, `signals`, `daemon_rounds`, `clock_records`). Empty by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Scalability proxies summed over the scheme's workers since it was opened: shared
    /// read-modify-writes and shared cache lines written per commit (`crate::proxy`).
    /// `None` for a scheme that does not count them.
    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        None
    }
}

/// Recover `spec`'s log from `storage` through `replay`, then start the scheme for new
/// transactions. `progress` is called now and then during recovery with the log bytes read
/// since its last call.
pub fn open(
    spec: &SchemeSpec,
    cfg: &SchemeConfig,
    storage: Storage,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    spec.open(cfg, storage, replay, progress)
}
