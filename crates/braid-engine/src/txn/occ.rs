//! Optimistic concurrency control (Silo-style): reads take no lock and remember the row's
//! version; commit locks the write set in a global order (NO_WAIT), then validates that every
//! version read is still the row's and that no other transaction is committing over it. MVCC's
//! commit (`super::multiversion`) is this one with a commit timestamp drawn after the locks.

use std::sync::Arc;

use super::Txn;
use super::access::{Lock, Write};
use crate::error::TxError;
use crate::row::{Row, RowState};

/// An optimistic access of a row not yet accessed: refused if a committing transaction holds
/// it; no lock is taken.
pub(super) fn access_check(row: &Row, table: u32, key: u64) -> Result<Lock, TxError> {
    if row.is_locked_exclusive() {
        return Err(TxError::Conflict { table, key });
    }
    Ok(Lock::None)
}

impl Txn<'_> {
    /// Lock the write set in a global order (NO_WAIT).
    pub(super) fn lock_write_set(&mut self) -> Result<(), TxError> {
        let mut order = std::mem::take(&mut self.st.order);
        order.clear();
        order.extend((0..self.st.entries.len()).filter(|&i| {
            !matches!(
                self.st.entries[i].write,
                Write::None | Write::Insert { .. } | Write::Gone
            )
        }));
        order.sort_by_key(|&i| (self.st.entries[i].table, self.st.entries[i].key));
        let mut result = Ok(());
        for &i in &order {
            let e = &mut self.st.entries[i];
            if !e.row.try_lock_exclusive() {
                result = Err(TxError::Conflict {
                    table: e.table,
                    key: e.key,
                });
                break;
            }
            e.lock = Lock::Exclusive;
        }
        self.st.order = order;
        result
    }

    /// Validate every version read (the write set locked): still the row's newest, in the
    /// state it was read in, and not being replaced by another commit.
    pub(super) fn validate_reads(&self) -> Result<(), TxError> {
        for e in &self.st.entries {
            let want = match e.write {
                Write::Insert { .. } | Write::Gone => continue,
                // MVCC: a read may have found no live row; its version says all.
                Write::None if self.mvcc => None,
                Write::Revive { .. } => Some(RowState::Deleted),
                _ => Some(RowState::Live),
            };
            // A tombstone taken out of the index (`sweep`) before we locked it is no row
            // to revive: its version may have been read after it was retired, so only
            // the index can tell. Once we hold its lock it stays.
            let gone = matches!(e.write, Write::Revive { .. })
                && !self.db.tables[e.table as usize]
                    .get(e.key)
                    .is_some_and(|r| Arc::ptr_eq(&r, &e.row));
            if gone || e.row.version() != e.version || want.is_some_and(|w| e.row.state() != w) {
                return Err(TxError::Conflict {
                    table: e.table,
                    key: e.key,
                });
            }
            if e.lock == Lock::None && e.row.is_locked_exclusive() {
                return Err(TxError::Conflict {
                    table: e.table,
                    key: e.key,
                });
            }
        }
        Ok(())
    }
}
