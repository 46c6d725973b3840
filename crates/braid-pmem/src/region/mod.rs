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
//! Media ([`Media`]): files are mapped with `libc::mmap` directly (memmap2 cannot ask for
//! `MAP_SYNC`). [`Media::Auto`] first tries `MAP_SHARED_VALIDATE | MAP_SYNC`, which the kernel
//! grants only on a DAX file system (then the region is [`Media::Dax`]: flush + fence is
//! durable), and on any failure maps the file with plain `MAP_SHARED` as [`Media::Msync`];
//! [`Media::Dax`] turns that failure into [`PmemError::NotDax`] (an `EOPNOTSUPP` or `EINVAL`
//! answer; other errors stay I/O errors). Under `Msync`, `flush` (and `write_nt`, after a fence
//! of its streaming stores) ends with `msync(MS_SYNC)` over the page-aligned span of its range,
//! counted in [`PmemStats::msyncs`], in both durability domains (eADR makes the CPU caches
//! durable, not the page cache). An `msync` failure cannot be returned from `flush`: the
//! first one is kept and [`Region::check`] reports it from then on, since the kernel may have
//! dropped the dirty pages and a later `msync` can succeed without them.
//!
//! Memory model: `write`, `read` and `fill` access the mapping only through aligned 8-byte
//! atomics (relaxed): the whole words of a range with atomic loads and stores, a partial word
//! at either end with an atomic load, or a compare-and-swap that replaces only the range's
//! bytes. Every access to the mapping except `write_nt`'s streamed words therefore has the
//! same size and alignment, which is what the Rust memory model asks of racing atomics (mixed
//! sizes racing with a write are undefined behaviour; hence no byte atomics for the partial
//! words). Overlapping concurrent calls are a logical error (the bytes are some mix of the
//! writes, per 8-byte word) but never a data race; disjoint ranges sharing a word are exact.
//! `write_nt` writes its partial end words the same way, but streams the words wholly inside
//! its range with SIMD non-temporal stores, which the language counts as non-atomic: another
//! access to those bytes while `write_nt` runs is a data race. It stays a safe fn under that
//! documented contract (its only callers stream into space they reserved exclusively). The
//! 8-byte accessors are atomic (acquire loads, release stores, acq-rel CAS). Flushing a line
//! that another thread is writing other bytes of is fine: a write-back reads no data at the
//! language level.
//!
//! The hot paths (`write`, `write_nt`, `flush`, `fence`, `persist`) take no lock, allocate
//! nothing and touch no reference count: the handle derefs its `Arc` once and the counters are
//! sharded per thread (see `stats`). Simulated regions take a mutex on persistence events; they
//! are a test tool. A simulated region's live image is an array of the same aligned 8-byte
//! atomics, so loads, and stores under ADR (where a store is no persist event), take the very
//! path of a mapped region: whether a store must go through the simulation is decided once,
//! when the region is made, and a load checks nothing but its alignment and bounds.
//!
//! Choices where the specification is open: `write_nt` on a volatile region is a plain copy
//! (streaming a DRAM buffer that is about to be read back would only evict it); under eADR
//! `flush` is a no-op that is neither counted nor delayed, while `write_nt` is delayed per line
//! in both domains (the media write still happens); with [`FlushKind::None`] under ADR flushes
//! are counted and delayed but no instruction is issued.

//!
//! One file per mechanism: `map` (mapping region files, media and RAM file systems), `open`
//! (creating, opening and building regions, the region header), `access` (loads and stores),
//! `durability` (flush, fence, persist, msync) and `crash_hooks` (the simulated regions' power
//! cuts and crash-point hooks).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64};
use std::sync::{Arc, OnceLock};

use memmap2::MmapMut;

use crate::crash::Sim;
use crate::stats::Counters;
use crate::{FlushKind, Media, PmemConfig, PmemError};

mod access;
mod crash_hooks;
mod durability;
mod map;
mod open;

pub use access::Words;

use map::FileMap;
pub use map::is_ram_backed;

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
    File(FileMap),
    Anon(#[allow(dead_code)] MmapMut),
    Sim,
}

/// A copy of an I/O error (`std::io::Error` is not `Clone`): the same OS error code, or the
/// same kind and message.
fn copy_io_error(e: &std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

struct Inner {
    /// Start of the usable area (after the header for files; a simulated region's live
    /// image, whose loads and ADR stores are the same atomics as a mapping's).
    base: *mut u8,
    len: usize,
    /// `len` rounded down to a multiple of 8: an aligned word at `off` is in bounds exactly
    /// when `off < word_end`.
    word_end: usize,
    /// Stores go through the simulation (a simulated eADR region, where every store is a
    /// persist event); otherwise they are plain atomics on `base`, whatever the region.
    /// Chosen once when the region is made.
    sim_stores: bool,
    mode: Mode,
    /// Resolved write-back instruction for `flush`.
    flush: FlushKind,
    /// Write-back for the plain-stored head/tail of `write_nt` (`None` under eADR).
    nt_flush: FlushKind,
    avx512: bool,
    delay_ns: u64,
    /// Emulated extra latency of every fence, ns (see [`Region::set_fence_delay_ns`]).
    fence_delay_ns: AtomicU64,
    cfg: PmemConfig,
    /// Resolved media (see `Region::media`).
    media: Media,
    /// A file on a RAM file system (never power-safe).
    ram: bool,
    /// `flush` and `write_nt` end with an msync (file regions with `Media::Msync`).
    msync: bool,
    /// The system page size (msync spans start on a page boundary).
    page: usize,
    /// The first msync failure; persistence to the file is not trusted after it.
    msync_error: OnceLock<std::io::Error>,
    /// Test hook: nonzero = the next msync fails with this OS error code.
    inject_msync: AtomicI32,
    counters: Counters,
    path: Option<PathBuf>,
    sim: Option<Sim>,
    mem: Memory,
}

// SAFETY: `base` points into memory owned by `mem` (a mapping) or by `sim` (its live image, a
// boxed slice), which lives as long as `Inner` and is never remapped or reallocated; all accesses through it are bounds-checked and, except for the
// streamed words of `write_nt` (whose documented contract excludes concurrent access to
// them), go through aligned 8-byte atomics, so sharing it between threads cannot cause a data
// race. Every other field is Send + Sync.
unsafe impl Send for Inner {}
// SAFETY: see `Send` above: shared access goes through atomics, and the persistence
// instructions read no data at the language level.
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
        let kind = match &self.inner.mem {
            Memory::File(_) => "file",
            Memory::Anon(_) => "anonymous",
            Memory::Sim => "simulated",
        };
        f.debug_struct("Region")
            .field("kind", &kind)
            .field("len", &self.inner.len)
            .field("path", &self.inner.path)
            .field("media", &self.inner.media)
            .field("config", &self.inner.cfg)
            .finish()
    }
}

impl Region {
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
    /// instruction, no delay, [`Media::Emulated`]). Its `media` is the one asked for; see
    /// [`Region::media`] for the resolved one.
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

    /// What backs the region, resolved: for files [`Media::Dax`] (mapped with `MAP_SYNC`),
    /// [`Media::Msync`] or [`Media::Emulated`] (also what [`Media::Auto`] gives for a file on
    /// a RAM file system such as /dev/shm), never `Auto`; [`Media::Emulated`] for anonymous
    /// regions; [`Media::Dax`] for simulated ones, which model real persistent memory.
    pub fn media(&self) -> Media {
        self.inner.media
    }

    /// Whether persisted data survives a power cut: the media is [`Media::Dax`] or
    /// [`Media::Msync`] and the file is not on a RAM file system. False for anonymous and
    /// emulated regions.
    pub fn is_power_safe(&self) -> bool {
        self.inner.media.is_power_safe() && !self.inner.ram
    }

    /// `None` if the region is power-safe; else what it only emulates, in words to put next to
    /// any figure measured on it.
    pub fn emulation(&self) -> Option<String> {
        (!self.is_power_safe()).then(|| match (self.inner.media, &self.inner.path) {
            (Media::Emulated, Some(_)) => {
                "persistent memory emulated by a file mapping (flush + fence only): not power-safe"
                    .to_string()
            }
            (Media::Emulated, None) => {
                "persistent memory emulated by DRAM (flush + fence only): not power-safe"
                    .to_string()
            }
            (m, _) => format!("persistent memory as a file in RAM ({m:?}): not power-safe"),
        })
    }

    /// `Ok` unless an `msync` of this region ever failed ([`Media::Msync`], or
    /// [`Region::msync`]): then [`PmemError::Msync`] with the first failure, on every call from
    /// then on, since data persisted to the file may have been lost and persistence to it can
    /// no longer be trusted. Call it before reporting anything persisted as durable.
    pub fn check(&self) -> Result<(), PmemError> {
        match self.inner.msync_error.get() {
            None => Ok(()),
            Some(e) => Err(PmemError::Msync {
                path: self.inner.path.clone().unwrap_or_default(),
                source: copy_io_error(e),
            }),
        }
    }

    /// Test hook: the next `msync` of this file region fails with OS error `errno` instead of
    /// running, as a failed write-back would. Not part of the supported API.
    #[cfg(any(test, feature = "testing"))]
    pub fn inject_msync_failure(&self, errno: i32) {
        self.inner
            .inject_msync
            .store(errno, std::sync::atomic::Ordering::SeqCst);
    }
}
