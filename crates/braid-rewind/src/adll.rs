//! The Atomic Doubly-Linked List (ADLL) of REWIND §3.2, Algorithm 1: the recoverable structure
//! every log of this crate is built on (one record per node in the Simple layout, one bucket
//! per node in the Optimized and Batch layouts, §3.3).
//!
//! The list header holds `head`, `tail` and the three logging variables of the paper:
//! `lastTail` (the tail before the pending append), `toAppend` and `toRemove`. Each is one
//! 8-byte word, so a store to it is atomic in hardware. An append writes the new node (its
//! `prior` = tail), persists it and `lastTail`, then persists `toAppend` (the critical update,
//! Alg. 1 line 5), links it, and clears `toAppend`. Recovery repeats the link step from
//! `lastTail` (not `tail`, so a second crash between "tail = n" and "toAppend = NULL" does not
//! append the node twice) and the unlink step of a pending removal from the node's own
//! `next`/`prev`, which the removal never changes; both are idempotent.
//!
//! Choices where the paper is open: the paper writes with non-temporal stores; this module
//! uses plain stores followed by a cache-line flush and a fence (same durability, and a flush
//! is effective whatever core last wrote the line, which the batched layout relies on). An
//! append costs four fences and a removal three: the node and `lastTail` share one, and
//! clearing `toAppend`/`toRemove` is fenced before returning so that the next operation can
//! never see a stale pending operation. Nodes are never freed while they are referenced by a
//! pending operation: the owner returns them to its free list only after the operation ends.
//! Node layout: `next` at +0, `prev` at +8, payload after.

use braid_pmem::Region;

/// Damage found in the atomic doubly-linked list a log is built on, by its recovery or a walk
/// of its nodes (a pending operation or a link naming something that is not a node of the
/// list); offsets are byte offsets in the pool's region.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdllError {
    /// The pending append names a node, or a previous tail, outside the list's nodes.
    #[error("pending append of {node:#x} after {last_tail:#x}: not nodes of this list")]
    PendingAppend {
        /// The node being appended.
        node: usize,
        /// The tail before the append (`lastTail`).
        last_tail: usize,
    },
    /// The pending removal names a node whose own links leave the list's nodes.
    #[error("pending removal of {node:#x}: it or its neighbours are not nodes of this list")]
    PendingRemoval {
        /// The node being removed.
        node: usize,
    },
    /// A link leads outside the list's nodes.
    #[error("list node {node:#x} is not a node of this log")]
    ForeignNode {
        /// Where the link leads.
        node: usize,
    },
    /// A `prev` link does not mirror the `next` link before it.
    #[error("list node {node:#x} has prev {prev:#x}, expected {expected:#x}")]
    BadPrev {
        /// The node.
        node: usize,
        /// Its `prev` link.
        prev: usize,
        /// The node before it in `next` order (0 for the head).
        expected: usize,
    },
    /// Following `next` visits more nodes than the list can hold.
    #[error("list has a cycle")]
    Cycle,
    /// The header's tail is not the last node.
    #[error("list tail is {tail:#x} but the last node is {last:#x}")]
    BadTail {
        /// The header's tail.
        tail: usize,
        /// The last node reached by `next`.
        last: usize,
    },
}

/// The persistent-memory operations the list is written with: a braid-pmem [`Region`] in the
/// library; the loom model (`tests/loom_adll.rs`) runs this very code on a simulated memory
/// of loom atomics with a durable image, to check appends and removals made by different
/// threads (serialised by a lock, as the log's callers do) against a crash at any point.
pub trait PMem {
    /// Atomic 8-byte load (acquire).
    fn load_u64(&self, off: usize) -> u64;
    /// Atomic 8-byte store (release); durable only once flushed and fenced.
    fn store_u64(&self, off: usize, v: u64);
    /// Start writing back the cache lines of `[off, off + len)`.
    fn flush(&self, off: usize, len: usize);
    /// Wait for the write-backs started so far.
    fn fence(&self);
    /// `flush` then `fence`.
    fn persist(&self, off: usize, len: usize) {
        self.flush(off, len);
        self.fence();
    }
    /// Set `len` bytes at `off` to `byte`.
    fn fill(&self, off: usize, len: usize, byte: u8);
}

impl PMem for Region {
    #[inline]
    fn load_u64(&self, off: usize) -> u64 {
        Region::load_u64(self, off)
    }
    #[inline]
    fn store_u64(&self, off: usize, v: u64) {
        Region::store_u64(self, off, v)
    }
    #[inline]
    fn flush(&self, off: usize, len: usize) {
        Region::flush(self, off, len)
    }
    #[inline]
    fn fence(&self) {
        Region::fence(self)
    }
    #[inline]
    fn persist(&self, off: usize, len: usize) {
        Region::persist(self, off, len)
    }
    #[inline]
    fn fill(&self, off: usize, len: usize, byte: u8) {
        Region::fill(self, off, len, byte)
    }
}

/// Offsets of the header words.
const HEAD: usize = 0;
const TAIL: usize = 8;
const LAST_TAIL: usize = 16;
const TO_APPEND: usize = 24;
const TO_REMOVE: usize = 32;
/// Bytes of a list header (one cache line).
pub const ADLL_HDR: usize = 64;
/// Offset of a node's `next` word.
pub const NEXT: usize = 0;
/// Offset of a node's `prev` word.
pub const PREV: usize = 8;

/// Handle on one ADLL header in a region (the header lives in persistent memory; this is
/// just its address). Callers serialise operations on one list.
#[derive(Debug, Clone, Copy)]
pub struct Adll {
    /// Offset of the list's header in the region.
    pub hdr: usize,
}

#[inline]
fn ld<M: PMem + ?Sized>(r: &M, off: usize) -> usize {
    r.load_u64(off) as usize
}

#[inline]
fn st<M: PMem + ?Sized>(r: &M, off: usize, v: usize) {
    r.store_u64(off, v as u64);
}

impl Adll {
    /// Offset of the first node (0: the list is empty).
    pub fn head<M: PMem + ?Sized>(&self, r: &M) -> usize {
        ld(r, self.hdr + HEAD)
    }

    /// Offset of the last node (0: the list is empty).
    pub fn tail<M: PMem + ?Sized>(&self, r: &M) -> usize {
        ld(r, self.hdr + TAIL)
    }

    /// Write an empty header and persist it.
    pub fn format<M: PMem + ?Sized>(&self, r: &M) {
        r.fill(self.hdr, ADLL_HDR, 0);
        r.persist(self.hdr, ADLL_HDR);
    }

    /// Alg. 1. The node's payload must already be written and flushed (not necessarily
    /// fenced: the first fence here orders it).
    pub fn append<M: PMem + ?Sized>(&self, r: &M, n: usize) {
        let tail = self.tail(r);
        // Line 2: set up the node (next = NULL, prior = tail).
        st(r, n + NEXT, 0);
        st(r, n + PREV, tail);
        r.flush(n, 16);
        // Line 4: lastTail = tail.
        st(r, self.hdr + LAST_TAIL, tail);
        r.flush(self.hdr + LAST_TAIL, 8);
        r.fence();
        // Line 5: the critical update.
        st(r, self.hdr + TO_APPEND, n);
        r.persist(self.hdr + TO_APPEND, 8);
        // Lines 6-8.
        self.redo_append(r, n, tail);
        // Line 10.
        st(r, self.hdr + TO_APPEND, 0);
        r.persist(self.hdr + TO_APPEND, 8);
    }

    /// Lines 6-8 of Alg. 1, from `last_tail`: idempotent.
    fn redo_append<M: PMem + ?Sized>(&self, r: &M, n: usize, last_tail: usize) {
        if last_tail == 0 {
            st(r, self.hdr + HEAD, n);
        } else {
            st(r, last_tail + NEXT, n);
            r.flush(last_tail + NEXT, 8);
        }
        st(r, self.hdr + TAIL, n);
        r.flush(self.hdr, 16);
        r.fence();
    }

    /// Atomic removal of node `n` (REWIND §3.2 "Removal").
    pub fn remove<M: PMem + ?Sized>(&self, r: &M, n: usize) {
        st(r, self.hdr + TO_REMOVE, n);
        r.persist(self.hdr + TO_REMOVE, 8);
        self.redo_remove(r, n);
        st(r, self.hdr + TO_REMOVE, 0);
        r.persist(self.hdr + TO_REMOVE, 8);
    }

    /// Unlink `n` using its own (unchanged) `next`/`prev`: idempotent.
    fn redo_remove<M: PMem + ?Sized>(&self, r: &M, n: usize) {
        let p = ld(r, n + PREV);
        let x = ld(r, n + NEXT);
        if p == 0 {
            st(r, self.hdr + HEAD, x);
        } else {
            st(r, p + NEXT, x);
            r.flush(p + NEXT, 8);
        }
        if x == 0 {
            st(r, self.hdr + TAIL, p);
        } else {
            st(r, x + PREV, p);
            r.flush(x + PREV, 8);
        }
        r.flush(self.hdr, 16);
        r.fence();
    }

    /// ADLL recovery: finish the interrupted append or removal, if any. `valid` says which
    /// offsets are nodes of this list; a pending operation naming anything else (damage) is
    /// refused before anything is stored, with a description of the damage.
    pub fn recover<M: PMem + ?Sized>(
        &self,
        r: &M,
        valid: impl Fn(usize) -> bool,
    ) -> Result<(), AdllError> {
        let node_or_null = |n: usize| n == 0 || valid(n);
        let n = ld(r, self.hdr + TO_APPEND);
        if n != 0 {
            let last_tail = ld(r, self.hdr + LAST_TAIL);
            if !valid(n) || !node_or_null(last_tail) {
                return Err(AdllError::PendingAppend { node: n, last_tail });
            }
            // Line 2 of Alg. 1 was persisted before toAppend; make sure the node's own links
            // are what the append set (a torn write of them cannot happen: they were fenced).
            self.redo_append(r, n, last_tail);
            st(r, self.hdr + TO_APPEND, 0);
            r.persist(self.hdr + TO_APPEND, 8);
        }
        let n = ld(r, self.hdr + TO_REMOVE);
        if n != 0 {
            if !valid(n) || !node_or_null(ld(r, n + PREV)) || !node_or_null(ld(r, n + NEXT)) {
                return Err(AdllError::PendingRemoval { node: n });
            }
            self.redo_remove(r, n);
            st(r, self.hdr + TO_REMOVE, 0);
            r.persist(self.hdr + TO_REMOVE, 8);
        }
        Ok(())
    }

    /// The nodes from head to tail, checking that every node lies in `valid` and the `prev`
    /// links mirror the `next` links. `Err` names the damage.
    pub fn nodes<M: PMem + ?Sized>(
        &self,
        r: &M,
        valid: impl Fn(usize) -> bool,
        limit: usize,
    ) -> Result<Vec<usize>, AdllError> {
        let mut out = Vec::new();
        let mut prev = 0;
        let mut n = self.head(r);
        while n != 0 {
            if !valid(n) {
                return Err(AdllError::ForeignNode { node: n });
            }
            if ld(r, n + PREV) != prev {
                return Err(AdllError::BadPrev {
                    node: n,
                    prev: ld(r, n + PREV),
                    expected: prev,
                });
            }
            out.push(n);
            if out.len() > limit {
                return Err(AdllError::Cycle);
            }
            prev = n;
            n = ld(r, n + NEXT);
        }
        if self.tail(r) != prev {
            return Err(AdllError::BadTail {
                tail: self.tail(r),
                last: prev,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use braid_pmem::{CrashMode, CrashSim, PmemConfig};

    const NODES: usize = 1024;

    fn valid(n: usize) -> bool {
        (NODES..NODES + 64 * 16).contains(&n) && n.is_multiple_of(64)
    }

    fn list(r: &Region) -> Vec<usize> {
        Adll { hdr: 0 }.nodes(r, valid, 64).unwrap()
    }

    /// Crash at every persist event of an append and of a removal; recovery (itself crashed
    /// at every point, then recovered again) leaves the list before or after the operation.
    #[test]
    fn every_crash_point_is_atomic() {
        let l = Adll { hdr: 0 };
        for op in 0..2 {
            let base = CrashSim::region(4096, PmemConfig::default());
            l.format(&base);
            for i in 0..3 {
                l.append(&base, NODES + 64 * i);
            }
            let before = list(&base);
            let mut k = 0;
            loop {
                let r = base.crash(CrashMode::DropUnpersisted).unwrap();
                let start = r.persist_events();
                r.freeze_after(k).unwrap();
                if op == 0 {
                    l.append(&r, NODES + 64 * 5);
                } else {
                    l.remove(&r, NODES + 64);
                }
                let done = r.persist_events() - start <= k;
                // A frozen image is exact with DropUnpersisted; KeepRandom would also keep
                // stores made after the crash point, so it is used only once the operation
                // has returned (the program really stopped there).
                let mut modes = vec![CrashMode::DropUnpersisted];
                if done {
                    modes.push(CrashMode::KeepRandom {
                        seed: k,
                        keep_probability: 0.5,
                    });
                }
                for mode in modes {
                    let c = r.crash(mode).unwrap();
                    // Crash recovery itself at every point once.
                    for j in 0..6 {
                        let c2 = c.crash(CrashMode::DropUnpersisted).unwrap();
                        c2.freeze_after(j).unwrap();
                        l.recover(&c2, valid).unwrap();
                        let c3 = c2.crash(CrashMode::DropUnpersisted).unwrap();
                        l.recover(&c3, valid).unwrap();
                        let got = list(&c3);
                        let mut after = before.clone();
                        if op == 0 {
                            after.push(NODES + 64 * 5);
                        } else {
                            after.retain(|&n| n != NODES + 64);
                        }
                        assert!(got == before || got == after, "op {op} k {k}: {got:?}");
                        if done {
                            assert_eq!(got, after, "op {op} k {k}: completed op lost");
                        }
                    }
                }
                if done {
                    break;
                }
                k += 1;
            }
        }
    }
}
