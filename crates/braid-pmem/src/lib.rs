//! braid-pmem: persistent-memory regions and the persistence primitives every braid log and the
//! REWIND library stand on.
//!
//! API SKELETON — bodies are filled in by the implementation.

use std::path::{Path, PathBuf};

/// Errors of the persistent-memory layer.
#[derive(Debug, thiserror::Error)]
pub enum PmemError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, #[source] source: std::io::Error },
    #[error("{path} is not a braid region (bad magic); remove it or point braid at another file")]
    NotARegion { path: PathBuf },
    #[error("{path}: region format version {found}, this braid reads version {expected}")]
    Version { path: PathBuf, found: u32, expected: u32 },
    #[error("{path}: region holds {found} bytes but {expected} were asked for; open it with its size or recreate it")]
    SizeMismatch { path: PathBuf, found: u64, expected: u64 },
    #[error("region operation needs a CrashSim region")]
    NotSimulated,
}

/// Where the persistence domain ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Volatile CPU caches: a store is durable after flush + fence.
    Adr,
    /// Durable CPU caches (eADR): a store is durable once visible; fence only orders.
    Eadr,
}

/// Cache-line write-back instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushKind { Clwb, ClflushOpt, Clflush, None }

impl FlushKind {
    /// Best instruction this CPU has (CLWB, else CLFLUSHOPT, else CLFLUSH), detected at run time.
    pub fn detect() -> FlushKind { unimplemented!() }
}

#[derive(Debug, Clone, Copy)]
pub struct PmemConfig {
    pub domain: Domain,
    /// `None` = detect at run time.
    pub flush: Option<FlushKind>,
    /// Emulated extra NVM write latency per persisted cache line (busy-wait), nanoseconds.
    pub write_delay_ns: u64,
}
impl Default for PmemConfig {
    fn default() -> Self { PmemConfig { domain: Domain::Adr, flush: None, write_delay_ns: 0 } }
}

pub const CACHE_LINE: usize = 64;
/// Bytes reserved at the start of a region file for its header; offsets in the API are relative
/// to the usable area after it.
pub const HEADER_SIZE: usize = 4096;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmemStats { pub lines_flushed: u64, pub fences: u64, pub nt_bytes: u64 }

/// How a simulated power failure treats lines that were not persisted.
#[derive(Debug, Clone, Copy)]
pub enum CrashMode {
    DropUnpersisted,
    KeepRandom { seed: u64, keep_probability: f64 },
}

/// A mapped region: file-backed persistent memory, anonymous DRAM, or a CrashSim image.
/// Cheap to clone (shared handle); Send + Sync. Concurrent writers must use disjoint ranges.
#[derive(Clone)]
pub struct Region { _p: () }

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str("Region") }
}

impl Region {
    pub fn create(_path: &Path, _size: usize, _cfg: PmemConfig) -> Result<Region, PmemError> { unimplemented!() }
    pub fn open(_path: &Path, _expected_size: Option<usize>, _cfg: PmemConfig) -> Result<Region, PmemError> { unimplemented!() }
    pub fn anonymous(_size: usize) -> Region { unimplemented!() }
    pub fn len(&self) -> usize { unimplemented!() }
    pub fn is_empty(&self) -> bool { self.len() == 0 }
    pub fn config(&self) -> PmemConfig { unimplemented!() }
    pub fn path(&self) -> Option<&Path> { unimplemented!() }
    pub fn is_volatile(&self) -> bool { unimplemented!() }
    pub fn write(&self, _off: usize, _src: &[u8]) { unimplemented!() }
    pub fn write_nt(&self, _off: usize, _src: &[u8]) { unimplemented!() }
    pub fn read(&self, _off: usize, _dst: &mut [u8]) { unimplemented!() }
    pub fn fill(&self, _off: usize, _len: usize, _byte: u8) { unimplemented!() }
    pub fn load_u64(&self, _off: usize) -> u64 { unimplemented!() }
    pub fn store_u64(&self, _off: usize, _v: u64) { unimplemented!() }
    pub fn cas_u64(&self, _off: usize, _old: u64, _new: u64) -> Result<u64, u64> { unimplemented!() }
    pub fn flush(&self, _off: usize, _len: usize) { unimplemented!() }
    pub fn fence(&self) { unimplemented!() }
    pub fn persist(&self, _off: usize, _len: usize) { unimplemented!() }
    pub fn stats(&self) -> PmemStats { unimplemented!() }
    pub fn crash(&self, _mode: CrashMode) -> Result<Region, PmemError> { unimplemented!() }
    pub fn freeze_after(&self, _events: u64) -> Result<(), PmemError> { unimplemented!() }
    pub fn persist_events(&self) -> u64 { unimplemented!() }
}

/// Builder of simulated regions for power-failure tests.
pub struct CrashSim;
impl CrashSim {
    pub fn region(_size: usize, _cfg: PmemConfig) -> Region { unimplemented!() }
}
