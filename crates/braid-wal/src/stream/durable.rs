//! The durable watermark and waiting for it (Taurus, Xia et al. 2021, Alg. 2: the log
//! manager's `PLV` entry of this stream): on pmem devices the waiter publishes the ready point
//! itself with `fetch_max` and backs off while another writer is mid-fill; on file devices it
//! flushes itself when no flush is under way (`lead.rs`), or, where a group-commit delay
//! gathers commits, yields and then sleeps until the flusher publishes.

use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};
use std::time::Duration;

use super::state::{Inner, Locked, POISONED, STALLED};
use crate::{Lsn, WalError};

/// Yields of a file-device waiter before it blocks.
const SPIN_YIELDS: u32 = 4;

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
        WalError::Misuse {
            detail: format!(
                "stream {}: waiting for LSN {lsn} beyond the tail {} (no append returned it)",
                self.id,
                self.res.tail()
            ),
        }
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
        // A few yields first: a flush of a small group is often shorter than a sleep and
        // wake-up, and yielding hands the core to the flusher on a machine with few cores.
        for _ in 0..SPIN_YIELDS {
            std::thread::yield_now();
            if self.durable.load(Acquire) >= lsn {
                return Ok(());
            }
        }
        let mut g = self.lock.lock();
        self.waiters.fetch_add(1, SeqCst);
        let r = loop {
            // SeqCst after the increment: the flusher stores `durable` and then loads
            // `waiters`, so either we see its store or it sees us (and takes the lock, which
            // we hold until we sleep).
            if self.durable.load(SeqCst) >= lsn {
                break Ok(());
            }
            if let Err(e) = self.blocked(lsn, &g) {
                break Err(e);
            }
            self.durable_cv.wait(&mut g);
        };
        self.waiters.fetch_sub(1, SeqCst);
        r
    }

    fn wait_durable_on_fill(&self, lsn: Lsn) -> Result<(), WalError> {
        let mut step = 0u32;
        loop {
            if self.advance_durable() >= lsn {
                return Ok(());
            }
            if let Some(e) = self.poison_error() {
                return Err(e);
            }
            backoff(&mut step);
        }
    }
}

/// Spin briefly, then yield, then sleep for growing short intervals (at most 1 ms).
pub(super) fn backoff(step: &mut u32) {
    let s = *step;
    *step = s.saturating_add(1);
    if s < 16 {
        for _ in 0..(1u32 << (s / 4).min(3)) * 8 {
            std::hint::spin_loop();
        }
    } else if s < 32 {
        std::thread::yield_now();
    } else {
        let us = 10u64 << ((s - 32) / 8).min(6);
        std::thread::sleep(Duration::from_micros(us.min(1000)));
    }
}
