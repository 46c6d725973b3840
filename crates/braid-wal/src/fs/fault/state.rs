//! The state every handle of one [`FaultFs`](super::FaultFs) shares: the image, the operation
//! log, armed faults and counters.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use braid_pmem::PersistTrip;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rustix::io::Errno;

use super::image::{FileId, Image};
use super::ops::{Effect, FsOp, LoggedOp};
use super::opts::{FaultStats, SyncFault};

#[derive(Debug, Default)]
pub(super) struct Faults {
    pub(super) sync: Option<SyncFault>,
    pub(super) space_limit: Option<u64>,
    pub(super) short_writes: Option<SmallRng>,
    pub(super) direct_refused: bool,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) image: Image,
    /// The image the operation log starts from.
    pub(super) base: Arc<Image>,
    pub(super) ops: Vec<LoggedOp>,
    pub(super) recording: bool,
    pub(super) faults: Faults,
    pub(super) stats: FaultStats,
    /// Tripwire counting syncs (see [`FaultFs::set_trip`](super::FaultFs::set_trip)).
    pub(super) trip: Option<Arc<PersistTrip>>,
    /// Paths locked with [`Fs::lock`](crate::fs::Fs::lock). Locks live with the file system
    /// that took them: the file system after a crash holds none, as a machine after a power
    /// cut holds no process's locks.
    pub(super) locks: std::collections::HashSet<PathBuf>,
}

impl State {
    pub(super) fn from_image(image: Image) -> State {
        State {
            base: Arc::new(image.clone()),
            image,
            ops: Vec::new(),
            recording: true,
            faults: Faults::default(),
            stats: FaultStats::default(),
            trip: None,
            locks: Default::default(),
        }
    }

    pub(super) fn run(&mut self, op: FsOp, effect: Effect) {
        self.image.apply(&effect);
        if self.recording {
            self.ops.push(LoggedOp { op, effect });
        }
    }

    pub(super) fn check_space(&mut self, id: FileId, new_end: u64) -> io::Result<()> {
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

pub(super) fn norm(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// An OS-style error (it keeps its errno, as `raw_os_error` callers expect). The operation
/// and path are not part of it: callers add them, as they do for real I/O errors.
pub(super) fn err(e: Errno, _what: &str, _path: &Path) -> io::Error {
    io::Error::from(e)
}

/// A persist event (a file or directory sync) is about to happen: count it on the tripwire, if
/// one is set, which may hold the calling thread. The state lock is released before the wait,
/// so a crash can take it meanwhile.
pub(super) fn trip_point(state: &Mutex<State>) {
    let trip = state.lock().trip.clone();
    if let Some(t) = trip {
        t.persist_event();
    }
}
