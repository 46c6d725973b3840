//! [`Worker`]: a thread's handle for running transactions, with its scheme worker, its reused
//! transaction buffers, its block of transaction ids and its checkpoint-epoch slot.

use std::sync::atomic::Ordering;

use braid_wal::scheme::{Prefetch, SchemeWorker, Ticket};

use super::{Db, DbInner};
use crate::error::{EngineError, TxError};
use crate::schema::TableId;
use crate::txn::{Mode, Txn, TxnState};

impl Db {
    /// A worker: one per thread that runs transactions.
    pub fn worker(&self) -> Result<Worker, EngineError> {
        let id = self.inner.next_worker.fetch_add(1, Ordering::Relaxed);
        let scheme = self.inner.scheme.worker(id)?;
        let slot = self
            .inner
            .epochs
            .claim()
            .ok_or_else(|| EngineError::TooManyWorkers {
                max: self.inner.opts.max_workers,
            })?;
        self.inner.mv.claim(slot);
        Ok(Worker {
            db: self.clone(),
            id,
            scheme,
            st: TxnState::default(),
            ids: 0..0,
            slot,
        })
    }
}

/// A thread's handle for running transactions.
pub struct Worker {
    db: Db,
    id: usize,
    scheme: Box<dyn SchemeWorker>,
    st: TxnState,
    ids: std::ops::Range<u64>,
    /// Checkpoint-epoch slot.
    slot: usize,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // MVCC tombstones still waiting for old snapshots stay in the index (invisible) until
        // a later recovery; take out those that can go now.
        crate::txn::sweep(&self.db.inner, &mut self.st);
        self.db.inner.inserts.add(&self.st.insert_timing);
        self.db.inner.epochs.release(self.slot);
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).finish()
    }
}

/// Transaction ids are handed to workers in blocks, so id allocation is not a shared hot spot.
const ID_BLOCK: u64 = 1024;

/// The next transaction id of a worker's block `ids`, taking a new block when it is used up.
fn take_id(ids: &mut std::ops::Range<u64>, inner: &DbInner) -> u64 {
    if ids.is_empty() {
        let start = inner.next_txn.fetch_add(ID_BLOCK, Ordering::Relaxed);
        *ids = start..start + ID_BLOCK;
    }
    let id = ids.start;
    ids.start += 1;
    id
}

impl Worker {
    /// This worker's number, unique among the workers of the database since it was opened.
    pub fn id(&self) -> usize {
        self.id
    }

    fn next_id(&mut self) -> u64 {
        take_id(&mut self.ids, &self.db.inner)
    }

    /// Begin an ad-hoc transaction (logged as data).
    pub fn begin(&mut self) -> Txn<'_> {
        let id = self.next_id();
        Txn::new(
            &self.db.inner,
            &mut *self.scheme,
            &mut self.st,
            id,
            Mode::Normal,
            self.slot,
        )
    }

    /// Run stored procedure `proc_id` with `params` as one transaction and commit it; returns
    /// once the transaction is durable ([`Txn::commit`]). With command logging the call itself
    /// is logged; otherwise its writes are.
    pub fn call(&mut self, proc_id: u32, params: &[u8]) -> Result<(), TxError> {
        self.call_async(proc_id, params)?.wait()?;
        Ok(())
    }

    /// [`Worker::call`] with a pipelined commit ([`Txn::commit_async`]): returns as soon as the
    /// record is in the log buffer, with the [`Ticket`] that resolves when the transaction is
    /// durable. Until it resolves the transaction is not acknowledged and a crash may lose it.
    pub fn call_async(&mut self, proc_id: u32, params: &[u8]) -> Result<Ticket, TxError> {
        self.run_procedure(proc_id, params, &mut |_| {})
    }

    /// [`Worker::call_async`], with `before_commit` told the transaction id once the procedure
    /// has run and just before the commit starts (crash tests record their intent there). Test
    /// machinery: the `testing` feature.
    #[cfg(any(test, feature = "testing"))]
    pub fn call_async_hooked(
        &mut self,
        proc_id: u32,
        params: &[u8],
        before_commit: &mut dyn FnMut(u64),
    ) -> Result<Ticket, TxError> {
        self.run_procedure(proc_id, params, before_commit)
    }

    /// Start loading the rows of transactions this worker will run soon, so that finding and
    /// reading them overlaps what runs before them instead of waiting on memory when they run.
    /// A hint only: it locks nothing, changes nothing, and skips keys and tables it does not
    /// find. `step` is how near the rows' use is: [`Prefetch::Locate`] well ahead (probe each
    /// key's index and start loading its row's header), then [`Prefetch::Body`] for the same
    /// rows nearer their use (start loading the image; its header is in cache by then). Give
    /// a batch of rows per call: their index probes are issued back to back under one epoch
    /// guard, so their misses overlap one another (the recoveries announce what they replay
    /// next the same way).
    pub fn prefetch(&self, rows: &mut dyn Iterator<Item = (TableId, u64)>, step: Prefetch) {
        let tables = &self.db.inner.tables;
        // Entering the hash indexes' epoch fences; one guard for the batch keeps the probes'
        // misses overlapping.
        let _epoch = scc::Guard::new();
        for (table, key) in rows {
            if let Some(t) = tables.get(table.0 as usize) {
                t.prefetch(key, step);
            }
        }
    }

    /// Run a stored procedure as one transaction and commit it pipelined, telling
    /// `before_commit` its id just before the commit.
    fn run_procedure(
        &mut self,
        proc_id: u32,
        params: &[u8],
        before_commit: &mut dyn FnMut(u64),
    ) -> Result<Ticket, TxError> {
        // Borrowed from the registry, beside the transaction's own borrows of this worker's
        // fields (no reference count taken per call).
        let inner = &self.db.inner;
        let f = inner
            .procs
            .get(proc_id)
            .ok_or(TxError::UnknownProcedure(proc_id))?;
        let id = take_id(&mut self.ids, inner);
        // One epoch guard of the hash indexes for the whole call, dropped after the
        // transaction: each index probe's own guard then nests in it, where entering the epoch
        // anew costs a full barrier (a locked exchange on x86) per probe.
        let _epoch = scc::Guard::new();
        let mut tx = Txn::new(
            inner,
            &mut *self.scheme,
            &mut self.st,
            id,
            Mode::Normal,
            self.slot,
        );
        tx.set_command(proc_id, params);
        match f(&mut tx, params) {
            Ok(()) => {
                before_commit(tx.id());
                tx.commit_async()
            }
            Err(e) => {
                tx.abort();
                Err(e)
            }
        }
    }
}
