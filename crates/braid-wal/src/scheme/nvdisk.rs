//! `nvdisk`: NV-Logging's baseline NV-Disk (Huang et al., VLDB 2014, Sections 2-3 and Table 3):
//! Shore-MT's centralized log buffer whose log files live on NVRAM used as a disk, i.e.
//! reached through the file-system API. Every insert (each per-update record and each commit
//! record with `--records update`, as Shore-MT logs) takes the buffer's lock across reserving
//! its space and copying the record (Section 2: "the transaction must acquire a lock on the
//! buffer ... locks are used to protect the log buffer space"): the insert path of the
//! `baseline` scheme ([`super::aether`]), with early lock release and asynchronous
//! commit (Table 3; the paper's 'OL' runs). The log flusher writes the buffer through the
//! file system into segment files that the engine places in a `/dev/shm` directory whatever
//! log device was asked for (see `braid_engine::Db::builder`), so `fdatasync` costs what a tmpfs
//! costs and the figure measures the software path, as in the paper's Setup-A; the log buffer
//! is the paper's 80 MB.
//!
//! Who writes, and so who pays the emulated NVM delay (per line written, the delay model of
//! `braid_pmem::delay`): Shore-MT's log flush daemon alone, as in Shore-MT, where workers copy
//! their records into the DRAM buffer and only `log_core::flush_daemon` writes the partitions
//! (`flush_daemon_work`, `_flushX`). So the stream runs with
//! [`crate::stream::StreamConfig::flusher_only`] (a waiting committer never writes and syncs
//! the buffer itself), and the daemon is woken as Shore-MT's is: an update record leaves it
//! asleep, the record that ends a transaction kicks it (Shore-MT's asynchronous commit "does
//! not block, but kicks the flusher"), and a backlog kicks it as a buffer short of space does
//! (`aether/baseline.rs`, [`crate::stream::StreamWriter::append_quiet`]). A flusher woken by
//! every record, as before, flushed about twice per TPC-C transaction at 0 ns (a wake-up, a
//! `pwrite` and an `fdatasync` each), and fewer, larger groups once the delay kept it busy:
//! that made NV-Disk faster with a slower NVRAM.
//!
//! Records and recovery are serial's.

use std::sync::Arc;

use super::registry::{LogPlace, Registration, SchemeDef};
use super::{RecoveryReport, Replay, Scheme, SchemeConfig, Storage};
use crate::WalError;
use crate::device::Device;

/// The scheme's registration (see [`super::SCHEMES`]).
pub(crate) const REGISTRATION: Registration = Registration {
    name: NAME,
    about: "NV-Logging's NV-Disk baseline: the central log as files on NVRAM used as a disk",
    default: || Box::new(NvDiskConfig),
};

/// The scheme's name.
pub(crate) const NAME: &str = "nvdisk";

/// The `nvdisk` scheme's configuration (it has no options of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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

/// Recover and start the central log (exactly one device: the `/dev/shm` file device).
pub(crate) fn open(
    cfg: &SchemeConfig,
    devices: Vec<Arc<dyn Device>>,
    replay: &dyn Replay,
    progress: &dyn Fn(u64),
) -> Result<(Arc<dyn Scheme>, RecoveryReport), WalError> {
    super::aether::open_locked_log(NAME, cfg, devices, replay, progress)
}
