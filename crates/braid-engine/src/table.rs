//! Tables: a schema and a primary-key index of rows. Hash tables use `scc::HashIndex` (lock-free
//! reads); ordered tables use `scc::TreeIndex` (a concurrent B+-tree with range scans).

use std::ops::Bound;
use std::sync::Arc;

use scc::{HashIndex, TreeIndex};

use crate::row::Row;
use crate::schema::{IndexKind, Schema, TableDef};

enum Index {
    Hash(HashIndex<u64, Arc<Row>>),
    Ordered(TreeIndex<u64, Arc<Row>>),
}

pub struct Table {
    pub id: u32,
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
    pub fn new(id: u32, def: TableDef) -> Table {
        let index = match def.index {
            IndexKind::Hash => Index::Hash(HashIndex::new()),
            IndexKind::Ordered => Index::Ordered(TreeIndex::new()),
        };
        Table {
            id,
            schema: Schema::new(def),
            index,
        }
    }

    pub fn name(&self) -> &str {
        &self.schema.def.name
    }

    pub fn get(&self, key: u64) -> Option<Arc<Row>> {
        match &self.index {
            Index::Hash(h) => h.peek_with(&key, |_, v| v.clone()),
            Index::Ordered(t) => t.peek_with(&key, |_, v| v.clone()),
        }
    }

    /// Insert a row; gives it back if the key is taken.
    pub fn insert(&self, key: u64, row: Arc<Row>) -> Result<(), Arc<Row>> {
        match &self.index {
            Index::Hash(h) => h.insert_sync(key, row).map_err(|(_, r)| r),
            Index::Ordered(t) => t.insert_sync(key, row).map_err(|(_, r)| r),
        }
    }

    /// Insert or replace (recovery).
    pub fn upsert(&self, key: u64, row: Arc<Row>) {
        if let Err(row) = self.insert(key, row) {
            self.remove(key);
            let _ = self.insert(key, row);
        }
    }

    pub fn remove(&self, key: u64) -> bool {
        match &self.index {
            Index::Hash(h) => h.remove_sync(&key),
            Index::Ordered(t) => t.remove_sync(&key),
        }
    }

    /// Remove `key` only if it still maps to `row`.
    pub fn remove_row(&self, key: u64, row: &Arc<Row>) -> bool {
        match &self.index {
            Index::Hash(h) => h.remove_if_sync(&key, |v| Arc::ptr_eq(v, row)),
            Index::Ordered(t) => t.remove_if_sync(&key, |v| Arc::ptr_eq(v, row)),
        }
    }

    pub fn len(&self) -> usize {
        match &self.index {
            Index::Hash(h) => h.len(),
            Index::Ordered(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_ordered(&self) -> bool {
        matches!(self.index, Index::Ordered(_))
    }

    /// Visit rows with keys in `[lo, hi]` in key order until `f` returns false. Hash tables
    /// return false (they cannot scan).
    pub fn range(
        &self,
        lo: Bound<u64>,
        hi: Bound<u64>,
        mut f: impl FnMut(u64, &Arc<Row>) -> bool,
    ) -> bool {
        match &self.index {
            Index::Hash(_) => false,
            Index::Ordered(t) => {
                let guard = scc::Guard::new();
                for (k, v) in t.range((lo, hi), &guard) {
                    if !f(*k, v) {
                        break;
                    }
                }
                true
            }
        }
    }

    /// Visit every row (any order).
    pub fn for_each(&self, mut f: impl FnMut(u64, &Arc<Row>)) {
        let guard = scc::Guard::new();
        match &self.index {
            Index::Hash(h) => {
                for (k, v) in h.iter(&guard) {
                    f(*k, v);
                }
            }
            Index::Ordered(t) => {
                for (k, v) in t.iter(&guard) {
                    f(*k, v);
                }
            }
        }
    }
}
