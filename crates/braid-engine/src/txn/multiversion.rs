//! The transaction's side of multi-version concurrency control (`crate::mvcc`, Hekaton's
//! optimistic scheme, Taurus Sec. 4.4): reads see the transaction's snapshot and take nothing;
//! a write aborts at once if the row's newest version is not in the snapshot or is being
//! replaced (first updater wins); an insert over a deleted row's tombstone revives it as a new
//! version; commit is OCC's (`super::occ`) with a commit timestamp drawn after the write set is
//! locked, which stamps the new versions; and the worker garbage-collects the versions and
//! tombstones no snapshot can see any more ([`sweep`]).

use std::sync::Arc;

use super::access::{Entry, Lock, TxnState, Write};
use super::cow::save_for_checkpoint;
use super::{Mode, Txn, row_ref};
use crate::db::DbInner;
use crate::error::TxError;
use crate::row::{Row, RowState, Seen};
use crate::schema::TableId;

/// The version an MVCC read records when its snapshot saw an older version than the newest:
/// it can never validate.
pub(super) const STALE: u64 = u64::MAX;

impl Txn<'_> {
    /// The end of a normal MVCC transaction: its commit is no longer in flight (if it drew a
    /// timestamp) and its snapshot is released.
    pub(super) fn end_mvcc(&mut self) {
        if self.mvcc && self.mode == Mode::Normal {
            if self.ts.take().is_some() {
                self.db.mv.installed(self.slot);
            }
            self.db.mv.end(self.slot);
        }
    }

    /// MVCC read: the version visible at the snapshot; no lock, never a conflict.
    pub(super) fn read_mv<R>(
        &mut self,
        table: TableId,
        key: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, TxError> {
        let t = table.0;
        if let Some(i) = self.st.find(t, key) {
            let e = &self.st.entries[i];
            match e.write {
                Write::Update { img, .. } | Write::Insert { img } | Write::Revive { img } => {
                    return Ok(Some(f(&self.st.images[img])));
                }
                Write::Delete | Write::Gone => return Ok(None),
                Write::None => return Ok(e.row.read_at(self.snap, |img| img.map(f)).0),
            }
        }
        let Some(row) = self.db.tables[t as usize].get(key) else {
            self.absent(t, key);
            return Ok(None);
        };
        if self.mode == Mode::Replay {
            return Ok(row.read_at(self.snap, |img| img.map(f)).0);
        }
        // RAW: the row's writeLV stands for the LV of the version read (see `crate::mvcc`).
        self.scheme.on_read(row_ref(t, key, &row));
        let (r, seen) = row.read_at(self.snap, |img| img.map(f));
        self.st.push(Entry {
            table: t,
            key,
            row,
            lock: Lock::None,
            read: true,
            version: match seen {
                Seen::Newest(v) => v,
                Seen::Older => STALE,
            },
            write: Write::None,
        });
        Ok(r)
    }

    /// First updater wins, for a row read before: the version read must be the newest, and
    /// not being replaced by a committing transaction. Returns whether the row is live.
    pub(super) fn mv_rewrite_check(&self, e: &Entry) -> Result<bool, TxError> {
        if self.mode == Mode::Normal && (e.version == STALE || e.row.is_locked_exclusive()) {
            return Err(TxError::Conflict {
                table: e.table,
                key: e.key,
            });
        }
        Ok(e.row.state() == RowState::Live)
    }

    /// First updater wins, for a row not accessed before: its newest version must be in the
    /// snapshot and not being replaced.
    pub(super) fn mv_write_check(&self, row: &Row, table: u32, key: u64) -> Result<Lock, TxError> {
        if row.is_locked_exclusive() || row.newest_ts() > self.snap {
            return Err(TxError::Conflict { table, key });
        }
        Ok(Lock::None)
    }

    /// An insert of a key this transaction read (as absent, or as the deleted row's last
    /// version) before, entry `i`: revive the tombstone if it is the newest version, else
    /// somebody got there first.
    pub(super) fn mv_insert_over_read(&mut self, i: usize, image: &[u8]) -> Result<(), TxError> {
        let e = &self.st.entries[i];
        let (t, key) = (e.table, e.key);
        if e.row.state() == RowState::Deleted && !e.row.is_locked_exclusive() {
            let img = self.st.new_image();
            self.st.images[img].clear();
            self.st.images[img].extend_from_slice(image);
            let row = Arc::clone(&self.st.entries[i].row);
            self.st.entries[i].write = Write::Revive { img };
            self.scheme.on_write(row_ref(t, key, &row));
            self.scheme.on_insert(t, key);
            return Ok(());
        }
        if e.row.state() == RowState::Live && e.version != STALE {
            return Err(TxError::DuplicateKey { table: t, key });
        }
        Err(TxError::Conflict { table: t, key })
    }

    /// MVCC: insert `image` as the next version of the tombstone `row`.
    pub(super) fn revive(&mut self, t: u32, key: u64, row: Arc<Row>, image: &[u8]) {
        let img = self.stage_insert(t, key, &row, image);
        let version = row.version();
        self.st.push(Entry {
            table: t,
            key,
            row,
            lock: Lock::None,
            read: false,
            version,
            write: Write::Revive { img },
        });
    }

    /// MVCC install: every write becomes a version stamped `ts` (a delete, a tombstone that
    /// stays in the index until no snapshot can see the row before it).
    pub(super) fn install_versions(&mut self, ts: u64) {
        let normal = self.mode == Mode::Normal;
        let horizon = if normal { self.db.mv.horizon() } else { 0 };
        let capture = self.capture();
        let st = &mut *self.st;
        for e in &st.entries {
            save_for_checkpoint(self.db, capture, e);
            match e.write {
                Write::None | Write::Gone | Write::Update { mask: 0, .. } => {}
                Write::Update { img, .. } | Write::Revive { img } => {
                    let image = &st.images[img];
                    // Only a row that kept older versions has any for `sweep` to drop.
                    if e.row.install_at(ts, horizon, |_| Some(image[..].into())) && normal {
                        st.superseded.push_back((e.row.clone(), ts));
                    }
                }
                Write::Insert { img } => {
                    let image = &st.images[img];
                    e.row.install_at(ts, horizon, |_| Some(image[..].into()));
                }
                Write::Delete => {
                    e.row.install_at(ts, horizon, |_| None);
                    if normal {
                        st.tombstones.push_back((e.table, e.key, e.row.clone(), ts));
                    }
                }
            }
        }
    }
}

/// MVCC garbage collection: drop the old versions and take out of the index the tombstones no
/// snapshot can see any more.
pub(crate) fn sweep(db: &DbInner, st: &mut TxnState) {
    if st.tombstones.is_empty() && st.superseded.is_empty() {
        return;
    }
    let horizon = db.mv.horizon();
    while let Some((row, ts)) = st.superseded.front() {
        if *ts > horizon {
            break;
        }
        row.prune(horizon);
        st.superseded.pop_front();
    }
    while let Some((t, key, row, ts)) = st.tombstones.front() {
        if *ts > horizon || !row.try_lock_exclusive() {
            break;
        }
        if row.state() == RowState::Deleted && row.newest_ts() == *ts {
            db.tables[*t as usize].remove_row(*key, row);
            row.retire();
        }
        row.unlock_exclusive();
        st.tombstones.pop_front();
    }
}
