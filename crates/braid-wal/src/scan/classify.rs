//! Walking and judging the bytes: one decoding step at the current position, buffered reads,
//! and the classification of where the valid prefix ends (clean end, torn tail or corruption)
//! with the lookahead for durability proof (the rules are in the parent module's doc).

use super::{EndKind, Look, ScanEnd, ScanMode, Scanner, Step, StreamSource};
use crate::record::{
    ALIGN, Decoded, FORMAT_VERSION, HEADER_LEN, Kind, MAX_RECORD_LEN, align_up, decode, peek_header,
};
use crate::{Corruption, Lsn, RecordFault, SegmentDamage, WalError};

/// Bytes the lookahead tests for zeros at once (a multiple of `ALIGN`, above `HEADER_LEN`).
const ZERO_RUN: usize = 256;

impl<S: StreamSource + ?Sized> Scanner<'_, S> {
    /// Decode at `self.pos`.
    pub(super) fn step(&mut self) -> Result<Step, WalError> {
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
                    return Ok(Step::End(Some(RecordFault::CutOffInPadding)));
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
                        return Ok(Step::End(Some(RecordFault::CutOff)));
                    }
                }
            }
        }
    }

    /// Make the buffer hold the bytes `[at, at + need)` (clipped to `limit`), reading a chunk
    /// ahead; returns how many bytes from `at` it holds (fewer than asked only if the source
    /// returned short).
    pub(super) fn fill(&mut self, at: Lsn, need: usize) -> Result<usize, WalError> {
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
    pub(super) fn classify(&mut self, x: Lsn, reason: Option<RecordFault>) -> Result<(), WalError> {
        if reason == Some(RecordFault::NewerVersion) {
            let off = (x - self.buf_lsn) as usize;
            let header = peek_header(&self.buf[off..self.filled]);
            if let Some((_, version, _)) = header.filter(|&(_, _, lsn)| lsn == x) {
                let (file, offset) = self.src.locate(x);
                let e = WalError::BadSegment {
                    file,
                    damage: SegmentDamage::NewerRecord {
                        offset,
                        version,
                        reads: FORMAT_VERSION,
                    },
                };
                self.error = Some(e.clone());
                return Err(e);
            }
        }
        let fault = reason.unwrap_or(RecordFault::Zeros);
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
            Some(Corruption::Sealed {
                fault,
                sealed: self.sealed,
            })
        } else if x >= self.limit {
            None
        } else {
            let look = self.lookahead(x)?;
            match look.proof {
                Some((valid, synced)) => Some(Corruption::BeforeDurable {
                    fault,
                    valid,
                    synced,
                }),
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
            Some(damage) => match self.mode {
                ScanMode::Salvage => {
                    self.finish(x, EndKind::Salvaged)?;
                    Ok(())
                }
                ScanMode::Strict => {
                    let (file, offset) = self.src.locate(x);
                    let e = WalError::Corrupt {
                        file,
                        offset,
                        damage,
                    };
                    self.error = Some(e.clone());
                    Err(e)
                }
            },
        }
    }

    pub(super) fn finish(&mut self, x: Lsn, kind: EndKind) -> Result<(), WalError> {
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
    pub(super) fn lookahead(&mut self, x: Lsn) -> Result<Look, WalError> {
        let mut look = Look {
            proof: None,
            any: false,
        };
        let mut y = x + ALIGN as u64;
        // Nothing was written past `data_end`: no record to find there (asked before this
        // look reads past `x`; see `StreamSource::data_end`).
        let data_end = self.src.data_end(x)?.min(self.limit);
        while y < data_end && data_end - y >= HEADER_LEN as u64 {
            let avail = self.fill(y, HEADER_LEN)?;
            if avail < HEADER_LEN {
                break;
            }
            let window_end = self.buf_lsn + self.filled as u64;
            let mut candidate = None;
            while y + HEADER_LEN as u64 <= window_end {
                let off = (y - self.buf_lsn) as usize;
                // A record names its own position (`y > 0`), so no header is all zeros: none
                // starts in a run of zeros before its last `HEADER_LEN` bytes. The log's end is
                // mostly followed by the zeros of a preallocated segment, skipped so by the
                // block rather than looked at every `ALIGN` bytes.
                if let Some(run) = self.buf[off..self.filled].first_chunk::<ZERO_RUN>()
                    && run.iter().fold(0, |a, &b| a | b) == 0
                {
                    y += (ZERO_RUN - HEADER_LEN + ALIGN) as u64;
                    continue;
                }
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
