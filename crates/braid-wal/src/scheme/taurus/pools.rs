//! The replay pools of Taurus's parallel recovery (Alg. 4), without the log: one pool per
//! stream, its records in log order, each with a `claimed` and a `done` flag, and a `head`
//! (the first record not yet replayed) that workers move forward lock-free after each replay
//! (Alg. 4 lines 4-7). `RLV[j]` is derived from `head(j)`: everything before the head's record
//! is replayed, and its effects are visible to whoever read the head with acquire.
//!
//! Recovery is pipelined (see `recovery.rs`): the pools grow while replay runs, so the flags
//! live with the records, in the batches the readers publish, and each worker sees them
//! through a [`Slots`] snapshot that may be older than another worker's. [`Heads`] holds the
//! heads and runs the protocol over whatever snapshot the caller passes:
//!
//! * [`Heads::claim_ready`] claims (a swap on `claimed`) a record the snapshot admits and the
//!   caller's `ready` predicate (`T.LV <= RLV`) accepts, within a window past each head;
//! * [`Heads::finish`] sets `done` and moves the head over every finished record. A head may
//!   stop at a record the caller's snapshot does not hold (another worker, with a newer
//!   snapshot, replayed it): `finish` then returns `false` and the caller retries with a
//!   fresh snapshot ([`Heads::advance`]). That cannot strand a head: whoever set that
//!   record's `done` got the record from a snapshot published after the stopped worker's
//!   head move (else the stopped worker's fresh snapshot would hold it), so it reads the head
//!   after that move and advances it itself.
//!
//! `advance` reads the head with a read-modify-write (`fetch_add(0)`), not a load: RMWs of
//! the head are totally ordered, so of two workers finishing neighbours at once, either the
//! one that set the later `done` flag reads the head after the other moved it (and moves it
//! on), or its RMW comes first and the other's CAS synchronises with it and sees the flag.
//! With plain loads, each could miss the other's write (store buffering) and leave the head
//! behind a finished record. The same argument covers a worker whose snapshot ends at the
//! head: its CAS synchronises with the other worker's RMW, so it then reads a feed version
//! that holds the record.
//!
//! [`Pools`] is the fixed-size variant (every record known up front) that
//! `tests/loom_taurus.rs` model-checks and the autonomous scheme's command re-execution runs
//! (`gsn/reexec.rs`); the atomics come from [`crate::sync`].

use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicBool, AtomicUsize};

/// The flags of a run of records.
pub(crate) struct Flags {
    claimed: Box<[AtomicBool]>,
    done: Box<[AtomicBool]>,
}

impl Flags {
    /// Flags for `len` records, none claimed.
    pub(crate) fn new(len: usize) -> Flags {
        Flags {
            claimed: (0..len).map(|_| AtomicBool::new(false)).collect(),
            done: (0..len).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// `(claimed, done)` of record `k`.
    #[inline]
    pub(crate) fn get(&self, k: usize) -> (&AtomicBool, &AtomicBool) {
        (&self.claimed[k], &self.done[k])
    }
}

/// One worker's snapshot of the pools.
pub(crate) trait Slots {
    /// Records of pool `s` that may be claimed (the admitted prefix).
    fn admitted(&self, s: usize) -> usize;
    /// Records of pool `s` whose flags this snapshot holds (at least `admitted(s)`).
    fn seen(&self, s: usize) -> usize;
    /// The flags of record `k < seen(s)` of pool `s`.
    fn flags(&self, s: usize, k: usize) -> (&AtomicBool, &AtomicBool);
}

/// The heads of the pools.
pub(crate) struct Heads {
    heads: Box<[CachePadded<AtomicUsize>]>,
}

impl Heads {
    /// Heads of `n` empty pools.
    pub(crate) fn new(n: usize) -> Heads {
        Heads {
            heads: (0..n)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
        }
    }

    /// The first record of pool `s` not known replayed.
    #[inline]
    pub(crate) fn head(&self, s: usize) -> usize {
        self.heads[s].load(Ordering::Acquire)
    }

    /// Claim a record no one claimed that `slots` admits and `ready(s, k)` accepts: pools are
    /// visited from `first` on (a worker starts at its own), each within `window` records of
    /// its head.
    pub(crate) fn claim_ready(
        &self,
        slots: &impl Slots,
        first: usize,
        window: usize,
        mut ready: impl FnMut(usize, usize) -> bool,
    ) -> Option<(usize, usize)> {
        let n = self.heads.len();
        for off in 0..n {
            let s = (first + off) % n;
            let h = self.head(s);
            for k in h..slots.admitted(s).min(h.saturating_add(window)) {
                let (claimed, _) = slots.flags(s, k);
                if claimed.load(Ordering::Relaxed) || !ready(s, k) {
                    continue;
                }
                if !claimed.swap(true, Ordering::AcqRel) {
                    return Some((s, k));
                }
            }
        }
        None
    }

    /// Record `k` of pool `s` is replayed: mark it done and move the head over every
    /// finished record (Alg. 4 lines 4-7, lock-free). `false`: the head stopped at a record
    /// `slots` does not hold; call [`Heads::advance`] again with a fresher snapshot.
    pub(crate) fn finish(&self, slots: &impl Slots, s: usize, k: usize) -> bool {
        slots.flags(s, k).1.store(true, Ordering::Release);
        self.advance(slots, s)
    }

    /// Move the head of pool `s` over every finished record `slots` holds; `false` if it
    /// stopped at one `slots` does not hold.
    pub(crate) fn advance(&self, slots: &impl Slots, s: usize) -> bool {
        let head = &self.heads[s];
        loop {
            // An RMW, not a load (see the module docs).
            let h = head.fetch_add(0, Ordering::AcqRel);
            if h >= slots.seen(s) {
                return false;
            }
            if !slots.flags(s, h).1.load(Ordering::Acquire) {
                return true;
            }
            let _ = head.compare_exchange(h, h + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// Pools whose records are all known up front (the autonomous scheme's command replay,
/// `gsn/reexec.rs`, and the loom model).
pub(crate) struct Pools {
    heads: Heads,
    flags: Box<[Flags]>,
}

impl Slots for Pools {
    #[inline]
    fn admitted(&self, s: usize) -> usize {
        self.flags[s].done.len()
    }
    #[inline]
    fn seen(&self, s: usize) -> usize {
        self.flags[s].done.len()
    }
    #[inline]
    fn flags(&self, s: usize, k: usize) -> (&AtomicBool, &AtomicBool) {
        self.flags[s].get(k)
    }
}

impl Pools {
    /// Pools holding `keep[s]` records each.
    pub(crate) fn new(keep: &[usize]) -> Pools {
        Pools {
            heads: Heads::new(keep.len()),
            flags: keep.iter().map(|&k| Flags::new(k)).collect(),
        }
    }

    /// The first record of pool `s` not known replayed (its length once all are).
    #[inline]
    pub(crate) fn head(&self, s: usize) -> usize {
        self.heads.head(s)
    }

    /// Claim a record no one claimed and `ready(s, k)` accepts (see [`Heads::claim_ready`]).
    pub(crate) fn claim_ready(
        &self,
        first: usize,
        window: usize,
        ready: impl FnMut(usize, usize) -> bool,
    ) -> Option<(usize, usize)> {
        self.heads.claim_ready(self, first, window, ready)
    }

    /// Record `k` of pool `s` is replayed (see [`Heads::finish`]; every record is held, so
    /// the head never stops at an unknown one).
    pub(crate) fn finish(&self, s: usize, k: usize) {
        let _ = self.heads.finish(self, s, k);
    }
}
