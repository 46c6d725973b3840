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
//!   which marks the same boundary for a single log.
//! * A no-force pool checkpoints by itself when a log passes `checkpoint_fraction` of its
//!   capacity after a commit, or is full.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use braid_pmem::{PmemConfig, PmemStats, Region};

use crate::RewindError;
use crate::alloc::{Allocator, HeapReport};
use crate::avl::{AVL_NODE, TwoLayer};
use crate::log::{Arena, LOG_DESC, LogLayout, LogStore, Pos, node_size};
use crate::pptr::PPtr;
use crate::record::{Kind, Rec};
use crate::recovery::{self, RecoveryReport};
use crate::tx::Tx;

const MAGIC: u64 = u64::from_le_bytes(*b"RWNDPOOL");
const VERSION: u64 = 1;
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_SIZE: usize = 16;
const H_LAYOUT: usize = 24;
const H_POLICY: usize = 32;
const H_LAYERS: usize = 40;
const H_NLOGS: usize = 48;
const H_BUCKET: usize = 56;
const H_CAPACITY: usize = 64;
const H_GROUP: usize = 72;
const H_CKPT: usize = 80;
pub(crate) const H_ROOT: usize = 128;
const H_HEAP_START: usize = 136;
const H_HEAP_END: usize = 144;
const H_HEAP_TOP: usize = 152;
const HEADER: usize = 256;
/// Bytes of a log's descriptor area: the list descriptor, then (two layers) the tree root.
const DESC: usize = 512;
const DESC_AVL_ROOT: usize = LOG_DESC;
/// Bottom log of a two-layer log: records per bucket, buckets.
const BOTTOM_BUCKET: usize = 128;
const BOTTOM_BUCKETS: usize = 8;
/// Smallest heap accepted.
const MIN_HEAP: usize = 64 * 1024;

/// Force (user writes persisted at commit, log cleared at commit) or no-force (user writes
/// stay in the cache, log cleared by checkpoints, redo at recovery). REWIND §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Policy {
    /// User writes are persisted by commit; a transaction's records are cleared at commit.
    Force,
    /// User writes stay in the cache; checkpoints clear the log and recovery redoes committed
    /// transactions.
    NoForce,
}

/// One-layer (the list) or two-layer (AVL index over the list) logging. REWIND §2, §3.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Layers {
    /// The log list alone; rollback scans it for the transaction's records.
    One,
    /// An atomic AVL tree keyed by transaction over the list, so rollback and clearing find a
    /// transaction's records without a scan.
    Two,
}

/// One log shared by every thread, or `n` logs used by threads round robin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogMode {
    /// One log for every thread.
    Shared,
    /// This many logs; thread `t` (a process-wide thread number) uses log `t mod n`.
    PerThread(usize),
}

impl LogMode {
    fn count(self) -> usize {
        match self {
            LogMode::Shared => 1,
            LogMode::PerThread(n) => n,
        }
    }
}

/// How a pool logs. Stored in the pool at creation; [`Pool::open_in`] reads it back.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoolConfig {
    /// How each log stores its records.
    pub layout: LogLayout,
    /// Force or no-force.
    pub policy: Policy,
    /// One- or two-layer logs.
    pub layers: Layers,
    /// One shared log or per-thread logs.
    pub logs: LogMode,
    /// Records per bucket (Optimized and Batch); the paper uses 1000.
    pub bucket_records: usize,
    /// Records each log can hold.
    pub log_capacity: usize,
    /// Batch: records per group (one fence pair per group); the paper uses 8, 16, 32.
    pub batch_group: usize,
    /// No-force: checkpoint after a commit that leaves a log fuller than this fraction.
    pub checkpoint_fraction: f64,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            layout: LogLayout::Batch,
            policy: Policy::NoForce,
            layers: Layers::One,
            logs: LogMode::Shared,
            bucket_records: 1000,
            log_capacity: 1 << 16,
            batch_group: 8,
            checkpoint_fraction: 0.5,
        }
    }
}

impl PoolConfig {
    fn validate(&self) -> Result<(), RewindError> {
        let bad = |m: &str| Err(RewindError::Config(m.to_string()));
        if self.logs.count() == 0 || self.logs.count() > 1024 {
            return bad("the number of logs must be 1..=1024");
        }
        if self.bucket_records < 2 || self.bucket_records > 1 << 16 {
            return bad("bucket_records must be 2..=65536");
        }
        if self.log_capacity < 16 || self.log_capacity > 1 << 30 {
            return bad("log_capacity must be 16..=2^30 records");
        }
        if self.batch_group == 0 || self.batch_group > 4096 {
            return bad("batch_group must be 1..=4096");
        }
        if !(self.checkpoint_fraction > 0.0 && self.checkpoint_fraction <= 1.0) {
            return bad("checkpoint_fraction must be in (0, 1]");
        }
        Ok(())
    }

    /// Region bytes taken by the header, descriptors and log arenas.
    fn meta_bytes(&self) -> usize {
        let mut off = HEADER + DESC * self.logs.count();
        for _ in 0..self.logs.count() {
            off += self.arena_bytes();
        }
        off.next_multiple_of(4096)
    }

    fn arena_bytes(&self) -> usize {
        match self.layers {
            Layers::One => {
                let b = self.bucket_records;
                let nodes = match self.layout {
                    LogLayout::Simple => self.log_capacity,
                    _ => self.log_capacity.div_ceil(b) + 2,
                };
                nodes * node_size(self.layout, b)
            }
            Layers::Two => {
                let (ns, count) = self.bottom_nodes();
                self.log_capacity * AVL_NODE + ns * count
            }
        }
    }

    /// Layout of the bottom log of a two-layer log (Batch needs deferred user writes, which a
    /// tree operation does not have, so it becomes Optimized there).
    fn bottom_layout(&self) -> LogLayout {
        match self.layout {
            LogLayout::Simple => LogLayout::Simple,
            _ => LogLayout::Optimized,
        }
    }

    /// Node size and node count of a two-layer log's bottom log (room for the stores of
    /// the largest tree operation with plenty to spare).
    fn bottom_nodes(&self) -> (usize, usize) {
        let bl = self.bottom_layout();
        let ns = node_size(bl, BOTTOM_BUCKET);
        match bl {
            LogLayout::Simple => (ns, BOTTOM_BUCKETS * BOTTOM_BUCKET),
            _ => (ns, BOTTOM_BUCKETS),
        }
    }

    /// Smallest region that holds this configuration and a minimal heap.
    pub fn min_region_size(&self) -> usize {
        self.meta_bytes() + MIN_HEAP
    }
}

/// A log stream: one- or two-layer.
pub(crate) enum Log {
    One(LogStore),
    Two(TwoLayer),
}

/// Where a record is: a slot of a one-layer log, or a key of a two-layer log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecRef {
    Pos(Pos),
    Key(u64),
}

impl Log {
    /// Append a record of transaction `rec.txid` whose per-transaction number is `n`.
    pub fn append(&self, rec: &Rec, n: u64, hold: Option<usize>) -> Result<RecRef, RewindError> {
        match self {
            Log::One(l) => l.append(rec, hold).map(RecRef::Pos),
            Log::Two(t) => t
                .append(crate::avl::key(rec.txid, n), rec, hold)
                .map(RecRef::Key),
        }
    }

    pub fn unreserve(&self, n: usize) {
        match self {
            Log::One(l) => l.unreserve(n),
            Log::Two(t) => t.unreserve(n),
        }
    }

    pub fn is_batch(&self) -> bool {
        matches!(self, Log::One(l) if l.layout() == LogLayout::Batch)
    }

    pub fn sync(&self) {
        if let Log::One(l) = self {
            l.sync();
        }
    }

    pub fn clear(&self, recs: &[RecRef], last: Option<RecRef>) -> Result<(), RewindError> {
        match self {
            Log::One(l) => {
                let ps: Vec<Pos> = recs
                    .iter()
                    .filter_map(|r| match r {
                        RecRef::Pos(p) => Some(*p),
                        RecRef::Key(_) => None,
                    })
                    .collect();
                let last = match last {
                    Some(RecRef::Pos(p)) => Some(p),
                    _ => None,
                };
                l.clear(&ps, last);
                Ok(())
            }
            Log::Two(t) => {
                let ks: Vec<u64> = recs
                    .iter()
                    .filter_map(|r| match r {
                        RecRef::Key(k) => Some(*k),
                        RecRef::Pos(_) => None,
                    })
                    .collect();
                let last = match last {
                    Some(RecRef::Key(k)) => Some(k),
                    _ => None,
                };
                t.clear(&ks, last)
            }
        }
    }

    /// Every record: log order (one layer) or key order (two layers).
    pub fn scan(&self) -> Result<Vec<(RecRef, Rec)>, RewindError> {
        match self {
            Log::One(l) => Ok(l
                .scan()
                .into_iter()
                .map(|(p, r)| (RecRef::Pos(p), r))
                .collect()),
            Log::Two(t) => Ok(t
                .scan()?
                .into_iter()
                .map(|(k, r)| (RecRef::Key(k), r))
                .collect()),
        }
    }

    /// The records of one transaction, newest first. One layer: a scan of the whole log
    /// (§3.2: "we need to scan the entire log just for the rolled back transaction"); two
    /// layers: a walk down the transaction's key range in the AVL index.
    pub fn tx_records_rev(&self, txid: u64) -> Result<Vec<(RecRef, Rec)>, RewindError> {
        match self {
            Log::One(_) => {
                let mut v: Vec<_> = self
                    .scan()?
                    .into_iter()
                    .filter(|(_, r)| r.txid == txid)
                    .collect();
                v.reverse();
                Ok(v)
            }
            Log::Two(t) => {
                let low = crate::avl::key(txid, 0);
                let mut bound = crate::avl::key(txid + 1, 0);
                let mut out = Vec::new();
                while let Some((k, r)) = t.below(low, bound)? {
                    out.push((RecRef::Key(k), r));
                    bound = k;
                }
                Ok(out)
            }
        }
    }

    pub fn recover(&self) -> Result<(), RewindError> {
        match self {
            Log::One(l) => l.recover(),
            Log::Two(t) => t.recover(),
        }
    }

    pub fn reset(&self) {
        match self {
            Log::One(l) => l.reset(),
            Log::Two(t) => t.reset(),
        }
    }

    pub fn format(&self) {
        match self {
            Log::One(l) => l.format(),
            Log::Two(t) => t.format(),
        }
    }

    pub fn live(&self) -> usize {
        match self {
            Log::One(l) => l.live(),
            Log::Two(t) => t.live(),
        }
    }

    pub fn capacity(&self) -> usize {
        match self {
            Log::One(l) => l.capacity(),
            Log::Two(t) => t.capacity(),
        }
    }
}

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
    pub ckpt: Mutex<()>,
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

fn build(r: Region, cfg: PoolConfig) -> Result<Inner, RewindError> {
    // Before anything is sized by the configuration: a damaged header may describe logs far
    // larger than the region (and their volatile state larger than memory).
    if r.len() < cfg.min_region_size() {
        return Err(RewindError::TooSmall {
            have: r.len(),
            need: cfg.min_region_size(),
        });
    }
    let n = cfg.logs.count();
    let mut arena_off = HEADER + DESC * n;
    let mut logs = Vec::with_capacity(n);
    for i in 0..n {
        let desc = HEADER + DESC * i;
        let bytes = cfg.arena_bytes();
        let log = match cfg.layers {
            Layers::One => {
                let ns = node_size(cfg.layout, cfg.bucket_records);
                let arena = Arena {
                    base: arena_off,
                    node_size: ns,
                    count: bytes / ns,
                };
                Log::One(LogStore::new(
                    r.clone(),
                    cfg.layout,
                    desc,
                    arena,
                    cfg.bucket_records,
                ))
            }
            Layers::Two => {
                let tree = Arena {
                    base: arena_off,
                    node_size: AVL_NODE,
                    count: cfg.log_capacity,
                };
                let bl = cfg.bottom_layout();
                let (ns, count) = cfg.bottom_nodes();
                let bottom_arena = Arena {
                    base: arena_off + cfg.log_capacity * AVL_NODE,
                    node_size: ns,
                    count,
                };
                let bottom = LogStore::new(r.clone(), bl, desc, bottom_arena, BOTTOM_BUCKET);
                Log::Two(TwoLayer::new(r.clone(), desc + DESC_AVL_ROOT, tree, bottom))
            }
        };
        logs.push(log);
        arena_off += bytes;
    }
    let heap_start = cfg.meta_bytes();
    let heap_end = r.len();
    let alloc = Allocator::new(r.clone(), heap_start, heap_end, H_HEAP_TOP);
    Ok(Inner {
        r,
        cfg,
        logs,
        alloc,
        next_txid: AtomicU64::new(1),
        commit_seq: AtomicU64::new(0),
        cut: RwLock::new(()),
        ckpt: Mutex::new(()),
        stats: Counters::default(),
    })
}

impl Pool {
    /// Format `region` as an empty pool (the region's previous content is ignored).
    pub fn create_in(region: Region, cfg: PoolConfig) -> Result<Pool, RewindError> {
        cfg.validate()?;
        let inner = build(region, cfg)?;
        let r = &inner.r;
        r.fill(0, HEADER, 0);
        r.store_u64(H_VERSION, VERSION);
        r.store_u64(H_SIZE, r.len() as u64);
        r.store_u64(H_LAYOUT, cfg.layout.code());
        r.store_u64(
            H_POLICY,
            match cfg.policy {
                Policy::Force => 1,
                Policy::NoForce => 2,
            },
        );
        r.store_u64(
            H_LAYERS,
            match cfg.layers {
                Layers::One => 1,
                Layers::Two => 2,
            },
        );
        r.store_u64(
            H_NLOGS,
            match cfg.logs {
                LogMode::Shared => 0,
                LogMode::PerThread(n) => n as u64,
            },
        );
        r.store_u64(H_BUCKET, cfg.bucket_records as u64);
        r.store_u64(H_CAPACITY, cfg.log_capacity as u64);
        r.store_u64(H_GROUP, cfg.batch_group as u64);
        r.store_u64(H_CKPT, cfg.checkpoint_fraction.to_bits());
        r.store_u64(H_HEAP_START, cfg.meta_bytes() as u64);
        r.store_u64(H_HEAP_END, r.len() as u64);
        r.flush(0, HEADER);
        for l in &inner.logs {
            l.format();
        }
        inner.alloc.format();
        r.fence();
        r.store_u64(H_MAGIC, MAGIC);
        r.persist(H_MAGIC, 8);
        Ok(Pool {
            inner: Arc::new(inner),
        })
    }

    /// Open the pool in `region`, recovering it (REWIND §4.5). Returns the pool and what
    /// recovery did.
    pub fn open_in(region: Region) -> Result<(Pool, RecoveryReport), RewindError> {
        let r = &region;
        if r.len() < HEADER || r.load_u64(H_MAGIC) != MAGIC {
            return Err(RewindError::NotAPool(
                "no REWIND pool magic at the start of the region (never created, or creation \
                 did not finish)"
                    .into(),
            ));
        }
        let version = r.load_u64(H_VERSION);
        if version != VERSION {
            return Err(RewindError::NotAPool(format!(
                "pool format version {version}, this library reads version {VERSION}"
            )));
        }
        if r.load_u64(H_SIZE) != r.len() as u64 {
            return Err(RewindError::NotAPool(format!(
                "pool was created for {} bytes but the region has {}",
                r.load_u64(H_SIZE),
                r.len()
            )));
        }
        let corrupt = |what: &str| RewindError::Corrupt(format!("bad {what} in the pool header"));
        let cfg = PoolConfig {
            layout: LogLayout::from_code(r.load_u64(H_LAYOUT)).ok_or_else(|| corrupt("layout"))?,
            policy: match r.load_u64(H_POLICY) {
                1 => Policy::Force,
                2 => Policy::NoForce,
                _ => return Err(corrupt("policy")),
            },
            layers: match r.load_u64(H_LAYERS) {
                1 => Layers::One,
                2 => Layers::Two,
                _ => return Err(corrupt("layer count")),
            },
            logs: match r.load_u64(H_NLOGS) {
                0 => LogMode::Shared,
                n => LogMode::PerThread(n as usize),
            },
            bucket_records: r.load_u64(H_BUCKET) as usize,
            log_capacity: r.load_u64(H_CAPACITY) as usize,
            batch_group: r.load_u64(H_GROUP) as usize,
            checkpoint_fraction: f64::from_bits(r.load_u64(H_CKPT)),
        };
        cfg.validate()
            .map_err(|e| RewindError::Corrupt(format!("pool header: {e}")))?;
        if cfg.min_region_size() > r.len() {
            return Err(RewindError::Corrupt(format!(
                "pool header describes logs and a heap of {} bytes, but the region has {}",
                cfg.min_region_size(),
                r.len()
            )));
        }
        let inner = build(region, cfg)?;
        let report = recovery::recover(&inner)?;
        Ok((
            Pool {
                inner: Arc::new(inner),
            },
            report,
        ))
    }

    /// Create a pool file of `size` usable bytes (a braid-pmem region file).
    pub fn create(
        path: &Path,
        size: usize,
        cfg: PoolConfig,
        pmem: PmemConfig,
    ) -> Result<Pool, RewindError> {
        let r = Region::create(path, size, pmem)?;
        Pool::create_in(r, cfg)
    }

    /// Open (and recover) a pool file.
    pub fn open(path: &Path, pmem: PmemConfig) -> Result<(Pool, RecoveryReport), RewindError> {
        let r = Region::open(path, None, pmem)?;
        Pool::open_in(r)
    }

    /// Run `f` as one transaction. `Ok` commits (durable when this returns); `Err` rolls
    /// back and returns the error; a panic rolls back and continues unwinding.
    pub fn transaction<R, E, F>(&self, f: F) -> Result<R, E>
    where
        F: FnOnce(&mut Tx<'_>) -> Result<R, E>,
        E: From<RewindError>,
    {
        let inner = &*self.inner;
        let log = &inner.logs[thread_no() % inner.logs.len()];
        let mut tx = Tx::new(inner, log);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut tx))) {
            Ok(Ok(v)) => match tx.commit() {
                Ok(()) => Ok(v),
                Err((tx, e)) => {
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
    /// transactions): the pool must not be used again after this except to drop it and
    /// reopen its region with [`Pool::open_in`], whose recovery undoes the transaction.
    pub fn abandon_transaction<R, F>(&self, f: F) -> Result<R, RewindError>
    where
        F: FnOnce(&mut Tx<'_>) -> Result<R, RewindError>,
    {
        let inner = &*self.inner;
        let log = &inner.logs[thread_no() % inner.logs.len()];
        let mut tx = Tx::new(inner, log);
        let v = f(&mut tx)?;
        tx.abandon();
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
    pub fn check_allocator(&self) -> Result<(), String> {
        self.inner.alloc.check_free_lists()
    }

    /// Check the AVL indexes of two-layer logs (tests); returns the records they hold.
    pub fn check_logs(&self) -> Result<usize, String> {
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

/// See [`Pool::checkpoint`].
pub(crate) fn checkpoint(inner: &Inner) -> Result<usize, RewindError> {
    let _g = inner.ckpt.lock().unwrap_or_else(|e| e.into_inner());
    let cut = {
        let _w = inner.cut.write().unwrap_or_else(|e| e.into_inner());
        inner.commit_seq.load(Ordering::SeqCst)
    };
    struct Done {
        seq: u64,
        log: usize,
        aborted: bool,
        recs: Vec<(RecRef, Rec)>,
        end: RecRef,
    }
    let mut done: Vec<Done> = Vec::new();
    for (li, log) in inner.logs.iter().enumerate() {
        let mut by_tx: std::collections::HashMap<u64, Vec<(RecRef, Rec)>> =
            std::collections::HashMap::new();
        let mut ends = Vec::new();
        for (at, rec) in log.scan()? {
            if rec.kind == Kind::End {
                if rec.addr <= cut {
                    ends.push((at, rec));
                }
            } else {
                by_tx.entry(rec.txid).or_default().push((at, rec));
            }
        }
        for (at, e) in ends {
            done.push(Done {
                seq: e.addr,
                log: li,
                aborted: e.old != 0,
                recs: by_tx.remove(&e.txid).unwrap_or_default(),
                end: at,
            });
        }
    }
    if done.is_empty() {
        return Ok(0);
    }
    done.sort_by_key(|d| d.seq);
    let r = &inner.r;
    let mut lines: Vec<usize> = done
        .iter()
        .flat_map(|d| d.recs.iter())
        .filter(|(_, rec)| matches!(rec.kind, Kind::Update | Kind::Clr))
        .map(|(_, rec)| rec.addr as usize & !63)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    for l in lines {
        r.flush(l, 8);
    }
    r.fence();
    let mut freed = Vec::new();
    for d in done.iter().filter(|d| !d.aborted) {
        for (_, rec) in d.recs.iter().filter(|(_, x)| x.kind == Kind::Delete) {
            inner.alloc.mark_free(rec.addr as usize);
            freed.push(rec.addr as usize);
        }
    }
    r.fence();
    for d in &done {
        let refs: Vec<RecRef> = d.recs.iter().map(|(a, _)| *a).collect();
        inner.logs[d.log].clear(&refs, Some(d.end))?;
    }
    for b in freed {
        inner.alloc.release(b);
    }
    inner.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(done.len())
}
