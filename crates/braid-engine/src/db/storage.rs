//! Storage construction: where a scheme keeps its log (see the `db` module doc). Builds the
//! devices of each stream (segment files, persistent-memory rings with de-staging, or nothing)
//! or the persistent region of a scheme that keeps its log in one, under the database directory
//! (`nvdisk`: in `/dev/shm`, see [`Meta::outside`]), each slowed to [`Options::pace`] if one is set
//! (a striped stream paces each of its member devices).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::device::NullDevice;
use braid_wal::device::PacedDevice;
use braid_wal::device::StripedDevice;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::device::{PmemDevice, PmemDeviceConfig};
use braid_wal::scheme::{LogPlace, RegionStorage, Storage};

use super::meta::Meta;
use super::options::{DeviceConfig, FileOptions, Options};
use crate::env::Env;
use crate::error::EngineError;

/// Make `opts.device` the device the scheme logs to: none for a scheme that logs nowhere, a
/// file device for `nvdisk`.
pub(super) fn fit_device(opts: &mut Options) {
    match opts.scheme.log_place() {
        LogPlace::Nowhere => opts.device = DeviceConfig::Null,
        // NV-Disk is a file-system log on NVRAM: always a file device in /dev/shm, paying
        // the NVM write latency the pmem device was given, with Shore-MT's log buffer of the
        // paper's size (Huang et al. 2014, Sec. 6.1: "For NV-Disk, the log buffer is set to
        // 80 MB by default").
        LogPlace::NvramFiles if !matches!(opts.device, DeviceConfig::File(_)) => {
            let (nvm_write_delay_ns, nvm_barrier_delay_ns) = match &opts.device {
                DeviceConfig::Pmem(p) => (p.write_delay_ns, p.fence_delay_ns),
                _ => (0, 0),
            };
            opts.device = DeviceConfig::File(FileOptions {
                nvm_write_delay_ns,
                nvm_barrier_delay_ns,
                buffer_size: NVDISK_LOG_BUFFER,
                ..FileOptions::default()
            });
        }
        _ => {}
    }
}

/// NV-Disk's log buffer (the file device's DRAM ring): the paper's 80 MB.
const NVDISK_LOG_BUFFER: usize = 80 << 20;

/// The directory outside `dir` where a new `nvdisk` database in `dir` keeps its log (recorded
/// in [`Meta::outside`]): `None` if `dir` lies in `/dev/shm` (the log is `log/` inside it),
/// else a new directory under `/dev/shm/braid-nvdisk/`, named after the database's path and
/// made unique, so a database created again at the same path never finds an old log.
pub(super) fn new_nvdisk_place(dir: &Path) -> Option<PathBuf> {
    let flat = shm_outside(dir)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = format!("{nanos:x}-{}", std::process::id());
    Some(PathBuf::from(NVDISK_ROOT).join(format!("{flat}-{unique}")))
}

/// Where `nvdisk` logs outside their database directory live.
pub(super) const NVDISK_ROOT: &str = "/dev/shm/braid-nvdisk";

/// The log directory of the `nvdisk` database in `dir` whose `braid.json` is `meta`.
fn nvdisk_log_dir(dir: &Path, meta: &Meta) -> PathBuf {
    if let Some(place) = meta.outside.first() {
        return place.join("log");
    }
    // Databases created before `outside` was recorded: the place was derived from the path.
    match shm_outside(dir) {
        None => std::path::absolute(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .join("log"),
        Some(flat) => PathBuf::from(NVDISK_ROOT).join(flat).join("log"),
    }
}

/// `None` if `dir` lies in `/dev/shm` (an nvdisk log then stays inside it); else `dir`'s
/// absolute path with `/` as `_`, which names its log's directory under [`NVDISK_ROOT`].
fn shm_outside(dir: &Path) -> Option<String> {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    (!abs.starts_with("/dev/shm")).then(|| {
        abs.to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "_")
    })
}

/// Where the scheme keeps its log (see the module doc).
pub(super) fn make_storage(
    dir: &Path,
    opts: &Options,
    env: &Env,
    streams: usize,
    meta: &Meta,
) -> Result<Storage, EngineError> {
    match opts.scheme.log_place() {
        LogPlace::Nowhere => Ok(Storage::Nothing),
        LogPlace::Devices | LogPlace::NvramFiles => Ok(Storage::Devices(make_devices(
            dir, opts, env, streams, meta,
        )?)),
        LogPlace::Region => {
            let DeviceConfig::Pmem(p) = &opts.device else {
                return Err(EngineError::Unsupported(crate::Unsupported::NeedsPmem {
                    scheme: opts.scheme.name().to_string(),
                }));
            };
            let pcfg = p.region_config();
            let path = dir
                .join("pmem")
                .join(format!("{}.region", opts.scheme.name()));
            let region = env.region(&path, p.ring_size, pcfg)?;
            region.set_fence_delay_ns(p.fence_delay_ns);
            Ok(Storage::Region(RegionStorage {
                region,
                fs: env.fs.clone(),
                backup_dir: dir.join(format!("{}-backup", opts.scheme.name())),
                write: p.write,
            }))
        }
    }
}

fn make_devices(
    dir: &Path,
    opts: &Options,
    env: &Env,
    streams: usize,
    meta: &Meta,
) -> Result<Vec<Arc<dyn Device>>, EngineError> {
    if let DeviceConfig::External(f) = &opts.device {
        let out = f.open_devices(streams)?;
        return Ok(match opts.pace.filter(|p| !p.is_unlimited()) {
            Some(pace) => out
                .into_iter()
                .map(|d| Arc::new(PacedDevice::new(d, pace)) as Arc<dyn Device>)
                .collect(),
            None => out,
        });
    }
    let mut out: Vec<Arc<dyn Device>> = Vec::with_capacity(streams);
    for i in 0..streams {
        let id = i as u32;
        match &opts.device {
            DeviceConfig::Null => out.push(Arc::new(NullDevice::new())),
            DeviceConfig::File(f) => {
                let log_dir = if opts.scheme.log_place() == LogPlace::NvramFiles {
                    nvdisk_log_dir(dir, meta)
                } else {
                    dir.join("log")
                };
                let member = |dir: PathBuf| -> Result<Arc<dyn Device>, EngineError> {
                    let mut cfg = FileDeviceConfig::new(dir, id);
                    cfg.segment_size = f.segment_size;
                    cfg.buffer_size = f.buffer_size;
                    cfg.direct = f.direct;
                    cfg.nvm_write_delay_ns = f.nvm_write_delay_ns;
                    cfg.nvm_barrier_delay_ns = f.nvm_barrier_delay_ns;
                    Ok(Arc::new(FileDevice::open(env.fs.clone(), cfg)?))
                };
                if f.stripe > 1 {
                    let members = (0..f.stripe)
                        .map(|k| member(log_dir.join(format!("disk-{k}"))))
                        .collect::<Result<Vec<_>, _>>()?;
                    out.push(Arc::new(StripedDevice::open(
                        env.fs.clone(),
                        &log_dir,
                        id,
                        members,
                        f.stripe_unit,
                        opts.pace.filter(|p| !p.is_unlimited()),
                    )?));
                } else {
                    out.push(member(log_dir)?);
                }
            }
            // Opened above.
            DeviceConfig::External(_) => {}
            DeviceConfig::Pmem(p) => {
                let pcfg = p.region_config();
                let path = dir.join("pmem").join(format!("stream-{i:03}.region"));
                let region = env.region(&path, p.ring_size + braid_pmem::HEADER_SIZE, pcfg)?;
                region.set_fence_delay_ns(p.fence_delay_ns);
                let destage = p.destage.then(|| {
                    let mut c = FileDeviceConfig::new(dir.join("destage"), id);
                    c.segment_size = p.destage_segment_size;
                    c
                });
                let mut cfg = PmemDeviceConfig::new(id);
                cfg.write = p.write;
                cfg.destage = destage;
                out.push(Arc::new(PmemDevice::open_with_fs(
                    region,
                    cfg,
                    env.fs.clone(),
                )?));
            }
        }
    }
    let striped = matches!(&opts.device, DeviceConfig::File(f) if f.stripe > 1);
    if let Some(pace) = opts.pace.filter(|p| !p.is_unlimited())
        && !matches!(opts.device, DeviceConfig::Null)
        && !striped
    {
        out = out
            .into_iter()
            .map(|d| Arc::new(PacedDevice::new(d, pace)) as Arc<dyn Device>)
            .collect();
    }
    Ok(out)
}
