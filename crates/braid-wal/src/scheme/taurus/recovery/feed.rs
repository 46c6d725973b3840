//! What the readers of a pipelined Taurus recovery hand to replay (Alg. 3, read while Alg. 4
//! replays): decoded records in fixed-size [`Batch`]es, and the admitted prefix of every
//! stream, below the closed vector `C` of the read frontiers.
//!
//! Each reader publishes its stream's records `2^bits` at a time (the last batch may be
//! shorter; `bits` is the recovery's own `TaurusConfig::recovery_batch_bits`, [`BATCH_BITS`]
//! by default) together with its read frontier `F[s]`: the end of the last record it
//! decoded, or the stream's valid end once it is done. Every publication recomputes `C`, the
//! greatest closed vector `<= F` (the ELV cut of `recovery.rs` with `F` in place of the valid
//! ends), and publishes a new [`View`]: per stream the batches, how many records lie below
//! `C[s]` (the admitted prefix, which replay may run), and `C` itself. Once every reader is done,
//! `F` is the valid ends and `C` is the final cut (ELV).
//!
//! `C` only grows (the previous `C` is closed and below the new `F`, so below the new
//! greatest), so the search for the first record not `<= C` starts at the previous admitted
//! count; each batch keeps the prefix maximum of its stream's LVs up to its last record, so
//! the batch holding that record is found by a binary search and only that batch is scanned.
//!
//! Workers take the current [`View`] (an `Arc`, swapped under a lock) when
//! [`Feed::version`] moves, and wait on a condition variable when nothing they hold is ready.
//! A hand-rolled structure rather than a concurrent vector crate: the batches are immutable
//! once published, so an `Arc` snapshot per publication (hundreds per gigabyte of log) is
//! all the sharing needed, and lookups stay two plain indexings.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::super::pools::{Flags, Slots};
use crate::Lsn;
use crate::lv;
use crate::scheme::LogKind;
use crate::wait::Progress;

/// Log2 of the records per batch by default (a power of two: a record's batch is its index
/// shifted). Every publication copies the list of the batches published so far, so a
/// recovery publishing `B` batches does `O(B^2)` work to hand them over: small batches are for
/// tests that want admission to run many times on a small log.
pub(crate) const BATCH_BITS: u32 = 12;
/// The batch sizes (log2) a recovery accepts; others are clamped into this range.
pub(crate) const BATCH_BITS_RANGE: std::ops::RangeInclusive<u32> = 1..=20;

/// One transaction record.
pub(crate) struct Rec {
    pub(crate) start: Lsn,
    pub(crate) end: Lsn,
    pub(crate) txn: u64,
    pub(crate) kind: LogKind,
    pub(crate) payload: (usize, usize),
}

/// Up to a batch size of consecutive transaction records of one stream.
pub(crate) struct Batch {
    pub(crate) recs: Vec<Rec>,
    /// `n` entries per record.
    pub(crate) lvs: Vec<u64>,
    pub(crate) arena: Vec<u8>,
    /// The componentwise maximum of the stream's LVs up to this batch's last record.
    pub(crate) pm: Vec<u64>,
    pub(crate) flags: Flags,
}

impl Batch {
    pub(crate) fn new(n: usize, size: usize) -> Batch {
        Batch {
            recs: Vec::with_capacity(size),
            lvs: Vec::with_capacity(size * n),
            arena: Vec::new(),
            pm: vec![0; n],
            flags: Flags::new(0),
        }
    }
}

/// A snapshot of what replay may run.
pub(crate) struct View {
    pub(crate) n: usize,
    /// Log2 of the records per batch.
    bits: u32,
    /// Per stream, its published batches.
    pub(crate) batches: Vec<Vec<Arc<Batch>>>,
    /// Per stream, records published.
    pub(crate) published: Vec<usize>,
    /// Per stream, records below `c` (replay may run them).
    pub(crate) admitted: Vec<usize>,
    /// The closed vector of the read frontiers; the final cut once `last`.
    pub(crate) c: Vec<Lsn>,
    /// Sum of `admitted`.
    pub(crate) total: usize,
    /// Every reader is done: `c` is the ELV and nothing more will be admitted.
    pub(crate) last: bool,
}

impl View {
    #[inline]
    pub(crate) fn rec(&self, s: usize, k: usize) -> &Rec {
        &self.batches[s][k >> self.bits].recs[k & self.mask()]
    }
    #[inline]
    pub(crate) fn lv(&self, s: usize, k: usize) -> &[u64] {
        let i = k & self.mask();
        &self.batches[s][k >> self.bits].lvs[i * self.n..(i + 1) * self.n]
    }
    #[inline]
    pub(crate) fn payload(&self, s: usize, k: usize) -> &[u8] {
        let b = &self.batches[s][k >> self.bits];
        let (x, y) = b.recs[k & self.mask()].payload;
        &b.arena[x..y]
    }
    #[inline]
    fn mask(&self) -> usize {
        (1 << self.bits) - 1
    }
    /// `RLV[s]` when pool `s`'s first unreplayed record is `head`: its start, or `C[s]` once
    /// every admitted record is replayed (the admitted records are exactly those below it).
    #[inline]
    pub(crate) fn rlv_at(&self, s: usize, head: usize) -> Lsn {
        if head >= self.admitted[s] {
            self.c[s]
        } else {
            self.rec(s, head).start
        }
    }

    /// The first record in `[lo, hi)` of stream `s` whose LV is not `<= e`, given that all
    /// before `lo` are.
    fn first_blocked(&self, s: usize, lo: usize, hi: usize, e: &[Lsn]) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let bs = &self.batches[s];
        // The first batch whose prefix maximum is not <= e (the prefix maxima only grow).
        let (b0, b1) = (lo >> self.bits, ((hi - 1) >> self.bits) + 1);
        let b = b0 + bs[b0..b1].partition_point(|b| lv::le(&b.pm, e));
        if b >= b1 {
            return None;
        }
        (lo.max(b << self.bits)..hi.min((b + 1) << self.bits)).find(|&k| !lv::le(self.lv(s, k), e))
    }
}

impl Slots for View {
    #[inline]
    fn admitted(&self, s: usize) -> usize {
        self.admitted[s]
    }
    #[inline]
    fn seen(&self, s: usize) -> usize {
        self.published[s]
    }
    #[inline]
    fn flags(&self, s: usize, k: usize) -> (&crate::sync::AtomicBool, &crate::sync::AtomicBool) {
        self.batches[s][k >> self.bits].flags.get(k & self.mask())
    }
}

struct State {
    frontier: Vec<Lsn>,
    done: Vec<bool>,
    view: Arc<View>,
}

/// The readers' side of the hand-over, shared with the replay workers.
pub(crate) struct Feed {
    state: Mutex<State>,
    version: AtomicU64,
    failed: AtomicBool,
    /// Replay waits here: for a publication (or a failure), and, in a parallel replay, for
    /// another worker to finish a record (the workers notify it too).
    progress: Progress,
}

impl Feed {
    /// A feed for `n` streams whose readers publish `2^bits` records at a time (clamped to
    /// [`BATCH_BITS_RANGE`]).
    pub(crate) fn new(n: usize, bits: u32) -> Feed {
        Feed {
            state: Mutex::new(State {
                frontier: vec![0; n],
                done: vec![false; n],
                view: Arc::new(View {
                    n,
                    bits: bits.clamp(*BATCH_BITS_RANGE.start(), *BATCH_BITS_RANGE.end()),
                    batches: vec![Vec::new(); n],
                    published: vec![0; n],
                    admitted: vec![0; n],
                    c: vec![0; n],
                    total: 0,
                    last: false,
                }),
            }),
            version: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            progress: Progress::new(),
        }
    }

    /// Records per batch: readers publish when they have this many.
    pub(crate) fn batch(&self) -> usize {
        1 << self.state.lock().view.bits
    }

    /// Bumped by every publication (read before [`Feed::view`] to notice the next one).
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub(crate) fn view(&self) -> Arc<View> {
        self.state.lock().view.clone()
    }

    /// A reader failed (or panicked): replay stops, nothing more is admitted.
    #[inline]
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub(crate) fn fail(&self) {
        {
            let _g = self.state.lock();
            self.failed.store(true, Ordering::Release);
            self.version.fetch_add(1, Ordering::AcqRel);
        }
        self.progress.notify();
    }

    /// Wait for a publication (or a failure) after `version`. Every reader publishes its end
    /// or fails the feed (`ReaderGuard`), so this ends.
    pub(crate) fn wait(&self, version: u64) {
        self.progress
            .wait(|| (self.version.load(Ordering::Acquire) != version).then_some(()));
    }

    /// Where replay waits (see the field).
    pub(crate) fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Reader `s` decoded up to `frontier` (every record ending there or before is in
    /// `batch` or published before), and is `done` reading (then `frontier` is its valid
    /// end). Recomputes the admitted prefixes.
    pub(crate) fn publish(&self, s: usize, batch: Option<Batch>, frontier: Lsn, done: bool) {
        let mut g = self.state.lock();
        if self.failed() {
            return;
        }
        let st = &mut *g;
        st.frontier[s] = frontier;
        st.done[s] |= done;
        let old = &st.view;
        let mut batches = old.batches.clone();
        let mut published = old.published.clone();
        if let Some(b) = batch {
            published[s] += b.recs.len();
            batches[s].push(Arc::new(b));
        }
        let mut next = View {
            n: old.n,
            bits: old.bits,
            batches,
            published: published.clone(),
            admitted: published,
            c: st.frontier.clone(),
            total: 0,
            last: st.done.iter().all(|&d| d),
        };
        // The greatest closed vector <= F (the cut of recovery.rs, from the old admitted
        // counts on: everything below the old C stays below the new one).
        loop {
            let mut changed = false;
            for t in 0..next.n {
                if let Some(k) = next.first_blocked(t, old.admitted[t], next.admitted[t], &next.c) {
                    next.admitted[t] = k;
                    next.c[t] = next.rec(t, k).start;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        next.total = next.admitted.iter().sum();
        st.view = Arc::new(next);
        self.version.fetch_add(1, Ordering::AcqRel);
        drop(g);
        self.progress.notify();
    }
}
