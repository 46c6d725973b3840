//! The durable frontier of NV-Logging (Huang et al. 2014, Sections 4.3 and 5.2): marking log
//! objects persisted, moving the frontier over consecutive persisted entries without a lock,
//! the flush daemon's batches and the commits that persist what they depend on themselves
//! (flush-on-commit), and the tickets that resolve once the frontier passes them (see the
//! module docs of `log.rs`, "Acknowledgement without a global lock").

use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};

use braid_pmem::CACHE_LINE;

use super::FlushPolicy;
use super::layout;
use super::log::{FILLED, PERSISTED, PERSISTING, Shared, pack, unpack};
use crate::scheme::DurabilityWait;
use crate::{Lsn, WalError};

impl Shared {
    /// Mark `lsn` persisted (its object and its state word are durable).
    #[inline]
    pub(super) fn mark_persisted(&self, lsn: Lsn, lines: u64) {
        self.slots[self.layout.index_of(lsn)].store(pack(lsn, lines, PERSISTED), SeqCst);
    }

    /// Move the frontier over every consecutive persisted object; returns it.
    pub(crate) fn advance(&self) -> Lsn {
        self.advance_counted(&mut 0)
    }

    /// [`Shared::advance`], counting its compare-and-swaps on the frontier in `cas`.
    pub(crate) fn advance_counted(&self, cas: &mut u64) -> Lsn {
        loop {
            let f = self.frontier.load(SeqCst);
            let mut to = f;
            loop {
                let (l, _, phase) = unpack(self.slots[self.layout.index_of(to)].load(SeqCst));
                if l != to || phase != PERSISTED {
                    break;
                }
                to += 1;
            }
            if to == f {
                return f;
            }
            // A region whose persistence failed (a failed msync of a page-cache region, kept
            // by the region and recorded before the objects were marked) must not have
            // objects reported durable: poison the log instead of moving the frontier.
            if let Err(e) = self.region.check() {
                self.poison(&e.into());
                return f;
            }
            *cas += 1;
            if self
                .frontier
                .compare_exchange(f, to, SeqCst, SeqCst)
                .is_ok()
            {
                // Tickets may be parked waiting for it.
                self.progress.notify();
                // Keep going: objects past `to` may have been marked meanwhile.
                continue;
            }
        }
    }

    /// Persist the state word of `lsn` (its object is durable already).
    #[inline]
    pub(super) fn set_state(&self, lsn: Lsn) {
        let off = self.layout.state_off(lsn);
        self.region.store_u64(off, layout::state_word(lsn));
        self.region.flush(off, 8);
    }

    /// flush-on-commit: claim `lsn` if it is filled and persist it. True if the object is
    /// persistent now (by anyone).
    pub(crate) fn try_persist(&self, lsn: Lsn) -> bool {
        let slot = &self.slots[self.layout.index_of(lsn)];
        let w = slot.load(Acquire);
        let (l, lines, phase) = unpack(w);
        if l != lsn {
            return false;
        }
        match phase {
            PERSISTED => true,
            FILLED => {
                if slot
                    .compare_exchange(w, pack(lsn, lines, PERSISTING), AcqRel, Acquire)
                    .is_err()
                {
                    return false;
                }
                self.region
                    .flush(self.layout.slot_off(lsn), (lines as usize) * CACHE_LINE);
                self.region.fence();
                self.set_state(lsn);
                self.region.fence();
                self.mark_persisted(lsn, lines);
                true
            }
            _ => false,
        }
    }

    /// flush-on-commit, daemon side: claim every filled object in `[from, to)` (at most
    /// `max`), persist them with one fence for the objects and one for their state words.
    /// Returns how many were persisted.
    pub(crate) fn persist_batch(
        &self,
        from: Lsn,
        to: Lsn,
        max: usize,
        batch: &mut Vec<(Lsn, u64)>,
    ) -> usize {
        batch.clear();
        for lsn in from..to {
            if batch.len() >= max {
                break;
            }
            let slot = &self.slots[self.layout.index_of(lsn)];
            let w = slot.load(Acquire);
            let (l, lines, phase) = unpack(w);
            if l == lsn
                && phase == FILLED
                && slot
                    .compare_exchange(w, pack(lsn, lines, PERSISTING), AcqRel, Acquire)
                    .is_ok()
            {
                batch.push((lsn, lines));
            }
        }
        if batch.is_empty() {
            return 0;
        }
        for &(lsn, lines) in batch.iter() {
            self.region
                .flush(self.layout.slot_off(lsn), (lines as usize) * CACHE_LINE);
        }
        self.region.fence();
        for &(lsn, _) in batch.iter() {
            self.set_state(lsn);
        }
        self.region.fence();
        for &(lsn, lines) in batch.iter() {
            self.mark_persisted(lsn, lines);
        }
        self.daemon_persisted.fetch_add(batch.len() as u64, Relaxed);
        batch.len()
    }

    /// Block until every object below `end` is persistent: help (flush-on-commit), then wait
    /// in `progress` for whoever persists the rest to move the frontier.
    pub(crate) fn wait_durable(&self, end: Lsn) -> Result<(), WalError> {
        self.progress.wait(|| {
            if self.frontier.load(Acquire) >= end {
                return Some(Ok(()));
            }
            if let Some(e) = self.poisoned() {
                return Some(Err(e));
            }
            self.help(end);
            if self.advance() >= end {
                return Some(Ok(()));
            }
            // Closing persisted every filled object: what is missing now never comes.
            (self.stopped.load(Acquire) && self.advance() < end).then_some(Err(WalError::Closed(0)))
        })
    }

    /// Non-blocking: under flush-on-commit it persists the filled objects below `end` the
    /// daemon has not reached (bounded work, no waiting), as a committing transaction does.
    pub(crate) fn is_durable(&self, end: Lsn) -> Result<bool, WalError> {
        if self.frontier.load(Acquire) >= end {
            return Ok(true);
        }
        if let Some(e) = self.poisoned() {
            return Err(e);
        }
        self.help(end);
        Ok(self.advance() >= end)
    }

    /// flush-on-commit: persist every filled object between the frontier and `end` (Section
    /// 4.3: "if the object has not yet been asynchronously persisted, persistence is ensured by
    /// calling the procedure flush-on-insert").
    pub(super) fn help(&self, end: Lsn) {
        if self.opts.flush != FlushPolicy::Commit {
            return;
        }
        let f = self.frontier.load(Acquire);
        let mut helped = 0;
        for lsn in f..end {
            let slot = &self.slots[self.layout.index_of(lsn)];
            let was_filled = {
                let (l, _, phase) = unpack(slot.load(Acquire));
                l == lsn && phase == FILLED
            };
            if was_filled && self.try_persist(lsn) {
                helped += 1;
            }
        }
        if helped > 0 {
            self.helped.fetch_add(helped, Relaxed);
        }
    }

    /// Persist the tail hint (every LSN below `frontier` is persistent).
    pub(crate) fn persist_tail(&self, frontier: Lsn) {
        if self.region.load_u64(layout::TAIL_OFF) < frontier {
            self.region.store_u64(layout::TAIL_OFF, frontier);
            self.region.persist(layout::TAIL_OFF, 8);
        }
    }

    /// flush-on-commit: mark `lsn` filled (its object is in its slot, not yet written back).
    #[inline]
    pub(super) fn mark_filled(&self, lsn: Lsn, lines: u64) {
        self.slots[self.layout.index_of(lsn)].store(pack(lsn, lines, FILLED), SeqCst);
    }
}

/// The promise of one commit: durable once the frontier passes `end`.
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) struct PerTxnTicket {
    shared: Arc<Shared>,
    end: Lsn,
}

impl PerTxnTicket {
    pub(crate) fn new(shared: Arc<Shared>, end: Lsn) -> PerTxnTicket {
        PerTxnTicket { shared, end }
    }
}

impl DurabilityWait for PerTxnTicket {
    fn wait(&self) -> Result<(), WalError> {
        self.shared.wait_durable(self.end)
    }
    fn is_durable(&self) -> Result<bool, WalError> {
        self.shared.is_durable(self.end)
    }
}
