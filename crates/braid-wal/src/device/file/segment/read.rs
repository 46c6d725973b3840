//! Reading a stream back for recovery: the [`StreamSource`] the scanner walks.

use super::name::segment_salt;
use super::{SEGMENT_HEADER, SegmentLog, io_err};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

impl SegmentLog {
    /// Read exactly `buf.len()` bytes at `lsn`; an error if the range passes the limit.
    pub fn read_exact_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<(), WalError> {
        let n = self.read_at(lsn, buf)?;
        if n < buf.len() {
            return Err(WalError::Config(format!(
                "read of {} bytes at LSN {lsn} passes the end of the log at {}",
                buf.len(),
                lsn + n as u64
            )));
        }
        Ok(())
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
            return Err(WalError::Config(format!(
                "read at LSN {lsn} before the first segment (LSN {})",
                first_index * self.seg_size
            )));
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

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        (
            self.segment_path(lsn).display().to_string(),
            SEGMENT_HEADER + lsn % self.seg_size,
        )
    }
}
