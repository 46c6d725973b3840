//! The reservation protocol of a stream: the tail counter, one busy word per writer slot, and
//! the ready point (Taurus, Xia et al. 2021, Alg. 1 `WriteLogBuffer` and Alg. 2).
//!
//! Taurus keeps `allocatedLSN[j]` and `filledLSN[j]` per worker and the log manager flushes up
//! to `min(logLSN, allocatedLSN[j] for every worker j with allocatedLSN[j] >= filledLSN[j])`.
//! The paper assumes the two words of a worker are read "together atomically"; here they are
//! folded into one word per slot, `busy`:
//!
//! * `busy == IDLE` (`u64::MAX`): the writer is not between reserving and filling;
//! * otherwise `busy` is a lower bound of the first byte the writer may still fill.
//!
//! A writer ([`Reservations::announce`], [`Reservations::try_reserve`],
//! [`Reservations::finish`]):
//!
//! ```text
//! S1  t = tail.load();  busy = t          // announce a lower bound BEFORE reserving
//! R   tail.compare_exchange(t, t + len)   // reserve [t, t + len); on failure re-announce
//! ..  copy the record into the buffer     // fill
//! S3  busy = IDLE
//! ```
//!
//! The flusher ([`Reservations::ready`]):
//!
//! ```text
//! T   t = tail.load()
//! B   for each slot: b = busy.load(); if b != IDLE { ready = min(ready, b) }
//! ```
//!
//! **Why every byte before `ready` is filled.** Take any reservation `[lsn, lsn + len)` made by
//! R with `lsn < ready <= t`. Every modification of `tail` is a compare-and-swap, so its
//! modification order is a chain of read-modify-writes; the values above `lsn` were written by
//! R or by a later one, and those form R's release sequence. T read such a value, so T
//! synchronises with R, and S1 (sequenced before R) happens before T and hence before B. By
//! coherence B reads S1 or a later store to the slot: S1 itself (or an earlier
//! re-announcement) holds a value `<= lsn` (`tail` only grows), which would give
//! `ready <= lsn`, a contradiction; so B reads S3 or a store after it (the next record's S1,
//! sequenced after S3). Either way B synchronises with the store it reads, which the writer
//! made after its fill, so the fill happens before B and before whatever the flusher does with
//! `ready`. Without S1 the flusher could observe the reserved tail and an idle slot
//! between R and the fill, and publish bytes nobody has written yet. The same argument shows
//! that the slot high-water mark (raised by a read-modify-write before the slot's first S1) is
//! seen by the flusher's load of it after T, for every slot whose reservation lies below `t`.
//!
//! The argument needs only release/acquire. S3 is a release store; the other operations are
//! `SeqCst` all the same (S1 precedes a locked compare-and-swap, which is a full barrier on x86
//! anyway); loom models `SeqCst` loads and stores no stronger than acquire/release, so its
//! check covers the weaker argument above.
//!
//! `ready` is not monotonic (a slow writer may announce a tail value it read long ago), but the
//! set of filled bytes is, so callers keep the maximum of the ready points they computed.
//!
//! Design choice: the reservation is a compare-and-swap rather than the paper's fetch-and-add,
//! so that the stream can refuse a reservation the ring has no room for (checked against the
//! `t` it is about to reserve at). A writer therefore never holds a reservation it cannot fill
//! — with fetch-and-add a full ring that never drains (a pmem ring without de-staging) would
//! leave a hole or force the stream to be poisoned. On a failed compare-and-swap the writer
//! re-announces the tail value the failure returned (still a lower bound of where it will
//! reserve), so the argument above is unchanged.
//!
//! The slot high-water mark (`high`) keeps the scan short: writers claim the lowest free slot
//! and raise `high` before their first announcement.
//!
//! Under `--cfg loom` the atomics are loom's ([`crate::sync`]), so `tests/loom_stream.rs`
//! model-checks this very code (two writers and a flusher).

use std::sync::atomic::Ordering::{AcqRel, Relaxed, Release, SeqCst};

use crossbeam_utils::CachePadded;

use crate::Lsn;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize};

/// `busy` value of a slot whose writer is not between reserving and filling.
pub(crate) const IDLE: u64 = u64::MAX;

/// One writer's slot: its busy word and its statistics, on a cache line of its own.
#[derive(Debug)]
pub(crate) struct Slot {
    busy: AtomicU64,
    claimed: AtomicBool,
    /// Records and bytes appended through this slot (written only by its owner).
    records: AtomicU64,
    bytes: AtomicU64,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            busy: AtomicU64::new(IDLE),
            claimed: AtomicBool::new(false),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
}

/// The tail counter and the writer slots of one stream.
#[derive(Debug)]
pub(crate) struct Reservations {
    tail: CachePadded<AtomicU64>,
    /// Slots `[0, high)` may be in use.
    high: CachePadded<AtomicUsize>,
    slots: Box<[CachePadded<Slot>]>,
}

impl Reservations {
    /// A stream whose next append goes to `start`, with `slots` writer slots.
    pub(crate) fn new(start: Lsn, slots: usize) -> Reservations {
        Reservations {
            tail: CachePadded::new(AtomicU64::new(start)),
            high: CachePadded::new(AtomicUsize::new(0)),
            slots: (0..slots).map(|_| CachePadded::new(Slot::new())).collect(),
        }
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The next position to be reserved.
    #[inline]
    pub(crate) fn tail(&self) -> Lsn {
        self.tail.load(SeqCst)
    }

    /// Claim a free slot (the lowest); `None` if all are taken.
    pub(crate) fn claim(&self) -> Option<usize> {
        for (i, s) in self.slots.iter().enumerate() {
            if s.claimed
                .compare_exchange(false, true, AcqRel, Relaxed)
                .is_ok()
            {
                // Before any announcement from this slot (see the module documentation).
                self.high.fetch_max(i + 1, SeqCst);
                return Some(i);
            }
        }
        None
    }

    /// Give a slot back. Its busy word must be IDLE (or the stream poisoned).
    pub(crate) fn release(&self, slot: usize) {
        self.slots[slot].claimed.store(false, Release);
    }

    /// S1: announce that this slot may fill bytes at or after `at`, where `at` is a tail value
    /// read earlier (by [`Reservations::tail`] or returned by a failed
    /// [`Reservations::try_reserve`]).
    #[inline]
    pub(crate) fn announce(&self, slot: usize, at: Lsn) {
        self.slots[slot].busy.store(at, SeqCst);
    }

    /// R: reserve `[at, at + len)` if the tail is still `at`; else `Err(current tail)`. The
    /// slot must have announced a value `<= at` first.
    #[inline]
    pub(crate) fn try_reserve(&self, at: Lsn, len: u64) -> Result<Lsn, Lsn> {
        self.tail.compare_exchange(at, at + len, SeqCst, SeqCst)
    }

    /// S3: the slot's reservation is filled (or it gave up before reserving). A release
    /// store: the fill happens before any load that reads it (the argument above). A writer
    /// that then loads a word another thread stores before reading `busy` (the flusher's
    /// `wake_at`) puts a `SeqCst` fence between the two ([`crate::sync::fence`]); one that
    /// loads nothing after it pays no fence. On x86 the `SeqCst` store was an `xchg` that
    /// waited for the whole fill to leave the store buffer (most of an append's cost in a
    /// profile of 1 KB records).
    #[inline]
    pub(crate) fn finish(&self, slot: usize) {
        self.slots[slot].busy.store(IDLE, Release);
    }

    /// Count one appended record in the slot's statistics (owner only).
    #[inline]
    pub(crate) fn count(&self, slot: usize, bytes: u64) {
        let s = &self.slots[slot];
        s.records.store(s.records.load(Relaxed) + 1, Relaxed);
        s.bytes.store(s.bytes.load(Relaxed) + bytes, Relaxed);
    }

    /// Count `records` appended records of `bytes` bytes in all (a group reservation) in the
    /// slot's statistics (its owner, or the one leader of the slot's group, only).
    #[inline]
    pub(crate) fn count_many(&self, slot: usize, records: u64, bytes: u64) {
        let s = &self.slots[slot];
        s.records.store(s.records.load(Relaxed) + records, Relaxed);
        s.bytes.store(s.bytes.load(Relaxed) + bytes, Relaxed);
    }

    /// Records and bytes appended through all slots.
    pub(crate) fn totals(&self) -> (u64, u64) {
        self.slots.iter().fold((0, 0), |(r, b), s| {
            (r + s.records.load(Relaxed), b + s.bytes.load(Relaxed))
        })
    }

    /// Alg. 2: the point before which every reserved byte is filled, and whether any slot was
    /// busy (between reserving and filling) when looked at.
    #[inline]
    pub(crate) fn ready(&self) -> (Lsn, bool) {
        let t = self.tail.load(SeqCst);
        let high = self.high.load(SeqCst).min(self.slots.len());
        let mut ready = t;
        let mut busy = false;
        for s in &self.slots[..high] {
            let b = s.busy.load(SeqCst);
            if b != IDLE {
                busy = true;
                ready = ready.min(b);
            }
        }
        (ready, busy)
    }
}
