//! The DRAM ring a device's writers fill before its flusher writes the bytes out (the file
//! device's segment files, a replicated device's messages): stream position `lsn` lives at
//! `lsn mod capacity`, and a range that crosses the end wraps to the start.

use braid_pmem::Region;

use crate::Lsn;

/// A ring of DRAM bytes addressed by stream position.
pub struct DramRing {
    region: Region,
    cap: u64,
}

impl DramRing {
    /// A ring of `bytes` bytes.
    pub fn new(bytes: usize) -> DramRing {
        DramRing {
            region: Region::anonymous(bytes),
            cap: bytes as u64,
        }
    }

    /// Its size in bytes.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// Copy `bytes` to stream position `lsn` (writers fill disjoint ranges concurrently).
    pub fn write(&self, lsn: Lsn, mut bytes: &[u8]) {
        // The offset is below the ring capacity, a usize.
        let mut off = (lsn % self.cap) as usize;
        while !bytes.is_empty() {
            let n = bytes.len().min(self.cap as usize - off);
            self.region.write(off, &bytes[..n]);
            bytes = &bytes[n..];
            off = 0;
        }
    }

    /// Copy the bytes at stream position `lsn` into `dst`.
    pub fn read(&self, lsn: Lsn, mut dst: &mut [u8]) {
        let mut off = (lsn % self.cap) as usize;
        while !dst.is_empty() {
            let n = dst.len().min(self.cap as usize - off);
            let (head, rest) = dst.split_at_mut(n);
            self.region.read(off, head);
            dst = rest;
            off = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_across_the_end_wraps_to_the_start() {
        let r = DramRing::new(8);
        r.write(5, b"abcdef");
        let mut out = [0u8; 6];
        r.read(5, &mut out);
        assert_eq!(&out, b"abcdef");
        let mut head = [0u8; 3];
        r.read(8, &mut head);
        assert_eq!(&head, b"def", "stream position 8 is ring offset 0");
    }
}
