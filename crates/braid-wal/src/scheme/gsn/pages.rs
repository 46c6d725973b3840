//! Page GSNs (Wang & Johnson 2014, Section 3.1): one Lamport clock per page, where a page is
//! `rows_per_page` consecutive keys of one table.
//!
//! The engine has no pages, so the scheme groups rows itself: page number `key /
//! rows_per_page` of table `table`. The clocks live in a fixed table of atomic words indexed by
//! a hash of `(table, page)` rather than in the rows, so that a page's clock
//! exists before any of its rows (inserts) and after they are deleted, and so that a commit can
//! re-read the clocks of every page it touched without holding on to the rows.
//!
//! Choice: two pages that hash to the same slot share one clock. That only adds ordering
//! (each page's clock still grows with every write to it, and a transaction that touches it
//! still ends up above it), so the GSN guarantees hold; it costs some false dependencies,
//! which the default of 2^20 slots keeps rare.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// Default number of page clocks.
pub(crate) const DEFAULT_SLOTS: usize = 1 << 20;

/// The page clocks.
pub(crate) struct PageTable {
    slots: Box<[AtomicU64]>,
    mask: u64,
    rows_per_page: u64,
}

impl std::fmt::Debug for PageTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageTable")
            .field("slots", &self.slots.len())
            .field("rows_per_page", &self.rows_per_page)
            .finish()
    }
}

/// A page: table and page number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PageId {
    /// The table.
    pub table: u32,
    /// `key / rows_per_page`.
    pub page: u64,
}

impl PageId {
    /// The page holding `key` of `table` with `rows_per_page` rows per page (0 is taken as 1).
    pub(crate) fn of(table: u32, key: u64, rows_per_page: u64) -> PageId {
        PageId {
            table,
            page: key / rows_per_page.max(1),
        }
    }

    /// A well-mixed 64-bit hash (splitmix64 finaliser).
    pub(crate) fn hash(self) -> u64 {
        crate::mix::mix64(self.page ^ (u64::from(self.table) << 48) ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The page id of the paper's page-level partitioning rule `log = page id mod n`: table in
    /// the top 16 bits, page number below.
    pub(crate) fn number(self) -> u64 {
        (u64::from(self.table) << 48) ^ self.page
    }
}

impl PageTable {
    /// `slots` is rounded up to a power of two (at least 1).
    pub(crate) fn new(slots: usize, rows_per_page: u64) -> PageTable {
        let n = slots.max(1).next_power_of_two();
        PageTable {
            slots: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mask: (n - 1) as u64,
            rows_per_page: rows_per_page.max(1),
        }
    }

    /// Rows per page (at least 1).
    pub(crate) fn rows_per_page(&self) -> u64 {
        self.rows_per_page
    }

    /// Bytes of the clocks.
    pub(crate) fn bytes(&self) -> u64 {
        (self.slots.len() * std::mem::size_of::<AtomicU64>()) as u64
    }

    /// The page holding `key` of `table`.
    pub(crate) fn page(&self, table: u32, key: u64) -> PageId {
        PageId::of(table, key, self.rows_per_page)
    }

    /// The slot of the page holding `key`.
    #[inline]
    pub(crate) fn slot(&self, table: u32, key: u64) -> usize {
        (self.page(table, key).hash() & self.mask) as usize
    }

    /// The clock of `slot`.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> u64 {
        self.slots[slot].load(Acquire)
    }

    /// Raise the clock of `slot` to at least `gsn`; returns the clock after.
    #[inline]
    pub(crate) fn raise(&self, slot: usize, gsn: u64) -> u64 {
        self.slots[slot].fetch_max(gsn, AcqRel).max(gsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_group_rows_and_clocks_only_grow() {
        let t = PageTable::new(1000, 4);
        assert_eq!(t.page(1, 7), PageId { table: 1, page: 1 });
        assert_eq!(t.slot(1, 4), t.slot(1, 7));
        let s = t.slot(2, 100);
        assert_eq!(t.raise(s, 5), 5);
        assert_eq!(t.raise(s, 3), 5);
        assert_eq!(t.get(s), 5);
    }
}
