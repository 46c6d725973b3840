//! The file-system seam: every byte the file log device writes goes through [`Fs`] and
//! [`FsFile`], so tests can swap the real file system ([`RealFs`]) for an in-memory one that
//! simulates crashes and injects faults (`FaultFs`, with the `testing` cargo feature: it is
//! test machinery).
//!
//! No paper section; this is infrastructure for the file devices of all schemes.
//!
//! Design choices where the contract is open:
//! * [`FsFile::allocate`] reserves space *without changing the file size* (Linux
//!   `fallocate(FALLOC_FL_KEEP_SIZE)`), so a file's size keeps telling how far it was written.
//!   Where the file system cannot preallocate, [`RealFs`] falls back to extending the file with
//!   `set_len` (the size then overstates the written extent; readers must treat zeros as
//!   "nothing written").
//! * Errors are plain [`std::io::Error`]s; `is_no_space` recognises ENOSPC from either
//!   implementation.

use std::io;
use std::path::{Path, PathBuf};

#[cfg(any(test, feature = "testing"))]
mod fault;
mod real;
mod snapshot;

#[cfg(any(test, feature = "testing"))]
pub use fault::{CrashOpts, FaultFs, FaultStats, FsOp, SyncFault, Unsynced};
pub use real::{RealFile, RealFs};
pub use snapshot::SnapshotFs;

/// Alignment (bytes) that O_DIRECT offsets, lengths and buffers must have.
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// How [`Fs::open`] opens a file (always for reading and writing). The default opens an
/// existing file.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOpts {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Truncate the file to zero length on open.
    pub truncate: bool,
    /// O_DIRECT: offsets, lengths and buffers must be aligned to 4096.
    pub direct: bool,
}

impl OpenOpts {
    /// Open an existing file for reading and writing.
    pub(crate) fn existing() -> OpenOpts {
        OpenOpts::default()
    }

    /// Create the file if it does not exist (keeping its contents if it does).
    #[cfg(test)]
    pub(crate) fn create() -> OpenOpts {
        OpenOpts {
            create: true,
            ..OpenOpts::default()
        }
    }

    /// Create the file, or truncate it to zero length if it exists.
    pub fn create_truncate() -> OpenOpts {
        OpenOpts {
            create: true,
            truncate: true,
            direct: false,
        }
    }

    /// The same options with O_DIRECT set to `direct`.
    pub(crate) fn with_direct(self, direct: bool) -> OpenOpts {
        OpenOpts { direct, ..self }
    }
}

/// An open file, always readable and writable.
pub trait FsFile: Send + Sync + std::fmt::Debug {
    /// May write fewer bytes than asked (short write).
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize>;
    /// Write all of `data`, looping over short writes.
    fn write_all_at(&self, mut off: u64, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.write_at(off, data)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0"));
            }
            off += n as u64;
            data = &data[n..];
        }
        Ok(())
    }
    /// Read at `off`; fewer bytes than asked only at the end of the file.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Read until `buf` is full or the end of the file; returns the bytes read.
    fn read_full_at(&self, mut off: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.read_at(off, &mut buf[done..]) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    off += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
    /// fdatasync.
    fn sync_data(&self) -> io::Result<()>;
    /// Reserve space up to `len` bytes without changing the file size
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`); ENOSPC is reported here.
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Truncate or extend (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// The file size in bytes.
    fn len(&self) -> io::Result<u64>;
    /// The first offset at or after `off` that may hold data, or `None` if from `off` on the
    /// file has only holes and reserved, never-written space (both read as zeros): what lets
    /// a reader skip a preallocated segment's reserved space instead of reading it.
    /// Default: `Some(off)`, i.e. "read it and see".
    fn next_data(&self, off: u64) -> io::Result<Option<u64>> {
        Ok(Some(off))
    }
    /// The first offset at or after `off` where a hole or reserved, never-written space
    /// begins (the file's length if none). Default: the file's length.
    fn next_hole(&self, off: u64) -> io::Result<u64> {
        Ok(self.len()?.max(off))
    }
    /// Whether the file size is 0.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A lock taken with [`Fs::lock`]: held until dropped.
pub struct FsLock(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);

impl FsLock {
    /// A lock held by `guard` (released when `guard` is dropped).
    pub(crate) fn new(guard: impl std::any::Any + Send + Sync) -> FsLock {
        FsLock(Box::new(guard))
    }
}

impl std::fmt::Debug for FsLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FsLock")
    }
}

/// A file system: a namespace of directories and files.
pub trait Fs: Send + Sync + std::fmt::Debug {
    /// Take the exclusive lock the file `path` stands for (creating the file if absent; its
    /// directory must exist), or fail at once with [`LockError::InUse`] if another handle,
    /// in this process or another, holds it. See [`braid_pmem::lock`] for what such a lock
    /// guarantees and where it does not.
    ///
    /// [`LockError::InUse`]: braid_pmem::lock::LockError::InUse
    fn lock(&self, path: &Path) -> Result<FsLock, braid_pmem::lock::LockError>;
    /// Create a directory and its missing parents (not durable until [`Fs::sync_dir`]).
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Open a file for reading and writing.
    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>>;
    /// Remove a file (not durable until [`Fs::sync_dir`] on its directory).
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Rename a file, replacing `to` if it exists (not durable until [`Fs::sync_dir`]).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Full paths of the entries of a directory, sorted.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// fsync the directory so entries created, renamed or removed in it are durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;
    /// Whether `path` lies on a file system kept in RAM (tmpfs, ramfs), which no fsync makes
    /// survive a power cut. False for simulated file systems, which model real storage.
    fn is_ram_backed(&self, _path: &Path) -> bool {
        false
    }
}

/// True if `off`, `len` and the address `addr` are all multiples of [`DIRECT_ALIGN`], as an
/// O_DIRECT transfer needs.
pub(crate) fn is_direct_aligned(off: u64, addr: usize, len: usize) -> bool {
    let mask = DIRECT_ALIGN - 1;
    (off & mask as u64) == 0 && (addr & mask) == 0 && (len & mask) == 0
}

/// True if `e` says the device is out of space (ENOSPC, or EDQUOT: over quota).
pub(crate) fn is_no_space(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::StorageFull
        || e.kind() == io::ErrorKind::QuotaExceeded
        || e.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error())
        || e.raw_os_error() == Some(rustix::io::Errno::DQUOT.raw_os_error())
}

/// True if `e` is EINVAL (what Linux returns when a file system refuses O_DIRECT, or for a
/// misaligned direct transfer).
pub(crate) fn is_invalid_input(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error())
}

/// A heap buffer whose slice starts at a [`DIRECT_ALIGN`]-aligned address, for O_DIRECT I/O.
/// Safe code only: it over-allocates a `Vec` and slices at the first aligned address (the
/// `Vec` is never grown, so its buffer never moves).
#[derive(Debug)]
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes at an aligned address.
    pub(crate) fn new(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + DIRECT_ALIGN];
        let addr = raw.as_ptr() as usize;
        let off = (DIRECT_ALIGN - addr % DIRECT_ALIGN) % DIRECT_ALIGN;
        AlignedBuf { raw, off, len }
    }

    /// The aligned bytes.
    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.raw[self.off..self.off + self.len]
    }

    /// The aligned bytes, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.off..self.off + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buf_is_aligned() {
        for len in [0usize, 1, 4096, 10_000] {
            let mut b = AlignedBuf::new(len);
            assert_eq!(b.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
            assert_eq!(b.as_mut_slice().len(), len);
            assert!(b.as_slice().iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn enospc_is_recognised() {
        let e = io::Error::from(rustix::io::Errno::NOSPC);
        assert!(is_no_space(&e));
        assert!(!is_no_space(&io::Error::from(rustix::io::Errno::IO)));
        assert!(is_invalid_input(&io::Error::from(rustix::io::Errno::INVAL)));
    }
}
