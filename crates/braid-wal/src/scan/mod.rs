//! Reading a stream back: finding its valid prefix and classifying how it ends (the first
//! step of recovery in every scheme: Wang & Johnson 2014 Section 3.2, NV-Logging Section 4.6
//! and Taurus Section 3.3 all start from "the valid records of each log").
//!
//! A [`Scanner`] reads a [`StreamSource`] in chunks (1 MiB by default, grown to hold a larger
//! record) from `start()` and yields every record that decodes at its own position, in order,
//! skipping [`Kind::Pad`] records. It is a lending iterator: a record borrows the scanner's
//! buffer until the next call.
//!
//! # Where does the log end, and is it damaged?
//!
//! Scanning stops at the first position `X` where no valid record decodes. What `X` means
//! depends on whether the bytes at `X` were ever known to be durable:
//!
//! * `X >= limit()`: nothing was written past it: a clean end.
//! * `X < sealed()`: the device says everything before `sealed()` was made durable, so bad
//!   (or zero) bytes there are corruption, whatever follows.
//! * Otherwise the scanner looks ahead from `X` (in 8-byte steps, up to `limit()`) for records
//!   that decode validly at their own positions (lsn field equal to the position, checked
//!   first so the lookahead costs one comparison per step; then the position's salt and the
//!   checksum). Each record carries `synced`, the durable LSN its writer knew when it was
//!   written. A crash can leave later unsynced writes intact while an earlier unsynced write
//!   is torn (writes reach the media out of order until a flush orders them), so valid
//!   records after `X` alone prove nothing. But a valid record whose `synced > X` was written
//!   after the bytes at `X` had been made durable: those bytes were on the media once, so
//!   their damage now is corruption, not a torn write. If no such record is found, `X` is a
//!   torn tail: the bytes from `X` on were never acknowledged as durable and are dropped.
//!
//! Results: a clean end is [`EndKind::Clean`]; a torn tail is [`EndKind::TornTail`] with the
//! damage located; corruption is `WalError::Corrupt { file, offset }` in [`ScanMode::Strict`]
//! and [`EndKind::Salvaged`] (the valid prefix is kept, `damage` names where it ends) in
//! [`ScanMode::Salvage`].
//!
//! Design choices where the specification is vague:
//!
//! * A zero header (`Empty`) at `X` is a clean end only if the lookahead finds no durability
//!   proof after it; with proof it is corruption (a zeroed durable block, e.g. a lost write),
//!   and if the lookahead finds valid records written before `X` was durable it is a torn tail
//!   (the record at `X` was never written, later ones were). A silent clean end there would
//!   drop acknowledged commits without a word.
//! * A record written by a newer format version at its own position is never treated as a
//!   torn tail (recovery would then cut off a newer log): it is refused with
//!   `WalError::BadSegment` naming the version, in both modes.
//! * A record cut off by `limit()` is damaged like any other: a torn tail, or corruption if
//!   it lies before `sealed()` or durability proof follows it. That includes a record whose
//!   bytes are all there but whose padding is not (a write torn inside the padding), so the
//!   end found never lies past `limit()`, where a device could not reset its tail.
//! * Fewer than 4 bytes before `limit()`, all zero, count as a clean end.
//! * `bytes_read()` is the stream space consumed by the valid prefix (pads included), i.e.
//!   the current position minus `start()`; it is what a progress report wants.
//! * After a `Corrupt` (or `BadSegment`) error every further call returns the same error.
//!
//! The end classification above lives in `classify` (decoding steps, lookahead, torn tail
//! versus corruption); `mem` holds `MemSource`, an in-memory stream.

#[cfg(doc)]
use crate::record::Kind;
use crate::record::{HEADER_LEN, Record, RecordHeader, StampKind, StampRef, align_up};
use crate::{Lsn, WalError};

mod classify;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod mem;
#[cfg(test)]
pub(crate) use mem::MemSource;

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
    /// An LSN (at most `limit`) from which on, as far as `from`, nothing was ever written:
    /// the rest is reserved space or holes, which read as zeros. Lets a scan that looks past
    /// a damaged or zero position for later records stop there instead of reading up to the
    /// limit (an upper bound: a preallocated segment's full size). Asked before the scan
    /// reads past `from`: a file system may count space as data once the page cache holds
    /// it. Default: `limit` (read it all and see).
    fn data_end(&self, _from: Lsn) -> Result<Lsn, WalError> {
        Ok(self.limit())
    }
}

/// What a scan does on corruption (damage that is not a torn tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanMode {
    /// Corruption followed by valid records is an error.
    #[default]
    Strict,
    /// Keep the valid prefix before any corruption and report what was dropped.
    Salvage,
}

/// How the valid prefix of a stream ends (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndKind {
    /// Zeros (or the limit) follow the last record.
    Clean,
    /// A partial or damaged record follows the last valid one and nothing durable after it.
    TornTail,
    /// Salvage mode dropped damaged bytes with valid records after them (or damaged bytes in
    /// the sealed, known-durable part of the log).
    Salvaged,
}

/// How a stream's valid prefix ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanEnd {
    /// LSN just past the last valid record: where new appends go.
    pub end: Lsn,
    /// Clean, an unfinished write trimmed, or damage dropped in salvage mode.
    pub kind: EndKind,
    /// Where the dropped bytes start (file and offset), unless the end is clean.
    pub trimmed_at: Option<(String, u64)>,
    /// Bytes of the unfinished record dropped at a torn tail, as far as its header tells
    /// (0 when the header itself was not written whole).
    pub trimmed: u64,
}

impl ScanEnd {
    /// A clean end at `end`.
    pub(crate) fn clean(end: Lsn) -> ScanEnd {
        ScanEnd {
            end,
            kind: EndKind::Clean,
            trimmed_at: None,
            trimmed: 0,
        }
    }
}

impl std::fmt::Display for ScanEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "valid to LSN {}", self.end)?;
        let at = |f: &mut std::fmt::Formatter<'_>| match &self.trimmed_at {
            Some((file, off)) => write!(f, " at {file} offset {off}"),
            None => Ok(()),
        };
        match self.kind {
            EndKind::Clean => f.write_str(", clean end"),
            EndKind::TornTail => {
                f.write_str(", an unfinished write")?;
                at(f)?;
                match self.trimmed {
                    0 => f.write_str(" was trimmed (its header was not written whole)"),
                    n => write!(f, " was trimmed ({n} bytes)"),
                }
            }
            EndKind::Salvaged => {
                f.write_str(", salvage mode dropped damaged log")?;
                at(f)
            }
        }
    }
}

/// Default read size.
pub(crate) const DEFAULT_CHUNK: usize = 1 << 20;

/// What was found at the current position.
enum Step {
    Record {
        header: RecordHeader,
        stamp: StampKind,
        stamp_len: usize,
        off: usize,
    },
    Pad(Lsn),
    /// No record: `None` for zeros, else the reason.
    End(Option<crate::RecordFault>),
}

/// What the lookahead after a damaged position found.
struct Look {
    /// A valid record proving the damaged bytes were durable: (its lsn, its synced).
    proof: Option<(Lsn, Lsn)>,
    /// Any valid record at all after the damage.
    any: bool,
}

/// Lending iterator over the valid records of a stream. `S` is the source's type (a
/// `dyn StreamSource + Sync` source makes a scanner that can move between threads).
pub struct Scanner<'s, S: ?Sized = dyn StreamSource> {
    src: &'s S,
    mode: ScanMode,
    chunk: usize,
    start: Lsn,
    limit: Lsn,
    sealed: Lsn,
    /// Bytes of the stream from `buf_lsn`, `filled` of them valid.
    buf: Vec<u8>,
    buf_lsn: Lsn,
    filled: usize,
    /// Position of the next record.
    pos: Lsn,
    end: Option<ScanEnd>,
    error: Option<WalError>,
}

impl<S: ?Sized> std::fmt::Debug for Scanner<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("mode", &self.mode)
            .field("start", &self.start)
            .field("limit", &self.limit)
            .field("sealed", &self.sealed)
            .field("pos", &self.pos)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl<'s, S: StreamSource + ?Sized> Scanner<'s, S> {
    /// A scanner from `src.start()`; reads nothing until the first [`Scanner::next_record`].
    pub fn new(src: &'s S, mode: ScanMode) -> Scanner<'s, S> {
        let start = src.start();
        Scanner {
            src,
            mode,
            chunk: DEFAULT_CHUNK,
            start,
            limit: src.limit(),
            sealed: src.sealed(),
            buf: Vec::new(),
            buf_lsn: start,
            filled: 0,
            pos: start,
            end: None,
            error: None,
        }
    }

    /// Read in chunks of `bytes` (at least a header) instead of `DEFAULT_CHUNK`.
    pub fn with_chunk_size(mut self, bytes: usize) -> Self {
        self.chunk = bytes.max(HEADER_LEN);
        self
    }

    /// The next valid record, or None at the end of the valid prefix (then `end()` is set).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, WalError> {
        loop {
            if let Some(e) = &self.error {
                return Err(e.clone());
            }
            if self.end.is_some() {
                return Ok(None);
            }
            match self.step()? {
                Step::Pad(next) => self.pos = next,
                Step::End(reason) => self.classify(self.pos, reason)?,
                Step::Record {
                    header,
                    stamp,
                    stamp_len,
                    off,
                } => {
                    self.pos = header.lsn + align_up(header.len as usize) as u64;
                    let body = &self.buf[off + HEADER_LEN..off + header.len as usize];
                    let (stamp_bytes, payload) = body.split_at(stamp_len);
                    return Ok(Some(Record {
                        header,
                        stamp: StampRef::from_decoded(stamp, stamp_bytes),
                        payload,
                    }));
                }
            }
        }
    }

    /// How the valid prefix ends: `None` until [`Scanner::next_record`] has returned
    /// `Ok(None)`.
    pub fn end(&self) -> Option<&ScanEnd> {
        self.end.as_ref()
    }

    /// Bytes consumed so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.end
            .as_ref()
            .map_or(self.pos, |e| e.end)
            .saturating_sub(self.start)
    }
}
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::record::Kind;
    use crate::record::{RecordSpec, Stamp};

    fn push(m: &mut MemSource, txn: u64, synced: Lsn) -> Lsn {
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 0,
            txn,
            stamp: &Stamp::None,
            payload: &[b"abc"],
        };
        m.append(&spec, synced).unwrap()
    }

    /// Zeros after the last record, then a record written after they were durable: the
    /// lookahead finds it past a gap of any length (the zero runs it skips whole included),
    /// so the zeros are corruption.
    #[test]
    fn the_lookahead_finds_a_proof_past_zeros_of_any_length() {
        for gap in (8..=1200).step_by(8) {
            let mut m = MemSource::new("mem", 0, 9);
            push(&mut m, 1, 0);
            let x = m.tail();
            m.bytes.resize(m.bytes.len() + gap, 0);
            push(&mut m, 2, x + 8);
            let mut s = Scanner::new(&m, ScanMode::Strict);
            assert!(s.next_record().unwrap().is_some());
            let r = s.next_record();
            assert!(
                matches!(r, Err(WalError::Corrupt { offset, .. }) if offset == x),
                "gap {gap}: {r:?}"
            );
        }
    }

    #[test]
    fn clean_and_torn() {
        let mut m = MemSource::new("mem", 0, 9);
        push(&mut m, 1, 0);
        push(&mut m, 2, 0);
        let mut s = Scanner::new(&m, ScanMode::Strict).with_chunk_size(40);
        let mut txns = Vec::new();
        while let Some(r) = s.next_record().unwrap() {
            txns.push(r.header.txn);
        }
        assert_eq!(txns, [1, 2]);
        assert_eq!(s.end().unwrap().kind, EndKind::Clean);
        assert_eq!(s.bytes_read(), m.bytes.len() as u64);
        let full = m.bytes.len();
        m.bytes.truncate(full - 8);
        let mut s = Scanner::new(&m, ScanMode::Strict);
        assert!(s.next_record().unwrap().is_some());
        assert!(s.next_record().unwrap().is_none());
        let end = s.end().unwrap();
        assert_eq!((end.kind, end.end), (EndKind::TornTail, 40));
        assert_eq!(end.trimmed_at, Some(("mem".to_string(), 40)));
    }
}
