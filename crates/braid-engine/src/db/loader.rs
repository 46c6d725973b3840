//! The initial image of the tables (see the `db` module doc): on recovery the newest valid
//! checkpoint, else the application's [`Loader`] callback, which bulk-inserts rows without
//! logging them and runs again before every replay of the log that finds no checkpoint.
//!
//! Either way the log must hold every record the image lacks: a stream whose first kept byte
//! lies after what the loaded checkpoint covers (its cut's start; LSN 0 without a checkpoint)
//! was truncated by checkpoints that are gone or damaged, and replaying the rest would lose
//! transactions without a word. Opening fails then, naming the stream, the missing range and
//! where the checkpoints were looked for. This is where the choice between checkpoint and
//! loader is made, so the check sits here, before the loader runs; it holds for every device
//! (a file log whose segments were removed, a NATS stream purged up to a checkpoint).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use braid_wal::Lsn;
use braid_wal::scheme::Cut;

use crate::checkpoint::CheckpointLoad;
use crate::checkpoint::epoch::Epochs;
use crate::env::Env;
use crate::error::{CheckpointError, EngineError};
use crate::row::{Row, RowState};
use crate::schema::TableId;

use super::DbInner;

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
            .ok_or(EngineError::LoadNoTable { table: table.0 })?;
        if image.len() != t.schema.row_len() {
            return Err(EngineError::LoadRowLength {
                table: t.name().to_string(),
                len: image.len(),
                expected: t.schema.row_len(),
            });
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

/// The application's loader callback (see [`OpenBuilder::open`](crate::OpenBuilder::open)).
pub(super) type LoadFn<'f> = &'f dyn Fn(&Loader<'_>) -> Result<(), EngineError>;

/// Where the initial image came from and what recovery needs to know of it.
pub(super) struct InitialImage {
    /// The checkpoint loaded, or the damaged ones passed over when none could be.
    pub(super) checkpoint: Option<CheckpointLoad>,
    /// The loaded checkpoint's cut: what of the log it already covers.
    pub(super) cut: Option<Cut>,
    /// Transaction ids below this were handed out before the checkpoint.
    pub(super) next_txn: u64,
    /// Rows inserted by the loader or read from the checkpoint.
    pub(super) rows: u64,
    /// Seconds building the image took.
    pub(super) seconds: f64,
}

/// Build the initial image of `db`'s tables: from the newest valid checkpoint when recovering
/// (`created` false) a database that logs, else through `loader`. `log_starts`: each stream's
/// first kept LSN (empty for a log kept in a region, whose scheme checks this itself).
pub(super) fn build(
    db: &mut DbInner,
    env: &Env,
    created: bool,
    log_starts: &[Lsn],
    loader: LoadFn<'_>,
    progress: &dyn Fn(u64),
) -> Result<InitialImage, EngineError> {
    let start = Instant::now();
    let mut image = InitialImage {
        checkpoint: None,
        cut: None,
        next_txn: 1,
        rows: 0,
        seconds: 0.0,
    };
    if !created && db.opts.scheme.log_place() != braid_wal::scheme::LogPlace::Nowhere {
        load_checkpoint(db, env, start, progress, &mut image)?;
        check_log_kept(db, log_starts, &image)?;
    }
    image.rows = match &image.checkpoint {
        Some(c) if c.epoch > 0 => c.rows,
        _ => {
            let l = Loader {
                db,
                rows: AtomicU64::new(0),
            };
            loader(&l)?;
            l.rows.load(Ordering::Relaxed)
        }
    };
    image.seconds = start.elapsed().as_secs_f64();
    Ok(image)
}

/// Load the newest valid checkpoint of `db` into its tables, if there is one, and record it in
/// `image`; fails if every checkpoint is damaged and the log before them is gone.
fn load_checkpoint(
    db: &mut DbInner,
    env: &Env,
    start: Instant,
    progress: &dyn Fn(u64),
    image: &mut InitialImage,
) -> Result<(), EngineError> {
    let dir: &Path = &db.dir;
    if let Some(store) = crate::checkpoint::store::of(&db.opts) {
        crate::checkpoint::store::sync_local(env, dir, store)?;
    }
    let widths: Vec<usize> = db.tables.iter().map(|t| t.schema.row_len()).collect();
    let (found, path, fallbacks, count) = crate::checkpoint::find(env, dir, &widths)?;
    match found {
        Some(l) => {
            let threads = match db.opts.checkpoint.load_threads {
                0 => std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(8),
                n => n,
            };
            let threads = crate::checkpoint::load_rows(&db.tables, &l, threads, progress);
            db.epochs = Epochs::new(db.opts.max_workers.max(1), l.meta.epoch);
            image.next_txn = l.meta.next_txn;
            image.checkpoint = Some(CheckpointLoad {
                path,
                epoch: l.meta.epoch,
                rows: l.rows,
                bytes: l.bytes.len() as u64,
                seconds: start.elapsed().as_secs_f64(),
                threads,
                fallbacks,
            });
            image.cut = Some(l.meta.cut);
        }
        None if count >= crate::checkpoint::KEEP => {
            return Err(CheckpointError::AllDamaged {
                dir: dir.join(crate::checkpoint::DIR),
                damaged: fallbacks,
            }
            .into());
        }
        None => {
            // At most one checkpoint ever existed, so the log was never truncated:
            // recover from the loader and the whole log.
            image.checkpoint = (!fallbacks.is_empty()).then(|| CheckpointLoad {
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
    Ok(())
}

/// Fail if a stream's log no longer holds every record `image` lacks (see the module doc).
fn check_log_kept(
    db: &DbInner,
    log_starts: &[Lsn],
    image: &InitialImage,
) -> Result<(), EngineError> {
    let cut = image.cut.as_ref();
    let Some((stream, first, covered)) = log_starts
        .iter()
        .enumerate()
        .map(|(i, &s)| (i, s, Cut::start_of(cut, i)))
        .find(|&(_, s, c)| s > c)
    else {
        return Ok(());
    };
    let kept = match crate::checkpoint::store::of(&db.opts) {
        Some(store) => store.location(),
        None => db.dir.join(crate::checkpoint::DIR).display().to_string(),
    };
    let loaded = image.checkpoint.as_ref().filter(|c| c.epoch > 0);
    Err(match loaded {
        Some(c) => CheckpointError::LogAfterCheckpoint {
            stream,
            first,
            checkpoint: c.path.clone(),
            covered,
            kept,
        },
        None => CheckpointError::LogWithoutCheckpoint {
            stream,
            first,
            kept,
            damaged: image
                .checkpoint
                .as_ref()
                .map_or(Vec::new(), |c| c.fallbacks.clone()),
        },
    }
    .into())
}
