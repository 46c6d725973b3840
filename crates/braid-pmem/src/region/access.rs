//! Loads and stores: bounds and alignment checks, plain and streaming (non-temporal) copies,
//! fills, and the 8-byte atomic accessors, on mapped and simulated regions alike (a simulated
//! region's live image is read and, under ADR, written through the same atomics; see the
//! module documentation of `region`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::Mode;
use super::Region;
use super::durability::lines_in;
#[cfg(doc)]
use crate::Media;
use crate::crash::Src;
use crate::delay::busy_wait_ns;
use crate::persist;

#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn out_of_range(off: usize, len: usize, size: usize) -> ! {
    panic!(
        "braid-pmem: access of {len} bytes at offset {off} is outside the region of {size} bytes \
         (caller bug: offsets are relative to the usable area)"
    )
}

#[cold]
#[inline(never)]
#[track_caller]
pub(super) fn misaligned(off: usize) -> ! {
    panic!(
        "braid-pmem: 8-byte atomic access at offset {off}, which is not a multiple of 8 (caller bug)"
    )
}

impl Region {
    #[inline]
    #[track_caller]
    pub(super) fn bounds(&self, off: usize, len: usize) {
        let size = self.inner.len;
        if off > size || len > size - off {
            out_of_range(off, len, size);
        }
    }

    /// An aligned, in-bounds word at `off`: one test of the alignment and one compare with
    /// the precomputed end of the whole words.
    #[inline]
    #[track_caller]
    pub(super) fn check_word(&self, off: usize) {
        if !off.is_multiple_of(8) || off >= self.inner.word_end {
            self.bad_word(off);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn bad_word(&self, off: usize) -> ! {
        if !off.is_multiple_of(8) {
            misaligned(off);
        }
        out_of_range(off, 8, self.inner.len)
    }

    /// Copy `src` to `off` with plain (cached) stores. Durable after `persist` of the range
    /// (ADR) or at once (eADR; with [`Media::Msync`] after `flush`, which writes the page cache
    /// back).
    ///
    /// Race-free: the bytes are stored through aligned 8-byte atomics (see the module
    /// documentation), so a concurrent access to the same bytes is a logical error, not
    /// undefined behaviour.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn write(&self, off: usize, src: &[u8]) {
        self.bounds(off, src.len());
        let inner = &*self.inner;
        if inner.sim_stores
            && let Some(sim) = &inner.sim
        {
            sim.write(off, src.len(), Src::Bytes(src));
            return;
        }
        self.store_bytes(off, src);
    }

    /// Copy `src` to `off` with non-temporal (streaming) stores, bypassing the cache. The data
    /// is durable after the next [`Region::fence`] by the same thread; no flush is needed
    /// (with [`Media::Msync`] the range is fenced and written back with `msync` here already).
    /// Each touched cache line pays the emulated write delay.
    ///
    /// Contract: the 8-byte words wholly inside the range are written with SIMD streaming
    /// stores, which the Rust memory model counts as non-atomic, so no other thread may access
    /// those bytes (read or write, through any accessor) while this call runs: that would be a
    /// data race. Partial words at either end are written atomically like [`Region::write`],
    /// so writers of disjoint ranges may share a word. Callers stream only into space they own
    /// exclusively (a reserved log range). Volatile (anonymous) regions get a plain atomic
    /// [`Region::write`] and no such restriction.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn write_nt(&self, off: usize, src: &[u8]) {
        self.bounds(off, src.len());
        let inner = &*self.inner;
        let n = src.len();
        if inner.mode == Mode::Volatile {
            self.store_bytes(off, src);
            return;
        }
        inner.counters.add_nt_bytes(n as u64);
        if let Some(sim) = &inner.sim {
            sim.write_nt(off, n, Src::Bytes(src));
        } else if n > 0 {
            // Partial words at the ends through atomics, written back like plain stores (the
            // usable area is page-aligned, so usable-offset alignment is address alignment).
            let head = (off.wrapping_neg() & 7).min(n);
            let body_end = head + ((n - head) & !7);
            if head > 0 {
                self.store_bytes(off, &src[..head]);
                self.flush_raw(inner.nt_flush, off, head);
            }
            if body_end > head {
                // SAFETY: `[off + head, off + body_end)` is in bounds of the live mapping
                // (checked above), 8-byte aligned, a multiple of 8 long and disjoint from
                // `src`, a shared slice the caller holds (the mapping hands out no slices);
                // no other thread accesses these words meanwhile (this function's documented
                // contract); `nt_flush` was checked supported at creation (and is not used
                // for an aligned range anyway) and `avx512` was detected.
                unsafe {
                    persist::copy_nt(
                        inner.base.add(off + head),
                        src[head..body_end].as_ptr(),
                        body_end - head,
                        inner.nt_flush,
                        inner.avx512,
                    )
                };
            }
            if body_end < n {
                self.store_bytes(off + body_end, &src[body_end..]);
                self.flush_raw(inner.nt_flush, off + body_end, n - body_end);
            }
            if inner.msync {
                // Streaming stores reach memory (hence the page cache) only once fenced.
                persist::sfence();
                self.msync_range(off, n);
            }
        }
        if inner.delay_ns != 0 {
            busy_wait_ns(inner.delay_ns.saturating_mul(lines_in(off, n) as u64));
        }
    }

    /// Copy `dst.len()` bytes at `off` into `dst`.
    ///
    /// Race-free: the bytes are loaded through aligned 8-byte atomics (see the module
    /// documentation).
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        self.bounds(off, dst.len());
        self.load_bytes(off, dst);
    }

    /// Start loading the cache lines of `[off, off + len)` (at most `max_lines` of them), for a
    /// loop that reads them soon ([`crate::prefetch::prefetch_lines`]): a hint, which reads no
    /// data at the language level. Out-of-range parts are ignored; a simulated region does
    /// nothing.
    #[inline]
    pub fn prefetch(&self, off: usize, len: usize, max_lines: usize) {
        let inner = &*self.inner;
        if inner.sim.is_some() || off >= inner.len {
            return;
        }
        let len = len.min(inner.len - off);
        // `base + off` stays inside the mapping (`off < len` of the usable area).
        crate::prefetch::prefetch_lines(inner.base.wrapping_add(off), len, max_lines);
    }

    /// Set `len` bytes at `off` to `byte` with plain stores.
    ///
    /// Race-free: the bytes are stored through aligned 8-byte atomics (see the module
    /// documentation).
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[track_caller]
    pub fn fill(&self, off: usize, len: usize, byte: u8) {
        self.bounds(off, len);
        let inner = &*self.inner;
        if inner.sim_stores
            && let Some(sim) = &inner.sim
        {
            sim.write(off, len, Src::Fill(byte));
            return;
        }
        let pattern = [byte; 8];
        let head = (off.wrapping_neg() & 7).min(len);
        if head > 0 {
            self.merge(off, &pattern[..head]);
        }
        let words = (len - head) / 8;
        let word = u64::from_ne_bytes(pattern);
        for k in 0..words {
            self.word_of(off + head + 8 * k)
                .store(word, Ordering::Relaxed);
        }
        let done = head + 8 * words;
        if done < len {
            self.merge(off + done, &pattern[..len - done]);
        }
    }

    /// Store `src` at usable offset `off` (range checked; not a simulated eADR region) through
    /// aligned 8-byte atomics: whole words with relaxed stores, a partial word at either end
    /// with a compare-and-swap that replaces only the range's bytes.
    #[inline]
    pub(super) fn store_bytes(&self, off: usize, src: &[u8]) {
        let head = (off.wrapping_neg() & 7).min(src.len());
        let (h, rest) = src.split_at(head);
        if !h.is_empty() {
            self.merge(off, h);
        }
        let mut at = off + head;
        let mut words = rest.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.word_of(at)
                .store(u64::from_ne_bytes(b), Ordering::Relaxed);
            at += 8;
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            self.merge(at, tail);
        }
    }

    /// Store `bytes` (at most 8, within one aligned word) at `off` by compare-and-swap of the
    /// word, leaving its other bytes as they are.
    #[inline]
    pub(super) fn merge(&self, off: usize, bytes: &[u8]) {
        let s = off & 7;
        debug_assert!(s + bytes.len() <= 8);
        let put = |old: u64| {
            let mut b = old.to_ne_bytes();
            b[s..s + bytes.len()].copy_from_slice(bytes);
            Some(u64::from_ne_bytes(b))
        };
        // The closure always returns Some, so the update cannot fail.
        let _ = self
            .word_of(off)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, put);
    }

    /// Load the bytes at usable offset `off` (range checked) into `dst` through aligned 8-byte
    /// atomic loads.
    #[inline]
    pub(super) fn load_bytes(&self, off: usize, dst: &mut [u8]) {
        let head = (off.wrapping_neg() & 7).min(dst.len());
        let (h, rest) = dst.split_at_mut(head);
        if !h.is_empty() {
            let s = off & 7;
            let b = self.word_of(off).load(Ordering::Relaxed).to_ne_bytes();
            h.copy_from_slice(&b[s..s + head]);
        }
        let mut at = off + head;
        let mut words = rest.chunks_exact_mut(8);
        for w in &mut words {
            w.copy_from_slice(&self.word_of(at).load(Ordering::Relaxed).to_ne_bytes());
            at += 8;
        }
        let tail = words.into_remainder();
        if !tail.is_empty() {
            let n = tail.len();
            tail.copy_from_slice(&self.word_of(at).load(Ordering::Relaxed).to_ne_bytes()[..n]);
        }
    }

    /// Atomic (acquire) load of the native-endian u64 at `off`.
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or out of bounds (caller bugs).
    #[inline]
    #[track_caller]
    pub fn load_u64(&self, off: usize) -> u64 {
        self.check_word(off);
        self.atomic(off).load(Ordering::Acquire)
    }

    /// The `n` aligned words from `off` as one read-only view ([`Words`]), checked once here
    /// (alignment and bounds) instead of on every load: for a reader of a small object (a tree
    /// node) that loads many of its words.
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or the words do not all lie in the region (caller bugs).
    #[inline]
    #[track_caller]
    pub fn words(&self, off: usize, n: usize) -> Words<'_> {
        let end = self.inner.word_end;
        if !off.is_multiple_of(8) || off > end || n > (end - off) / 8 {
            self.bad_words(off, n);
        }
        // SAFETY: `base + off` is 8-byte aligned (`base` is page- or word-aligned, `off` a
        // multiple of 8) and the `n` words from it end at or before `word_end`, inside the
        // memory `base` covers, which lives as long as `self`. `AtomicU64` has the size and
        // alignment of `u64`. The view only loads through these atomics (the same aligned
        // 8-byte atomic accesses as `load_u64`), so it races with nothing but `write_nt`'s
        // streamed words, whose contract excludes concurrent access.
        let w = unsafe {
            std::slice::from_raw_parts(self.inner.base.add(off).cast::<AtomicU64>().cast_const(), n)
        };
        Words { w }
    }

    /// Store `src` at `off` (a multiple of 8), word by word, as consecutive [`Region::write`]s
    /// of the words would (plain stores, durable after `persist`), with one bounds check: for
    /// a writer of whole words (a log record) with no bytes to assemble.
    ///
    /// Race-free: each word is stored through an aligned 8-byte atomic (relaxed).
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or the words do not all lie in the region (caller bugs).
    #[inline]
    #[track_caller]
    pub fn store_words(&self, off: usize, src: &[u64]) {
        let dst = self.words(off, src.len()).w;
        let inner = &*self.inner;
        if inner.sim_stores
            && let Some(sim) = &inner.sim
        {
            for (i, &v) in src.iter().enumerate() {
                sim.store(off + 8 * i, v);
            }
            return;
        }
        for (d, &v) in dst.iter().zip(src) {
            d.store(v, Ordering::Relaxed);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn bad_words(&self, off: usize, n: usize) -> ! {
        if !off.is_multiple_of(8) {
            misaligned(off);
        }
        out_of_range(off, n.saturating_mul(8), self.inner.len)
    }

    /// Atomic (release) store of `v` at `off`. Under ADR it still needs `persist` to be durable.
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or out of bounds (caller bugs).
    #[inline]
    #[track_caller]
    pub fn store_u64(&self, off: usize, v: u64) {
        self.check_word(off);
        let inner = &*self.inner;
        if inner.sim_stores
            && let Some(sim) = &inner.sim
        {
            sim.store(off, v);
            return;
        }
        self.atomic(off).store(v, Ordering::Release);
    }

    /// Atomic compare-and-swap (acq-rel) of the u64 at `off`: `Ok(old)` if it held `old` and
    /// now holds `new`, else `Err(current)`.
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or out of bounds (caller bugs).
    #[inline]
    #[track_caller]
    pub fn cas_u64(&self, off: usize, old: u64, new: u64) -> Result<u64, u64> {
        self.check_word(off);
        let inner = &*self.inner;
        if inner.sim_stores
            && let Some(sim) = &inner.sim
        {
            return sim.cas(off, old, new);
        }
        self.atomic(off)
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// The in-bounds, 8-byte-aligned word at `off`.
    #[inline]
    pub(super) fn atomic(&self, off: usize) -> &AtomicU64 {
        self.word_of(off)
    }

    /// The aligned 8-byte word holding usable byte `pos`, which the caller checked is in
    /// bounds (`pos < len`): of the mapping, or of a simulated region's live image.
    #[inline]
    pub(super) fn word_of(&self, pos: usize) -> &AtomicU64 {
        debug_assert!(pos < self.inner.len);
        // SAFETY: `base` is page-aligned (a mapping) or word-aligned (a simulated live image),
        // so `base + (pos & !7)` is 8-byte aligned; the word starts at or before `pos`, inside
        // the usable area, and ends at the next multiple of 8, which the memory covers (a
        // mapping's length is a multiple of 8, see `FileMap::new` and `anonymous`; a live
        // image holds whole lines). The memory lives as long as `self`. Every access to the mapping is an
        // aligned 8-byte atomic except the streamed words of `write_nt`, whose contract
        // excludes concurrent access to them, so this atomic never races with a non-atomic or
        // differently sized access.
        unsafe { AtomicU64::from_ptr(self.inner.base.add(pos & !7).cast::<u64>()) }
    }
}

/// A read-only view of consecutive aligned words of a [`Region`] (from [`Region::words`]),
/// bounds-checked once when made: each [`Words::get`] is an acquire load, like
/// [`Region::load_u64`], with only the index checked against the view's length.
#[derive(Clone, Copy)]
pub struct Words<'a> {
    w: &'a [AtomicU64],
}

impl Words<'_> {
    /// Word `i` of the view (atomic acquire load).
    ///
    /// # Panics
    /// If `i` is not below [`Words::len`] (a caller bug).
    #[inline]
    #[track_caller]
    pub fn get(&self, i: usize) -> u64 {
        self.w[i].load(Ordering::Acquire)
    }

    /// Words in the view.
    #[inline]
    pub fn len(&self) -> usize {
        self.w.len()
    }

    /// Whether the view holds no word.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.w.is_empty()
    }

    /// Start loading `lines` cache lines from the one holding word `i` of the view, for a
    /// reader that loads them soon: a hint (as [`crate::prefetch_lines`]), which reads no word
    /// at the language level and never faults, so the range is not checked (a part outside
    /// the view is asked for and harmlessly dropped or fetched). A reader of a node that asks
    /// for all of the node's lines when it reaches it waits for their misses together instead
    /// of one after another.
    #[inline]
    pub fn prefetch_lines(&self, i: usize, lines: usize) {
        let at = self.w.as_ptr().wrapping_add(i).cast::<u8>();
        crate::prefetch::prefetch_from_line(at, lines);
    }
}

impl std::fmt::Debug for Words<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Words").field("len", &self.w.len()).finish()
    }
}
