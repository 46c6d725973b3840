//! A stream as a standby read it part-way (its bytes up to a cut), for the tests that replay a
//! crashed log in rounds over growing prefixes (taurus, gsn).

use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::scan::StreamSource;

/// `src`'s bytes up to `cut`.
pub struct Prefix {
    pub src: Arc<dyn Device>,
    pub cut: u64,
}

impl StreamSource for Prefix {
    fn start(&self) -> u64 {
        self.src.start()
    }
    fn limit(&self) -> u64 {
        self.src.limit().min(self.cut).max(self.src.start())
    }
    fn sealed(&self) -> u64 {
        self.src.sealed().min(self.limit())
    }
    fn read_at(&self, lsn: u64, buf: &mut [u8]) -> Result<usize, WalError> {
        let n = buf.len().min(self.limit().saturating_sub(lsn) as usize);
        self.src.read_at(lsn, &mut buf[..n])
    }
    fn salt_for(&self, lsn: u64) -> u32 {
        self.src.salt_for(lsn)
    }
    fn locate(&self, lsn: u64) -> (String, u64) {
        self.src.locate(lsn)
    }
}
