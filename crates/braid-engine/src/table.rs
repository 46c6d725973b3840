//! Tables: a schema and a primary-key index of rows. Hash tables use `scc::HashIndex` (lock-free
//! reads) with the engine's integer-key hasher ([`KeyHash`], see its module doc for why);
//! ordered tables use [`OrderedIndex`] (`std` B-trees in shards by key prefix, see its module
//! doc for why, and for the guarantees range scans give).

use std::ops::Bound;
use std::sync::Arc;

use braid_wal::scheme::Prefetch;
use scc::HashIndex;

use crate::index::key_hash::KeyHash;
use crate::index::ordered::OrderedIndex;
use crate::row::Row;
use crate::schema::{IndexKind, Schema, TableDef};

enum Index {
    Hash(HashIndex<u64, Arc<Row>, KeyHash>),
    Ordered(OrderedIndex<Arc<Row>>),
}

/// A table: its schema and the primary-key index of its rows.
#[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
pub(crate) struct Table {
    /// Position in the catalog.
    pub id: u32,
    /// Row layout.
    pub schema: Schema,
    index: Index,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.schema.def.name)
            .finish()
    }
}

impl Table {
    /// An empty table with the index `def` asks for.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn new(id: u32, def: TableDef) -> Table {
        let index = match def.index {
            IndexKind::Hash => Index::Hash(HashIndex::with_hasher(KeyHash::new())),
            IndexKind::Ordered => Index::Ordered(OrderedIndex::new()),
        };
        Table {
            id,
            schema: Schema::new(def),
            index,
        }
    }

    /// Table name.
    pub(crate) fn name(&self) -> &str {
        &self.schema.def.name
    }

    /// The row at `key` in the index, whatever its state.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn get(&self, key: u64) -> Option<Arc<Row>> {
        match &self.index {
            Index::Hash(h) => h.peek_with(&key, |_, v| v.clone()),
            Index::Ordered(t) => t.peek(key, Arc::clone),
        }
    }

    /// `f` on the row at `key`, borrowed from the index (no reference count taken), whatever
    /// its state. `f` must not insert into or remove from this table (an ordered table's
    /// shard is read-locked while it runs).
    pub(crate) fn peek<R>(&self, key: u64, f: impl FnOnce(&Row) -> R) -> Option<R> {
        match &self.index {
            Index::Hash(h) => h.peek_with(&key, |_, v| f(v)),
            Index::Ordered(t) => t.peek(key, |v| f(v)),
        }
    }

    /// Start loading the row at `key`, if the index has it: its header ([`Prefetch::Locate`]),
    /// or its image once the header is in cache ([`Prefetch::Body`]). Locks nothing.
    pub(crate) fn prefetch(&self, key: u64, step: Prefetch) {
        self.peek(key, |row| match step {
            Prefetch::Locate => row.prefetch_header(),
            Prefetch::Body => row.prefetch_body(),
        });
    }

    /// Insert a row; gives it back if the key is taken.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn insert(&self, key: u64, row: Arc<Row>) -> Result<(), Arc<Row>> {
        match &self.index {
            Index::Hash(h) => h.insert_sync(key, row).map_err(|(_, r)| r),
            Index::Ordered(t) => t.insert(key, row),
        }
    }

    /// Insert or replace (recovery).
    pub(crate) fn upsert(&self, key: u64, row: Arc<Row>) {
        if let Err(row) = self.insert(key, row) {
            self.remove(key);
            let _ = self.insert(key, row);
        }
    }

    /// MVCC replay of an insert: `image` becomes the version of `key` stamped `ts` (in the
    /// key's row if it has one, else in a new row).
    pub(crate) fn upsert_at(&self, key: u64, image: Box<[u8]>, ts: u64) {
        match self.get(key) {
            Some(r) => {
                r.install_at(ts, 0, |_| Some(image));
            }
            None => self.upsert(key, Arc::new(Row::new_at(image, ts))),
        }
    }

    /// Remove `key` from the index; false if it was absent.
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn remove(&self, key: u64) -> bool {
        match &self.index {
            Index::Hash(h) => h.remove_sync(&key),
            Index::Ordered(t) => t.remove_if(key, |_| true),
        }
    }

    /// Remove `key` only if it still maps to `row`.
    pub(crate) fn remove_row(&self, key: u64, row: &Arc<Row>) -> bool {
        match &self.index {
            Index::Hash(h) => h.remove_if_sync(&key, |v| Arc::ptr_eq(v, row)),
            Index::Ordered(t) => t.remove_if(key, |v| Arc::ptr_eq(v, row)),
        }
    }

    /// Keys in the index (rows of any state).
    pub(crate) fn len(&self) -> usize {
        match &self.index {
            Index::Hash(h) => h.len(),
            Index::Ordered(t) => t.len(),
        }
    }

    /// Whether the index is ordered (can scan ranges).
    pub(crate) fn is_ordered(&self) -> bool {
        matches!(self.index, Index::Ordered(_))
    }

    /// Visit rows with keys in `[lo, hi]` in key order until `f` returns false. Hash tables
    /// return false (they cannot scan). `f` must not insert into or remove from this table
    /// (it runs under the index's shared lock).
    #[cfg_attr(any(test, feature = "testing"), visibility::make(pub))]
    pub(crate) fn range(
        &self,
        lo: Bound<u64>,
        hi: Bound<u64>,
        mut f: impl FnMut(u64, &Arc<Row>) -> bool,
    ) -> bool {
        match &self.index {
            Index::Hash(_) => false,
            Index::Ordered(t) => {
                t.range(lo, hi, &mut f);
                true
            }
        }
    }

    /// Visit every row (any order).
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, &Arc<Row>)) {
        match &self.index {
            Index::Hash(h) => {
                let guard = scc::Guard::new();
                for (k, v) in h.iter(&guard) {
                    f(*k, v);
                }
            }
            Index::Ordered(t) => t.for_each(f),
        }
    }
}
