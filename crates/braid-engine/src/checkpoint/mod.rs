//! Checkpoints: transaction-consistent images of every table, taken in the background while
//! transactions run, and the log truncation they allow.
//!
//! A checkpoint (the epoch protocol, and why its point is transaction-consistent, is described
//! in `checkpoint/epoch.rs`):
//! 1. notes each stream's reserved end (`starts` of the cut), moves the checkpoint epoch to
//!    `E` with copy-on-write capture switched on, and waits until no transaction of an older
//!    epoch is still committing (`drain`); notes the reserved ends again (`ends`) with the
//!    scheme's marks, and waits until the log is durable up to them, so the checkpoint never
//!    holds a transaction the log could lose;
//! 2. scans every table, writing each row as the old epochs left it (its current image, or
//!    the image a newer transaction saved before changing it), then the saved images of rows
//!    deleted meanwhile;
//! 3. seals the file (checksummed chunks and footer), fsyncs it under a temporary name,
//!    renames it to `checkpoints/ckpt-<epoch>.ckpt` and fsyncs the directory;
//! 4. with an external device whose factory keeps checkpoints ([`crate::CheckpointStore`]),
//!    uploads the file; if that fails the file is removed and the checkpoint fails, so the log
//!    is never truncated up to a checkpoint the store does not hold (`checkpoint/store.rs`);
//! 5. keeps the newest two checkpoints, removes older ones (from the store too), and truncates
//!    the log before the older of the two (so a damaged newest checkpoint can fall back to the
//!    previous one).
//!
//! The watermark each scheme needs is the cut (`braid_wal::scheme::cut`): byte LSNs per stream
//! for serial, nvdisk, taurus (an LSN vector) and gsn (plus each log's GSN clock), object LSNs
//! for pertxn. Recovery loads the newest valid checkpoint with several threads (with a checkpoint
//! store, after making the local checkpoints the store's) and the scheme replays only the
//! records the cut does not cover. A log truncated past what the loaded checkpoint covers (a
//! stream whose first kept byte lies after the cut's start, or after LSN 0 when no checkpoint
//! could be loaded) is refused at open rather than replayed with a hole (`db/loader.rs`).
//! Triggers: a time interval, log bytes written since the last checkpoint, and a cap on the log
//! space held.

pub(crate) mod epoch;
pub(crate) mod file;
pub(crate) mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::db::DbInner;
use crate::env::Env;
use crate::error::EngineError;
use crate::row::{Row, RowState};
use crate::table::Table;
pub(crate) use file::CheckpointMeta;

/// Directory (inside the database directory) holding the checkpoints.
pub(crate) const DIR: &str = "checkpoints";
/// Checkpoints kept; the log is kept from the oldest of them on.
pub(crate) const KEEP: usize = 2;

/// When to take checkpoints automatically (all off by default; [`crate::Db::checkpoint`]
/// takes one on demand).
#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    /// Take one this often.
    pub interval: Option<Duration>,
    /// Take one once the log has grown this many bytes since the last.
    pub log_bytes: Option<u64>,
    /// Keep the log under about this many bytes: take one when it holds half of it (the log is
    /// kept from the previous checkpoint on, so it holds up to two checkpoints' worth).
    pub log_cap: Option<u64>,
    /// Threads that load a checkpoint at recovery (0: one per core, at most 8).
    pub load_threads: usize,
}

impl CheckpointOptions {
    /// Whether any trigger is set (then a background thread takes checkpoints).
    pub(crate) fn automatic(&self) -> bool {
        self.interval.is_some() || self.log_bytes.is_some() || self.log_cap.is_some()
    }
}

/// What one checkpoint did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckpointReport {
    /// The checkpoint's epoch: it holds every transaction of an earlier epoch, and names the
    /// file (`checkpoints/ckpt-<epoch>.ckpt`).
    pub epoch: u64,
    /// Rows written.
    pub rows: u64,
    /// Bytes of the checkpoint file.
    pub bytes: u64,
    /// Rows whose image a transaction saved (copy-on-write) during the scan.
    pub saved_by_writers: u64,
    /// Seconds waiting for older transactions and the log (step 1).
    pub wait_seconds: f64,
    /// Seconds for the whole checkpoint, the wait included.
    pub seconds: f64,
    /// Log bytes held after truncation.
    pub log_bytes_after: u64,
}

/// Counters over the life of a database handle.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckpointStats {
    /// Checkpoints completed.
    pub taken: u64,
    /// Checkpoints that failed.
    pub failed: u64,
    /// The latest completed checkpoint.
    pub last: Option<CheckpointReport>,
    /// The latest failure's message.
    pub last_error: Option<String>,
    /// Largest log size seen by the trigger thread.
    pub max_log_bytes: u64,
}

/// What loading a checkpoint at open did.
///
/// With `epoch` 0 no checkpoint was loaded: every checkpoint found was damaged, and since the
/// log was never truncated the loader and the whole log rebuilt the database; `fallbacks` says
/// why.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointLoad {
    /// The checkpoint file loaded (empty if none).
    pub path: PathBuf,
    /// Its epoch.
    pub epoch: u64,
    /// Rows loaded.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Seconds to read, check and load it.
    pub seconds: f64,
    /// Threads that loaded the rows.
    pub threads: usize,
    /// Newer checkpoints that were damaged and skipped, with why.
    pub fallbacks: Vec<String>,
}

/// Per-database checkpoint state.
pub(crate) struct Checkpoints {
    lock: Mutex<()>,
    pub(crate) stats: Mutex<CheckpointStats>,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Log bytes right after the last checkpoint (for the `log_bytes` trigger).
    baseline: AtomicU64,
}

impl Checkpoints {
    pub(crate) fn new() -> Checkpoints {
        Checkpoints {
            lock: Mutex::new(()),
            stats: Mutex::new(CheckpointStats::default()),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            baseline: AtomicU64::new(0),
        }
    }

    /// Stop the trigger thread (if any) and wait for it.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.lock().take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn io(path: &Path, e: std::io::Error) -> EngineError {
    EngineError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

fn file_name(epoch: u64) -> String {
    format!("ckpt-{epoch:020}.ckpt")
}

fn parse_name(p: &Path) -> Option<u64> {
    let n = p.file_name()?.to_str()?;
    n.strip_prefix("ckpt-")?.strip_suffix(".ckpt")?.parse().ok()
}

/// The checkpoints of the database in `dir`, oldest first, by epoch.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, EngineError> {
    list_in(&Env::default(), dir)
}

/// [`list`] on the files of `env`.
pub(crate) fn list_in(env: &Env, dir: &Path) -> Result<Vec<(u64, PathBuf)>, EngineError> {
    let cdir = dir.join(DIR);
    if !env.fs.exists(&cdir) {
        return Ok(Vec::new());
    }
    let mut out: Vec<(u64, PathBuf)> = env
        .fs
        .list_dir(&cdir)
        .map_err(|e| io(&cdir, e))?
        .into_iter()
        .filter_map(|p| parse_name(&p).map(|e| (e, p)))
        .collect();
    out.sort();
    Ok(out)
}

/// Ends step 1's capture even when the checkpoint fails half-way.
struct CaptureGuard<'a>(&'a DbInner, bool);

impl Drop for CaptureGuard<'_> {
    fn drop(&mut self) {
        if !self.1 {
            self.0.epochs.end_capture();
            self.0.epochs.side.clear_sync();
        }
    }
}

/// Take one checkpoint now (see the module doc). One runs at a time.
pub(crate) fn take(db: &DbInner) -> Result<CheckpointReport, EngineError> {
    let r = take_inner(db);
    let mut st = db.ckpt.stats.lock();
    match &r {
        Ok(rep) => {
            st.taken += 1;
            st.last = Some(rep.clone());
        }
        Err(e) => {
            st.failed += 1;
            st.last_error = Some(e.to_string());
        }
    }
    r
}

fn take_inner(db: &DbInner) -> Result<CheckpointReport, EngineError> {
    if db.opts.scheme.log_place() == braid_wal::scheme::LogPlace::Nowhere {
        return Err(EngineError::Unsupported {
            detail: "scheme none keeps no log, so a checkpoint could not be recovered from; use a \
             logging scheme"
                .into(),
        });
    }
    let _one = db.ckpt.lock.lock();
    let started = Instant::now();
    let fs = db.env.fs.clone();
    let cdir = db.dir.join(DIR);
    fs.create_dir_all(&cdir).map_err(|e| io(&cdir, e))?;

    // 1. The cut.
    let keeps = db.scheme.keeps();
    let p0 = db.scheme.positions();
    let e = db.epochs.advance();
    let mut guard = CaptureGuard(db, false);
    db.epochs.drain(e);
    let p1 = db.scheme.positions();
    db.scheme.wait_durable(&p1.lsns)?;
    let wait_seconds = started.elapsed().as_secs_f64();
    let meta = CheckpointMeta {
        epoch: e,
        next_txn: db.next_txn_hint(),
        tables: db.tables.len() as u32,
        cut: braid_wal::scheme::Cut {
            epoch: e,
            starts: p0.lsns,
            ends: p1.lsns,
            marks: p1.marks,
            keeps,
        },
    };

    // 2. The rows.
    let path = cdir.join(file_name(e));
    let tmp = cdir.join(format!("{}.tmp", file_name(e)));
    let mut w = file::Writer::create(fs.as_ref(), tmp.clone(), &meta)?;
    let mut failed: Option<EngineError> = None;
    for t in &db.tables {
        t.for_each(|k, row| {
            if failed.is_some() {
                return;
            }
            row.snapshot(e, |img| {
                if let Err(err) = w.row(t.id, k, img) {
                    failed = Some(err);
                }
            });
        });
    }
    db.epochs.end_capture();
    guard.1 = true;
    let mut saved = 0u64;
    db.epochs.side.retain_sync(|&(table, key), img| {
        if failed.is_none()
            && let Some(img) = img
        {
            saved += 1;
            if let Err(err) = w.row(table, key, img) {
                failed = Some(err);
            }
        }
        false
    });
    if let Some(err) = failed {
        drop(w);
        let _ = fs.remove_file(&tmp);
        return Err(err);
    }

    // 3. Seal.
    let (rows, bytes) = match w.finish(&path) {
        Ok(x) => x,
        Err(err) => {
            let _ = fs.remove_file(&tmp);
            return Err(err);
        }
    };

    // 4. Beside the log.
    let store = store::of(&db.opts);
    if let Some(store) = store
        && let Err(err) = store::upload(&db.env, store, &path)
    {
        // Not held by the store, it must not count: recovery would drop it anyway, and the
        // log must not be truncated up to it.
        let removed = fs
            .remove_file(&path)
            .and_then(|()| fs.sync_dir(&cdir))
            .err()
            .map_or(String::new(), |e| {
                format!(" (removing {} failed too: {e})", path.display())
            });
        return Err(EngineError::Checkpoint(format!(
            "{err}; the checkpoint was dropped and the log not truncated{removed}"
        )));
    }

    // 5. Retention and truncation.
    let all = list_in(&db.env, &db.dir)?;
    if all.len() >= KEEP {
        let (keep_epoch, keep_from) = &all[all.len() - KEEP];
        let older = read_meta(&db.env, keep_from)?;
        if let Some(store) = store {
            store::retain(store, *keep_epoch)?;
        }
        let mut removed = false;
        for (_, p) in &all[..all.len() - KEEP] {
            fs.remove_file(p).map_err(|e| io(p, e))?;
            removed = true;
        }
        if removed {
            fs.sync_dir(&cdir).map_err(|e| io(&cdir, e))?;
        }
        db.scheme.truncate(&older.cut.keeps())?;
    }
    let log_bytes_after = db.scheme.log_bytes();
    db.ckpt.baseline.store(log_bytes_after, Ordering::Relaxed);
    Ok(CheckpointReport {
        epoch: e,
        rows,
        bytes,
        saved_by_writers: saved,
        wait_seconds,
        seconds: started.elapsed().as_secs_f64(),
        log_bytes_after,
    })
}

/// Read and check only the header of a checkpoint.
pub(crate) fn read_meta(env: &Env, path: &Path) -> Result<CheckpointMeta, EngineError> {
    let bytes = env
        .read_file(path)?
        .ok_or_else(|| EngineError::BadCheckpoint {
            path: path.to_path_buf(),
            offset: 0,
            why: "missing".into(),
        })?;
    file::decode_header(path, &bytes)
}

/// Find the newest valid checkpoint of the database in `dir`, newest first; damaged ones are
/// skipped and reported. Returns `None` (with the reasons) if there is none valid.
pub(crate) fn find(
    env: &Env,
    dir: &Path,
    widths: &[usize],
) -> Result<(Option<file::Loaded>, PathBuf, Vec<String>, usize), EngineError> {
    let cdir = dir.join(DIR);
    if env.fs.exists(&cdir) {
        // Leftovers of a checkpoint that never finished.
        for p in env.fs.list_dir(&cdir).map_err(|e| io(&cdir, e))? {
            if p.extension().is_some_and(|x| x == "tmp") {
                env.fs.remove_file(&p).map_err(|e| io(&p, e))?;
            }
        }
    }
    let all = list_in(env, dir)?;
    let mut fallbacks = Vec::new();
    for (_, p) in all.iter().rev() {
        let bytes = match env.read_file(p)? {
            Some(b) => b,
            None => continue,
        };
        match file::decode(p, bytes, widths) {
            Ok(l) => return Ok((Some(l), p.clone(), fallbacks, all.len())),
            Err(e) => fallbacks.push(e.to_string()),
        }
    }
    Ok((None, PathBuf::new(), fallbacks, all.len()))
}

/// Insert a checkpoint's rows into the tables with `threads` threads.
pub(crate) fn load_rows(
    tables: &[Table],
    l: &file::Loaded,
    threads: usize,
    progress: &dyn Fn(u64),
) -> usize {
    let threads = threads.clamp(1, l.chunks.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = l.chunks.get(i) else { break };
                    let t = &tables[c.table as usize];
                    let w = 8 + t.schema.row_len();
                    for r in l.bytes[c.body.0..c.body.1].chunks_exact(w) {
                        let mut k = [0u8; 8];
                        k.copy_from_slice(&r[..8]);
                        t.upsert(
                            u64::from_le_bytes(k),
                            Arc::new(Row::new(r[8..].into(), RowState::Live)),
                        );
                    }
                    done.fetch_add((c.body.1 - c.body.0) as u64, Ordering::Relaxed);
                }
            });
        }
        // Progress from the calling thread while the loaders run.
        let total: u64 = l.chunks.iter().map(|c| (c.body.1 - c.body.0) as u64).sum();
        let mut shown = 0u64;
        while shown < total {
            std::thread::sleep(Duration::from_millis(20));
            let d = done.load(Ordering::Relaxed);
            if d > shown {
                progress(d - shown);
                shown = d;
            }
        }
    });
    threads
}

/// The trigger thread: checks the triggers every 50 ms (or twice per interval if shorter).
pub(crate) fn spawn_trigger(db: &Arc<DbInner>) -> Result<(), EngineError> {
    let opts = db.opts.checkpoint.clone();
    if !opts.automatic() {
        return Ok(());
    }
    let weak = Arc::downgrade(db);
    db.ckpt
        .baseline
        .store(db.scheme.log_bytes(), Ordering::Relaxed);
    let t = std::thread::Builder::new()
        .name("braid-checkpoint".into())
        .spawn(move || {
            let mut last = Instant::now();
            let tick = opts
                .interval
                .map_or(Duration::from_millis(50), |i| i / 2)
                .clamp(Duration::from_millis(1), Duration::from_millis(50));
            loop {
                std::thread::park_timeout(tick);
                let Some(db) = weak.upgrade() else { return };
                if db.ckpt.stop.load(Ordering::SeqCst) {
                    return;
                }
                let held = db.scheme.log_bytes();
                {
                    let mut st = db.ckpt.stats.lock();
                    st.max_log_bytes = st.max_log_bytes.max(held);
                }
                let base = db.ckpt.baseline.load(Ordering::Relaxed);
                let due = opts.interval.is_some_and(|i| last.elapsed() >= i)
                    || opts
                        .log_bytes
                        .is_some_and(|b| held.saturating_sub(base) >= b)
                    || opts
                        .log_cap
                        .is_some_and(|c| held.saturating_sub(base) >= c / 4);
                if due {
                    // Errors are kept in the stats; the next trigger tries again.
                    let _ = take(&db);
                    last = Instant::now();
                }
            }
        })
        .map_err(|e| EngineError::Thread {
            detail: format!("cannot start the checkpoint thread: {e}"),
        })?;
    *db.ckpt.thread.lock() = Some(t);
    Ok(())
}
