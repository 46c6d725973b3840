//! The flusher thread of a file-device stream (Taurus, Xia et al. 2021, Alg. 2, the log
//! manager): it sleeps until a writer fills a record past the durable point, gathers a group
//! commit (up to `group_delay` or `group_bytes`), flushes `[durable, ready)`, publishes the new
//! durable point and wakes its waiters; on `NoSpace` (or a replicated device's `Remote`
//! timeout) it stalls the stream and retries with exponential backoff.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use super::state::{CLOSED, Inner, NO_WAKE, POISONED, STALLED};
use crate::{Lsn, WalError};

/// First and longest pause between flush attempts while the device is out of space.
const NOSPACE_BACKOFF_MIN: Duration = Duration::from_millis(1);
const NOSPACE_BACKOFF_MAX: Duration = Duration::from_millis(100);

impl Inner {
    pub(super) fn flusher_main(self: Arc<Self>) {
        let r = catch_unwind(AssertUnwindSafe(|| self.flusher_loop()));
        if r.is_err() {
            self.poison("the flusher thread panicked".to_string());
        }
        let mut g = self.lock.lock();
        g.flusher_done = true;
        self.durable_cv.notify_all();
    }

    fn flusher_loop(&self) {
        let mut nospace_backoff = NOSPACE_BACKOFF_MIN;
        loop {
            let st = self.state.load(SeqCst);
            if st & POISONED != 0 {
                return;
            }
            let closing = st & CLOSED != 0;
            let d = self.durable.load(SeqCst);
            let (mut ready, busy) = self.res.ready();
            if ready <= d {
                if closing && !busy && self.res.tail() <= d {
                    return;
                }
                self.sleep_until_filled(d, st);
                continue;
            }
            if !self.group_delay.is_zero() && !closing && ready - d < self.group_bytes {
                ready = ready.max(self.gather(d, st));
            }
            match self.device.flush(d, ready) {
                Ok(()) => {
                    nospace_backoff = NOSPACE_BACKOFF_MIN;
                    self.publish(ready);
                }
                // Transient: the device may take the same bytes again later.
                Err(e @ (WalError::NoSpace { .. } | WalError::Remote { .. })) => {
                    self.stall(ready, e.clone());
                    if closing {
                        let mut g = self.lock.lock();
                        g.close_error = Some(e);
                        return;
                    }
                    let mut g = self.lock.lock();
                    if self.state.load(SeqCst) & (CLOSED | POISONED) == 0 {
                        self.flusher_cv.wait_for(&mut g, nospace_backoff);
                    }
                    nospace_backoff = (nospace_backoff * 2).min(NOSPACE_BACKOFF_MAX);
                }
                Err(e) => {
                    self.poison(format!("flushing LSNs {d}..{ready} failed: {e}"));
                    return;
                }
            }
        }
    }

    /// Sleep until a writer finishes a record past `d` (or the state changes).
    fn sleep_until_filled(&self, d: Lsn, st: u8) {
        let mut g = self.lock.lock();
        self.wake_at.store(d + 1, SeqCst);
        let (ready, busy) = self.res.ready();
        let closing_done = st & CLOSED != 0 && !busy && self.res.tail() <= d;
        if ready <= d && self.state.load(SeqCst) == st && !closing_done {
            self.idle_passes.fetch_add(1, SeqCst);
            self.flusher_cv.wait(&mut g);
        }
        self.wake_at.store(NO_WAKE, SeqCst);
    }

    /// Group commit: wait up to `group_delay` for `group_bytes` to be ready; returns the ready
    /// point reached.
    fn gather(&self, d: Lsn, st: u8) -> Lsn {
        let deadline = Instant::now() + self.group_delay;
        let mut best = d;
        let mut g = self.lock.lock();
        loop {
            self.wake_at.store(d + self.group_bytes, SeqCst);
            best = best.max(self.res.ready().0);
            if best - d >= self.group_bytes
                || self.state.load(SeqCst) != st
                || self.space_waiters.load(SeqCst) > 0
                || self.flusher_cv.wait_until(&mut g, deadline).timed_out()
            {
                break;
            }
        }
        self.wake_at.store(NO_WAKE, SeqCst);
        drop(g);
        best.max(self.res.ready().0)
    }

    /// A flush up to `ready` succeeded: publish it and wake whoever waits for it.
    fn publish(&self, ready: Lsn) {
        self.device.note_durable(ready);
        self.durable.store(ready, SeqCst);
        self.flushes.fetch_add(1, Relaxed);
        if self.state.load(SeqCst) & STALLED != 0 {
            let mut g = self.lock.lock();
            self.state.fetch_and(!STALLED, SeqCst);
            self.nospace_upto.store(0, SeqCst);
            g.nospace = None;
        }
        if self.waiters.load(SeqCst) > 0 || self.space_waiters.load(SeqCst) > 0 {
            let _g = self.lock.lock();
            self.durable_cv.notify_all();
        }
    }

    /// A flush up to `ready` failed with `NoSpace` (or a replicated device's `Remote`): fail
    /// its waiters, refuse new appends.
    fn stall(&self, ready: Lsn, e: WalError) {
        let mut g = self.lock.lock();
        g.nospace = Some(e);
        self.nospace_upto.fetch_max(ready, SeqCst);
        self.state.fetch_or(STALLED, SeqCst);
        self.durable_cv.notify_all();
    }
}
