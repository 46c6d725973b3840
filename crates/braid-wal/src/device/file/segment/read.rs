//! Reading a stream back for recovery: the [`StreamSource`] the scanner walks.

use super::name::segment_salt;
use super::{SEGMENT_HEADER, SegmentLog, io_err};
use crate::scan::StreamSource;
use crate::{Lsn, Misuse, WalError};

impl SegmentLog {
    /// Read exactly `buf.len()` bytes at `lsn`; an error if the range passes the limit.
    pub(crate) fn read_exact_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<(), WalError> {
        crate::device::buffered::read_exact(self, lsn, buf)
    }
}

impl StreamSource for SegmentLog {
    fn start(&self) -> Lsn {
        self.inner.lock().start
    }

    fn limit(&self) -> Lsn {
        self.end()
    }

    fn sealed(&self) -> Lsn {
        let inner = self.inner.lock();
        let last_with_data = inner
            .segs
            .iter()
            .rev()
            .find(|s| s.has_data)
            .map(|s| s.index * self.seg_size);
        last_with_data.unwrap_or(inner.start).max(inner.start)
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let inner = self.inner.lock();
        let limit = self.limit_of(&inner);
        if lsn >= limit || buf.is_empty() {
            return Ok(0);
        }
        let Some(first) = inner.segs.first() else {
            return Ok(0);
        };
        let first_index = first.index;
        if lsn / self.seg_size < first_index {
            return Err(WalError::Misuse(Misuse::BeforeStart {
                op: "read",
                lsn,
                start: first_index * self.seg_size,
                on: None,
            }));
        }
        let want = buf
            .len()
            .min(usize::try_from(limit - lsn).unwrap_or(usize::MAX));
        let mut done = 0usize;
        while done < want {
            let pos = lsn + done as u64;
            let index = pos / self.seg_size;
            let seg = &inner.segs[(index - first_index) as usize];
            let off = pos - index * self.seg_size;
            let n = (want - done).min((self.seg_size - off) as usize);
            let dst = &mut buf[done..done + n];
            let got = seg
                .file
                .read_full_at(SEGMENT_HEADER + off, dst)
                .map_err(|e| io_err("read", &seg.path, e))?;
            // Unwritten parts of a segment (before a later one) read as zeros.
            dst[got..].fill(0);
            done += n;
        }
        Ok(want)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        segment_salt(self.salt, lsn / self.seg_size)
    }

    /// Through the segment files' `SEEK_DATA` and `SEEK_HOLE`
    /// ([`crate::fs::FsFile::next_data`]): the end of the last written range at or after
    /// `from`, so that the reserved space after a stream's end (up to a whole 64 MiB segment
    /// at reopen, where the limit is the segment's full size) is not read by a scan looking
    /// past the end for later records. Measured: a reopen after `kill -9` of braid-engine
    /// with taurus on 64 streams spent 3-4 s zeroing page-cache pages for that space.
    fn data_end(&self, from: Lsn) -> Result<Lsn, WalError> {
        let inner = self.inner.lock();
        let limit = self.limit_of(&inner);
        let Some(first_index) = inner.segs.first().map(|s| s.index) else {
            return Ok(limit);
        };
        let mut end = from.min(limit);
        let mut pos = from;
        while pos < limit {
            let index = pos / self.seg_size;
            let Some(seg) = index
                .checked_sub(first_index)
                .and_then(|i| inner.segs.get(i as usize))
            else {
                return Ok(limit);
            };
            let seg_end = SEGMENT_HEADER + self.seg_size;
            let mut off = SEGMENT_HEADER + (pos - index * self.seg_size);
            while off < seg_end {
                let seek = |e| io_err("seek", &seg.path, e);
                let Some(data) = seg.file.next_data(off).map_err(seek)? else {
                    break;
                };
                if data >= seg_end {
                    break;
                }
                let hole = seg
                    .file
                    .next_hole(data)
                    .map_err(seek)?
                    .clamp(data + 1, seg_end);
                end = end.max(index * self.seg_size + (hole - SEGMENT_HEADER));
                off = hole;
            }
            pos = (index + 1) * self.seg_size;
        }
        Ok(end.min(limit))
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        (
            self.segment_path(lsn).display().to_string(),
            SEGMENT_HEADER + lsn % self.seg_size,
        )
    }
}
