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
//! * [`FaultFs::set_trip`] places a power cut by persist-event count instead: every
//!   `sync_data` and `sync_dir` is an event, and the one that trips is held, before it takes
//!   effect and without the file system's lock, until the test has crashed the file system
//!   (see [`braid_pmem::PersistTrip`]), so a seed replays its failure.
//!
//! One file per part of the model: `image` (files, both namespaces, replay and the crash
//! itself), `ops` (the operation log), `opts` (crash options, injected faults, counters),
//! `state` (the shared state behind the lock), `fs_impl` (the [`Fs`] operations) and `file`
//! (open files).

use std::io;
use std::path::Path;
use std::sync::Arc;

use braid_pmem::PersistTrip;
use parking_lot::Mutex;
#[cfg(test)]
use rand::SeedableRng;
#[cfg(test)]
use rand::rngs::SmallRng;
use rustix::io::Errno;

mod file;
mod fs_impl;
mod image;
mod ops;
mod opts;
mod state;

use image::{Image, Node, write_into};
use state::{State, err, norm};

pub use ops::FsOp;
pub use opts::{CrashOpts, FaultStats, SyncFault, Unsynced};

#[cfg(doc)]
use super::Fs;

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
    /// of the log (see `FaultFs::ops`). `None` if `k` exceeds the log or the log was switched
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
    #[cfg(test)]
    pub(crate) fn ops(&self) -> Vec<FsOp> {
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
    #[cfg(test)]
    pub(crate) fn set_short_writes(&self, seed: Option<u64>) {
        self.state.lock().faults.short_writes = seed.map(SmallRng::seed_from_u64);
    }

    /// Make `open` with O_DIRECT fail with EINVAL, as tmpfs does.
    #[cfg(test)]
    pub(crate) fn set_direct_refused(&self, refused: bool) {
        self.state.lock().faults.direct_refused = refused;
    }

    /// Count every `sync_data` and `sync_dir` (failed ones included) on `trip`, which holds
    /// the sync that trips, and later ones, before they take effect, so a test can cut the power
    /// by persist-event count (see [`PersistTrip`]). Shared by every clone of this file system
    /// and its open files; replaces an earlier trip. A crashed file system has none.
    pub fn set_trip(&self, trip: Arc<PersistTrip>) {
        self.state.lock().trip = Some(trip);
    }

    /// The counters so far.
    pub fn stats(&self) -> FaultStats {
        self.state.lock().stats
    }

    /// The paths of every file (not directory) there is now, in sorted order.
    pub fn files(&self) -> Vec<std::path::PathBuf> {
        let s = self.state.lock();
        s.image
            .live
            .iter()
            .filter(|(_, n)| matches!(n, Node::File(_)))
            .map(|(p, _)| p.clone())
            .collect()
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
    #[cfg(test)]
    pub(crate) fn durable_contents(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.state.lock();
        match s.image.durable.get(&norm(path)) {
            Some(Node::File(id)) => s.image.files.get(id).map(|f| f.durable.clone()),
            _ => None,
        }
    }

    /// Number of writes and length changes of a file not yet synced.
    #[cfg(test)]
    pub(crate) fn unsynced_ops(&self, path: &Path) -> usize {
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
