//! `Db`: open (create or recover) a database, hand out workers, and report on it.
//!
//! A database directory holds `LOCK` (whose lock its one writer holds, see `lock`),
//! `braid.json` (format version, scheme, logging kind, stream count, device kind, the catalog,
//! and any directory outside that holds files of the database), the log (`log/` segment files,
//! or `pmem/stream-NNN.region` persistent rings with `destage/` segment files), checkpoints, and
//! nothing else. Two schemes place their log differently: `pertxn` keeps its log index and
//! object slots in one persistent region, `pmem/pertxn.region` (sized by the pmem ring size; it
//! needs `DeviceConfig::Pmem`), and its backup segment files in `pertxn-backup/`; `nvdisk`
//! always logs to a file device in a `/dev/shm` directory, whatever device was asked for: `log/`
//! inside the database directory if that lies in `/dev/shm`, else a directory of its own under
//! `/dev/shm/braid-nvdisk/`, named in `braid.json` ([`Meta::outside`]) and removed with the
//! database by [`Db::destroy`]. Reopening with another scheme, stream count, device kind or
//! schema is refused with a message that says what to do.
//!
//! The initial image of the tables comes from a loader the application gives [`Db::builder`]:
//! it runs on creation and again on every recovery that finds no checkpoint, before the log is
//! replayed on top of it, so it must be deterministic (the workloads seed their generators);
//! this is how bulk loads stay out of the log. Once a checkpoint exists (`checkpoints/`, see
//! [`crate::checkpoint`]), recovery loads the newest valid one instead and replays only what
//! its cut does not cover.
//!
//! The code is split by concern: `lock` (one writer per database), `options` (what a
//! database is opened with), `meta`
//! (`braid.json` and its checks on reopen), `storage` (the log's devices or region), `loader`
//! (the initial image), `builder` ([`Db::builder`]: what a database is opened with), `open`
//! (opening, step by step) and `worker` ([`Worker`]).

pub(crate) mod builder;
pub(crate) mod external;
pub(crate) mod loader;
mod lock;
pub(crate) mod meta;
pub(crate) mod open;
pub(crate) mod options;
pub(crate) mod standby;
mod storage;
pub(crate) mod worker;

use std::ops::RangeBounds;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use braid_wal::scheme::{LogKind, Records, Scheme};
use serde::Serialize;

pub(crate) use external::CheckpointStore;
pub(crate) use open::OpenReport;
pub(crate) use options::{Cc, DeviceConfig, Options};

use crate::checkpoint::epoch::Epochs;
use crate::checkpoint::{CheckpointReport, CheckpointStats, Checkpoints};
use crate::error::EngineError;
use crate::procedure::Procedures;
use crate::row::{Row, RowState};
use crate::schema::TableId;
use crate::table::Table;

pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) tables: Vec<Table>,
    pub(crate) cc: Cc,
    pub(crate) logging: LogKind,
    /// One record per transaction, or one per write as it happens.
    pub(crate) records: Records,
    /// The scheme lets a committing transaction's locks go before its commit is durable.
    pub(crate) elr: bool,
    /// The scheme keeps a log (every scheme but `none`): without one, a commit builds no redo
    /// payload and an update no per-update record, as nothing would read them.
    pub(crate) logs: bool,
    pub(crate) procs: Procedures,
    pub(crate) scheme: Arc<dyn Scheme>,
    pub(crate) opts: Options,
    /// Where the files and persistent memory come from ([`Options::env`] under the `testing`
    /// feature; a private copy for
    /// [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only)).
    pub(crate) env: crate::env::Env,
    next_txn: AtomicU64,
    next_worker: AtomicUsize,
    pub(crate) epochs: Epochs,
    pub(crate) ckpt: Checkpoints,
    /// MVCC timestamps (unused otherwise).
    pub(crate) mv: crate::mvcc::Clock,
    /// Log insertion timings of the workers that are gone (see [`DbStats::log_insert`]).
    pub(crate) inserts: InsertTotals,
    /// Opened with [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only):
    /// transactions that write are refused.
    pub(crate) read_only: bool,
    /// The database's lock (see [`lock`]), released when the database is dropped.
    _lock: braid_wal::fs::FsLock,
}

/// Sums of the workers' sampled log insertion timings, added when a worker is dropped.
#[derive(Debug, Default)]
pub(crate) struct InsertTotals {
    samples: AtomicU64,
    ns: AtomicU64,
    records: AtomicU64,
    record_ns: AtomicU64,
    lock_ns: AtomicU64,
    hook_ns: AtomicU64,
}

impl InsertTotals {
    /// Add a worker's timings: its timed commits, their insertion time and records, and their
    /// accesses' lock and hook times.
    pub(crate) fn add(&self, t: &crate::txn::InsertTiming) {
        self.samples.fetch_add(t.samples, Ordering::Relaxed);
        self.ns.fetch_add(t.ns, Ordering::Relaxed);
        self.records.fetch_add(t.records, Ordering::Relaxed);
        self.record_ns.fetch_add(t.record_ns, Ordering::Relaxed);
        self.lock_ns.fetch_add(t.lock_ns, Ordering::Relaxed);
        self.hook_ns.fetch_add(t.hook_ns, Ordering::Relaxed);
    }
}

/// Log insertion latency, sampled (one commit in 16): the time a timed transaction spends
/// putting its records into the log (the scheme's `commit` call, which returns a durability
/// ticket, and with per-update records each write's `log_update` call), not the wait until it
/// is durable. Kept per transaction (`ns` over `samples`) and per log insertion (`record_ns`
/// over `records`); NV-Logging (Huang et al., VLDB 2014) Fig. 11 plots the latter, "the average
/// latency of log insertion". The mean over an interval is the difference of the time over the
/// difference of the count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogInsertStats {
    /// Commits timed.
    pub samples: u64,
    /// Their total time, ns.
    pub ns: u64,
    /// Records the timed transactions inserted: each update record and each commit call that
    /// put a record into the log (a read-only transaction's commit puts none).
    pub records: u64,
    /// The time of those insertions, ns (`ns` less the commit calls that inserted nothing).
    pub record_ns: u64,
}

/// What the sampled commits of [`LogInsertStats`] spent on their accesses besides, ns: taking
/// and releasing their 2PL locks (the lock of each row read or written, its upgrade, and the
/// release at commit) and the scheme's access hooks (`on_read`/`on_write`: Taurus keeps its
/// rows' and the transaction's LSN vectors there). Taurus Fig. 15 splits a transaction's time
/// into such parts. The means per committed transaction are `lock_ns` and `hook_ns` over
/// [`LogInsertStats::samples`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessStats {
    /// Time in 2PL locks of the timed commits, ns.
    pub lock_ns: u64,
    /// Time in the scheme's access hooks of the timed commits, ns.
    pub hook_ns: u64,
}

impl DbInner {
    /// Every transaction id handed out so far is below this.
    pub(crate) fn next_txn_hint(&self) -> u64 {
        self.next_txn.load(Ordering::Relaxed)
    }

    /// The committed image of a row, non-transactionally.
    pub(crate) fn peek(&self, table: TableId, key: u64) -> Option<Vec<u8>> {
        let row = self.tables.get(table.0 as usize)?.get(key)?;
        if row.state() != RowState::Live {
            return None;
        }
        Some(row.read(|b| b.to_vec()).0)
    }

    pub(crate) fn table_id(&self, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .position(|t| t.name() == name)
            .map(|i| TableId(i as u32))
    }
}

/// An open database. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .field("scheme", &self.inner.scheme.name())
            .finish()
    }
}

/// What a database has done since it was opened ([`Db::stats`]).
#[derive(Debug, Clone)]
pub struct DbStats {
    /// Bytes, records and flushes the log streams have seen.
    pub log: braid_wal::scheme::StreamStats,
    /// Log bytes the scheme's devices hold now.
    pub log_bytes: u64,
    /// Sampled log insertion latency of the workers dropped so far (a live worker's timings
    /// count once it is dropped).
    pub log_insert: LogInsertStats,
    /// The same sampled commits' time in 2PL locks and in the scheme's access hooks.
    pub access: AccessStats,
    /// Checkpoints taken (and failed) through this handle.
    pub checkpoints: CheckpointStats,
    /// The scheme's event counters (`Scheme::counters`; gsn: commits, straggler signals,
    /// daemon rounds, clock records).
    pub scheme_counters: Vec<(&'static str, u64)>,
    /// The scheme's scalability proxies (commits, shared read-modify-writes and shared cache
    /// lines written by its workers); `None` for a scheme that does not count them.
    pub proxies: Option<braid_wal::scheme::Proxies>,
}

/// Memory used per row, measured from the live tables.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MemoryReport {
    /// Index entries over all tables (see [`Db::rows`]).
    pub rows: u64,
    /// Row image bytes per row (the schema's width), averaged over tables by row count.
    pub image_bytes_per_row: f64,
    /// Engine overhead per row: row header (lock, version, latch, pointers), allocation headers
    /// and the index entry.
    pub engine_bytes_per_row: f64,
    /// The logging scheme's ordering metadata kept outside the rows
    /// ([`Scheme::metadata_bytes`]: Taurus' row and range LV table, gsn's page clocks), per
    /// row.
    pub scheme_bytes_per_row: f64,
}

impl Db {
    /// Take a checkpoint now (in the calling thread; transactions go on meanwhile), then
    /// truncate the log it makes unnecessary. See [`CheckpointOptions`](crate::CheckpointOptions).
    pub fn checkpoint(&self) -> Result<CheckpointReport, EngineError> {
        if self.inner.read_only {
            return Err(EngineError::ReadOnly {
                dir: self.inner.dir.clone(),
                what: "a checkpoint",
            });
        }
        crate::checkpoint::take(&self.inner)
    }

    /// The id of the table called `name`.
    pub fn table(&self, name: &str) -> Option<TableId> {
        self.inner.table_id(name)
    }

    /// Table names in id order.
    pub fn table_names(&self) -> Vec<String> {
        self.inner
            .tables
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The layout of `table`'s rows. Panics if there is no such table.
    pub fn schema(&self, table: TableId) -> &crate::schema::Schema {
        &self.inner.tables[table.0 as usize].schema
    }

    /// Index entries of `table`: its rows, plus under MVCC the tombstones of deleted rows that
    /// some running snapshot may still need (they leave the index when none does).
    pub fn rows(&self, table: TableId) -> usize {
        self.inner.tables[table.0 as usize].len()
    }

    /// Non-transactional read of the committed image (for checks after recovery or a run).
    pub fn peek(&self, table: TableId, key: u64) -> Option<Vec<u8>> {
        self.inner.peek(table, key)
    }

    /// Visit the live rows of `table` whose keys are in `keys` (`..` for all), non-
    /// transactionally: in key order on an ordered table; in no particular order on a hash
    /// table, which visits every row to find them.
    pub fn for_each_row(
        &self,
        table: TableId,
        keys: impl RangeBounds<u64>,
        mut f: impl FnMut(u64, &[u8]),
    ) {
        let t = &self.inner.tables[table.0 as usize];
        let mut visit = |k: u64, r: &Row| {
            if r.state() == RowState::Live {
                r.read(|b| f(k, b));
            }
        };
        if t.schema.def.index == crate::schema::IndexKind::Ordered {
            t.range(
                keys.start_bound().cloned(),
                keys.end_bound().cloned(),
                |k, r| {
                    visit(k, r);
                    true
                },
            );
        } else {
            t.for_each(|k, r| {
                if keys.contains(&k) {
                    visit(k, r);
                }
            });
        }
    }

    /// The options the database was opened with (the device as the scheme needs it).
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// What the database has done since it was opened: its log, the log insertion timings,
    /// checkpoints and the scheme's own counters. Cheap enough to call before and after a
    /// measured interval.
    pub fn stats(&self) -> DbStats {
        let mut log = braid_wal::scheme::StreamStats::default();
        for st in self.inner.scheme.streams() {
            let x = st.stats();
            log.bytes += x.bytes;
            log.records += x.records;
            log.flushes += x.flushes;
        }
        DbStats {
            log,
            log_bytes: self.inner.scheme.log_bytes(),
            log_insert: LogInsertStats {
                samples: self.inner.inserts.samples.load(Ordering::Relaxed),
                ns: self.inner.inserts.ns.load(Ordering::Relaxed),
                records: self.inner.inserts.records.load(Ordering::Relaxed),
                record_ns: self.inner.inserts.record_ns.load(Ordering::Relaxed),
            },
            access: AccessStats {
                lock_ns: self.inner.inserts.lock_ns.load(Ordering::Relaxed),
                hook_ns: self.inner.inserts.hook_ns.load(Ordering::Relaxed),
            },
            checkpoints: self.inner.ckpt.stats.lock().clone(),
            scheme_counters: self.inner.scheme.counters(),
            proxies: self.inner.scheme.proxies(),
        }
    }

    /// Per-row memory, measured from the tables (see [`MemoryReport`]).
    pub fn memory_report(&self) -> MemoryReport {
        let mut rows = 0u64;
        let mut image = 0u64;
        for t in &self.inner.tables {
            let n = t.len() as u64;
            rows += n;
            image += n * t.schema.row_len() as u64;
        }
        // Row header + Arc counts + boxed image allocation header + index entry (key, Arc
        // pointer, and the index's own per-entry overhead, about one word).
        let engine = std::mem::size_of::<Row>() + 16 + 16 + 8 + 8 + 8;
        let per_row = |bytes: f64| if rows == 0 { 0.0 } else { bytes / rows as f64 };
        MemoryReport {
            rows,
            image_bytes_per_row: per_row(image as f64),
            engine_bytes_per_row: engine as f64,
            scheme_bytes_per_row: per_row(self.inner.scheme.metadata_bytes() as f64),
        }
    }

    /// `None` if every commit this database acknowledges survives a power cut on this
    /// machine; else what its log only emulates (persistent memory in RAM under `/dev/shm`,
    /// log files on tmpfs, no log at all). Benchmarks name it next to their figures.
    pub fn emulation(&self) -> Option<String> {
        self.inner.scheme.emulation()
    }

    /// Flush the log and stop its background threads.
    pub fn close(&self) -> Result<(), EngineError> {
        self.inner.ckpt.stop();
        self.inner.scheme.close()?;
        Ok(())
    }
}
