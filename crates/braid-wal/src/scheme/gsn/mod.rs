//! `gsn`: distributed logging with global sequence numbers and passive group commit (Wang &
//! Johnson, "Scalable Logging through Emerging Non-Volatile Memory", VLDB 2014).
//!
//! * **GSNs** (Section 3.1): Lamport clocks on pages (`pages.rs`), transactions and logs. A
//!   read sets the transaction's GSN to `max(tx, page)`; a write sets both to `max(tx, page) +
//!   1`; a log insert takes `max(tx, log) + 1` (the transaction's GSN already covers its
//!   pages), sets the log's clock, the transaction's GSN and, at the end of the commit, the
//!   clocks of the pages written to it. Every record carries its GSN (`Stamp::Gsn`) and its
//!   LSN (its stream position). A worker's GSN carries over from one transaction to the next.
//! * **Partitioning** (Sections 3.1, 3.3): transaction-level (worker `w` logs to log `w mod
//!   n`; one log per worker by default) or page-level (an operation on page `p` goes to log
//!   `p mod n`, page id = table in the top 16 bits, page number below). A page-partitioned
//!   transaction that touches several logs writes one part per log and then a commit record
//!   (it has no page, so it goes to log 0); recovery replays it only if the commit record and
//!   every part are found (record layout in `recovery.rs`).
//! * **Undo**: the paper keeps a private DRAM undo buffer per transaction so aborts never read
//!   the log. The engine already gives us that: writes are buffered as private images in the
//!   transaction and installed only after `commit` has inserted the records, so an abort just
//!   drops the buffer and nothing is ever undone from the log. What the scheme keeps per
//!   transaction is the list of page clocks it touched (for the re-read at commit, below).
//! * **Commit protection** (Section 4): see `commit.rs`. Durable cache: acknowledge after the
//!   insert's fence. Volatile cache: passive group commit with a daemon and straggler
//!   signals. File devices: per-log durable GSN watermarks.
//! * **Recovery** (Section 3.2): the two-step parallel redo pipeline with N scanners and M
//!   appliers ([`GsnConfig::scan_threads`], [`GsnConfig::apply_threads`]), see
//!   `recovery.rs`.
//! * **Counters**: [`Gsn::stats`] (commits, straggler signals, daemon rounds, clock records) of
//!   one scheme instance since it was opened; also through [`Scheme::counters`], which is how
//!   `braid bench` reports signals per 10,000 commits.
//! * **NVM delay**: the paper's 1.2 us busy-wait per log insert is
//!   [`GsnConfig::insert_delay_ns`], spent inside the log's insert critical section with
//!   [`braid_pmem::busy_wait_ns`].
//!
//! Choices where the paper is vague or our engine differs from Shore-MT:
//!
//! * Inserts into one log are serialised by a per-log mutex that covers GSN assignment, the
//!   append and the emulated delay. GSNs therefore grow with LSNs inside a log and a log has no
//!   holes (on persistent memory a record is durable when its insert returns), which both the
//!   commit protocols and the recovery bound rely on. With one log per worker the mutex is
//!   uncontended.
//! * At commit the clocks of every page the transaction touched are read again. Under OCC a
//!   transaction reads without locks, so its access-time view of a page clock may predate the
//!   writer whose image it read; the writer raised the clock before installing, so the re-read
//!   (after validation) sees it and the transaction's GSN exceeds every GSN it depends on.
//! * GSNs capture read-after-write and write-after-write dependencies but not write-after-read
//!   ones, which re-executing commands would need: command logging is refused.
//! * Read-only transactions log nothing; their ticket waits for their GSN (what they read) to
//!   be acknowledged, except with a durable cache, where what they read is already durable.

// Internals, hidden from the docs (`commit` is public for the loom model in `tests/loom_gsn.rs`).
#[doc(hidden)]
pub mod commit;
#[doc(hidden)]
pub mod pages;
#[doc(hidden)]
pub mod recovery;

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use braid_pmem::signal::{self, BUSY, DIRTY, PublishCell};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex, MutexGuard};

use super::registry::{Registration, SchemeDef, parse_option, unknown_option};
use super::{
    CommitRequest, LogKind, RecoveryReport, Replay, RowRef, Scheme, SchemeConfig, SchemeWorker,
    Storage, Ticket,
};
use crate::device::Device;
use crate::payload::{RedoBuf, decode_redo};
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use crate::stream::{Stream, StreamConfig, StreamWriter};
use crate::{Lsn, WalError};
use commit::GsnWait;
use pages::PageTable;

/// Why the gsn scheme refuses command logging.
pub const NO_COMMAND_LOGGING: &str = "the gsn scheme cannot log commands: GSNs order \
    read-after-write and write-after-write dependencies but not write-after-read ones, which \
    re-executing stored procedures needs; use --logging data";

/// Why gsn refuses the engine's multi-version concurrency control.
pub const NO_MVCC: &str = "the gsn scheme cannot recover a multi-versioned database: its \
    recovery splits records into per-page operations and applies them in GSN order, without \
    the commit timestamps MVCC records carry; use --cc 2pl or occ with gsn, or another scheme \
    (serial, taurus, pertxn, nvdisk) with --cc mvcc";

/// How records are spread over the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Partition {
    /// A worker's transactions go to its own log.
    #[default]
    Transaction,
    /// An operation goes to log `page id mod n`.
    Page,
}

impl Partition {
    /// `"tx"` or `"page"` (what [`FromStr`] reads).
    pub fn name(self) -> &'static str {
        match self {
            Partition::Transaction => "tx",
            Partition::Page => "page",
        }
    }
}

impl FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tx" | "txn" | "transaction" => Ok(Partition::Transaction),
            "page" | "pg" => Ok(Partition::Page),
            _ => Err(format!("unknown partitioning {s:?}; use tx or page")),
        }
    }
}

/// How commits are protected on persistent memory (file devices always use watermarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitProtocol {
    /// Durable processor cache: acknowledge after the insert's fence (the paper's D variants).
    DurableCache,
    /// Volatile cache: passive group commit (the paper's V variants).
    #[default]
    Passive,
}

impl CommitProtocol {
    /// `"durable"` or `"passive"` (what [`FromStr`] reads).
    pub fn name(self) -> &'static str {
        match self {
            CommitProtocol::DurableCache => "durable",
            CommitProtocol::Passive => "passive",
        }
    }
}

impl FromStr for CommitProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "durable" | "d" => Ok(CommitProtocol::DurableCache),
            "passive" | "v" => Ok(CommitProtocol::Passive),
            _ => Err(format!(
                "unknown commit protocol {s:?}; use durable or passive"
            )),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for CommitProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of the gsn scheme.
#[derive(Debug, Clone)]
pub struct GsnConfig {
    /// How records are spread over the logs (option `partition`).
    pub partition: Partition,
    /// How commits are protected on persistent memory (option `commit`).
    pub commit: CommitProtocol,
    /// Rows per page (consecutive keys of one table).
    pub rows_per_page: u64,
    /// Emulated NVM latency per log insert (the paper uses 1200 ns), busy-waited.
    pub insert_delay_ns: u64,
    /// Passive group commit: signal a worker that keeps `min_dgsn` below the target this long.
    pub straggler_after: Duration,
    /// Page clocks (rounded up to a power of two).
    pub page_slots: usize,
    /// Called on the committing thread after its records are inserted and its commit GSN is
    /// staged, before it publishes `dgsn` (passive group commit only). Tests use it to make a
    /// worker stall with its dirty bit set.
    #[doc(hidden)]
    pub after_insert: Option<Hook>,
    /// Recovery: N, the threads that scan the logs and partition their redo operations by page
    /// (Section 3.2); 0 means `SchemeConfig::recovery_threads`.
    pub scan_threads: usize,
    /// Recovery: M, the page buckets and the threads that sort each by GSN and apply it; 0
    /// means `SchemeConfig::recovery_threads`.
    pub apply_threads: usize,
}

/// A test callback in `GsnConfig` (`after_insert`).
#[doc(hidden)]
#[derive(Clone)]
pub struct Hook(
    /// The callback.
    pub Arc<dyn Fn() + Send + Sync>,
);

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Hook")
    }
}

impl Default for GsnConfig {
    fn default() -> Self {
        GsnConfig {
            partition: Partition::Transaction,
            commit: CommitProtocol::Passive,
            rows_per_page: 16,
            insert_delay_ns: 0,
            straggler_after: Duration::from_micros(200),
            page_slots: pages::DEFAULT_SLOTS,
            after_insert: None,
            scan_threads: 0,
            apply_threads: 0,
        }
    }
}

/// The scheme's name.
pub const NAME: &str = "gsn";

/// The scheme's registration (see [`super::SCHEMES`]).
pub const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "distributed logging with global sequence numbers and passive group commit",
    default: || Box::new(GsnConfig::default()),
};

const OPTIONS: &[&str] = &[
    "partition",
    "commit",
    "rows_per_page",
    "insert_delay_ns",
    "scan_threads",
    "apply_threads",
];

impl SchemeDef for GsnConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn streams_for(&self, requested: usize) -> usize {
        requested.max(1)
    }
    fn command_logging_refusal(&self) -> Option<&'static str> {
        Some(NO_COMMAND_LOGGING)
    }
    fn mvcc_refusal(&self) -> Option<&'static str> {
        Some(NO_MVCC)
    }
    fn set_option(&mut self, key: &str, value: &str) -> Result<(), WalError> {
        match key {
            "partition" => self.partition = parse_option(NAME, key, value)?,
            "commit" => self.commit = parse_option(NAME, key, value)?,
            "rows_per_page" => self.rows_per_page = parse_option::<u64>(NAME, key, value)?.max(1),
            "insert_delay_ns" => self.insert_delay_ns = parse_option(NAME, key, value)?,
            "scan_threads" => self.scan_threads = parse_option(NAME, key, value)?,
            "apply_threads" => self.apply_threads = parse_option(NAME, key, value)?,
            _ => return Err(unknown_option(NAME, key, OPTIONS)),
        }
        Ok(())
    }
    fn options(&self) -> Vec<(&'static str, String)> {
        vec![
            ("partition", self.partition.name().to_string()),
            ("commit", self.commit.name().to_string()),
            ("rows_per_page", self.rows_per_page.to_string()),
            ("insert_delay_ns", self.insert_delay_ns.to_string()),
            ("scan_threads", self.scan_threads.to_string()),
            ("apply_threads", self.apply_threads.to_string()),
        ]
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        let (g, r) = open_gsn(cfg, self, storage.devices(NAME)?, replay, progress)?;
        Ok((g, r))
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(self.clone())
    }
}

/// The event counters of one gsn scheme instance (for benchmarks and tests).
#[derive(Debug, Default)]
pub(crate) struct GsnCounters {
    pub(crate) commits: AtomicU64,
    pub(crate) signals: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) clock_records: AtomicU64,
}

impl GsnCounters {
    fn snapshot(&self) -> GsnStats {
        GsnStats {
            commits: self.commits.load(Relaxed),
            signals: self.signals.load(Relaxed),
            rounds: self.rounds.load(Relaxed),
            clock_records: self.clock_records.load(Relaxed),
        }
    }
}

/// A snapshot of one instance's counters ([`Gsn::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GsnStats {
    /// Update transactions committed (workers add theirs in batches of 256 and when they are
    /// dropped, so the count is exact once the workers are gone).
    pub commits: u64,
    /// Straggler signals sent by passive group commit.
    pub signals: u64,
    /// Commit daemon rounds.
    pub rounds: u64,
    /// Clock records written to lagging file logs.
    pub clock_records: u64,
}

impl GsnStats {
    /// Straggler signals per 10,000 commits.
    pub fn signals_per_10k(&self) -> f64 {
        if self.commits == 0 {
            0.0
        } else {
            self.signals as f64 * 10_000.0 / self.commits as f64
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Persistent memory, durable cache: acknowledged when inserted.
    Immediate,
    /// Persistent memory, volatile cache: passive group commit.
    Passive,
    /// File devices: per-log durable GSN watermarks.
    Watermark,
}

pub(crate) struct LogInner {
    /// The log's GSN: the GSN of its newest record.
    pub clock: u64,
    writer: StreamWriter,
    /// Watermark mode: (end LSN, GSN) of records not yet known durable, oldest first.
    pub pending: VecDeque<(Lsn, u64)>,
    /// Watermark mode: GSN of the newest record known durable.
    pub durable_gsn: u64,
}

pub(crate) struct Log {
    pub stream: Stream,
    pub inner: Mutex<LogInner>,
}

impl Log {
    /// Insert one record under the log's lock: GSN `max(floor, clock) + 1`. Returns (GSN, end).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_locked(
        &self,
        g: &mut MutexGuard<'_, LogInner>,
        cfg: &GsnConfig,
        floor: u64,
        kind: Kind,
        flags: u8,
        txn: u64,
        payload: &[&[u8]],
        track: bool,
    ) -> Result<(u64, Lsn), WalError> {
        let gsn = floor.max(g.clock) + 1;
        let stamp = Stamp::Gsn(gsn);
        let spec = RecordSpec {
            kind,
            flags,
            txn,
            stamp: &stamp,
            payload,
        };
        let (_, end) = g.writer.append(&spec)?;
        g.clock = gsn;
        if track {
            g.pending.push_back((end, gsn));
        }
        braid_pmem::busy_wait_ns(cfg.insert_delay_ns);
        Ok((gsn, end))
    }
}

pub(crate) struct Shared {
    pub cfg: GsnConfig,
    pub mode: Mode,
    pub logs: Vec<Log>,
    pub pages: PageTable,
    /// Every commit with a GSN up to this is acknowledged.
    pub acked: CachePadded<AtomicU64>,
    /// The largest GSN a commit waits for (the commit queue, in GSN order).
    pub want: CachePadded<AtomicU64>,
    pub lock: Mutex<()>,
    pub waiter_cv: Condvar,
    pub daemon_cv: Condvar,
    pub waiters: AtomicUsize,
    pub daemon_sleeping: AtomicBool,
    pub cells: Mutex<Vec<Arc<PublishCell>>>,
    pub stop: AtomicBool,
    pub closed: AtomicBool,
    pub poison: OnceLock<WalError>,
    /// A transient failure (out of space) for commits up to the GSN.
    pub failed: Mutex<Option<(u64, WalError)>>,
    /// This instance's event counters.
    pub counters: GsnCounters,
}

impl Shared {
    /// The error that keeps `gsn` from being acknowledged, if any.
    pub(crate) fn blocked(&self, gsn: u64) -> Result<(), WalError> {
        if let Some(e) = self.poison.get() {
            return Err(e.clone());
        }
        if let Some((upto, e)) = &*self.failed.lock()
            && gsn <= *upto
        {
            return Err(e.clone());
        }
        if self.closed.load(SeqCst) && self.acked.load(SeqCst) < gsn {
            return Err(WalError::Closed(0));
        }
        Ok(())
    }

    /// Whether the logs' persistence can still be trusted: on pmem the committing thread's
    /// own flush makes a record durable (no stream watermark is involved), so an msync that
    /// failed on the way ([`crate::device::Device::check_fills`]) must keep it from being
    /// acknowledged.
    pub(crate) fn fills_ok(&self) -> Result<(), WalError> {
        for log in self.logs.iter() {
            log.stream.device().check_fills()?;
        }
        Ok(())
    }

    pub(crate) fn advance(&self, to: u64) {
        self.acked.fetch_max(to, SeqCst);
        if self.waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.waiter_cv.notify_all();
        }
    }

    pub(crate) fn fail(&self, e: WalError, upto: u64) {
        match e {
            WalError::NoSpace { .. } => *self.failed.lock() = Some((upto, e)),
            e => {
                let _ = self.poison.set(e);
            }
        }
        let _g = self.lock.lock();
        self.waiter_cv.notify_all();
    }

    pub(crate) fn sleep_daemon(&self) {
        // Poll (yielding the core) for a while before sleeping: a sleeping daemon costs every
        // commit a wake-up.
        let t = Instant::now();
        while t.elapsed() < DAEMON_POLL {
            if self.want.load(SeqCst) > self.acked.load(SeqCst) || self.stop.load(SeqCst) {
                return;
            }
            std::thread::yield_now();
        }
        let mut g = self.lock.lock();
        self.daemon_sleeping.store(true, SeqCst);
        if self.want.load(SeqCst) <= self.acked.load(SeqCst) && !self.stop.load(SeqCst) {
            self.daemon_cv.wait_for(&mut g, Duration::from_millis(50));
        }
        self.daemon_sleeping.store(false, SeqCst);
    }

    /// Join the commit queue for `gsn`.
    fn enqueue(self: &Arc<Self>, gsn: u64) -> Result<Ticket, WalError> {
        if self.acked.load(SeqCst) >= gsn {
            self.fills_ok()?;
            return Ok(Ticket::Durable);
        }
        self.want.fetch_max(gsn, SeqCst);
        if self.daemon_sleeping.load(SeqCst) {
            let _g = self.lock.lock();
            self.daemon_cv.notify_one();
        }
        Ok(Ticket::Waiter(Box::new(GsnWait {
            shared: Arc::clone(self),
            gsn,
        })))
    }

    fn stop_daemon(&self) {
        self.stop.store(true, SeqCst);
        let _g = self.lock.lock();
        self.daemon_cv.notify_all();
    }
}

/// The running scheme.
pub struct Gsn {
    shared: Arc<Shared>,
    streams: Vec<Stream>,
    daemon: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for Gsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gsn")
            .field("logs", &self.streams.len())
            .field("mode", &self.shared.mode)
            .field("partition", &self.shared.cfg.partition)
            .field("acked", &self.shared.acked.load(Relaxed))
            .finish()
    }
}

impl Gsn {
    /// GSN up to which every commit is acknowledged.
    pub fn acked(&self) -> u64 {
        self.shared.acked.load(SeqCst)
    }

    /// This instance's counters since it was opened.
    pub fn stats(&self) -> GsnStats {
        self.shared.counters.snapshot()
    }

    fn join_daemon(&self) {
        self.shared.stop_daemon();
        if let Some(h) = self.daemon.lock().take() {
            let _ = h.join();
        }
    }
}

impl Drop for Gsn {
    fn drop(&mut self) {
        self.join_daemon();
    }
}

impl Scheme for Gsn {
    fn name(&self) -> &'static str {
        NAME
    }

    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        let s = &self.shared;
        let cell = if s.mode == Mode::Passive {
            let c = Arc::new(PublishCell::claim().ok_or_else(|| {
                WalError::Config(format!(
                    "passive group commit: all {} worker cells are in use",
                    signal::CELLS
                ))
            })?);
            s.cells.lock().push(Arc::clone(&c));
            Some(c)
        } else {
            None
        };
        let n = s.logs.len();
        Ok(Box::new(GsnWorker {
            shared: Arc::clone(s),
            home: worker % n,
            tx: 0,
            last: 0,
            touched: Vec::new(),
            parts: (0..n).map(|_| RedoBuf::default()).collect(),
            cell,
            commits: 0,
        }))
    }

    fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// Each log's reserved end with its GSN clock, read together under the log's lock: every
    /// record with a GSN up to the clock lies before the position (the cut's mark, see
    /// [`crate::scheme::cut`]).
    fn positions(&self) -> crate::scheme::cut::Positions {
        let mut p = crate::scheme::cut::Positions::default();
        for log in &self.shared.logs {
            let g = log.inner.lock();
            p.lsns.push(log.stream.tail());
            p.marks.push(g.clock);
        }
        p
    }

    fn close(&self) -> Result<(), WalError> {
        self.join_daemon();
        let mut first = None;
        for st in &self.streams {
            if let Err(e) = st.close() {
                first.get_or_insert(e);
            }
        }
        self.shared.closed.store(true, SeqCst);
        {
            let _g = self.shared.lock.lock();
            self.shared.waiter_cv.notify_all();
        }
        first.map_or(Ok(()), Err)
    }

    /// The page clocks (one word per slot).
    fn metadata_bytes(&self) -> u64 {
        self.shared.pages.bytes()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let st = self.stats();
        vec![
            ("commits", st.commits),
            ("signals", st.signals),
            ("daemon_rounds", st.rounds),
            ("clock_records", st.clock_records),
        ]
    }
}

/// How long the idle commit daemon polls before it sleeps.
const DAEMON_POLL: Duration = Duration::from_micros(200);

/// Commit counts are added to the instance's counter in batches.
const COMMIT_BATCH: u64 = 256;

struct GsnWorker {
    shared: Arc<Shared>,
    home: usize,
    /// The transaction's GSN.
    tx: u64,
    /// GSN of this worker's last commit (the next transaction starts from it).
    last: u64,
    /// Page clock slots touched by the running transaction, and whether written.
    touched: Vec<(usize, bool)>,
    /// Page-level partitioning: one redo buffer per log.
    parts: Vec<RedoBuf>,
    cell: Option<Arc<PublishCell>>,
    commits: u64,
}

impl Drop for GsnWorker {
    fn drop(&mut self) {
        self.shared
            .counters
            .commits
            .fetch_add(self.commits, Relaxed);
        if let Some(c) = self.cell.take() {
            self.shared.cells.lock().retain(|x| !Arc::ptr_eq(x, &c));
        }
    }
}

impl GsnWorker {
    fn end_txn(&mut self, gsn: u64) {
        self.touched.clear();
        self.tx = gsn;
        self.last = gsn;
    }

    /// Insert the transaction's records; returns its commit GSN. `self.tx` follows every insert.
    fn insert(&mut self, req: &CommitRequest<'_>) -> Result<u64, WalError> {
        let s = &*self.shared;
        let track = s.mode == Mode::Watermark;
        let n = s.logs.len();
        let ef = crate::scheme::cut::epoch_flag(req.epoch);
        if s.cfg.partition == Partition::Transaction || n == 1 {
            let log = &s.logs[self.home];
            let mut g = log.inner.lock();
            let (gsn, _) = log.insert_locked(
                &mut g,
                &s.cfg,
                self.tx,
                Kind::Redo,
                FLAG_COMMIT | ef,
                req.txn,
                &[req.payload],
                track,
            )?;
            self.tx = gsn;
            return Ok(gsn);
        }
        for p in &mut self.parts {
            p.clear();
        }
        let rpp = s.pages.rows_per_page();
        if req.writes.is_empty() {
            // The caller did not say what it wrote: find it in the redo payload.
            for op in decode_redo(req.payload) {
                let op =
                    op.map_err(|e| WalError::Config(format!("gsn: malformed redo payload: {e}")))?;
                let page = pages::PageId::of(op.table(), op.key(), rpp);
                self.parts[(page.number() % n as u64) as usize].push(&op);
            }
        } else {
            for w in req.writes {
                let page = pages::PageId::of(w.table, w.key, rpp);
                let op = req
                    .payload
                    .get(w.op.start as usize..w.op.end as usize)
                    .ok_or_else(|| {
                        WalError::Config(format!(
                            "gsn: the write of table {} key {} names bytes {:?} outside the \
                             {}-byte payload",
                            w.table,
                            w.key,
                            w.op,
                            req.payload.len()
                        ))
                    })?;
                self.parts[(page.number() % n as u64) as usize]
                    .bytes
                    .extend_from_slice(op);
            }
        }
        let touched: Vec<usize> = (0..n).filter(|&l| !self.parts[l].is_empty()).collect();
        if touched.len() == 1 {
            let l = touched[0];
            let log = &s.logs[l];
            let mut g = log.inner.lock();
            let (gsn, _) = log.insert_locked(
                &mut g,
                &s.cfg,
                self.tx,
                Kind::Redo,
                FLAG_COMMIT | ef,
                req.txn,
                &[&self.parts[l].bytes],
                track,
            )?;
            self.tx = gsn;
            return Ok(gsn);
        }
        for &l in &touched {
            let log = &s.logs[l];
            let mut g = log.inner.lock();
            let (gsn, _) = log.insert_locked(
                &mut g,
                &s.cfg,
                self.tx,
                Kind::Redo,
                ef,
                req.txn,
                &[&self.parts[l].bytes],
                track,
            )?;
            self.tx = gsn;
        }
        let count = (touched.len() as u32).to_le_bytes();
        let log = &s.logs[0];
        let mut g = log.inner.lock();
        let (gsn, _) = log.insert_locked(
            &mut g,
            &s.cfg,
            self.tx,
            Kind::Commit,
            FLAG_COMMIT | ef,
            req.txn,
            &[&count],
            track,
        )?;
        self.tx = gsn;
        Ok(gsn)
    }
}

impl SchemeWorker for GsnWorker {
    fn on_read(&mut self, row: RowRef) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        self.tx = self.tx.max(p.get(slot));
        self.touched.push((slot, false));
    }

    fn on_write(&mut self, row: RowRef) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        let g = self.tx.max(p.get(slot)) + 1;
        self.tx = p.raise(slot, g);
        self.touched.push((slot, true));
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        if req.kind == LogKind::Command {
            return Err(WalError::Config(NO_COMMAND_LOGGING.into()));
        }
        let shared = Arc::clone(&self.shared);
        // Re-read the clocks of every page touched (see the module doc: OCC).
        for &(slot, _) in &self.touched {
            self.tx = self.tx.max(shared.pages.get(slot));
        }
        if req.read_only || req.payload.is_empty() {
            let g = self.tx;
            self.touched.clear();
            if g == 0 || shared.mode == Mode::Immediate {
                shared.fills_ok()?;
                return Ok(Ticket::Durable);
            }
            return shared.enqueue(g);
        }
        // Passive group commit: dirty before taking a GSN; the floor bounds every GSN we use.
        let mut dirty_word = 0;
        if let Some(c) = &self.cell {
            c.bind_current_thread();
            c.staged().store(BUSY | self.last, SeqCst);
            let (w, floor) = commit::mark_dirty(c.word());
            dirty_word = w;
            self.tx = self.tx.max(floor);
        }
        let r = self.insert(req);
        if let Some(c) = &self.cell {
            // Every record this worker inserted is written and fenced: publish.
            let v = self.tx.max(dirty_word & !DIRTY);
            c.staged().store(v, SeqCst);
            if let Some(h) = &self.shared.cfg.after_insert {
                (h.0)();
            }
            c.publish(dirty_word, v);
        }
        let gsn = match r {
            Ok(g) => g,
            Err(e) => {
                let t = self.tx;
                self.end_txn(t);
                return Err(e);
            }
        };
        for &(slot, written) in &self.touched {
            if written {
                shared.pages.raise(slot, gsn);
            }
        }
        self.end_txn(gsn);
        self.commits += 1;
        if self.commits >= COMMIT_BATCH {
            shared.counters.commits.fetch_add(self.commits, Relaxed);
            self.commits = 0;
        }
        match shared.mode {
            Mode::Immediate => {
                shared.fills_ok()?;
                Ok(Ticket::Durable)
            }
            Mode::Passive | Mode::Watermark => shared.enqueue(gsn),
        }
    }

    fn abort(&mut self) {
        self.touched.clear();
        self.tx = self.last;
    }
}

/// Check the configuration and the devices; returns whether the logs are on persistent memory.
fn check_devices(cfg: &SchemeConfig, devices: &[Arc<dyn Device>]) -> Result<bool, WalError> {
    if cfg.logging == LogKind::Command {
        return Err(WalError::Config(NO_COMMAND_LOGGING.into()));
    }
    if devices.is_empty() {
        return Err(WalError::Config(
            "the gsn scheme needs at least one log device".into(),
        ));
    }
    let on_fill = devices.iter().filter(|d| d.durable_on_fill()).count();
    if on_fill != 0 && on_fill != devices.len() {
        return Err(WalError::Config(
            "the gsn scheme needs all its logs on one kind of device (all pmem or all files)"
                .into(),
        ));
    }
    Ok(on_fill == devices.len())
}

/// Run the recovery pipeline over the logs on `devices` through `replay`, and nothing else: no
/// streams are started and nothing is written (on files, the void marker that [`open_gsn`] writes is
/// not written either, so use [`open_gsn`] before appending). For benchmarks and inspection.
#[doc(hidden)]
pub fn recover_only(
    cfg: &SchemeConfig,
    gsn: &GsnConfig,
    devices: &[Arc<dyn Device>],
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<RecoveryReport, WalError> {
    let pmem = check_devices(cfg, devices)?;
    let started = Instant::now();
    let rec = recovery::recover(
        devices,
        pmem,
        gsn.rows_per_page,
        recovery::Threads::of(cfg, gsn),
        cfg.scan_mode,
        cfg.cut.as_ref(),
        replay,
        progress,
    )?;
    let mut report = rec.report;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Recover the gsn logs on `devices` and start the scheme (the concrete type, for its
/// [`Gsn::stats`]; [`SchemeDef::open`] is the same behind the seam).
pub fn open_gsn(
    cfg: &SchemeConfig,
    gcfg: &GsnConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<Gsn>, RecoveryReport), WalError> {
    let pmem = check_devices(cfg, &devices)?;
    let gcfg = gcfg.clone();
    let mode = match (pmem, gcfg.commit) {
        (false, _) => Mode::Watermark,
        (true, CommitProtocol::DurableCache) => Mode::Immediate,
        (true, CommitProtocol::Passive) => Mode::Passive,
    };
    if mode == Mode::Passive {
        signal::install().map_err(|e| WalError::Config(format!("passive group commit: {e}")))?;
    }
    let started = Instant::now();
    let rec = recovery::recover(
        &devices,
        pmem,
        gcfg.rows_per_page,
        recovery::Threads::of(cfg, &gcfg),
        cfg.scan_mode,
        cfg.cut.as_ref(),
        replay,
        progress,
    )?;
    let mut report = rec.report;
    let mut streams = Vec::with_capacity(devices.len());
    let mut logs = Vec::with_capacity(devices.len());
    for (i, (dev, end)) in devices.into_iter().zip(rec.ends).enumerate() {
        let scfg = StreamConfig {
            id: i as u32,
            max_writers: 2,
            group_delay: cfg.group_delay,
            group_bytes: cfg.group_bytes,
        };
        let stream = Stream::start(dev, end, scfg)?;
        let writer = stream.writer()?;
        let inner = LogInner {
            clock: rec.base - 1,
            writer,
            pending: VecDeque::new(),
            durable_gsn: 0,
        };
        streams.push(stream.clone());
        logs.push(Log {
            stream,
            inner: Mutex::new(inner),
        });
    }
    if !pmem {
        // Void what lies above the bound before anything new is written (see `recovery`).
        let bound = rec.bound.min(rec.base);
        let mut marker = [0u8; 16];
        marker[..8].copy_from_slice(&bound.to_le_bytes());
        marker[8..].copy_from_slice(&rec.base.to_le_bytes());
        let mut ends = Vec::with_capacity(logs.len());
        for log in &logs {
            let mut g = log.inner.lock();
            let (gsn, end) = log.insert_locked(
                &mut g,
                &gcfg,
                rec.base - 1,
                Kind::Checkpoint,
                0,
                0,
                &[&marker],
                false,
            )?;
            g.durable_gsn = gsn;
            ends.push(end);
        }
        for (log, end) in logs.iter().zip(ends) {
            log.stream.wait_durable(end)?;
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    let pages = PageTable::new(gcfg.page_slots, gcfg.rows_per_page);
    let shared = Arc::new(Shared {
        cfg: gcfg,
        mode,
        logs,
        pages,
        acked: CachePadded::new(AtomicU64::new(0)),
        want: CachePadded::new(AtomicU64::new(0)),
        lock: Mutex::new(()),
        waiter_cv: Condvar::new(),
        daemon_cv: Condvar::new(),
        waiters: AtomicUsize::new(0),
        daemon_sleeping: AtomicBool::new(false),
        cells: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        poison: OnceLock::new(),
        failed: Mutex::new(None),
        counters: GsnCounters::default(),
    });
    let daemon = if mode == Mode::Immediate {
        None
    } else {
        let sh = Arc::clone(&shared);
        let h = std::thread::Builder::new()
            .name("braid-gsn-commit".into())
            .spawn(move || commit::daemon(sh))
            .map_err(|e| WalError::Config(format!("cannot start the gsn commit daemon: {e}")))?;
        Some(h)
    };
    Ok((
        Arc::new(Gsn {
            shared,
            streams,
            daemon: Mutex::new(daemon),
        }),
        report,
    ))
}
