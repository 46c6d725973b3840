//! Transactions: reads, updates, inserts, deletes and range scans under two-phase locking
//! (NO_WAIT) or optimistic concurrency control (Silo-style), with early lock release.
//!
//! Writes are buffered as full row images in the transaction and installed at commit, after the
//! scheme has put the commit record in the log buffer and before the locks are released (early
//! lock release, as in all four papers); the commit is acknowledged only through the returned
//! [`Ticket`]. Under 2PL every access takes the row's logical lock at once and a conflict aborts
//! (NO_WAIT). Under OCC reads take no lock and remember the row version; commit locks the write
//! set (NO_WAIT), validates every version, then logs and installs. Range scans (ordered tables)
//! are protected against phantoms by scanning twice (Silo; Taurus Sec. 3.4): commit counts the
//! index entries in the scanned range again and aborts if the count changed. The scheme hears of
//! index changes and scans too (`on_insert` after a key enters the index, `on_delete` when a
//! delete is buffered, `on_scan` right before each recount), so it can order a scan against
//! inserts and deletes inside its range that no row access connects.
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

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use braid_wal::payload::{RedoBuf, RedoOp, encode_command};
use braid_wal::scheme::{CommitRequest, LogKind, RowRef, SchemeWorker, Ticket, Written};

use crate::db::{Cc, DbInner, Durability};
use crate::error::TxError;
use crate::row::{Row, RowState, Seen};
use crate::schema::{Schema, TableId};

/// Above this many accesses, lookups of the access set go through a hash map.
const LINEAR_LIMIT: usize = 16;

/// The version an MVCC read records when its snapshot saw an older version than the newest:
/// it can never validate.
const STALE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    None,
    Shared,
    Exclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    None,
    Update {
        mask: u64,
        img: usize,
    },
    Insert {
        img: usize,
    },
    Delete,
    /// Inserted and deleted again by this transaction: nothing to install.
    Gone,
    /// MVCC: an insert over the tombstone of a deleted row (a new version of that row).
    Revive {
        img: usize,
    },
}

struct Entry {
    table: u32,
    key: u64,
    row: Arc<Row>,
    lock: Lock,
    read: bool,
    version: u64,
    write: Write,
}

struct ScanCheck {
    table: u32,
    lo: Bound<u64>,
    hi: Bound<u64>,
    count: usize,
}

/// Per-worker buffers reused by every transaction, so running one allocates little.
#[derive(Default)]
pub(crate) struct TxnState {
    entries: Vec<Entry>,
    lookup: HashMap<(u32, u64), usize>,
    images: Vec<Vec<u8>>,
    images_used: usize,
    scans: Vec<ScanCheck>,
    redo: RedoBuf,
    /// The rows the redo payload writes, with each one's operation's bytes in it.
    written: Vec<Written>,
    command: Vec<u8>,
    has_command: bool,
    order: Vec<usize>,
    /// MVCC: the payload with its commit timestamp.
    envelope: Vec<u8>,
    /// MVCC: rows this worker deleted, with the tombstone's timestamp, waiting until no
    /// snapshot can see them any more to leave the index.
    pub(crate) tombstones: VecDeque<(u32, u64, Arc<Row>, u64)>,
    /// MVCC: rows this worker gave a new version at a timestamp, whose older versions go once
    /// every snapshot is at or above it.
    superseded: VecDeque<(Arc<Row>, u64)>,
}

impl TxnState {
    fn reset(&mut self) {
        self.entries.clear();
        self.lookup.clear();
        self.images_used = 0;
        self.scans.clear();
        self.redo.clear();
        self.written.clear();
        self.command.clear();
        self.has_command = false;
    }

    fn find(&mut self, table: u32, key: u64) -> Option<usize> {
        if self.entries.len() <= LINEAR_LIMIT {
            self.entries
                .iter()
                .position(|e| e.table == table && e.key == key)
        } else {
            if self.lookup.len() != self.entries.len() {
                self.lookup.clear();
                for (i, e) in self.entries.iter().enumerate() {
                    self.lookup.insert((e.table, e.key), i);
                }
            }
            self.lookup.get(&(table, key)).copied()
        }
    }

    fn push(&mut self, e: Entry) -> usize {
        let i = self.entries.len();
        if i >= LINEAR_LIMIT {
            if self.lookup.len() != i {
                self.lookup.clear();
                for (j, e) in self.entries.iter().enumerate() {
                    self.lookup.insert((e.table, e.key), j);
                }
            }
            self.lookup.insert((e.table, e.key), i);
        }
        self.entries.push(e);
        i
    }

    fn new_image(&mut self) -> usize {
        if self.images_used == self.images.len() {
            self.images.push(Vec::new());
        }
        self.images_used += 1;
        self.images_used - 1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Normal,
    Replay,
}

/// Column-level access to a row image being written; remembers which columns changed.
pub struct RowWriter<'a> {
    schema: &'a Schema,
    image: &'a mut [u8],
    mask: &'a mut u64,
}

impl RowWriter<'_> {
    /// The row's table layout.
    pub fn schema(&self) -> &Schema {
        self.schema
    }
    /// Read a u64 column. The numeric accessors expect an 8-byte column and panic if `col`
    /// does not exist (see [`crate::schema::get_u64`]).
    pub fn get_u64(&self, col: usize) -> u64 {
        crate::schema::get_u64(self.schema, self.image, col)
    }
    /// Write a u64 column.
    pub fn set_u64(&mut self, col: usize, v: u64) {
        crate::schema::set_u64(self.schema, self.image, col, v);
        *self.mask |= 1 << col;
    }
    /// Read an i64 column.
    pub fn get_i64(&self, col: usize) -> i64 {
        self.get_u64(col) as i64
    }
    /// Write an i64 column.
    pub fn set_i64(&mut self, col: usize, v: i64) {
        self.set_u64(col, v as u64)
    }
    /// Read an f64 column.
    pub fn get_f64(&self, col: usize) -> f64 {
        f64::from_bits(self.get_u64(col))
    }
    /// Write an f64 column.
    pub fn set_f64(&mut self, col: usize, v: f64) {
        self.set_u64(col, v.to_bits())
    }
    /// The bytes of a column, whatever its type.
    pub fn bytes(&self, col: usize) -> &[u8] {
        &self.image[self.schema.range(col)]
    }
    /// Set a fixed-width column; shorter values are zero-padded, longer ones truncated.
    pub fn set_bytes(&mut self, col: usize, v: &[u8]) {
        let r = self.schema.range(col);
        let dst = &mut self.image[r];
        let n = v.len().min(dst.len());
        dst[..n].copy_from_slice(&v[..n]);
        dst[n..].fill(0);
        *self.mask |= 1 << col;
    }
    /// The whole image, read-only.
    pub fn image(&self) -> &[u8] {
        self.image
    }
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

    /// MVCC replay: read and write at the logged commit timestamp `ts`.
    pub(crate) fn set_replay_ts(&mut self, ts: u64) {
        debug_assert!(self.mode == Mode::Replay);
        self.snap = ts;
        self.ts = Some(ts);
    }

    /// The end of a normal MVCC transaction: its commit is no longer in flight (if it drew a
    /// timestamp) and its snapshot is released.
    fn end_mvcc(&mut self) {
        if self.mvcc && self.mode == Mode::Normal {
            if self.ts.take().is_some() {
                self.db.mv.installed(self.slot);
            }
            self.db.mv.end(self.slot);
        }
    }

    /// Enter the current checkpoint epoch: called once the transaction holds every lock that
    /// orders it (2PL: all of them; OCC: the write set, before validation).
    fn enter_epoch(&mut self) {
        if self.epoch.is_none() && self.mode == Mode::Normal && !self.is_read_only() {
            self.epoch = Some(self.db.epochs.enter(self.slot));
        }
    }

    fn exit_epoch(&mut self) {
        if self.epoch.take().is_some() {
            self.db.epochs.exit(self.slot);
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
                what: "no such table".into(),
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
        let Some(row) = self.db.tables[t as usize].get(key) else {
            return Ok(None);
        };
        match self.cc() {
            None => {
                if row.state() != RowState::Live {
                    return Ok(None);
                }
                Ok(Some(row.read(f).0))
            }
            Some(cc) => {
                let lock = if cc == Cc::TwoPl {
                    if !row.try_lock_shared() {
                        return Err(TxError::Conflict { table: t, key });
                    }
                    Lock::Shared
                } else {
                    if row.is_locked_exclusive() {
                        return Err(TxError::Conflict { table: t, key });
                    }
                    Lock::None
                };
                if row.state() != RowState::Live {
                    if lock == Lock::Shared {
                        row.unlock_shared();
                    }
                    return Ok(None);
                }
                self.scheme.on_read(RowRef { table: t, key });
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
        }
    }

    /// MVCC read: the version visible at the snapshot; no lock, never a conflict.
    fn read_mv<R>(
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
            return Ok(None);
        };
        if self.mode == Mode::Replay {
            return Ok(row.read_at(self.snap, |img| img.map(f)).0);
        }
        // RAW: the row's writeLV stands for the LV of the version read (see `crate::mvcc`).
        self.scheme.on_read(RowRef { table: t, key });
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

    /// Read one u64 column.
    pub fn read_u64(
        &mut self,
        table: TableId,
        key: u64,
        col: usize,
    ) -> Result<Option<u64>, TxError> {
        let schema = self.schema(table);
        self.read(table, key, |img| crate::schema::get_u64(schema, img, col))
    }

    /// Take the write lock (2PL) and make a private image of an existing row. Returns the entry
    /// index, or None if the row does not exist.
    fn write_entry(&mut self, table: TableId, key: u64) -> Result<Option<usize>, TxError> {
        let t = table.0;
        if let Some(i) = self.st.find(t, key) {
            let cc = self.cc();
            let e = &mut self.st.entries[i];
            match e.write {
                Write::Update { .. } | Write::Insert { .. } | Write::Revive { .. } => {
                    return Ok(Some(i));
                }
                Write::Delete | Write::Gone => return Ok(None),
                Write::None => {}
            }
            if self.mvcc {
                // First updater wins: the version read must be the newest, and not being
                // replaced by a committing transaction.
                if cc.is_some() && (e.version == STALE || e.row.is_locked_exclusive()) {
                    return Err(TxError::Conflict { table: t, key });
                }
                if e.row.state() != RowState::Live {
                    return Ok(None);
                }
            }
            if cc == Some(Cc::TwoPl) && e.lock == Lock::Shared {
                if !e.row.try_upgrade() {
                    return Err(TxError::Conflict { table: t, key });
                }
                e.lock = Lock::Exclusive;
            }
            let row = e.row.clone();
            let read_version = e.version;
            if cc.is_some() {
                self.scheme.on_write(RowRef { table: t, key });
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
            return Ok(None);
        };
        let lock = match self.cc() {
            Some(Cc::TwoPl) => {
                if !row.try_lock_exclusive() {
                    return Err(TxError::Conflict { table: t, key });
                }
                Lock::Exclusive
            }
            Some(Cc::Occ) => {
                if row.is_locked_exclusive() {
                    return Err(TxError::Conflict { table: t, key });
                }
                Lock::None
            }
            Some(Cc::Mvcc) => {
                // First updater wins (see `crate::mvcc`).
                if row.is_locked_exclusive() || row.newest_ts() > self.snap {
                    return Err(TxError::Conflict { table: t, key });
                }
                Lock::None
            }
            None => Lock::None,
        };
        if row.state() != RowState::Live {
            if lock == Lock::Exclusive {
                row.unlock_exclusive();
            }
            return Ok(None);
        }
        if self.mode == Mode::Normal {
            self.scheme.on_write(RowRef { table: t, key });
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
        let mut w = RowWriter {
            schema,
            image,
            mask: mask_ref,
        };
        f(&mut w);
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
                what: format!(
                    "insert of {} bytes into rows of {} bytes",
                    image.len(),
                    tab.schema.row_len()
                ),
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
                return Ok(());
            }
            if self.mvcc && self.mode == Mode::Normal && e.write == Write::None {
                // Read (as absent, or as the deleted row's last version) before: revive the
                // tombstone if it is the newest version, else somebody got there first.
                if e.row.state() == RowState::Deleted && !e.row.is_locked_exclusive() {
                    let img = self.st.new_image();
                    self.st.images[img].clear();
                    self.st.images[img].extend_from_slice(image);
                    self.st.entries[i].write = Write::Revive { img };
                    self.scheme.on_write(RowRef { table: t, key });
                    self.scheme.on_insert(t, key);
                    return Ok(());
                }
                if e.row.state() == RowState::Live && e.version != STALE {
                    return Err(TxError::DuplicateKey { table: t, key });
                }
                return Err(TxError::Conflict { table: t, key });
            }
            if e.write != Write::Gone {
                return Err(TxError::DuplicateKey { table: t, key });
            }
        }
        if self.mode == Mode::Replay {
            match self.ts {
                Some(ts) => tab.upsert_at(key, image.into(), ts),
                None => {
                    let row = Arc::new(Row::new(image.to_vec().into_boxed_slice(), RowState::Live));
                    tab.upsert(key, row);
                }
            }
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
        let img = self.stage_insert(t, key, image);
        self.st.push(Entry {
            table: t,
            key,
            row,
            lock: Lock::Exclusive,
            read: false,
            version: 0,
            write: Write::Insert { img },
        });
        Ok(())
    }

    /// Tell the scheme about an insert of `key` into table `t` and keep `image` for
    /// it; returns the image's index.
    fn stage_insert(&mut self, t: u32, key: u64, image: &[u8]) -> usize {
        self.scheme.on_write(RowRef { table: t, key });
        self.scheme.on_insert(t, key);
        let img = self.st.new_image();
        self.st.images[img].clear();
        self.st.images[img].extend_from_slice(image);
        img
    }

    /// MVCC: insert `image` as the next version of the tombstone `row`.
    fn revive(&mut self, t: u32, key: u64, row: Arc<Row>, image: &[u8]) {
        let img = self.stage_insert(t, key, image);
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

    /// Delete a row; returns false if it does not exist.
    pub fn delete(&mut self, table: TableId, key: u64) -> Result<bool, TxError> {
        self.table_check(table)?;
        let t = table.0;
        if self.mode == Mode::Replay {
            let tab = &self.db.tables[t as usize];
            return Ok(match self.ts {
                // A tombstone version: earlier timestamps still see the row.
                Some(ts) => match tab.get(key) {
                    Some(r) if r.read_at(ts, |img| img.is_some()).0 => {
                        r.install_at(ts, 0, |_| None);
                        true
                    }
                    _ => false,
                },
                None => tab.remove(key),
            });
        }
        if let Some(i) = self.st.find(t, key)
            && let Write::Insert { .. } = self.st.entries[i].write
        {
            let e = &mut self.st.entries[i];
            e.row.set_state(RowState::Deleted);
            self.db.tables[t as usize].remove_row(key, &e.row);
            e.write = Write::Gone;
            return Ok(true);
        }
        let Some(i) = self.write_entry(table, key)? else {
            return Ok(false);
        };
        self.scheme.on_delete(t, key);
        self.st.entries[i].write = Write::Delete;
        Ok(true)
    }

    /// Scan an ordered table over `[lo, hi]` in key order, at most `limit` rows; `f` sees each
    /// key and image and may stop the scan by returning false. Returns the rows visited.
    pub fn scan(
        &mut self,
        table: TableId,
        lo: Bound<u64>,
        hi: Bound<u64>,
        limit: usize,
        mut f: impl FnMut(u64, &[u8]) -> bool,
    ) -> Result<usize, TxError> {
        self.table_check(table)?;
        let t = table.0;
        let tab = &self.db.tables[t as usize];
        if !tab.is_ordered() {
            return Err(TxError::BadRequest {
                table: t,
                what: "range scan on a hash-indexed table".into(),
            });
        }
        let mut hits: Vec<(u64, Arc<Row>)> = Vec::new();
        // Whether the scan stopped at the limit (then only up to its last key is protected).
        let mut full = false;
        if self.mvcc {
            // Only rows visible to this transaction count towards the limit: tombstones and
            // rows of other snapshots sit in the index, differently in every run and replay.
            let mut seen = 0;
            let (st, snap) = (&mut *self.st, self.snap);
            tab.range(lo, hi, |k, r| {
                let visible = match st.find(t, k).map(|i| st.entries[i].write) {
                    Some(Write::Update { .. } | Write::Insert { .. } | Write::Revive { .. }) => {
                        true
                    }
                    Some(Write::Delete | Write::Gone) => false,
                    _ => r.read_at(snap, |img| img.is_some()).0,
                };
                hits.push((k, r.clone()));
                seen += visible as usize;
                full = seen >= limit;
                !full
            });
        } else {
            tab.range(lo, hi, |k, r| {
                hits.push((k, r.clone()));
                full = hits.len() >= limit;
                !full
            });
        }
        let scanned_hi = if full {
            hits.last().map(|(k, _)| Bound::Included(*k)).unwrap_or(hi)
        } else {
            hi
        };
        let count = hits.len();
        let mut visited = 0;
        for (k, _) in hits {
            let mut go = true;
            let found = self.read(table, k, |img| go = f(k, img))?;
            if found.is_some() {
                visited += 1;
            }
            if !go {
                break;
            }
        }
        if self.mode == Mode::Normal {
            self.st.scans.push(ScanCheck {
                table: t,
                lo,
                hi: scanned_hi,
                count,
            });
        }
        Ok(visited)
    }

    fn release(&mut self) {
        for e in &self.st.entries {
            match e.lock {
                Lock::Shared => e.row.unlock_shared(),
                Lock::Exclusive => e.row.unlock_exclusive(),
                Lock::None => {}
            }
        }
    }

    /// Roll back: release every lock and undo inserts.
    pub fn abort(mut self) {
        self.abort_inner();
    }

    fn abort_inner(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        for e in &self.st.entries {
            if let Write::Insert { .. } = e.write {
                e.row.set_state(RowState::Deleted);
                self.db.tables[e.table as usize].remove_row(e.key, &e.row);
            }
        }
        self.release();
        self.exit_epoch();
        self.end_mvcc();
        if self.mode == Mode::Normal {
            self.scheme.abort();
        }
        self.st.reset();
    }

    /// Mark this transaction as the execution of a stored procedure, so command logging logs the
    /// call instead of its writes.
    pub(crate) fn set_command(&mut self, proc_id: u32, params: &[u8]) {
        self.st.command.clear();
        encode_command(proc_id, params, &mut self.st.command);
        self.st.has_command = true;
    }

    fn validate(&mut self) -> Result<(), TxError> {
        let optimistic = matches!(self.db.cc, Cc::Occ | Cc::Mvcc);
        if !optimistic {
            self.enter_epoch();
        }
        if optimistic {
            // Lock the write set in a global order (NO_WAIT), then validate every version.
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
            result?;
            self.enter_epoch();
            if self.mvcc {
                // After the write set is locked and the epoch entered (checkpoints rely on it).
                self.ts = Some(self.db.mv.commit_ts(self.slot));
            }
            // Taurus Alg. 6 lines 8-11: the scheme raises readLVs before validation.
            self.scheme.before_validate();
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
                if gone || e.row.version() != e.version || want.is_some_and(|w| e.row.state() != w)
                {
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
        }
        for s in &self.st.scans {
            self.scheme.on_scan(s.table, s.lo, s.hi);
            let mut n = 0usize;
            self.db.tables[s.table as usize].range(s.lo, s.hi, |_, _| {
                n += 1;
                true
            });
            if n != s.count {
                return Err(TxError::Conflict {
                    table: s.table,
                    key: 0,
                });
            }
        }
        Ok(())
    }

    fn build_redo(&mut self) {
        let st = &mut *self.st;
        st.redo.clear();
        st.written.clear();
        for e in &st.entries {
            let schema = &self.db.tables[e.table as usize].schema;
            let start = st.redo.bytes.len() as u32;
            match e.write {
                Write::None | Write::Gone => {}
                Write::Update { mask, img } => {
                    if mask == 0 {
                        continue;
                    }
                    let image = &st.images[img];
                    st.redo
                        .push_update_with(e.table, e.key, mask, schema.mask_len(mask), |buf| {
                            schema.gather(image, mask, buf)
                        });
                }
                Write::Insert { img } | Write::Revive { img } => st.redo.push(&RedoOp::Insert {
                    table: e.table,
                    key: e.key,
                    data: &st.images[img],
                }),
                Write::Delete => st.redo.push(&RedoOp::Delete {
                    table: e.table,
                    key: e.key,
                }),
            }
            let end = st.redo.bytes.len() as u32;
            if end > start {
                st.written.push(Written {
                    table: e.table,
                    key: e.key,
                    op: start..end,
                });
            }
        }
    }

    fn install(&mut self) {
        if let Some(ts) = self.ts {
            return self.install_versions(ts);
        }
        let capture = self.epoch.and_then(|ep| self.db.epochs.capturing(ep));
        for e in &self.st.entries {
            save_for_checkpoint(self.db, capture, e);
            match e.write {
                Write::None | Write::Gone => {}
                Write::Update { mask, img } => {
                    if mask != 0 {
                        e.row.install(&self.st.images[img]);
                    }
                }
                Write::Insert { img } => {
                    e.row.install(&self.st.images[img]);
                    e.row.set_state(RowState::Live);
                }
                Write::Delete => {
                    e.row.set_state(RowState::Deleted);
                    self.db.tables[e.table as usize].remove_row(e.key, &e.row);
                }
                Write::Revive { .. } => {
                    unreachable!("revives exist only under MVCC, which installs versions")
                }
            }
        }
    }

    /// MVCC install: every write becomes a version stamped `ts` (a delete, a tombstone that
    /// stays in the index until no snapshot can see the row before it).
    fn install_versions(&mut self, ts: u64) {
        let normal = self.mode == Mode::Normal;
        let horizon = if normal { self.db.mv.horizon() } else { 0 };
        let capture = self.epoch.and_then(|ep| self.db.epochs.capturing(ep));
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

    /// Commit: validate, log, install, release locks (early), and return the ticket that
    /// resolves when the commit is durable. On error the transaction is rolled back.
    pub fn commit(mut self) -> Result<Ticket, TxError> {
        if self.mode == Mode::Replay {
            self.install();
            self.finished = true;
            self.st.reset();
            return Ok(Ticket::Durable);
        }
        let read_only = self.is_read_only();
        // A read-only MVCC transaction read one consistent snapshot: nothing to validate.
        if !(self.mvcc && read_only)
            && let Err(e) = self.validate()
        {
            self.abort_inner();
            return Err(e);
        }
        let kind = if self.st.has_command && self.db.logging == LogKind::Command {
            LogKind::Command
        } else {
            LogKind::Data
        };
        if !read_only && kind == LogKind::Data {
            self.build_redo();
        }
        let mut payload: &[u8] = match (read_only, kind) {
            (true, _) => &[],
            (false, LogKind::Data) => &self.st.redo.bytes,
            (false, LogKind::Command) => &self.st.command,
        };
        if let (false, Some(ts)) = (read_only, self.ts) {
            crate::mvcc::encode_envelope(ts, payload, &mut self.st.envelope);
            payload = &self.st.envelope;
            // The operations moved behind the envelope's header.
            let head = (self.st.envelope.len() - self.st.redo.bytes.len()) as u32;
            if kind == LogKind::Data {
                for w in &mut self.st.written {
                    w.op = w.op.start + head..w.op.end + head;
                }
            }
        }
        let req = CommitRequest {
            txn: self.id,
            kind,
            payload,
            read_only,
            epoch: self.epoch.unwrap_or(0),
            writes: if kind == LogKind::Data && !read_only {
                &self.st.written
            } else {
                &[]
            },
        };
        let ticket = match self.scheme.commit(&req) {
            Ok(t) => t,
            Err(e) => {
                self.abort_inner();
                return Err(TxError::Log(e));
            }
        };
        self.install();
        self.exit_epoch();
        // MVCC: the new versions become visible to snapshots only now, with their LVs raised.
        self.end_mvcc();
        self.release();
        self.finished = true;
        if self.mvcc {
            sweep(self.db, self.st);
        }
        self.st.reset();
        if self.db.durability == Durability::Sync {
            ticket.wait()?;
            return Ok(Ticket::Durable);
        }
        Ok(ticket)
    }
}

/// Copy-on-write for the checkpoint being taken (`crate::checkpoint`): before `e`'s write is
/// installed, save the row's image for checkpoint `capture`, if one is being taken.
fn save_for_checkpoint(db: &DbInner, capture: Option<u64>, e: &Entry) {
    if let Some(c) = capture
        && !matches!(e.write, Write::None | Write::Gone)
    {
        e.row.capture(c, |img| {
            let _ = db
                .epochs
                .side
                .insert_sync((e.table, e.key), img.map(Box::from));
        });
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

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        self.abort_inner();
    }
}
