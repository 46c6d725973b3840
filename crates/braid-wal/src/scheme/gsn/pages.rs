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
//!
//! Each slot's word also names the page's *writer* for Remote Flush Avoidance (Haubenschild
//! et al., SIGMOD 2020, Section 4.3: a page remembers the worker that last modified it): the
//! GSN in the top 48 bits, a log number in the low 16. With RFA off every writer is 0 and the
//! word is the clock shifted. With RFA on ([`PageTable::raise_by`]) the writer is the one log
//! that may hold a write of the page that is not yet *settled* (its GSN above what the writer
//! log's `settled` function returns: gsn, the acknowledged GSN, every log durable up to it;
//! autonomous commit, the writer log's own settled GSN, `autonomous/ack.rs`), or [`MULTI`]
//! when more than one may: a later, higher write of another log must not hide an earlier one
//! that is still volatile (a slot is shared by the rows of a
//! page and by pages that hash alike, so writes to it need not be ordered by row locks). A
//! reader of the page then needs a remote flush unless the page's GSN is settled for its
//! writer (for [`MULTI`], acknowledged) or its writer is the reader's own log.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire};

/// Bits of a slot's word that name the writer's log.
const WRITER_BITS: u32 = 16;
/// The writer field of a page that more than one log may have written above the acknowledged
/// GSN: every reader but none needs a remote flush.
pub(crate) const MULTI: u16 = u16::MAX;
/// Logs RFA can name (log numbers below [`MULTI`]).
pub(crate) const MAX_RFA_LOGS: usize = MULTI as usize;

/// A page word's GSN and writer.
#[inline]
pub(crate) fn split(word: u64) -> (u64, u16) {
    (word >> WRITER_BITS, word as u16)
}

#[inline]
fn join(gsn: u64, writer: u16) -> u64 {
    (gsn << WRITER_BITS) | u64::from(writer)
}

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
        split(self.slots[slot].load(Acquire)).0
    }

    /// The clock of `slot` and its writer (see the module doc).
    #[inline]
    pub(crate) fn get_with_writer(&self, slot: usize) -> (u64, u16) {
        split(self.slots[slot].load(Acquire))
    }

    /// Raise the clock of `slot` to at least `gsn`; returns the clock after. RFA off only
    /// (every writer 0).
    #[inline]
    pub(crate) fn raise(&self, slot: usize, gsn: u64) -> u64 {
        debug_assert!(gsn < 1 << (64 - WRITER_BITS), "GSN {gsn} beyond 48 bits");
        split(self.slots[slot].fetch_max(join(gsn, 0), AcqRel))
            .0
            .max(gsn)
    }

    /// RFA: raise the clock of `slot` to at least `gsn` as a write of log `writer`, where
    /// `settled(w)` is a GSN up to which log `w`'s writes are settled (see [`raise_word`]);
    /// returns the clock after.
    #[inline]
    pub(crate) fn raise_by(
        &self,
        slot: usize,
        gsn: u64,
        writer: u16,
        settled: impl Fn(u16) -> u64,
    ) -> u64 {
        raise_word(&self.slots[slot], gsn, writer, settled)
    }

    /// [`Self::raise_by`], returning also the word it replaced (GSN and writer): what every
    /// write of the page before this one is at or below (command logging's replay floor,
    /// `worker.rs`).
    #[inline]
    pub(crate) fn raise_by_seen(
        &self,
        slot: usize,
        gsn: u64,
        writer: u16,
        settled: impl Fn(u16) -> u64,
    ) -> ((u64, u16), u64) {
        raise_word_seen(&self.slots[slot], gsn, writer, settled)
    }
}

/// A page clock's word as [`raise_word`] uses it: `std`'s atomic here, loom's in
/// `tests/loom_gsn.rs`, which model-checks the raise through this trait.
pub(crate) trait PageWord {
    /// The word (acquire).
    fn load(&self) -> u64;
    /// Replace `current` by `new` (acquire-release; may fail spuriously); `Err` holds the
    /// value found instead.
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64>;
}

impl PageWord for AtomicU64 {
    #[inline]
    fn load(&self) -> u64 {
        AtomicU64::load(self, Acquire)
    }
    #[inline]
    fn compare_exchange_weak(&self, current: u64, new: u64) -> Result<u64, u64> {
        AtomicU64::compare_exchange_weak(self, current, new, AcqRel, Acquire)
    }
}

/// RFA: raise the page clock `word` to at least `gsn` as a write of log `writer`, where
/// `settled(w)` is a GSN up to which the writes of log `w` are settled (durable, and
/// everything they depend on too; `settled(MULTI)`: of every log); returns the clock after.
/// The writer field becomes `writer` if the page's earlier writes are all settled (its clock
/// at most its writer's settled GSN) or were all `writer`'s, else [`MULTI`]: one
/// compare-and-swap, retried on contention. `settled` only grows, so a stale answer only
/// names [`MULTI`] more often.
#[inline]
pub(crate) fn raise_word<W: PageWord + ?Sized>(
    word: &W,
    gsn: u64,
    writer: u16,
    settled: impl Fn(u16) -> u64,
) -> u64 {
    raise_word_seen(word, gsn, writer, settled).1
}

/// [`raise_word`], returning also the GSN and writer of the word it replaced (or found equal
/// to what it would write).
#[inline]
fn raise_word_seen<W: PageWord + ?Sized>(
    word: &W,
    gsn: u64,
    writer: u16,
    settled: impl Fn(u16) -> u64,
) -> ((u64, u16), u64) {
    debug_assert!(gsn < 1 << (64 - WRITER_BITS), "GSN {gsn} beyond 48 bits");
    debug_assert!(writer != MULTI);
    let mut cur = word.load();
    loop {
        let (cg, cw) = split(cur);
        let w = if cw == writer || cg <= settled(cw) {
            writer
        } else {
            MULTI
        };
        let new = join(cg.max(gsn), w);
        if new == cur {
            return ((cg, cw), cg);
        }
        match word.compare_exchange_weak(cur, new) {
            Ok(_) => return ((cg, cw), cg.max(gsn)),
            Err(now) => cur = now,
        }
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

    #[test]
    fn a_page_names_its_one_volatile_writer_or_multi() {
        let t = PageTable::new(16, 1);
        let s = t.slot(0, 1);
        // Log 1 writes at 10 (nothing acknowledged): log 1 is the writer.
        assert_eq!(t.raise_by(s, 10, 1, |_| 0), 10);
        assert_eq!(t.get_with_writer(s), (10, 1));
        // Log 1 again, higher: still log 1.
        assert_eq!(t.raise_by(s, 12, 1, |_| 0), 12);
        assert_eq!(t.get_with_writer(s), (12, 1));
        // Log 2 writes lower than the clock while log 1's 12 is volatile: two writers.
        assert_eq!(t.raise_by(s, 11, 2, |_| 5), 12);
        assert_eq!(t.get_with_writer(s), (12, MULTI));
        // Once everything up to the clock is acknowledged, a write names its log alone.
        assert_eq!(t.raise_by(s, 20, 3, |_| 12), 20);
        assert_eq!(t.get_with_writer(s), (20, 3));
        // A higher write of another log while 20 is volatile does not hide log 3's write.
        assert_eq!(t.raise_by(s, 30, 4, |_| 19), 30);
        assert_eq!(t.get_with_writer(s), (30, MULTI));
        // The plain clock reads the GSN only.
        assert_eq!(t.get(s), 30);
        // Per-log settled GSNs (autonomous commit): log 4's 30 is settled, log 5's write names
        // log 5 alone although a MULTI page would need everything up to 30 acknowledged.
        let u = t.slot(0, 2);
        assert_eq!(t.raise_by(u, 30, 4, |_| 0), 30);
        let settled = |w: u16| if w == 4 { 30 } else { 0 };
        assert_eq!(t.raise_by(u, 31, 5, settled), 31);
        assert_eq!(t.get_with_writer(u), (31, 5));
        // Log 6 writes while log 5's 31 is not settled: both.
        assert_eq!(t.raise_by(u, 32, 6, settled), 32);
        assert_eq!(t.get_with_writer(u), (32, MULTI));
    }
}
