//! A gsn worker: the transaction's GSN kept as a Lamport clock over the page clocks it reads
//! and writes, the log inserts of a commit (one record to the worker's log, or with page-level
//! partitioning one part per log and a commit record) and passive group commit's dirty /
//! publish around them (Wang & Johnson Sections 3.1, 3.3 and 4.1).
//!
//! Per-update records ([`crate::scheme::Records::Update`], Section 3.1's "every log record"):
//! each [`SchemeWorker::log_update`] inserts one `Redo` record without COMMIT, stamped
//! `max(tx, page, log) + 1`, into the worker's own log (transaction-level partitioning) or the
//! page's log (page-level), and raises the page's clock to it. The commit inserts a `Commit`
//! record (payload: the number of update records) into the worker's own log under either
//! partitioning, so no log is written by every worker; recovery replays the transaction only
//! when it finds the commit record and every update record it counts. An abort of a
//! transaction that logged updates inserts an `Abort` record: recovery would skip the
//! transaction without it (no commit record), but a standby needs it to stop holding its bound
//! below the transaction's records (`follow.rs`). With passive group commit the worker is
//! dirty from its first insert to its commit's publish: between inserts it stages its GSN (all
//! its records up to it are written), so a straggler signal can publish on its behalf while
//! the transaction runs; its next insert sets the dirty bit again. Before each record reserves
//! log space the worker notes the log's tail in the scheme's [`OpenTxns`] (once per log per
//! transaction), so a checkpoint keeps the log from the first record of every open
//! transaction.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use braid_pmem::signal::{self, BUSY, DIRTY, PublishCell};

use super::commit::{self, Link};
use super::config::{NO_COMMAND_LOGGING, Partition};
use super::deps::{ALL_LOGS, FLAG_FLOOR};
use super::log::Mode;
use super::pages;
use super::reads::ReadMarks;
use super::recovery::FLAG_LOCAL;
use super::shared::Shared;
use crate::WalError;
use crate::payload::{RedoBuf, decode_redo};
use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, Kind};
use crate::scheme::UpdateRecord;
use crate::scheme::key_range::inclusive;
use crate::scheme::open_txns::OpenSlot;
use crate::scheme::{AccessSet, CommitRequest, LogKind, RowRef, SchemeWorker, Ticket};

/// A miss over more pages than this reads every log's clock instead of the pages' clocks
/// ([`GsnWorker::on_absent`]).
const MAX_ABSENT_PAGES: u64 = 64;

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
    /// Passive group commit: the worker's published word.
    dirty: Dirty,
    /// This worker's commit-queue lane and statistics.
    lane: Arc<super::shared::Lane>,
    proxy: ProxyCounter,
    /// This worker's slots in the scheme's open transactions (claimed at its first update
    /// record).
    open: Option<OpenSlot>,
    /// The transaction with update records in the log and no commit or abort record yet.
    logging: Option<u64>,
    /// Update records it inserted so far.
    logged: u32,
    /// RFA: the running transaction touched a page whose writer is another log (or several)
    /// above the acknowledged GSN, so its commit needs a remote flush.
    remote: bool,
    /// Autonomous commit: what that remote flush is, the transaction's sparse dependency
    /// vector ((log, GSN), at most one entry per log; [`ALL_LOGS`] for every log).
    deps: Vec<(u16, u64)>,
    /// Command logging: the pages this transaction marked pending (`reads.rs`).
    war: ReadMarks,
    /// Command logging: the transaction's replay floor (`deps.rs`), the largest page clock or
    /// read GSN it took its GSN above that is not one of its own raises ([`Self::see`]).
    floor: u64,
    /// Command logging: the pages this transaction raised, each with the clock its last raise
    /// left.
    raised: Vec<(usize, u64)>,
}

/// What a commit's insert into its own log decided.
struct Inserted {
    gsn: u64,
    /// The commit record's end in the worker's own log.
    end: crate::Lsn,
    /// RFA: acknowledged by that log's flush alone (the record carries [`FLAG_LOCAL`]).
    local: bool,
    /// Autonomous commit: no commit of that log before it waited for another log when it was
    /// inserted.
    alone: bool,
}

/// Passive group commit's worker side around one insert (see `commit.rs`): before it, the
/// staged word is busy and the dirty bit set; after it, the staged word is the worker's GSN.
struct Dirty {
    cell: Option<Arc<PublishCell>>,
    /// The word as the last [`commit::mark_dirty`] left it (0: not dirty).
    word: u64,
}

impl Dirty {
    /// Before taking a GSN: mark busy and dirty; raise `tx` to the published floor.
    fn begin(&mut self, last: u64, tx: &mut u64) {
        if let Some(c) = &self.cell {
            c.bind_current_thread();
            c.staged().store(BUSY | last, SeqCst);
            let (w, floor) = commit::mark_dirty(c.word());
            self.word = w;
            *tx = (*tx).max(floor);
        }
    }

    /// Between the inserts of a transaction: every record up to `tx` is written, and later
    /// ones take larger GSNs, so a straggler signal may publish `tx`.
    fn between(&self, tx: u64) {
        if let Some(c) = &self.cell {
            c.staged().store(tx, SeqCst);
        }
    }

    /// After the transaction's last insert: publish `tx` (at least the floor), clearing the
    /// dirty bit; returns the value published.
    fn publish(&mut self, tx: u64, hook: Option<&super::config::Hook>) -> u64 {
        let Some(c) = &self.cell else { return tx };
        let v = tx.max(self.word & !DIRTY);
        c.staged().store(v, SeqCst);
        if let Some(h) = hook {
            (h.0)();
        }
        // False if the handler published meanwhile (the staged value, the same `v`).
        c.publish(self.word, v);
        self.word = 0;
        v
    }
}

impl Drop for GsnWorker {
    fn drop(&mut self) {
        self.shared.retire(&self.lane);
        if let Some(c) = self.dirty.cell.take() {
            self.shared.cells.lock().retain(|x| !Arc::ptr_eq(x, &c));
            // Its word no longer holds the daemon's bound back.
            self.shared.daemon_wait.notify();
        }
    }
}

impl GsnWorker {
    /// Worker `worker` of the scheme, logging to log `worker mod n` (transaction-level
    /// partitioning); with passive group commit it claims a publish cell.
    pub(super) fn new(shared: Arc<Shared>, worker: usize) -> Result<GsnWorker, WalError> {
        let cell = if shared.mode == Mode::Passive {
            let c = Arc::new(PublishCell::claim().ok_or_else(|| WalError::TooMany {
                what: "passive group commit: worker cells",
                max: signal::CELLS,
                remedy: "run fewer workers at once with passive group commit",
            })?);
            #[cfg(test)]
            c.mute_handler(shared.cfg.mute_signal_handler);
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
            dirty: Dirty { cell, word: 0 },
            lane: shared.lane(),
            proxy: shared.board.counter(),
            open: None,
            logging: None,
            logged: 0,
            remote: false,
            deps: Vec::new(),
            war: ReadMarks::default(),
            floor: 0,
            raised: Vec::new(),
        })
    }

    fn end_txn(&mut self, gsn: u64) {
        self.release_marks();
        self.forget_accesses();
        self.deps.clear();
        self.tx = gsn;
        self.last = gsn;
    }

    /// Forget what the running transaction touched (its pages, its remote flag, its replay
    /// floor and raises).
    fn forget_accesses(&mut self) {
        self.touched.clear();
        self.remote = false;
        self.floor = 0;
        self.raised.clear();
    }

    /// Command logging: take back the running transaction's pending marks.
    fn release_marks(&mut self) {
        if let Some(r) = &self.shared.reads {
            self.war.release(r);
        }
    }

    /// This worker's log number as a page's writer (logs are fewer than [`pages::MULTI`]
    /// when RFA is on: `open.rs` checks).
    fn writer(&self) -> u16 {
        self.home as u16
    }

    /// Command logging: the transaction saw page `slot` at clock `gsn` with writer `w`; raise
    /// the replay floor to it unless it is the transaction's own raise, unchanged (the word
    /// still names this log and holds what the raise left: no other log's write came after it,
    /// and every write before it is at or below the word the raise replaced, which the floor
    /// took then). A transaction of this worker's own log that it follows precedes it in the
    /// log, and re-execution keeps each log's order, so the floor leaves the log out only for
    /// the transaction's own raises; any other own-log write still counts.
    fn see(&mut self, slot: usize, gsn: u64, w: u16) {
        if self.shared.reads.is_none() {
            return;
        }
        let own = w == self.writer() && self.raised.iter().any(|&(s, g)| s == slot && g == gsn);
        if !own {
            self.floor = self.floor.max(gsn);
        }
    }

    /// Raise page `slot`'s clock to `gsn` for a write of this worker's log: with RFA, naming
    /// the log as the page's writer, where `acked` is the acknowledged GSN (read once per
    /// batch of raises: [`Self::acked`]; autonomous commit reads each writer's settled GSN).
    fn raise(&self, slot: usize, gsn: u64, acked: u64) -> u64 {
        let s = &*self.shared;
        if s.autonomous {
            s.pages
                .raise_by(slot, gsn, self.writer(), |w| s.settled_of(w))
        } else if s.rfa() {
            s.pages.raise_by(slot, gsn, self.writer(), |_| acked)
        } else {
            s.pages.raise(slot, gsn)
        }
    }

    /// Autonomous commit: the transaction depends on log `w`'s writes up to `gsn`
    /// ([`ALL_LOGS`]: every log's).
    fn depend(&mut self, w: u16, gsn: u64) {
        self.remote = true;
        match self.deps.iter_mut().find(|e| e.0 == w) {
            Some(e) => e.1 = e.1.max(gsn),
            None => self.deps.push((w, gsn)),
        }
    }

    /// The acknowledged GSN for [`Self::raise`] (not read without RFA).
    fn acked(&self) -> u64 {
        if self.shared.rfa() {
            self.shared.acked.load(SeqCst)
        } else {
            0
        }
    }

    /// Insert the transaction's records; returns its commit GSN and, when the whole
    /// transaction went to the worker's own log, what that insert decided. `self.tx` follows
    /// every insert. `rfa`: see [`insert_one`].
    fn insert(
        &mut self,
        req: &CommitRequest<'_>,
        rfa: Option<bool>,
    ) -> Result<(u64, Option<Inserted>), WalError> {
        let s = &*self.shared;
        let n = s.logs.len();
        let ef = crate::scheme::cut::epoch_flag(req.epoch);
        if s.cfg.partition == Partition::Transaction || n == 1 {
            let (floored, floor) = self.floor_of(req);
            let ins = insert_one(
                s,
                &self.proxy,
                self.home,
                self.tx,
                req.kind.record_kind(),
                FLAG_COMMIT | ef | floored,
                req.txn,
                &[&floor, req.payload][usize::from(floored == 0)..],
                rfa.map(|ok| (ok, &[][..])),
            )?;
            self.tx = ins.gsn;
            return Ok((ins.gsn, Some(ins)));
        }
        for p in &mut self.parts {
            p.clear();
        }
        let rpp = s.pages.rows_per_page();
        if req.writes.is_empty() {
            // The caller did not say what it wrote: find it in the redo payload.
            for op in decode_redo(req.payload) {
                let op = op.map_err(|source| {
                    WalError::Misuse(crate::Misuse::Payload {
                        scheme: "gsn",
                        source,
                    })
                })?;
                let page = pages::PageId::of(op.table(), op.key(), rpp);
                self.parts[(page.number() % n as u64) as usize].push(&op);
            }
        } else {
            for w in req.writes {
                let page = pages::PageId::of(w.table, w.key, rpp);
                let op = w.op_in(req.payload, "gsn")?;
                self.parts[(page.number() % n as u64) as usize]
                    .bytes
                    .extend_from_slice(op);
            }
        }
        // Page-level partitioning over several logs: RFA is off (`open.rs` refuses it).
        let touched: Vec<usize> = (0..n).filter(|&l| !self.parts[l].is_empty()).collect();
        if touched.len() == 1 {
            let l = touched[0];
            let ins = insert_one(
                s,
                &self.proxy,
                l,
                self.tx,
                Kind::Redo,
                FLAG_COMMIT | ef,
                req.txn,
                &[&self.parts[l].bytes],
                None,
            )?;
            self.tx = ins.gsn;
            return Ok((ins.gsn, None));
        }
        for &l in &touched {
            let ins = insert_one(
                s,
                &self.proxy,
                l,
                self.tx,
                Kind::Redo,
                ef,
                req.txn,
                &[&self.parts[l].bytes],
                None,
            )?;
            self.tx = ins.gsn;
        }
        let ins = self.insert_commit_record(req, touched.len() as u32, None, &[])?;
        Ok((ins.gsn, None))
    }
}

impl SchemeWorker for GsnWorker {
    fn on_read(&mut self, row: RowRef<'_>) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        let (g, w) = p.get_with_writer(slot);
        self.tx = self.tx.max(g);
        self.see(slot, g, w);
        self.touched.push((slot, false));
    }

    /// A read that found no row (a point miss, or the part of a scan with no row left): the
    /// missing row's delete raised its page's clock before its commit took the key out of the
    /// index, so reading the clocks of the pages the miss covers orders this transaction after
    /// that delete (RAW), as [`Self::on_read`] does for a row that is there; a read-only
    /// transaction then waits for it like for any write it read. A range of more than
    /// [`MAX_ABSENT_PAGES`] pages takes every log's clock instead (each log's last GSN: a
    /// committed delete's commit record is in its log, at or above its page's raise), and under
    /// RFA counts as touching another log's volatile write.
    fn on_absent(&mut self, table: u32, lo: Bound<u64>, hi: Bound<u64>) {
        let Some((a, b)) = inclusive(lo, hi) else {
            return;
        };
        let p = &self.shared.pages;
        let rpp = p.rows_per_page();
        let (first, last) = (a / rpp, b / rpp);
        if last - first < MAX_ABSENT_PAGES {
            for page in first..=last {
                let p = &self.shared.pages;
                let slot = p.slot(table, page * rpp);
                let (g, w) = p.get_with_writer(slot);
                self.tx = self.tx.max(g);
                self.see(slot, g, w);
                self.touched.push((slot, false));
            }
        } else {
            self.tx = self.tx.max(self.shared.max_clock());
            self.floor = self.floor.max(self.tx);
            // Command logging: an insert into the range must follow this transaction.
            self.war.wide |= self.shared.reads.is_some();
            if self.shared.autonomous {
                self.depend(ALL_LOGS, self.tx);
            } else {
                self.remote = self.shared.rfa();
            }
        }
    }

    /// Command logging under OCC: wait for the pending readers of the pages written and mark
    /// the pages read pending (`reads.rs`).
    fn before_validate(&mut self, _rows: &dyn AccessSet) {
        if let Some(r) = &self.shared.reads {
            let (war, touched) = (&mut self.war, &self.touched);
            above_reads(&mut self.floor, &mut self.tx, |g| {
                war.before_validate(r, touched, g)
            });
        }
    }

    /// Command logging: a transaction that writes marks the pages of a range it scanned
    /// pending before the engine recounts it, and raises their read GSNs at commit, so that
    /// an insert into the range is re-executed after it (`reads.rs`).
    fn on_scan(&mut self, table: u32, lo: Bound<u64>, hi: Bound<u64>) {
        if let Some(r) = &self.shared.reads
            && let Some(range) = inclusive(lo, hi)
        {
            let pages = &self.shared.pages;
            let max = MAX_ABSENT_PAGES;
            self.war
                .scanned(r, pages, table, range, max, &mut self.touched);
        }
    }

    /// Command logging: an insert follows every reader of its page, and every wide reader.
    fn on_insert(&mut self, table: u32, key: u64) {
        if let Some(r) = &self.shared.reads {
            let slot = self.shared.pages.slot(table, key);
            above_reads(&mut self.floor, &mut self.tx, |g| {
                ReadMarks::inserted(r, slot, g)
            });
        }
    }

    fn on_write(&mut self, row: RowRef<'_>) {
        let p = &self.shared.pages;
        let slot = p.slot(row.table, row.key);
        let g = self.tx.max(p.get(slot)) + 1;
        if self.shared.reads.is_some() {
            // Command logging (autonomous, so RFA): the floor takes the word this raise
            // replaces, which holds every earlier write of the page.
            let s = &*self.shared;
            let ((bg, bw), after) = s
                .pages
                .raise_by_seen(slot, g, self.writer(), |w| s.settled_of(w));
            self.see(slot, bg, bw);
            match self.raised.iter_mut().find(|e| e.0 == slot) {
                Some(e) => e.1 = after,
                None => self.raised.push((slot, after)),
            }
            self.tx = after;
        } else {
            self.tx = self.raise(slot, g, self.acked());
        }
        self.touched.push((slot, true));
    }

    fn log_update(&mut self, up: &UpdateRecord<'_>) -> Result<(), WalError> {
        let s = &*self.shared;
        let n = s.logs.len();
        let slot = s.pages.slot(up.row.table, up.row.key);
        let l = if s.cfg.partition == Partition::Page && n > 1 {
            (s.pages.page(up.row.table, up.row.key).number() % n as u64) as usize
        } else {
            self.home
        };
        if self.open.is_none() {
            self.open = Some(s.open.claim()?);
        }
        // The Lamport rule: above the transaction's GSN, the page's and (in the insert) the
        // log's.
        self.tx = self.tx.max(s.pages.get(slot));
        self.dirty.begin(self.last, &mut self.tx);
        if let Some(o) = &self.open {
            let stream = &s.logs[l].stream;
            o.note(l, || stream.tail());
        }
        self.logging = Some(up.txn);
        let r = insert_one(
            s,
            &self.proxy,
            l,
            self.tx,
            Kind::Redo,
            0,
            up.txn,
            &[up.payload],
            None,
        );
        if let Ok(ins) = &r {
            self.tx = ins.gsn;
            self.raise(slot, ins.gsn, self.acked());
            self.logged += 1;
        }
        self.dirty.between(self.tx);
        r.map(|_| ())
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        if req.kind == LogKind::Command && self.shared.reads.is_none() {
            return Err(WalError::Unsupported(crate::Unsupported::Scheme {
                scheme: "gsn",
                refused: crate::Refused::CommandLogging,
                why: NO_COMMAND_LOGGING,
            }));
        }
        self.proxy.commit();
        let rfa = self.shared.rfa();
        // Re-read the clocks of every page touched (see the module doc: OCC); with RFA, note
        // whether one was written by another log above the acknowledged GSN (Haubenschild et
        // al. 2020, Section 4.3: "a transaction needs a remote flush if it accessed a page
        // whose last modification by another worker is not yet flushed").
        // Autonomous commit: the page's writer log, settled up to its GSN, is a dependency
        // (Nguyen et al. 2025: the sparse per-transaction vector).
        let acked = self.shared.acked.load(SeqCst);
        for i in 0..self.touched.len() {
            let slot = self.touched[i].0;
            let (g, w) = self.shared.pages.get_with_writer(slot);
            self.tx = self.tx.max(g);
            self.see(slot, g, w);
            if rfa && g > acked && w != self.writer() {
                if !self.shared.autonomous {
                    self.remote = true;
                } else if g > self.shared.settled_of(w) {
                    self.depend(w, g);
                }
            }
        }
        if let Some(r) = &self.shared.reads {
            let touched = &self.touched;
            above_reads(&mut self.floor, &mut self.tx, |g| {
                ReadMarks::before_insert(r, touched, g)
            });
        }
        let updates = self.logging.is_some();
        if !updates && (req.read_only || req.payload.is_empty()) {
            self.release_marks();
            let g = self.tx;
            let remote = self.remote;
            let deps = std::mem::take(&mut self.deps);
            self.forget_accesses();
            if g == 0 || self.shared.mode == Mode::Immediate {
                self.shared.fills_ok()?;
                return Ok(Ticket::DURABLE);
            }
            if self.shared.autonomous {
                self.count_deps(&deps);
                return crate::scheme::autonomous::ack::read_ticket(
                    &self.shared,
                    self.home,
                    g,
                    deps,
                );
            }
            if rfa {
                let log = &self.shared.logs[self.home];
                // What it read is in its own log (below the tail) or durable everywhere,
                // unless its log holds a commit still waiting for a remote flush.
                if !remote && log.remote_gsn.load(SeqCst) <= self.shared.acked.load(SeqCst) {
                    self.lane.count_rfa(true);
                    return Ok(Ticket::stream(log.stream.clone(), log.stream.tail()));
                }
                self.lane.count_rfa(false);
            }
            return self.shared.enqueue(&self.link, &self.lane, g, &self.proxy);
        }
        // Passive group commit: dirty before taking a GSN; the floor bounds every GSN we use.
        self.dirty.begin(self.last, &mut self.tx);
        let local_ok = rfa.then_some(!self.remote);
        let deps = std::mem::take(&mut self.deps);
        let r = if updates {
            self.insert_commit_record(req, self.logged, local_ok, &deps)
                .map(|ins| (ins.gsn, Some(ins)))
        } else if !deps.is_empty() {
            // Autonomous commit with dependencies: the redo record without COMMIT, then a
            // commit record that carries them (`deps.rs`; the epoch is decided before either
            // is inserted, so a checkpoint's cut judges both by the commit record).
            self.insert_part_and_commit(req, &deps)
                .map(|ins| (ins.gsn, Some(ins)))
        } else {
            self.insert(req, local_ok)
        };
        // Every record this worker inserted is written and fenced: publish.
        self.dirty
            .publish(self.tx, self.shared.cfg.after_insert_hook());
        if updates {
            self.close_txn();
        }
        let (gsn, own) = match r {
            Ok(x) => x,
            Err(e) => {
                // Published without joining the queue: the daemon may be parked waiting for
                // the publication.
                self.shared.daemon_wait.notify();
                let t = self.tx;
                self.end_txn(t);
                return Err(e);
            }
        };
        let acked = self.acked();
        for &(slot, written) in &self.touched {
            if written {
                self.raise(slot, gsn, acked);
            }
        }
        if let Some(r) = &self.shared.reads {
            // Before the engine installs the writes and releases the locks (`reads.rs`).
            self.war.committed(r, &self.touched, gsn);
        }
        self.end_txn(gsn);
        self.lane.count_commit();
        match self.shared.mode {
            Mode::Immediate => {
                self.shared.fills_ok()?;
                Ok(Ticket::DURABLE)
            }
            Mode::Passive | Mode::Watermark => match own {
                Some(ins) if self.shared.autonomous => {
                    self.count_deps(&deps);
                    if ins.local && ins.alone {
                        // No earlier commit of this log waits for another log: acknowledged
                        // by this log's flush.
                        let log = &self.shared.logs[self.home];
                        return Ok(Ticket::stream(log.stream.clone(), ins.end));
                    }
                    Ok(crate::scheme::autonomous::ack::commit_ticket(
                        &self.shared,
                        self.home,
                        gsn,
                    ))
                }
                Some(ins) if rfa => {
                    self.lane.count_rfa(ins.local);
                    if ins.local {
                        // The commit daemon is not asked to move the acknowledged GSN past it:
                        // a commit that finds this one's pages remote asks it (a round costs
                        // clock records in every log; asked by every local commit, they cost
                        // more than the rare remote flush saves, 21-25 K against 27-29 K
                        // YCSB commits/s at 4 threads on the root disk).
                        let log = &self.shared.logs[self.home];
                        return Ok(Ticket::stream(log.stream.clone(), ins.end));
                    }
                    self.shared
                        .enqueue(&self.link, &self.lane, gsn, &self.proxy)
                }
                _ => self
                    .shared
                    .enqueue(&self.link, &self.lane, gsn, &self.proxy),
            },
        }
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        self.release_marks();
        let Some(txn) = self.logging else {
            self.forget_accesses();
            self.deps.clear();
            self.tx = self.last;
            return;
        };
        // An abort record, so a standby stops waiting for the commit record (recovery skips
        // the transaction either way). A failure to insert it (a poisoned log) is reported
        // by the next commit.
        let s = &*self.shared;
        self.dirty.begin(self.last, &mut self.tx);
        if let Ok(ins) = insert_one(
            s,
            &self.proxy,
            self.home,
            self.tx,
            Kind::Abort,
            0,
            txn,
            &[],
            None,
        ) {
            self.tx = ins.gsn;
        }
        self.dirty.publish(self.tx, None);
        // The daemon may be parked waiting for this worker's publication.
        s.daemon_wait.notify();
        self.close_txn();
        let t = self.tx;
        self.end_txn(t);
    }
}

impl GsnWorker {
    /// The commit record of a transaction whose `parts` records are in the logs (its update
    /// records, or its page-partitioned parts), in the worker's own log whatever the
    /// partitioning (a log that every worker's commits wrote would be a central log again):
    /// payload the number of parts. Returns its GSN.
    fn insert_commit_record(
        &mut self,
        req: &CommitRequest<'_>,
        parts: u32,
        rfa: Option<bool>,
        deps: &[(u16, u64)],
    ) -> Result<Inserted, WalError> {
        let ef = crate::scheme::cut::epoch_flag(req.epoch);
        let payload = super::deps::encode_commit(parts, deps);
        let ins = insert_one(
            &self.shared,
            &self.proxy,
            self.home,
            self.tx,
            Kind::Commit,
            FLAG_COMMIT | ef,
            req.txn,
            &[&payload],
            rfa.map(|ok| (ok, deps)),
        )?;
        self.tx = ins.gsn;
        Ok(ins)
    }

    /// Autonomous commit of a transaction without update records that depends on other logs:
    /// its redo record as a part, then its commit record with `deps`.
    fn insert_part_and_commit(
        &mut self,
        req: &CommitRequest<'_>,
        deps: &[(u16, u64)],
    ) -> Result<Inserted, WalError> {
        let ef = crate::scheme::cut::epoch_flag(req.epoch);
        let (floored, floor) = self.floor_of(req);
        let part = insert_one(
            &self.shared,
            &self.proxy,
            self.home,
            self.tx,
            req.kind.record_kind(),
            ef | floored,
            req.txn,
            &[&floor, req.payload][usize::from(floored == 0)..],
            None,
        )?;
        self.tx = part.gsn;
        self.insert_commit_record(req, 1, Some(false), deps)
    }

    /// A command record's replay floor: [`FLAG_FLOOR`] and the floor's bytes, the payload's
    /// start (`deps.rs`); no flag for a data record.
    fn floor_of(&self, req: &CommitRequest<'_>) -> (u8, [u8; 8]) {
        if req.kind == LogKind::Command && self.shared.reads.is_some() {
            (FLAG_FLOOR, self.floor.to_le_bytes())
        } else {
            (0, [0; 8])
        }
    }

    /// Autonomous commit: count a commit's dependencies (read-only ones included).
    fn count_deps(&self, deps: &[(u16, u64)]) {
        self.lane.count_rfa(deps.is_empty());
        if deps.is_empty() {
            return;
        }
        let all = deps.iter().any(|d| d.0 == ALL_LOGS);
        let logs = if all {
            self.shared.logs.len() as u64 - 1
        } else {
            deps.len() as u64
        };
        self.lane.count_deps(logs, all);
    }

    /// The transaction's commit or abort record is in the log (or failed): forget it.
    fn close_txn(&mut self) {
        self.logging = None;
        self.logged = 0;
        if let Some(o) = &self.open {
            o.clear();
        }
    }
}

/// Command logging: `raise` takes a GSN above read GSNs (`reads.rs`); the replay floor and the
/// transaction's GSN both go above them.
fn above_reads(floor: &mut u64, tx: &mut u64, raise: impl FnOnce(&mut u64)) {
    raise(floor);
    *tx = (*tx).max(*floor);
}

/// Insert one record into log `l` under its lock, with a GSN above `floor`, counting its
/// shared writes in `proxy`.
///
/// `rfa` is `Some` for a commit record under Remote Flush Avoidance: `Some((true, _))` if the
/// transaction touched no page another log wrote above the acknowledged GSN. Under the log's
/// lock, so that no commit of this log slips between the check and the insert, the commit is
/// then *local* (acknowledged by this log's flush alone, and marked [`FLAG_LOCAL`] for
/// recovery) only if every earlier commit of this log that needed a remote flush is
/// acknowledged (`remote_gsn`): a transaction may depend on any earlier commit of its own
/// log without touching another log's page. A commit that is not local raises `remote_gsn`.
///
/// Autonomous commit: a commit without dependencies is local whatever came before it in its
/// log (recovery replays it only if every earlier commit of its log is replayed, and its
/// ticket waits for those that wait for other logs: `alone`); one with dependencies (the
/// second field) joins the log's queue of commits that are not yet settled.
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
    rfa: Option<(bool, &[(u16, u64)])>,
) -> Result<Inserted, WalError> {
    let log = &s.logs[l];
    let mut g = log.inner.lock();
    let track = s.mode == Mode::Watermark;
    let local = match rfa {
        Some((ok, _)) if s.autonomous => ok,
        Some((ok, _)) => ok && log.remote_gsn.load(SeqCst) <= s.acked.load(SeqCst),
        None => false,
    };
    if s.autonomous {
        crate::scheme::autonomous::ack::advance_locked(s, log, &mut g);
    }
    let alone = g.remote.is_empty();
    let flags = if local { flags | FLAG_LOCAL } else { flags };
    let (gsn, end) = log.insert_locked(&mut g, &s.cfg, floor, kind, flags, txn, payload, track)?;
    match rfa {
        Some((false, deps)) if s.autonomous => g.remote.push_back((gsn, deps.to_vec())),
        Some(_) if !local => {
            // GSNs grow within a log (under this lock): a store keeps the largest.
            log.remote_gsn.store(gsn, SeqCst);
        }
        _ => {}
    }
    // The append; the log's lock (lock and unlock) on the line of its clock; the pending
    // queue's entry in watermark mode.
    proxy.append(g.writer.cost());
    proxy.shared(2, 1 + u64::from(track));
    Ok(Inserted {
        gsn,
        end,
        local,
        alone,
    })
}
