//! Making stores durable: cache-line write-back (`flush`), the store fence, `persist`, and the
//! `msync` write-back of file regions whose media needs it.

use std::sync::atomic::Ordering;

use super::{Memory, Mode, Region};
#[cfg(doc)]
use crate::Media;
use crate::delay::busy_wait_ns;
use crate::persist;
use crate::{CACHE_LINE, FlushKind, HEADER_SIZE, PmemError, PmemStats};
/// Number of cache lines overlapping `[off, off + len)` (the usable area is line-aligned).
#[inline]
pub(super) fn lines_in(off: usize, len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (off + len - 1) / CACHE_LINE - off / CACHE_LINE + 1
    }
}

impl Region {
    /// `msync(MS_SYNC)` over the page-aligned span of usable bytes `[off, off + len)` of a file
    /// region (range checked by the caller); counts it and keeps the first failure.
    #[inline(never)]
    pub(super) fn msync_range(&self, off: usize, len: usize) {
        let inner = &*self.inner;
        let Memory::File(map) = &inner.mem else {
            return;
        };
        let from = HEADER_SIZE + off;
        let start = from - from % inner.page;
        inner.counters.add_msync();
        let r = match inner.inject_msync.load(Ordering::Relaxed) {
            0 => map.sync(start, from + len - start),
            _ => match inner.inject_msync.swap(0, Ordering::SeqCst) {
                0 => map.sync(start, from + len - start),
                errno => Err(std::io::Error::from_raw_os_error(errno)),
            },
        };
        if let Err(e) = r {
            // Only the first failure is kept; a later one adds nothing.
            let _ = inner.msync_error.set(e);
        }
    }

    /// Write back every cache line overlapping `[off, off + len)` (ADR). A no-op, neither
    /// counted nor delayed, under eADR and on volatile regions. Durable only after a fence.
    ///
    /// With [`Media::Msync`] (in both domains) the page-aligned span of the range is also
    /// written back to the file with `msync(MS_SYNC)` before this returns; a failure is kept
    /// for [`Region::check`].
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn flush(&self, off: usize, len: usize) {
        self.bounds(off, len);
        let inner = &*self.inner;
        if len == 0 {
            return;
        }
        if inner.mode == Mode::Adr {
            let lines = lines_in(off, len);
            inner.counters.add_lines(lines as u64);
            if let Some(sim) = &inner.sim {
                sim.flush(off, len);
            } else {
                self.flush_raw(inner.flush, off, len);
            }
            if inner.delay_ns != 0 {
                busy_wait_ns(inner.delay_ns.saturating_mul(lines as u64));
            }
        }
        if inner.msync {
            self.msync_range(off, len);
        }
    }

    /// Write back the cache line holding each offset of `offs` (ADR): the lines a caller
    /// dirtied, scattered, in one call, so that clean lines between them are not written back
    /// and the call is counted once (each line is counted in
    /// [`PmemStats::lines_flushed`]). A line named twice is written back twice; pass distinct
    /// lines. Durable only after a fence. A no-op under eADR and on volatile regions, as
    /// [`Region::flush`]; with [`Media::Msync`] each page holding such a line is written back
    /// with `msync` (a page is synced once per run of its offsets in `offs`).
    ///
    /// # Panics
    /// If an offset is out of bounds (a caller bug).
    #[track_caller]
    pub fn flush_lines(&self, offs: &[usize]) {
        let inner = &*self.inner;
        for &off in offs {
            if off >= inner.len {
                super::access::out_of_range(off, 1, inner.len);
            }
        }
        if offs.is_empty() {
            return;
        }
        if inner.mode == Mode::Adr {
            let lines = offs.len() as u64;
            inner.counters.add_lines(lines);
            if let Some(sim) = &inner.sim {
                for &off in offs {
                    sim.flush(off, 1);
                }
            } else {
                for &off in offs {
                    self.flush_raw(inner.flush, off, 1);
                }
            }
            if inner.delay_ns != 0 {
                busy_wait_ns(inner.delay_ns.saturating_mul(lines));
            }
        }
        if inner.msync {
            // One msync per run of offsets in one page, over the run's lines.
            let page_of = |off: usize| (HEADER_SIZE + off) / inner.page;
            let line_end = |off: usize| ((off | (CACHE_LINE - 1)) + 1).min(inner.len);
            let mut run: Option<(usize, usize, usize)> = None;
            for &off in offs {
                let line = off & !(CACHE_LINE - 1);
                run = match run {
                    Some((p, lo, hi)) if p == page_of(off) => {
                        Some((p, lo.min(line), hi.max(line_end(off))))
                    }
                    other => {
                        if let Some((_, lo, hi)) = other {
                            self.msync_range(lo, hi - lo);
                        }
                        Some((page_of(off), line, line_end(off)))
                    }
                };
            }
            if let Some((_, lo, hi)) = run {
                self.msync_range(lo, hi - lo);
            }
        }
    }

    /// Issue `kind` for every line of the in-bounds usable range `[off, off + len)` of a mapped
    /// region (no counting, no delay).
    #[inline]
    pub(super) fn flush_raw(&self, kind: FlushKind, off: usize, len: usize) {
        // SAFETY: in-bounds range of the live mapping (checked by the caller); every `kind`
        // used is supported (resolved at creation).
        unsafe { persist::flush_lines(kind, self.inner.base.add(off), len) };
    }

    /// Store fence (SFENCE): earlier flushes and streaming stores of this thread are durable
    /// when it returns. A no-op on volatile regions.
    #[inline]
    pub fn fence(&self) {
        let inner = &*self.inner;
        if inner.mode == Mode::Volatile {
            return;
        }
        inner.counters.add_fence();
        if let Some(sim) = &inner.sim {
            sim.trip_point();
            sim.fence();
        } else {
            persist::sfence();
        }
        let d = inner.fence_delay_ns.load(Ordering::Relaxed);
        if d != 0 {
            busy_wait_ns(d);
        }
    }

    /// Emulate slower fences: every later [`Region::fence`] on a non-volatile region waits
    /// `ns` more (REWIND §5.2's fence sensitivity, Fig. 10, where a fence's cost depends on the
    /// storage architecture). 0 (the default): the CPU's own fence cost.
    pub fn set_fence_delay_ns(&self, ns: u64) {
        self.inner.fence_delay_ns.store(ns, Ordering::Relaxed);
    }

    /// `flush(off, len)` then `fence()`.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn persist(&self, off: usize, len: usize) {
        self.flush(off, len);
        self.fence();
    }

    /// Snapshot of the persistence counters (all zero for volatile regions).
    pub fn stats(&self) -> PmemStats {
        self.inner.counters.snapshot()
    }

    /// Write the whole file's page cache back to storage (`msync(MS_SYNC)`), whatever the
    /// media. A no-op for anonymous and simulated regions. A failure is kept like one in
    /// `flush`: this returns [`Region::check`] after the write-back.
    pub fn msync(&self) -> Result<(), PmemError> {
        if matches!(self.inner.mem, Memory::File(_)) {
            self.msync_range(0, self.inner.len);
        }
        self.check()
    }
}

impl Region {
    /// Write `src` at `off` through the file-system API, as a log kept in a file on NVRAM is
    /// written (NV-Logging's NV-Disk, Huang et al., VLDB 2014, Sec. 3.1: its "interactions with
    /// NVRAM via file system APIs"): `pwrite` into the region file, then `fdatasync`, instead
    /// of stores into the mapping; the bytes are durable when it returns, and the mapping sees
    /// them (a shared mapping of the same file). On the calling thread every line written pays
    /// the emulated write delay and the write's sync pays the fence delay (counted as lines
    /// flushed and one fence). A simulated region stores, writes back and fences (the same
    /// persist events); an anonymous one only stores.
    ///
    /// No other thread may access `[off, off + len)` while it runs (the kernel's copy is not
    /// atomic per word), as for [`Region::write_nt`].
    ///
    /// # Errors
    /// [`PmemError::Io`] if the write or the sync fails; the bytes may then be partly written
    /// and must not be trusted.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[track_caller]
    pub fn write_file(&self, off: usize, src: &[u8]) -> Result<(), PmemError> {
        use std::os::unix::fs::FileExt;
        self.bounds(off, src.len());
        let inner = &*self.inner;
        if src.is_empty() {
            return Ok(());
        }
        let file = match &inner.mem {
            Memory::File(map) => map.file.as_ref(),
            Memory::Anon(_) | Memory::Sim => None,
        };
        let Some(file) = file else {
            // No file to write through: the same effect by stores (a simulated region keeps
            // its persist events).
            self.write(off, src);
            self.persist(off, src.len());
            return Ok(());
        };
        let io = |source| PmemError::Io {
            path: inner.path.clone().unwrap_or_default(),
            source,
        };
        file.write_all_at(src, (HEADER_SIZE + off) as u64)
            .map_err(io)?;
        file.sync_data().map_err(io)?;
        if inner.mode != Mode::Volatile {
            let lines = lines_in(off, src.len()) as u64;
            inner.counters.add_lines(lines);
            inner.counters.add_fence();
            if inner.delay_ns != 0 {
                busy_wait_ns(inner.delay_ns.saturating_mul(lines));
            }
            let d = inner.fence_delay_ns.load(Ordering::Relaxed);
            if d != 0 {
                busy_wait_ns(d);
            }
        }
        Ok(())
    }
}
