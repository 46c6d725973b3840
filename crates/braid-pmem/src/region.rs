//! [`Region`]: a file-backed persistent mapping, anonymous DRAM, or a simulated persistent
//! memory, with bounds-checked plain, streaming and 8-byte atomic accessors and the
//! flush / fence / persist primitives.
//!
//! File layout: a [`HEADER_SIZE`] (4096-byte) header, then the usable area. The header holds
//! the magic `BRAIDRGN`, the format version (u32 LE), four reserved zero bytes, the usable size
//! (u64 LE) and a CRC-32C of those 24 bytes (u32 LE); the rest of the header page is zero.
//! Keeping a whole page for the header keeps the usable area page- (hence cache-line-) aligned.
//! `open` checks, in order: the file is at least a header long and starts with the magic
//! (else [`PmemError::NotARegion`]), the version ([`PmemError::Version`], checked before the CRC
//! since another version may lay its header out differently), the CRC
//! ([`PmemError::CorruptHeader`]), the size the caller expects ([`PmemError::SizeMismatch`]),
//! and that the file really holds that many bytes ([`PmemError::CorruptHeader`]). A longer
//! file is accepted; only the recorded size is mapped.
//!
//! Memory model: the mapping is shared memory written through raw pointers. Concurrent writers
//! must use disjoint byte ranges, and a reader must not race with a writer of the same bytes;
//! overlapping concurrent plain accesses are a caller error (a data race). The 8-byte accessors
//! are atomic (acquire loads, release stores, acq-rel CAS) and may race with each other.
//! Flushing a line that another thread is writing other bytes of is fine: a write-back reads no
//! data at the language level.
//!
//! The hot paths (`write`, `write_nt`, `flush`, `fence`, `persist`) take no lock, allocate
//! nothing and touch no reference count: the handle derefs its `Arc` once and the counters are
//! sharded per thread (see `stats`). Simulated regions take a mutex on persistence events; they
//! are a test tool.
//!
//! Choices where the specification is open: `write_nt` on a volatile region is a plain copy
//! (streaming a DRAM buffer that is about to be read back would only evict it); under eADR
//! `flush` is a no-op that is neither counted nor delayed, while `write_nt` is delayed per line
//! in both domains (the media write still happens); with [`FlushKind::None`] under ADR flushes
//! are counted and delayed but no instruction is issued.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapMut, MmapOptions};

use crate::crash::{Sim, Src};
use crate::delay::busy_wait_ns;
use crate::persist;
use crate::stats::{Counters, PmemStats};
use crate::{
    CACHE_LINE, CrashMode, Domain, FlushKind, HEADER_SIZE, PmemConfig, PmemError, REGION_MAGIC,
    REGION_VERSION,
};

/// Bytes of the header covered by the CRC.
const HEADER_CRC_SPAN: usize = 24;
/// Bytes of the header that carry information.
const HEADER_USED: usize = HEADER_CRC_SPAN + 4;

/// What persistence means for a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// DRAM: flush and fence are no-ops, nothing is counted.
    Volatile,
    Adr,
    Eadr,
}

/// Keeps the memory behind `Inner::base` alive.
enum Memory {
    Map(MmapMut),
    Anon(#[allow(dead_code)] MmapMut),
    Sim,
}

struct Inner {
    /// Start of the usable area (after the header for files). Unused for simulated regions.
    base: *mut u8,
    len: usize,
    mode: Mode,
    /// Resolved write-back instruction for `flush`.
    flush: FlushKind,
    /// Write-back for the plain-stored head/tail of `write_nt` (`None` under eADR).
    nt_flush: FlushKind,
    avx512: bool,
    delay_ns: u64,
    cfg: PmemConfig,
    counters: Counters,
    path: Option<PathBuf>,
    sim: Option<Sim>,
    mem: Memory,
}

// SAFETY: `base` points into memory owned by `mem` (a mapping), which lives as long as `Inner`
// and is never remapped; all accesses through it are bounds-checked and go through raw
// pointers or atomics, and the documented contract (disjoint ranges for concurrent plain
// accesses) rules out data races. Every other field is Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: see `Send` above; shared access only ever happens through the raw-pointer accessors
// whose concurrent use is governed by the documented disjoint-range contract.
unsafe impl Sync for Inner {}

/// A mapped region: file-backed persistent memory, anonymous DRAM, or a CrashSim image.
///
/// Cheap to clone (shared handle); Send + Sync. Concurrent writers must use disjoint ranges;
/// see the module documentation for the memory model. Offsets are relative to the usable area.
#[derive(Clone)]
pub struct Region {
    inner: Arc<Inner>,
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match (&self.inner.mem, self.inner.mode) {
            (Memory::Map(_), _) => "file",
            (Memory::Anon(_), _) => "anonymous",
            (Memory::Sim, _) => "simulated",
        };
        f.debug_struct("Region")
            .field("kind", &kind)
            .field("len", &self.inner.len)
            .field("path", &self.inner.path)
            .field("config", &self.inner.cfg)
            .finish()
    }
}

fn io_err(path: &Path, source: std::io::Error) -> PmemError {
    PmemError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn resolve_flush(cfg: &PmemConfig) -> Result<FlushKind, PmemError> {
    match cfg.flush {
        None => Ok(FlushKind::detect()),
        Some(kind) if kind.is_supported() => Ok(kind),
        Some(kind) => Err(PmemError::FlushUnsupported { kind }),
    }
}

fn encode_header(size: u64) -> [u8; HEADER_USED] {
    let mut h = [0u8; HEADER_USED];
    h[0..8].copy_from_slice(&REGION_MAGIC);
    h[8..12].copy_from_slice(&REGION_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&size.to_le_bytes());
    let crc = crc32c::crc32c(&h[..HEADER_CRC_SPAN]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Number of cache lines overlapping `[off, off + len)` (the usable area is line-aligned).
#[inline]
fn lines_in(off: usize, len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (off + len - 1) / CACHE_LINE - off / CACHE_LINE + 1
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(off: usize, len: usize, size: usize) -> ! {
    panic!(
        "braid-pmem: access of {len} bytes at offset {off} is outside the region of {size} bytes \
         (caller bug: offsets are relative to the usable area)"
    )
}

#[cold]
#[inline(never)]
#[track_caller]
fn misaligned(off: usize) -> ! {
    panic!(
        "braid-pmem: 8-byte atomic access at offset {off}, which is not a multiple of 8 (caller bug)"
    )
}

impl Region {
    fn build(
        base: *mut u8,
        len: usize,
        flush: FlushKind,
        cfg: PmemConfig,
        path: Option<PathBuf>,
        sim: Option<Sim>,
        mem: Memory,
    ) -> Region {
        let mode = match (&mem, cfg.domain) {
            (Memory::Anon(_), _) => Mode::Volatile,
            (_, Domain::Adr) => Mode::Adr,
            (_, Domain::Eadr) => Mode::Eadr,
        };
        let nt_flush = if mode == Mode::Adr {
            flush
        } else {
            FlushKind::None
        };
        let delay_ns = if mode == Mode::Volatile {
            0
        } else {
            cfg.write_delay_ns
        };
        Region {
            inner: Arc::new(Inner {
                base,
                len,
                mode,
                flush,
                nt_flush,
                avx512: persist::avx512_available(),
                delay_ns,
                cfg,
                counters: Counters::new(),
                path,
                sim,
                mem,
            }),
        }
    }

    /// Create (or overwrite) the region file `path` with `size` usable bytes, all zero, and
    /// write and persist its header.
    pub fn create(path: &Path, size: usize, cfg: PmemConfig) -> Result<Region, PmemError> {
        let flush = resolve_flush(&cfg)?;
        let total = HEADER_SIZE.checked_add(size).ok_or_else(|| {
            io_err(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "region size overflows"),
            )
        })?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        file.set_len(total as u64).map_err(|e| io_err(path, e))?;
        // SAFETY: the file was just created/truncated by us and is mapped shared read-write;
        // modification of the file by another process while mapped is outside braid's contract
        // (as for every user of a shared mapping).
        let mut map =
            unsafe { MmapOptions::new().len(total).map_mut(&file) }.map_err(|e| io_err(path, e))?;
        map[..HEADER_USED].copy_from_slice(&encode_header(size as u64));
        if cfg.domain == Domain::Adr {
            // SAFETY: the header lies inside the live mapping; `flush` is supported (resolved).
            unsafe { persist::flush_lines(flush, map.as_ptr(), HEADER_USED) };
        }
        persist::sfence();
        // For files not on a DAX device (e.g. /dev/shm, or an SSD standing in for NVM) the page
        // cache must be written too.
        map.flush_range(0, HEADER_SIZE)
            .map_err(|e| io_err(path, e))?;
        file.sync_all().map_err(|e| io_err(path, e))?;
        // SAFETY: HEADER_SIZE <= total, so the usable area starts inside (or at the end of) the
        // mapping.
        let base = unsafe { map.as_mut_ptr().add(HEADER_SIZE) };
        Ok(Region::build(
            base,
            size,
            flush,
            cfg,
            Some(path.to_path_buf()),
            None,
            Memory::Map(map),
        ))
    }

    /// Open an existing region file. With `expected_size` = `Some(n)` a region of another size
    /// is refused. Files that are not braid regions, of another format version, or with a
    /// damaged header are refused with an error saying what to do.
    pub fn open(
        path: &Path,
        expected_size: Option<usize>,
        cfg: PmemConfig,
    ) -> Result<Region, PmemError> {
        let flush = resolve_flush(&cfg)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        let file_len = file.metadata().map_err(|e| io_err(path, e))?.len();
        if file_len < HEADER_SIZE as u64 {
            return Err(PmemError::NotARegion {
                path: path.to_path_buf(),
            });
        }
        let mut h = [0u8; HEADER_USED];
        file.read_exact(&mut h).map_err(|e| io_err(path, e))?;
        if h[0..8] != REGION_MAGIC {
            return Err(PmemError::NotARegion {
                path: path.to_path_buf(),
            });
        }
        let version = u32_at(&h, 8);
        if version != REGION_VERSION {
            return Err(PmemError::Version {
                path: path.to_path_buf(),
                found: version,
                expected: REGION_VERSION,
            });
        }
        let crc = u32_at(&h, 24);
        let want = crc32c::crc32c(&h[..HEADER_CRC_SPAN]);
        if crc != want {
            return Err(PmemError::CorruptHeader {
                path: path.to_path_buf(),
                detail: format!("checksum {crc:#010x}, expected {want:#010x}"),
            });
        }
        let size = u64_at(&h, 16);
        if let Some(expected) = expected_size
            && expected as u64 != size
        {
            return Err(PmemError::SizeMismatch {
                path: path.to_path_buf(),
                found: size,
                expected: expected as u64,
            });
        }
        let total = size
            .checked_add(HEADER_SIZE as u64)
            .filter(|&t| t <= file_len)
            .ok_or_else(|| PmemError::CorruptHeader {
                path: path.to_path_buf(),
                detail: format!(
                    "header records {size} usable bytes but the file holds only {file_len} bytes"
                ),
            })?;
        let total = usize::try_from(total).map_err(|_| PmemError::CorruptHeader {
            path: path.to_path_buf(),
            detail: format!("recorded size {size} does not fit this machine's address space"),
        })?;
        // SAFETY: shared read-write mapping of a region file; see `create`.
        let mut map =
            unsafe { MmapOptions::new().len(total).map_mut(&file) }.map_err(|e| io_err(path, e))?;
        // SAFETY: HEADER_SIZE <= total (checked above).
        let base = unsafe { map.as_mut_ptr().add(HEADER_SIZE) };
        Ok(Region::build(
            base,
            total - HEADER_SIZE,
            flush,
            cfg,
            Some(path.to_path_buf()),
            None,
            Memory::Map(map),
        ))
    }

    /// A volatile DRAM region of `size` zero bytes (page-aligned anonymous mapping), used as
    /// the DRAM log buffer of file devices. Flush, fence and persist are no-ops and nothing is
    /// counted.
    ///
    /// # Panics
    /// If the system cannot map `size` bytes (out of memory), like any allocation.
    pub fn anonymous(size: usize) -> Region {
        let mut map = match MmapMut::map_anon(size.max(1)) {
            Ok(m) => m,
            Err(e) => panic!("braid-pmem: cannot map {size} bytes of anonymous memory: {e}"),
        };
        let base = map.as_mut_ptr();
        let cfg = PmemConfig {
            domain: Domain::Adr,
            flush: Some(FlushKind::None),
            write_delay_ns: 0,
        };
        Region::build(
            base,
            size,
            FlushKind::None,
            cfg,
            None,
            None,
            Memory::Anon(map),
        )
    }

    /// A simulated region (see [`crate::CrashSim`]).
    pub(crate) fn from_sim(size: usize, cfg: PmemConfig, image: Option<Vec<u64>>) -> Region {
        let flush = cfg.flush.unwrap_or_else(FlushKind::detect);
        let sim = Sim::new(size, cfg.domain, image);
        Region::build(
            std::ptr::null_mut(),
            size,
            flush,
            cfg,
            None,
            Some(sim),
            Memory::Sim,
        )
    }

    /// Usable bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether the region has no usable bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The configuration the region was made with (for anonymous regions: ADR, no flush
    /// instruction, no delay).
    pub fn config(&self) -> PmemConfig {
        self.inner.cfg
    }

    /// The write-back instruction `flush` uses (resolved if the configuration left it open).
    pub fn flush_kind(&self) -> FlushKind {
        self.inner.flush
    }

    /// The file behind the region, if any.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// True for anonymous DRAM regions.
    pub fn is_volatile(&self) -> bool {
        self.inner.mode == Mode::Volatile
    }

    /// True for regions made by [`crate::CrashSim`].
    pub fn is_simulated(&self) -> bool {
        self.inner.sim.is_some()
    }

    #[inline]
    #[track_caller]
    fn check(&self, off: usize, len: usize) {
        let size = self.inner.len;
        if off > size || len > size - off {
            out_of_range(off, len, size);
        }
    }

    #[inline]
    #[track_caller]
    fn check_word(&self, off: usize) {
        if !off.is_multiple_of(8) {
            misaligned(off);
        }
        self.check(off, 8);
    }

    /// Copy `src` to `off` with plain (cached) stores. Durable after `persist` of the range
    /// (ADR) or at once (eADR).
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn write(&self, off: usize, src: &[u8]) {
        self.check(off, src.len());
        let inner = &*self.inner;
        if let Some(sim) = &inner.sim {
            sim.write(off, src.len(), Src::Bytes(src));
            return;
        }
        // SAFETY: the range is in bounds of the live mapping (checked); `src` cannot overlap
        // it mutably-aliased since it is a shared slice the caller holds (and if it points into
        // the same mapping, the disjoint-range contract applies).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), inner.base.add(off), src.len()) };
    }

    /// Copy `src` to `off` with non-temporal (streaming) stores, bypassing the cache. The data
    /// is durable after the next [`Region::fence`] by the same thread; no flush is needed.
    /// Each touched cache line pays the emulated write delay.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn write_nt(&self, off: usize, src: &[u8]) {
        self.check(off, src.len());
        let inner = &*self.inner;
        let n = src.len();
        if inner.mode == Mode::Volatile {
            // SAFETY: as in `write`.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), inner.base.add(off), n) };
            return;
        }
        inner.counters.add_nt_bytes(n as u64);
        if let Some(sim) = &inner.sim {
            sim.write_nt(off, n, Src::Bytes(src));
        } else {
            // SAFETY: in-bounds destination in the live mapping, valid source slice, disjoint
            // (see `write`); `nt_flush` was checked supported at creation and `avx512` detected.
            unsafe {
                persist::copy_nt(
                    inner.base.add(off),
                    src.as_ptr(),
                    n,
                    inner.nt_flush,
                    inner.avx512,
                )
            };
        }
        if inner.delay_ns != 0 {
            busy_wait_ns(inner.delay_ns.saturating_mul(lines_in(off, n) as u64));
        }
    }

    /// Copy `dst.len()` bytes at `off` into `dst`.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        self.check(off, dst.len());
        let inner = &*self.inner;
        if let Some(sim) = &inner.sim {
            sim.read(off, dst);
            return;
        }
        // SAFETY: in-bounds source in the live mapping; `dst` is an exclusive slice, so it
        // cannot overlap bytes another access to this region is writing through us.
        unsafe { std::ptr::copy_nonoverlapping(inner.base.add(off), dst.as_mut_ptr(), dst.len()) };
    }

    /// Set `len` bytes at `off` to `byte` with plain stores.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[track_caller]
    pub fn fill(&self, off: usize, len: usize, byte: u8) {
        self.check(off, len);
        let inner = &*self.inner;
        if let Some(sim) = &inner.sim {
            sim.write(off, len, Src::Fill(byte));
            return;
        }
        // SAFETY: in-bounds range of the live mapping (checked).
        unsafe { std::ptr::write_bytes(inner.base.add(off), byte, len) };
    }

    /// Atomic (acquire) load of the native-endian u64 at `off`.
    ///
    /// # Panics
    /// If `off` is not a multiple of 8 or out of bounds (caller bugs).
    #[inline]
    #[track_caller]
    pub fn load_u64(&self, off: usize) -> u64 {
        self.check_word(off);
        let inner = &*self.inner;
        if let Some(sim) = &inner.sim {
            return sim.load(off);
        }
        self.atomic(off).load(Ordering::Acquire)
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
        if let Some(sim) = &inner.sim {
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
        if let Some(sim) = &inner.sim {
            return sim.cas(off, old, new);
        }
        self.atomic(off)
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// The in-bounds, 8-byte-aligned word at `off` of a mapped region.
    #[inline]
    fn atomic(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is in bounds and a multiple of 8 (checked by the caller) and `base` is
        // page-aligned, so the pointer is valid and aligned for `AtomicU64` for as long as
        // `self` (which keeps the mapping) lives. Plain accesses to the same word racing with
        // this atomic one are excluded by the documented contract.
        unsafe { AtomicU64::from_ptr(self.inner.base.add(off).cast::<u64>()) }
    }

    /// Write back every cache line overlapping `[off, off + len)` (ADR). A no-op, neither
    /// counted nor delayed, under eADR and on volatile regions. Durable only after a fence.
    ///
    /// # Panics
    /// If the range is out of bounds (a caller bug).
    #[inline]
    #[track_caller]
    pub fn flush(&self, off: usize, len: usize) {
        self.check(off, len);
        let inner = &*self.inner;
        if inner.mode != Mode::Adr || len == 0 {
            return;
        }
        let lines = lines_in(off, len);
        inner.counters.add_lines(lines as u64);
        if let Some(sim) = &inner.sim {
            sim.flush(off, len);
        } else {
            // SAFETY: in-bounds range of the live mapping; `flush` supported (resolved at
            // creation).
            unsafe { persist::flush_lines(inner.flush, inner.base.add(off), len) };
        }
        if inner.delay_ns != 0 {
            busy_wait_ns(inner.delay_ns.saturating_mul(lines as u64));
        }
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
            sim.fence();
        } else {
            persist::sfence();
        }
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

    /// Write the file's page cache back to storage (`msync`), for region files that are not on
    /// a DAX device. A no-op for anonymous and simulated regions.
    pub fn msync(&self) -> Result<(), PmemError> {
        match &self.inner.mem {
            Memory::Map(m) => m.flush().map_err(|e| {
                io_err(
                    self.inner.path.as_deref().unwrap_or_else(|| Path::new("")),
                    e,
                )
            }),
            Memory::Anon(_) | Memory::Sim => Ok(()),
        }
    }

    /// Simulate a power failure: a new simulated region (same size and configuration, fresh
    /// counters, not frozen) whose live and durable images are the post-crash image. This
    /// region is left as it was.
    pub fn crash(&self, mode: CrashMode) -> Result<Region, PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        let image = sim.crash_image(mode);
        Ok(Region::from_sim(
            self.inner.len,
            self.inner.cfg,
            Some(image),
        ))
    }

    /// Cut power to several simulated regions at one instant (see `crash`): no fence in any of
    /// them completes while their images are taken, so a state where one region lost a record
    /// another region's later record depends on cannot arise.
    pub fn crash_together(regions: &[(&Region, CrashMode)]) -> Result<Vec<Region>, PmemError> {
        let mut sims: Vec<(&Sim, CrashMode)> = Vec::with_capacity(regions.len());
        for (r, mode) in regions {
            sims.push((r.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?, *mode));
        }
        let images = Sim::crash_images(&sims);
        Ok(regions
            .iter()
            .zip(images)
            .map(|((r, _), image)| Region::from_sim(r.inner.len, r.inner.cfg, Some(image)))
            .collect())
    }

    /// Freeze the durable image after `events` further persist events (see [`crate::CrashSim`]).
    /// Calling it again replaces the limit.
    pub fn freeze_after(&self, events: u64) -> Result<(), PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        sim.freeze_after(events);
        Ok(())
    }

    /// Persist events so far on a simulated region (0 on other regions).
    pub fn persist_events(&self) -> u64 {
        self.inner.sim.as_ref().map_or(0, Sim::events)
    }
}
