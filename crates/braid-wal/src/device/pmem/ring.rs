//! Ring addressing (LSN to region offset, wrapped pieces), the persistent head word, and the
//! device as a [`StreamSource`]: de-staged files for `[start, head)`, the ring after that.

use std::sync::atomic::Ordering::{Acquire, Release};

use braid_pmem::HEADER_SIZE;

use super::header::lap_salt;
use super::{OFF_HEAD, PmemDevice, RING_HEADER, Ring};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

impl Ring {
    #[inline]
    pub(super) fn off(&self, lsn: Lsn) -> usize {
        // lsn % cap < cap <= region length, which is a usize.
        RING_HEADER + (lsn % self.cap) as usize
    }

    /// Apply `f(region offset, range in the slice)` to the ring pieces of `[lsn, lsn + len)`.
    #[inline]
    pub(super) fn pieces(
        &self,
        lsn: Lsn,
        len: usize,
        mut f: impl FnMut(usize, std::ops::Range<usize>),
    ) {
        let first = len.min((self.cap - lsn % self.cap) as usize);
        f(self.off(lsn), 0..first);
        if first < len {
            f(RING_HEADER, first..len);
        }
    }

    /// Store and persist a header word; an error if the region's persistence failed.
    pub(super) fn set_word(&self, off: usize, v: Lsn) -> Result<(), WalError> {
        self.region.store_u64(off, v.to_le());
        self.region.persist(off, 8);
        Ok(self.region.check()?)
    }

    pub(super) fn set_head(&self, head: Lsn) -> Result<(), WalError> {
        let _g = self.header.lock();
        if head > self.head.load(Acquire) {
            self.set_word(OFF_HEAD, head)?;
            self.head.store(head, Release);
        }
        Ok(())
    }

    pub(super) fn full_error(&self) -> WalError {
        WalError::LogFull {
            ring: crate::FullRing::Pmem {
                region: self.name.clone(),
                stream: self.stream,
                bytes: self.cap,
            },
        }
    }

    /// Copy ring bytes at `[lsn, lsn + buf.len())` (inside the window) into `buf`.
    pub(super) fn read_ring(&self, lsn: Lsn, buf: &mut [u8]) {
        self.pieces(lsn, buf.len(), |off, r| self.region.read(off, &mut buf[r]));
    }
}

impl StreamSource for PmemDevice {
    fn start(&self) -> Lsn {
        let r = &self.ring;
        let start = r.start.load(Acquire);
        match &r.destage {
            Some(d) => start.max(d.log.start()),
            None => r.head.load(Acquire).max(start),
        }
    }

    fn limit(&self) -> Lsn {
        self.ring.head.load(Acquire) + self.ring.cap
    }

    fn sealed(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize, WalError> {
        let r = &self.ring;
        let head = r.head.load(Acquire);
        let limit = head + r.cap;
        let mut done = 0usize;
        let mut at = lsn;
        if at < head {
            let Some(d) = &r.destage else { return Ok(0) };
            let n = buf
                .len()
                .min(usize::try_from(head - at).unwrap_or(usize::MAX));
            let got = d.log.read_at(at, &mut buf[..n])?;
            done += got;
            at += got as u64;
            if got < n {
                return Ok(done);
            }
        }
        if at >= limit || done == buf.len() {
            return Ok(done);
        }
        let n = (buf.len() - done).min(usize::try_from(limit - at).unwrap_or(usize::MAX));
        r.read_ring(at, &mut buf[done..done + n]);
        Ok(done + n)
    }

    fn salt_for(&self, lsn: Lsn) -> u32 {
        lap_salt(self.ring.salt, lsn / self.ring.cap)
    }

    fn locate(&self, lsn: Lsn) -> (String, u64) {
        let r = &self.ring;
        if lsn < r.head.load(Acquire)
            && let Some(d) = &r.destage
        {
            return d.log.locate(lsn);
        }
        let file_header = if r.region.path().is_some() {
            HEADER_SIZE as u64
        } else {
            0
        };
        (r.name.clone(), file_header + (r.off(lsn) as u64))
    }
}
