//! The engine's side of recovery: applying redo images and re-executing commands handed over by
//! a scheme's recovery planner.
//!
//! Redo application is idempotent per record (images, not deltas): an update writes the logged
//! columns, an insert installs the logged image (replacing any row with that key), a delete
//! removes the key. Command re-execution runs the registered procedure in a replay-mode
//! transaction: no locks, no logging.
//!
//! Every record is replayed under one epoch guard of the index (`scc`), so the row lookups
//! inside it do not each announce themselves to the reclaimer (a sequentially consistent
//! swap per lookup otherwise). A re-executed command takes its transaction state and its
//! no-logging scheme worker from a pool sharded by thread ([`Pool`]), so replay threads do
//! not share a lock or allocate a worker per command.
//!
//! A multi-versioned database (`crate::mvcc`, Taurus Section 4.4) logs each record's commit
//! timestamp in front of its payload. Replay then installs every write as a version stamped
//! with it (a delete as a tombstone), and a re-executed procedure reads at it, so the replay
//! order only has to respect RAW and WAW. [`Replayer::finish`] collapses the versions when the
//! log is done.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use braid_wal::payload::{RedoOp, decode_command, decode_redo};
use braid_wal::scheme::NoLogging;
use braid_wal::scheme::{LogKind, Prefetch, Replay, ReplayError, Scheme, SchemeWorker};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use crate::db::DbInner;
use crate::row::{Row, RowState};
use crate::txn::{Mode, Txn, TxnState};

/// What re-executing a command needs besides the database: a transaction's state and a
/// scheme worker that logs nothing.
struct Ctx {
    st: TxnState,
    worker: Box<dyn SchemeWorker>,
}

/// Shards of the command contexts: a thread takes from and returns to its own shard, so two
/// replay threads neither wait for each other nor move a lock's cache line back and forth.
const SHARDS: usize = 16;

/// The shard of the calling thread (threads are numbered in the order they first ask).
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

/// Command contexts, reused across commands (dropped with the replayer).
struct Pool {
    nolog: NoLogging,
    shards: Box<[CachePadded<Mutex<Vec<Ctx>>>]>,
}

impl Pool {
    fn new() -> Pool {
        Pool {
            nolog: NoLogging::default(),
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Vec::new())))
                .collect(),
        }
    }

    fn take(&self, shard: usize) -> Result<Ctx, ReplayError> {
        if let Some(c) = self.shards[shard].lock().pop() {
            return Ok(c);
        }
        Ok(Ctx {
            st: TxnState::default(),
            worker: self.nolog.worker(0)?,
        })
    }

    fn put(&self, shard: usize, c: Ctx) {
        self.shards[shard].lock().push(c);
    }
}

fn missing_row(t: &crate::table::Table, key: u64) -> ReplayError {
    format!("redo update of missing row: table {} key {key}", t.name()).into()
}

pub(crate) struct Replayer<'a> {
    db: &'a DbInner,
    pool: Pool,
    /// The largest commit timestamp replayed (MVCC).
    max_ts: AtomicU64,
}

impl<'a> Replayer<'a> {
    pub(crate) fn new(db: &'a DbInner) -> Replayer<'a> {
        Replayer {
            db,
            pool: Pool::new(),
            max_ts: AtomicU64::new(0),
        }
    }

    /// MVCC: the log is replayed. Every row keeps only its newest version, tombstones leave
    /// the index; returns the largest commit timestamp seen.
    pub(crate) fn finish(&self) -> u64 {
        if self.db.cc == crate::db::Cc::Mvcc {
            for t in &self.db.tables {
                let mut dead = Vec::new();
                t.for_each(|k, r| {
                    if r.state() == RowState::Live {
                        r.collapse();
                    } else {
                        dead.push((k, r.clone()));
                    }
                });
                for (k, r) in dead {
                    t.remove_row(k, &r);
                }
            }
        }
        self.max_ts.load(Ordering::Relaxed)
    }

    /// MVCC redo: each operation becomes a version stamped `ts`.
    fn apply_redo_at(&self, ts: u64, payload: &[u8]) -> Result<(), ReplayError> {
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Update {
                    table,
                    key,
                    columns,
                    data,
                } => {
                    let (t, row) = self.updated_row(table, key)?;
                    let mut ok = true;
                    row.install_at(ts, 0, |base| {
                        let mut img: Box<[u8]> = match base {
                            Some(b) => b.into(),
                            None => {
                                ok = false;
                                vec![0u8; t.schema.row_len()].into()
                            }
                        };
                        ok &= t.schema.scatter(&mut img, columns, data);
                        Some(img)
                    });
                    if !ok {
                        return Err(format!(
                            "redo update of table {} key {key} at timestamp {ts} finds no row \
                             or does not match the schema",
                            t.name()
                        )
                        .into());
                    }
                }
                RedoOp::Insert { table, key, data } => {
                    let t = self.insert_table(table, data)?;
                    t.upsert_at(key, data.into(), ts);
                }
                RedoOp::Delete { table, key } => {
                    if let Some(r) = self.table(table)?.get(key) {
                        r.install_at(ts, 0, |_| None);
                    }
                }
            }
        }
        Ok(())
    }

    fn apply_redo(&self, payload: &[u8]) -> Result<(), ReplayError> {
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Update {
                    table,
                    key,
                    columns,
                    data,
                } => {
                    let t = self.table(table)?;
                    let mut ok = true;
                    // Borrowed from the index: no reference count taken per update.
                    t.peek(key, |row| {
                        row.modify(|img| ok = t.schema.scatter(img, columns, data))
                    })
                    .ok_or_else(|| missing_row(t, key))?;
                    if !ok {
                        return Err(format!(
                            "redo update of table {} key {key} does not match the schema",
                            t.name()
                        )
                        .into());
                    }
                }
                RedoOp::Insert { table, key, data } => {
                    let t = self.insert_table(table, data)?;
                    t.upsert(key, Arc::new(Row::new(data.into(), RowState::Live)));
                }
                RedoOp::Delete { table, key } => {
                    self.table(table)?.remove(key);
                }
            }
        }
        Ok(())
    }

    /// The table and row a redo update of `key` in table `id` changes.
    fn updated_row(
        &self,
        id: u32,
        key: u64,
    ) -> Result<(&crate::table::Table, Arc<Row>), ReplayError> {
        let t = self.table(id)?;
        let row = t.get(key).ok_or_else(|| missing_row(t, key))?;
        Ok((t, row))
    }

    /// The table a redo insert of `data` goes to, if the image fits its rows.
    fn insert_table(&self, id: u32, data: &[u8]) -> Result<&crate::table::Table, ReplayError> {
        let t = self.table(id)?;
        if data.len() != t.schema.row_len() {
            return Err(format!(
                "redo insert into table {} with {} bytes, rows are {}",
                t.name(),
                data.len(),
                t.schema.row_len()
            )
            .into());
        }
        Ok(t)
    }

    fn table(&self, id: u32) -> Result<&crate::table::Table, ReplayError> {
        self.db.tables.get(id as usize).ok_or_else(|| {
            format!(
                "log names table {id}, the database has {}",
                self.db.tables.len()
            )
            .into()
        })
    }

    fn run_command(&self, txn: u64, ts: Option<u64>, payload: &[u8]) -> Result<(), ReplayError> {
        let (proc_id, params) = decode_command(payload)?;
        let f = self.db.procs.get(proc_id).ok_or_else(|| {
            format!("the log calls stored procedure {proc_id}, which is not registered; open the database with the workload that wrote it")
        })?;
        let shard = shard();
        let mut c = self.pool.take(shard)?;
        let result = {
            let Ctx { st, worker } = &mut c;
            let mut tx = Txn::new(self.db, &mut **worker, st, txn, Mode::Replay, 0);
            if let Some(ts) = ts {
                tx.set_replay_ts(ts);
            }
            match f(&mut tx, params) {
                Ok(()) => tx.commit(),
                Err(e) => {
                    tx.abort();
                    Err(e)
                }
            }
        };
        self.pool.put(shard, c);
        match result {
            Ok(()) => Ok(()),
            // A procedure that rolled back when it ran would not have been logged, so a
            // rollback on replay means the replayed state differs from the original one.
            Err(e) => Err(format!("re-executing procedure {proc_id} failed: {e}").into()),
        }
    }
}

impl Replay for Replayer<'_> {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        // The lookups below nest in this guard (see the module doc).
        let _guard = scc::Guard::new();
        if self.db.cc == crate::db::Cc::Mvcc {
            let (ts, body) = crate::mvcc::decode_envelope(payload)?;
            self.max_ts.fetch_max(ts, Ordering::Relaxed);
            return match kind {
                LogKind::Data => self.apply_redo_at(ts, body),
                LogKind::Command => self.run_command(txn, Some(ts), body),
            };
        }
        match kind {
            LogKind::Data => self.apply_redo(payload),
            LogKind::Command => self.run_command(txn, None, payload),
        }
    }

    fn prefetch(&self, kind: LogKind, payloads: &mut dyn Iterator<Item = &[u8]>, step: Prefetch) {
        // Only single-version redo updates touch a row the index already holds; a malformed
        // payload is left for `apply` to report.
        if kind != LogKind::Data || self.db.cc == crate::db::Cc::Mvcc {
            return;
        }
        // One guard for the batch: entering a guard fences, and a fence between two look-ups
        // would wait for the first one's misses instead of overlapping them.
        let _guard = scc::Guard::new();
        for payload in payloads {
            for op in decode_redo(payload) {
                let Ok(RedoOp::Update { table, key, .. }) = op else {
                    continue;
                };
                if let Ok(t) = self.table(table) {
                    t.prefetch(key, step);
                }
            }
        }
    }
}
