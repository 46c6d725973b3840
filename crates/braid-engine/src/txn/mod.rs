//! Transactions: reads, updates, inserts, deletes and range scans under two-phase locking
//! (NO_WAIT) or optimistic concurrency control (Silo-style), with early lock release.
//!
//! Writes are buffered as full row images in the transaction and installed at commit, after the
//! scheme has put the commit record in the log buffer and before the locks are released (early lock
//! release, as in all four papers); the commit is acknowledged only once durable: when
//! [`Txn::commit`] returns, or when the [`Ticket`](braid_wal::scheme::Ticket) of
//! [`Txn::commit_async`] resolves. Under 2PL every access takes the row's logical lock at
//! once and a conflict aborts (NO_WAIT). Under OCC reads take no lock and remember the row version;
//! commit locks the write set (NO_WAIT), validates every version, then logs and installs. Range
//! scans (ordered tables) are protected against phantoms by scanning twice (Silo; Taurus Sec. 3.4):
//! commit counts the index entries in the scanned range again and aborts if the count changed. The
//! scheme hears of index changes and scans too (`on_insert` after a key enters the index,
//! `on_delete` when a delete is buffered, `on_scan` right before each recount), so it can order a
//! scan against inserts and deletes inside its range that no row access connects.
//!
//! Under MVCC (`crate::mvcc`) reads see the transaction's snapshot and take nothing; writes
//! abort at once if the row's newest version is not in the snapshot; commit is OCC's (lock the
//! write set, validate every read version is still the newest) with a commit timestamp drawn
//! after the locks, logged with the record and stamped on the new versions. Read-only MVCC
//! transactions validate nothing.
//!
//! A transaction in replay mode (recovery re-executing a command) takes no locks, calls no
//! scheme hooks and logs nothing: the recovery planner guarantees no conflicting replay runs
//! concurrently. Under MVCC it reads and writes at its logged commit timestamp.
//!
//! One file per mechanism: `twopl` (locking), `occ` (write-set locking and validation),
//! `multiversion` (snapshot reads, first updater wins, versions and their garbage collection),
//! `phantom` (range scans and their recount), `replay` (recovery re-execution), `cow`
//! (checkpoint epochs and copy-on-write), `commit` (validation, the log record, install, early
//! lock release), `access` (the access set) and `writer` ([`RowWriter`]).

mod access;
mod commit;
mod cow;
mod multiversion;
mod occ;
mod phantom;
mod replay;
mod twopl;
mod update_log;
pub(crate) mod writer;

use std::ops::Bound;
use std::sync::Arc;

use braid_wal::scheme::{RowRef, SchemeWorker};

use access::{Entry, Lock, Write};
pub(crate) use access::{InsertTiming, TxnState};
pub(crate) use multiversion::sweep;
pub(crate) use writer::RowWriter;

use crate::db::{Cc, DbInner};
use crate::error::{BadRequest, TxError};
use crate::row::{Row, RowState};
use crate::schema::{Schema, TableId};
use crate::value::Value;

/// How the scheme sees row `key` of table `t`: by identity, with the row's slot.
#[inline]
fn row_ref(t: u32, key: u64, row: &Row) -> RowRef<'_> {
    RowRef {
        table: t,
        key,
        meta: Some(row.meta()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Normal,
    Replay,
}

/// A running transaction. Dropping it without `commit` aborts it.
pub struct Txn<'w> {
    db: &'w DbInner,
    scheme: &'w mut dyn SchemeWorker,
    st: &'w mut TxnState,
    id: u64,
    mode: Mode,
    finished: bool,
    /// The worker's checkpoint-epoch slot.
    slot: usize,
    /// The checkpoint epoch this transaction's commit entered (see `crate::checkpoint`).
    epoch: Option<u64>,
    /// MVCC: whether the database is multi-versioned.
    mvcc: bool,
    /// MVCC: the snapshot this transaction reads (replay: its logged commit timestamp).
    snap: u64,
    /// MVCC: the commit timestamp once drawn (replay: the logged one).
    ts: Option<u64>,
}

impl<'w> Txn<'w> {
    pub(crate) fn new(
        db: &'w DbInner,
        scheme: &'w mut dyn SchemeWorker,
        st: &'w mut TxnState,
        id: u64,
        mode: Mode,
        slot: usize,
    ) -> Txn<'w> {
        st.reset();
        let mvcc = db.cc == Cc::Mvcc;
        let snap = if mvcc && mode == Mode::Normal {
            db.mv.snapshot(slot)
        } else {
            0
        };
        Txn {
            db,
            scheme,
            st,
            id,
            mode,
            finished: false,
            slot,
            epoch: None,
            mvcc,
            snap,
            ts: None,
        }
    }

    fn is_read_only(&self) -> bool {
        self.st
            .entries
            .iter()
            .all(|e| matches!(e.write, Write::None | Write::Gone))
    }

    /// This transaction's id (unique within the database's log).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether this is a recovery re-execution (no locks, no logging).
    pub fn is_replay(&self) -> bool {
        self.mode == Mode::Replay
    }

    /// The layout of `table`'s rows. Panics if there is no such table.
    pub fn schema(&self, table: TableId) -> &'w Schema {
        &self.db.tables[table.0 as usize].schema
    }

    fn cc(&self) -> Option<Cc> {
        match self.mode {
            Mode::Replay => None,
            Mode::Normal => Some(self.db.cc),
        }
    }

    fn table_check(&self, table: TableId) -> Result<(), TxError> {
        if (table.0 as usize) < self.db.tables.len() {
            Ok(())
        } else {
            Err(TxError::BadRequest {
                table: table.0,
                request: BadRequest::NoTable,
            })
        }
    }

    /// Read a row: `f` sees the image this transaction would see. `None` if absent.
    pub fn read<R>(
        &mut self,
        table: TableId,
        key: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, TxError> {
        self.table_check(table)?;
        if self.mvcc {
            return self.read_mv(table, key, f);
        }
        let t = table.0;
        if let Some(i) = self.st.find(t, key) {
            let e = &mut self.st.entries[i];
            match e.write {
                Write::Update { img, .. } | Write::Insert { img } | Write::Revive { img } => {
                    return Ok(Some(f(&self.st.images[img])));
                }
                Write::Delete | Write::Gone => return Ok(None),
                Write::None => {}
            }
            let (r, v) = e.row.read(f);
            if self.db.cc == Cc::Occ && self.mode == Mode::Normal && e.read && v != e.version {
                return Err(TxError::Conflict { table: t, key });
            }
            if !e.read {
                e.read = true;
                e.version = v;
            }
            return Ok(Some(r));
        }
        let Some(cc) = self.cc() else {
            // Replay: borrowed from the index, as nothing is kept of the access.
            let tab = &self.db.tables[t as usize];
            return Ok(tab
                .peek(key, |row| replay::read_committed(row, f))
                .flatten());
        };
        let Some(row) = self.db.tables[t as usize].get(key) else {
            self.absent(t, key);
            return Ok(None);
        };
        let lock = match cc {
            Cc::TwoPl => {
                let timed = self.st.insert_timing.start_update();
                let lock = twopl::read_lock(&row, t, key);
                self.st.insert_timing.stop_lock(timed);
                lock?
            }
            _ => occ::access_check(&row, t, key)?,
        };
        if row.state() != RowState::Live {
            if lock == Lock::Shared {
                row.unlock_shared();
            }
            self.absent(t, key);
            return Ok(None);
        }
        let timed = self.st.insert_timing.start_update();
        self.scheme.on_read(row_ref(t, key, &row));
        self.st.insert_timing.stop_hook(timed);
        let (r, v) = row.read(f);
        self.st.push(Entry {
            table: t,
            key,
            row,
            lock,
            read: true,
            version: v,
            write: Write::None,
        });
        Ok(Some(r))
    }

    /// Read one fixed-width column of a row (`tx.get::<u64>(ACCT, key, BALANCE)`), as
    /// [`Schema::get`](crate::Schema::get) reads it from an image. `None` if the row is absent.
    pub fn get<T: Value>(
        &mut self,
        table: TableId,
        key: u64,
        col: usize,
    ) -> Result<Option<T>, TxError> {
        let schema = self.schema(table);
        self.read(table, key, |img| schema.get::<T>(img, col))
    }

    /// Take the write lock (2PL) and make a private image of an existing row. Returns the entry
    /// index, or None if the row does not exist.
    fn write_entry(&mut self, table: TableId, key: u64) -> Result<Option<usize>, TxError> {
        let t = table.0;
        if let Some(i) = self.st.find(t, key) {
            let cc = self.cc();
            match self.st.entries[i].write {
                Write::Update { .. } | Write::Insert { .. } | Write::Revive { .. } => {
                    return Ok(Some(i));
                }
                Write::Delete | Write::Gone => return Ok(None),
                Write::None => {}
            }
            if self.mvcc && !self.mv_rewrite_check(&self.st.entries[i])? {
                self.absent(t, key);
                return Ok(None);
            }
            if cc == Some(Cc::TwoPl) {
                let timed = self.st.insert_timing.start_update();
                let upgraded = twopl::upgrade(&mut self.st.entries[i]);
                self.st.insert_timing.stop_lock(timed);
                upgraded?;
            }
            let e = &self.st.entries[i];
            let row = e.row.clone();
            let read_version = e.version;
            if cc.is_some() {
                let timed = self.st.insert_timing.start_update();
                self.scheme.on_write(row_ref(t, key, &row));
                self.st.insert_timing.stop_hook(timed);
            }
            let img = self.st.new_image();
            let v = row.copy_into(&mut self.st.images[img]);
            let e = &mut self.st.entries[i];
            if e.read && v != read_version && cc.is_some() {
                return Err(TxError::Conflict { table: t, key });
            }
            e.version = v;
            e.write = Write::Update { mask: 0, img };
            return Ok(Some(i));
        }
        let Some(row) = self.db.tables[t as usize].get(key) else {
            self.absent(t, key);
            return Ok(None);
        };
        let lock = match self.cc() {
            Some(Cc::TwoPl) => {
                let timed = self.st.insert_timing.start_update();
                let lock = twopl::write_lock(&row, t, key);
                self.st.insert_timing.stop_lock(timed);
                lock?
            }
            Some(Cc::Occ) => occ::access_check(&row, t, key)?,
            // First updater wins (see `crate::mvcc`).
            Some(Cc::Mvcc) => self.mv_write_check(&row, t, key)?,
            None => Lock::None,
        };
        if row.state() != RowState::Live {
            if lock == Lock::Exclusive {
                row.unlock_exclusive();
            }
            self.absent(t, key);
            return Ok(None);
        }
        if self.mode == Mode::Normal {
            let timed = self.st.insert_timing.start_update();
            self.scheme.on_write(row_ref(t, key, &row));
            self.st.insert_timing.stop_hook(timed);
        }
        let img = self.st.new_image();
        let v = row.copy_into(&mut self.st.images[img]);
        let i = self.st.push(Entry {
            table: t,
            key,
            row,
            lock,
            read: false,
            version: v,
            write: Write::Update { mask: 0, img },
        });
        Ok(Some(i))
    }

    /// Update a row through `f`; returns false if the row does not exist.
    pub fn update(
        &mut self,
        table: TableId,
        key: u64,
        f: impl FnOnce(&mut RowWriter<'_>),
    ) -> Result<bool, TxError> {
        self.table_check(table)?;
        let Some(i) = self.write_entry(table, key)? else {
            return Ok(false);
        };
        let schema = &self.db.tables[table.0 as usize].schema;
        let e = &mut self.st.entries[i];
        let (img, mut dummy, mask) = match &mut e.write {
            Write::Update { mask, img } => (*img, 0u64, Some(mask)),
            Write::Insert { img } | Write::Revive { img } => (*img, 0u64, None),
            _ => return Ok(false),
        };
        let image = &mut self.st.images[img];
        let mask_ref = match mask {
            Some(m) => m,
            None => &mut dummy,
        };
        // The columns this call changes, for its own record under per-update records.
        let mut changed = 0u64;
        let mut w = RowWriter {
            schema,
            image,
            mask: &mut changed,
        };
        f(&mut w);
        *mask_ref |= changed;
        self.log_update_now(i, img, changed)?;
        Ok(true)
    }

    /// Insert a new row (its full image).
    pub fn insert(&mut self, table: TableId, key: u64, image: &[u8]) -> Result<(), TxError> {
        self.table_check(table)?;
        let t = table.0;
        let tab = &self.db.tables[t as usize];
        if image.len() != tab.schema.row_len() {
            return Err(TxError::BadRequest {
                table: t,
                request: BadRequest::RowLength {
                    len: image.len(),
                    expected: tab.schema.row_len(),
                },
            });
        }
        if let Some(i) = self.st.find(t, key) {
            let e = &self.st.entries[i];
            if e.write == Write::Delete {
                // Delete then insert in one transaction: an update of every column.
                let img = self.st.new_image();
                self.st.images[img].clear();
                self.st.images[img].extend_from_slice(image);
                let full = tab.schema.full_mask();
                self.st.entries[i].write = Write::Update { mask: full, img };
                return self.log_insert_now(i, img);
            }
            if self.mvcc && self.mode == Mode::Normal && e.write == Write::None {
                return self.mv_insert_over_read(i, image);
            }
            if e.write != Write::Gone {
                return Err(TxError::DuplicateKey { table: t, key });
            }
        }
        if self.mode == Mode::Replay {
            self.replay_insert(tab, key, image);
            return Ok(());
        }
        let row = Arc::new(if self.mvcc {
            Row::new_pending(image.into())
        } else {
            Row::new_locked(image.to_vec().into_boxed_slice())
        });
        if let Err(_row) = tab.insert(key, row.clone()) {
            let existing = tab.get(key);
            return match existing {
                Some(r) if self.mvcc && r.state() == RowState::Deleted => {
                    if r.is_locked_exclusive() || r.newest_ts() > self.snap {
                        return Err(TxError::Conflict { table: t, key });
                    }
                    self.revive(t, key, r, image);
                    Ok(())
                }
                Some(r) if r.is_locked_exclusive() => Err(TxError::Conflict { table: t, key }),
                Some(r) if self.mvcc && r.newest_ts() > self.snap => {
                    Err(TxError::Conflict { table: t, key })
                }
                _ => Err(TxError::DuplicateKey { table: t, key }),
            };
        }
        let img = self.stage_insert(t, key, &row, image);
        let i = self.st.push(Entry {
            table: t,
            key,
            row,
            lock: Lock::Exclusive,
            read: false,
            version: 0,
            write: Write::Insert { img },
        });
        self.log_insert_now(i, img)
    }

    /// Tell the scheme that the row `key` of table `t` was not found (its delete may not be
    /// durable yet: [`braid_wal::scheme::SchemeWorker::on_absent`]).
    pub(super) fn absent(&mut self, t: u32, key: u64) {
        if self.mode == Mode::Normal {
            self.scheme
                .on_absent(t, Bound::Included(key), Bound::Included(key));
        }
    }

    /// Tell the scheme about an insert of `key` into table `t` and keep `image` for
    /// it; returns the image's index.
    fn stage_insert(&mut self, t: u32, key: u64, row: &Row, image: &[u8]) -> usize {
        let timed = self.st.insert_timing.start_update();
        self.scheme.on_write(row_ref(t, key, row));
        self.scheme.on_insert(t, key);
        self.st.insert_timing.stop_hook(timed);
        let img = self.st.new_image();
        self.st.images[img].clear();
        self.st.images[img].extend_from_slice(image);
        img
    }

    /// Delete a row; returns false if it does not exist.
    pub fn delete(&mut self, table: TableId, key: u64) -> Result<bool, TxError> {
        self.table_check(table)?;
        let t = table.0;
        if self.mode == Mode::Replay {
            return Ok(self.replay_delete(&self.db.tables[t as usize], key));
        }
        if let Some(i) = self.st.find(t, key)
            && let Write::Insert { .. } = self.st.entries[i].write
        {
            let e = &mut self.st.entries[i];
            e.row.set_state(RowState::Deleted);
            self.db.tables[t as usize].remove_row(key, &e.row);
            e.write = Write::Gone;
            self.log_delete_now(i)?;
            return Ok(true);
        }
        let Some(i) = self.write_entry(table, key)? else {
            return Ok(false);
        };
        self.scheme.on_delete(t, key);
        self.st.entries[i].write = Write::Delete;
        self.log_delete_now(i)?;
        Ok(true)
    }
}
