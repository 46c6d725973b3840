//! The durable watermark and waiting for it (Taurus, Xia et al. 2021, Alg. 2: the log
//! manager's `PLV` entry of this stream): on pmem devices the waiter publishes the ready point
//! itself with `fetch_max` and, while another writer is mid-fill, waits in the stream's
//! [`Progress`](crate::wait::Progress) for the fills to finish (each finished fill notifies it);
//! on file devices it flushes itself when no flush is under way (`lead.rs`), or, where a
//! group-commit delay gathers commits, waits there until the flusher publishes.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};

use super::state::{Inner, Locked, POISONED, STALLED};
use crate::{Lsn, WalError};

impl Inner {
    /// Pmem: publish the ready point as the durable point; returns the durable point.
    pub(super) fn advance_durable(&self) -> Lsn {
        let d = self.durable.load(SeqCst);
        let (ready, _) = self.res.ready();
        // Nothing is published once the stream is poisoned (checked after computing `ready`).
        if ready <= d || self.state.load(SeqCst) & POISONED != 0 {
            return d;
        }
        // Asked after computing `ready`: a fill that failed to persist recorded its failure
        // before it finished, so every fill below `ready` is covered by this check.
        if let Err(e) = self.device.check_fills() {
            self.poison(format!("persisting LSNs {d}..{ready}"), e);
            return d;
        }
        // The device learns the point before anyone can read it from the stream (a caller may
        // hand `durable()` straight to `Device::release`).
        self.device.note_durable(ready);
        let prev = self.durable.fetch_max(ready, SeqCst);
        if prev < ready {
            self.clock.flushes.fetch_add(1, Relaxed);
            ready
        } else {
            prev
        }
    }

    fn beyond_tail(&self, lsn: Lsn) -> WalError {
        WalError::Misuse(crate::Misuse::PastEnd {
            op: "wait (for an LSN no append returned)",
            lsn,
            len: 0,
            end: self.res.tail(),
            on: Some(format!("stream {}", self.id)),
        })
    }

    pub(super) fn check_durable(&self, lsn: Lsn) -> Result<bool, WalError> {
        if self.durable.load(Acquire) >= lsn {
            return Ok(true);
        }
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        if lsn > self.res.tail() {
            return Err(self.beyond_tail(lsn));
        }
        if self.durable_on_fill {
            return Ok(self.advance_durable() >= lsn);
        }
        if self.defers.load(Relaxed) {
            // Its writer may have left waking the flusher to whoever waits or checks.
            self.wake_for_check(lsn);
        }
        // Nothing can block it while the stream runs normally (no stall, no close, no poison).
        if self.state.load(SeqCst) == 0 {
            return Ok(self.durable.load(SeqCst) >= lsn);
        }
        let g = self.lock.lock();
        self.blocked(lsn, &g)
            .map(|()| self.durable.load(SeqCst) >= lsn)
    }

    /// Under the lock, for a file-device waiter of `lsn` that is not durable: the error that
    /// will keep it from ever becoming durable, if any.
    pub(super) fn blocked(&self, lsn: Lsn, g: &Locked) -> Result<(), WalError> {
        if let Some(e) = self.poison_error() {
            return Err(e);
        }
        let st = self.state.load(SeqCst);
        if st & STALLED != 0
            && lsn <= self.nospace_upto.load(SeqCst)
            && let Some(e) = &g.nospace
        {
            return Err(e.clone());
        }
        if g.flusher_done && self.durable.load(SeqCst) < lsn {
            return Err(g.close_error.clone().unwrap_or(WalError::Closed(self.id)));
        }
        Ok(())
    }

    pub(super) fn wait_durable(&self, lsn: Lsn) -> Result<(), WalError> {
        if self.durable.load(Acquire) >= lsn {
            return Ok(());
        }
        if lsn > self.res.tail() {
            return Err(self.beyond_tail(lsn));
        }
        if self.durable_on_fill {
            return self.wait_durable_on_fill(lsn);
        }
        if self.lead {
            return self.wait_leading(lsn);
        }
        // Records appended quietly (`StreamWriter::append_quiet`) may have left the flusher
        // asleep: every poll (the last one after this waiter registered) wakes it if it sleeps
        // short of `lsn` (see `Inner::wake_flusher_for_waiters` for the quiet fill that ends
        // after it). The flusher publishes and then notifies (`release_token`); stalls, state
        // changes and its exit notify too.
        self.progress.wait(|| {
            self.wake_flusher(lsn);
            self.poll_durable(lsn)
        })
    }

    /// For a file-device waiter of `lsn`: `Some(Ok)` once it is durable, `Some(Err)` once an
    /// error keeps it from ever becoming durable, else `None`.
    pub(super) fn poll_durable(&self, lsn: Lsn) -> Option<Result<(), WalError>> {
        if self.durable.load(Acquire) >= lsn {
            return Some(Ok(()));
        }
        // Nothing can block it while the stream runs normally (no stall, no close, no
        // poison; the flusher exits only once closed or poisoned).
        if self.state.load(SeqCst) == 0 {
            return None;
        }
        let g = self.lock.lock();
        match self.blocked(lsn, &g) {
            Err(e) => Some(Err(e)),
            Ok(()) => (self.durable.load(SeqCst) >= lsn).then_some(Ok(())),
        }
    }

    /// Pmem: publish the ready point until it reaches `lsn`; while a writer below `lsn` is
    /// mid-fill, wait for its fill to finish (it notifies `progress`).
    fn wait_durable_on_fill(&self, lsn: Lsn) -> Result<(), WalError> {
        self.progress.wait(|| {
            if self.advance_durable() >= lsn {
                return Some(Ok(()));
            }
            self.poison_error().map(Err)
        })
    }
}
