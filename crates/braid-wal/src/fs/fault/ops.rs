//! The operation log: what each file-system call did, as tests see it ([`FsOp`]) and as a
//! replayable effect on the image.

use std::path::PathBuf;
use std::sync::Arc;

use super::image::FileId;

/// One operation of the log, as a test sees it. A file's path is the one its handle was
/// opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// `create_dir_all` (one operation for the whole path).
    CreateDir {
        /// The directory.
        path: PathBuf,
    },
    /// `open` created a file.
    Create {
        /// The file.
        path: PathBuf,
    },
    /// `write_at` (of the bytes actually written, after any injected short write).
    Write {
        /// The file.
        path: PathBuf,
        /// Byte offset.
        off: u64,
        /// Bytes written.
        len: u64,
    },
    /// `set_len`, or `open` with truncation (length 0).
    SetLen {
        /// The file.
        path: PathBuf,
        /// The new length in bytes.
        len: u64,
    },
    /// `allocate`.
    Allocate {
        /// The file.
        path: PathBuf,
        /// The reservation in bytes.
        len: u64,
    },
    /// A successful `sync_data`.
    SyncData {
        /// The file.
        path: PathBuf,
    },
    /// A `sync_data` that failed (injected EIO); the writes it covered never become durable.
    SyncDataFailed {
        /// The file.
        path: PathBuf,
    },
    /// `rename`.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
    },
    /// `remove_file`.
    Remove {
        /// The file.
        path: PathBuf,
    },
    /// `sync_dir`.
    SyncDir {
        /// The directory.
        path: PathBuf,
    },
}

/// What an operation did to the image; replayable.
#[derive(Debug, Clone)]
pub(super) enum Effect {
    CreateDir(PathBuf),
    Create(PathBuf, FileId),
    Write(FileId, u64, Arc<[u8]>),
    SetLen(FileId, u64),
    Allocate(FileId, u64),
    Sync(FileId),
    SyncFailed(FileId),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
    SyncDir(PathBuf),
}

#[derive(Debug, Clone)]
pub(super) struct LoggedOp {
    // Read by the crate's own tests (the op log they inspect).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) op: FsOp,
    pub(super) effect: Effect,
}
