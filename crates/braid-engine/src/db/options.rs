//! How to open a database: [`Options`] (scheme, logging kind, concurrency control, device,
//! group commit, recovery), the device configurations ([`DeviceConfig`],
//! [`FileOptions`], [`PmemOptions`]), and [`Options::check`], which refuses combinations that
//! cannot work before anything is opened.

use std::sync::Arc;
use std::time::Duration;

use braid_pmem::{Domain, Media, PmemConfig};
use braid_wal::device::Pace;
use braid_wal::device::{FileDeviceConfig, PmemDeviceConfig, PmemWrite};
use braid_wal::scan::ScanMode;
use braid_wal::scheme::{LogKind, LogPlace, Records, RecoveryPlan, SchemeConfig, SchemeSpec};
use braid_wal::{Refused, UnknownName};
use serde::{Deserialize, Serialize};

use super::external::DeviceFactory;
use crate::checkpoint::CheckpointOptions;
use crate::env::Env;
use crate::error::{EngineError, Unsupported};

/// Concurrency control.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[strum(
    serialize_all = "lowercase",
    parse_err_ty = UnknownName,
    parse_err_fn = unknown_cc
)]
pub enum Cc {
    /// Two-phase locking, NO_WAIT.
    #[strum(to_string = "2pl", serialize = "twopl")]
    TwoPl,
    /// Optimistic (Silo-style).
    Occ,
    /// Multi-version, optimistic (Hekaton's, serializable): reads see the snapshot of the
    /// transaction's begin and take no locks; commit validates the versions read.
    Mvcc,
}

fn unknown_cc(s: &str) -> UnknownName {
    UnknownName::new("concurrency control", s, &["2pl", "occ", "mvcc"])
}

/// File log device options. Built from [`FileOptions::default`] with the setters (or by
/// assigning fields): `FileOptions::default().segment_size(16 << 20).direct(true)`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FileOptions {
    /// Bytes of records per segment file (a multiple of 4096). Default 64 MiB.
    pub segment_size: u64,
    /// Bytes of the DRAM ring per stream that workers fill and the flusher writes out.
    /// Default 16 MiB.
    pub buffer_size: usize,
    /// Write segments with O_DIRECT; opening fails on a file system that refuses it (tmpfs).
    /// Default off.
    pub direct: bool,
    /// Emulated NVRAM under the log files: this many ns per 64-byte line written (the
    /// `nvdisk` scheme takes the pmem device's [`PmemOptions::write_delay_ns`] here, so it
    /// pays the same emulated NVM latency as the schemes logging to persistent memory).
    /// Default 0.
    pub nvm_write_delay_ns: u64,
    /// Emulated NVRAM under the log files as Intel's PMEP shows it to PMFS: this many ns once
    /// per write into the files (the persistent barrier each PMFS write ends with), where
    /// [`FileOptions::nvm_write_delay_ns`] charges per line (the `nvdisk` scheme takes the pmem
    /// device's [`PmemOptions::fence_delay_ns`] here). Default 0.
    pub nvm_barrier_delay_ns: u64,
    /// RAID-0: each stream striped across this many devices (directories `disk-K` under the
    /// log directory), [`FileOptions::stripe_unit`] bytes at a time
    /// ([`braid_wal::device::StripedDevice`]). 1 (the default): no striping. Fixed at creation.
    pub stripe: usize,
    /// RAID-0 stripe unit in bytes (a multiple of 4096). Default 64 KiB.
    pub stripe_unit: u64,
}

impl Default for FileOptions {
    /// The file device's own defaults ([`FileDeviceConfig::new`]), not striped.
    fn default() -> Self {
        let dev = FileDeviceConfig::new("", 0);
        FileOptions {
            segment_size: dev.segment_size,
            buffer_size: dev.buffer_size,
            direct: dev.direct,
            nvm_write_delay_ns: dev.nvm_write_delay_ns,
            nvm_barrier_delay_ns: dev.nvm_barrier_delay_ns,
            stripe: 1,
            stripe_unit: 64 << 10,
        }
    }
}

impl FileOptions {
    /// [`FileOptions::segment_size`] set to `bytes`.
    pub fn segment_size(mut self, bytes: u64) -> FileOptions {
        self.segment_size = bytes;
        self
    }
    /// [`FileOptions::buffer_size`] set to `bytes`.
    pub fn buffer_size(mut self, bytes: usize) -> FileOptions {
        self.buffer_size = bytes;
        self
    }
    /// [`FileOptions::direct`] set to `on`.
    pub fn direct(mut self, on: bool) -> FileOptions {
        self.direct = on;
        self
    }
    /// [`FileOptions::nvm_write_delay_ns`] set to `ns`.
    pub fn nvm_write_delay_ns(mut self, ns: u64) -> FileOptions {
        self.nvm_write_delay_ns = ns;
        self
    }
    /// [`FileOptions::nvm_barrier_delay_ns`] set to `ns`.
    pub fn nvm_barrier_delay_ns(mut self, ns: u64) -> FileOptions {
        self.nvm_barrier_delay_ns = ns;
        self
    }
    /// [`FileOptions::stripe`] set to `devices`.
    pub fn stripe(mut self, devices: usize) -> FileOptions {
        self.stripe = devices;
        self
    }
    /// [`FileOptions::stripe_unit`] set to `bytes`.
    pub fn stripe_unit(mut self, bytes: u64) -> FileOptions {
        self.stripe_unit = bytes;
        self
    }
}

/// Persistent-memory log device options. Built from [`PmemOptions::default`] with the setters
/// (or by assigning fields): `PmemOptions::default().ring_size(16 << 20).destage(false)`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PmemOptions {
    /// Bytes of log ring per stream.
    pub ring_size: usize,
    /// How the region files reach power-safe media: [`Media::Auto`] (the default) maps them
    /// with `MAP_SYNC` on DAX persistent memory and otherwise writes every flushed range back
    /// with msync, so an acknowledged commit survives a power cut either way;
    /// [`Media::Emulated`] only flushes caches, which is an emulation of persistent memory
    /// (files under /dev/shm in the benchmarks) and not power-safe.
    pub media: Media,
    /// Whether the CPU caches are volatile (ADR: flush before a fence) or durable (eADR).
    pub domain: Domain,
    /// Emulated extra NVM latency per persisted cache line (Huang et al. 2014's Setup-A: "we
    /// add these delays after executing the clflush instruction").
    pub write_delay_ns: u64,
    /// Emulated extra NVM latency per persistence barrier (every fence of the regions, and
    /// every write through the file-system API), the way Intel's PMEP exposes NVRAM latency to
    /// software (Huang et al. 2014, Setup-B; Dulloor et al., EuroSys 2014): charged per
    /// barrier, not per line. Default 0.
    pub fence_delay_ns: u64,
    /// How records are written into the ring: streaming stores, or stores and flushes.
    pub write: PmemWrite,
    /// De-stage full ring space to segment files.
    pub destage: bool,
    /// Bytes per de-staged segment file (a multiple of 4096; reopening needs the same value).
    pub destage_segment_size: u64,
}

impl Default for PmemOptions {
    /// A 64 MiB ring per stream, de-staged to segment files; the regions' own defaults
    /// ([`PmemConfig::default`]) and the ring device's ([`PmemDeviceConfig::new`]).
    fn default() -> Self {
        let region = PmemConfig::default();
        PmemOptions {
            ring_size: 64 << 20,
            media: region.media,
            domain: region.domain,
            write_delay_ns: region.write_delay_ns,
            fence_delay_ns: 0,
            write: PmemDeviceConfig::new(0).write,
            destage: true,
            destage_segment_size: FileDeviceConfig::new("", 0).segment_size,
        }
    }
}

impl PmemOptions {
    /// [`PmemOptions::ring_size`] set to `bytes`.
    pub fn ring_size(mut self, bytes: usize) -> PmemOptions {
        self.ring_size = bytes;
        self
    }
    /// [`PmemOptions::media`] set to `media`.
    pub fn media(mut self, media: Media) -> PmemOptions {
        self.media = media;
        self
    }
    /// [`PmemOptions::domain`] set to `domain`.
    pub fn domain(mut self, domain: Domain) -> PmemOptions {
        self.domain = domain;
        self
    }
    /// [`PmemOptions::write_delay_ns`] set to `ns`.
    pub fn write_delay_ns(mut self, ns: u64) -> PmemOptions {
        self.write_delay_ns = ns;
        self
    }
    /// [`PmemOptions::fence_delay_ns`] set to `ns`.
    pub fn fence_delay_ns(mut self, ns: u64) -> PmemOptions {
        self.fence_delay_ns = ns;
        self
    }
    /// [`PmemOptions::write`] set to `write`.
    pub fn write(mut self, write: PmemWrite) -> PmemOptions {
        self.write = write;
        self
    }
    /// [`PmemOptions::destage`] set to `on`.
    pub fn destage(mut self, on: bool) -> PmemOptions {
        self.destage = on;
        self
    }
    /// [`PmemOptions::destage_segment_size`] set to `bytes`.
    pub fn destage_segment_size(mut self, bytes: u64) -> PmemOptions {
        self.destage_segment_size = bytes;
        self
    }

    /// The configuration of the regions these options describe.
    pub(crate) fn region_config(&self) -> PmemConfig {
        PmemConfig::default()
            .domain(self.domain)
            .write_delay_ns(self.write_delay_ns)
            .media(self.media)
    }
}

/// Where the log goes.
#[derive(Debug, Clone)]
pub enum DeviceConfig {
    /// No device: records are discarded and count as durable at once, so nothing survives a
    /// crash. For the `none` baseline; schemes that log to devices refuse it.
    Null,
    /// Segment files under `log/` in the database directory, written back with fdatasync.
    File(FileOptions),
    /// Rings in persistent-memory region files under `pmem/`.
    Pmem(PmemOptions),
    /// Devices opened by a factory outside the engine (a replicated log service, see
    /// [`DeviceFactory`]); `braid.json` is also kept there.
    External(Arc<dyn DeviceFactory>),
}

impl DeviceConfig {
    /// The device kind as `braid.json` records it: `null`, `file`, `pmem`, or the external
    /// factory's own ([`DeviceFactory::kind`]).
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceConfig::Null => "null",
            DeviceConfig::File(_) => "file",
            DeviceConfig::Pmem(_) => "pmem",
            DeviceConfig::External(f) => f.kind(),
        }
    }
}

/// How to open a database.
///
/// The defaults are durable on the machine they run on: the `serial` scheme logging data to
/// segment files in the database directory with group fdatasync, so that a transaction is
/// durable once [`Txn::commit`](crate::Txn::commit) returns; and they keep the log bounded,
/// with a checkpoint in the background every 16 MiB of log ([`CheckpointOptions::default`]),
/// so the log and the time to reopen stay bounded however long the database runs. Choose a
/// scheme by name (`"taurus".parse()?`, with options as `"gsn:partition=page"`) or from its
/// typed configuration (`braid_engine::log::TaurusConfig::default().into()`).
///
/// Built from [`Options::default`] with the setters (or by assigning fields):
/// `Options::default().scheme("taurus".parse()?).streams(4).cc(Cc::Occ)`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The logging scheme and its own options.
    pub scheme: SchemeSpec,
    /// Data (after-images) or command (stored-procedure calls) logging.
    pub logging: LogKind,
    /// Data logging: one record per transaction at commit ([`Records::Txn`], the default), or
    /// one per write as it happens and a commit record ([`Records::Update`], the ARIES log of
    /// Shore-MT that Wang & Johnson and NV-Logging measure). Recovery reads both, so it is not
    /// stored: a database may be reopened with either.
    pub records: Records,
    /// Concurrency control.
    pub cc: Cc,
    /// Where the log goes (for schemes that log to devices).
    pub device: DeviceConfig,
    /// Emulated device speed: every log device (one per stream) waits like a device of this
    /// bandwidth and sync latency ([`braid_wal::device::PacedDevice`]), when the log is written
    /// and when recovery reads it back. A new database records it in `braid.json`
    /// ([`Meta::pace`](crate::Meta::pace)). `None` (the default): the pace the database
    /// records, so a log written to an emulated device is recovered at that device's speed
    /// (none for a new database: the devices run at their own speed). `Some(pace)` overrides
    /// the recorded pace for this open; an unlimited pace ([`Pace::is_unlimited`]) opens a
    /// database created with one at the devices' own speed.
    pub pace: Option<Pace>,
    /// Log streams asked for (the scheme may use fewer: serial uses one).
    pub streams: usize,
    /// Group commit: the longest a flusher waits for more log.
    pub group_delay: Duration,
    /// Group commit: flush once this many bytes are pending.
    pub group_bytes: usize,
    /// Most worker handles alive at once.
    pub max_workers: usize,
    /// Threads recovery may use.
    pub recovery_threads: usize,
    /// Mid-log corruption is an error ([`ScanMode::Strict`], the default) or the valid prefix
    /// is kept ([`ScanMode::Salvage`]).
    pub scan_mode: ScanMode,
    /// Test machinery (the `testing` feature): where files and persistent memory come from,
    /// the fault-injecting file system and simulated persistent memory of the crash tests.
    /// Without the feature, always the real machine.
    #[cfg(any(test, feature = "testing"))]
    pub env: Env,
    /// Stored in `braid.json` on creation (see [`Meta::app`](crate::Meta::app)).
    pub app: serde_json::Value,
    /// Automatic checkpoints and checkpoint loading. Default: a checkpoint every 16 MiB of log
    /// (and at least the last checkpoint's size of log), which bounds the log and the reopen
    /// time ([`CheckpointOptions::default`]); [`CheckpointOptions::off`] takes none (the log
    /// then grows until [`Db::checkpoint`](crate::Db::checkpoint) is called). Not recorded in
    /// `braid.json`: a database may be reopened with any setting.
    pub checkpoint: CheckpointOptions,
    /// How a scheme with a parallel recovery planner replays (taurus): parallel, the serial
    /// fallback, or chosen from the log (auto).
    pub recovery_plan: RecoveryPlan,
}

impl Default for Options {
    /// The serial scheme on files, 2PL, one stream, a checkpoint every 16 MiB of log
    /// ([`CheckpointOptions::default`]: a bounded log and reopen time); the logging, group
    /// commit, worker and recovery settings are the log's own ([`SchemeConfig::default`]).
    fn default() -> Self {
        let log = SchemeConfig::default();
        Options {
            scheme: SchemeSpec::default(),
            logging: log.logging,
            records: log.records,
            cc: Cc::TwoPl,
            device: DeviceConfig::File(FileOptions::default()),
            pace: None,
            streams: 1,
            group_delay: log.group_delay,
            group_bytes: log.group_bytes,
            max_workers: log.max_workers,
            recovery_threads: log.recovery_threads,
            scan_mode: log.scan_mode,
            #[cfg(any(test, feature = "testing"))]
            env: Env::default(),
            app: serde_json::Value::Null,
            checkpoint: CheckpointOptions::default(),
            recovery_plan: log.recovery_plan,
        }
    }
}

impl Options {
    /// [`Options::scheme`] set to `scheme`.
    pub fn scheme(mut self, scheme: SchemeSpec) -> Options {
        self.scheme = scheme;
        self
    }
    /// [`Options::logging`] set to `kind`.
    pub fn logging(mut self, kind: LogKind) -> Options {
        self.logging = kind;
        self
    }
    /// [`Options::records`] set to `records`.
    pub fn records(mut self, records: Records) -> Options {
        self.records = records;
        self
    }
    /// [`Options::cc`] set to `cc`.
    pub fn cc(mut self, cc: Cc) -> Options {
        self.cc = cc;
        self
    }
    /// [`Options::device`] set to `device`.
    pub fn device(mut self, device: DeviceConfig) -> Options {
        self.device = device;
        self
    }
    /// [`Options::pace`] set to `pace`.
    pub fn pace(mut self, pace: Option<Pace>) -> Options {
        self.pace = pace;
        self
    }
    /// [`Options::streams`] set to `n`.
    pub fn streams(mut self, n: usize) -> Options {
        self.streams = n;
        self
    }
    /// [`Options::group_delay`] set to `d`.
    pub fn group_delay(mut self, d: Duration) -> Options {
        self.group_delay = d;
        self
    }
    /// [`Options::group_bytes`] set to `n`.
    pub fn group_bytes(mut self, n: usize) -> Options {
        self.group_bytes = n;
        self
    }
    /// [`Options::max_workers`] set to `n`.
    pub fn max_workers(mut self, n: usize) -> Options {
        self.max_workers = n;
        self
    }
    /// [`Options::recovery_threads`] set to `n`.
    pub fn recovery_threads(mut self, n: usize) -> Options {
        self.recovery_threads = n;
        self
    }
    /// [`Options::scan_mode`] set to `mode`.
    pub fn scan_mode(mut self, mode: ScanMode) -> Options {
        self.scan_mode = mode;
        self
    }
    /// [`Options::env`] set to `env` (the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
    pub fn env(mut self, env: Env) -> Options {
        self.env = env;
        self
    }
    /// [`Options::app`] set to `app`.
    pub fn app(mut self, app: serde_json::Value) -> Options {
        self.app = app;
        self
    }
    /// [`Options::checkpoint`] set to `checkpoint`.
    pub fn checkpoint(mut self, checkpoint: CheckpointOptions) -> Options {
        self.checkpoint = checkpoint;
        self
    }
    /// [`Options::recovery_plan`] set to `plan`.
    pub fn recovery_plan(mut self, plan: RecoveryPlan) -> Options {
        self.recovery_plan = plan;
        self
    }

    /// Where the database's files and persistent memory come from: the real machine unless a
    /// test gave its simulations.
    pub(crate) fn env_in_use(&self) -> Env {
        #[cfg(any(test, feature = "testing"))]
        return self.env.clone();
        #[cfg(not(any(test, feature = "testing")))]
        Env::default()
    }

    /// Whether a database can be opened with these options at all (the scheme's needs against the
    /// device, the logging kind and the concurrency control), with a message saying what to change
    /// if not. [`OpenBuilder::open`](crate::OpenBuilder::open) checks this first; tools call it
    /// before starting work.
    pub fn check(&self) -> Result<(), EngineError> {
        let name = self.scheme.name();
        match self.scheme.log_place() {
            LogPlace::Region if !matches!(self.device, DeviceConfig::Pmem(_)) => {
                return Err(EngineError::Unsupported(Unsupported::NeedsPmem {
                    scheme: name.to_string(),
                }));
            }
            LogPlace::Devices if matches!(self.device, DeviceConfig::Null) => {
                return Err(EngineError::Unsupported(Unsupported::NeedsDevice {
                    scheme: name.to_string(),
                }));
            }
            LogPlace::Region if self.pace.is_some_and(|p| !p.is_unlimited()) => {
                return Err(EngineError::Unsupported(Unsupported::PacedRegion {
                    scheme: name.to_string(),
                }));
            }
            _ => {}
        }
        let refused = |refused: Refused, why: &'static str| {
            EngineError::Unsupported(Unsupported::Log(braid_wal::Unsupported::Scheme {
                scheme: self.scheme.name(),
                refused,
                why,
            }))
        };
        if matches!(self.device, DeviceConfig::Pmem(_))
            && let Some(why) = self.scheme.pmem_refusal()
        {
            return Err(refused(Refused::Pmem, why));
        }
        if self.logging == LogKind::Command
            && let Some(why) = self.scheme.command_logging_refusal()
        {
            return Err(refused(Refused::CommandLogging, why));
        }
        if self.cc == Cc::Mvcc
            && let Some(why) = self.scheme.mvcc_refusal()
        {
            return Err(refused(Refused::Mvcc, why));
        }
        if self.records == Records::Update {
            if let Some(why) = self.scheme.update_records_refusal() {
                return Err(refused(Refused::UpdateRecords, why));
            }
            if self.logging == LogKind::Command {
                return Err(EngineError::Unsupported(Unsupported::UpdateRecordsCommand));
            }
            if self.cc == Cc::Mvcc {
                return Err(EngineError::Unsupported(Unsupported::UpdateRecordsMvcc));
            }
        }
        Ok(())
    }
}
