//! [`FaultFs`]: an in-memory file system for crash and fault tests.
//!
//! Every file has its *live* bytes (what reads see), its *durable* bytes (what survives a
//! crash) and the ordered list of writes and length changes made since its last successful
//! `sync_data`. The namespace exists twice as well: the live directory tree and the durable one.
//! [`FaultFs::crash`] builds the file system a machine would find after a power failure.
//!
//! Simplifications of real (ext4-like) semantics, chosen to keep the model small but strict:
//! * Creating, renaming and removing a file changes only the live namespace; the change becomes
//!   durable when the *parent directory* is synced with [`Fs::sync_dir`], which commits every
//!   pending entry change of that directory at once (ext4 may persist entries earlier, never
//!   later, so code that is correct here does not rely on luck there). A rename across
//!   directories needs both directories synced.
//! * Directories themselves are durable as soon as `create_dir_all` returns.
//! * `sync_data` on any handle makes all of that file's writes durable (fdatasync works on the
//!   inode); the size change of a write is durable with it.
//! * A *failed* `sync_data` (injected EIO) drops the writes it covered from the durable future
//!   of the file, as Linux does when it marks the failed pages clean: a later successful sync
//!   does not bring them back. Code that retries a failed fsync and reports success is caught.
//! * `allocate` reserves space without changing the size (FALLOC_FL_KEEP_SIZE); the reservation
//!   survives crashes. Removed files free their space at once, even while still open.
//! * The space limit counts, per file reachable from the live namespace, the larger of its size
//!   and its reservation.
//! * The operation log records each effect (with the path the handle was opened with, which a
//!   later rename does not update) so [`FaultFs::crash_after`] can replay the first `k`
//!   operations and crash there.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rustix::io::Errno;

use super::{DIRECT_ALIGN, Fs, FsFile, OpenOpts, is_direct_aligned};

type FileId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Dir,
    File(FileId),
}

#[derive(Debug, Clone)]
enum Pending {
    Write { off: u64, data: Arc<[u8]> },
    SetLen(u64),
}

#[derive(Debug, Clone, Default)]
struct FileData {
    live: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<Pending>,
    allocated: u64,
}

fn write_into(buf: &mut Vec<u8>, off: u64, data: &[u8]) {
    let off = usize::try_from(off).unwrap_or(usize::MAX);
    let end = off.saturating_add(data.len());
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[off..end].copy_from_slice(data);
}

fn set_len_of(buf: &mut Vec<u8>, len: u64) {
    buf.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
}

fn apply_pending(buf: &mut Vec<u8>, p: &Pending, keep: Option<usize>) {
    match p {
        Pending::Write { off, data } => {
            let n = keep.unwrap_or(data.len()).min(data.len());
            write_into(buf, *off, &data[..n]);
        }
        Pending::SetLen(len) => set_len_of(buf, *len),
    }
}

/// One operation of the log, as a test sees it. A file's path is the one its handle was
/// opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// `create_dir_all` (one operation for the whole path).
    CreateDir {
        /// The directory.
        path: PathBuf,
    },
    /// `open` created a file.
    Create {
        /// The file.
        path: PathBuf,
    },
    /// `write_at` (of the bytes actually written, after any injected short write).
    Write {
        /// The file.
        path: PathBuf,
        /// Byte offset.
        off: u64,
        /// Bytes written.
        len: u64,
    },
    /// `set_len`, or `open` with truncation (length 0).
    SetLen {
        /// The file.
        path: PathBuf,
        /// The new length in bytes.
        len: u64,
    },
    /// `allocate`.
    Allocate {
        /// The file.
        path: PathBuf,
        /// The reservation in bytes.
        len: u64,
    },
    /// A successful `sync_data`.
    SyncData {
        /// The file.
        path: PathBuf,
    },
    /// A `sync_data` that failed (injected EIO); the writes it covered never become durable.
    SyncDataFailed {
        /// The file.
        path: PathBuf,
    },
    /// `rename`.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
    },
    /// `remove_file`.
    Remove {
        /// The file.
        path: PathBuf,
    },
    /// `sync_dir`.
    SyncDir {
        /// The directory.
        path: PathBuf,
    },
}

/// What an operation did to the image; replayable.
#[derive(Debug, Clone)]
enum Effect {
    CreateDir(PathBuf),
    Create(PathBuf, FileId),
    Write(FileId, u64, Arc<[u8]>),
    SetLen(FileId, u64),
    Allocate(FileId, u64),
    Sync(FileId),
    SyncFailed(FileId),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
    SyncDir(PathBuf),
}

#[derive(Debug, Clone)]
struct LoggedOp {
    op: FsOp,
    effect: Effect,
}

/// What happens to writes that were not yet synced when the power fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unsynced {
    /// All of them are lost.
    #[default]
    Drop,
    /// Per file, every unsynced write but the last reached the disk, and the last one only in
    /// part: a random-length prefix of it (possibly empty, possibly whole).
    TearLast,
    /// Per file, a random subset of the unsynced writes reached the disk (each with
    /// probability 1/2, applied in their original order).
    KeepSubset,
}

/// Options of a simulated power failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrashOpts {
    /// What becomes of unsynced writes.
    pub unsynced: Unsynced,
    /// Seed of the random choices (torn lengths, subsets).
    pub seed: u64,
}

impl CrashOpts {
    /// Every unsynced write is lost.
    pub fn drop_unsynced() -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::Drop,
            seed: 0,
        }
    }
    /// [`Unsynced::TearLast`] with this seed.
    pub fn tear_last(seed: u64) -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::TearLast,
            seed,
        }
    }
    /// [`Unsynced::KeepSubset`] with this seed.
    pub fn keep_subset(seed: u64) -> CrashOpts {
        CrashOpts {
            unsynced: Unsynced::KeepSubset,
            seed,
        }
    }
}

/// An injected `sync_data` failure (EIO).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncFault {
    /// Matching calls that still succeed before the failing one (0: the next one fails).
    pub after: u64,
    /// Only `sync_data` on files whose path contains this string count and fail.
    pub path_contains: Option<String>,
    /// Keep failing every matching call after the first failure.
    pub sticky: bool,
}

impl SyncFault {
    /// The next `sync_data` fails.
    pub fn next() -> SyncFault {
        SyncFault::default()
    }
    /// `n` calls succeed, the one after fails.
    pub fn after(n: u64) -> SyncFault {
        SyncFault {
            after: n,
            ..SyncFault::default()
        }
    }
    /// Only files whose path contains `s`.
    pub fn on_paths(mut self, s: impl Into<String>) -> SyncFault {
        self.path_contains = Some(s.into());
        self
    }
    /// Every matching call fails from the first failure on.
    pub fn sticky(mut self) -> SyncFault {
        self.sticky = true;
        self
    }
}

/// Counters of a [`FaultFs`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Successful `sync_data` calls.
    pub syncs: u64,
    /// Failed (injected) `sync_data` calls.
    pub failed_syncs: u64,
    /// `sync_dir` calls.
    pub dir_syncs: u64,
    /// `write_at` calls that wrote something.
    pub writes: u64,
    /// Bytes those calls wrote.
    pub bytes_written: u64,
    /// Writes that were cut short by injection.
    pub short_writes: u64,
    /// Successful `allocate` calls.
    pub allocates: u64,
    /// Operations refused with ENOSPC.
    pub enospc: u64,
}

/// The files and both namespaces; everything a crash needs.
#[derive(Debug, Clone, Default)]
struct Image {
    files: BTreeMap<FileId, FileData>,
    live: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    next_id: FileId,
}

fn parent_of(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}

fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p.components().all(|c| matches!(c, Component::RootDir))
}

impl Image {
    fn dir_exists(&self, p: &Path) -> bool {
        is_root(p) || self.live.get(p) == Some(&Node::Dir)
    }

    fn apply(&mut self, e: &Effect) {
        match e {
            Effect::CreateDir(path) => {
                for anc in path.ancestors() {
                    if is_root(anc) {
                        continue;
                    }
                    self.live.entry(anc.to_path_buf()).or_insert(Node::Dir);
                    self.durable.entry(anc.to_path_buf()).or_insert(Node::Dir);
                }
            }
            Effect::Create(path, id) => {
                self.files.insert(*id, FileData::default());
                self.live.insert(path.clone(), Node::File(*id));
                self.next_id = self.next_id.max(id + 1);
            }
            Effect::Write(id, off, data) => {
                if let Some(f) = self.files.get_mut(id) {
                    write_into(&mut f.live, *off, data);
                    f.pending.push(Pending::Write {
                        off: *off,
                        data: data.clone(),
                    });
                }
            }
            Effect::SetLen(id, len) => {
                if let Some(f) = self.files.get_mut(id) {
                    set_len_of(&mut f.live, *len);
                    f.pending.push(Pending::SetLen(*len));
                }
            }
            Effect::Allocate(id, len) => {
                if let Some(f) = self.files.get_mut(id) {
                    f.allocated = f.allocated.max(*len);
                }
            }
            Effect::Sync(id) => {
                if let Some(f) = self.files.get_mut(id) {
                    let pending = std::mem::take(&mut f.pending);
                    for p in &pending {
                        apply_pending(&mut f.durable, p, None);
                    }
                }
            }
            Effect::SyncFailed(id) => {
                if let Some(f) = self.files.get_mut(id) {
                    f.pending.clear();
                }
            }
            Effect::Rename(from, to) => {
                if let Some(node) = self.live.remove(from) {
                    self.live.insert(to.clone(), node);
                }
            }
            Effect::Remove(path) => {
                self.live.remove(path);
            }
            Effect::SyncDir(dir) => {
                self.durable
                    .retain(|p, n| matches!(n, Node::Dir) || parent_of(p) != *dir);
                for (p, n) in &self.live {
                    if matches!(n, Node::File(_)) && parent_of(p) == *dir {
                        self.durable.insert(p.clone(), *n);
                    }
                }
            }
        }
    }

    fn used(&self) -> u64 {
        self.live
            .values()
            .filter_map(|n| match n {
                Node::File(id) => self.files.get(id),
                Node::Dir => None,
            })
            .map(|f| (f.live.len() as u64).max(f.allocated))
            .sum()
    }

    /// The image after a power failure.
    fn crash(&self, opts: &CrashOpts) -> Image {
        let mut rng = SmallRng::seed_from_u64(opts.seed);
        let mut files = BTreeMap::new();
        let mut ids: Vec<FileId> = self
            .durable
            .values()
            .filter_map(|n| match n {
                Node::File(id) => Some(*id),
                Node::Dir => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let Some(f) = self.files.get(&id) else {
                continue;
            };
            let mut data = f.durable.clone();
            let n = f.pending.len();
            for (i, p) in f.pending.iter().enumerate() {
                match opts.unsynced {
                    Unsynced::Drop => {}
                    Unsynced::TearLast => {
                        if i + 1 < n {
                            apply_pending(&mut data, p, None);
                        } else {
                            match p {
                                Pending::Write { data: d, .. } => {
                                    let keep = rng.gen_range(0..=d.len());
                                    apply_pending(&mut data, p, Some(keep));
                                }
                                Pending::SetLen(_) => {
                                    if rng.gen_bool(0.5) {
                                        apply_pending(&mut data, p, None);
                                    }
                                }
                            }
                        }
                    }
                    Unsynced::KeepSubset => {
                        if rng.gen_bool(0.5) {
                            apply_pending(&mut data, p, None);
                        }
                    }
                }
            }
            files.insert(
                id,
                FileData {
                    live: data.clone(),
                    durable: data,
                    pending: Vec::new(),
                    allocated: f.allocated,
                },
            );
        }
        Image {
            files,
            live: self.durable.clone(),
            durable: self.durable.clone(),
            next_id: self.next_id,
        }
    }
}

#[derive(Debug, Default)]
struct Faults {
    sync: Option<SyncFault>,
    space_limit: Option<u64>,
    short_writes: Option<SmallRng>,
    direct_refused: bool,
}

#[derive(Debug)]
struct State {
    image: Image,
    /// The image the operation log starts from.
    base: Arc<Image>,
    ops: Vec<LoggedOp>,
    recording: bool,
    faults: Faults,
    stats: FaultStats,
}

impl State {
    fn from_image(image: Image) -> State {
        State {
            base: Arc::new(image.clone()),
            image,
            ops: Vec::new(),
            recording: true,
            faults: Faults::default(),
            stats: FaultStats::default(),
        }
    }

    fn run(&mut self, op: FsOp, effect: Effect) {
        self.image.apply(&effect);
        if self.recording {
            self.ops.push(LoggedOp { op, effect });
        }
    }

    fn check_space(&mut self, id: FileId, new_end: u64) -> io::Result<()> {
        let Some(limit) = self.faults.space_limit else {
            return Ok(());
        };
        let Some(f) = self.image.files.get(&id) else {
            return Ok(());
        };
        let cur = (f.live.len() as u64).max(f.allocated);
        if new_end <= cur {
            return Ok(());
        }
        if self.image.used() + (new_end - cur) > limit {
            self.stats.enospc += 1;
            return Err(io::Error::from(Errno::NOSPC));
        }
        Ok(())
    }
}

fn norm(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// An OS-style error (it keeps its errno, as `raw_os_error` callers expect). The operation
/// and path are not part of it: callers add them, as they do for real I/O errors.
fn err(e: Errno, _what: &str, _path: &Path) -> io::Error {
    io::Error::from(e)
}

/// The in-memory crash-simulating file system. Cheap to clone: clones share one file system.
#[derive(Clone)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FaultFs")
            .field("entries", &s.image.live.len())
            .field("ops", &s.ops.len())
            .finish()
    }
}

impl Default for FaultFs {
    fn default() -> Self {
        FaultFs::new()
    }
}

impl FaultFs {
    /// An empty file system.
    pub fn new() -> FaultFs {
        FaultFs::from_image(Image::default())
    }

    fn from_image(image: Image) -> FaultFs {
        FaultFs {
            state: Arc::new(Mutex::new(State::from_image(image))),
        }
    }

    /// The file system after a power failure now: the durable namespace with the durable
    /// contents, unsynced writes treated as `opts` says. A new, independent file system with no
    /// faults armed and an empty operation log; this one is unchanged.
    pub fn crash(&self, opts: CrashOpts) -> FaultFs {
        let s = self.state.lock();
        FaultFs::from_image(s.image.crash(&opts))
    }

    /// [`FaultFs::crash`] at the same instant as whatever `cut` does: file-system operations
    /// wait while `cut` runs and the image is taken, so a persistent-memory crash taken in
    /// `cut` and this file system describe one moment (a checkpoint file never outlives the
    /// log it relies on, a de-staged segment never outlives the ring head that freed it).
    pub fn crash_with<R>(&self, opts: CrashOpts, cut: impl FnOnce() -> R) -> (FaultFs, R) {
        let s = self.state.lock();
        let r = cut();
        (FaultFs::from_image(s.image.crash(&opts)), r)
    }

    /// The file system after a power failure that struck right after the first `k` operations
    /// of the log (see [`FaultFs::ops`]). `None` if `k` exceeds the log or the log was switched
    /// off.
    pub fn crash_after(&self, k: usize, opts: CrashOpts) -> Option<FaultFs> {
        let s = self.state.lock();
        if !s.recording || k > s.ops.len() {
            return None;
        }
        let mut img = (*s.base).clone();
        for op in &s.ops[..k] {
            img.apply(&op.effect);
        }
        Some(FaultFs::from_image(img.crash(&opts)))
    }

    /// The operations so far (since creation or the crash that made this file system).
    pub fn ops(&self) -> Vec<FsOp> {
        self.state.lock().ops.iter().map(|o| o.op.clone()).collect()
    }

    /// Number of operations in the log (the `k` range of [`FaultFs::crash_after`]).
    pub fn op_count(&self) -> usize {
        self.state.lock().ops.len()
    }

    /// Switch the operation log on or off (it keeps a copy of every write). Switching it off
    /// drops the log; switching it on again restarts it from the current state.
    pub fn set_record_ops(&self, on: bool) {
        let mut s = self.state.lock();
        if !on {
            s.ops.clear();
        } else if !s.recording {
            s.base = Arc::new(s.image.clone());
            s.ops.clear();
        }
        s.recording = on;
    }

    /// Arm an EIO failure of `sync_data` (replacing any armed one).
    pub fn inject_sync_fault(&self, fault: SyncFault) {
        self.state.lock().faults.sync = Some(fault);
    }

    /// Disarm the armed `sync_data` failure, if any.
    pub fn clear_sync_fault(&self) {
        self.state.lock().faults.sync = None;
    }

    /// Refuse with ENOSPC any write past a file's reservation, any `allocate` and any growing
    /// `set_len` that would take the total space used past `limit`. `None` = unlimited.
    pub fn set_space_limit(&self, limit: Option<u64>) {
        self.state.lock().faults.space_limit = limit;
    }

    /// Space used now: per live file, the larger of its size and its reservation.
    pub fn used_space(&self) -> u64 {
        self.state.lock().image.used()
    }

    /// With `Some(seed)`, about half of the `write_at` calls write only a random prefix (at
    /// least one byte; whole 4 KiB blocks for O_DIRECT handles). `None` switches it off.
    pub fn set_short_writes(&self, seed: Option<u64>) {
        self.state.lock().faults.short_writes = seed.map(SmallRng::seed_from_u64);
    }

    /// Make `open` with O_DIRECT fail with EINVAL, as tmpfs does.
    pub fn set_direct_refused(&self, refused: bool) {
        self.state.lock().faults.direct_refused = refused;
    }

    /// The counters so far.
    pub fn stats(&self) -> FaultStats {
        self.state.lock().stats
    }

    /// Live contents of a file (what a read sees now).
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.state.lock();
        match s.image.live.get(&norm(path)) {
            Some(Node::File(id)) => s.image.files.get(id).map(|f| f.live.clone()),
            _ => None,
        }
    }

    /// What a crash now would leave of a file if every unsynced write were lost: `None` if its
    /// name is not durable.
    pub fn durable_contents(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.state.lock();
        match s.image.durable.get(&norm(path)) {
            Some(Node::File(id)) => s.image.files.get(id).map(|f| f.durable.clone()),
            _ => None,
        }
    }

    /// Number of writes and length changes of a file not yet synced.
    pub fn unsynced_ops(&self, path: &Path) -> usize {
        let s = self.state.lock();
        match s.image.live.get(&norm(path)) {
            Some(Node::File(id)) => s.image.files.get(id).map_or(0, |f| f.pending.len()),
            _ => 0,
        }
    }

    /// Overwrite bytes of a file in both its live and durable image, as media corruption would
    /// (not logged as an operation).
    pub fn corrupt(&self, path: &Path, off: u64, bytes: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        let p = norm(path);
        let Some(Node::File(id)) = s.image.live.get(&p).copied() else {
            return Err(err(Errno::NOENT, "corrupt", &p));
        };
        if let Some(f) = s.image.files.get_mut(&id) {
            write_into(&mut f.live, off, bytes);
            write_into(&mut f.durable, off, bytes);
        }
        Ok(())
    }
}

impl Fs for FaultFs {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        for anc in p.ancestors() {
            if matches!(s.image.live.get(anc), Some(Node::File(_))) {
                return Err(err(Errno::NOTDIR, "create_dir_all", anc));
            }
        }
        s.run(FsOp::CreateDir { path: p.clone() }, Effect::CreateDir(p));
        Ok(())
    }

    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>> {
        let p = norm(path);
        let mut s = self.state.lock();
        if opts.direct && s.faults.direct_refused {
            return Err(err(Errno::INVAL, "open O_DIRECT", &p));
        }
        let id = match s.image.live.get(&p).copied() {
            Some(Node::Dir) => return Err(err(Errno::ISDIR, "open", &p)),
            Some(Node::File(id)) => {
                if opts.truncate {
                    s.run(
                        FsOp::SetLen {
                            path: p.clone(),
                            len: 0,
                        },
                        Effect::SetLen(id, 0),
                    );
                }
                id
            }
            None => {
                if !opts.create {
                    return Err(err(Errno::NOENT, "open", &p));
                }
                if !s.image.dir_exists(&parent_of(&p)) {
                    return Err(err(Errno::NOENT, "open (no parent directory)", &p));
                }
                let id = s.image.next_id;
                s.run(
                    FsOp::Create { path: p.clone() },
                    Effect::Create(p.clone(), id),
                );
                id
            }
        };
        Ok(Box::new(FaultFile {
            state: self.state.clone(),
            id,
            path: p,
            direct: opts.direct,
        }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        match s.image.live.get(&p) {
            Some(Node::File(_)) => {
                s.run(FsOp::Remove { path: p.clone() }, Effect::Remove(p));
                Ok(())
            }
            Some(Node::Dir) => Err(err(Errno::ISDIR, "remove_file", &p)),
            None => Err(err(Errno::NOENT, "remove_file", &p)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (norm(from), norm(to));
        let mut s = self.state.lock();
        match s.image.live.get(&from) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => {
                return Err(err(
                    Errno::ISDIR,
                    "rename (directories are not supported)",
                    &from,
                ));
            }
            None => return Err(err(Errno::NOENT, "rename", &from)),
        }
        if s.image.live.get(&to) == Some(&Node::Dir) {
            return Err(err(Errno::ISDIR, "rename onto", &to));
        }
        if !s.image.dir_exists(&parent_of(&to)) {
            return Err(err(Errno::NOENT, "rename (no parent directory)", &to));
        }
        s.run(
            FsOp::Rename {
                from: from.clone(),
                to: to.clone(),
            },
            Effect::Rename(from, to),
        );
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let p = norm(path);
        let s = self.state.lock();
        if !s.image.dir_exists(&p) {
            return Err(err(Errno::NOENT, "list_dir", &p));
        }
        // BTreeMap order is sorted order.
        Ok(s.image
            .live
            .keys()
            .filter(|k| **k != p && parent_of(k) == p)
            .cloned()
            .collect())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        if !s.image.dir_exists(&p) {
            return Err(err(Errno::NOENT, "sync_dir", &p));
        }
        s.stats.dir_syncs += 1;
        s.run(FsOp::SyncDir { path: p.clone() }, Effect::SyncDir(p));
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let p = norm(path);
        is_root(&p) || self.state.lock().image.live.contains_key(&p)
    }
}

/// A file opened on a [`FaultFs`].
struct FaultFile {
    state: Arc<Mutex<State>>,
    id: FileId,
    path: PathBuf,
    direct: bool,
}

impl std::fmt::Debug for FaultFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultFile")
            .field("path", &self.path)
            .field("direct", &self.direct)
            .finish()
    }
}

impl FaultFile {
    fn check_direct(&self, off: u64, buf: *const u8, len: usize) -> io::Result<()> {
        if self.direct && !is_direct_aligned(off, buf as usize, len) {
            return Err(io::Error::from(Errno::INVAL));
        }
        Ok(())
    }
}

impl FsFile for FaultFile {
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize> {
        self.check_direct(off, data.as_ptr(), data.len())?;
        if data.is_empty() {
            return Ok(0);
        }
        let mut s = self.state.lock();
        let mut n = data.len();
        let direct = self.direct;
        if let Some(rng) = s.faults.short_writes.as_mut() {
            if direct {
                let blocks = n / DIRECT_ALIGN;
                if blocks > 1 && rng.gen_bool(0.5) {
                    n = rng.gen_range(1..blocks) * DIRECT_ALIGN;
                }
            } else if n > 1 && rng.gen_bool(0.5) {
                n = rng.gen_range(1..n);
            }
        }
        s.check_space(self.id, off + n as u64)?;
        if n < data.len() {
            s.stats.short_writes += 1;
        }
        s.stats.writes += 1;
        s.stats.bytes_written += n as u64;
        let bytes: Arc<[u8]> = Arc::from(&data[..n]);
        s.run(
            FsOp::Write {
                path: self.path.clone(),
                off,
                len: n as u64,
            },
            Effect::Write(self.id, off, bytes),
        );
        Ok(n)
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.check_direct(off, buf.as_ptr(), buf.len())?;
        let s = self.state.lock();
        let Some(f) = s.image.files.get(&self.id) else {
            return Ok(0);
        };
        let len = f.live.len() as u64;
        if off >= len {
            return Ok(0);
        }
        // off < len <= usize::MAX, so the casts are exact.
        let start = off as usize;
        let n = buf.len().min(f.live.len() - start);
        buf[..n].copy_from_slice(&f.live[start..start + n]);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.state.lock();
        let path = self.path.to_string_lossy().into_owned();
        let mut fail = false;
        if let Some(fault) = s.faults.sync.as_mut() {
            let matches = fault
                .path_contains
                .as_deref()
                .is_none_or(|needle| path.contains(needle));
            if matches {
                if fault.after > 0 {
                    fault.after -= 1;
                } else {
                    fail = true;
                    if !fault.sticky {
                        s.faults.sync = None;
                    }
                }
            }
        }
        if fail {
            s.stats.failed_syncs += 1;
            s.run(
                FsOp::SyncDataFailed {
                    path: self.path.clone(),
                },
                Effect::SyncFailed(self.id),
            );
            return Err(err(Errno::IO, "fdatasync (injected)", &self.path));
        }
        s.stats.syncs += 1;
        s.run(
            FsOp::SyncData {
                path: self.path.clone(),
            },
            Effect::Sync(self.id),
        );
        Ok(())
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check_space(self.id, len)?;
        s.stats.allocates += 1;
        s.run(
            FsOp::Allocate {
                path: self.path.clone(),
                len,
            },
            Effect::Allocate(self.id, len),
        );
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        s.check_space(self.id, len)?;
        s.run(
            FsOp::SetLen {
                path: self.path.clone(),
                len,
            },
            Effect::SetLen(self.id, len),
        );
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let s = self.state.lock();
        Ok(s.image
            .files
            .get(&self.id)
            .map_or(0, |f| f.live.len() as u64))
    }
}
