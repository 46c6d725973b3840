//! The file-system seam. API SKELETON.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOpts {
    pub create: bool,
    pub truncate: bool,
    /// O_DIRECT: offsets, lengths and buffers must be aligned to 4096.
    pub direct: bool,
}

pub trait FsFile: Send + Sync + std::fmt::Debug {
    /// May write fewer bytes than asked (short write).
    fn write_at(&self, off: u64, data: &[u8]) -> io::Result<usize>;
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
    fn read_at(&self, off: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// fdatasync.
    fn sync_data(&self) -> io::Result<()>;
    /// Reserve space up to `len` bytes (fallocate); ENOSPC is reported here.
    fn allocate(&self, len: u64) -> io::Result<()>;
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
}

pub trait Fs: Send + Sync + std::fmt::Debug {
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    fn open(&self, path: &Path, opts: OpenOpts) -> io::Result<Box<dyn FsFile>>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Full paths of the entries of a directory, sorted.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// fsync the directory so entries created, renamed or removed in it are durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;
