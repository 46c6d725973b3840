//! One writer per database: [`claim`] locks the file `LOCK` in the database directory before
//! anything else of the database is read or written, and the lock is held until the database
//! (its last [`Db`](super::Db) handle, or the [`Standby`](super::Standby) that became it) is
//! dropped, or the process ends.
//!
//! The lock is `flock(2)` on `LOCK` (see [`braid_pmem::lock`]): a second open of the same
//! directory, from this process or another, is refused at once with [`EngineError::InUse`],
//! naming the holder's process id; the kernel releases the lock when its holder dies, so a
//! `kill -9` never leaves a stale lock behind. Each log stream's files and each persistent
//! region carry a lock of their own as well, so a log opened below the engine (braid-wal
//! alone) has one writer too. Advisory locks are not reliable on network file systems (NFS,
//! SMB): keep a database on a local file system, and never let two machines share one.
//!
//! Reading a live database is [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only)'s
//! job: it takes no lock and writes nothing.

use std::path::Path;

use braid_pmem::lock::LockError;
use braid_wal::fs::FsLock;

use crate::env::Env;
use crate::error::EngineError;

/// The lock file's name in a database directory.
pub(crate) const LOCK_FILE: &str = "LOCK";

/// Lock the database directory `dir` for this handle, creating the directory if it is absent.
/// A directory that holds files but is no braid database is refused before anything is
/// written in it.
pub(super) fn claim(dir: &Path, env: &Env) -> Result<FsLock, EngineError> {
    if is_foreign(dir, env)? {
        return Err(EngineError::NotADatabase {
            path: dir.to_path_buf(),
        });
    }
    env.fs
        .create_dir_all(dir)
        .map_err(|source| EngineError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    env.fs
        .lock(&dir.join(LOCK_FILE))
        .map_err(|e| in_use(dir, e))
}

/// The process that holds the lock of the database in `dir`, if one does (and the kernel says
/// which). Takes no lock.
pub(crate) fn holder(dir: &Path) -> Option<u32> {
    braid_pmem::lock::holder_of(&dir.join(LOCK_FILE))
}

fn in_use(dir: &Path, e: LockError) -> EngineError {
    match e {
        LockError::InUse { holder, .. } => EngineError::InUse {
            dir: dir.to_path_buf(),
            holder,
        },
        LockError::Io { path, source } => EngineError::Io { path, source },
        // A kind of a later braid-pmem: kept whole as the I/O error's source.
        other => EngineError::Io {
            path: dir.join(LOCK_FILE),
            source: std::io::Error::other(other),
        },
    }
}

/// Whether `dir` exists and holds files, but no `braid.json` (its lock file aside).
pub(super) fn is_foreign(dir: &Path, env: &Env) -> Result<bool, EngineError> {
    if !env.fs.exists(dir) || env.fs.exists(&dir.join(super::meta::META_FILE)) {
        return Ok(false);
    }
    let entries = env.fs.list_dir(dir).map_err(|source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(entries
        .iter()
        .any(|p| p.file_name().is_none_or(|n| n != LOCK_FILE)))
}
