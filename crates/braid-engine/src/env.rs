//! Where a database keeps its bytes: the real machine (files through [`RealFs`], persistent
//! memory as mapped region files), or simulations for power-failure tests (a
//! [`FaultFs`](braid_wal::fs::FaultFs)-style file system and [`CrashSim`] regions) that can be
//! crashed as a whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(any(test, feature = "testing"))]
use braid_pmem::{CrashMode, CrashSim, PersistTrip};
use braid_pmem::{PmemConfig, PmemError, Region};
use braid_wal::fs::{Fs, OpenOpts, RealFs, SnapshotFs};
#[cfg(any(test, feature = "testing"))]
use parking_lot::Mutex;

use crate::error::EngineError;

/// Simulated persistent memory: CrashSim regions by path, crashed together. Test machinery
/// (the `testing` feature).
#[cfg(any(test, feature = "testing"))]
#[derive(Clone, Default)]
pub struct SimPmem {
    regions: Arc<Mutex<BTreeMap<PathBuf, Region>>>,
    /// Tripwire set on every region, present and future (see [`SimPmem::set_trip`]).
    trip: Arc<Mutex<Option<Arc<PersistTrip>>>>,
}

#[cfg(any(test, feature = "testing"))]
impl std::fmt::Debug for SimPmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPmem")
            .field("regions", &self.regions.lock().len())
            .finish()
    }
}

#[cfg(any(test, feature = "testing"))]
impl SimPmem {
    /// No regions yet.
    pub fn new() -> SimPmem {
        SimPmem::default()
    }

    /// The region at `path`, created (zeroed) if absent.
    pub fn region(&self, path: &Path, size: usize, cfg: PmemConfig) -> Result<Region, PmemError> {
        let mut m = self.regions.lock();
        if let Some(r) = m.get(path) {
            if r.len() != size {
                return Err(PmemError::SizeMismatch {
                    path: path.to_path_buf(),
                    found: r.len() as u64,
                    expected: size as u64,
                });
            }
            return Ok(r.clone());
        }
        let r = CrashSim::region(size, cfg);
        if let Some(t) = &*self.trip.lock() {
            r.set_trip(Arc::clone(t))?;
        }
        m.insert(path.to_path_buf(), r.clone());
        Ok(r)
    }

    /// Cut power: a new set of regions holding what each region had made durable (and,
    /// depending on `mode`, some of what it had not). `mode` gets each region's index, so each
    /// may use its own seed.
    pub fn crash(&self, mode: impl Fn(usize) -> CrashMode) -> Result<SimPmem, PmemError> {
        let m = self.regions.lock();
        // All regions are cut at one instant (no fence completes in any of them meanwhile), as
        // a real power failure cuts them all.
        let list: Vec<(&Region, CrashMode)> =
            m.values().enumerate().map(|(i, r)| (r, mode(i))).collect();
        let crashed = Region::crash_together(&list)?;
        let out: BTreeMap<PathBuf, Region> = m.keys().cloned().zip(crashed).collect();
        Ok(SimPmem {
            regions: Arc::new(Mutex::new(out)),
            trip: Arc::default(),
        })
    }

    /// Count every fence of every region (those made later too) on `trip`, which holds the
    /// fence that trips before it takes effect (see [`PersistTrip`]); share one trip with the
    /// file system's [`FaultFs::set_trip`](braid_wal::fs::FaultFs::set_trip) to place a power cut
    /// by persist-event count. The crashed regions have no trip.
    pub fn set_trip(&self, trip: Arc<PersistTrip>) -> Result<(), PmemError> {
        let m = self.regions.lock();
        *self.trip.lock() = Some(Arc::clone(&trip));
        for r in m.values() {
            r.set_trip(Arc::clone(&trip))?;
        }
        Ok(())
    }

    /// The regions, in path order (tests freeze them one by one to place a crash point).
    pub fn regions(&self) -> Vec<Region> {
        self.regions.lock().values().cloned().collect()
    }

    /// Stop every region's durable image after `events` more persist events each.
    #[cfg(test)]
    pub(crate) fn freeze_after(&self, events: u64) -> Result<(), PmemError> {
        for r in self.regions.lock().values() {
            r.freeze_after(events)?;
        }
        Ok(())
    }
}

/// Where persistent-memory regions come from.
#[derive(Clone, Debug)]
#[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
pub(crate) enum PmemEnv {
    /// Region files mapped from the file system (see [`braid_pmem::Region`]).
    Files,
    /// Simulated regions that power-failure tests crash (the `testing` feature).
    #[cfg(any(test, feature = "testing"))]
    Sim(SimPmem),
    /// Private DRAM copies of region files, taken by [`Env::snapshot`]; a region the copy
    /// lacks is a new zeroed one in DRAM. Nothing reaches a file.
    Snapshot(Arc<BTreeMap<PathBuf, Region>>),
}

/// A database's environment: the file system its files live on and where its
/// persistent-memory regions come from. The default is the real machine.
#[derive(Clone, Debug)]
#[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
pub(crate) struct Env {
    /// File system for `braid.json`, log segments and checkpoints.
    pub fs: Arc<dyn Fs>,
    /// Source of persistent-memory regions.
    pub pmem: PmemEnv,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            fs: Arc::new(RealFs),
            pmem: PmemEnv::Files,
        }
    }
}

impl Env {
    /// A private in-memory copy of every file below the directories `roots` (a database directory
    /// and the places outside it that hold its files), for reading a database without changing a
    /// byte of it: files through a [`SnapshotFs`], persistent-memory region files (`*.region`) as
    /// DRAM copies. Checkpoints are copied first and region files before the rest, so that what a
    /// live writer does meanwhile (append, de-stage, truncate after a checkpoint) leaves the copy a
    /// state a crash could leave, or one that recovery refuses (see
    /// [`OpenBuilder::open_read_only`](crate::OpenBuilder::open_read_only)). Memory: the size of
    /// the files.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn snapshot(roots: &[PathBuf]) -> Result<Env, EngineError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EngineError::Io { path, source }
        };
        let fs = SnapshotFs::new();
        let is_region = |p: &Path| p.extension().is_some_and(|e| e == "region");
        for root in roots {
            let ckpt = root.join(crate::checkpoint::DIR);
            fs.copy_tree(&ckpt, &|_| false).map_err(io(&ckpt))?;
        }
        let mut regions = BTreeMap::new();
        for root in roots {
            for path in region_files(root).map_err(io(root))? {
                regions.insert(path.clone(), Region::snapshot(&path, None)?);
            }
        }
        for root in roots {
            fs.copy_tree(root, &is_region).map_err(io(root))?;
        }
        Ok(Env {
            fs: Arc::new(fs),
            pmem: PmemEnv::Snapshot(Arc::new(regions)),
        })
    }

    /// Open or create the pmem region at `path` with `size` usable bytes.
    pub(crate) fn region(
        &self,
        path: &Path,
        size: usize,
        cfg: PmemConfig,
    ) -> Result<Region, EngineError> {
        match &self.pmem {
            #[cfg(any(test, feature = "testing"))]
            PmemEnv::Sim(s) => Ok(s.region(path, size, cfg)?),
            PmemEnv::Snapshot(copies) => match copies.get(path) {
                Some(r) if r.len() != size => Err(PmemError::SizeMismatch {
                    path: path.to_path_buf(),
                    found: r.len() as u64,
                    expected: size as u64,
                }
                .into()),
                Some(r) => Ok(r.clone()),
                None => Ok(Region::anonymous(size)),
            },
            PmemEnv::Files => {
                if path.exists() {
                    Ok(Region::open(path, Some(size), cfg)?)
                } else {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| EngineError::Io {
                            path: parent.to_path_buf(),
                            source: e,
                        })?;
                    }
                    Ok(Region::create(path, size, cfg)?)
                }
            }
        }
    }

    /// Read a whole small file, or None if it does not exist.
    pub(crate) fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>, EngineError> {
        if !self.fs.exists(path) {
            return Ok(None);
        }
        let io = |e| EngineError::Io {
            path: path.to_path_buf(),
            source: e,
        };
        let f = self.fs.open(path, OpenOpts::default()).map_err(io)?;
        let len = f.len().map_err(io)? as usize;
        let mut buf = vec![0u8; len];
        let mut at = 0;
        while at < len {
            let n = f.read_at(at as u64, &mut buf[at..]).map_err(io)?;
            if n == 0 {
                break;
            }
            at += n;
        }
        buf.truncate(at);
        Ok(Some(buf))
    }

    /// Replace a small file atomically: write a temporary, fsync, rename, fsync the directory.
    pub(crate) fn write_file_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let tmp = path.with_extension("tmp");
        let io = |p: &Path, e| EngineError::Io {
            path: p.to_path_buf(),
            source: e,
        };
        self.fs.create_dir_all(dir).map_err(|e| io(dir, e))?;
        let f = self
            .fs
            .open(
                &tmp,
                OpenOpts {
                    create: true,
                    truncate: true,
                    direct: false,
                },
            )
            .map_err(|e| io(&tmp, e))?;
        f.write_all_at(0, bytes).map_err(|e| io(&tmp, e))?;
        f.sync_data().map_err(|e| io(&tmp, e))?;
        drop(f);
        self.fs.rename(&tmp, path).map_err(|e| io(path, e))?;
        self.fs.sync_dir(dir).map_err(|e| io(dir, e))?;
        Ok(())
    }
}

/// The region files (`*.region`) below `dir`, recursively; none if `dir` does not exist.
fn region_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            out.extend(region_files(&path)?);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "region") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}
