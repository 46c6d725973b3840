//! [`Db::open`]: create a database or recover it, in named steps: check the options and
//! `braid.json`, build the storage, the tables and the initial image (checkpoint or loader),
//! then open the scheme, which replays the log through the engine's [`Replayer`].

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use braid_wal::Lsn;
use braid_wal::scheme::cut::Cut;
use braid_wal::scheme::{self, RecoveryReport, SchemeConfig, Storage};

use super::loader::{self, Loader};
use super::meta::Meta;
use super::options::{Cc, Options};
use super::storage::{fit_device, make_storage};
use super::{Db, DbInner};
use crate::checkpoint::epoch::Epochs;
use crate::checkpoint::{CheckpointLoad, Checkpoints};
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
        fit_device(&mut opts);
        let streams = opts.scheme.streams_for(opts.streams);
        let env = opts.env.clone();
        let created =
            Meta::new(&opts, streams, &catalog).check_or_create(dir, &env, &opts.device)?;
        let storage = make_storage(dir, &opts, streams)?;
        let mut inner = DbInner::unopened(dir, opts, &catalog, procs);
        let starts = log_starts(&storage);
        let image = loader::build(&mut inner, &env, created, &starts, loader, progress)?;
        let recovery = open_scheme(&mut inner, storage, image.cut, progress)?;
        inner.next_txn = AtomicU64::new((recovery.max_txn + 1).max(image.next_txn));
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
}

impl DbInner {
    /// The database in `dir` with empty tables and, until [`open_scheme`] runs, a placeholder
    /// scheme (the scheme is opened after the initial image is built).
    pub(super) fn unopened(
        dir: &Path,
        opts: Options,
        catalog: &Catalog,
        procs: Procedures,
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
            durability: opts.durability,
            logging: opts.logging,
            procs,
            scheme: Arc::new(scheme::none::NoLogging::default()),
            next_txn: AtomicU64::new(1),
            next_worker: AtomicUsize::new(0),
            epochs: Epochs::new(opts.max_workers.max(1), 0),
            ckpt: Checkpoints::new(),
            mv: crate::mvcc::Clock::new(opts.max_workers.max(1), 0),
            inserts: Default::default(),
            opts,
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
    SchemeConfig {
        logging: opts.logging,
        max_workers: opts.max_workers,
        group_delay: opts.group_delay,
        group_bytes: opts.group_bytes,
        scan_mode: opts.scan_mode,
        recovery_threads: opts.recovery_threads.max(1),
        recovery_plan: opts.recovery_plan,
        mvcc: opts.cc == Cc::Mvcc,
        cut,
    }
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
