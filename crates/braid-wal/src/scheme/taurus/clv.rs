//! The committed vector `CLV` of Taurus without its streams: per-stream queues of registered
//! records and the `committed` words, advanced by helpers with `try_lock` (see `commit.rs` for
//! why a transaction is acknowledged once `T.LV <= CLV`, and why the vector is closed and
//! durable at every instant). The durable point of each stream (its `PLV[i]`, Taurus Alg. 2)
//! comes in through the `durable` argument of [`Clv::advance`], so the protocol can be
//! model-checked with loom against a simulated PLV publication (`tests/loom_taurus.rs`); the
//! atomics and locks come from [`crate::sync`].

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use crate::lv::{MAX_STREAMS, Ops};
use crate::sync::{AtomicU64, Mutex};
use crate::{Lsn, WalError};

/// A record appended to a stream that CLV has not passed yet.
struct Pending {
    start: Lsn,
    end: Lsn,
    lv: Box<[u64]>,
}

#[derive(Default)]
struct Queue {
    q: VecDeque<Pending>,
    /// Recycled LV buffers.
    free: Vec<Box<[u64]>>,
}

/// Why an advance of a stream stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// Another thread is advancing the stream.
    Busy,
    /// Nothing registered at `committed` (a record is between its append and its registration,
    /// or the stream has nothing more).
    Gap,
    /// The next record ends at this LSN, which is not durable yet.
    Durable(Lsn),
    /// The next record depends on stream `j` beyond its CLV.
    Stream(usize),
}

/// The `committed` words and the queues behind them.
pub(crate) struct Clv {
    n: usize,
    /// The LV operations (auto unless [`Clv::with_ops`]).
    ops: Ops,
    committed: Box<[CachePadded<AtomicU64>]>,
    queues: Box<[CachePadded<Mutex<Queue>>]>,
}

impl Clv {
    /// `start[i]` is where stream `i` starts appending (everything before it is recovered).
    pub(crate) fn new(start: &[Lsn]) -> Clv {
        Clv {
            n: start.len(),
            ops: Ops::AUTO,
            committed: start
                .iter()
                .map(|&s| CachePadded::new(AtomicU64::new(s)))
                .collect(),
            queues: start
                .iter()
                .map(|_| CachePadded::new(Mutex::new(Queue::default())))
                .collect(),
        }
    }

    /// The same, its LV comparisons run by `ops`.
    pub(crate) fn with_ops(mut self, ops: Ops) -> Clv {
        self.ops = ops;
        self
    }

    /// `committed[i]`: the end of the committed prefix of stream `i`.
    #[inline]
    pub(crate) fn committed(&self, i: usize) -> Lsn {
        self.committed[i].load(Ordering::Acquire)
    }

    /// The committed words into `out` (one per stream).
    #[inline]
    pub(crate) fn committed_into(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.committed.iter()) {
            *o = c.load(Ordering::Acquire);
        }
    }

    /// Register the record `[start, end)` of stream `i`, whose (decompressed) LV is `rec_lv`.
    /// Every record of a stream must be registered (anchors with an all-zero LV), right after
    /// its append returns.
    pub(crate) fn register(&self, i: usize, start: Lsn, end: Lsn, rec_lv: &[u64]) {
        let mut g = self.queues[i].lock();
        let mut lv = g
            .free
            .pop()
            .unwrap_or_else(|| vec![0; self.n].into_boxed_slice());
        lv.copy_from_slice(rec_lv);
        let p = Pending { start, end, lv };
        // Appends of one stream finish nearly in order: search from the back.
        let at =
            g.q.iter()
                .rposition(|x| x.start < start)
                .map_or(0, |k| k + 1);
        g.q.insert(at, p);
    }

    /// Move `committed[i]` as far as it goes. `durable(end)` says whether stream `i` is
    /// durable up to `end` (its PLV, published by the stream; it may publish it on the spot).
    /// Returns whether it moved and why it stopped.
    pub(crate) fn advance(
        &self,
        i: usize,
        mut durable: impl FnMut(Lsn) -> Result<bool, WalError>,
    ) -> Result<(bool, Blocked), WalError> {
        let Some(mut g) = self.queues[i].try_lock() else {
            return Ok((false, Blocked::Busy));
        };
        let mut moved = false;
        let mut clv = [0u64; MAX_STREAMS];
        let clv = &mut clv[..self.n];
        loop {
            let c = self.committed[i].load(Ordering::Relaxed);
            let Some(front) = g.q.front() else {
                return Ok((moved, Blocked::Gap));
            };
            if front.start != c {
                return Ok((moved, Blocked::Gap));
            }
            let end = front.end;
            if !durable(end)? {
                return Ok((moved, Blocked::Durable(end)));
            }
            self.committed_into(clv);
            clv[i] = u64::MAX;
            if !self.ops.le(&front.lv, clv) {
                let j = (0..self.n).find(|&j| front.lv[j] > clv[j]).unwrap_or(i);
                return Ok((moved, Blocked::Stream(j)));
            }
            self.committed[i].store(end, Ordering::Release);
            moved = true;
            if let Some(p) = g.q.pop_front() {
                g.free.push(p.lv);
            }
        }
    }
}
