//! Commit and abort: validation under the database's concurrency control (2PL has nothing to
//! validate, OCC and MVCC lock the write set and validate), the log record (redo images or the
//! procedure call, behind the commit timestamp under MVCC), installing the writes after the
//! scheme has put the record in the log buffer, and early lock release: the locks go before the
//! commit is durable. [`Txn::commit`] acknowledges the transaction only once it is durable;
//! [`Txn::commit_async`] returns at once with the [`Ticket`] that acknowledges it.

use braid_wal::payload::{RedoOp, encode_command};
use braid_wal::scheme::{CommitRequest, LogKind, Records, Ticket, Written};

use super::access::{Accesses, Write};
use super::cow::save_for_checkpoint;
use super::multiversion::sweep;
use super::{Mode, Txn, twopl};
use crate::db::Cc;
use crate::error::TxError;
use crate::row::RowState;

impl Txn<'_> {
    /// Roll back: release every lock and undo inserts.
    pub(crate) fn abort(mut self) {
        self.abort_inner();
    }

    pub(super) fn abort_inner(&mut self) {
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
        twopl::release(&self.st.entries);
        self.exit_epoch();
        self.end_mvcc();
        if self.mode == Mode::Normal {
            self.scheme.abort(&Accesses(&self.st.entries));
        }
        self.st.reset();
    }

    /// Mark this transaction as the execution of a stored procedure, so command logging logs the
    /// call instead of its writes (the call is encoded only for command logging, the one kind
    /// that logs it).
    pub(crate) fn set_command(&mut self, proc_id: u32, params: &[u8]) {
        self.st.command.clear();
        if self.db.logging == LogKind::Command {
            encode_command(proc_id, params, &mut self.st.command);
        }
        self.st.has_command = true;
    }

    /// Validate under the concurrency control (entering the checkpoint epoch once the locks
    /// that order the transaction are held), then recount the scans.
    fn validate(&mut self) -> Result<(), TxError> {
        if matches!(self.db.cc, Cc::Occ | Cc::Mvcc) {
            self.lock_write_set()?;
            self.enter_epoch();
            if self.mvcc {
                // After the write set is locked and the epoch entered (checkpoints rely on it).
                self.ts = Some(self.db.mv.commit_ts(self.slot));
            }
            // Taurus Alg. 6 lines 8-11: the scheme raises readLVs before validation.
            self.scheme.before_validate(&Accesses(&self.st.entries));
            self.validate_reads()?;
        } else {
            self.enter_epoch();
        }
        self.recount_scans()
    }

    /// The redo payload: each write's after-image (of an update, only the changed columns).
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

    /// Install the buffered writes (copying rows out first for a checkpoint being captured).
    pub(super) fn install(&mut self) {
        if let Some(ts) = self.ts {
            return self.install_versions(ts);
        }
        let capture = self.capture();
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

    /// Commit: validate, log, install, release the locks (early), and return once the
    /// transaction is durable: `commit()?` returning means it survives a crash. On a conflict
    /// or a refused commit the transaction is rolled back and nothing is logged. If the log
    /// fails after the record went into its buffer, the error is returned: the transaction was
    /// installed in memory (its locks went early) but is not acknowledged, and recovery may not
    /// have it.
    ///
    /// Many commits in flight per thread: [`Txn::commit_async`].
    pub fn commit(self) -> Result<(), TxError> {
        self.commit_async()?.wait()?;
        Ok(())
    }

    /// Pipelined commit: validate, log, install and release the locks (early) as
    /// [`Txn::commit`] does, but return as soon as the record is in the log buffer, with a
    /// [`Ticket`] that resolves when the transaction is durable. Until the ticket resolves
    /// ([`Ticket::wait`], [`Ticket::is_durable`]) the transaction is not acknowledged: a crash
    /// may lose it, though later transactions may already have read its writes. This is how a
    /// thread keeps many commits in flight. On error the transaction is rolled back.
    ///
    /// A scheme without early lock release (Shore-MT's Baseline) holds the locks until the
    /// commit is durable, so its ticket is resolved when this returns.
    pub fn commit_async(mut self) -> Result<Ticket, TxError> {
        if self.mode == Mode::Replay {
            return Ok(self.commit_replay());
        }
        let read_only = self.is_read_only();
        if !read_only && self.db.read_only {
            self.abort_inner();
            return Err(TxError::ReadOnly);
        }
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
        // Under per-update records 2PL logged every write as it was made; OCC logs them now.
        // Without a log (scheme `none`) there is no record to build.
        if !read_only && kind == LogKind::Data && self.st.updates == 0 && self.db.logs {
            self.build_redo();
            if self.db.records == Records::Update
                && let Err(e) = self.log_writes_at_commit()
            {
                self.abort_inner();
                return Err(e);
            }
        }
        let updates = self.st.updates;
        let mut payload: &[u8] = match (read_only, kind) {
            _ if updates > 0 => &[],
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
            writes: if kind == LogKind::Data && !read_only && updates == 0 {
                &self.st.written
            } else {
                &[]
            },
            rows: &Accesses(&self.st.entries),
            updates,
        };
        let timed = self.st.insert_timing.start();
        let committed = self.scheme.commit(&req);
        self.st
            .insert_timing
            .stop(timed, !(read_only && updates == 0));
        let ticket = match committed {
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
        // A scheme without early lock release (Shore-MT's Baseline): the locks are held until
        // the commit is durable.
        let held = if self.db.elr { Ok(()) } else { ticket.wait() };
        let timed = self.st.insert_timing.start_release();
        twopl::release(&self.st.entries);
        self.st.insert_timing.stop_release(timed);
        self.finished = true;
        if self.mvcc {
            sweep(self.db, self.st);
        }
        self.st.reset();
        held?;
        if !self.db.elr {
            // Durable already: the wait above held the locks until it was.
            return Ok(Ticket::DURABLE);
        }
        Ok(ticket)
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        self.abort_inner();
    }
}
