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
//! are a test tool.
//!
//! Choices where the specification is open: `write_nt` on a volatile region is a plain copy
//! (streaming a DRAM buffer that is about to be read back would only evict it); under eADR
//! `flush` is a no-op that is neither counted nor delayed, while `write_nt` is delayed per line
//! in both domains (the media write still happens); with [`FlushKind::None`] under ADR flushes
//! are counted and delayed but no instruction is issued.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use memmap2::MmapMut;

use crate::crash::{Sim, Src};
use crate::delay::busy_wait_ns;
use crate::persist;
use crate::stats::{Counters, PmemStats};
use crate::{
    CACHE_LINE, CrashMode, Domain, FlushKind, HEADER_SIZE, Media, PmemConfig, PmemError,
    REGION_MAGIC, REGION_VERSION,
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
    File(FileMap),
    Anon(#[allow(dead_code)] MmapMut),
    Sim,
}

/// A shared read-write mapping of a whole region file (header included), made with
/// `libc::mmap`; unmapped on drop. Its length is a multiple of 8, so every aligned 8-byte word
/// touching the usable area lies inside it.
struct FileMap {
    ptr: *mut u8,
    len: usize,
    /// `Dax` (mapped with `MAP_SYNC`), `Msync` or `Emulated`.
    media: Media,
    /// The file lives on a RAM file system: never power-safe.
    ram: bool,
}

/// Whether a `statfs` answer names a file system kept in RAM (tmpfs or ramfs), which no
/// write-back makes survive a power cut.
#[cfg(target_os = "linux")]
fn ram_fs(st: &libc::statfs) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    let kind = st.f_type as i64;
    kind == TMPFS_MAGIC || kind == RAMFS_MAGIC
}

/// Whether `file` lives on a file system kept in RAM (see [`is_ram_backed`]).
#[cfg(target_os = "linux")]
fn on_ram_fs(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `statfs` is plain old data, so all-zero bytes are a valid value of it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the duration of the call (borrowed from `file`) and
    // `st` is a valid, writable `statfs`.
    let ok = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0;
    ok && ram_fs(&st)
}

#[cfg(not(target_os = "linux"))]
fn on_ram_fs(_file: &File) -> bool {
    false
}

/// Whether `path` (or, if it does not exist yet, its nearest existing ancestor, where it would
/// be created) lies on a file system kept in RAM (tmpfs or ramfs, such as `/dev/shm`): nothing
/// written there survives a power cut, whatever is synced.
#[cfg(target_os = "linux")]
pub fn is_ram_backed(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut p = Some(path);
    while let Some(q) = p {
        let Ok(c) = std::ffi::CString::new(q.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `statfs` is plain old data, so all-zero bytes are a valid value of it.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a NUL-terminated path alive for the call and `st` a writable `statfs`.
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 {
            return ram_fs(&st);
        }
        p = q.parent().filter(|x| !x.as_os_str().is_empty());
    }
    false
}

/// See the Linux version: no RAM file system is recognised elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn is_ram_backed(_path: &Path) -> bool {
    false
}

/// Flags of a `MAP_SYNC` mapping.
#[cfg(target_os = "linux")]
fn sync_flags() -> std::io::Result<libc::c_int> {
    Ok(libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC)
}

#[cfg(not(target_os = "linux"))]
fn sync_flags() -> std::io::Result<libc::c_int> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "MAP_SYNC exists only on Linux",
    ))
}

/// Whether a failed `MAP_SYNC` mapping means "this file system is not DAX" (the kernel's
/// `EOPNOTSUPP`, or `EINVAL` from a kernel that predates `MAP_SHARED_VALIDATE`).
fn not_dax(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(e.raw_os_error(), Some(c) if c == libc::EOPNOTSUPP || c == libc::EINVAL)
}

impl FileMap {
    /// Map the first `len` bytes of `file` (rounded up to a multiple of 8; the file holds at
    /// least `len` bytes), as `media` (`Dax` = with `MAP_SYNC`).
    fn new(file: &File, len: usize, media: Media) -> std::io::Result<FileMap> {
        let len = len.next_multiple_of(8);
        let flags = if media == Media::Dax {
            sync_flags()?
        } else {
            libc::MAP_SHARED
        };
        // SAFETY: no address hint, so the kernel picks fresh address space and no existing
        // mapping is replaced; the descriptor is open for reading and writing; the result is
        // checked before use. Modification or truncation of the file by another process while
        // it is mapped is outside braid's contract (as for every user of a shared mapping).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileMap {
            ptr: p.cast::<u8>(),
            len,
            media,
            ram: false,
        })
    }

    /// `msync(MS_SYNC)` of the mapping bytes `[from, from + len)`; `from` must be a multiple
    /// of the page size and the range inside the mapping.
    fn sync(&self, from: usize, len: usize) -> std::io::Result<()> {
        debug_assert!(from <= self.len && len <= self.len - from);
        // SAFETY: the range lies inside this live mapping (callers' contract, checked in debug
        // builds) and starts on a page boundary (the mapping is page-aligned); msync reads no
        // memory at the language level and changes nothing the program can observe.
        let r = unsafe { libc::msync(self.ptr.add(from).cast(), len, libc::MS_SYNC) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: `ptr..ptr + len` is the mapping `new` made, owned by this value and unmapped
        // only here; the `Region` (its `Inner`) owning this value is the only holder of
        // pointers into it, and it is being dropped. An munmap failure leaves address space
        // mapped, which is harmless.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
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

// SAFETY: `base` points into memory owned by `mem` (a mapping), which lives as long as `Inner`
// and is never remapped; all accesses through it are bounds-checked and, except for the
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

fn io_err(path: &Path, source: std::io::Error) -> PmemError {
    PmemError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The system page size (4096 if it cannot be read).
fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// Map a region file of `total` bytes as `media` asks; returns the mapping with its resolved
/// media.
fn map_file(path: &Path, file: &File, total: usize, media: Media) -> Result<FileMap, PmemError> {
    let mut map = map_file_as(path, file, total, media)?;
    map.ram = on_ram_fs(file);
    Ok(map)
}

fn map_file_as(path: &Path, file: &File, total: usize, media: Media) -> Result<FileMap, PmemError> {
    match media {
        Media::Dax => FileMap::new(file, total, Media::Dax).map_err(|e| {
            if not_dax(&e) {
                PmemError::NotDax {
                    path: path.to_path_buf(),
                    source: e,
                }
            } else {
                io_err(path, e)
            }
        }),
        // A file in RAM (tmpfs, ramfs: /dev/shm) is lost with the power whatever is written
        // back: only an emulation, and msync would cost a system call for nothing.
        Media::Auto if on_ram_fs(file) => {
            FileMap::new(file, total, Media::Emulated).map_err(|e| io_err(path, e))
        }
        // Whatever kept MAP_SYNC from working, a plain mapping written back with msync is
        // durable; if that fails too, its error is the one to report.
        Media::Auto => FileMap::new(file, total, Media::Dax)
            .or_else(|_| FileMap::new(file, total, Media::Msync))
            .map_err(|e| io_err(path, e)),
        Media::Msync | Media::Emulated => {
            FileMap::new(file, total, media).map_err(|e| io_err(path, e))
        }
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
        let media = match &mem {
            Memory::File(m) => m.media,
            Memory::Anon(_) => Media::Emulated,
            // A simulated region models real persistent memory.
            Memory::Sim => Media::Dax,
        };
        let msync = matches!(&mem, Memory::File(m) if m.media == Media::Msync);
        let ram = matches!(&mem, Memory::File(m) if m.ram);
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
                media,
                ram,
                msync,
                page: page_size(),
                msync_error: OnceLock::new(),
                inject_msync: AtomicI32::new(0),
                counters: Counters::new(),
                path,
                sim,
                mem,
            }),
        }
    }

    /// Create (or overwrite) the region file `path` with `size` usable bytes, all zero, and
    /// write and persist its header. The file is mapped as `cfg.media` asks (see [`Media`]);
    /// [`Media::Dax`] on a file system that is not DAX is refused with [`PmemError::NotDax`].
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
        let map = map_file(path, &file, total, cfg.media)?;
        let header = encode_header(size as u64);
        // SAFETY: the mapping was just made and no other handle to it exists, so nothing
        // accesses it concurrently; it holds at least HEADER_SIZE > HEADER_USED bytes.
        unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), map.ptr, HEADER_USED) };
        if cfg.domain == Domain::Adr {
            // SAFETY: the header lies inside the live mapping; `flush` is supported (resolved).
            unsafe { persist::flush_lines(flush, map.ptr, HEADER_USED) };
        }
        persist::sfence();
        // Whatever the media, the header and the file size are written back once, so a new
        // region survives a power cut with its header (cheap next to creating the file).
        map.sync(0, HEADER_SIZE).map_err(|e| io_err(path, e))?;
        file.sync_all().map_err(|e| io_err(path, e))?;
        // SAFETY: HEADER_SIZE <= total <= map.len, so the usable area starts inside (or at the
        // end of) the mapping.
        let base = unsafe { map.ptr.add(HEADER_SIZE) };
        Ok(Region::build(
            base,
            size,
            flush,
            cfg,
            Some(path.to_path_buf()),
            None,
            Memory::File(map),
        ))
    }

    /// Open an existing region file. With `expected_size` = `Some(n)` a region of another size
    /// is refused. Files that are not braid regions, of another format version, or with a
    /// damaged header are refused with an error saying what to do. The file is mapped as
    /// `cfg.media` asks (see [`Region::create`]).
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
        let map = map_file(path, &file, total, cfg.media)?;
        // SAFETY: HEADER_SIZE <= total <= map.len (checked above).
        let base = unsafe { map.ptr.add(HEADER_SIZE) };
        Ok(Region::build(
            base,
            total - HEADER_SIZE,
            flush,
            cfg,
            Some(path.to_path_buf()),
            None,
            Memory::File(map),
        ))
    }

    /// A volatile DRAM region of `size` zero bytes (page-aligned anonymous mapping), used as
    /// the DRAM log buffer of file devices. Flush, fence and persist are no-ops and nothing is
    /// counted.
    ///
    /// # Panics
    /// If the system cannot map `size` bytes (out of memory), like any allocation.
    pub fn anonymous(size: usize) -> Region {
        // A multiple of 8, so every aligned word touching the usable area is mapped.
        let mut map = match MmapMut::map_anon(size.next_multiple_of(8).max(8)) {
            Ok(m) => m,
            Err(e) => panic!("braid-pmem: cannot map {size} bytes of anonymous memory: {e}"),
        };
        let base = map.as_mut_ptr();
        let cfg = PmemConfig {
            domain: Domain::Adr,
            flush: Some(FlushKind::None),
            write_delay_ns: 0,
            media: Media::Emulated,
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
    #[doc(hidden)]
    pub fn inject_msync_failure(&self, errno: i32) {
        self.inner.inject_msync.store(errno, Ordering::SeqCst);
    }

    /// `msync(MS_SYNC)` over the page-aligned span of usable bytes `[off, off + len)` of a file
    /// region (range checked by the caller); counts it and keeps the first failure.
    #[inline(never)]
    fn msync_range(&self, off: usize, len: usize) {
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

    #[inline]
    #[track_caller]
    fn bounds(&self, off: usize, len: usize) {
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
        self.bounds(off, 8);
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
        if let Some(sim) = &inner.sim {
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
        let inner = &*self.inner;
        if let Some(sim) = &inner.sim {
            sim.read(off, dst);
            return;
        }
        self.load_bytes(off, dst);
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
        if let Some(sim) = &inner.sim {
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

    /// Store `src` at usable offset `off` of a mapped region (range checked) through aligned
    /// 8-byte atomics: whole words with relaxed stores, a partial word at either end with a
    /// compare-and-swap that replaces only the range's bytes.
    #[inline]
    fn store_bytes(&self, off: usize, src: &[u8]) {
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
    fn merge(&self, off: usize, bytes: &[u8]) {
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

    /// Load the bytes at usable offset `off` of a mapped region (range checked) into `dst`
    /// through aligned 8-byte atomic loads.
    #[inline]
    fn load_bytes(&self, off: usize, dst: &mut [u8]) {
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
        self.word_of(off)
    }

    /// The aligned 8-byte word of a mapped (not simulated) region holding usable byte `pos`,
    /// which the caller checked is in bounds (`pos < len`).
    #[inline]
    fn word_of(&self, pos: usize) -> &AtomicU64 {
        debug_assert!(pos < self.inner.len && self.inner.sim.is_none());
        // SAFETY: `base` is page-aligned, so `base + (pos & !7)` is 8-byte aligned; the word
        // starts at or before `pos`, inside the usable area, and ends at the next multiple of
        // 8, which the mapping covers (its length is a multiple of 8, see `FileMap::new` and
        // `anonymous`). The mapping lives as long as `self`. Every access to the mapping is an
        // aligned 8-byte atomic except the streamed words of `write_nt`, whose contract
        // excludes concurrent access to them, so this atomic never races with a non-atomic or
        // differently sized access.
        unsafe { AtomicU64::from_ptr(self.inner.base.add(pos & !7).cast::<u64>()) }
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

    /// Issue `kind` for every line of the in-bounds usable range `[off, off + len)` of a mapped
    /// region (no counting, no delay).
    #[inline]
    fn flush_raw(&self, kind: FlushKind, off: usize, len: usize) {
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

    /// Write the whole file's page cache back to storage (`msync(MS_SYNC)`), whatever the
    /// media. A no-op for anonymous and simulated regions. A failure is kept like one in
    /// `flush`: this returns [`Region::check`] after the write-back.
    pub fn msync(&self) -> Result<(), PmemError> {
        if matches!(self.inner.mem, Memory::File(_)) {
            self.msync_range(0, self.inner.len);
        }
        self.check()
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

    /// Test hook for visiting every crash point: freeze the durable image of a simulated region
    /// after `events` further persist events (each flushed line, each streamed line at its
    /// fence, each fence, and under eADR each store). Calling it again replaces the limit.
    #[doc(hidden)]
    pub fn freeze_after(&self, events: u64) -> Result<(), PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        sim.freeze_after(events);
        Ok(())
    }

    /// Test hook: persist events so far on a simulated region (0 on other regions); see
    /// [`Region::freeze_after`].
    #[doc(hidden)]
    pub fn persist_events(&self) -> u64 {
        self.inner.sim.as_ref().map_or(0, Sim::events)
    }
}
