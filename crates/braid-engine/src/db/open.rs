//! [`OpenBuilder::open`](crate::OpenBuilder::open): create a database or recover it, in named
//! steps: check the options and `braid.json`, build the storage, the tables and the initial image
//! (checkpoint or loader), then open the scheme, which replays the log through the engine's
//! [`Replayer`].

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use braid_wal::Lsn;
use braid_wal::fs::FsLock;
use braid_wal::scheme::Cut;
use braid_wal::scheme::{self, LogPlace, RecoveryReport, SchemeConfig, Storage};

use super::builder::LoaderFn;
use super::loader::{self, Loader};
use super::meta::Meta;
use super::options::{Cc, DeviceConfig, Options};
use super::storage::{fit_device, make_storage, new_nvdisk_place};
use super::{Db, DbInner};
use crate::checkpoint::epoch::Epochs;
use crate::checkpoint::{CheckpointLoad, CheckpointOptions, Checkpoints};
use crate::env::Env;
use crate::error::EngineError;
use crate::procedure::Procedures;
use crate::recovery::Replayer;
use crate::schema::Catalog;
use crate::table::Table;

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

/// [`OpenBuilder::open`](crate::OpenBuilder::open).
pub(super) fn open_writer(
    dir: &Path,
    opts: Options,
    catalog: Catalog,
    procs: Procedures,
    loader: &LoaderFn<'_>,
    progress: &dyn Fn(u64),
) -> Result<(Db, OpenReport), EngineError> {
    let env = opts.env_in_use();
    open(
        dir,
        opts,
        Access::Writer(env),
        catalog,
        procs,
        loader,
        progress,
    )
}

/// [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only).
pub(super) fn open_read_only(
    dir: &Path,
    opts: Options,
    catalog: Catalog,
    procs: Procedures,
    loader: &LoaderFn<'_>,
) -> Result<(Db, OpenReport), EngineError> {
    if matches!(opts.device, DeviceConfig::External(_)) {
        return Err(EngineError::Unsupported(
            crate::Unsupported::ExternalReadOnly {
                dir: dir.to_path_buf(),
            },
        ));
    }
    let meta = Meta::read(dir)?;
    let mut roots = vec![dir.to_path_buf()];
    roots.extend(meta.outside.iter().cloned());
    const ATTEMPTS: usize = 5;
    let mut attempt = 1;
    loop {
        let mut o = opts.clone();
        let env = Env::snapshot(&roots)?;
        // A copy takes no checkpoints: it is read-only.
        o.checkpoint = CheckpointOptions {
            load_threads: opts.checkpoint.load_threads,
            ..CheckpointOptions::off()
        };
        match open(
            dir,
            o,
            Access::ReadOnly(env),
            catalog.clone(),
            procs.clone(),
            loader,
            &|_| {},
        ) {
            Ok(r) => return Ok(r),
            // A copy taken while its writer truncated or wrapped its log: read again.
            Err(
                EngineError::Wal(_)
                | EngineError::Pmem(_)
                | EngineError::Checkpoint(_)
                | EngineError::BadCheckpoint { .. },
            ) if attempt < ATTEMPTS && super::lock::holder(dir).is_some() => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

impl Db {
    /// The process that has the database in `dir` open for writing (holds its lock; see
    /// [`OpenBuilder::open`](crate::OpenBuilder::open)), if one does and the kernel says which.
    /// Reads only: takes no lock.
    pub fn writer_pid(dir: &Path) -> Option<u32> {
        super::lock::holder(dir)
    }

    /// Remove the database in `dir`: the directory and every place outside it that holds its
    /// files ([`Meta::outside`]: the `nvdisk` log in `/dev/shm`). Refused with
    /// [`EngineError::InUse`] while the database is open, and with
    /// [`EngineError::NotADatabase`] for a directory that holds files but no database. A
    /// directory that does not exist is already removed.
    pub fn destroy(dir: &Path) -> Result<(), EngineError> {
        let env = Env::default();
        if !dir.exists() {
            return Ok(());
        }
        let _lock = super::lock::claim(dir, &env)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EngineError::Io { path, source }
        };
        if dir.join(super::meta::META_FILE).exists() {
            for place in Meta::read_in(dir, &env)?.outside {
                // Only what braid itself places outside a database is removed.
                if place.starts_with(super::storage::NVDISK_ROOT) && place.exists() {
                    std::fs::remove_dir_all(&place).map_err(io(&place))?;
                    // The common parent goes with the last database in it (removing a
                    // directory that is not empty fails, and is meant to).
                    let _ = std::fs::remove_dir(super::storage::NVDISK_ROOT);
                }
            }
        }
        std::fs::remove_dir_all(dir).map_err(io(dir))
    }
}

/// How [`open`] reaches a database's files.
enum Access {
    /// As its one writer, through the environment.
    Writer(Env),
    /// Through a private copy of them
    /// ([`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only)): transactions that
    /// write are refused.
    ReadOnly(Env),
}

/// [`OpenBuilder::open`](crate::OpenBuilder::open) and, on a copy,
/// [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only).
fn open(
    dir: &Path,
    mut opts: Options,
    access: Access,
    catalog: Catalog,
    procs: Procedures,
    loader: &dyn Fn(&Loader<'_>) -> Result<(), EngineError>,
    progress: &dyn Fn(u64),
) -> Result<(Db, OpenReport), EngineError> {
    let (env, read_only) = match access {
        Access::Writer(env) => (env, false),
        Access::ReadOnly(env) => (env, true),
    };
    catalog.validate()?;
    opts.check()?;
    fit_device(&mut opts);
    let streams = opts.scheme.streams_for(opts.streams);
    let lock = super::lock::claim(dir, &env)?;
    let mut meta = Meta::new(&opts, streams, &catalog);
    if opts.scheme.log_place() == LogPlace::NvramFiles {
        meta.outside.extend(new_nvdisk_place(dir));
    }
    let (created, meta) = meta.check_or_create(dir, &env, &opts.device)?;
    if opts.pace.is_none() {
        opts.pace = meta.device_pace();
    }
    let storage = make_storage(dir, &opts, &env, streams, &meta)?;
    let mut inner = DbInner::unopened(dir, opts, env.clone(), &catalog, procs, lock);
    inner.read_only = read_only;
    let starts = log_starts(&storage);
    let image = loader::build(&mut inner, &env, created, &starts, loader, progress)?;
    let recovery = open_scheme(&mut inner, storage, image.cut, progress)?;
    inner.next_txn = AtomicU64::new((recovery.max_txn + 1).max(image.next_txn));
    if let Some(c) = &image.checkpoint {
        // The checkpoint loaded is the last one for the size trigger's `log_ratio`.
        inner.ckpt.image.store(c.bytes, Ordering::Relaxed);
    }
    let report = OpenReport {
        created,
        rows_loaded: image.rows,
        load_seconds: image.seconds,
        checkpoint: image.checkpoint,
        recovery,
    };
    let inner = Arc::new(inner);
    crate::checkpoint::spawn_trigger(&inner)?;
    Ok((Db { inner }, report))
}

impl DbInner {
    /// The database in `dir` with empty tables and, until [`open_scheme`] runs, a placeholder
    /// scheme (the scheme is opened after the initial image is built).
    pub(super) fn unopened(
        dir: &Path,
        opts: Options,
        env: Env,
        catalog: &Catalog,
        procs: Procedures,
        lock: FsLock,
    ) -> DbInner {
        let tables: Vec<Table> = catalog
            .tables
            .iter()
            .enumerate()
            .map(|(i, d)| Table::new(i as u32, d.clone()))
            .collect();
        DbInner {
            dir: dir.to_path_buf(),
            tables,
            cc: opts.cc,
            logging: opts.logging,
            records: opts.records,
            elr: opts.scheme.early_lock_release(),
            logs: opts.scheme.log_place() != LogPlace::Nowhere,
            procs,
            scheme: Arc::new(scheme::NoLogging::default()),
            next_txn: AtomicU64::new(1),
            next_worker: AtomicUsize::new(0),
            epochs: Epochs::new(opts.max_workers.max(1), 0),
            ckpt: Checkpoints::new(),
            mv: crate::mvcc::Clock::new(opts.max_workers.max(1), 0),
            inserts: Default::default(),
            opts,
            env,
            read_only: false,
            _lock: lock,
        }
    }
}

/// Each stream's first kept LSN, for a log on devices (empty for a region or no log).
fn log_starts(storage: &Storage) -> Vec<Lsn> {
    match storage {
        Storage::Devices(d) => d.iter().map(|d| d.start()).collect(),
        _ => Vec::new(),
    }
}

/// The scheme configuration of a database opened with `opts`, recovering past `cut`.
pub(super) fn scheme_config(opts: &Options, cut: Option<Cut>) -> SchemeConfig {
    SchemeConfig::default()
        .logging(opts.logging)
        .max_workers(opts.max_workers)
        .group_delay(opts.group_delay)
        .group_bytes(opts.group_bytes)
        .scan_mode(opts.scan_mode)
        .recovery_threads(opts.recovery_threads.max(1))
        .recovery_plan(opts.recovery_plan)
        .mvcc(opts.cc == Cc::Mvcc)
        .cut(cut)
        .records(opts.records)
}

/// Open `db`'s scheme on `storage`, replaying the log (what checkpoint cut `cut` does not
/// cover) into the initial image, and install it in `db`.
pub(super) fn open_scheme(
    db: &mut DbInner,
    storage: Storage,
    cut: Option<Cut>,
    progress: &dyn Fn(u64),
) -> Result<RecoveryReport, EngineError> {
    let opts = &db.opts;
    let scfg = scheme_config(opts, cut);
    let replayer = Replayer::new(db);
    let (scheme, recovery) = scheme::open(&opts.scheme, &scfg, storage, &replayer, progress)?;
    // MVCC: versions collapse; the clock goes on past every replayed timestamp and past the
    // wall clock in microseconds, so that later commits stamp above what an earlier run logged
    // even where a checkpoint hides it from this recovery.
    let max_ts = replayer.finish();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    db.mv.advance(max_ts.max(wall));
    drop(replayer);
    db.scheme = scheme;
    Ok(recovery)
}
