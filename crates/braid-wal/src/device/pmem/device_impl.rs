//! The [`Device`] operations of the ring: fills persisted on the writer's thread, space checks
//! (with de-staging when full), tail reset after recovery and checkpoint release.

use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};

use super::{OFF_HEAD, OFF_START, PmemDevice, PmemWrite, ZERO_CHUNK};
use crate::device::{Device, DeviceInfo};
use crate::{Lsn, Misuse, WalError};
impl Device for PmemDevice {
    fn info(&self) -> DeviceInfo {
        let location = self
            .ring
            .region
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let r = &self.ring.region;
        let emulation = r.emulation();
        DeviceInfo {
            kind: "pmem",
            location,
            emulation,
        }
    }

    fn capacity(&self) -> u64 {
        self.ring.cap
    }

    #[inline]
    fn reusable(&self) -> Lsn {
        self.ring.head.load(Acquire)
    }

    #[inline]
    fn fill(&self, lsn: Lsn, bytes: &[u8]) {
        let r = &*self.ring;
        match r.write {
            PmemWrite::NonTemporal => r.pieces(lsn, bytes.len(), |off, rg| {
                r.region.write_nt(off, &bytes[rg])
            }),
            PmemWrite::StoreFlush => r.pieces(lsn, bytes.len(), |off, rg| {
                let len = rg.len();
                r.region.write(off, &bytes[rg]);
                r.region.flush(off, len);
            }),
        }
        r.region.fence();
    }

    fn durable_on_fill(&self) -> bool {
        true
    }

    fn check_fills(&self) -> Result<(), WalError> {
        Ok(self.ring.region.check()?)
    }

    fn flush(&self, _from: Lsn, _to: Lsn) -> Result<(), WalError> {
        // Fills are durable by themselves; only a persistence failure is left to report.
        self.check_fills()
    }

    #[inline]
    fn ensure_space(&self, upto: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        if upto <= r.head.load(Acquire) + r.cap {
            return Ok(());
        }
        match &r.destage {
            None => Err(r.full_error()),
            Some(d) => {
                r.request_destage(d);
                match &d.lock.lock().error {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                }
            }
        }
    }

    fn reset_tail(&self, end: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        let head = r.head.load(Acquire);
        if end < head || end > head + r.cap || !end.is_multiple_of(8) {
            return Err(WalError::Misuse(Misuse::Outside {
                op: "reset_tail (record-aligned)",
                lsn: end,
                from: head,
                to: head + r.cap,
                on: Some(r.name.clone()),
            }));
        }
        // Zero the ring bytes for LSNs [end, head + cap): every byte outside [head, end).
        // Only chunks holding something are written (reads are cheaper than persists).
        let mut chunk = vec![0u8; ZERO_CHUNK];
        let mut at = end;
        let stop = head + r.cap;
        let mut wrote = false;
        while at < stop {
            // Stop at the ring end so a chunk is one contiguous region range.
            let to_wrap = r.cap - at % r.cap;
            let n = (ZERO_CHUNK as u64).min(stop - at).min(to_wrap) as usize;
            let off = r.off(at);
            r.region.read(off, &mut chunk[..n]);
            if chunk[..n].iter().any(|b| *b != 0) {
                r.region.fill(off, n, 0);
                r.region.flush(off, n);
                wrote = true;
            }
            at += n as u64;
        }
        if wrote {
            r.region.fence();
        }
        r.region.check()?;
        r.durable.fetch_max(end, SeqCst);
        Ok(())
    }

    fn mark_clean_end(&self, end: Lsn) -> Result<(), WalError> {
        // The ring past `end` holds records of earlier laps: zero the header slot at `end` so
        // the scan reads a clean end there (an earlier lap's record never decodes at a later
        // position, so nothing after the zeros counts as a record either).
        let r = &*self.ring;
        let stop = r.head.load(Acquire) + r.cap;
        let len = (crate::record::HEADER_LEN as u64).min(stop.saturating_sub(end)) as usize;
        if len == 0 {
            return Ok(());
        }
        let zeros = [0u8; crate::record::HEADER_LEN];
        r.pieces(end, len, |off, range| {
            r.region.write(off, &zeros[range.clone()]);
            r.region.flush(off, range.len());
        });
        r.region.fence();
        Ok(())
    }

    fn release(&self, upto: Lsn) -> Result<(), WalError> {
        let r = &*self.ring;
        let durable = r.durable.load(Acquire);
        if upto > durable {
            return Err(WalError::Misuse(Misuse::PastEnd {
                op: "release",
                lsn: upto,
                len: 0,
                end: durable,
                on: Some(r.name.clone()),
            }));
        }
        let _g = r.header.lock();
        if upto <= r.start.load(Acquire) {
            return Ok(());
        }
        r.set_word(OFF_START, upto)?;
        r.start.store(upto, Release);
        match &r.destage {
            None => {
                if upto > r.head.load(Acquire) {
                    r.set_word(OFF_HEAD, upto)?;
                    r.head.store(upto, Release);
                }
                Ok(())
            }
            Some(d) => d.log.remove_before(upto.min(r.head.load(Acquire))),
        }
    }

    #[inline]
    fn note_durable(&self, durable: Lsn) {
        let r = &*self.ring;
        r.durable.fetch_max(durable, SeqCst);
        if let Some(d) = &r.destage
            && durable.saturating_sub(r.head.load(Acquire)) > r.cap / 2
        {
            r.request_destage(d);
        }
    }
}
