//! Two-phase locking, NO_WAIT: every access takes the row's logical lock at once (shared to
//! read, exclusive to write, a shared lock upgraded when a read row is written) and a lock held
//! by another transaction aborts the access instead of waiting. Locks are held until the commit
//! has installed its writes (early lock release: before the commit is durable).

use super::access::{Entry, Lock};
use crate::error::TxError;
use crate::row::Row;

/// A 2PL read of a row not yet accessed: its shared lock.
pub(super) fn read_lock(row: &Row, table: u32, key: u64) -> Result<Lock, TxError> {
    if !row.try_lock_shared() {
        return Err(TxError::Conflict { table, key });
    }
    Ok(Lock::Shared)
}

/// A 2PL write of a row not yet accessed: its exclusive lock.
pub(super) fn write_lock(row: &Row, table: u32, key: u64) -> Result<Lock, TxError> {
    if !row.try_lock_exclusive() {
        return Err(TxError::Conflict { table, key });
    }
    Ok(Lock::Exclusive)
}

/// A 2PL write of a row this transaction read: upgrade its shared lock.
pub(super) fn upgrade(e: &mut Entry) -> Result<(), TxError> {
    if e.lock == Lock::Shared {
        if !e.row.try_upgrade() {
            return Err(TxError::Conflict {
                table: e.table,
                key: e.key,
            });
        }
        e.lock = Lock::Exclusive;
    }
    Ok(())
}

/// Release every lock the access set holds (2PL's, and the write-set locks of an optimistic
/// commit).
pub(super) fn release(entries: &[Entry]) {
    for e in entries {
        match e.lock {
            Lock::Shared => e.row.unlock_shared(),
            Lock::Exclusive => e.row.unlock_exclusive(),
            Lock::None => {}
        }
    }
}
