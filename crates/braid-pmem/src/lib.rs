//! braid-pmem: persistent-memory regions and the persistence primitives every braid log and the
//! REWIND library stand on.
//!
//! A [`Region`] is a byte range that is either a mapped file (persistent memory on a DAX file
//! system, or a file on any other file system written back with `msync`, or a file in
//! `/dev/shm` standing in for persistent memory; see [`Media`]), anonymous DRAM
//! ([`Region::anonymous`], a volatile log buffer), or a simulated persistent memory built by
//! [`CrashSim`] that keeps a live and a durable image so tests can cut the power at any point.
//!
//! Durability follows the x86 persistence model the papers assume (Wang & Johnson 2014 §2,
//! Huang et al. 2014 §2, REWIND §2): under [`Domain::Adr`] a store is durable once its cache
//! line was written back (CLWB, else CLFLUSHOPT, else CLFLUSH, chosen at run time) and a fence
//! (SFENCE) ordered the write-back; under [`Domain::Eadr`] the caches are in the persistence
//! domain and only the fence is needed, to order streaming stores. The slower write latency of
//! NVM is emulated the way the papers do it, with an extra busy-wait per persisted cache line.
//!
//! Flush + fence reach the persistence domain only when the file is really mapped onto
//! persistent memory (DAX, `MAP_SYNC`). On any other file system they reach the page cache,
//! which a power cut loses: there a region is power-safe only with [`Media::Msync`], which
//! writes every flushed range back with `msync`. [`Region::media`] says what a region got,
//! [`Region::is_power_safe`] whether persisted data survives a power cut, and
//! [`Region::check`] whether an `msync` failed.
//!
//! Memory model: a region is shared memory. Any number of threads may use one region at the
//! same time. [`Region::write`], [`Region::read`] and [`Region::fill`] access the mapping only
//! through aligned 8-byte atomics, so overlapping concurrent calls are a logical error (the
//! bytes read or left are some mix of the writes) but never undefined behaviour;
//! [`Region::write_nt`] is the exception, see its documentation. The 8-byte atomic accessors
//! ([`Region::load_u64`], [`Region::store_u64`], [`Region::cas_u64`]) are meant for concurrent
//! use of the same word. Out-of-range or misaligned accesses are caller bugs and panic with a
//! message naming the offending range.
//!
//! `examples/persist.rs` shows the whole cycle: create a region file, write and persist a
//! record, reopen and read it, and a [`CrashSim`] power cut that keeps what was persisted and
//! drops what was not (`cargo run -p braid-pmem --example persist`).
//!
//! This crate is the project's `unsafe` boundary: mappings, persistence instructions, streaming
//! stores and signal handlers all need `unsafe`, and it lives here (besides the SIMD helpers of
//! `braid-wal`'s LSN vectors), every block with a `SAFETY:` comment, behind safe APIs.

#![deny(missing_docs)]
// The workspace denies `unsafe_code`; this crate is where the project's unsafe code lives (see
// the crate documentation), so it is allowed here and nowhere else but one SIMD module.
#![allow(unsafe_code)]

mod crash;
mod delay;
pub mod heap;
pub mod lock;
mod persist;
mod prefetch;
mod region;
pub mod signal;
mod stats;
mod trip;

use std::path::PathBuf;

pub use crash::{CrashMode, CrashSim};
pub use delay::busy_wait_ns;
pub use prefetch::prefetch_lines;
pub use region::{Region, Words, is_ram_backed};
pub use stats::PmemStats;
pub use trip::PersistTrip;

/// Errors of the persistent-memory layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PmemError {
    /// An I/O call on a region file (open, create, resize, map, ...) failed.
    #[error("{path}: {source}")]
    Io {
        /// The region file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is shorter than a region header or does not start with [`REGION_MAGIC`].
    #[error(
        "{path} is not a braid region (too short or bad magic); remove it or point braid at another file"
    )]
    NotARegion {
        /// The file that was opened.
        path: PathBuf,
    },
    /// The region file has another format version than [`REGION_VERSION`].
    #[error(
        "{path}: region format version {found}, this braid reads version {expected}; recreate the region with this braid or use the braid that wrote it"
    )]
    Version {
        /// The region file.
        path: PathBuf,
        /// Version in the file's header.
        found: u32,
        /// Version this crate reads ([`REGION_VERSION`]).
        expected: u32,
    },
    /// The region's usable size is not the size the caller expected.
    #[error(
        "{path}: region holds {found} bytes but {expected} were asked for; open it with its size or recreate it"
    )]
    SizeMismatch {
        /// The region file.
        path: PathBuf,
        /// Usable bytes recorded in the header.
        found: u64,
        /// Usable bytes the caller asked for.
        expected: u64,
    },
    /// The header's checksum does not match, or the size it records does not fit the file or
    /// this machine; `damage` says which.
    #[error(
        "{path}: damaged region header ({damage}); the file cannot be trusted, recreate the region"
    )]
    CorruptHeader {
        /// The region file.
        path: PathBuf,
        /// What is wrong with the header.
        damage: HeaderDamage,
    },
    /// The configuration asked for a flush instruction this CPU does not have.
    #[error(
        "the cache-line flush instruction {kind:?} is not supported by this CPU; leave `flush` unset to detect the best one"
    )]
    FlushUnsupported {
        /// The instruction asked for.
        kind: FlushKind,
    },
    /// A simulated-crash operation ([`Region::crash`], ...) was called on a region not made by
    /// [`CrashSim`].
    #[error("region operation needs a CrashSim region")]
    NotSimulated,
    /// [`Media::Dax`] was required but the file system cannot map the file with `MAP_SYNC`.
    #[error(
        "{path} is not on a DAX file system (mapping it with MAP_SYNC failed: {source}), so flush + fence would not make it durable; put the region on a DAX-mounted persistent-memory file system, or pass Media::Msync (durable on any file system, an msync per flush) or Media::Emulated (not power-safe, for benchmarks)"
    )]
    NotDax {
        /// The region file.
        path: PathBuf,
        /// Why the `MAP_SYNC` mapping was refused.
        #[source]
        source: std::io::Error,
    },
    /// The region file is open in another process, or through another handle in this one
    /// (see [`lock`]): a region has one user at a time.
    #[error(
        "{path} is in use by {}; a region has one user at a time: close the other handle or wait for that process to exit",
        lock::holder_text(*.holder)
    )]
    InUse {
        /// The region file.
        path: PathBuf,
        /// The holder's process id, where the kernel tells it.
        holder: Option<u32>,
    },
    /// An `msync` of the region failed once; from then on [`Region::check`] reports it, since
    /// data persisted since may be lost.
    #[error(
        "{path}: msync failed ({source}); data persisted to this region since may be lost, so its persistence can no longer be trusted; stop using it and recover from the file"
    )]
    Msync {
        /// The region file.
        path: PathBuf,
        /// The first `msync` failure.
        #[source]
        source: std::io::Error,
    },
}

/// What is wrong with a region file's header ([`PmemError::CorruptHeader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderDamage {
    /// The checksum stored in the header is not the checksum of the header's bytes.
    #[error("checksum {found:#010x}, expected {expected:#010x}")]
    Checksum {
        /// The checksum stored in the header.
        found: u32,
        /// The checksum of the header's bytes.
        expected: u32,
    },
    /// The header records more usable bytes than the file holds after it.
    #[error("header records {size} usable bytes but the file holds only {file_len} bytes")]
    Truncated {
        /// Usable bytes the header records.
        size: u64,
        /// Bytes of the whole file, header included.
        file_len: u64,
    },
    /// The recorded size does not fit this machine's address space.
    #[error("recorded size {size} does not fit this machine's address space")]
    SizeTooLarge {
        /// Usable bytes the header records.
        size: u64,
    },
}

/// What backs a file region and therefore what `persist` means for it.
///
/// Anonymous regions report [`Media::Emulated`] and simulated ([`CrashSim`]) regions
/// [`Media::Dax`], since they model real persistent memory.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    strum::Display,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(serialize_all = "lowercase")]
pub enum Media {
    /// Map with `MAP_SHARED_VALIDATE | MAP_SYNC` if the file system allows it (DAX: flush +
    /// fence is durable, the region resolves to [`Media::Dax`]), else fall back to
    /// [`Media::Msync`]: durable on the machine it runs on either way. A file on a RAM file
    /// system (tmpfs or ramfs, such as `/dev/shm`), which nothing makes survive a power cut,
    /// resolves to [`Media::Emulated`].
    #[default]
    Auto,
    /// Require a DAX mapping (`MAP_SYNC`): flush + fence is durable. Opening a file that is not
    /// on a DAX file system is refused with [`PmemError::NotDax`].
    Dax,
    /// Page-cache mapping; every `flush`ed range (and every `write_nt` range) is also written
    /// back with `msync(MS_SYNC)` over its page-aligned span before the call returns, so
    /// persist = durable on any file system. Slow: like an fdatasync per flush. A failed
    /// `msync` is kept and reported by [`Region::check`].
    Msync,
    /// Flush + fence only. NOT power-safe on non-DAX media: an emulation of persistent memory
    /// for benchmarks (e.g. files under `/dev/shm`), whose results callers must label as such.
    Emulated,
}

impl Media {
    /// Whether data persisted on this (resolved) media survives a power cut: [`Media::Dax`] and
    /// [`Media::Msync`].
    pub fn is_power_safe(self) -> bool {
        matches!(self, Media::Dax | Media::Msync)
    }
}

/// Where the persistence domain ends.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::EnumString, strum::VariantNames,
)]
#[strum(serialize_all = "lowercase")]
pub enum Domain {
    /// Volatile CPU caches: a store is durable after flush + fence.
    Adr,
    /// Durable CPU caches (eADR): a store is durable once visible; fence only orders.
    Eadr,
}

/// Cache-line write-back instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushKind {
    /// `CLWB`: writes the line back and may keep it cached.
    Clwb,
    /// `CLFLUSHOPT`: writes back and invalidates, weakly ordered.
    ClflushOpt,
    /// `CLFLUSH`: writes back and invalidates, ordered with other CLFLUSHes and stores.
    Clflush,
    /// No flush instruction at all (flush calls are still counted and delayed); used to
    /// measure the cost of everything but the write-back, or on non-x86 targets.
    None,
}

impl FlushKind {
    /// Best instruction this CPU has (CLWB, else CLFLUSHOPT, else CLFLUSH), detected at run time.
    /// Non-x86 targets have none of them and get [`FlushKind::None`].
    pub fn detect() -> FlushKind {
        [FlushKind::Clwb, FlushKind::ClflushOpt, FlushKind::Clflush]
            .into_iter()
            .find(|k| k.is_supported())
            .unwrap_or(FlushKind::None)
    }

    /// Whether this CPU can execute the instruction (always true for [`FlushKind::None`]).
    pub fn is_supported(self) -> bool {
        persist::flush_supported(self)
    }
}

/// How a region persists: durability domain, flush instruction, emulated NVM latency, and
/// what backs a file region. Built from [`PmemConfig::default`] with the setters (or by
/// assigning fields): `PmemConfig::default().domain(Domain::Eadr).media(Media::Emulated)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PmemConfig {
    /// Where the persistence domain ends (ADR: flush + fence; eADR: fence only).
    pub domain: Domain,
    /// `None` = detect at run time.
    pub flush: Option<FlushKind>,
    /// Emulated extra NVM write latency per persisted cache line (busy-wait), nanoseconds.
    pub write_delay_ns: u64,
    /// What backs a file region (ignored by anonymous and simulated regions).
    pub media: Media,
}

impl Default for PmemConfig {
    fn default() -> Self {
        PmemConfig {
            domain: Domain::Adr,
            flush: None,
            write_delay_ns: 0,
            media: Media::Auto,
        }
    }
}

impl PmemConfig {
    /// [`PmemConfig::domain`] set to `domain`.
    pub fn domain(mut self, domain: Domain) -> PmemConfig {
        self.domain = domain;
        self
    }
    /// [`PmemConfig::flush`] set to `flush`.
    pub fn flush(mut self, flush: Option<FlushKind>) -> PmemConfig {
        self.flush = flush;
        self
    }
    /// [`PmemConfig::write_delay_ns`] set to `ns`.
    pub fn write_delay_ns(mut self, ns: u64) -> PmemConfig {
        self.write_delay_ns = ns;
        self
    }
    /// [`PmemConfig::media`] set to `media`.
    pub fn media(mut self, media: Media) -> PmemConfig {
        self.media = media;
        self
    }
}

/// Size of a CPU cache line, the unit of write-back.
pub const CACHE_LINE: usize = 64;
/// Bytes reserved at the start of a region file for its header; offsets in the API are relative
/// to the usable area after it.
pub const HEADER_SIZE: usize = 4096;
/// Magic bytes at the start of every region file.
pub const REGION_MAGIC: [u8; 8] = *b"BRAIDRGN";
/// Region file format version this crate writes and reads.
pub const REGION_VERSION: u32 = 1;

impl From<lock::LockError> for PmemError {
    fn from(e: lock::LockError) -> PmemError {
        match e {
            lock::LockError::InUse { path, holder } => PmemError::InUse { path, holder },
            lock::LockError::Io { path, source } => PmemError::Io { path, source },
        }
    }
}
