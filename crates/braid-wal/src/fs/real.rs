//! [`RealFs`]: the operating system's file system through `std::fs`, positional I/O
//! (`pread`/`pwrite` via `FileExt`), `fdatasync`, `fallocate` (via rustix) and O_DIRECT (via
//! `custom_flags`; no `unsafe`).
//!
//! `allocate` uses `FALLOC_FL_KEEP_SIZE` so the file size stays the written extent; where the
//! file system does not support `fallocate` (EOPNOTSUPP) it falls back to growing the file with
//! `set_len`, which reserves nothing on sparse file systems but keeps the behaviour portable.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FallocateFlags, OFlags};
use rustix::io::Errno;

use super::{Fs, FsFile, OpenOpts};

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

/// A file opened by [`RealFs`].
#[derive(Debug)]
pub struct RealFile {
    file: File,
}

impl RealFile {}

impl FsFile for RealFile {
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write_at(data, off) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, off) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        rustix::fs::fdatasync(&self.file).map_err(io::Error::from)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        match rustix::fs::fallocate(&self.file, FallocateFlags::KEEP_SIZE, 0, len) {
            Ok(()) => Ok(()),
            Err(e) if e == Errno::OPNOTSUPP || e == Errno::NOSYS => {
                if self.file.metadata()?.len() < len {
                    self.file.set_len(len)?;
                }
                Ok(())
            }
            Err(e) => Err(io::Error::from(e)),
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn next_data(&self, off: u64) -> io::Result<Option<u64>> {
        // `lseek(SEEK_DATA)`: ext4 and XFS report reserved (unwritten) extents as holes
        // unless the page cache holds written data there.
        match rustix::fs::seek(&self.file, rustix::fs::SeekFrom::Data(off)) {
            Ok(at) => Ok(Some(at)),
            // No data at or after `off`.
            Err(Errno::NXIO) => Ok(None),
            // A file system without SEEK_DATA: every byte may be data.
            Err(e) if e == Errno::INVAL || e == Errno::OPNOTSUPP => Ok(Some(off)),
            Err(e) => Err(e.into()),
        }
    }

    fn next_hole(&self, off: u64) -> io::Result<u64> {
        match rustix::fs::seek(&self.file, rustix::fs::SeekFrom::Hole(off)) {
            Ok(at) => Ok(at),
            Err(Errno::NXIO) => Ok(off),
            Err(e) if e == Errno::INVAL || e == Errno::OPNOTSUPP => Ok(self.len()?.max(off)),
            Err(e) => Err(e.into()),
        }
    }
}

impl Fs for RealFs {
    fn lock(&self, path: &Path) -> Result<super::FsLock, braid_pmem::lock::LockError> {
        braid_pmem::lock::lock_path(path).map(super::FsLock::new)
    }

    fn is_ram_backed(&self, path: &Path) -> bool {
        braid_pmem::is_ram_backed(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>> {
        let mut o = OpenOptions::new();
        o.read(true)
            .write(true)
            .create(opts.create)
            .truncate(opts.truncate);
        if opts.direct {
            // The flag value is a small positive constant; the cast cannot wrap.
            o.custom_flags(OFlags::DIRECT.bits() as i32);
        }
        let file = o.open(path)?;
        Ok(Box::new(RealFile { file }))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.path());
        }
        out.sort();
        Ok(out)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}
