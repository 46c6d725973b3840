//! Closing a stream: what its clones and writers share (closed when the last one drops), the
//! drain of everything appended (by the flusher on file devices, by publishing the ready point
//! on pmem), and the clean-end mark once everything is durable.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::thread::JoinHandle;

use parking_lot::Mutex;

use super::state::{CLOSED, Inner};
use crate::WalError;

/// What a clone of [`Stream`] and every [`StreamWriter`] share; closing happens when it drops.
pub(super) struct Handle {
    pub(super) inner: Arc<Inner>,
    pub(super) flusher: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Nobody can observe the result any more; the errors were delivered to the waiters.
        let _ = self.close();
    }
}

impl Handle {
    pub(super) fn close(&self) -> Result<(), WalError> {
        let inner = &*self.inner;
        let first = inner.state.fetch_or(CLOSED, SeqCst) & CLOSED == 0;
        self.drain_and_stop()?;
        // Only the first closer, and only once everything is durable: the end it marks is the
        // stream's final one.
        if first {
            let end = inner.durable.load(SeqCst);
            if end >= inner.res.tail() {
                inner.device.mark_clean_end(end)?;
            }
        }
        Ok(())
    }

    fn drain_and_stop(&self) -> Result<(), WalError> {
        let inner = &*self.inner;
        inner.set_state(CLOSED);
        if inner.durable_on_fill {
            return inner.close_durable_on_fill();
        }
        // Holding the lock across the join makes concurrent closers wait for the first one.
        let mut flusher = self.flusher.lock();
        if let Some(h) = flusher.take()
            && h.join().is_err()
        {
            // `flusher_main` catches panics; this is only a belt for the braces.
            inner.poison(
                "running the flusher".to_string(),
                WalError::ThreadPanicked {
                    thread: "the flusher",
                },
            );
        }
        drop(flusher);
        if let Some(e) = inner.poison_error() {
            return Err(e);
        }
        let g = inner.lock.lock();
        if let Some(e) = &g.close_error {
            return Err(e.clone());
        }
        Ok(())
    }
}

impl Inner {
    fn close_durable_on_fill(&self) -> Result<(), WalError> {
        // Every finished fill and every withdrawn announcement notifies `progress`.
        self.progress.wait(|| {
            if let Some(e) = self.poison_error() {
                return Some(Err(e));
            }
            // CLOSED is set: a writer either saw it (and gave up) or announced before our
            // look at the slots below, so waiting for no slot to be busy catches every append.
            let (_, busy) = self.res.ready();
            let d = self.advance_durable();
            (!busy && d >= self.res.tail()).then_some(Ok(()))
        })?;
        self.lock.lock().flusher_done = true;
        self.progress.notify();
        Ok(())
    }
}
