//! A persistent doubly-linked list of u64 values on REWIND: the running example of the paper
//! (Listing 1, removal inside a persistent atomic block; Listing 2, its expansion into logged
//! writes and a deferred delete).
//!
//! Layout: a header object (`head`, `tail`, `len`) and nodes (`next`, `prev`, `value`).

use crate::tx::Mem;
use crate::{CheckError, RewindError};

const HEAD: u64 = 0;
const TAIL: u64 = 8;
const LEN: u64 = 16;
const NEXT: u64 = 0;
const PREV: u64 = 8;
const VALUE: u64 = 16;

/// A list handle (the header's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PList {
    hdr: u64,
}

impl PList {
    /// Create an empty list.
    pub fn create(m: &mut impl Mem) -> Result<PList, RewindError> {
        let hdr = m.alloc(24)?;
        m.init_bytes(hdr, &[0u8; 24])?;
        Ok(PList { hdr })
    }

    /// The list whose header is at `hdr`.
    pub fn at(hdr: u64) -> PList {
        PList { hdr }
    }

    /// Offset of the list header (store it to find the list again).
    pub fn header(&self) -> u64 {
        self.hdr
    }

    /// Number of values.
    pub fn len(&self, m: &impl Mem) -> u64 {
        m.read_u64(self.hdr + LEN)
    }

    /// Whether the list holds no value.
    pub fn is_empty(&self, m: &impl Mem) -> bool {
        self.len(m) == 0
    }

    /// Append `v`; returns the new node.
    pub fn push_back(&self, m: &mut impl Mem, v: u64) -> Result<u64, RewindError> {
        let n = m.alloc(24)?;
        let tail = m.read_u64(self.hdr + TAIL);
        let mut b = [0u8; 24];
        b[8..16].copy_from_slice(&tail.to_le_bytes());
        b[16..24].copy_from_slice(&v.to_le_bytes());
        m.init_bytes(n, &b)?;
        if tail == 0 {
            m.write_u64(self.hdr + HEAD, n)?;
        } else {
            m.write_u64(tail + NEXT, n)?;
        }
        m.write_u64(self.hdr + TAIL, n)?;
        let len = self.len(m);
        m.write_u64(self.hdr + LEN, len + 1)?;
        Ok(n)
    }

    /// Listing 1: unlink `n` and delete it.
    pub fn remove(&self, m: &mut impl Mem, n: u64) -> Result<(), RewindError> {
        let (prv, nxt) = (m.read_u64(n + PREV), m.read_u64(n + NEXT));
        if n == m.read_u64(self.hdr + TAIL) {
            m.write_u64(self.hdr + TAIL, prv)?;
        }
        if n == m.read_u64(self.hdr + HEAD) {
            m.write_u64(self.hdr + HEAD, nxt)?;
        }
        if prv != 0 {
            m.write_u64(prv + NEXT, nxt)?;
        }
        if nxt != 0 {
            m.write_u64(nxt + PREV, prv)?;
        }
        let len = self.len(m);
        m.write_u64(self.hdr + LEN, len - 1)?;
        m.free(n)
    }

    /// Nodes and values from head to tail.
    pub fn items(&self, m: &impl Mem) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut n = m.read_u64(self.hdr + HEAD);
        while n != 0 && out.len() as u64 <= self.len(m) {
            out.push((n, m.read_u64(n + VALUE)));
            n = m.read_u64(n + NEXT);
        }
        out
    }

    /// Check the links: prev mirrors next, the tail is the last node, the length matches.
    pub fn check(&self, m: &impl Mem) -> Result<(), CheckError> {
        let items = self.items(m);
        let mut prev = 0;
        for &(n, _) in &items {
            if m.read_u64(n + PREV) != prev {
                return Err(CheckError::ListPrev { node: n });
            }
            prev = n;
        }
        if m.read_u64(self.hdr + TAIL) != prev {
            return Err(CheckError::ListTail);
        }
        if items.len() as u64 != self.len(m) {
            return Err(CheckError::ListLength {
                len: self.len(m),
                nodes: items.len(),
            });
        }
        Ok(())
    }
}
