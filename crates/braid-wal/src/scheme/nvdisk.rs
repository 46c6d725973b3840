//! `nvdisk`: NV-Logging's baseline NV-Disk (Huang et al., VLDB 2014, Section 3 and Table 3):
//! a conventional centralized log buffer whose log files live on NVRAM used as a disk, i.e.
//! reached through the file-system API. It is the [`serial`](super::serial) scheme (one
//! central stream, group commit, early lock release) on a file device; the engine places that
//! device's segment files in a `/dev/shm` directory whatever log device was asked for (see
//! `braid_engine::Db::open`), so `fdatasync` costs what a tmpfs costs and the figure measures
//! the software path, as in the paper's Setup-A.
//!
//! This module only renames the serial scheme, so that reports and `Db::scheme()` say
//! `nvdisk`; logging, recovery and acknowledgement are serial's.

use std::sync::Arc;

use super::{RecoveryReport, Replay, Scheme, SchemeConfig, SchemeKind, SchemeWorker, serial};
use crate::WalError;
use crate::device::Device;
use crate::stream::Stream;

/// The serial scheme, reporting itself as `nvdisk`.
pub struct NvDisk {
    inner: Arc<dyn Scheme>,
}

impl Scheme for NvDisk {
    fn kind(&self) -> SchemeKind {
        SchemeKind::NvDisk
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
