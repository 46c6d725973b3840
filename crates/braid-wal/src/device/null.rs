//! A device that keeps nothing: the no-logging baseline (the `none` scheme every figure is a
//! ratio to, docs/design.md "Measuring").
//!
//! Fills are discarded and every byte is "durable" at once (`durable_on_fill`), so a stream on
//! it still does the full reservation protocol of Taurus Alg. 1 — what is measured is the cost
//! of logging minus the cost of the medium. Its capacity is `u64::MAX / 2` and it never
//! recycles space (`reusable() == 0`), which leaves room for ~9.2e18 bytes of appends. Reading
//! it back finds an empty stream.

use crate::device::{Device, DeviceInfo};
use crate::scan::StreamSource;
use crate::{Lsn, WalError};

/// The device that discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullDevice;

impl NullDevice {
    /// The null device (same as `NullDevice` or `NullDevice::default()`).
    pub fn new() -> NullDevice {
        NullDevice
    }
}

impl StreamSource for NullDevice {
    fn start(&self) -> Lsn {
        0
    }
    fn limit(&self) -> Lsn {
        0
    }
    fn sealed(&self) -> Lsn {
        0
    }
    fn read_at(&self, _lsn: Lsn, _buf: &mut [u8]) -> Result<usize, WalError> {
        Ok(0)
    }
    fn salt_for(&self, _lsn: Lsn) -> u32 {
        0
    }
    fn locate(&self, lsn: Lsn) -> (String, u64) {
        ("null".to_string(), lsn)
    }
}

impl Device for NullDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: "null",
            location: String::new(),
            emulation: Some("no device: nothing survives a crash".into()),
        }
    }
    fn capacity(&self) -> u64 {
        u64::MAX / 2
    }
    fn reusable(&self) -> Lsn {
        0
    }
    #[inline]
    fn fill(&self, _lsn: Lsn, _bytes: &[u8]) {}
    fn durable_on_fill(&self) -> bool {
        true
    }
    fn flush(&self, _from: Lsn, _to: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn ensure_space(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn reset_tail(&self, _end: Lsn) -> Result<(), WalError> {
        Ok(())
    }
    fn release(&self, _upto: Lsn) -> Result<(), WalError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn discards_and_reads_back_empty() {
        let d = NullDevice::new();
        d.ensure_space(1 << 40).unwrap();
        d.fill(0, &[1, 2, 3]);
        d.flush(0, 8).unwrap();
        assert_eq!(d.limit(), 0);
        let mut buf = [7u8; 16];
        assert_eq!(d.read_at(0, &mut buf).unwrap(), 0);
        assert_eq!(d.info().kind, "null");
        assert!(d.durable_on_fill());
        assert_eq!(d.capacity(), u64::MAX / 2);
    }
}
