//! Per-update records ([`Records::Update`]): each insert, update and delete hands its redo image
//! to the scheme as it happens, the ARIES write-ahead log of Shore-MT that Wang & Johnson (VLDB
//! 2014) and NV-Logging (VLDB 2014) build on, and the commit then inserts only a commit record.
//!
//! Under 2PL a write is logged the moment it is made, while its lock is held: the transaction
//! is in the log (and, for gsn's passive group commit, dirty) from its first write to its
//! commit, as in Shore-MT. Under OCC writes stay private until validation, so the writes are
//! logged one record each at commit, after the write set is locked and validated, and before
//! the commit record. An update logs only the columns that call changed; recovery applies a
//! transaction's records in order once it finds the commit record, so a row written twice ends
//! as the second write left it. Replay (recovery re-execution) logs nothing.

use braid_wal::payload::RedoOp;
use braid_wal::scheme::{Records, UpdateRecord};

use super::{Mode, Txn, row_ref};
use crate::db::Cc;
use crate::error::TxError;

impl Txn<'_> {
    /// Whether this transaction logs each write as it is made (2PL under per-update records,
    /// with a scheme that keeps a log).
    #[inline]
    pub(super) fn logs_writes_now(&self) -> bool {
        self.db.records == Records::Update
            && self.mode == Mode::Normal
            && self.db.cc == Cc::TwoPl
            && self.db.logs
    }

    /// Log the op in the scratch buffer as a write of entry `i`'s row.
    fn log_scratch(&mut self, i: usize) -> Result<(), TxError> {
        let e = &self.st.entries[i];
        let up = UpdateRecord {
            txn: self.id,
            row: row_ref(e.table, e.key, &e.row),
            payload: &self.st.op.bytes,
        };
        let timed = self.st.insert_timing.start_update();
        let logged = self.scheme.log_update(&up);
        self.st.insert_timing.stop_update(timed);
        logged?;
        self.st.updates += 1;
        Ok(())
    }

    /// 2PL, per-update records: log the columns `mask` of entry `i`'s private image, just
    /// changed by an update.
    pub(super) fn log_update_now(
        &mut self,
        i: usize,
        img: usize,
        mask: u64,
    ) -> Result<(), TxError> {
        if mask == 0 || !self.logs_writes_now() {
            return Ok(());
        }
        let st = &mut *self.st;
        let e = &st.entries[i];
        let schema = &self.db.tables[e.table as usize].schema;
        let image = &st.images[img];
        st.op.clear();
        st.op
            .push_update_with(e.table, e.key, mask, schema.mask_len(mask), |buf| {
                schema.gather(image, mask, buf)
            });
        self.log_scratch(i)
    }

    /// 2PL, per-update records: log entry `i`'s row as inserted with its private image.
    pub(super) fn log_insert_now(&mut self, i: usize, img: usize) -> Result<(), TxError> {
        if !self.logs_writes_now() {
            return Ok(());
        }
        let st = &mut *self.st;
        let e = &st.entries[i];
        st.op.clear();
        st.op.push(&RedoOp::Insert {
            table: e.table,
            key: e.key,
            data: &st.images[img],
        });
        self.log_scratch(i)
    }

    /// 2PL, per-update records: log entry `i`'s row as deleted.
    pub(super) fn log_delete_now(&mut self, i: usize) -> Result<(), TxError> {
        if !self.logs_writes_now() {
            return Ok(());
        }
        let st = &mut *self.st;
        let e = &st.entries[i];
        st.op.clear();
        st.op.push(&RedoOp::Delete {
            table: e.table,
            key: e.key,
        });
        self.log_scratch(i)
    }

    /// OCC, per-update records, at commit after validation: log each write of the redo
    /// payload `build_redo` made as a record of its own.
    pub(super) fn log_writes_at_commit(&mut self) -> Result<(), TxError> {
        for w in 0..self.st.written.len() {
            let (table, key, op) = {
                let w = &self.st.written[w];
                (w.table, w.key, w.op.start as usize..w.op.end as usize)
            };
            let Some(i) = self.st.find(table, key) else {
                continue;
            };
            let st = &mut *self.st;
            st.op.clear();
            st.op.bytes.extend_from_slice(&st.redo.bytes[op]);
            self.log_scratch(i)?;
        }
        Ok(())
    }
}
