//! Rows: a fixed-size image behind a physical latch, a logical lock word for two-phase locking
//! (NO_WAIT) and OCC, a version bumped by every committed write, and the logging scheme's
//! per-row stamp word.
//!
//! The logical lock is what concurrency control holds for the length of a transaction (until
//! early lock release); the physical latch (`parking_lot::RwLock`) is held only while bytes are
//! copied in or out, so memory safety never depends on the concurrency-control protocol.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use parking_lot::RwLock;

/// Lock word bit for an exclusive holder; the low bits count shared holders.
const EXCL: u64 = 1 << 63;

/// Row visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RowState {
    Live = 0,
    /// Inserted by a transaction that has not committed: invisible to others.
    Inserting = 1,
    /// Deleted by a committed transaction.
    Deleted = 2,
}

pub struct Row {
    lock: AtomicU64,
    version: AtomicU64,
    /// The logging scheme's per-row word (a GSN, or a handle to LSN vectors).
    pub(crate) stamp: AtomicU64,
    /// The newest checkpoint epoch that has this row's image (see [`crate::checkpoint`]).
    ckpt: AtomicU64,
    state: AtomicU8,
    data: RwLock<Box<[u8]>>,
}

impl std::fmt::Debug for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Row")
            .field("lock", &self.lock.load(Ordering::Relaxed))
            .field("version", &self.version.load(Ordering::Relaxed))
            .field("state", &self.state())
            .finish()
    }
}

impl Row {
    pub fn new(image: Box<[u8]>, state: RowState) -> Row {
        Row {
            lock: AtomicU64::new(0),
            version: AtomicU64::new(0),
            stamp: AtomicU64::new(0),
            ckpt: AtomicU64::new(0),
            state: AtomicU8::new(state as u8),
            data: RwLock::new(image),
        }
    }

    /// A row created locked exclusively by its inserting transaction.
    pub fn new_locked(image: Box<[u8]>) -> Row {
        let r = Row::new(image, RowState::Inserting);
        r.lock.store(EXCL, Ordering::Relaxed);
        r
    }

    pub fn state(&self) -> RowState {
        match self.state.load(Ordering::Acquire) {
            0 => RowState::Live,
            1 => RowState::Inserting,
            _ => RowState::Deleted,
        }
    }

    pub fn set_state(&self, s: RowState) {
        self.state.store(s as u8, Ordering::Release)
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// NO_WAIT shared lock.
    pub fn try_lock_shared(&self) -> bool {
        let mut cur = self.lock.load(Ordering::Relaxed);
        loop {
            if cur & EXCL != 0 {
                return false;
            }
            match self.lock.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    /// NO_WAIT exclusive lock.
    pub fn try_lock_exclusive(&self) -> bool {
        self.lock
            .compare_exchange(0, EXCL, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Upgrade the caller's shared lock to exclusive if it is the only holder.
    pub fn try_upgrade(&self) -> bool {
        self.lock
            .compare_exchange(1, EXCL, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    pub fn unlock_shared(&self) {
        self.lock.fetch_sub(1, Ordering::Release);
    }

    pub fn unlock_exclusive(&self) {
        self.lock.store(0, Ordering::Release);
    }

    /// Whether anyone holds the row exclusively.
    pub fn is_locked_exclusive(&self) -> bool {
        self.lock.load(Ordering::Acquire) & EXCL != 0
    }

    /// Run `f` on the current image; returns its result and the version it saw.
    pub fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> (R, u64) {
        let g = self.data.read();
        let v = self.version.load(Ordering::Acquire);
        (f(&g), v)
    }

    /// Copy the image into `out`; returns the version.
    pub fn copy_into(&self, out: &mut Vec<u8>) -> u64 {
        let g = self.data.read();
        out.clear();
        out.extend_from_slice(&g);
        self.version.load(Ordering::Acquire)
    }

    /// Replace the whole image and bump the version.
    pub fn install(&self, image: &[u8]) {
        let mut g = self.data.write();
        g.copy_from_slice(image);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Change the image in place and bump the version.
    pub fn modify(&self, f: impl FnOnce(&mut [u8])) {
        let mut g = self.data.write();
        f(&mut g);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Checkpoint copy-on-write: before the first change of this row by a transaction of
    /// checkpoint epoch `epoch` or later, hand `save` the image the checkpoint must hold (`None`
    /// if the row was not live), unless the checkpoint scan already took it.
    pub(crate) fn capture(&self, epoch: u64, save: impl FnOnce(Option<&[u8]>)) {
        let g = self.data.write();
        if self.ckpt.load(Ordering::Acquire) >= epoch {
            return;
        }
        self.ckpt.store(epoch, Ordering::Release);
        if self.state() == RowState::Live {
            save(Some(&g));
        } else {
            save(None);
        }
    }

    /// The checkpoint scan: unless a transaction already saved this row for checkpoint `epoch`,
    /// mark it taken and hand a live row's image to `take`.
    pub(crate) fn snapshot(&self, epoch: u64, take: impl FnOnce(&[u8])) {
        let g = self.data.read();
        // The read latch excludes `capture` (which holds the write latch), so test-and-set under
        // it cannot race with a writer; only the checkpoint thread calls this.
        if self.ckpt.load(Ordering::Acquire) >= epoch {
            return;
        }
        self.ckpt.store(epoch, Ordering::Release);
        if self.state() == RowState::Live {
            take(&g);
        }
    }

    pub fn len(&self) -> usize {
        self.data.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_modes() {
        let r = Row::new(vec![0u8; 4].into_boxed_slice(), RowState::Live);
        assert!(r.try_lock_shared());
        assert!(r.try_lock_shared());
        assert!(!r.try_lock_exclusive());
        assert!(!r.try_upgrade());
        r.unlock_shared();
        assert!(r.try_upgrade());
        assert!(!r.try_lock_shared());
        r.unlock_exclusive();
        assert!(r.try_lock_exclusive());
        r.unlock_exclusive();
        let v0 = r.version();
        r.install(&[1, 2, 3, 4]);
        assert_eq!(r.version(), v0 + 1);
        assert_eq!(r.read(|b| b.to_vec()).0, vec![1, 2, 3, 4]);
    }
}
