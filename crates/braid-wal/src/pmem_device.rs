//! A log ring in persistent memory. API SKELETON.

use braid_pmem::Region;

use crate::file_device::FileDeviceConfig;
use crate::WalError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PmemWrite {
    /// Streaming (non-temporal) stores, then a fence.
    #[default]
    NonTemporal,
    /// Ordinary stores, cache-line flushes, then a fence.
    StoreFlush,
}

#[derive(Debug, Clone)]
pub struct PmemDeviceConfig {
    pub stream: u32,
    pub write: PmemWrite,
    /// De-stage full ring space to segment files (Wang & Johnson: NVM log buffers go to disk when full).
    pub destage: Option<FileDeviceConfig>,
}

pub struct PmemDevice { _p: () }

impl PmemDevice {
    /// Format `region` as an empty log ring, or open the ring it holds.
    pub fn open(_region: Region, _cfg: PmemDeviceConfig) -> Result<PmemDevice, WalError> { unimplemented!() }
}
