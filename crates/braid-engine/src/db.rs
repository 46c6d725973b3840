//! `Db`: open (create or recover) a database, hand out workers, and report on it.
//!
//! A database directory holds `braid.json` (format version, scheme, logging kind, stream count,
//! device kind and the catalog), the log (`log/` segment files, or `pmem/stream-NNN.region`
//! persistent rings with `destage/` segment files), and nothing else. Two schemes place their
//! log differently: `pertxn` keeps its log index and object slots in one persistent region,
//! `pmem/pertxn.region` (sized by the pmem ring size; it needs `DeviceConfig::Pmem`), and its
//! backup segment files in `pertxn-backup/`; `nvdisk` always logs to a file device in a
//! `/dev/shm` directory, whatever device was asked for: `log/` inside the database directory if
//! that lies in `/dev/shm`, else `/dev/shm/braid-nvdisk/<the database path, '/' as '_'>/log`. Reopening with another
//! scheme, stream count, device kind or schema is refused with a message that says what to do.
//!
//! The initial image of the tables comes from a loader the application passes to [`Db::open`]:
//! it runs on creation and again on every recovery that finds no checkpoint, before the log is
//! replayed on top of it, so it must be deterministic (the workloads seed their generators);
//! this is how bulk loads stay out of the log. Once a checkpoint exists (`checkpoints/`, see
//! [`crate::checkpoint`]), recovery loads the newest valid one instead and replays only what
//! its cut does not cover.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use braid_pmem::{Domain, Media, PmemConfig};
use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::device::null::NullDevice;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig, PmemWrite};
use braid_wal::scan::ScanMode;
use braid_wal::scheme::{
    self, LogKind, LogPlace, RecoveryPlan, RecoveryReport, RegionStorage, Scheme, SchemeConfig,
    SchemeSpec, SchemeWorker, Storage,
};
use serde::{Deserialize, Serialize};

use crate::checkpoint::epoch::Epochs;
use crate::checkpoint::{
    CheckpointLoad, CheckpointOptions, CheckpointReport, CheckpointStats, Checkpoints,
};
use crate::env::Env;
use crate::error::{EngineError, TxError};
use crate::procedure::Procedures;
use crate::recovery::Replayer;
use crate::row::{Row, RowState};
use crate::schema::{Catalog, TableId};
use crate::table::Table;
use crate::txn::{Mode, Txn, TxnState};

/// Concurrency control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cc {
    /// Two-phase locking, NO_WAIT.
    TwoPl,
    /// Optimistic (Silo-style).
    Occ,
    /// Multi-version, optimistic (Hekaton's, serializable): reads see the snapshot of the
    /// transaction's begin and take no locks; commit validates the versions read.
    Mvcc,
}

impl Cc {
    /// The name [`Cc`]'s `FromStr` accepts: `2pl`, `occ` or `mvcc`.
    pub fn name(self) -> &'static str {
        match self {
            Cc::TwoPl => "2pl",
            Cc::Occ => "occ",
            Cc::Mvcc => "mvcc",
        }
    }
}

impl std::str::FromStr for Cc {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "2pl" | "twopl" => Ok(Cc::TwoPl),
            "occ" => Ok(Cc::Occ),
            "mvcc" => Ok(Cc::Mvcc),
            _ => Err(format!(
                "unknown concurrency control {s:?}; use 2pl, occ or mvcc"
            )),
        }
    }
}

/// File log device options.
#[derive(Debug, Clone)]
pub struct FileOptions {
    /// Bytes of records per segment file (a multiple of 4096). Default 64 MiB.
    pub segment_size: u64,
    /// Bytes of the DRAM ring per stream that workers fill and the flusher writes out.
    /// Default 16 MiB.
    pub buffer_size: usize,
    /// Write segments with O_DIRECT; opening fails on a file system that refuses it (tmpfs).
    /// Default off.
    pub direct: bool,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            segment_size: 64 << 20,
            buffer_size: 16 << 20,
            direct: false,
        }
    }
}

/// Persistent-memory log device options.
#[derive(Debug, Clone)]
pub struct PmemOptions {
    /// Bytes of log ring per stream.
    pub ring_size: usize,
    /// How the region files reach power-safe media: [`Media::Auto`] (the default) maps them
    /// with `MAP_SYNC` on DAX persistent memory and otherwise writes every flushed range back
    /// with msync, so an acknowledged commit survives a power cut either way;
    /// [`Media::Emulated`] only flushes caches, which is an emulation of persistent memory
    /// (files under /dev/shm in the benchmarks) and not power-safe.
    pub media: Media,
    /// Whether the CPU caches are volatile (ADR: flush before a fence) or durable (eADR).
    pub domain: Domain,
    /// Emulated extra NVM latency per persisted cache line.
    pub write_delay_ns: u64,
    /// How records are written into the ring: streaming stores, or stores and flushes.
    pub write: PmemWrite,
    /// De-stage full ring space to segment files.
    pub destage: bool,
    /// Bytes per de-staged segment file (a multiple of 4096; reopening needs the same value).
    pub destage_segment_size: u64,
}

impl Default for PmemOptions {
    fn default() -> Self {
        PmemOptions {
            ring_size: 64 << 20,
            media: Media::Auto,
            domain: Domain::Adr,
            write_delay_ns: 0,
            write: PmemWrite::NonTemporal,
            destage: true,
            destage_segment_size: 64 << 20,
        }
    }
}

impl PmemOptions {
    /// The configuration of the regions these options describe.
    pub fn region_config(&self) -> PmemConfig {
        PmemConfig {
            domain: self.domain,
            flush: None,
            write_delay_ns: self.write_delay_ns,
            media: self.media,
        }
    }
}

/// Where the log goes.
#[derive(Debug, Clone)]
pub enum DeviceConfig {
    /// No device: records are discarded and count as durable at once, so nothing survives a
    /// crash. For the `none` baseline; schemes that log to devices refuse it.
    Null,
    /// Segment files under `log/` in the database directory, written back with fdatasync.
    File(FileOptions),
    /// Rings in persistent-memory region files under `pmem/`.
    Pmem(PmemOptions),
}

impl DeviceConfig {
    /// The device kind as `braid.json` records it: `null`, `file` or `pmem`.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceConfig::Null => "null",
            DeviceConfig::File(_) => "file",
            DeviceConfig::Pmem(_) => "pmem",
        }
    }
}

/// When a commit returns.
///
/// Either way a transaction counts as committed only once durable; the modes differ in who
/// waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Commit returns once the transaction is durable (its ticket is already resolved). The
    /// default: `commit()?` returning means the transaction survives a crash. If the log
    /// fails meanwhile, commit returns that error: the transaction was installed in memory
    /// (its locks went early) but is not acknowledged, and recovery may not have it.
    #[default]
    Sync,
    /// Pipelined commits: commit returns as soon as the transaction's record is in the log
    /// buffer, with a [`Ticket`](braid_wal::scheme::Ticket) that resolves when it is durable.
    /// Until the ticket resolves the transaction is not acknowledged and a crash may lose it;
    /// this is how the benchmarks keep many commits in flight per worker.
    Async,
}

/// How to open a database.
///
/// The defaults are durable on the machine they run on: the `serial` scheme logging data to
/// segment files in the database directory with group fdatasync, and [`Durability::Sync`]
/// commits. Choose a scheme by name (`"taurus".parse()?`, with options as
/// `"gsn:partition=page"`) or from its typed configuration
/// (`braid_engine::TaurusConfig::default().into()`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The logging scheme and its own options.
    pub scheme: SchemeSpec,
    /// Data (after-images) or command (stored-procedure calls) logging.
    pub logging: LogKind,
    /// Concurrency control.
    pub cc: Cc,
    /// When `commit` returns.
    pub durability: Durability,
    /// Where the log goes (for schemes that log to devices).
    pub device: DeviceConfig,
    /// Log streams asked for (the scheme may use fewer: serial uses one).
    pub streams: usize,
    /// Group commit: the longest a flusher waits for more log.
    pub group_delay: Duration,
    /// Group commit: flush once this many bytes are pending.
    pub group_bytes: usize,
    /// Most worker handles alive at once.
    pub max_workers: usize,
    /// Threads recovery may use.
    pub recovery_threads: usize,
    /// Mid-log corruption is an error ([`ScanMode::Strict`], the default) or the valid prefix
    /// is kept ([`ScanMode::Salvage`]).
    pub scan_mode: ScanMode,
    /// Where files and persistent memory come from (the real machine, or simulations).
    pub env: Env,
    /// Stored in `braid.json` on creation (see [`Meta::app`]).
    pub app: serde_json::Value,
    /// Automatic checkpoints (off by default) and checkpoint loading.
    pub checkpoint: CheckpointOptions,
    /// How a scheme with a parallel recovery planner replays (taurus): parallel, the serial
    /// fallback, or chosen from the log (auto).
    pub recovery_plan: RecoveryPlan,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scheme: SchemeSpec::new(braid_wal::scheme::serial::SerialConfig),
            logging: LogKind::Data,
            cc: Cc::TwoPl,
            durability: Durability::Sync,
            device: DeviceConfig::File(FileOptions::default()),
            streams: 1,
            group_delay: Duration::ZERO,
            group_bytes: 1 << 20,
            max_workers: 64,
            recovery_threads: 1,
            scan_mode: ScanMode::Strict,
            env: Env::default(),
            app: serde_json::Value::Null,
            checkpoint: CheckpointOptions::default(),
            recovery_plan: RecoveryPlan::Auto,
        }
    }
}

impl Options {
    /// Whether a database can be opened with these options at all (the scheme's needs against
    /// the device, the logging kind and the concurrency control), with a message saying what
    /// to change if not. [`Db::open`] checks this first; tools call it before starting work.
    pub fn check(&self) -> Result<(), EngineError> {
        let name = self.scheme.name();
        match self.scheme.log_place() {
            LogPlace::Region if !matches!(self.device, DeviceConfig::Pmem(_)) => {
                return Err(EngineError::Config(format!(
                    "scheme {name} keeps its log in persistent memory; use the pmem device"
                )));
            }
            LogPlace::Devices if matches!(self.device, DeviceConfig::Null) => {
                return Err(EngineError::Config(format!(
                    "scheme {name} needs a log device (pmem or file); only scheme none runs \
                     without one"
                )));
            }
            _ => {}
        }
        if self.logging == LogKind::Command
            && let Some(why) = self.scheme.command_logging_refusal()
        {
            return Err(EngineError::Config(why.to_string()));
        }
        if self.cc == Cc::Mvcc
            && let Some(why) = self.scheme.mvcc_refusal()
        {
            return Err(EngineError::Config(why.to_string()));
        }
        Ok(())
    }
}

const META_FILE: &str = "braid.json";
const META_FORMAT: u32 = 1;

/// What `braid.json` records about a database.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    /// Format version of the database directory.
    pub format: u32,
    /// Name of the logging scheme.
    pub scheme: String,
    /// Log streams the scheme uses (which may be fewer than [`Options::streams`] asked for).
    pub streams: usize,
    /// Device kind ([`DeviceConfig::kind`]).
    pub device: String,
    /// Logging kind the database was created with (records carry their own kind; informative).
    pub logging: String,
    /// Pmem ring bytes per stream, for pmem devices.
    #[serde(default)]
    pub ring_size: Option<usize>,
    /// Segment bytes, for file devices.
    #[serde(default)]
    pub segment_size: Option<u64>,
    /// The tables; reopening with another catalog is refused.
    pub catalog: Catalog,
    /// Whether the database is multi-versioned (its records carry commit timestamps).
    #[serde(default)]
    pub mvcc: bool,
    /// Whatever the application wants to find again on reopen (the workload and its
    /// parameters, for the `braid` command).
    #[serde(default)]
    pub app: serde_json::Value,
}

impl Meta {
    /// Read `braid.json` of the database in `dir`.
    pub fn read(dir: &Path, env: &Env) -> Result<Meta, EngineError> {
        let bytes =
            env.read_file(&dir.join(META_FILE))?
                .ok_or_else(|| EngineError::NotADatabase {
                    path: dir.to_path_buf(),
                })?;
        serde_json::from_slice(&bytes).map_err(|e| EngineError::BadMeta {
            path: dir.to_path_buf(),
            why: e.to_string(),
        })
    }
}

/// Bulk loading of the initial image (not logged; see the module doc).
pub struct Loader<'a> {
    db: &'a DbInner,
    rows: AtomicU64,
}

impl Loader<'_> {
    /// Insert (or replace) a row of the initial image.
    pub fn insert(&self, table: TableId, key: u64, image: &[u8]) -> Result<(), EngineError> {
        let t = self
            .db
            .tables
            .get(table.0 as usize)
            .ok_or_else(|| EngineError::Load(format!("no table {}", table.0)))?;
        if image.len() != t.schema.row_len() {
            return Err(EngineError::Load(format!(
                "table {}: row of {} bytes, the schema says {}",
                t.name(),
                image.len(),
                t.schema.row_len()
            )));
        }
        t.upsert(key, Arc::new(Row::new(image.into(), RowState::Live)));
        self.rows.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The id of the table called `name`.
    pub fn table(&self, name: &str) -> Option<TableId> {
        self.db.table_id(name)
    }

    /// The layout of `table`'s rows. Panics if there is no such table.
    pub fn schema(&self, table: TableId) -> &crate::schema::Schema {
        &self.db.tables[table.0 as usize].schema
    }
}

pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) tables: Vec<Table>,
    pub(crate) cc: Cc,
    pub(crate) durability: Durability,
    pub(crate) logging: LogKind,
    pub(crate) procs: Procedures,
    pub(crate) scheme: Arc<dyn Scheme>,
    pub(crate) opts: Options,
    next_txn: AtomicU64,
    next_worker: AtomicUsize,
    pub(crate) epochs: Epochs,
    pub(crate) ckpt: Checkpoints,
    /// MVCC timestamps (unused otherwise).
    pub(crate) mv: crate::mvcc::Clock,
}

impl DbInner {
    /// Every transaction id handed out so far is below this.
    pub(crate) fn next_txn_hint(&self) -> u64 {
        self.next_txn.load(Ordering::Relaxed)
    }

    pub(crate) fn table_id(&self, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .position(|t| t.name() == name)
            .map(|i| TableId(i as u32))
    }
}

/// What opening a database did.
#[derive(Debug, Clone, Default)]
pub struct OpenReport {
    /// Whether the database was created (else it was recovered).
    pub created: bool,
    /// Rows of the initial image: inserted by the loader, or read from a checkpoint.
    pub rows_loaded: u64,
    /// Seconds spent building the initial image (loader or checkpoint).
    pub load_seconds: f64,
    /// The checkpoint recovery started from, if any (then `rows_loaded` counts its rows and the
    /// loader did not run).
    pub checkpoint: Option<CheckpointLoad>,
    /// What replaying the log found and did (all zero on creation).
    pub recovery: RecoveryReport,
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
    /// Open the database in `dir`, creating it if the directory is empty or absent, recovering
    /// it from its log otherwise. `loader` builds the initial image (see the module doc).
    pub fn open(
        dir: &Path,
        opts: Options,
        catalog: Catalog,
        procs: Procedures,
        loader: &dyn Fn(&Loader<'_>) -> Result<(), EngineError>,
    ) -> Result<(Db, OpenReport), EngineError> {
        Db::open_with_progress(dir, opts, catalog, procs, loader, &|_| {})
    }

    /// [`Db::open`] with a callback told how many log bytes recovery has read so far.
    pub fn open_with_progress(
        dir: &Path,
        mut opts: Options,
        catalog: Catalog,
        procs: Procedures,
        loader: &dyn Fn(&Loader<'_>) -> Result<(), EngineError>,
        progress: &dyn Fn(u64),
    ) -> Result<(Db, OpenReport), EngineError> {
        catalog.validate()?;
        opts.check()?;
        let name = opts.scheme.name();
        match opts.scheme.log_place() {
            LogPlace::Nowhere => opts.device = DeviceConfig::Null,
            // NV-Disk is a file-system log on NVRAM: always a file device in /dev/shm.
            LogPlace::NvramFiles if !matches!(opts.device, DeviceConfig::File(_)) => {
                opts.device = DeviceConfig::File(FileOptions::default());
            }
            _ => {}
        }
        let streams = opts.scheme.streams_for(opts.streams);
        let env = opts.env.clone();
        let meta_path = dir.join(META_FILE);
        let meta = Meta {
            format: META_FORMAT,
            scheme: name.to_string(),
            streams,
            device: opts.device.kind().to_string(),
            logging: opts.logging.name().to_string(),
            ring_size: match &opts.device {
                DeviceConfig::Pmem(p) => Some(p.ring_size),
                _ => None,
            },
            segment_size: match &opts.device {
                DeviceConfig::File(f) => Some(f.segment_size),
                _ => None,
            },
            catalog: catalog.clone(),
            mvcc: opts.cc == Cc::Mvcc,
            app: opts.app.clone(),
        };
        let created = match env.read_file(&meta_path)? {
            Some(bytes) => {
                let found: Meta =
                    serde_json::from_slice(&bytes).map_err(|e| EngineError::BadMeta {
                        path: dir.to_path_buf(),
                        why: e.to_string(),
                    })?;
                check_meta(dir, &found, &meta)?;
                false
            }
            None => {
                if env.fs.exists(dir) {
                    let entries = env.fs.list_dir(dir).map_err(|e| EngineError::Io {
                        path: dir.to_path_buf(),
                        source: e,
                    })?;
                    if !entries.is_empty() {
                        return Err(EngineError::NotADatabase {
                            path: dir.to_path_buf(),
                        });
                    }
                }
                let bytes = serde_json::to_vec_pretty(&meta)
                    .map_err(|e| EngineError::Config(e.to_string()))?;
                env.write_file_atomic(&meta_path, &bytes)?;
                true
            }
        };

        let storage = make_storage(dir, &opts, streams)?;
        let tables: Vec<Table> = catalog
            .tables
            .iter()
            .enumerate()
            .map(|(i, d)| Table::new(i as u32, d.clone()))
            .collect();
        // The scheme is opened after the initial image is built; a placeholder fills the slot.
        let mut inner = DbInner {
            dir: dir.to_path_buf(),
            tables,
            cc: opts.cc,
            durability: opts.durability,
            logging: opts.logging,
            procs,
            scheme: Arc::new(scheme::none::NoLogging),
            opts: opts.clone(),
            next_txn: AtomicU64::new(1),
            next_worker: AtomicUsize::new(0),
            epochs: Epochs::new(opts.max_workers.max(1), 0),
            ckpt: Checkpoints::new(),
            mv: crate::mvcc::Clock::new(opts.max_workers.max(1), 0),
        };
        let load_start = Instant::now();
        // The newest valid checkpoint, else the loader (see the module doc).
        let mut checkpoint = None;
        let mut cut = None;
        let mut next_txn = 1;
        if !created && opts.scheme.log_place() != LogPlace::Nowhere {
            let widths: Vec<usize> = inner.tables.iter().map(|t| t.schema.row_len()).collect();
            let (found, path, fallbacks, count) = crate::checkpoint::find(&env, dir, &widths)?;
            match found {
                Some(l) => {
                    let threads = match opts.checkpoint.load_threads {
                        0 => std::thread::available_parallelism()
                            .map_or(1, |n| n.get())
                            .min(8),
                        n => n,
                    };
                    let threads =
                        crate::checkpoint::load_rows(&inner.tables, &l, threads, progress);
                    inner.epochs = Epochs::new(opts.max_workers.max(1), l.meta.epoch);
                    next_txn = l.meta.next_txn;
                    checkpoint = Some(CheckpointLoad {
                        path,
                        epoch: l.meta.epoch,
                        rows: l.rows,
                        bytes: l.bytes.len() as u64,
                        seconds: load_start.elapsed().as_secs_f64(),
                        threads,
                        fallbacks,
                    });
                    cut = Some(l.meta.cut);
                }
                None if count >= crate::checkpoint::KEEP => {
                    return Err(EngineError::Checkpoint(format!(
                        "every checkpoint in {} is damaged and the log before them was \
                         truncated, so nothing can be recovered safely: {}",
                        dir.join(crate::checkpoint::DIR).display(),
                        fallbacks.join("; ")
                    )));
                }
                None => {
                    // At most one checkpoint ever existed, so the log was never truncated:
                    // recover from the loader and the whole log.
                    checkpoint = (!fallbacks.is_empty()).then(|| CheckpointLoad {
                        path: PathBuf::new(),
                        epoch: 0,
                        rows: 0,
                        bytes: 0,
                        seconds: 0.0,
                        threads: 0,
                        fallbacks,
                    });
                }
            }
        }
        let rows_loaded = match &checkpoint {
            Some(c) if c.epoch > 0 => c.rows,
            _ => {
                let l = Loader {
                    db: &inner,
                    rows: AtomicU64::new(0),
                };
                loader(&l)?;
                l.rows.load(Ordering::Relaxed)
            }
        };
        let load_seconds = load_start.elapsed().as_secs_f64();
        let scfg = SchemeConfig {
            logging: opts.logging,
            max_workers: opts.max_workers,
            group_delay: opts.group_delay,
            group_bytes: opts.group_bytes,
            scan_mode: opts.scan_mode,
            recovery_threads: opts.recovery_threads.max(1),
            recovery_plan: opts.recovery_plan,
            mvcc: opts.cc == Cc::Mvcc,
            cut,
        };
        let (scheme, recovery) = {
            let replayer = Replayer::new(&inner);
            let r = scheme::open(&opts.scheme, &scfg, storage, &replayer, progress)?;
            // MVCC: versions collapse; the clock goes on past every replayed timestamp and
            // past the wall clock in microseconds, so that later commits stamp above what an
            // earlier run logged even where a checkpoint hides it from this recovery.
            let max_ts = replayer.finish();
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64);
            inner.mv.advance(max_ts.max(wall));
            r
        };
        inner.scheme = scheme;
        inner.next_txn = AtomicU64::new((recovery.max_txn + 1).max(next_txn));
        let report = OpenReport {
            created,
            rows_loaded,
            load_seconds,
            checkpoint,
            recovery,
        };
        let inner = Arc::new(inner);
        crate::checkpoint::spawn_trigger(&inner)?;
        Ok((Db { inner }, report))
    }

    /// A worker: one per thread that runs transactions.
    pub fn worker(&self) -> Result<Worker, EngineError> {
        let id = self.inner.next_worker.fetch_add(1, Ordering::Relaxed);
        let scheme = self.inner.scheme.worker(id)?;
        let slot = self.inner.epochs.claim().ok_or_else(|| {
            EngineError::Config(format!(
                "more than {} workers at once; open the database with a larger max_workers",
                self.inner.opts.max_workers
            ))
        })?;
        self.inner.mv.claim(slot);
        Ok(Worker {
            db: self.clone(),
            id,
            scheme,
            st: TxnState::default(),
            ids: 0..0,
            slot,
        })
    }

    /// Take a checkpoint now (in the calling thread; transactions go on meanwhile), then
    /// truncate the log it makes unnecessary. See [`crate::checkpoint`].
    pub fn checkpoint(&self) -> Result<CheckpointReport, EngineError> {
        crate::checkpoint::take(&self.inner)
    }

    /// Checkpoints taken (and failed) through this handle.
    pub fn checkpoint_stats(&self) -> CheckpointStats {
        self.inner.ckpt.stats.lock().clone()
    }

    /// Log bytes the scheme's devices hold now.
    pub fn log_bytes(&self) -> u64 {
        self.inner.scheme.log_bytes()
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
        let row = self.inner.tables.get(table.0 as usize)?.get(key)?;
        if row.state() != RowState::Live {
            return None;
        }
        Some(row.read(|b| b.to_vec()).0)
    }

    /// Visit every live row of a table (any order), non-transactionally.
    pub fn for_each_row(&self, table: TableId, mut f: impl FnMut(u64, &[u8])) {
        self.inner.tables[table.0 as usize].for_each(|k, r| {
            if r.state() == RowState::Live {
                r.read(|b| f(k, b));
            }
        });
    }

    /// Visit live rows with keys in `[lo, hi]` of an ordered table in key order,
    /// non-transactionally.
    pub fn range_rows(&self, table: TableId, lo: u64, hi: u64, mut f: impl FnMut(u64, &[u8])) {
        use std::ops::Bound::Included;
        self.inner.tables[table.0 as usize].range(Included(lo), Included(hi), |k, r| {
            if r.state() == RowState::Live {
                r.read(|b| f(k, b));
            }
            true
        });
    }

    /// The name of the database's logging scheme.
    pub fn scheme(&self) -> &'static str {
        self.inner.scheme.name()
    }

    /// The options the database was opened with (the device as the scheme needs it).
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Bytes, records and flushes the log streams have seen since opening.
    pub fn log_stats(&self) -> braid_wal::stream::StreamStats {
        let mut s = braid_wal::stream::StreamStats::default();
        for st in self.inner.scheme.streams() {
            let x = st.stats();
            s.bytes += x.bytes;
            s.records += x.records;
            s.flushes += x.flushes;
        }
        s
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

    /// The scheme's event counters since the database was opened ([`Scheme::counters`]; gsn:
    /// commits, straggler signals, daemon rounds, clock records).
    pub fn scheme_counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.scheme.counters()
    }

    /// Flush the log and stop its background threads.
    pub fn close(&self) -> Result<(), EngineError> {
        self.inner.ckpt.stop();
        self.inner.scheme.close()?;
        Ok(())
    }
}

fn check_meta(dir: &Path, found: &Meta, want: &Meta) -> Result<(), EngineError> {
    let d = dir.display();
    if found.format != META_FORMAT {
        return Err(EngineError::Mismatch(format!(
            "{d} was written by braid format {}, this braid reads format {META_FORMAT}",
            found.format
        )));
    }
    if found.scheme != want.scheme {
        return Err(EngineError::Mismatch(format!(
            "{d} was created with scheme {}; reopen it with --scheme {}, or use a new directory for scheme {}",
            found.scheme, found.scheme, want.scheme
        )));
    }
    if found.streams != want.streams {
        return Err(EngineError::Mismatch(format!(
            "{d} was created with {} log streams; reopen it with --logs {}, or use a new directory",
            found.streams, found.streams
        )));
    }
    if found.device != want.device {
        return Err(EngineError::Mismatch(format!(
            "{d} keeps its log on a {} device; reopen it with --device {}, or use a new directory",
            found.device, found.device
        )));
    }
    if found.mvcc != want.mvcc {
        let (was, other) = if found.mvcc {
            ("--cc mvcc", "2pl or occ")
        } else {
            ("--cc 2pl or --cc occ", "mvcc")
        };
        return Err(EngineError::Mismatch(format!(
            "{d} was created {} multi-versioning (its log records {} commit timestamps); \
             reopen it with {was}, or use a new directory for {other}",
            if found.mvcc { "with" } else { "without" },
            if found.mvcc { "carry" } else { "lack" },
        )));
    }
    if found.ring_size.is_some() && want.ring_size.is_some() && found.ring_size != want.ring_size {
        return Err(EngineError::Mismatch(format!(
            "{d} has pmem log rings of {} bytes; reopen it with that ring size, or use a new directory",
            found.ring_size.unwrap_or_default()
        )));
    }
    if found.catalog != want.catalog {
        let mut why = String::from("the tables differ");
        for (i, (a, b)) in found
            .catalog
            .tables
            .iter()
            .zip(&want.catalog.tables)
            .enumerate()
        {
            if a != b {
                why = format!(
                    "table {i} is {} in the database but {} was asked for",
                    a.name, b.name
                );
                if a.name == b.name {
                    why = format!("table {} has other columns or index than asked for", a.name);
                }
                break;
            }
        }
        if found.catalog.tables.len() != want.catalog.tables.len() {
            why = format!(
                "the database has {} tables, {} were asked for",
                found.catalog.tables.len(),
                want.catalog.tables.len()
            );
        }
        return Err(EngineError::Mismatch(format!(
            "schema mismatch in {d}: {why}; open it with the workload and options that created it"
        )));
    }
    Ok(())
}

/// The log directory of an `nvdisk` database (see the module doc).
pub fn nvdisk_log_dir(dir: &Path) -> PathBuf {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if abs.starts_with("/dev/shm") {
        return abs.join("log");
    }
    let flat: String = abs
        .to_string_lossy()
        .trim_start_matches('/')
        .replace('/', "_");
    PathBuf::from("/dev/shm/braid-nvdisk")
        .join(flat)
        .join("log")
}

/// Where the scheme keeps its log (see the module doc).
fn make_storage(dir: &Path, opts: &Options, streams: usize) -> Result<Storage, EngineError> {
    match opts.scheme.log_place() {
        LogPlace::Nowhere => Ok(Storage::Nothing),
        LogPlace::Devices | LogPlace::NvramFiles => {
            Ok(Storage::Devices(make_devices(dir, opts, streams)?))
        }
        LogPlace::Region => {
            let DeviceConfig::Pmem(p) = &opts.device else {
                return Err(EngineError::Config(format!(
                    "scheme {} needs the pmem device",
                    opts.scheme.name()
                )));
            };
            let pcfg = p.region_config();
            let path = dir
                .join("pmem")
                .join(format!("{}.region", opts.scheme.name()));
            let region = opts.env.region(&path, p.ring_size, pcfg)?;
            Ok(Storage::Region(RegionStorage {
                region,
                fs: opts.env.fs.clone(),
                backup_dir: dir.join(format!("{}-backup", opts.scheme.name())),
                write: p.write,
            }))
        }
    }
}

fn make_devices(
    dir: &Path,
    opts: &Options,
    streams: usize,
) -> Result<Vec<Arc<dyn Device>>, EngineError> {
    let env = &opts.env;
    let mut out: Vec<Arc<dyn Device>> = Vec::with_capacity(streams);
    for i in 0..streams {
        let id = i as u32;
        match &opts.device {
            DeviceConfig::Null => out.push(Arc::new(NullDevice::new())),
            DeviceConfig::File(f) => {
                let log_dir = if opts.scheme.log_place() == LogPlace::NvramFiles {
                    nvdisk_log_dir(dir)
                } else {
                    dir.join("log")
                };
                let mut cfg = FileDeviceConfig::new(log_dir, id);
                cfg.segment_size = f.segment_size;
                cfg.buffer_size = f.buffer_size;
                cfg.direct = f.direct;
                out.push(Arc::new(FileDevice::open(env.fs.clone(), cfg)?));
            }
            DeviceConfig::Pmem(p) => {
                let pcfg = p.region_config();
                let path = dir.join("pmem").join(format!("stream-{i:03}.region"));
                let region = env.region(&path, p.ring_size + braid_pmem::HEADER_SIZE, pcfg)?;
                let destage = p.destage.then(|| {
                    let mut c = FileDeviceConfig::new(dir.join("destage"), id);
                    c.segment_size = p.destage_segment_size;
                    c
                });
                let cfg = PmemDeviceConfig {
                    stream: id,
                    write: p.write,
                    destage,
                };
                out.push(Arc::new(PmemDevice::open_with_fs(
                    region,
                    cfg,
                    env.fs.clone(),
                )?));
            }
        }
    }
    Ok(out)
}

/// A thread's handle for running transactions.
pub struct Worker {
    db: Db,
    id: usize,
    scheme: Box<dyn SchemeWorker>,
    st: TxnState,
    ids: std::ops::Range<u64>,
    /// Checkpoint-epoch slot.
    slot: usize,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // MVCC tombstones still waiting for old snapshots stay in the index (invisible) until
        // a later recovery; take out those that can go now.
        crate::txn::sweep(&self.db.inner, &mut self.st);
        self.db.inner.epochs.release(self.slot);
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).finish()
    }
}

/// Transaction ids are handed to workers in blocks, so id allocation is not a shared hot spot.
const ID_BLOCK: u64 = 1024;

impl Worker {
    /// This worker's number, unique among the workers of the database since it was opened.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The database this worker runs transactions on.
    pub fn db(&self) -> &Db {
        &self.db
    }

    fn next_id(&mut self) -> u64 {
        if self.ids.is_empty() {
            let start = self
                .db
                .inner
                .next_txn
                .fetch_add(ID_BLOCK, Ordering::Relaxed);
            self.ids = start..start + ID_BLOCK;
        }
        let id = self.ids.start;
        self.ids.start += 1;
        id
    }

    /// Begin an ad-hoc transaction (logged as data).
    pub fn begin(&mut self) -> Txn<'_> {
        let id = self.next_id();
        Txn::new(
            &self.db.inner,
            &mut *self.scheme,
            &mut self.st,
            id,
            Mode::Normal,
            self.slot,
        )
    }

    /// Run stored procedure `proc_id` with `params` as one transaction and commit it. With
    /// command logging the call itself is logged; otherwise its writes are.
    pub fn call(
        &mut self,
        proc_id: u32,
        params: &[u8],
    ) -> Result<braid_wal::scheme::Ticket, TxError> {
        self.call_hooked(proc_id, params, &mut |_| {})
    }

    /// [`Worker::call`], with `before_commit` told the transaction id once the procedure has run
    /// and just before the commit starts (crash tests record their intent there).
    #[doc(hidden)]
    pub fn call_hooked(
        &mut self,
        proc_id: u32,
        params: &[u8],
        before_commit: &mut dyn FnMut(u64),
    ) -> Result<braid_wal::scheme::Ticket, TxError> {
        let f = self
            .db
            .inner
            .procs
            .get(proc_id)
            .cloned()
            .ok_or(TxError::UnknownProcedure(proc_id))?;
        let mut tx = self.begin();
        tx.set_command(proc_id, params);
        match f(&mut tx, params) {
            Ok(()) => {
                before_commit(tx.id());
                tx.commit()
            }
            Err(e) => {
                tx.abort();
                Err(e)
            }
        }
    }
}
