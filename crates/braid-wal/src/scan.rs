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

use crate::record::{
    ALIGN, Decoded, FORMAT_VERSION, HEADER_LEN, Kind, MAX_RECORD_LEN, REASON_NEWER_VERSION, Record,
    RecordHeader, StampKind, StampRef, align_up, decode, peek_header,
};
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
    pub fn clean(end: Lsn) -> ScanEnd {
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
pub const DEFAULT_CHUNK: usize = 1 << 20;

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
    End(Option<&'static str>),
}

/// What the lookahead after a damaged position found.
struct Look {
    /// A valid record proving the damaged bytes were durable: (its lsn, its synced).
    proof: Option<(Lsn, Lsn)>,
    /// Any valid record at all after the damage.
    any: bool,
}

/// Lending iterator over the valid records of a stream.
pub struct Scanner<'s> {
    src: &'s dyn StreamSource,
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

impl std::fmt::Debug for Scanner<'_> {
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

impl<'s> Scanner<'s> {
    /// A scanner from `src.start()`; reads nothing until the first [`Scanner::next_record`].
    pub fn new(src: &'s dyn StreamSource, mode: ScanMode) -> Scanner<'s> {
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

    /// Read in chunks of `bytes` (at least a header) instead of [`DEFAULT_CHUNK`].
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
    pub fn bytes_read(&self) -> u64 {
        self.end
            .as_ref()
            .map_or(self.pos, |e| e.end)
            .saturating_sub(self.start)
    }

    /// Position of the next record to be examined.
    pub fn position(&self) -> Lsn {
        self.pos
    }

    /// Decode at `self.pos`.
    fn step(&mut self) -> Result<Step, WalError> {
        let x = self.pos;
        if x >= self.limit {
            return Ok(Step::End(None));
        }
        let salt = self.src.salt_for(x);
        let to_limit = self.limit - x;
        let mut need = HEADER_LEN;
        loop {
            let avail = self.fill(x, need)?;
            let off = (x - self.buf_lsn) as usize;
            let bytes = &self.buf[off..off + avail];
            match decode(bytes, x, salt) {
                // Its bytes decode but its padding lies past the written extent (a write torn
                // inside the padding): the stream's positions are padded, so the record is
                // cut off like any other (an acknowledged record's padding was synced with
                // it), and the end never passes `limit()`.
                Decoded::Record(r) if r.end() > self.limit => {
                    return Ok(Step::End(Some(
                        "record cut off by the end of the written log (inside its padding)",
                    )));
                }
                Decoded::Record(r) if r.header.kind == Kind::Pad => return Ok(Step::Pad(r.end())),
                Decoded::Record(r) => {
                    return Ok(Step::Record {
                        header: r.header,
                        stamp: r.stamp.kind(),
                        stamp_len: r.stamp.as_bytes().len(),
                        off,
                    });
                }
                Decoded::Empty => return Ok(Step::End(None)),
                Decoded::Invalid(reason) => return Ok(Step::End(Some(reason))),
                Decoded::Truncated { need: n } => {
                    if n > need && n as u64 <= to_limit {
                        need = n;
                    } else if avail < 4 && bytes.iter().all(|&b| b == 0) {
                        return Ok(Step::End(None));
                    } else {
                        return Ok(Step::End(Some(
                            "record cut off by the end of the written log",
                        )));
                    }
                }
            }
        }
    }

    /// Make the buffer hold the bytes `[at, at + need)` (clipped to `limit`), reading a chunk
    /// ahead; returns how many bytes from `at` it holds (fewer than asked only if the source
    /// returned short).
    fn fill(&mut self, at: Lsn, need: usize) -> Result<usize, WalError> {
        let to_limit = usize::try_from(self.limit.saturating_sub(at)).unwrap_or(usize::MAX);
        let need = need.min(to_limit);
        let window_end = self.buf_lsn + self.filled as u64;
        if at >= self.buf_lsn && at <= window_end {
            let off = (at - self.buf_lsn) as usize;
            if self.filled - off >= need {
                return Ok(self.filled - off);
            }
            self.buf.copy_within(off..self.filled, 0);
            self.filled -= off;
        } else {
            self.filled = 0;
        }
        self.buf_lsn = at;
        let want = need.max(self.chunk).min(to_limit);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        while self.filled < want {
            let lsn = self.buf_lsn + self.filled as u64;
            let n = self.src.read_at(lsn, &mut self.buf[self.filled..want])?;
            if n == 0 {
                break;
            }
            self.filled += n.min(want - self.filled);
        }
        Ok(self.filled)
    }

    /// The scan stopped at `x` (`reason` is None for zeros or the limit): decide what kind of
    /// end this is, set `self.end` or fail.
    fn classify(&mut self, x: Lsn, reason: Option<&'static str>) -> Result<(), WalError> {
        if reason == Some(REASON_NEWER_VERSION) {
            let off = (x - self.buf_lsn) as usize;
            let header = peek_header(&self.buf[off..self.filled]);
            if let Some((_, version, _)) = header.filter(|&(_, _, lsn)| lsn == x) {
                let (file, offset) = self.src.locate(x);
                let e = WalError::BadSegment {
                    file,
                    reason: format!(
                        "the record at byte offset {offset} was written by log format version \
                         {version}, but this build reads only version {FORMAT_VERSION}: open \
                         the log with a newer braid"
                    ),
                };
                self.error = Some(e.clone());
                return Err(e);
            }
        }
        let what = reason.unwrap_or("zeros where a record was expected");
        // A damaged record that starts in the sealed part but reaches past it (a record
        // spanning into an unsealed segment) may be torn in its unsealed part: the sealed
        // point alone proves corruption only if the record, as far as its header tells, lies
        // entirely before it.
        let in_sealed = x < self.sealed && {
            let at = usize::try_from(x.wrapping_sub(self.buf_lsn)).unwrap_or(usize::MAX);
            match self.buf.get(at..self.filled).and_then(peek_header) {
                Some((len, _, lsn))
                    if lsn == x && (HEADER_LEN..=MAX_RECORD_LEN).contains(&(len as usize)) =>
                {
                    x.saturating_add(align_up(len as usize) as u64) <= self.sealed
                }
                _ => true,
            }
        };
        let evidence = if in_sealed {
            Some(format!(
                "{what}; it lies in the sealed part of the log (everything before lsn {} was \
                 made durable)",
                self.sealed
            ))
        } else if x >= self.limit {
            None
        } else {
            let look = self.lookahead(x)?;
            match look.proof {
                Some((y, synced)) => Some(format!(
                    "{what}; the valid record at lsn {y} was written when the log was durable up \
                     to lsn {synced}, past this position"
                )),
                None => {
                    let kind = if reason.is_none() && !look.any {
                        EndKind::Clean
                    } else {
                        EndKind::TornTail
                    };
                    self.finish(x, kind)?;
                    return Ok(());
                }
            }
        };
        match evidence {
            None => {
                self.finish(x, EndKind::Clean)?;
                Ok(())
            }
            Some(reason) => match self.mode {
                ScanMode::Salvage => {
                    self.finish(x, EndKind::Salvaged)?;
                    Ok(())
                }
                ScanMode::Strict => {
                    let (file, offset) = self.src.locate(x);
                    let e = WalError::Corrupt {
                        file,
                        offset,
                        reason,
                    };
                    self.error = Some(e.clone());
                    Err(e)
                }
            },
        }
    }

    fn finish(&mut self, x: Lsn, kind: EndKind) -> Result<(), WalError> {
        let trimmed_at = (kind != EndKind::Clean).then(|| self.src.locate(x));
        // The unfinished record's length, where its header at `x` is whole and its own.
        let trimmed = if kind == EndKind::TornTail {
            self.fill(x, HEADER_LEN)?;
            let at = usize::try_from(x.wrapping_sub(self.buf_lsn)).unwrap_or(usize::MAX);
            match self.buf.get(at..self.filled).and_then(peek_header) {
                Some((len, _, lsn))
                    if lsn == x && (HEADER_LEN..=MAX_RECORD_LEN).contains(&(len as usize)) =>
                {
                    (align_up(len as usize) as u64).min(self.limit.saturating_sub(x))
                }
                _ => 0,
            }
        } else {
            0
        };
        self.pos = x;
        self.end = Some(ScanEnd {
            end: x,
            kind,
            trimmed_at,
            trimmed,
        });
        Ok(())
    }

    /// Look after the damaged position `x` for valid records, stopping at the first one that
    /// proves `x` was durable.
    fn lookahead(&mut self, x: Lsn) -> Result<Look, WalError> {
        let mut look = Look {
            proof: None,
            any: false,
        };
        let mut y = x + ALIGN as u64;
        while y < self.limit && self.limit - y >= HEADER_LEN as u64 {
            let avail = self.fill(y, HEADER_LEN)?;
            if avail < HEADER_LEN {
                break;
            }
            let window_end = self.buf_lsn + self.filled as u64;
            let mut candidate = None;
            while y + HEADER_LEN as u64 <= window_end {
                let off = (y - self.buf_lsn) as usize;
                // Cheap test first: a record names its own position.
                let header = peek_header(&self.buf[off..self.filled]);
                if let Some((len, version, _)) = header.filter(|&(_, _, lsn)| lsn == y) {
                    let len = len as usize;
                    if version == FORMAT_VERSION
                        && (HEADER_LEN..=MAX_RECORD_LEN).contains(&len)
                        && len as u64 <= self.limit - y
                    {
                        candidate = Some(len);
                        break;
                    }
                }
                y += ALIGN as u64;
            }
            let Some(len) = candidate else { continue };
            let avail = self.fill(y, len)?;
            let off = (y - self.buf_lsn) as usize;
            match decode(&self.buf[off..off + avail], y, self.src.salt_for(y)) {
                Decoded::Record(r) => {
                    look.any = true;
                    if r.header.synced > x {
                        look.proof = Some((y, r.header.synced));
                        return Ok(look);
                    }
                    y = r.end();
                }
                _ => y += ALIGN as u64,
            }
        }
        Ok(look)
    }
}

/// An in-memory stream: `bytes[i]` holds LSN `start + i`. For tests, fuzzing and tools that
/// inspect a log image held in memory.
///
/// With `segment_len > 0` the LSN space is cut into segments `name.0`, `name.1`, ... (by
/// absolute LSN), each with its own salt `salt + segment index`, like a file device.
#[derive(Debug, Clone, Default)]
pub struct MemSource {
    /// Name used in error locations (segment `k` is `name.k`).
    pub name: String,
    /// LSN of `bytes[0]`: the stream's [`StreamSource::start`].
    pub start: Lsn,
    /// The stream's bytes; their end is [`StreamSource::limit`].
    pub bytes: Vec<u8>,
    /// [`StreamSource::sealed`]: bytes before it count as known durable.
    pub sealed: Lsn,
    /// Checksum salt (of segment 0 when segmented).
    pub salt: u32,
    /// Segment length in bytes; 0 for one unsegmented stream.
    pub segment_len: u64,
}

impl MemSource {
    /// An empty, unsegmented stream starting at `start`, nothing sealed.
    pub fn new(name: impl Into<String>, start: Lsn, salt: u32) -> MemSource {
        MemSource {
            name: name.into(),
            start,
            salt,
            ..MemSource::default()
        }
    }

    /// LSN of the next byte appended.
    pub fn tail(&self) -> Lsn {
        self.start + self.bytes.len() as u64
    }

    /// Encode `spec` at the tail with the right salt; returns its LSN.
    pub fn append(
        &mut self,
        spec: &crate::record::RecordSpec<'_>,
        synced: Lsn,
    ) -> Result<Lsn, WalError> {
        let len = spec.check()?;
        let lsn = self.tail();
        let at = self.bytes.len();
        self.bytes.resize(at + len, 0);
        spec.encode(lsn, synced, self.salt_for(lsn), &mut self.bytes[at..]);
        Ok(lsn)
    }

    /// Byte index in `bytes` of `lsn`.
    pub fn index(&self, lsn: Lsn) -> usize {
        usize::try_from(lsn.saturating_sub(self.start)).unwrap_or(usize::MAX)
    }
}

impl StreamSource for MemSource {
    fn start(&self) -> Lsn {
        self.start
    }
    fn limit(&self) -> Lsn {
        self.tail()
    }
    fn sealed(&self) -> Lsn {
        self.sealed
    }
    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let at = self.index(lsn).min(self.bytes.len());
        let n = buf.len().min(self.bytes.len() - at);
        buf[..n].copy_from_slice(&self.bytes[at..at + n]);
        Ok(n)
    }
    fn salt_for(&self, lsn: Lsn) -> u32 {
        match lsn.checked_div(self.segment_len) {
            Some(seg) => self.salt.wrapping_add(seg as u32),
            None => self.salt,
        }
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        match lsn.checked_div(self.segment_len) {
            Some(seg) => (format!("{}.{seg}", self.name), lsn % self.segment_len),
            None => (self.name.clone(), lsn - self.start.min(lsn)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
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
