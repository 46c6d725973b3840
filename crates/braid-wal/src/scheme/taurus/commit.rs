//! When may a Taurus transaction be acknowledged? The committed vector `CLV` (Taurus Alg. 1
//! line 20, Challenge #1 of Section 2.2).
//!
//! Recovery keeps, of each stream, only the prefix before the first record whose LV is not
//! covered, and it iterates that cut to a fixpoint (see `recovery.rs`): what it keeps is the
//! greatest *closed* vector `E <= ELV`, where a vector `C` is closed when every record of every
//! stream `i` before `C[i]` has `LV <= C`. So an acknowledged transaction must lie inside a
//! closed vector that is durable: `PLV >= T.LV` alone is not enough. Counter-example: `r` then
//! `r'` in stream `j`, `r` depends on a record of stream `k` that is not durable yet, `T`
//! (stream `i`) read what `r'` wrote. With `PLV >= T.LV` and every earlier record of stream `i`
//! committed, `T` would be acknowledged; a crash loses the stream-`k` record, recovery cuts
//! stream `j` at `r`, so `r'` is lost and `T` must be too. The paper's "all transactions it
//! depends on can commit" is this recursive condition; here it is computed as a vector.
//!
//! `CLV[i]` (`committed[i]`) is the end of the longest prefix of stream `i` in which every record
//! `r` is durable (`r.end <= PLV[i]`) and has `r.LV[j] <= CLV[j]` for every other stream `j`.
//! A transaction is acknowledged once `T.LV <= CLV` (its own entry being its record's end).
//!
//! **Why CLV is always closed and durable.** `committed[i]` only moves from the end of one record
//! to the end of the next (records of a stream are contiguous and each is registered in its
//! stream's queue right after its append returns, so the record starting at `committed[i]` is
//! found or the advance stops), and only past a record that is durable and whose LV is covered
//! by the `committed` values read at that moment. Those values only grow, so every record ever
//! passed stays covered: the vector is closed at every instant, and each entry is durable.
//! Hence `CLV(t) <= E` for every `t` before a crash, and whatever was acknowledged is recovered.
//!
//! **No global lock.** Each stream has its own queue (a mutex taken by the appending worker to
//! register, and by whoever advances that stream, with `try_lock`: an advancer never blocks on
//! it). Advancing stream `i` reads the other streams' `committed` atomics only. A waiter
//! advances the streams it needs itself (helping), following the chain of what blocks it: a
//! stream waiting for durability (then it sleeps in [`Stream::wait_durable`], which blocks on a
//! condition variable for file devices and publishes the durable point itself on pmem), or a
//! stream waiting for another stream's CLV (then it tries that one). The chain ends: a
//! record's LV only names records that were appended before it (a row's LV is raised after its
//! writer's append returns), so the "waits for" relation follows real time backwards. There is
//! no committer thread, so nothing is acknowledged without someone asking, and the crash tests'
//! polling (`is_durable`) drives progress like a blocking `wait`.
//!
//! **Waiting.** A blocking waiter helps in rounds; a round that can go no further (the next
//! record is not registered yet, another thread holds the stream's queue, or what blocks it
//! is another stream's CLV) waits in the tracker's [`Progress`] until something changes:
//! every registration notifies, every advance that moved `committed` notifies, and an
//! advancer releasing a queue that another thread found busy notifies (the `contended` flag:
//! the finder stores it and tries the lock once more, the holder unlocks and then reads it,
//! with `SeqCst` fences between, so either the finder gets the lock or the holder sees the
//! flag). A round blocked on durability waits in the stream instead.
//!
//! With one stream the vector is one LSN and `CLV == PLV`; the scheme then hands out plain
//! stream tickets ([`Ticket::stream`](crate::scheme::Ticket::stream)) and never registers anything here.

use std::sync::Arc;

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

use crossbeam_utils::CachePadded;

use super::clv::{Blocked, Clv};
use crate::lv::{MAX_STREAMS, Ops};
use crate::scheme::DurabilityWait;
use crate::stream::Stream;
use crate::sync::fence;
use crate::wait::Progress;
use crate::{Lsn, WalError};

/// The committed vector over the running streams.
pub(crate) struct Tracker {
    n: usize,
    /// The LV operations ([`super::TaurusConfig::simd`]).
    ops: Ops,
    streams: Vec<Stream>,
    pmem: Vec<bool>,
    clv: Clv,
    /// Per stream: a helper found its queue busy (see the module docs, "Waiting").
    contended: Box<[CachePadded<AtomicBool>]>,
    /// Blocking helpers wait here between rounds.
    progress: Progress,
}

impl Tracker {
    /// `start[i]` is where stream `i` starts appending (everything before it is recovered);
    /// `ops` are the LV operations.
    pub(crate) fn new(streams: Vec<Stream>, start: &[Lsn], ops: Ops) -> Tracker {
        let n = streams.len();
        Tracker {
            n,
            ops,
            pmem: streams
                .iter()
                .map(|s| s.device().durable_on_fill())
                .collect(),
            streams,
            clv: Clv::new(start).with_ops(ops),
            contended: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            progress: Progress::new(),
        }
    }

    pub(crate) fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// CLV into `out`. With one stream nothing is registered and CLV is the durable point.
    #[inline]
    pub(crate) fn clv_into(&self, out: &mut [u64]) {
        if self.n == 1 {
            if let Some(o) = out.first_mut() {
                *o = self.streams[0].durable().max(self.clv.committed(0));
            }
            return;
        }
        self.clv.committed_into(out);
    }

    /// `lv <= CLV`.
    #[inline]
    pub(crate) fn covers(&self, lv: &[u64]) -> bool {
        let mut c = [0u64; MAX_STREAMS];
        self.clv_into(&mut c[..self.n]);
        self.ops.le(lv, &c[..self.n])
    }

    /// Register the record `[start, end)` of stream `i`, whose (decompressed) LV is `rec_lv`.
    /// Every record of a stream must be registered (anchors with an all-zero LV), right after
    /// its append returns.
    pub(crate) fn register(&self, i: usize, start: Lsn, end: Lsn, rec_lv: &[u64]) {
        self.clv.register(i, start, end, rec_lv);
        self.progress.notify();
    }

    /// Move `committed[i]` as far as it goes: the stream's durable point is its PLV (a pmem
    /// stream publishes it only when asked). Returns whether it moved and why it stopped.
    pub(crate) fn advance(&self, i: usize) -> Result<(bool, Blocked), WalError> {
        let stream = &self.streams[i];
        let pmem = self.pmem[i];
        let step = || {
            self.clv.advance(i, |end| {
                Ok(stream.durable() >= end || (pmem && stream.check_durable(end)?))
            })
        };
        let mut r = step();
        if let Ok((_, Blocked::Busy)) = r {
            // Announce the wait, then try once more: either the holder has unlocked (and this
            // try takes the lock) or its look at the flag below sees it.
            self.contended[i].store(true, SeqCst);
            fence(SeqCst);
            r = step();
            if let Ok((_, Blocked::Busy)) = r {
                return r;
            }
        }
        // The queue is unlocked again (`Clv::advance` returned): wake the helpers that found
        // it busy, and those waiting for `committed[i]` if it moved.
        fence(SeqCst);
        let contended = self.contended[i].load(SeqCst) && self.contended[i].swap(false, SeqCst);
        if contended || matches!(r, Ok((true, _))) {
            self.progress.notify();
        }
        r
    }

    /// One round of helping for `lv`: advance, along the chain of what blocks it, the first
    /// stream it is not covered in. Returns `Ok(true)` if `lv` is covered.
    fn help(&self, lv: &[u64], block: bool) -> Result<bool, WalError> {
        if self.covers(lv) {
            return Ok(true);
        }
        let mut c = [0u64; MAX_STREAMS];
        self.clv_into(&mut c[..self.n]);
        let Some(mut k) = (0..self.n).find(|&j| lv[j] > c[j]) else {
            return Ok(true);
        };
        let mut hops = 0;
        loop {
            let (moved, why) = self.advance(k)?;
            if moved {
                return Ok(self.covers(lv));
            }
            match why {
                Blocked::Stream(j) if j != k && hops < self.n => {
                    k = j;
                    hops += 1;
                }
                // Durable now: advance again at once, so that what the wait made durable is
                // passed into `committed[k]` (nothing else would notify a blocked waiter).
                Blocked::Durable(end) if block => self.streams[k].wait_durable(end)?,
                Blocked::Durable(end) => {
                    if !self.pmem[k] {
                        // Surface a poisoned or stalled stream to a polling caller.
                        self.streams[k].check_durable(end)?;
                    }
                    return Ok(self.covers(lv));
                }
                _ => break,
            }
        }
        Ok(self.covers(lv))
    }

    /// Block until `lv <= CLV`, or fail with the stream error that prevents it. Between
    /// rounds of helping it waits in `progress` for another thread's registration or advance
    /// (see the module docs, "Waiting"), which take microseconds; a round blocked on
    /// durability waits in the stream instead.
    pub(crate) fn wait(&self, lv: &[u64]) -> Result<(), WalError> {
        self.progress.wait(|| match self.help(lv, true) {
            Ok(true) => Some(Ok(())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        })
    }

    /// Non-blocking [`Tracker::wait`].
    pub(crate) fn check(&self, lv: &[u64]) -> Result<bool, WalError> {
        // A few rounds: each can pass one blocker in the chain.
        for _ in 0..4 {
            if self.help(lv, false)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The durability wait of a multi-stream Taurus commit: `T.LV <= CLV`.
pub(crate) struct LvWait {
    pub(crate) link: Arc<Link>,
    pub(crate) lv: Box<[u64]>,
}

/// A worker's handle on the tracker for its tickets: each ticket clones the worker's link,
/// whose reference count lives in the worker's own allocation, rather than the tracker's
/// `Arc`, whose count every worker's commits would write (two atomic read-modify-writes on
/// one line per commit, shared by all workers).
pub(crate) struct Link(pub(crate) Arc<Tracker>);

impl DurabilityWait for LvWait {
    fn wait(&self) -> Result<(), WalError> {
        self.link.0.wait(&self.lv)
    }
    fn is_durable(&self) -> Result<bool, WalError> {
        self.link.0.check(&self.lv)
    }
}
