//! Record framing shared by every scheme. API SKELETON.
//!
//! Layout (little endian), records padded to 8 bytes:
//! ```text
//! 0..4   len      u32  header + stamp + payload, unpadded
//! 4      kind     u8   Kind
//! 5      flags    u8   bit 0 COMMIT (record ends its transaction); bits 4..8 stamp kind
//! 6..8   version  u16  FORMAT_VERSION
//! 8..12  crc      u32  crc32c(salt_le ++ header with crc = 0 ++ stamp ++ payload)
//! 12..16 synced   u32  lsn - (stream durable LSN known when written), saturated
//! 16..24 lsn      u64  stream position of this record's first byte
//! 24..32 txn      u64  transaction id
//! 32..   stamp    0 (none) | 8 (GSN) | 2 + 8n (dense LV) | 2 + 9n (sparse LV: u8 index, u64 value)
//! ..     payload
//! ```

use crate::Lsn;

pub const HEADER_LEN: usize = 32;
pub const ALIGN: usize = 8;
pub const FORMAT_VERSION: u16 = 1;
pub const MAX_RECORD_LEN: usize = 1 << 26;
/// Flag: this record ends its transaction (no separate commit record follows).
pub const FLAG_COMMIT: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Redo = 1,
    Command = 2,
    Commit = 3,
    Abort = 4,
    Anchor = 5,
    Checkpoint = 6,
    Pad = 7,
}

impl Kind {
    pub fn from_u8(_v: u8) -> Option<Kind> { unimplemented!() }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stamp {
    #[default]
    None,
    Gsn(u64),
    Lv(Vec<u64>),
    LvSparse(Vec<(u8, u64)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub len: u32,
    pub kind: Kind,
    pub flags: u8,
    pub lsn: Lsn,
    pub txn: u64,
    pub synced: Lsn,
}

/// A borrowed stamp as found in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampRef<'a> { _p: std::marker::PhantomData<&'a ()> }

impl StampRef<'_> {
    pub fn to_stamp(&self) -> Stamp { unimplemented!() }
    pub fn gsn(&self) -> Option<u64> { unimplemented!() }
    /// Write a dense LV into `out` (entries absent from a sparse stamp become 0); returns n.
    pub fn lv_into(&self, _out: &mut [u64]) -> usize { unimplemented!() }
}

#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub header: RecordHeader,
    pub stamp: StampRef<'a>,
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Padded size in the log.
    pub fn padded_len(&self) -> usize { unimplemented!() }
    pub fn end(&self) -> Lsn { self.header.lsn + self.padded_len() as u64 }
    pub fn commits(&self) -> bool { self.header.flags & FLAG_COMMIT != 0 }
}

/// What a caller wants written; the stream supplies lsn, synced and salt.
#[derive(Debug, Clone, Copy)]
pub struct RecordSpec<'a> {
    pub kind: Kind,
    pub flags: u8,
    pub txn: u64,
    pub stamp: &'a Stamp,
    pub payload: &'a [&'a [u8]],
}

impl RecordSpec<'_> {
    pub fn encoded_len(&self) -> usize { unimplemented!() }
    pub fn encode(&self, _lsn: Lsn, _synced: Lsn, _salt: u32, _out: &mut [u8]) { unimplemented!() }
}

#[derive(Debug, Clone, Copy)]
pub enum Decoded<'a> {
    Record(Record<'a>),
    /// The header is all zeros: nothing was ever written here.
    Empty,
    /// `buf` ends inside the record; at least `need` bytes are required.
    Truncated { need: usize },
    Invalid(&'static str),
}

pub fn decode(_buf: &[u8], _expected_lsn: Lsn, _salt: u32) -> Decoded<'_> { unimplemented!() }
