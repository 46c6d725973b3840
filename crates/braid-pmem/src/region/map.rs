//! Mapping region files: the shared `mmap` (with `MAP_SYNC` on DAX), the media it gets, whether
//! the file lives on a RAM file system, and the `msync` write-back.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::{Media, PmemError};

/// A shared read-write mapping of a whole region file (header included), made with
/// `libc::mmap`; unmapped on drop. Its length is a multiple of 8, so every aligned 8-byte word
/// touching the usable area lies inside it.
pub(super) struct FileMap {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
    /// `Dax` (mapped with `MAP_SYNC`), `Msync` or `Emulated`.
    pub(super) media: Media,
    /// The file lives on a RAM file system: never power-safe.
    pub(super) ram: bool,
    /// The region file, kept open while it is mapped: its open file description holds the
    /// region's lock ([`crate::lock`]).
    pub(super) file: Option<File>,
}

/// Whether a `statfs` answer names a file system kept in RAM (tmpfs or ramfs), which no
/// write-back makes survive a power cut.
#[cfg(target_os = "linux")]
pub(super) fn ram_fs(st: &libc::statfs) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    let kind = st.f_type as i64;
    kind == TMPFS_MAGIC || kind == RAMFS_MAGIC
}

/// Whether `file` lives on a file system kept in RAM (see [`is_ram_backed`]).
#[cfg(target_os = "linux")]
pub(super) fn on_ram_fs(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `statfs` is plain old data, so all-zero bytes are a valid value of it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the duration of the call (borrowed from `file`) and
    // `st` is a valid, writable `statfs`.
    let ok = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } == 0;
    ok && ram_fs(&st)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn on_ram_fs(_file: &File) -> bool {
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
pub(super) fn sync_flags() -> std::io::Result<libc::c_int> {
    Ok(libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn sync_flags() -> std::io::Result<libc::c_int> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "MAP_SYNC exists only on Linux",
    ))
}

/// Whether a failed `MAP_SYNC` mapping means "this file system is not DAX" (the kernel's
/// `EOPNOTSUPP`, or `EINVAL` from a kernel that predates `MAP_SHARED_VALIDATE`).
pub(super) fn not_dax(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(e.raw_os_error(), Some(c) if c == libc::EOPNOTSUPP || c == libc::EINVAL)
}

impl FileMap {
    /// Map the first `len` bytes of `file` (rounded up to a multiple of 8; the file holds at
    /// least `len` bytes), as `media` (`Dax` = with `MAP_SYNC`).
    pub(super) fn new(file: &File, len: usize, media: Media) -> std::io::Result<FileMap> {
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
            file: None,
        })
    }

    /// `msync(MS_SYNC)` of the mapping bytes `[from, from + len)`; `from` must be a multiple
    /// of the page size and the range inside the mapping.
    pub(super) fn sync(&self, from: usize, len: usize) -> std::io::Result<()> {
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

pub(super) fn io_err(path: &Path, source: std::io::Error) -> PmemError {
    PmemError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The system page size (4096 if it cannot be read).
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// Map a region file of `total` bytes as `media` asks; returns the mapping with its resolved
/// media.
pub(super) fn map_file(
    path: &Path,
    file: &File,
    total: usize,
    media: Media,
) -> Result<FileMap, PmemError> {
    let mut map = map_file_as(path, file, total, media)?;
    map.ram = on_ram_fs(file);
    Ok(map)
}

pub(super) fn map_file_as(
    path: &Path,
    file: &File,
    total: usize,
    media: Media,
) -> Result<FileMap, PmemError> {
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
