//! [`MemSource`]: an in-memory stream source, optionally cut into salted segments like a file
//! device.

use super::StreamSource;
use crate::{Lsn, WalError};

/// An in-memory stream: `bytes[i]` holds LSN `start + i`. For tests, fuzzing and tools that
/// inspect a log image held in memory.
///
/// With `segment_len > 0` the LSN space is cut into segments `name.0`, `name.1`, ... (by
/// absolute LSN), each with its own salt `salt + segment index`, like a file device.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct MemSource {
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
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn new(name: impl Into<String>, start: Lsn, salt: u32) -> MemSource {
        MemSource {
            name: name.into(),
            start,
            salt,
            ..MemSource::default()
        }
    }

    /// LSN of the next byte appended.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn tail(&self) -> Lsn {
        self.start + self.bytes.len() as u64
    }

    /// Encode `spec` at the tail with the right salt; returns its LSN.
    #[cfg_attr(feature = "testing", visibility::make(pub))]
    pub(crate) fn append(
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
    pub(crate) fn index(&self, lsn: Lsn) -> usize {
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
