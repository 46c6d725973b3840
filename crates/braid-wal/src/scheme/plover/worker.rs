//! A Plover worker: it notes the partitions a transaction reads, and at commit splits the
//! transaction's redo operations by partition, takes the global sequence number under the
//! latches of every partition it accessed (`seq.rs`), reserves one record's space in each of
//! those logs while it holds them (which orders every log by sequence number), encodes and
//! copies the records after releasing them, and returns a ticket that waits for everything the
//! transaction may depend on to be durable (see the module doc of `super` for why that is more
//! than its own records).

use std::sync::Arc;

use super::partition::Split;
use super::record;
use super::{NO_COMMAND_LOGGING, Shared};
use crate::proxy::ProxyCounter;
use crate::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use crate::scheme::cut::epoch_flag;
use crate::scheme::{
    AccessSet, CommitRequest, DurabilityWait, LogKind, RowRef, SchemeWorker, Ticket,
};
use crate::stream::{Reserved, StreamWriter};
use crate::{Lsn, WalError};

/// A worker's handle on the shared state for its tickets: each ticket clones the worker's
/// link, whose reference count lives in the worker's own allocation, rather than the shared
/// state's, which every worker's commits would write.
pub(super) struct Link(pub(super) Arc<Shared>);

/// One worker thread's view of the scheme.
pub(super) struct PloverWorker {
    link: Arc<Link>,
    /// One writer per log.
    writers: Vec<StreamWriter>,
    split: Split,
    /// The transaction scanned a range (it read every partition).
    scanned: bool,
    /// The records reserved under the latches, by partition, to be filled after them.
    reserved: Vec<(usize, Reserved)>,
    stamp: Stamp,
    proxy: ProxyCounter,
}

impl PloverWorker {
    pub(super) fn new(sh: Arc<Shared>) -> Result<PloverWorker, WalError> {
        let mut writers = sh
            .streams
            .iter()
            .map(|s| s.writer())
            .collect::<Result<Vec<_>, _>>()?;
        // Every record is waited for or checked through its ticket, which waits for or checks
        // each stream, and such a waiter flushes it itself when no flush is under way
        // (`stream/lead.rs`).
        for w in &mut writers {
            w.set_commits_waited(true);
        }
        Ok(PloverWorker {
            writers,
            split: Split::new(sh.streams.len()),
            scanned: false,
            reserved: Vec::new(),
            stamp: record::stamp(0, 0),
            proxy: sh.board.counter(),
            link: Arc::new(Link(sh)),
        })
    }

    fn end_txn(&mut self) {
        self.split.clear();
        self.scanned = false;
    }

    /// A ticket that resolves once every log is durable up to `lsns` (one per log).
    fn ticket(&self, lsns: Vec<Lsn>) -> Ticket {
        let sh = &self.link.0;
        if sh.streams.len() == 1 {
            return Ticket::stream(sh.streams[0].clone(), lsns[0]);
        }
        Ticket::waiter(Box::new(PloverWait {
            link: Arc::clone(&self.link),
            lsns,
        }))
    }

    /// Append the transaction's records; returns, per log, what its ticket waits for.
    fn append(&mut self, req: &CommitRequest<'_>) -> Result<Vec<Lsn>, WalError> {
        let sh = Arc::clone(&self.link.0);
        sh.check()?;
        self.split.add_writes(req)?;
        let mut mask = self.split.written | self.split.read;
        if self.scanned {
            mask |= self.split.all();
        }
        let parts = mask.count_ones();
        let flags = FLAG_COMMIT | epoch_flag(req.epoch);
        let held = sh.seqs.take(mask);
        // Each latch: a lock and an unlock on the line of its counter.
        self.proxy.shared(2 * u64::from(parts), u64::from(parts));
        // Everything this transaction can depend on was appended before it held these
        // latches: the other logs' tails now bound it.
        let mut lsns: Vec<Lsn> = sh
            .streams
            .iter()
            .enumerate()
            .map(|(p, s)| if mask & (1 << p) != 0 { 0 } else { s.tail() })
            .collect();
        record::restamp(&mut self.stamp, held.seq(), parts);
        // Under the latches, only the records' places in their logs are taken: the
        // reservations order each log as the latches do (by sequence number). The records are
        // encoded and copied after the latches go, so that two transactions sharing a log
        // serialise on a compare-and-swap of its tail, not on the copy of their records.
        let mut failed = None;
        for p in held.partitions() {
            let parts = [self.split.ops[p].bytes.as_slice()];
            let spec = redo_spec(flags, req.txn, &self.stamp, &parts);
            match spec.check().and_then(|len| self.writers[p].reserve(len)) {
                Ok(r) => self.reserved.push((p, r)),
                Err(e) => {
                    // The records reserved so far will be in their logs: at recovery they
                    // would cut every later record of those logs, acknowledged or not.
                    // Nothing may be acknowledged from now on (set before the latches go,
                    // so every later record's ticket sees it).
                    sh.break_with(&e);
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(held);
        for (p, r) in self.reserved.drain(..) {
            let parts = [self.split.ops[p].bytes.as_slice()];
            let spec = redo_spec(flags, req.txn, &self.stamp, &parts);
            let (_, end) = self.writers[p].fill(r, |lsn, synced, salt, out| {
                spec.encode(lsn, synced, salt, out)
            });
            lsns[p] = end;
            self.proxy.append(self.writers[p].cost());
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(lsns),
        }
    }
}

/// The record of one partition's redo operations.
fn redo_spec<'a>(flags: u8, txn: u64, stamp: &'a Stamp, parts: &'a [&'a [u8]]) -> RecordSpec<'a> {
    RecordSpec {
        kind: Kind::Redo,
        flags,
        txn,
        stamp,
        payload: parts,
    }
}

impl SchemeWorker for PloverWorker {
    fn on_read(&mut self, row: RowRef<'_>) {
        self.split.on_read(row.table, row.key);
    }

    fn on_scan(&mut self, _table: u32, _lo: std::ops::Bound<u64>, _hi: std::ops::Bound<u64>) {
        self.scanned = true;
    }

    fn commit(&mut self, req: &CommitRequest<'_>) -> Result<Ticket, WalError> {
        if req.kind == LogKind::Command {
            return Err(WalError::Unsupported(crate::Unsupported::Scheme {
                scheme: "plover",
                refused: crate::Refused::CommandLogging,
                why: NO_COMMAND_LOGGING,
            }));
        }
        self.proxy.commit();
        if req.read_only || req.payload.is_empty() {
            // Nothing to log; what it read may not be durable yet (early lock release).
            self.end_txn();
            let sh = &self.link.0;
            sh.check()?;
            let lsns = sh.streams.iter().map(|s| s.tail()).collect();
            return Ok(self.ticket(lsns));
        }
        let r = self.append(req);
        self.end_txn();
        Ok(self.ticket(r?))
    }

    fn abort(&mut self, _rows: &dyn AccessSet) {
        self.end_txn();
    }
}

/// A waiting commit: durable once every log is durable up to its entry.
struct PloverWait {
    link: Arc<Link>,
    lsns: Vec<Lsn>,
}

impl DurabilityWait for PloverWait {
    fn wait(&self) -> Result<(), WalError> {
        let sh = &self.link.0;
        for (s, &l) in sh.streams.iter().zip(&self.lsns) {
            s.wait_durable(l)?;
        }
        sh.check()
    }

    fn is_durable(&self) -> Result<bool, WalError> {
        let sh = &self.link.0;
        for (s, &l) in sh.streams.iter().zip(&self.lsns) {
            if !s.check_durable(l)? {
                return Ok(false);
            }
        }
        sh.check().map(|()| true)
    }
}
