//! Rows: a fixed-size image behind a physical latch, a logical lock word for two-phase locking
//! (NO_WAIT) and OCC, a version bumped by every committed write, and beside the lock word the
//! logging scheme's slot ([`RowMeta`]: Taurus keeps the row's LSN vectors there, as the paper
//! keeps them in the lock table, Sec. 4.1).
//!
//! The logical lock is what concurrency control holds for the length of a transaction (until
//! early lock release); the physical latch (`parking_lot::RwLock`) is held only while bytes are
//! copied in or out, so memory safety never depends on the concurrency-control protocol.
//!
//! Under MVCC (`crate::mvcc`) a row also keeps, behind the same latch, the begin timestamp
//! of its newest version and the older versions some snapshot may still read (oldest first,
//! `None` for "no row then"). A row that was never written multi-versioned (loaded, or
//! recovered) has no chain: its one version is visible to everyone.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use braid_wal::scheme::RowMeta;
use parking_lot::RwLock;

/// Lock word bit for an exclusive holder; the low bits count shared holders.
const EXCL: u64 = 1 << 63;

/// Row visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
pub(crate) enum RowState {
    /// Committed and visible.
    Live = 0,
    /// Inserted by a transaction that has not committed: invisible to others.
    Inserting = 1,
    /// Deleted by a committed transaction.
    Deleted = 2,
}

/// A row: its image, logical lock word, version counter and visibility state (see the module
/// documentation).
#[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
pub(crate) struct Row {
    lock: AtomicU64,
    /// The logging scheme's slot.
    meta: RowMeta,
    version: AtomicU64,
    /// The newest checkpoint epoch that has this row's image (see [`crate::checkpoint`]).
    ckpt: AtomicU64,
    state: AtomicU8,
    data: RwLock<Body>,
}

struct Body {
    img: Box<[u8]>,
    mv: Option<Box<Chain>>,
}

impl std::ops::Deref for Body {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.img
    }
}

impl std::ops::DerefMut for Body {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.img
    }
}

/// The version history of a multi-versioned row.
struct Chain {
    /// Begin timestamp of the newest version (`img` and `state`); [`PENDING`] while its insert
    /// has not committed.
    begin: u64,
    /// Older versions, oldest first: begin timestamp and image (`None`: no live row).
    old: Vec<(u64, Option<Box<[u8]>>)>,
}

impl Chain {
    /// Keep of the older versions only the newest at or below `horizon` (some snapshot may
    /// read it) and those above it.
    fn prune(&mut self, horizon: u64) {
        if self.begin <= horizon {
            self.old.clear();
        } else if let Some(p) = self.old.iter().rposition(|(b, _)| *b <= horizon) {
            self.old.drain(..p);
        }
    }
}

/// Begin timestamp of a version whose inserting transaction has not committed.
const PENDING: u64 = u64::MAX;

/// What a snapshot read of a row found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The newest version, at this row version counter.
    Newest(u64),
    /// An older version (a newer one was committed after the snapshot).
    Older,
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
    /// The logging scheme's slot in this row.
    #[inline]
    pub(crate) fn meta(&self) -> &RowMeta {
        &self.meta
    }

    /// An unlocked row with version 0 and no version history.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn new(image: Box<[u8]>, state: RowState) -> Row {
        Row {
            lock: AtomicU64::new(0),
            meta: RowMeta::default(),
            version: AtomicU64::new(0),
            ckpt: AtomicU64::new(0),
            state: AtomicU8::new(state as u8),
            data: RwLock::new(Body {
                img: image,
                mv: None,
            }),
        }
    }

    /// A multi-versioned row created by a transaction that has not committed (invisible to
    /// every snapshot), locked exclusively by it.
    pub(crate) fn new_pending(image: Box<[u8]>) -> Row {
        let r = Row::new_locked(image);
        r.data.write().mv = Some(Box::new(Chain {
            begin: PENDING,
            old: Vec::new(),
        }));
        r
    }

    /// A multi-versioned row whose first version begins at `ts` (recovery replay).
    pub(crate) fn new_at(image: Box<[u8]>, ts: u64) -> Row {
        let r = Row::new(image, RowState::Live);
        r.data.write().mv = Some(Box::new(Chain {
            begin: ts,
            old: Vec::new(),
        }));
        r
    }

    /// Snapshot read at `snap`: `f` sees the visible image (`None` if no live row was visible).
    pub(crate) fn read_at<R>(&self, snap: u64, f: impl FnOnce(Option<&[u8]>) -> R) -> (R, Seen) {
        let g = self.data.read();
        let newest = || {
            let live = self.state() == RowState::Live;
            (live.then_some(&g.img[..]), Seen::Newest(self.version()))
        };
        let (img, seen) = match &g.mv {
            None => newest(),
            Some(c) if c.begin <= snap => newest(),
            Some(c) => {
                let img = c
                    .old
                    .iter()
                    .rev()
                    .find(|(b, _)| *b <= snap)
                    .and_then(|(_, i)| i.as_deref());
                // Never visible (inserted after the snapshot, or not committed): the newest
                // "version" is then the absence the snapshot sees, unless the insert commits.
                let seen = if c.begin == PENDING && c.old.is_empty() {
                    Seen::Newest(self.version())
                } else {
                    Seen::Older
                };
                (img, seen)
            }
        };
        (f(img), seen)
    }

    /// Begin timestamp of the newest version (0 for a row without history).
    pub(crate) fn newest_ts(&self) -> u64 {
        self.data.read().mv.as_ref().map_or(0, |c| c.begin)
    }

    /// Install a new version stamped `ts`: `image` (live) or `None` (a tombstone). The version
    /// it replaces is kept for snapshots, unless no snapshot at or above `horizon` can reach
    /// it; versions older than that are pruned. A `ts` below the newest version's (a replay
    /// out of timestamp order) is slotted into the history instead, `base` giving the image it
    /// changes. Bumps the row version and sets the state. Returns whether older versions
    /// remain (then a later [`Row::prune`] has something to drop).
    pub(crate) fn install_at(
        &self,
        ts: u64,
        horizon: u64,
        change: impl FnOnce(Option<&[u8]>) -> Option<Box<[u8]>>,
    ) -> bool {
        let mut g = self.data.write();
        let live = self.state() == RowState::Live;
        let body = &mut *g;
        let chain = body.mv.get_or_insert_with(|| {
            Box::new(Chain {
                begin: 0,
                old: Vec::new(),
            })
        });
        if chain.begin == PENDING {
            // The insert that created this row commits now: its first version.
            if let Some(img) = change(Some(&body.img)) {
                body.img = img;
                self.state.store(RowState::Live as u8, Ordering::Release);
            }
            chain.begin = ts;
        } else if ts >= chain.begin {
            let next = change(live.then_some(&body.img[..]));
            let prev_begin = chain.begin;
            let prev = match next {
                Some(img) => {
                    let prev = std::mem::replace(&mut body.img, img);
                    self.state.store(RowState::Live as u8, Ordering::Release);
                    live.then_some(prev)
                }
                None => {
                    self.state.store(RowState::Deleted as u8, Ordering::Release);
                    live.then(|| body.img.clone())
                }
            };
            chain.old.push((prev_begin, prev));
            chain.begin = ts;
            chain.prune(horizon);
        } else {
            // Out of order (replay): insert the version at its place in the history.
            let pos = chain.old.partition_point(|(b, _)| *b <= ts);
            let base = pos.checked_sub(1).and_then(|p| chain.old[p].1.as_deref());
            let img = change(base);
            chain.old.insert(pos, (ts, img));
        }
        let history = !chain.old.is_empty();
        self.version.fetch_add(1, Ordering::Release);
        history
    }

    /// Drop the versions no snapshot at or above `horizon` can read.
    pub(crate) fn prune(&self, horizon: u64) {
        if let Some(c) = self.data.write().mv.as_mut() {
            c.prune(horizon);
        }
    }

    /// Drop the history (recovery is over, or the row's one version is visible to all).
    pub(crate) fn collapse(&self) {
        self.data.write().mv = None;
    }

    /// Take the row out of service (a tombstone removed from the index): bump the version so
    /// that a transaction that still holds it fails validation.
    pub(crate) fn retire(&self) {
        let _g = self.data.write();
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A row created locked exclusively by its inserting transaction.
    pub(crate) fn new_locked(image: Box<[u8]>) -> Row {
        let r = Row::new(image, RowState::Inserting);
        r.lock.store(EXCL, Ordering::Relaxed);
        r
    }

    /// Visibility state.
    pub(crate) fn state(&self) -> RowState {
        match self.state.load(Ordering::Acquire) {
            0 => RowState::Live,
            1 => RowState::Inserting,
            _ => RowState::Deleted,
        }
    }

    /// Set the visibility state.
    pub(crate) fn set_state(&self, s: RowState) {
        self.state.store(s as u8, Ordering::Release)
    }

    /// Version counter, bumped by every installed write (OCC validation compares it).
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// NO_WAIT shared lock.
    pub(crate) fn try_lock_shared(&self) -> bool {
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
    pub(crate) fn try_lock_exclusive(&self) -> bool {
        self.lock
            .compare_exchange(0, EXCL, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Upgrade the caller's shared lock to exclusive if it is the only holder.
    pub(crate) fn try_upgrade(&self) -> bool {
        self.lock
            .compare_exchange(1, EXCL, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Release one shared lock.
    pub(crate) fn unlock_shared(&self) {
        self.lock.fetch_sub(1, Ordering::Release);
    }

    /// Release the exclusive lock.
    pub(crate) fn unlock_exclusive(&self) {
        self.lock.store(0, Ordering::Release);
    }

    /// Whether anyone holds the row exclusively.
    pub(crate) fn is_locked_exclusive(&self) -> bool {
        self.lock.load(Ordering::Acquire) & EXCL != 0
    }

    /// Run `f` on the current image; returns its result and the version it saw.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> (R, u64) {
        let g = self.data.read();
        let v = self.version.load(Ordering::Acquire);
        (f(&g.img), v)
    }

    /// Copy the image into `out`; returns the version.
    pub(crate) fn copy_into(&self, out: &mut Vec<u8>) -> u64 {
        let g = self.data.read();
        out.clear();
        out.extend_from_slice(&g.img);
        self.version.load(Ordering::Acquire)
    }

    /// Replace the whole image and bump the version.
    pub(crate) fn install(&self, image: &[u8]) {
        let mut g = self.data.write();
        g.copy_from_slice(image);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Change the image in place and bump the version.
    pub(crate) fn modify(&self, f: impl FnOnce(&mut [u8])) {
        let mut g = self.data.write();
        f(&mut g);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Replay's first prefetch step: start loading this row's own lines (its latch and words),
    /// which [`Row::prefetch_body`] and the update after it read.
    pub(crate) fn prefetch_header(&self) {
        braid_pmem::prefetch_lines(
            (self as *const Row).cast::<u8>(),
            std::mem::size_of::<Row>(),
            4,
        );
    }

    /// Replay's second prefetch step, once the header is in cache: start loading the image an
    /// update will write (nothing if a writer holds the latch).
    pub(crate) fn prefetch_body(&self) {
        if let Some(g) = self.data.try_read() {
            braid_pmem::prefetch_lines(g.img.as_ptr(), g.img.len(), 32);
        }
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
            save(Some(&g.img));
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
            take(&g.img);
        }
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
