//! One writer per file: an exclusive advisory lock (`flock(2)`, through `std::fs::File::try_lock`)
//! that a region, a log stream or a database directory holds for as long as it is open.
//!
//! No paper section: this is what keeps two processes (or two handles in one process) from
//! writing the same log, which every scheme's recovery assumes. The choices:
//!
//! * `flock` locks belong to the open file description, so a second `open` of the same file
//!   conflicts even in the same process, and the kernel drops the lock when the process dies
//!   (`kill -9` included): a crash never leaves a stale lock to clean up by hand.
//! * Taking a lock never waits: a file that is held is reported at once as [`LockError::InUse`],
//!   naming the holder's process id where `/proc/locks` tells it.
//! * A lock goes with its open file description, which a child process shares from `fork`
//!   until it `exec`s (braid's files are opened close-on-exec): a handle dropped while another
//!   thread is between the two stays locked for that moment, and an open right then is refused.
//! * Advisory locks hold only between programs that take them, and on network file systems
//!   (NFS, SMB) `flock` may be emulated per machine or not enforced at all: two machines
//!   sharing a directory there are not kept apart. Keep a database on a local file system.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another open file description holds the lock: another process, or another handle in
    /// this one.
    #[error("{path} is locked by {}", holder_text(*.holder))]
    InUse {
        /// The locked file.
        path: PathBuf,
        /// The holder's process id, where the kernel tells it.
        holder: Option<u32>,
    },
    /// Opening or locking the file failed otherwise.
    #[error("locking {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// `holder` in words: "process N", "this process", or "another process".
pub fn holder_text(holder: Option<u32>) -> String {
    match holder {
        Some(pid) if pid == std::process::id() => {
            format!("this process ({pid}: another handle is still open)")
        }
        Some(pid) => format!("process {pid}"),
        None => "another process".to_string(),
    }
}

/// An exclusive lock on a file, held until dropped (or the process ends).
#[derive(Debug)]
pub struct FileLock {
    /// The open file whose description holds the lock; closing it releases the lock.
    _file: File,
    path: PathBuf,
}

impl FileLock {
    /// The locked file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Lock `file` (opened from `path`) exclusively, or report who holds it.
pub fn lock_exclusive(file: &File, path: &Path) -> Result<(), LockError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(LockError::InUse {
            path: path.to_path_buf(),
            holder: holder_of_file(file),
        }),
        Err(TryLockError::Error(source)) => Err(LockError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Create (if absent) the lock file `path` and lock it exclusively. The file stays when the
/// lock is released; it holds no data.
pub fn lock_path(path: &Path) -> Result<FileLock, LockError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(path)
        .map_err(|source| LockError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    lock_exclusive(&file, path)?;
    Ok(FileLock {
        _file: file,
        path: path.to_path_buf(),
    })
}

/// The process holding a `flock` lock on the file at `path`, if one does and the kernel says
/// which (`/proc/locks`). Reads only; takes no lock, so it never gets in a writer's way.
pub fn holder_of(path: &Path) -> Option<u32> {
    let file = File::open(path).ok()?;
    holder_of_file(&file)
}

fn holder_of_file(file: &File) -> Option<u32> {
    let meta = file.metadata().ok()?;
    let dev = meta.dev();
    let id = format!(
        "{:02x}:{:02x}:{}",
        libc::major(dev),
        libc::minor(dev),
        meta.ino()
    );
    // The kernel prints the list of locks page by page while other processes take and drop
    // theirs, so one reading can skip a line: read it again before saying nobody is named.
    (0..3).find_map(|_| {
        let locks = std::fs::read_to_string("/proc/locks").ok()?;
        locks.lines().find_map(|line| {
            // "1: FLOCK  ADVISORY  WRITE 2489 fe:00:10010762 0 EOF"
            let f: Vec<&str> = line.split_whitespace().collect();
            (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&id.as_str()))
                .then(|| f.get(4)?.parse::<u32>().ok())
                .flatten()
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_names_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("LOCK");
        let held = lock_path(&p).unwrap();
        match lock_path(&p) {
            Err(LockError::InUse { path, holder }) => {
                assert_eq!(path, p);
                assert_eq!(holder, Some(std::process::id()));
            }
            other => panic!("expected InUse, got {other:?}"),
        }
        assert_eq!(holder_of(&p), Some(std::process::id()));
        drop(held);
        assert_eq!(holder_of(&p), None);
        lock_path(&p).unwrap();
    }
}
