//! A gsn worker: the transaction's GSN kept as a Lamport clock over the page clocks it reads
//! and writes, the log inserts of a commit (one record to the worker's log, or with page-level
//! partitioning one part per log and a commit record) and passive group commit's dirty /
//! publish around them (Wang & Johnson Sections 3.1, 3.3 and 4.1).

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use braid_pmem::signal::{self, BUSY, DIRTY, PublishCell};

use super::commit::{self, Link};
use super::config::{NO_COMMAND_LOGGING, Partition};
use super::log::Mode;
use super::pages;
use super::shared::Shared;
use crate::WalError;
use crate::payload::{RedoBuf, decode_redo};
use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, Kind};
use crate::scheme::{AccessSet, CommitRequest, LogKind, RowRef, SchemeWorker, Ticket};

/// Commit counts are added to the instance's counter in batches.
const COMMIT_BATCH: u64 = 256;

/// One worker: its transaction's GSN and the page clocks it touched.
pub(super) struct GsnWorker {
    shared: Arc<Shared>,
    /// What this worker's tickets hold (see [`Link`]).
    link: Arc<Link>,
    home: usize,
    /// The transaction's GSN.
    tx: u64,
    /// GSN of this worker's last commit (the next transaction starts from it).
    last: u64,
    /// Page clock slots touched by the running transaction, and whether written.
    touched: Vec<(usize, bool)>,
    /// Page-level partitioning: one redo buffer per log.
    parts: Vec<RedoBuf>,
    cell: Option<Arc<PublishCell>>,
    commits: u64,
    proxy: ProxyCounter,
}

impl Drop for GsnWorker {
    fn drop(&mut self) {
        self.shared
            .counters
            .commits
            .fetch_add(self.commits, Relaxed);
        if let Some(c) = self.cell.take() {
            self.shared.cells.lock().retain(|x| !Arc::ptr_eq(x, &c));
        }
    }
}

impl GsnWorker {
    /// Worker `worker` of the scheme, logging to log `worker mod n` (transaction-level
    /// partitioning); with passive group commit it claims a publish cell.
    pub(super) fn new(shared: Arc<Shared>, worker: usize) -> Result<GsnWorker, WalError> {
        let cell = if shared.mode == Mode::Passive {
            let c = Arc::new(PublishCell::claim().ok_or_else(|| {
                WalError::Config(format!(
                    "passive group commit: all {} worker cells are in use",
                    signal::CELLS
                ))
            })?);
            shared.cells.lock().push(Arc::clone(&c));
            Some(c)
        } else {
            None
        };
        let n = shared.logs.len();
        Ok(GsnWorker {
            link: Arc::new(Link(Arc::clone(&shared))),
            shared: Arc::clone(&shared),
            home: worker % n,
            tx: 0,
            last: 0,
            touched: Vec::new(),
            parts: (0..n).map(|_| RedoBuf::default()).collect(),
            cell,
            commits: 0,
            proxy: shared.board.counter(),
        })
    }

    fn end_txn(&mut self, gsn: u64) {
        self.touched.clear();
        self.tx = gsn;
        self.last = gsn;
    }

    /// Insert the transaction's records; returns its commit GSN. `self.tx` follows every insert.
    fn insert(&mut self, req: &CommitRequest<'_>) -> Result<u64, WalError> {
        let s = &*self.shared;
        let n = s.logs.len();
        let ef = crate::scheme::cut::epoch_flag(req.epoch);
        if s.cfg.partition == Partition::Transaction || n == 1 {
            let gsn = insert_one(
                s,
                &self.proxy,
                self.home,
                self.tx,
                Kind::Redo,
                FLAG_COMMIT | ef,
                req.txn,
                &[req.payload],
            )?;
            self.tx = gsn;
            return Ok(gsn);
        }
        for p in &mut self.parts {
            p.clear();
        }
        let rpp = s.pages.rows_per_page();
        if req.writes.is_empty() {
            // The caller did not say what it wrote: find it in the redo payload.
            for op in decode_redo(req.payload) {
                let op =
                    op.map_err(|e| WalError::Config(format!("gsn: malformed redo payload: {e}")))?;
                let page = pages::PageId::of(op.table(), op.key(), rpp);
                self.parts[(page.number() % n as u64) as usize].push(&op);
            }
        } else {
            for w in req.writes {
                let page = pages::PageId::of(w.table, w.key, rpp);
                let op = req
                    .payload
                    .get(w.op.start as usize..w.op.end as usize)
                    .ok_or_else(|| {
                        WalError::Config(format!(
                            "gsn: the write of table {} key {} names bytes {:?} outside the \
                             {}-byte payload",
                            w.table,
                            w.key,
                            w.op,
                            req.payload.len()
                        ))
                    })?;
                self.parts[(page.number() % n as u64) as usize]
                    .bytes
                    .extend_from_slice(op);
            }
        }
        let touched: Vec<usize> = (0..n).filter(|&l| !self.parts[l].is_empty()).collect();
        if touched.len() == 1 {
            let l = touched[0];
            let gsn = insert_one(
                s,
                &self.proxy,
                l,
                self.tx,
                Kind::Redo,
                FLAG_COMMIT | ef,
                req.txn,
                &[&self.parts[l].bytes],
            )?;
            self.tx = gsn;
            return Ok(gsn);
        }
        for &l in &touched {
            let gsn = insert_one(
                s,
                &self.proxy,
                l,
                self.tx,
                Kind::Redo,
                ef,
                req.txn,
                &[&self.parts[l].bytes],
            )?;
            self.tx = gsn;
        }
        let count = (touched.len() as u32).to_le_bytes();
        let gsn = insert_one(
            s,
            &self.proxy,
            0,
            self.tx,
            Kind::Commit,
            FLAG_COMMIT | ef,
            req.txn,
            &[&count],
        )?;
        self.tx = gsn;
        Ok(gsn)
    }
}

impl SchemeWorker for GsnWorker {
    fn on_read(&mut self, row: RowRef<'_>) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        self.tx = self.tx.max(p.get(slot));
        self.touched.push((slot, false));
    }

    fn on_write(&mut self, row: RowRef<'_>) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        let g = self.tx.max(p.get(slot)) + 1;
        self.tx = p.raise(slot, g);
        self.touched.push((slot, true));
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        if req.kind == LogKind::Command {
            return Err(WalError::Config(NO_COMMAND_LOGGING.into()));
        }
        self.proxy.commit();
        // Re-read the clocks of every page touched (see the module doc: OCC).
        for &(slot, _) in &self.touched {
            self.tx = self.tx.max(self.shared.pages.get(slot));
        }
        if req.read_only || req.payload.is_empty() {
            let g = self.tx;
            self.touched.clear();
            if g == 0 || self.shared.mode == Mode::Immediate {
                self.shared.fills_ok()?;
                return Ok(Ticket::Durable);
            }
            return self.shared.enqueue(&self.link, g, &self.proxy);
        }
        // Passive group commit: dirty before taking a GSN; the floor bounds every GSN we use.
        let mut dirty_word = 0;
        if let Some(c) = &self.cell {
            c.bind_current_thread();
            c.staged().store(BUSY | self.last, SeqCst);
            let (w, floor) = commit::mark_dirty(c.word());
            dirty_word = w;
            self.tx = self.tx.max(floor);
        }
        let r = self.insert(req);
        if let Some(c) = &self.cell {
            // Every record this worker inserted is written and fenced: publish.
            let v = self.tx.max(dirty_word & !DIRTY);
            c.staged().store(v, SeqCst);
            if let Some(h) = &self.shared.cfg.after_insert {
                (h.0)();
            }
            c.publish(dirty_word, v);
        }
        let gsn = match r {
            Ok(g) => g,
            Err(e) => {
                let t = self.tx;
                self.end_txn(t);
                return Err(e);
            }
        };
        for &(slot, written) in &self.touched {
            if written {
                self.shared.pages.raise(slot, gsn);
            }
        }
        self.end_txn(gsn);
        self.commits += 1;
        if self.commits >= COMMIT_BATCH {
            self.proxy.shared(1, 1);
            self.shared
                .counters
                .commits
                .fetch_add(self.commits, Relaxed);
            self.commits = 0;
        }
        match self.shared.mode {
            Mode::Immediate => {
                self.shared.fills_ok()?;
                Ok(Ticket::Durable)
            }
            Mode::Passive | Mode::Watermark => self.shared.enqueue(&self.link, gsn, &self.proxy),
        }
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        self.touched.clear();
        self.tx = self.last;
    }
}

/// Insert one record into log `l` under its lock, with a GSN above `floor`, counting its
/// shared writes in `proxy`; returns the GSN.
#[allow(clippy::too_many_arguments)]
fn insert_one(
    s: &Shared,
    proxy: &ProxyCounter,
    l: usize,
    floor: u64,
    kind: Kind,
    flags: u8,
    txn: u64,
    payload: &[&[u8]],
) -> Result<u64, WalError> {
    let log = &s.logs[l];
    let mut g = log.inner.lock();
    let track = s.mode == Mode::Watermark;
    let (gsn, _) = log.insert_locked(&mut g, &s.cfg, floor, kind, flags, txn, payload, track)?;
    // The append; the log's lock (lock and unlock) on the line of its clock; the pending
    // queue's entry in watermark mode.
    proxy.append(g.writer.cost());
    proxy.shared(2, 1 + u64::from(track));
    Ok(gsn)
}
