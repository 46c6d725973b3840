//! Creating and opening regions: the region file header (magic, version, size, checksum),
//! file, anonymous and simulated regions, and the shared constructor.

use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64};
use std::sync::{Arc, OnceLock};

use memmap2::MmapMut;

use super::map::{io_err, map_file, page_size};
use super::{HEADER_CRC_SPAN, HEADER_USED, Inner, Memory, Mode, Region};
use crate::crash::Sim;
use crate::persist;
use crate::stats::Counters;
use crate::{
    Domain, FlushKind, HEADER_SIZE, HeaderDamage, Media, PmemConfig, PmemError, REGION_MAGIC,
    REGION_VERSION,
};

pub(super) fn resolve_flush(cfg: &PmemConfig) -> Result<FlushKind, PmemError> {
    match cfg.flush {
        None => Ok(FlushKind::detect()),
        Some(kind) if kind.is_supported() => Ok(kind),
        Some(kind) => Err(PmemError::FlushUnsupported { kind }),
    }
}

pub(super) fn encode_header(size: u64) -> [u8; HEADER_USED] {
    let mut h = [0u8; HEADER_USED];
    h[0..8].copy_from_slice(&REGION_MAGIC);
    h[8..12].copy_from_slice(&REGION_VERSION.to_le_bytes());
    h[16..24].copy_from_slice(&size.to_le_bytes());
    let crc = crc32c::crc32c(&h[..HEADER_CRC_SPAN]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Region {
    pub(super) fn build(
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
        // A simulated region's loads and ADR stores use its live image like a mapping.
        let (base, sim_stores) = match &sim {
            Some(s) => (s.live_ptr(), cfg.domain == Domain::Eadr),
            None => (base, false),
        };
        Region {
            inner: Arc::new(Inner {
                base,
                len,
                word_end: len & !7,
                sim_stores,
                mode,
                flush,
                nt_flush,
                avx512: persist::avx512_available(),
                delay_ns,
                fence_delay_ns: AtomicU64::new(0),
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
        // Not truncated at open: the file is locked first, so a region another process uses
        // is refused before a byte of it changes.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        crate::lock::lock_exclusive(&file, path)?;
        file.set_len(0).map_err(|e| io_err(path, e))?;
        file.set_len(total as u64).map_err(|e| io_err(path, e))?;
        let mut map = map_file(path, &file, total, cfg.media)?;
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
        map.file = Some(file);
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
        crate::lock::lock_exclusive(&file, path)?;
        let total = read_header(path, &mut file, expected_size)?;
        let mut map = map_file(path, &file, total, cfg.media)?;
        map.file = Some(file);
        // SAFETY: HEADER_SIZE <= total <= map.len (checked by `read_header`).
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

    /// A private copy of the region file `path` in DRAM (an anonymous region holding the file's
    /// usable bytes as they were read), for reading a region without opening it: no lock is
    /// taken, nothing is written to the file, and what is stored into the copy stays in memory.
    /// The header is checked as [`Region::open`] checks it. The copy is read front to back while
    /// its owner may be writing, so it need not be any one instant's image; readers check what
    /// they find (the log scan's checksums do).
    pub fn snapshot(path: &Path, expected_size: Option<usize>) -> Result<Region, PmemError> {
        let mut file = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
        let total = read_header(path, &mut file, expected_size)?;
        let region = Region::anonymous(total - HEADER_SIZE);
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0usize;
        while at < region.len() {
            let n = buf.len().min(region.len() - at);
            std::os::unix::fs::FileExt::read_exact_at(
                &file,
                &mut buf[..n],
                (HEADER_SIZE + at) as u64,
            )
            .map_err(|e| io_err(path, e))?;
            region.write(at, &buf[..n]);
            at += n;
        }
        Ok(region)
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
}

/// Check the header of the region file `file` (opened from `path`) as [`Region::open`] does and
/// return the region's total bytes (header included).
fn read_header(
    path: &Path,
    file: &mut std::fs::File,
    expected_size: Option<usize>,
) -> Result<usize, PmemError> {
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
            damage: HeaderDamage::Checksum {
                found: crc,
                expected: want,
            },
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
            damage: HeaderDamage::Truncated { size, file_len },
        })?;
    let total = usize::try_from(total).map_err(|_| PmemError::CorruptHeader {
        path: path.to_path_buf(),
        damage: HeaderDamage::SizeTooLarge { size },
    })?;
    Ok(total)
}
