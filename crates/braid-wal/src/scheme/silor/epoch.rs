//! SiloR's epochs and TIDs (Zheng et al., OSDI 2014, Sections 3 and 4.1; Silo, SOSP 2013,
//! Section 4.2): the global epoch `E`, the per-worker announcements the loggers read, the
//! TID a committing transaction takes, and the bound below which a stream holds every record.
//!
//! * **TID** = `epoch << EPOCH_SHIFT | counter`. A committing transaction takes the smallest
//!   TID that is (a) in the epoch it read, (b) above its worker's previous TID and (c) above
//!   the TID of every row it read or wrote (Silo's rule). Rows keep the TID of their last
//!   writer, so two writers of one row get TIDs in their commit order: recovery installs per
//!   key the value of the largest TID.
//! * **Announcement.** Inside `commit` a worker publishes the epoch it is about to use in its
//!   own slot and re-reads `E`; if `E` moved in between it publishes again. A slot holds
//!   [`IDLE`] outside commits. With every access `SeqCst`, a logger that advances `E` to `g`
//!   and then reads the slots knows: a worker it finds idle appends from now on only records of
//!   epoch `>= g` (its re-check sees `g`), and one it finds announcing `e` appends records of
//!   epoch `>= e`. So every record of an epoch below [`stream_bound`] was reserved before the
//!   logger reads the stream's tail next.
//!
//! Where the paper is vague: SiloR's workers hand whole buffers to loggers and publish, per
//! buffer, the epoch it is complete up to; braid's streams already take records from many
//! writers without a hand-off, so the same fact ("nothing more of epoch `<= b` will come from
//! this worker") is the announcement above, read by the logger instead of pushed by the
//! worker.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use crossbeam_utils::CachePadded;

/// Bits of a TID below its epoch.
pub(crate) const EPOCH_SHIFT: u32 = 32;
/// A worker slot's value outside commits.
pub(crate) const IDLE: u64 = u64::MAX;

/// The epoch of `tid`.
#[inline]
pub(crate) fn epoch_of(tid: u64) -> u64 {
    tid >> EPOCH_SHIFT
}

/// The first TID of `epoch`.
#[inline]
pub(crate) fn first_tid(epoch: u64) -> u64 {
    epoch << EPOCH_SHIFT
}

/// The TID a transaction takes in `epoch`: above `last` (its worker's previous TID) and above
/// `seen` (the largest TID among the rows it touched), and at least the epoch's first.
#[inline]
pub(crate) fn next_tid(epoch: u64, last: u64, seen: u64) -> u64 {
    first_tid(epoch).max(last + 1).max(seen + 1)
}

/// One worker's announcement slot.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The epoch the worker is committing in, or [`IDLE`].
    pub(crate) active: AtomicU64,
    /// The largest epoch of a record this worker appended (for the logger's idle test).
    pub(crate) appended: AtomicU64,
    /// A live worker holds the slot.
    pub(crate) owned: std::sync::atomic::AtomicBool,
}

/// The global epoch and the workers' slots.
#[derive(Debug)]
pub(crate) struct Epochs {
    global: CachePadded<AtomicU64>,
    slots: Box<[CachePadded<Slot>]>,
}

impl Epochs {
    /// Epoch `start`, `workers` slots, all idle.
    pub(crate) fn new(start: u64, workers: usize) -> Epochs {
        Epochs {
            global: CachePadded::new(AtomicU64::new(start)),
            slots: (0..workers)
                .map(|_| {
                    CachePadded::new(Slot {
                        active: AtomicU64::new(IDLE),
                        appended: AtomicU64::new(0),
                        owned: std::sync::atomic::AtomicBool::new(false),
                    })
                })
                .collect(),
        }
    }

    /// The global epoch now.
    #[inline]
    pub(crate) fn current(&self) -> u64 {
        self.global.load(SeqCst)
    }

    /// Advance the global epoch by one; returns the new one.
    pub(crate) fn advance(&self) -> u64 {
        self.global.fetch_add(1, SeqCst) + 1
    }

    /// Claim a free slot for a new worker (worker ids grow without bound; slots are reused).
    pub(crate) fn claim(&self) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.owned
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_ok()
        })
    }

    /// Give slot `w` back (its worker is gone, outside any commit).
    pub(crate) fn release(&self, w: usize) {
        self.slots[w].active.store(IDLE, SeqCst);
        self.slots[w].owned.store(false, SeqCst);
    }

    /// How many worker slots.
    pub(crate) fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Worker `w` enters its commit: announce the epoch it will use and return it.
    #[inline]
    pub(crate) fn enter(&self, w: usize) -> u64 {
        let slot = &self.slots[w].active;
        loop {
            let e = self.global.load(SeqCst);
            slot.store(e, SeqCst);
            if self.global.load(SeqCst) == e {
                return e;
            }
        }
    }

    /// Worker `w` leaves its commit, having appended a record of `epoch` (if any).
    #[inline]
    pub(crate) fn leave(&self, w: usize, appended: Option<u64>) {
        let slot = &self.slots[w];
        if let Some(e) = appended
            && e > slot.appended.load(SeqCst)
        {
            // Only the owner writes it: a plain store suffices.
            slot.appended.store(e, SeqCst);
        }
        slot.active.store(IDLE, SeqCst);
    }

    /// The announcement of worker `w` now.
    #[inline]
    pub(crate) fn active(&self, w: usize) -> u64 {
        self.slots[w].active.load(SeqCst)
    }

    /// The largest epoch any worker appended a record of.
    pub(crate) fn max_appended(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.appended.load(SeqCst))
            .max()
            .unwrap_or(0)
    }

    /// Whether any worker is inside a commit now.
    pub(crate) fn any_active(&self) -> bool {
        self.slots.iter().any(|s| s.active.load(SeqCst) != IDLE)
    }
}

/// The highest epoch all of whose records on a stream were reserved before the stream's tail
/// is read next, given the global epoch `g` just read and the announcements of the stream's
/// workers read after it: `g - 1`, lowered below every announced epoch.
pub(crate) fn stream_bound(g: u64, announced: impl IntoIterator<Item = u64>) -> u64 {
    announced
        .into_iter()
        .filter(|&a| a != IDLE)
        .fold(g.saturating_sub(1), |b, a| b.min(a.saturating_sub(1)))
}

/// The durable epoch: the smallest epoch every stream has made durable.
pub(crate) fn durable_epoch(per_stream: &[u64]) -> u64 {
    per_stream.iter().copied().min().unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tids_carry_their_epoch_and_order_writers() {
        let t = next_tid(5, 0, 0);
        assert_eq!(t, first_tid(5));
        assert_eq!(epoch_of(t), 5);
        // Above the worker's last TID and above what it saw, within the epoch.
        assert_eq!(next_tid(5, t, 0), t + 1);
        assert_eq!(next_tid(5, t, t + 7), t + 8);
        // A row written in an older epoch does not pull the TID below the epoch.
        assert_eq!(next_tid(6, t, t + 7), first_tid(6));
        assert_eq!(epoch_of(next_tid(6, t, t + 7)), 6);
    }

    #[test]
    fn stream_bound_stays_below_announced_epochs() {
        assert_eq!(stream_bound(10, []), 9);
        assert_eq!(stream_bound(10, [IDLE, IDLE]), 9);
        assert_eq!(stream_bound(10, [9, IDLE]), 8);
        assert_eq!(stream_bound(10, [7, 9]), 6);
        // Epoch 0: nothing is durable below it.
        assert_eq!(stream_bound(0, [0]), 0);
        assert_eq!(stream_bound(1, [0]), 0);
    }

    #[test]
    fn durable_epoch_is_the_minimum() {
        assert_eq!(durable_epoch(&[5, 3, 9]), 3);
        assert_eq!(durable_epoch(&[]), 0);
    }

    #[test]
    fn enter_announces_the_current_epoch_and_leave_clears_it() {
        let e = Epochs::new(3, 2);
        assert_eq!(e.enter(1), 3);
        assert_eq!(e.active(1), 3);
        assert_eq!(e.active(0), IDLE);
        assert!(e.any_active());
        assert_eq!(e.advance(), 4);
        // Still announcing the epoch it read: the logger's bound stays below it.
        assert_eq!(stream_bound(e.current(), [e.active(0), e.active(1)]), 2);
        e.leave(1, Some(3));
        assert_eq!(e.active(1), IDLE);
        assert_eq!(e.max_appended(), 3);
        assert!(!e.any_active());
        assert_eq!(stream_bound(e.current(), [e.active(0), e.active(1)]), 3);
        assert_eq!(e.enter(0), 4);
    }
}
