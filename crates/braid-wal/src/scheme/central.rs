//! The central log that `serial`, `nvdisk`, `aether` and `baseline` share: one stream, one LSN
//! (the byte position in it), serial's record format (so recovery is [`serial::replay_serial`]
//! and a standby is serial's follower), per-update records with commit and abort records, and
//! the open transactions' first records kept from truncation ([`OpenTxns`]). What differs is
//! how a record gets into the log buffer: an [`Insert`] (serial's lock-free reservation,
//! [`Reserve`]; Aether's consolidated insert in `aether/consolidated.rs`; Shore-MT's mutex in
//! `aether/baseline.rs`), and whether locks go early (the engine asks
//! [`super::SchemeDef::early_lock_release`]).
//!
//! Flush pipelining (Johnson et al. 2010, Sec. 4): a commit returns its [`Ticket`] as soon as
//! its record is in the buffer, without waiting; the stream's flusher makes it durable (group
//! commit) and the ticket resolves then, while the worker goes on with its next transaction.
//! Whoever needs the acknowledgement waits on the ticket; the engine waits at once for a
//! scheme without early lock release (Baseline), with the locks held.
//!
//! A read-only transaction logs nothing, but under early lock release it may have read a
//! write whose commit is not durable yet, so its ticket waits for that commit. Each written
//! row keeps, in word 0 of its [`RowMeta`](super::RowMeta) slot, the end of its last writer's
//! commit record, stored before the writer installs the row and releases its lock; a
//! read-only commit waits for the largest of those among the rows it read, and for nothing
//! if none is above zero (zero: not written since open, so durable). Waiting for the whole
//! log tail instead made every read-only commit beside an update in flight wait a group
//! commit (YCSB B on the root disk at 16 threads: p50 47 us for a transaction that read
//! durable rows). Where a row's writer cannot be named the wait is the log's tail, as before:
//! a row without a slot, and a read that found no row ([`SchemeWorker::on_absent`]: the
//! key's delete may not be durable).

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::open_txns::{OpenSlot, OpenTxns};
use super::{AccessSet, CommitRequest, RowRef, Scheme, SchemeWorker, Ticket, UpdateRecord};
use crate::proxy::{Proxies, ProxyBoard, ProxyCounter};
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use crate::scheme::cut::epoch_flag;
use crate::stream::Stream;
use crate::{Lsn, WalError};

#[cfg(doc)]
use super::serial;

/// How a record gets into the central log buffer.
pub(crate) trait Insert: Send + Sync + 'static {
    /// What each worker keeps for inserting (a writer slot, a scratch buffer).
    type Local: Send + 'static;
    /// A new worker's state.
    fn local(&self) -> Result<Self::Local, WalError>;
    /// Put `spec` in the log buffer, counting what it does to shared words on `proxy`; returns
    /// the record's end. Does not wait for durability.
    fn insert(
        &self,
        local: &mut Self::Local,
        spec: &RecordSpec<'_>,
        proxy: &ProxyCounter,
    ) -> Result<Lsn, WalError>;
}

/// A central-log scheme inserting with `I`.
pub(crate) struct Central<I: Insert> {
    name: &'static str,
    streams: [Stream; 1],
    log: Arc<I>,
    board: ProxyBoard,
    open: Arc<OpenTxns>,
}

/// serial's insert: the stream's own lock-free reservation (a compare-and-swap on the tail
/// every worker appends to) and a fill outside any lock, through the worker's writer slot.
pub(crate) struct Reserve(pub(crate) Stream);

impl Insert for Reserve {
    type Local = crate::stream::StreamWriter;

    fn local(&self) -> Result<Self::Local, WalError> {
        let mut w = self.0.writer()?;
        // Every commit record is waited for or checked through its stream ticket, whose
        // waiter flushes it itself when no flush is under way (`stream/lead.rs`).
        w.set_commits_waited(true);
        Ok(w)
    }

    fn insert(
        &self,
        writer: &mut Self::Local,
        spec: &RecordSpec<'_>,
        proxy: &ProxyCounter,
    ) -> Result<Lsn, WalError> {
        let (_, end) = writer.append(spec)?;
        // The central log's tail: every worker appends to it.
        proxy.append_global(writer.cost());
        Ok(end)
    }
}

impl<I: Insert> Central<I> {
    /// The scheme `name` on `stream`, inserting with `log`, for `max_workers` workers.
    pub(crate) fn new(name: &'static str, stream: Stream, log: I, max_workers: usize) -> Self {
        Central {
            name,
            streams: [stream],
            log: Arc::new(log),
            board: ProxyBoard::new(1),
            open: Arc::new(OpenTxns::new(max_workers.max(1), 1)),
        }
    }
}

struct CentralWorker<I: Insert> {
    stream: Stream,
    log: Arc<I>,
    local: I::Local,
    proxy: ProxyCounter,
    /// This worker's slot in the scheme's [`OpenTxns`].
    open: OpenSlot,
    /// The transaction with update records in the log and no commit or abort record yet.
    logging: Option<u64>,
    /// The transaction found no row somewhere ([`SchemeWorker::on_absent`]): a read-only
    /// commit waits for the log's tail.
    absent: bool,
}

/// The end of `row`'s last writer's commit record (0: not written since open), or `None` for
/// a row without a [`RowMeta`](super::RowMeta) slot.
fn last_commit<'a>(row: &RowRef<'a>) -> Option<&'a AtomicU64> {
    row.meta.map(|m| &m.words(1, || {})[0])
}

impl<I: Insert> CentralWorker<I> {
    fn insert(&mut self, kind: Kind, flags: u8, txn: u64, payload: &[u8]) -> Result<Lsn, WalError> {
        let payload = [payload];
        let spec = RecordSpec {
            kind,
            flags,
            txn,
            stamp: &Stamp::None,
            payload: &payload,
        };
        self.log.insert(&mut self.local, &spec, &self.proxy)
    }
}

impl<I: Insert> CentralWorker<I> {
    /// Where a read-only commit's ticket waits: the largest last-commit end among the rows it
    /// read, or the log's tail where a writer cannot be named (module doc); 0 for nothing.
    fn read_wait(&self, rows: &dyn AccessSet, absent: bool) -> Lsn {
        if absent {
            return self.stream.tail();
        }
        let mut wait = 0;
        for i in 0..rows.len() {
            let a = rows.get(i);
            if !a.read {
                continue;
            }
            match last_commit(&a.row) {
                Some(w) => wait = wait.max(w.load(Ordering::Acquire)),
                None => return self.stream.tail(),
            }
        }
        wait
    }
}

impl<I: Insert> SchemeWorker for CentralWorker<I> {
    fn log_update(&mut self, up: &UpdateRecord<'_>) -> Result<(), WalError> {
        let stream = &self.stream;
        self.open.note(0, || stream.tail());
        self.logging = Some(up.txn);
        self.insert(Kind::Redo, 0, up.txn, up.payload)?;
        Ok(())
    }

    fn on_absent(&mut self, _table: u32, _lo: Bound<u64>, _hi: Bound<u64>) {
        self.absent = true;
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        self.proxy.commit();
        let absent = std::mem::take(&mut self.absent);
        if req.read_only && req.updates == 0 {
            // It may have read data whose writer is not durable yet (early lock release).
            return Ok(match self.read_wait(req.rows, absent) {
                0 => Ticket::DURABLE,
                lsn => Ticket::stream(self.stream.clone(), lsn),
            });
        }
        let flags = FLAG_COMMIT | epoch_flag(req.epoch);
        let end = if req.updates > 0 {
            let end = self.insert(Kind::Commit, flags, req.txn, &[]);
            self.logging = None;
            self.open.clear();
            end?
        } else {
            self.insert(req.kind.record_kind(), flags, req.txn, req.payload)?
        };
        // Readers of these rows wait for this commit: stored before the engine installs the
        // writes and releases the locks (a later writer of a row reserves a later end, so the
        // word only grows; `fetch_max` keeps it so if a caller ever wrote without a lock).
        for i in 0..req.rows.len() {
            let a = req.rows.get(i);
            if a.write
                && let Some(w) = last_commit(&a.row)
            {
                w.fetch_max(end, Ordering::Release);
            }
        }
        // Flush pipelining: hand the commit to the flusher and go on.
        Ok(Ticket::stream(self.stream.clone(), end))
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        self.absent = false;
        if let Some(txn) = self.logging.take() {
            // Recovery skips a transaction without a commit record either way; the abort
            // record only lets it forget the transaction's records sooner. A failure to
            // insert it (a poisoned stream) is reported by the next commit.
            let _ = self.insert(Kind::Abort, 0, txn, &[]);
            self.open.clear();
        }
    }
}

impl<I: Insert> Scheme for Central<I> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn worker(&self, _worker: usize) -> Result<Box<dyn SchemeWorker>, WalError> {
        Ok(Box::new(CentralWorker {
            stream: self.streams[0].clone(),
            log: Arc::clone(&self.log),
            local: self.log.local()?,
            proxy: self.board.counter(),
            open: self.open.claim()?,
            logging: None,
            absent: false,
        }))
    }
    fn streams(&self) -> &[Stream] {
        &self.streams
    }
    fn keeps(&self) -> Vec<Lsn> {
        vec![self.open.start(0, self.streams[0].tail())]
    }
    fn close(&self) -> Result<(), WalError> {
        self.streams[0].close()
    }
    fn proxies(&self) -> Option<Proxies> {
        Some(self.board.sum())
    }
}
