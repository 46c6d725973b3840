//! `nvdisk`: NV-Logging's baseline NV-Disk (Huang et al., VLDB 2014, Section 3 and Table 3):
//! a conventional centralized log buffer whose log files live on NVRAM used as a disk, i.e.
//! reached through the file-system API. It is the [`serial`] scheme (one
//! central stream, group commit, early lock release) on a file device; the engine places that
//! device's segment files in a `/dev/shm` directory whatever log device was asked for (see
//! `braid_engine::Db::open`), so `fdatasync` costs what a tmpfs costs and the figure measures
//! the software path, as in the paper's Setup-A.
//!
//! This module only renames the serial scheme, so that reports and `Db::scheme()` say
//! `nvdisk`; logging, recovery and acknowledgement are serial's.

use std::sync::Arc;

use super::registry::{LogPlace, Registration, SchemeDef};
use super::{RecoveryReport, Replay, Scheme, SchemeConfig, SchemeWorker, Storage, serial};
use crate::WalError;
use crate::device::Device;
use crate::stream::Stream;

/// The scheme's registration (see [`super::SCHEMES`]).
pub const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "NV-Logging's NV-Disk baseline: the central log as files on NVRAM used as a disk",
    default: || Box::new(NvDiskConfig),
};

/// The scheme's name.
pub const NAME: &str = "nvdisk";

/// The `nvdisk` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvDiskConfig;

impl SchemeDef for NvDiskConfig {
    fn name(&self) -> &'static str {
        NAME
    }
    fn log_place(&self) -> LogPlace {
        LogPlace::NvramFiles
    }
    fn update_records_refusal(&self) -> Option<&'static str> {
        None
    }
    fn open(
        &self,
        cfg: &SchemeConfig,
        storage: Storage,
        replay: &dyn Replay,
        progress: &dyn Fn(u64),
    ) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
        open(cfg, storage.devices(NAME)?, replay, progress)
    }
    fn clone_def(&self) -> Box<dyn SchemeDef> {
        Box::new(*self)
    }
}

/// The serial scheme, reporting itself as `nvdisk`.
pub struct NvDisk {
    inner: Arc<dyn Scheme>,
}

impl Scheme for NvDisk {
    fn name(&self) -> &'static str {
        NAME
    }
    fn worker(&self, worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        self.inner.worker(worker)
    }
    fn streams(&self) -> &[Stream] {
        self.inner.streams()
    }
    fn close(&self) -> Result<(), WalError> {
        self.inner.close()
    }
    fn proxies(&self) -> Option<crate::proxy::Proxies> {
        self.inner.proxies()
    }
    fn positions(&self) -> super::cut::Positions {
        self.inner.positions()
    }
    fn keeps(&self) -> Vec<crate::Lsn> {
        self.inner.keeps()
    }
}

/// Recover and start the central log (exactly one device: the `/dev/shm` file device).
pub fn open(
    cfg: &SchemeConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    let (inner, report) = serial::open(cfg, devices, replay, progress)?;
    Ok((Arc::new(NvDisk { inner }), report))
}
