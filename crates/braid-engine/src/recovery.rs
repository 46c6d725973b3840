//! The engine's side of recovery: applying redo images and re-executing commands handed over by
//! a scheme's recovery planner.
//!
//! Redo application is idempotent per record (images, not deltas): an update writes the logged
//! columns, an insert installs the logged image (replacing any row with that key), a delete
//! removes the key. Command re-execution runs the registered procedure in a replay-mode
//! transaction: no locks, no logging.

use std::sync::Arc;

use braid_wal::payload::{RedoOp, decode_command, decode_redo};
use braid_wal::scheme::{LogKind, Replay, ReplayError};
use parking_lot::Mutex;

use crate::db::DbInner;
use crate::row::{Row, RowState};
use crate::txn::{Mode, Txn, TxnState};

pub(crate) struct Replayer<'a> {
    db: &'a DbInner,
    states: Mutex<Vec<TxnState>>,
}

impl<'a> Replayer<'a> {
    pub(crate) fn new(db: &'a DbInner) -> Replayer<'a> {
        Replayer {
            db,
            states: Mutex::new(Vec::new()),
        }
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
                    let row = t.get(key).ok_or_else(|| {
                        format!("redo update of missing row: table {} key {key}", t.name())
                    })?;
                    let mut ok = true;
                    row.modify(|img| ok = t.schema.scatter(img, columns, data));
                    if !ok {
                        return Err(format!(
                            "redo update of table {} key {key} does not match the schema",
                            t.name()
                        )
                        .into());
                    }
                }
                RedoOp::Insert { table, key, data } => {
                    let t = self.table(table)?;
                    if data.len() != t.schema.row_len() {
                        return Err(format!(
                            "redo insert into table {} with {} bytes, rows are {}",
                            t.name(),
                            data.len(),
                            t.schema.row_len()
                        )
                        .into());
                    }
                    t.upsert(key, Arc::new(Row::new(data.into(), RowState::Live)));
                }
                RedoOp::Delete { table, key } => {
                    self.table(table)?.remove(key);
                }
            }
        }
        Ok(())
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

    fn run_command(&self, txn: u64, payload: &[u8]) -> Result<(), ReplayError> {
        let (proc_id, params) = decode_command(payload)?;
        let f = self.db.procs.get(proc_id).cloned().ok_or_else(|| {
            format!("the log calls stored procedure {proc_id}, which is not registered; open the database with the workload that wrote it")
        })?;
        let mut st = self.states.lock().pop().unwrap_or_default();
        let nolog = braid_wal::scheme::none::NoLogging;
        let mut worker = braid_wal::scheme::Scheme::worker(&nolog, 0)?;
        let result = {
            let mut tx = Txn::new(self.db, &mut *worker, &mut st, txn, Mode::Replay, 0);
            match f(&mut tx, params) {
                Ok(()) => tx.commit().map(|_| ()),
                Err(e) => {
                    tx.abort();
                    Err(e)
                }
            }
        };
        self.states.lock().push(st);
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
        match kind {
            LogKind::Data => self.apply_redo(payload),
            LogKind::Command => self.run_command(txn, payload),
        }
    }
}
