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
pub(crate) mod autonomous;
mod central;
pub(crate) mod cut;
pub(crate) mod follow;
pub(crate) mod gsn;
pub(crate) mod none;
pub(crate) mod nvdisk;
pub(crate) mod open_txns;
pub(crate) mod pertxn;
pub(crate) mod plover;
pub(crate) mod registry;
pub(crate) mod serial;
mod shared_scan;
pub(crate) mod silor;
pub(crate) mod taurus;

pub use self::{
    autonomous::AutonomousConfig,
    cut::{Cut, Positions},
    follow::Follower,
    gsn::{CommitProtocol, GsnConfig, Partition},
    none::{NAME as NONE, NoLogging, NoneConfig},
    nvdisk::NvDiskConfig,
    pertxn::{FlushPolicy, ObjectPlace, PerTxnConfig},
    plover::PloverConfig,
    registry::{LogPlace, SCHEMES, SchemeDef, SchemeSpec, names},
    serial::SerialConfig,
    silor::SilorConfig,
    taurus::{LV_SAMPLE_EVERY, LvCompress, LvSimd, TaurusConfig},
};
pub use crate::proxy::Proxies;
pub use crate::stream::{Stream, StreamStats};

use std::fmt;
use std::ops::{Bound, Range};
use std::sync::Arc;
use std::time::Duration;

use crate::device::Device;
use crate::record::Kind;
use crate::scan::{ScanEnd, ScanMode};
use crate::stream::StreamConfig;
use crate::{Lsn, UnknownName, WalError};

/// Data logging writes after-images; command logging writes stored-procedure calls.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_log_kind)]
pub enum LogKind {
    /// Redo images of the rows a transaction wrote (redo records).
    Data,
    /// The stored-procedure call that re-executes the transaction (command records).
    Command,
}

impl LogKind {
    /// `"data"` or `"command"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
    /// The record kind its payloads are logged as.
    pub(crate) fn record_kind(self) -> Kind {
        match self {
            LogKind::Data => Kind::Redo,
            LogKind::Command => Kind::Command,
        }
    }
}

fn unknown_log_kind(s: &str) -> UnknownName {
    UnknownName::new("logging kind", s, &["data", "command"])
}

/// How a transaction's redo images reach the log (data logging).
///
/// `Txn` is Silo's and Taurus's way: one record per transaction, built at commit. `Update` is
/// the ARIES way of Shore-MT, the engine Wang & Johnson and NV-Logging build on: every insert,
/// update and delete puts its redo image into the log as it happens
/// ([`SchemeWorker::log_update`]), and the commit inserts a commit record. Recovery redoes
/// exactly the transactions whose commit record it finds; a transaction without one leaves no
/// trace. Recovery reads both layouts, so the choice is per run, not per database.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_records)]
pub enum Records {
    /// One record per transaction, at commit.
    #[default]
    Txn,
    /// One record per write as it happens, and a commit record.
    Update,
}

impl Records {
    /// `"txn"` or `"update"` (what its `FromStr` reads).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

fn unknown_records(s: &str) -> UnknownName {
    UnknownName::new("record unit", s, &["txn", "update"])
}

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

/// A row as a scheme sees it: its identity (the engine's table number and key) and, when the
/// caller keeps rows of its own, the [`RowMeta`] slot inside the row. A scheme keeps the order it
/// tracks (GSNs, LSN vectors) in the slot when there is one (beside the engine's lock word, as
/// Taurus keeps LVs in the lock table, Sec. 4.1), else in its own structures keyed by identity.
/// A caller passes a slot for every access to a row or for none.
#[derive(Debug, Clone, Copy)]
pub struct RowRef<'a> {
    /// The table's number in the engine's catalog.
    pub table: u32,
    /// The row's key.
    pub key: u64,
    /// The scheme's slot in the caller's row, if the caller keeps one per row.
    pub meta: Option<&'a RowMeta>,
}

impl RowRef<'static> {
    /// A row named by identity only (the log layer used without an engine).
    pub fn new(table: u32, key: u64) -> RowRef<'static> {
        RowRef {
            table,
            key,
            meta: None,
        }
    }
}

/// Words a [`RowMeta`] slot holds at most: Taurus's pending count, writeLV and readLV at 16
/// logs, the paper's configuration (Xia et al. 2021 Sec. 5.2: "16 log manager threads").
pub(crate) const ROW_META_WORDS: usize = 33;
/// Of those, the words kept in the row itself.
pub(crate) const ROW_META_INLINE: usize = 4;
/// Words of the smaller spill allocation, used while a scheme needs no more.
pub(crate) const ROW_META_SMALL: usize = 8;

/// Ordering metadata a scheme keeps inside a row: up to `ROW_META_WORDS` atomic words the
/// scheme lays out (Taurus: a pending count, writeLV and readLV; Silo-R: the row's TID), all
/// zero until the scheme stores to them, so a scheme reads zero as "never touched since open".
/// The first `ROW_META_INLINE` words live in the row, beside its lock word, so the scheme
/// finds them in the cache lines the concurrency control fetched anyway (a separate allocation
/// cost Taurus a cache miss per row access: 4% of a one-thread YCSB run's samples in
/// `merge_from`); more words are one allocation, made on the first access that needs them, of
/// `ROW_META_SMALL` words or, for more, `ROW_META_WORDS`. (With one spill size of 8 words,
/// Taurus command logging on 4 logs, 9 words, kept its rows' LVs in a shared hash map instead:
/// a shard lock and a probe per row access, 19% of a 2-thread TPC-C Payment run's samples,
/// which made it slower than data logging.) A scheme asks for the same count for every row of
/// a database, so each row makes one allocation at most.
#[derive(Debug, Default)]
pub struct RowMeta {
    inline: [std::sync::atomic::AtomicU64; ROW_META_INLINE],
    spill: once_cell::race::OnceBox<[std::sync::atomic::AtomicU64; ROW_META_SMALL]>,
    spill_large: once_cell::race::OnceBox<[std::sync::atomic::AtomicU64; ROW_META_WORDS]>,
}

impl RowMeta {
    /// The first `n` words (`n <= ROW_META_WORDS`); `allocated` is called when this call
    /// made the allocation that words beyond [`ROW_META_INLINE`] need (two first accesses at
    /// once may both allocate; one allocation is kept).
    #[inline]
    pub(crate) fn words(
        &self,
        n: usize,
        allocated: impl FnOnce(),
    ) -> &[std::sync::atomic::AtomicU64] {
        if n <= ROW_META_INLINE {
            return &self.inline[..n];
        }
        if n <= ROW_META_SMALL {
            return &self.spill.get_or_init(|| {
                allocated();
                Box::default()
            })[..n];
        }
        &self.spill_large.get_or_init(|| {
            allocated();
            Box::new(std::array::from_fn(|_| {
                std::sync::atomic::AtomicU64::new(0)
            }))
        })[..n.min(ROW_META_WORDS)]
    }

    /// Bytes of the allocation a row makes for `n` words (0 if they fit in the row).
    pub(crate) fn spill_bytes(n: usize) -> usize {
        match n {
            n if n <= ROW_META_INLINE => 0,
            n if n <= ROW_META_SMALL => 8 * ROW_META_SMALL,
            _ => 8 * ROW_META_WORDS,
        }
    }
}

/// One row of a transaction's access set: the row, and whether the transaction read it and
/// wrote it (an insert or a delete is a write).
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The row.
    pub row: RowRef<'a>,
    /// `on_read` named it.
    pub read: bool,
    /// `on_write` named it.
    pub write: bool,
}

/// The rows a transaction touched, as its caller holds them, handed to the scheme when the
/// transaction validates, commits and aborts (so a scheme that keeps its order in the rows'
/// [`RowMeta`] slots needs no references of its own to them). Every row `on_read` or
/// `on_write` named is in it.
pub trait AccessSet {
    /// How many rows.
    fn len(&self) -> usize;
    /// Row `i` (`i < len()`).
    fn get(&self, i: usize) -> Access<'_>;
    /// No rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The access set of a caller that hands rows by identity only ([`RowRef::new`]).
#[derive(Debug, Clone, Copy)]
pub struct NoRows;

impl AccessSet for NoRows {
    fn len(&self) -> usize {
        0
    }
    fn get(&self, i: usize) -> Access<'_> {
        // Callers stay below `len()` = 0: this is never reached.
        unreachable!("row {i} of an empty access set")
    }
}

impl AccessSet for Vec<Access<'_>> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn get(&self, i: usize) -> Access<'_> {
        self[i]
    }
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

/// Something that can tell when a commit is durable (a scheme's own condition, behind a
/// [`Ticket`]).
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) trait DurabilityWait: Send + Sync {
    /// Block until durable, or fail with the error that prevents it.
    fn wait(&self) -> Result<(), WalError>;
    /// Non-blocking [`DurabilityWait::wait`]: `Ok(false)` if not durable yet.
    fn is_durable(&self) -> Result<bool, WalError>;
}

/// The promise a commit returns: resolves once the transaction (and everything it depends on) is
/// durable. Commits are acknowledged only through it.
#[must_use = "a commit is durable only once its ticket resolves: call `wait()` (cheap when it is already durable)"]
pub struct Ticket(Wait);

/// What a [`Ticket`] waits for.
enum Wait {
    /// Nothing (no logging, or nothing to make durable).
    Durable,
    /// `stream` durable up to `lsn` (the end of the commit record).
    Stream { stream: Stream, lsn: Lsn },
    /// A scheme's own condition.
    Waiter(Box<dyn DurabilityWait>),
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Wait::Durable => f.write_str("Ticket::DURABLE"),
            Wait::Stream { stream, lsn } => write!(f, "Ticket(stream {}, {lsn})", stream.id()),
            Wait::Waiter(_) => f.write_str("Ticket(waiter)"),
        }
    }
}

impl Ticket {
    /// A ticket with nothing to wait for: the commit logged nothing, or is durable already.
    pub const DURABLE: Ticket = Ticket(Wait::Durable);

    /// Durable once `stream` is durable up to `lsn`.
    pub(crate) fn stream(stream: Stream, lsn: Lsn) -> Ticket {
        Ticket(Wait::Stream { stream, lsn })
    }

    /// Durable when `w` says so.
    pub(crate) fn waiter(w: Box<dyn DurabilityWait>) -> Ticket {
        Ticket(Wait::Waiter(w))
    }

    /// Block until durable, or fail with the error that prevents it.
    pub fn wait(&self) -> Result<(), WalError> {
        match &self.0 {
            Wait::Durable => Ok(()),
            Wait::Stream { stream, lsn } => stream.wait_durable(*lsn),
            Wait::Waiter(w) => w.wait(),
        }
    }

    /// Non-blocking check.
    pub fn is_durable(&self) -> Result<bool, WalError> {
        match &self.0 {
            Wait::Durable => Ok(true),
            Wait::Stream { stream, lsn } => stream.check_durable(*lsn),
            Wait::Waiter(w) => w.is_durable(),
        }
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
    /// read-only commit) must wait for more once this is called.
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

/// The engine side of recovery.
pub trait Replay: Sync {
    /// Re-apply one committed transaction: redo images (data logging) or a re-executed command.
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError>;

    /// A hint that the records of `payloads` will be applied soon, so that the engine can
    /// start loading what [`Replay::apply`] will touch: a replay loop announces a batch of
    /// records at [`Prefetch::Locate`] some records ahead and again at [`Prefetch::Body`]
    /// nearer, overlapping the memory misses of the next records with one
    /// another and with the work on this one. It must not change any state. The default does
    /// nothing.
    fn prefetch(&self, kind: LogKind, payloads: &mut dyn Iterator<Item = &[u8]>, step: Prefetch) {
        let _ = (kind, payloads, step);
    }

    /// Test hook (braid-wal's own tests): a Taurus parallel replay worker looked for a record
    /// to replay in the final cut (every record admitted) and found none ready; it then waits
    /// until another worker finishes a record. The default does nothing.
    #[cfg(test)]
    fn replay_idle(&self) {}
}

/// How near its apply a record is announced to [`Replay::prefetch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefetch {
    /// Far ahead: find the rows and start loading their headers.
    Locate,
    /// Near: the headers are in cache; start loading the bytes the apply writes.
    Body,
}

/// Announces the items of a replay loop to [`Replay::prefetch`] in batches: before the apply
/// of a batch of [`Lookahead::BATCH`] items, the batch after it is loaded ([`Prefetch::Body`])
/// and the one after that located ([`Prefetch::Locate`]). A batch's look-ups are issued back to
/// back, with no locked instruction between them, so their index misses overlap one another;
/// each row latch taken later (a locked instruction waits for every earlier load) then waits
/// once per batch rather than once per item.
#[derive(Debug, Default)]
pub(crate) struct Lookahead {
    /// The next item that starts a batch.
    mark: usize,
    /// Items below these were announced at each step.
    located: usize,
    loaded: usize,
}

impl Lookahead {
    /// Items per batch (on Silo-R's recovery of 1 KB YCSB rows, 2 threads, batches of 4, 8 and
    /// 16 were within run-to-run noise of one another).
    pub(crate) const BATCH: usize = 8;

    /// Before item `i` of `n` is applied: when it starts a batch, `hint(items, step)` announces
    /// the items the steps have not reached yet. Items may be skipped (`i` may jump).
    pub(crate) fn before(
        &mut self,
        i: usize,
        n: usize,
        mut hint: impl FnMut(Range<usize>, Prefetch),
    ) {
        if i < self.mark {
            return;
        }
        self.mark = i + Self::BATCH;
        let locate_to = (i + 3 * Self::BATCH).min(n);
        let from = self.located.max(i);
        if from < locate_to {
            hint(from..locate_to, Prefetch::Locate);
        }
        self.located = self.located.max(locate_to);
        let load_to = (i + 2 * Self::BATCH).min(n);
        let from = self.loaded.max(i);
        if from < load_to {
            hint(from..load_to, Prefetch::Body);
        }
        self.loaded = self.loaded.max(load_to);
    }
}

/// An error raised by the engine while replaying a transaction.
pub type ReplayError = Box<dyn std::error::Error + Send + Sync>;

/// Configuration every scheme shares; each scheme's own options live in its [`SchemeDef`].
#[derive(Debug, Clone)]
pub struct SchemeConfig {
    /// Data or command logging.
    pub logging: LogKind,
    /// Worker threads that will ask for a [`SchemeWorker`].
    pub max_workers: usize,
    /// Group commit: the longest a flusher waits for more log.
    pub group_delay: Duration,
    /// Group commit: flush once this many bytes are pending.
    pub group_bytes: usize,
    /// Whether mid-log corruption is an error or the valid prefix is salvaged.
    pub scan_mode: ScanMode,
    /// Threads recovery may use.
    pub recovery_threads: usize,
    /// How a scheme with a parallel recovery planner replays (taurus).
    pub recovery_plan: RecoveryPlan,
    /// The engine runs multi-versioned (Taurus Section 4.4): every record carries its commit
    /// timestamp and replay reads the versions it names, so read-after-write order needs no
    /// tracking (Taurus keeps no readLVs even under command logging).
    pub mvcc: bool,
    /// What the checkpoint recovery starts from already holds; `None` replays the whole log.
    pub cut: Option<cut::Cut>,
    /// One record per transaction or one per write (data logging).
    pub records: Records,
}

/// Parallel replay, the serial fallback, or chosen by the planner from what it finds in the log.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(serialize_all = "lowercase", parse_err_ty = UnknownName, parse_err_fn = unknown_plan)]
pub enum RecoveryPlan {
    /// Parallel if there are several recovery threads and the log's dependencies leave
    /// enough parallelism, else serial.
    #[default]
    Auto,
    /// Parallel replay (serial all the same with one recovery thread).
    Parallel,
    /// One thread, in an order that respects every dependency.
    Serial,
}

impl RecoveryPlan {}

fn unknown_plan(s: &str) -> UnknownName {
    UnknownName::new("recovery plan", s, &["auto", "parallel", "serial"])
}

impl SchemeConfig {
    /// Stream `id`'s configuration: this group commit, at most `max_writers` writers.
    pub(crate) fn stream(&self, id: usize, max_writers: usize) -> StreamConfig {
        StreamConfig {
            id: id as u32,
            max_writers,
            group_delay: self.group_delay,
            group_bytes: self.group_bytes,
            flusher_only: false,
        }
    }

    /// Start one stream per device at its recovered end, each taking a writer per worker.
    pub(crate) fn start_streams(
        &self,
        devices: Vec<Arc<dyn Device>>,
        ends: &[Lsn],
    ) -> Result<Vec<Stream>, WalError> {
        devices
            .into_iter()
            .zip(ends)
            .enumerate()
            .map(|(i, (d, &end))| Stream::start(d, end, self.stream(i, self.max_workers.max(1))))
            .collect()
    }
}

impl Default for SchemeConfig {
    fn default() -> Self {
        SchemeConfig {
            logging: LogKind::Data,
            max_workers: 64,
            group_delay: Duration::ZERO,
            group_bytes: 1 << 20,
            scan_mode: ScanMode::Strict,
            recovery_threads: 1,
            recovery_plan: RecoveryPlan::Auto,
            mvcc: false,
            cut: None,
            records: Records::Txn,
        }
    }
}

/// What recovery found and did.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    /// Transactions replayed.
    pub txns: u64,
    /// Records decoded (including ones not replayed).
    pub records: u64,
    /// Log bytes read.
    pub bytes: u64,
    /// Largest transaction id seen, so new ids never repeat one in the log.
    pub max_txn: u64,
    /// How each stream ended.
    pub ends: Vec<ScanEnd>,
    /// Seconds spent scanning and replaying.
    pub seconds: f64,
    /// Transactions found in the log but not replayed (not committed, or depending on
    /// something lost), over all streams.
    pub skipped: u64,
    /// Transaction records found in the log that the checkpoint recovery started from already
    /// holds (not replayed).
    pub covered: u64,
    /// Recovery stages the scheme times, in order (gsn: seconds spent in `scan`, `plan`,
    /// `partition`, `apply`; taurus, whose stages overlap: seconds from the start of recovery
    /// to the `first apply`, to the end of `read` and of `replay`); empty otherwise.
    pub stages: Vec<(&'static str, f64)>,
    /// How the log was replayed, for schemes with a choice (taurus: `parallel`, or `serial`
    /// for the fallback or one replay thread); `None` otherwise.
    pub plan: Option<&'static str>,
}

/// Where a scheme keeps its log, as the caller built it for the scheme's [`LogPlace`].
pub enum Storage {
    /// No log (`LogPlace::Nowhere`).
    Nothing,
    /// One device per stream (`LogPlace::Devices` and `LogPlace::NvramFiles`).
    Devices(Vec<Arc<dyn Device>>),
    /// A persistent region and a backup directory (`LogPlace::Region`).
    Region(RegionStorage),
}

/// The storage of a scheme that keeps its log in a persistent-memory region of its own.
pub struct RegionStorage {
    /// The region (index and log-object slots).
    pub region: braid_pmem::Region,
    /// The file system of the backup directory.
    pub fs: Arc<dyn crate::fs::Fs>,
    /// Where cold log is backed up to segment files.
    pub backup_dir: std::path::PathBuf,
    /// How log objects are copied into the region.
    pub write: crate::device::pmem::PmemWrite,
}

impl Storage {
    /// The devices, or the error a scheme that needs devices reports.
    pub(crate) fn devices(self, scheme: &str) -> Result<Vec<Arc<dyn Device>>, WalError> {
        match self {
            Storage::Devices(d) => Ok(d),
            _ => Err(registry::wrong_storage(scheme, LogPlace::Devices)),
        }
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

/// Wrap a replay failure with the position it happened at.
pub(crate) fn replay_failed(stream: u32, lsn: Lsn, txn: u64, e: ReplayError) -> WalError {
    WalError::Replay {
        stream,
        lsn,
        txn,
        cause: Arc::from(e),
    }
}

#[cfg(test)]
mod lookahead_tests {
    use super::{Lookahead, Prefetch};

    /// Every item applied in order, or with some skipped, is located, then loaded, before its
    /// apply, once at each step; in order, never more than three batches early.
    #[test]
    fn every_item_is_located_then_loaded_before_its_apply() {
        for (n, step_by) in [(0, 1), (5, 1), (100, 1), (100, 3), (37, 7)] {
            let mut ahead = Lookahead::default();
            let mut seen: Vec<(usize, Prefetch, usize)> = Vec::new();
            let mut applied = Vec::new();
            for i in (0..n).step_by(step_by) {
                ahead.before(i, n, |items, step| seen.extend(items.map(|j| (j, step, i))));
                applied.push(i);
            }
            for &i in &applied {
                let at = |step| {
                    seen.iter()
                        .filter(|&&(j, s, _)| j == i && s == step)
                        .map(|&(_, _, when)| when)
                        .collect::<Vec<_>>()
                };
                let (l, b) = (at(Prefetch::Locate), at(Prefetch::Body));
                assert_eq!((l.len(), b.len()), (1, 1), "item {i} of {n}: {seen:?}");
                let l_pos = seen
                    .iter()
                    .position(|&(j, s, _)| j == i && s == Prefetch::Locate);
                let b_pos = seen
                    .iter()
                    .position(|&(j, s, _)| j == i && s == Prefetch::Body);
                assert!(l_pos < b_pos, "item {i} of {n}");
                assert!(b[0] <= i, "item {i} of {n}");
                if step_by == 1 {
                    assert!(i - l[0] < 3 * Lookahead::BATCH, "item {i} of {n}");
                }
            }
            assert!(seen.iter().all(|&(j, _, _)| j < n));
        }
    }
}
