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
//! Triggers: a time interval, log bytes written since the last checkpoint (at least the last
//! checkpoint's own size, with [`CheckpointOptions::log_ratio`]), and a cap on the log space
//! held. [`CheckpointOptions::default`] (and so `Options::default()`) takes one every
//! [`CheckpointOptions::DEFAULT_LOG_BYTES`] of log, so a database opened with the defaults
//! keeps a bounded log and a bounded reopen time (see [`CheckpointOptions::default`] for the
//! bound); [`CheckpointOptions::off`] takes none. Scheme `none` keeps no log, so its automatic
//! checkpoints are off whatever the options say ([`CheckpointStats::off`] says so). A failed
//! automatic checkpoint is kept in the stats and tried again once a trigger is due, but not
//! sooner than a second later, the wait doubling with every failure in a row up to a minute.

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
use crate::error::{CheckpointDamage, CheckpointError, EngineError};
use crate::row::{Row, RowState};
use crate::table::Table;
pub(crate) use file::CheckpointMeta;

/// Directory (inside the database directory) holding the checkpoints.
pub(crate) const DIR: &str = "checkpoints";
/// Checkpoints kept; the log is kept from the oldest of them on.
pub(crate) const KEEP: usize = 2;

/// When to take checkpoints automatically ([`crate::Db::checkpoint`] takes one on demand).
///
/// The default ([`CheckpointOptions::default`]) checkpoints by log size; [`CheckpointOptions::off`]
/// never automatically. Any triggers may be combined: a checkpoint is taken when one is due.
/// Built from either with the setters (or by assigning fields):
/// `CheckpointOptions::off().interval(Some(Duration::from_secs(60)))`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckpointOptions {
    /// Take one this often.
    pub interval: Option<Duration>,
    /// Take one once the log has grown this many bytes since the last (and, with
    /// [`CheckpointOptions::log_ratio`], at least that multiple of the last checkpoint's size).
    pub log_bytes: Option<u64>,
    /// With [`CheckpointOptions::log_bytes`]: also wait until the log written since the last
    /// checkpoint is this many times that checkpoint's file size (the checkpoint loaded at open
    /// counts as the last). A checkpoint writes every row, so without this a database larger
    /// than `log_bytes` would be rewritten whole for every `log_bytes` of log, back to back
    /// under a steady load; with 1.0 a checkpoint never writes more than the log did since the
    /// one before. `None` (or a ratio that is not a positive number): `log_bytes` alone.
    pub log_ratio: Option<f64>,
    /// Keep the log under about this many bytes: take one when it holds half of it (the log is
    /// kept from the previous checkpoint on, so it holds up to two checkpoints' worth).
    pub log_cap: Option<u64>,
    /// Threads that load a checkpoint at recovery (0: one per core, at most 8).
    pub load_threads: usize,
}

impl Default for CheckpointOptions {
    /// A checkpoint every [`CheckpointOptions::DEFAULT_LOG_BYTES`] (16 MiB) of log, and at
    /// least the last checkpoint's size of log ([`CheckpointOptions::log_ratio`] 1.0); no
    /// interval, no cap.
    ///
    /// Why: without checkpoints the log grows without bound, and so does the time to reopen,
    /// which replays all of it (201 MB and its replay after a million one-row transactions).
    /// With this default a reopen loads the newest checkpoint and replays at most about
    /// `max(16 MiB, checkpoint size)` of log after it, and the log held on disk is at most about
    /// two such stretches (a checkpoint truncates the log up to the older of the two it keeps)
    /// plus a segment file (64 MiB by default: the log is released by whole segments) and what
    /// is written while a checkpoint runs, however long the database runs. The price: a
    /// background thread writes the whole database to `checkpoints/` each time, at most as many
    /// bytes as the log grew meanwhile.
    fn default() -> Self {
        CheckpointOptions {
            interval: None,
            log_bytes: Some(Self::DEFAULT_LOG_BYTES),
            log_ratio: Some(1.0),
            log_cap: None,
            load_threads: 0,
        }
    }
}

impl CheckpointOptions {
    /// Log bytes between automatic checkpoints in [`CheckpointOptions::default`]: 16 MiB.
    ///
    /// Chosen by measuring reopen time against log size (docs/design.md, "A bounded log by
    /// default"): on the 2-core test machine, loaded by other work, the default scheme replayed
    /// 60-150 MB of log a second (TPC-B and one-row updates), so 16 MiB bounds the replay part
    /// of a reopen to 0.1-0.3 s there, while a 100,000-row table (a 1.6 MB checkpoint) is
    /// rewritten once per 16 MiB of log, a tenth more bytes written.
    /// SQLite's autocheckpoint runs every 1,000 pages (about 4 MiB) but copies only the pages
    /// that changed; a braid checkpoint writes every row, so it is taken less often.
    pub const DEFAULT_LOG_BYTES: u64 = 16 << 20;

    /// [`CheckpointOptions::interval`] set to `every`.
    pub fn interval(mut self, every: Option<Duration>) -> CheckpointOptions {
        self.interval = every;
        self
    }
    /// [`CheckpointOptions::log_bytes`] set to `bytes`.
    pub fn log_bytes(mut self, bytes: Option<u64>) -> CheckpointOptions {
        self.log_bytes = bytes;
        self
    }
    /// [`CheckpointOptions::log_ratio`] set to `ratio`.
    pub fn log_ratio(mut self, ratio: Option<f64>) -> CheckpointOptions {
        self.log_ratio = ratio;
        self
    }
    /// [`CheckpointOptions::log_cap`] set to `bytes`.
    pub fn log_cap(mut self, bytes: Option<u64>) -> CheckpointOptions {
        self.log_cap = bytes;
        self
    }
    /// [`CheckpointOptions::load_threads`] set to `n`.
    pub fn load_threads(mut self, n: usize) -> CheckpointOptions {
        self.load_threads = n;
        self
    }

    /// No automatic checkpoints ([`crate::Db::checkpoint`] still takes one on demand): the log
    /// grows until a checkpoint is taken, and a reopen replays all of it.
    pub fn off() -> CheckpointOptions {
        CheckpointOptions {
            interval: None,
            log_bytes: None,
            log_ratio: None,
            log_cap: None,
            load_threads: 0,
        }
    }

    /// Whether any trigger is set.
    pub(crate) fn automatic(&self) -> bool {
        self.interval.is_some() || self.log_bytes.is_some() || self.log_cap.is_some()
    }

    /// Whether a database of scheme `scheme` takes checkpoints automatically with these options
    /// (then a background thread does): `Err` says why not although a trigger is set (kept in
    /// [`CheckpointStats::off`]). Scheme
    /// `none` keeps no log, so a checkpoint could neither be recovered from nor truncate
    /// anything; every other scheme checkpoints on every device it opens on.
    pub(crate) fn automatic_for(
        &self,
        scheme: &braid_wal::scheme::SchemeSpec,
    ) -> Result<bool, String> {
        if !self.automatic() {
            return Ok(false);
        }
        if scheme.log_place() == braid_wal::scheme::LogPlace::Nowhere {
            return Err(format!(
                "scheme {} keeps no log: automatic checkpoints are off",
                scheme.name()
            ));
        }
        Ok(true)
    }

    /// The log growth since the last checkpoint that makes the size trigger due, given the last
    /// checkpoint's file size (`None`: no size trigger).
    fn log_due(&self, last_image: u64) -> Option<u64> {
        let b = self.log_bytes?;
        let scaled = self
            .log_ratio
            .filter(|r| r.is_finite() && *r > 0.0)
            .map_or(0, |r| (last_image as f64 * r) as u64);
        Some(b.max(scaled))
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
    /// Why no automatic checkpoints are taken although the options ask for them (scheme
    /// `none`); `None` when they run or were not asked for.
    pub off: Option<String>,
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
    /// Bytes of the last checkpoint file, taken or loaded at open (for `log_ratio`).
    pub(crate) image: AtomicU64,
}

impl Checkpoints {
    pub(crate) fn new() -> Checkpoints {
        Checkpoints {
            lock: Mutex::new(()),
            stats: Mutex::new(CheckpointStats::default()),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            baseline: AtomicU64::new(0),
            image: AtomicU64::new(0),
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
        return Err(EngineError::Unsupported(
            crate::Unsupported::CheckpointWithoutLog,
        ));
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
        let removal = fs
            .remove_file(&path)
            .and_then(|()| fs.sync_dir(&cdir))
            .err()
            .map(|e| (path.clone(), e));
        return Err(CheckpointError::Dropped {
            source: Box::new(err),
            removal,
        }
        .into());
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
    db.ckpt.image.store(bytes, Ordering::Relaxed);
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
            damage: CheckpointDamage::Missing,
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
///
/// The calling thread reports progress every 20 ms and returns as soon as the last loader
/// finishes (each loader holds a sender of a channel; the channel closing when the last one
/// drops it wakes the caller at once, so a small checkpoint does not wait out a tick).
pub(crate) fn load_rows(
    tables: &[Table],
    l: &file::Loaded,
    threads: usize,
    progress: &dyn Fn(u64),
) -> usize {
    let threads = threads.clamp(1, l.chunks.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let (finished, wait) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let finished = finished.clone();
            let (next, done) = (&next, &done);
            s.spawn(move || {
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
                drop(finished);
            });
        }
        drop(finished);
        // Progress from the calling thread while the loaders run.
        let mut shown = 0u64;
        let report = |shown: &mut u64| {
            let d = done.load(Ordering::Relaxed);
            if d > *shown {
                progress(d - *shown);
                *shown = d;
            }
        };
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            wait.recv_timeout(Duration::from_millis(20))
        {
            report(&mut shown);
        }
        report(&mut shown);
    });
    threads
}

/// Wait after a failed automatic checkpoint before the next attempt, doubled on every failure
/// in a row (a full disk must not make the trigger write a whole checkpoint every tick).
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between attempts after failures.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The trigger thread: checks the triggers every 50 ms (or twice per interval if shorter).
pub(crate) fn spawn_trigger(db: &Arc<DbInner>) -> Result<(), EngineError> {
    let opts = db.opts.checkpoint.clone();
    match opts.automatic_for(&db.opts.scheme) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(why) => {
            db.ckpt.stats.lock().off = Some(why);
            return Ok(());
        }
    }
    let weak = Arc::downgrade(db);
    db.ckpt
        .baseline
        .store(db.scheme.log_bytes(), Ordering::Relaxed);
    let t = std::thread::Builder::new()
        .name("braid-checkpoint".into())
        .spawn(move || {
            let mut last = Instant::now();
            // After a failure: no attempt before this, and the wait after the next failure.
            let (mut retry_at, mut backoff): (Option<Instant>, Duration) = (None, RETRY_FIRST);
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
                let image = db.ckpt.image.load(Ordering::Relaxed);
                let due = opts.interval.is_some_and(|i| last.elapsed() >= i)
                    || opts
                        .log_due(image)
                        .is_some_and(|b| held.saturating_sub(base) >= b)
                    || opts
                        .log_cap
                        .is_some_and(|c| held.saturating_sub(base) >= c / 4);
                if due && retry_at.is_none_or(|t| Instant::now() >= t) {
                    // Errors are kept in the stats; a later trigger tries again, after a wait.
                    match take(&db) {
                        Ok(_) => (retry_at, backoff) = (None, RETRY_FIRST),
                        Err(_) => {
                            retry_at = Some(Instant::now() + backoff);
                            backoff = (backoff * 2).min(RETRY_MAX);
                        }
                    }
                    last = Instant::now();
                }
            }
        })
        .map_err(|source| EngineError::Thread {
            thread: "checkpoint",
            source,
        })?;
    *db.ckpt.thread.lock() = Some(t);
    Ok(())
}
