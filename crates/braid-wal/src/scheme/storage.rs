//! Where a scheme keeps its log, as the caller built it: devices, a persistent-memory region,
//! or nothing ([`Storage`]).

use std::sync::Arc;

use super::{LogPlace, registry};
use crate::WalError;
use crate::device::Device;

/// Where a scheme keeps its log, as the caller built it for the scheme's [`LogPlace`].
pub enum Storage {
    /// No log (`LogPlace::Nowhere`).
    Nothing,
    /// One device per stream (`LogPlace::Devices` and `LogPlace::NvramFiles`).
    Devices(Vec<Arc<dyn Device>>),
    /// A persistent region and a backup directory (`LogPlace::Region`).
    Region(RegionStorage),
}

/// The storage of a scheme that keeps its log in a persistent-memory region of its own.
pub struct RegionStorage {
    /// The region (index and log-object slots).
    pub region: braid_pmem::Region,
    /// The file system of the backup directory.
    pub fs: Arc<dyn crate::fs::Fs>,
    /// Where cold log is backed up to segment files.
    pub backup_dir: std::path::PathBuf,
    /// How log objects are copied into the region.
    pub write: crate::device::pmem::PmemWrite,
}

impl Storage {
    /// The devices, or the error a scheme that needs devices reports.
    pub(crate) fn devices(self, scheme: &str) -> Result<Vec<Arc<dyn Device>>, WalError> {
        match self {
            Storage::Devices(d) => Ok(d),
            _ => Err(registry::wrong_storage(scheme, LogPlace::Devices)),
        }
    }
}
