//! Persistence counters: cache lines flushed, fences issued, bytes written with non-temporal
//! stores, `msync` calls.
//!
//! They are bumped on the commit path of every logging scheme from many threads, so one shared
//! atomic would become the very contention point the distributed-logging papers remove
//! (Wang & Johnson 2014 §3). Each region keeps [`SHARDS`] cache-padded counter sets; a thread
//! uses the set picked by a per-thread id (threads are numbered once, round robin), so threads
//! only share a set when there are more of them than sets. A snapshot sums all sets; it is
//! exact once the counting threads have stopped, and a consistent-enough view while they run
//! (each counter is read atomically, the counters not together).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

/// Number of counter sets per region.
pub(crate) const SHARDS: usize = 32;

/// A snapshot of a region's persistence counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmemStats {
    /// Cache lines written back by `flush`/`persist` (not counted under eADR, where flush is a
    /// no-op, nor on volatile regions).
    pub lines_flushed: u64,
    /// Fences issued (not counted on volatile regions).
    pub fences: u64,
    /// Bytes written by `write_nt` (not counted on volatile regions).
    pub nt_bytes: u64,
    /// `msync` calls (file regions with [`crate::Media::Msync`] only; failed ones included).
    pub msyncs: u64,
}

impl PmemStats {
    /// Counters accumulated since the `earlier` snapshot of the same region.
    pub fn since(&self, earlier: &PmemStats) -> PmemStats {
        PmemStats {
            lines_flushed: self.lines_flushed.wrapping_sub(earlier.lines_flushed),
            fences: self.fences.wrapping_sub(earlier.fences),
            nt_bytes: self.nt_bytes.wrapping_sub(earlier.nt_bytes),
            msyncs: self.msyncs.wrapping_sub(earlier.msyncs),
        }
    }
}

#[derive(Default)]
struct Shard {
    lines: AtomicU64,
    fences: AtomicU64,
    nt_bytes: AtomicU64,
    msyncs: AtomicU64,
}

/// Sharded counters of one region.
pub(crate) struct Counters {
    shards: Box<[CachePadded<Shard>]>,
}

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn shard_index() -> usize {
    THREAD_SHARD.with(|c| {
        let i = c.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT_THREAD.fetch_add(1, Ordering::Relaxed) % SHARDS;
        c.set(i);
        i
    })
}

impl Counters {
    pub(crate) fn new() -> Counters {
        Counters {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Shard::default()))
                .collect(),
        }
    }

    #[inline]
    fn shard(&self) -> &Shard {
        &self.shards[shard_index()]
    }

    #[inline]
    pub(crate) fn add_lines(&self, n: u64) {
        self.shard().lines.fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn add_fence(&self) {
        self.shard().fences.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn add_nt_bytes(&self, n: u64) {
        self.shard().nt_bytes.fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn add_msync(&self) {
        self.shard().msyncs.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PmemStats {
        self.shards
            .iter()
            .fold(PmemStats::default(), |acc, s| PmemStats {
                lines_flushed: acc.lines_flushed + s.lines.load(Ordering::Relaxed),
                fences: acc.fences + s.fences.load(Ordering::Relaxed),
                nt_bytes: acc.nt_bytes + s.nt_bytes.load(Ordering::Relaxed),
                msyncs: acc.msyncs + s.msyncs.load(Ordering::Relaxed),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_sum_up() {
        let c = Counters::new();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add_lines(2);
                        c.add_fence();
                        c.add_nt_bytes(64);
                        c.add_msync();
                    }
                });
            }
        });
        let st = c.snapshot();
        assert_eq!(
            st,
            PmemStats {
                lines_flushed: 16_000,
                fences: 8_000,
                nt_bytes: 512_000,
                msyncs: 8_000,
            }
        );
        assert_eq!(st.since(&st), PmemStats::default());
    }
}
