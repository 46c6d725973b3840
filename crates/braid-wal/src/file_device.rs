//! Log segments in files. API SKELETON.

use std::path::PathBuf;
use std::sync::Arc;

use crate::fs::Fs;
use crate::{Lsn, WalError};

#[derive(Debug, Clone)]
pub struct FileDeviceConfig {
    pub dir: PathBuf,
    pub stream: u32,
    /// Bytes of records per segment file (excluding its 4 KiB header).
    pub segment_size: u64,
    /// DRAM ring that writers fill before the flusher writes it out.
    pub buffer_size: usize,
    pub direct: bool,
    pub preallocate: bool,
}

impl FileDeviceConfig {
    pub fn new(dir: impl Into<PathBuf>, stream: u32) -> Self {
        FileDeviceConfig { dir: dir.into(), stream, segment_size: 64 << 20, buffer_size: 16 << 20, direct: false, preallocate: true }
    }
}

/// The segment files of one stream: sequential writes at LSNs, sync, read-back for recovery.
/// Used by [`FileDevice`] and by the pmem device's de-staging.
pub struct SegmentLog { _p: () }

impl SegmentLog {
    pub fn open(_fs: Arc<dyn Fs>, _cfg: &FileDeviceConfig) -> Result<SegmentLog, WalError> { unimplemented!() }
    pub fn write(&self, _lsn: Lsn, _bytes: &[u8]) -> Result<(), WalError> { unimplemented!() }
    pub fn sync(&self) -> Result<(), WalError> { unimplemented!() }
}

/// A stream on segment files, with a DRAM ring buffer and group fdatasync.
pub struct FileDevice { _p: () }

impl FileDevice {
    pub fn open(_fs: Arc<dyn Fs>, _cfg: FileDeviceConfig) -> Result<FileDevice, WalError> { unimplemented!() }
}
