//! Devices: where a stream's bytes become durable.
//!
//! The stream talks to a [`Device`]. Two kinds implement it:
//!
//! * A [`BufferedDevice`] (`buffered.rs`): the DRAM ring writers fill ([`DramRing`]), its
//!   `reusable` watermark and the flush, written once, in front of a [`Store`]: storage at
//!   the level of write-at, sync, truncate and read. The file device ([`FileDevice`], storage
//!   [`FileStore`]: segment files) and the replicated device of braid-nats are storages
//!   behind it, and so is any new device whose writes need a flush.
//! * Devices durable in place, whose fills persist the bytes themselves
//!   ([`Device::durable_on_fill`]): the persistent-memory ring ([`PmemDevice`], whose region is
//!   the ring, persisted on the writer's thread) and the null device ([`NullDevice`]).
//!
//! Wrappers take any device: [`PacedDevice`] (emulated speed) and [`StripedDevice`] (RAID-0
//! over buffered devices).

pub(crate) mod buffered;
pub(crate) mod file;
pub(crate) mod null;
pub(crate) mod pace;
pub(crate) mod pmem;
pub(crate) mod ring;
pub(crate) mod striped;

pub use self::{
    buffered::{BufferedDevice, DEFAULT_BUFFER_SIZE, Store},
    file::{FileDevice, FileDeviceConfig, FileStore},
    null::NullDevice,
    pace::{Pace, PacedDevice},
    pmem::{PmemDevice, PmemDeviceConfig, PmemWrite},
    ring::DramRing,
    striped::StripedDevice,
};

use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// What a device is, for reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// "file", "pmem" or "null".
    pub kind: &'static str,
    /// Directory, region file, or empty.
    pub location: String,
    /// `None` if what the device makes durable survives a power cut on this machine; else
    /// what the device only emulates (e.g. persistent memory as a file in RAM under
    /// `/dev/shm`), to be named wherever its results appear.
    pub emulation: Option<String>,
}

/// A log device holding one stream.
///
/// Writers copy their records into the device's buffer with [`Device::fill`] (the DRAM ring of
/// a [`BufferedDevice`], the persistent ring itself for pmem); one flusher at a time makes
/// ranges durable with [`Device::flush`], always with increasing, contiguous ranges. A new
/// device whose writes need a flush is a [`Store`] behind a [`BufferedDevice`] rather than a
/// `Device` of its own (see the module doc).
pub trait Device: Send + Sync + StreamSource {
    /// What the device is, for reports.
    fn info(&self) -> DeviceInfo;
    /// Ring capacity: a writer may fill `[lsn, lsn + len)` only once `lsn + len <= reusable() + capacity()`.
    fn capacity(&self) -> u64;
    /// Ring bytes before this LSN may be overwritten (flushed to file, or destaged / truncated).
    /// Never decreases while a stream writes the device: its writers keep the last value they
    /// read.
    fn reusable(&self) -> Lsn;
    /// Copy `bytes` to stream position `lsn`. Called concurrently by writers on disjoint ranges.
    /// A pmem device persists them here (the fence must come from the writing thread).
    fn fill(&self, lsn: Lsn, bytes: &[u8]);
    /// True if `fill` alone makes bytes durable (pmem); then the stream never calls `flush`
    /// and publishes its durable watermark itself, after [`Device::check_fills`].
    fn durable_on_fill(&self) -> bool;
    /// For `durable_on_fill` devices: `Ok` if every `fill` that has returned really made its
    /// bytes durable. A fill cannot report an error (a region whose `msync` failed records it
    /// instead), so the stream asks here after computing a new durable point and before
    /// publishing it; an error poisons the stream like a failed `flush`, and nothing filled
    /// is acknowledged any more. Called concurrently, from any thread. Default: `Ok`.
    fn check_fills(&self) -> Result<(), WalError> {
        Ok(())
    }
    /// Make `[from, to)` durable. Errors poison the stream, except `NoSpace`, which is retried.
    fn flush(&self, from: Lsn, to: Lsn) -> Result<(), WalError>;
    /// Check (and prepare, e.g. preallocate) space for bytes up to `upto`; `NoSpace` if there is none.
    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError>;
    /// After recovery: discard everything at and after `end` durably, so no stale byte beyond it
    /// can ever decode as a record, and make `end` the position of the next append.
    fn reset_tail(&self, end: Lsn) -> Result<(), WalError>;
    /// Space before `upto` is no longer needed (checkpoint truncation).
    fn release(&self, upto: Lsn) -> Result<(), WalError>;
    /// The stream has published `durable` as its durable watermark (every byte before it is
    /// filled and durable). Called after each advance, possibly out of order from several
    /// threads; devices that act on the durable point (pmem de-staging) keep the maximum.
    fn note_durable(&self, _durable: Lsn) {}
    /// The stream closed cleanly with every byte before `end` durable: make sure the next
    /// scan finds a clean end there (a ring or a recycled segment holds bytes of earlier laps
    /// past the end, which a scan would otherwise read as an unfinished write). Called once,
    /// after the last flush; devices whose space past the end is always zero do nothing.
    fn mark_clean_end(&self, _end: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}
