//! A row as a scheme sees it ([`RowRef`]), the ordering metadata a scheme keeps inside it
//! ([`RowMeta`]), and a transaction's access set ([`AccessSet`]).

/// A row as a scheme sees it: its identity (the engine's table number and key) and, when the
/// caller keeps rows of its own, the [`RowMeta`] slot inside the row. A scheme keeps the order it
/// tracks (GSNs, LSN vectors) in the slot when there is one (beside the engine's lock word, as
/// Taurus keeps LVs in the lock table, Sec. 4.1), else in its own structures keyed by identity.
/// A caller passes a slot for every access to a row or for none.
#[derive(Debug, Clone, Copy)]
pub struct RowRef<'a> {
    /// The table's number in the engine's catalog.
    pub table: u32,
    /// The row's key.
    pub key: u64,
    /// The scheme's slot in the caller's row, if the caller keeps one per row.
    pub meta: Option<&'a RowMeta>,
}

impl RowRef<'static> {
    /// A row named by identity only (the log layer used without an engine).
    pub fn new(table: u32, key: u64) -> RowRef<'static> {
        RowRef {
            table,
            key,
            meta: None,
        }
    }
}

/// Words a [`RowMeta`] slot holds at most: Taurus's pending count, writeLV and readLV at 16
/// logs, the paper's configuration (Xia et al. 2021 Sec. 5.2: "16 log manager threads").
pub(crate) const ROW_META_WORDS: usize = 33;
/// Of those, the words kept in the row itself.
pub(crate) const ROW_META_INLINE: usize = 4;
/// Words of the smaller spill allocation, used while a scheme needs no more.
pub(crate) const ROW_META_SMALL: usize = 8;

/// Ordering metadata a scheme keeps inside a row: up to `ROW_META_WORDS` atomic words the
/// scheme lays out (Taurus: a pending count, writeLV and readLV; Silo-R: the row's TID), all
/// zero until the scheme stores to them, so a scheme reads zero as "never touched since open".
/// The first `ROW_META_INLINE` words live in the row, beside its lock word, so the scheme
/// finds them in the cache lines the concurrency control fetched anyway (a separate allocation
/// cost Taurus a cache miss per row access: 4% of a one-thread YCSB run's samples in
/// `merge_from`); more words are one allocation, made on the first access that needs them, of
/// `ROW_META_SMALL` words or, for more, `ROW_META_WORDS`. (With one spill size of 8 words,
/// Taurus command logging on 4 logs, 9 words, kept its rows' LVs in a shared hash map instead:
/// a shard lock and a probe per row access, 19% of a 2-thread TPC-C Payment run's samples,
/// which made it slower than data logging.) A scheme asks for the same count for every row of
/// a database, so each row makes one allocation at most.
#[derive(Debug, Default)]
pub struct RowMeta {
    inline: [std::sync::atomic::AtomicU64; ROW_META_INLINE],
    spill: once_cell::race::OnceBox<[std::sync::atomic::AtomicU64; ROW_META_SMALL]>,
    spill_large: once_cell::race::OnceBox<[std::sync::atomic::AtomicU64; ROW_META_WORDS]>,
}

impl RowMeta {
    /// The first `n` words (`n <= ROW_META_WORDS`); `allocated` is called when this call
    /// made the allocation that words beyond [`ROW_META_INLINE`] need (two first accesses at
    /// once may both allocate; one allocation is kept).
    #[inline]
    pub(crate) fn words(
        &self,
        n: usize,
        allocated: impl FnOnce(),
    ) -> &[std::sync::atomic::AtomicU64] {
        if n <= ROW_META_INLINE {
            return &self.inline[..n];
        }
        if n <= ROW_META_SMALL {
            return &self.spill.get_or_init(|| {
                allocated();
                Box::default()
            })[..n];
        }
        &self.spill_large.get_or_init(|| {
            allocated();
            Box::new(std::array::from_fn(|_| {
                std::sync::atomic::AtomicU64::new(0)
            }))
        })[..n.min(ROW_META_WORDS)]
    }

    /// Bytes of the allocation a row makes for `n` words (0 if they fit in the row).
    pub(crate) fn spill_bytes(n: usize) -> usize {
        match n {
            n if n <= ROW_META_INLINE => 0,
            n if n <= ROW_META_SMALL => 8 * ROW_META_SMALL,
            _ => 8 * ROW_META_WORDS,
        }
    }
}

/// One row of a transaction's access set: the row, and whether the transaction read it and
/// wrote it (an insert or a delete is a write).
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The row.
    pub row: RowRef<'a>,
    /// `on_read` named it.
    pub read: bool,
    /// `on_write` named it.
    pub write: bool,
}

/// The rows a transaction touched, as its caller holds them, handed to the scheme when the
/// transaction validates, commits and aborts (so a scheme that keeps its order in the rows'
/// [`RowMeta`] slots needs no references of its own to them). Every row `on_read` or
/// `on_write` named is in it.
pub trait AccessSet {
    /// How many rows.
    fn len(&self) -> usize;
    /// Row `i` (`i < len()`).
    fn get(&self, i: usize) -> Access<'_>;
    /// No rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The access set of a caller that hands rows by identity only ([`RowRef::new`]).
#[derive(Debug, Clone, Copy)]
pub struct NoRows;

impl AccessSet for NoRows {
    fn len(&self) -> usize {
        0
    }
    fn get(&self, i: usize) -> Access<'_> {
        // Callers stay below `len()` = 0: this is never reached.
        unreachable!("row {i} of an empty access set")
    }
}

impl AccessSet for Vec<Access<'_>> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn get(&self, i: usize) -> Access<'_> {
        self[i]
    }
}
