//! The persistent allocator: segregated size classes over a heap that grows by a persistent
//! top-of-heap word.
//!
//! REWIND §4.3 needs allocation inside transactions and de-allocation deferred through DELETE
//! records; the paper leaves the allocator itself to the OS/NVM heap ([5, 31]). Choices made
//! here so that no abort or crash can leak or double-free a block:
//!
//! * Every block starts with an 8-byte header word: a magic, the size class and an
//!   "allocated" bit. The header is the allocator's only persistent per-block state.
//! * A transactional allocation pops a block from a volatile free list and sets its allocated
//!   bit with an ordinary logged write (an UPDATE record), so the allocation commits, rolls
//!   back, is redone and undone together with the transaction that made it.
//! * A free is a DELETE record; the header is cleared (and persisted) only once the freeing
//!   transaction has committed, before its records are cleared (force) or by the checkpoint
//!   that removes them (no-force), and at recovery for committed transactions whose records
//!   survived. Clearing a header is idempotent, and the block re-enters a free list only after
//!   the DELETE record is gone, so it cannot be handed out twice.
//! * The heap grows outside transactions: new blocks get a free header, persisted, before the
//!   top-of-heap word moves past them (one fence each), so a crash leaves either no new block
//!   or a free one. Growth is never undone; a block carved for an aborted transaction stays in
//!   the free lists.
//! * The volatile free lists are rebuilt at open by scanning the headers from the heap start
//!   to the top, after log recovery has restored every header.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use braid_pmem::Region;

use crate::{CheckError, Damage, RewindError};

/// Block sizes (header included).
pub(crate) const CLASSES: [usize; 29] = [
    32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
    16384, 24576, 32768, 49152, 65536, 98304, 131072, 196608, 262144, 524288, 1048576,
];
/// Bytes of a block header.
pub(crate) const BLOCK_HDR: usize = 8;
const MAGIC: u64 = 0xB10C << 48;
const MAGIC_MASK: u64 = 0xFFFF << 48;
const ALLOCATED: u64 = 1 << 8;
/// Target bytes carved at once when a class runs out.
const CARVE_BYTES: usize = 64 * 1024;

/// Header word of a block of `class`.
pub(crate) fn header(class: usize, allocated: bool) -> u64 {
    MAGIC | class as u64 | if allocated { ALLOCATED } else { 0 }
}

/// Decode a header word: `(class, allocated)`.
pub(crate) fn parse_header(w: u64) -> Option<(usize, bool)> {
    if w & MAGIC_MASK != MAGIC || w & !(MAGIC_MASK | ALLOCATED | 0xFF) != 0 {
        return None;
    }
    let class = (w & 0xFF) as usize;
    (class < CLASSES.len()).then_some((class, w & ALLOCATED != 0))
}

/// Class for `size` payload bytes.
pub(crate) fn class_for(size: usize) -> Option<usize> {
    let need = size.max(8).checked_add(BLOCK_HDR)?;
    CLASSES.iter().position(|&c| c >= need)
}

struct State {
    free: Vec<Vec<usize>>,
    top: usize,
    /// Blocks whose DELETE record is logged but not yet processed.
    pending_free: HashSet<usize>,
}

/// Summary of the heap for leak checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapReport {
    /// Payload offsets and usable sizes of allocated blocks, ascending.
    pub allocated: Vec<(u64, usize)>,
    /// Number of free blocks.
    pub free_blocks: usize,
    /// Bytes between the heap start and the top of the heap.
    pub used_bytes: usize,
}

pub(crate) struct Allocator {
    r: Region,
    start: usize,
    end: usize,
    /// Offset of the persistent top-of-heap word.
    top_word: usize,
    st: Mutex<State>,
}

impl Allocator {
    pub fn new(r: Region, start: usize, end: usize, top_word: usize) -> Allocator {
        Allocator {
            r,
            start,
            end,
            top_word,
            st: Mutex::new(State {
                free: vec![Vec::new(); CLASSES.len()],
                top: start,
                pending_free: HashSet::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The volatile lists are updated only after each persistent step; poisoning carries
        // no information.
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pool creation: empty heap.
    pub fn format(&self) {
        self.r.store_u64(self.top_word, self.start as u64);
        self.r.persist(self.top_word, 8);
        let mut st = self.lock();
        st.top = self.start;
        st.free.iter_mut().for_each(Vec::clear);
    }

    /// Rebuild the free lists from the headers (after recovery).
    pub fn rebuild(&self) -> Result<(), RewindError> {
        let top = self.r.load_u64(self.top_word) as usize;
        if top < self.start || top > self.end {
            return Err(Damage::HeapTop {
                top: top as u64,
                start: self.start as u64,
                end: self.end as u64,
            }
            .into());
        }
        let mut st = self.lock();
        st.free.iter_mut().for_each(Vec::clear);
        st.pending_free.clear();
        st.top = top;
        let mut b = self.start;
        while b < top {
            let w = self.r.load_u64(b);
            let (class, allocated) = parse_header(w).ok_or(Damage::BlockHeader {
                at: b as u64,
                word: w,
            })?;
            if !allocated {
                st.free[class].push(b);
            }
            b += CLASSES[class];
        }
        if b != top {
            return Err(Damage::HeapOverrun { top: top as u64 }.into());
        }
        // Hand out low addresses first.
        st.free.iter_mut().for_each(|l| l.reverse());
        Ok(())
    }

    /// Take a free block able to hold `size` bytes (its header still says free). Returns the
    /// block offset and its class.
    pub fn take(&self, size: usize) -> Result<(usize, usize), RewindError> {
        let class = class_for(size).ok_or(RewindError::TooLarge {
            size,
            max: CLASSES[CLASSES.len() - 1] - BLOCK_HDR,
        })?;
        let mut st = self.lock();
        if let Some(b) = st.free[class].pop() {
            return Ok((b, class));
        }
        self.carve(&mut st, class)?;
        st.free[class]
            .pop()
            .map(|b| (b, class))
            .ok_or(RewindError::OutOfMemory { size })
    }

    /// Grow the heap by a run of free blocks of `class`.
    fn carve(&self, st: &mut State, class: usize) -> Result<(), RewindError> {
        let size = CLASSES[class];
        let room = (self.end - st.top) / size;
        let n = (CARVE_BYTES / size).clamp(1, 64).min(room);
        if n == 0 {
            return Err(RewindError::OutOfMemory {
                size: size - BLOCK_HDR,
            });
        }
        let r = &self.r;
        for i in 0..n {
            let b = st.top + i * size;
            r.store_u64(b, header(class, false));
            r.flush(b, 8);
        }
        r.fence();
        let new_top = st.top + n * size;
        r.store_u64(self.top_word, new_top as u64);
        r.persist(self.top_word, 8);
        for i in (0..n).rev() {
            st.free[class].push(st.top + i * size);
        }
        st.top = new_top;
        Ok(())
    }

    /// Give a block back to the free lists (volatile: its header must already say free).
    pub fn release(&self, block: usize) {
        let w = self.r.load_u64(block);
        if let Some((class, false)) = parse_header(w) {
            let mut st = self.lock();
            st.pending_free.remove(&block);
            st.free[class].push(block);
        }
    }

    /// Persistently mark a block free (idempotent); not yet back in the free lists.
    pub fn mark_free(&self, block: usize) {
        if let Some((class, true)) = parse_header(self.r.load_u64(block)) {
            self.r.store_u64(block, header(class, false));
            self.r.flush(block, 8);
        }
    }

    /// Register a pending free of the block of `payload`. The caller has checked that the
    /// block is allocated as its transaction sees it: under the Batch layout the header store
    /// of a block allocated by the same transaction may still be buffered, so the header in
    /// memory cannot be trusted here.
    pub fn begin_free(&self, payload: u64) -> Result<usize, RewindError> {
        let block = self.heap_block(payload)?;
        let mut st = self.lock();
        if !st.pending_free.insert(block) {
            return Err(RewindError::DoubleFree(payload));
        }
        Ok(block)
    }

    /// Whether `off` lies in the heap (headers included).
    pub fn in_heap(&self, off: usize) -> bool {
        off >= self.start && off < self.end
    }

    /// The block a payload pointer would belong to, if it lies in the heap (its header is
    /// not looked at).
    pub fn heap_block(&self, payload: u64) -> Result<usize, RewindError> {
        let p = payload as usize;
        if p < self.start + BLOCK_HDR || p >= self.end || !p.is_multiple_of(8) {
            return Err(RewindError::BadPointer(payload));
        }
        Ok(p - BLOCK_HDR)
    }

    /// Forget a pending free (the freeing transaction rolled back).
    pub fn cancel_free(&self, block: usize) {
        self.lock().pending_free.remove(&block);
    }

    /// The block of an allocated payload pointer.
    pub fn block_of(&self, payload: u64) -> Result<usize, RewindError> {
        let block = self.heap_block(payload)?;
        match parse_header(self.r.load_u64(block)) {
            Some((_, true)) => Ok(block),
            Some((_, false)) => Err(RewindError::DoubleFree(payload)),
            None => Err(RewindError::BadPointer(payload)),
        }
    }

    /// Usable bytes of the block at `block`.
    pub fn usable(&self, block: usize) -> usize {
        parse_header(self.r.load_u64(block)).map_or(0, |(c, _)| CLASSES[c] - BLOCK_HDR)
    }

    /// Walk the heap.
    pub fn report(&self) -> Result<HeapReport, RewindError> {
        let top = self.r.load_u64(self.top_word) as usize;
        let mut rep = HeapReport {
            used_bytes: top.saturating_sub(self.start),
            ..HeapReport::default()
        };
        let mut b = self.start;
        while b < top {
            let w = self.r.load_u64(b);
            let (class, allocated) = parse_header(w).ok_or(Damage::BlockHeader {
                at: b as u64,
                word: w,
            })?;
            if allocated {
                rep.allocated
                    .push(((b + BLOCK_HDR) as u64, CLASSES[class] - BLOCK_HDR));
            } else {
                rep.free_blocks += 1;
            }
            b += CLASSES[class];
        }
        Ok(rep)
    }

    /// Check that the volatile free lists hold exactly the free blocks, once each.
    pub fn check_free_lists(&self) -> Result<(), CheckError> {
        let st = self.lock();
        let mut seen = HashSet::new();
        for (class, list) in st.free.iter().enumerate() {
            for &b in list {
                if !seen.insert(b) {
                    return Err(CheckError::FreeTwice { block: b });
                }
                match parse_header(self.r.load_u64(b)) {
                    Some((c, false)) if c == class => {}
                    h => {
                        return Err(CheckError::FreeHeader {
                            block: b,
                            header: h,
                            class,
                        });
                    }
                }
            }
        }
        let rep = self.report().map_err(|e| CheckError::Heap(Box::new(e)))?;
        if seen.len() != rep.free_blocks {
            return Err(CheckError::FreeCount {
                heap: rep.free_blocks,
                lists: seen.len(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_classes() {
        assert_eq!(parse_header(header(3, true)), Some((3, true)));
        assert_eq!(parse_header(header(0, false)), Some((0, false)));
        assert_eq!(parse_header(0), None);
        assert_eq!(class_for(1), Some(0));
        assert_eq!(class_for(24), Some(0));
        assert_eq!(class_for(25), Some(1));
        assert_eq!(class_for(1 << 20), None);
    }
}
