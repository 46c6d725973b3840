//! Reading a stream back. API SKELETON.

use crate::record::Record;
use crate::{Lsn, WalError};

/// A stream's bytes in LSN space, as a device holds them; implemented by every device.
pub trait StreamSource {
    /// First LSN that may hold a record.
    fn start(&self) -> Lsn;
    /// Nothing at or beyond this LSN was ever written (end of the written extent / ring window).
    fn limit(&self) -> Lsn;
    /// Bytes before this LSN are known to have been made durable (e.g. sealed segments):
    /// damage there is corruption whatever follows.
    fn sealed(&self) -> Lsn;
    /// Read bytes at `lsn`; returns how many were read (fewer only at `limit`).
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError>;
    /// The checksum salt of a record starting at `lsn`.
    fn salt_for(&self, lsn: Lsn) -> u32;
    /// File (or region) name and byte offset holding `lsn`, for error messages.
    fn locate(&self, lsn: Lsn) -> (String, u64);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanMode {
    /// Corruption followed by valid records is an error.
    #[default]
    Strict,
    /// Keep the valid prefix before any corruption and report what was dropped.
    Salvage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndKind {
    /// Zeros (or the limit) follow the last record.
    Clean,
    /// A partial or damaged record follows the last valid one and nothing durable after it.
    TornTail,
    /// Salvage mode dropped damaged bytes with valid records after them.
    Salvaged,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanEnd {
    /// LSN just past the last valid record: where new appends go.
    pub end: Lsn,
    pub kind: EndKind,
    /// Where the damage (if any) starts, as a file and offset.
    pub damage: Option<(String, u64)>,
}

/// Lending iterator over the valid records of a stream.
pub struct Scanner<'s> { _p: std::marker::PhantomData<&'s ()> }

impl<'s> Scanner<'s> {
    pub fn new(_src: &'s dyn StreamSource, _mode: ScanMode) -> Scanner<'s> { unimplemented!() }
    /// The next valid record, or None at the end of the valid prefix (then `end()` is set).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, WalError> { unimplemented!() }
    pub fn end(&self) -> Option<&ScanEnd> { unimplemented!() }
    /// Bytes consumed so far.
    pub fn bytes_read(&self) -> u64 { unimplemented!() }
}
