//! Plain, non-recoverable access to a pool through the [`Mem`] trait: the "NVM, no
//! recoverability" baseline of REWIND Fig. 7 and the non-recoverable twin of the B+-tree.

use braid_pmem::Words;

use crate::RewindError;
use crate::pptr::PPtr;
use crate::tx::Mem;

/// Plain, non-recoverable access to a pool: stores are flushed and fenced (persistent but not
/// atomic), nothing is logged, and allocation is immediate. On a pool in anonymous DRAM the
/// flushes and fences are no-ops. This is the "NVM, no recoverability" baseline of REWIND
/// Fig. 7 and the non-recoverable twin of the B+-tree.
#[derive(Debug)]
pub struct RawMem<'p> {
    pool: &'p crate::Pool,
    /// The pool's region, held directly so that a load is one hop from here.
    r: &'p braid_pmem::Region,
}

impl<'p> RawMem<'p> {
    /// Plain access to `pool`.
    pub fn new(pool: &'p crate::Pool) -> RawMem<'p> {
        RawMem {
            pool,
            r: &pool.inner.r,
        }
    }
}

impl Mem for RawMem<'_> {
    #[inline]
    fn read_u64(&self, off: u64) -> u64 {
        self.r.load_u64(off as usize)
    }
    #[inline]
    fn read_bytes(&self, off: u64, out: &mut [u8]) {
        self.r.read(off as usize, out)
    }
    #[inline]
    fn words(&self) -> Option<Words<'_>> {
        Some(self.r.words(0, self.r.len() / 8))
    }
    #[inline]
    fn write_u64(&mut self, off: u64, v: u64) -> Result<(), RewindError> {
        let r = self.r;
        r.store_u64(off as usize, v);
        r.persist(off as usize, 8);
        Ok(())
    }
    #[inline]
    fn write_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        let r = self.r;
        r.write(off as usize, b);
        r.persist(off as usize, b.len());
        Ok(())
    }
    fn init_bytes(&mut self, off: u64, b: &[u8]) -> Result<(), RewindError> {
        self.write_bytes(off, b)
    }
    fn alloc(&mut self, size: usize) -> Result<u64, RewindError> {
        self.pool.raw_alloc(size).map(PPtr::offset)
    }
    fn free(&mut self, off: u64) -> Result<(), RewindError> {
        self.pool.raw_free(PPtr::<u8>::from_offset(off))
    }
    fn logs_stores(&self) -> bool {
        false
    }
}
