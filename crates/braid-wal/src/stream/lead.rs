//! Leader-based group commit on file devices: a committer that waits for its record and finds
//! no flush under way writes and syncs the ready bytes itself, instead of handing them to the
//! flusher thread and sleeping until it is woken (the scheme of RocksDB's and raft-engine's
//! write groups; Taurus, Xia et al. 2021, Alg. 2 leaves open which thread runs the log
//! manager's flush).
//!
//! Why: with one committer waiting for every commit, the hand-off cost two wake-ups per commit
//! (the fill waking the flusher, the flusher waking the waiter), each a futex call and a
//! cross-core wake-up of tens of microseconds on a virtual machine: measured at 1 thread on
//! this machine's ext4 disk, the commit p50 sat 30-40 us above one `pwrite` + `fdatasync`.
//! A leader pays neither. Committers that arrive while a flush runs form the next group: they
//! sleep until that flush is published, and the first to find the token free leads the next
//! one, so several committers still share one `fdatasync`.
//!
//! The flush token (`flushing`) makes flushes one at a time, whoever runs them: the flusher
//! thread and leaders take it before reading the durable point and release it only after
//! publishing the new one, so flushed ranges never overlap and the durable point only grows.
//!
//! Lost wake-ups: a committer that cannot take the token waits in the stream's
//! [`Progress`](crate::wait::Progress) until the holder publishes and releases it: the holder
//! stores the token free and then notifies, the committer's poll looks at the token after it
//! registered, so either it sees the token free (and leads) or the holder sees it registered
//! (and wakes it); see `crate::wait`. The flusher thread waiting for the token registers in
//! `token_wanted` the same way (a store-then-load pair with `SeqCst` on both sides).
//!
//! A writer whose commits are waited for ([`StreamWriter::set_commits_waited`]) does not wake
//! the flusher when it fills (unless [`CHECK_WAKE_BYTES`] are pending, so that a long group is
//! written while it grows): its waiter will lead, and a non-blocking check
//! ([`Stream::check_durable`]) of a record not yet durable wakes the flusher instead. The
//! flusher of such a stream also looks for ready bytes every [`DEFERRED_POLL`] when asleep,
//! for a commit nobody ever waits for or checks. Leading is off where the stream gathers
//! group commits by time (`group_delay > 0`): gathering is the flusher's job.
//!
//! [`StreamWriter::set_commits_waited`]: super::StreamWriter::set_commits_waited
//! [`Stream::check_durable`]: super::Stream::check_durable

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::Duration;

use super::state::Inner;
use crate::{Lsn, WalError};

/// How often the flusher of a stream with deferred wake-ups looks for ready bytes while asleep.
pub(super) const DEFERRED_POLL: Duration = Duration::from_millis(10);

/// A check of a record not yet durable wakes a sleeping flusher only once this long has passed
/// since the last flush was published, or [`CHECK_WAKE_BYTES`] are pending: a pipelined
/// committer checks after every transaction, and a flush per check made groups of a few
/// commits, each paying a wake-up (at 2 threads on RAM files, about one wake-up per 4 commits).
pub(super) const CHECK_WAKE_AFTER: Duration = Duration::from_micros(100);
/// See [`CHECK_WAKE_AFTER`].
pub(super) const CHECK_WAKE_BYTES: u64 = 64 << 10;

/// What one attempt to lead found.
pub(super) enum Led {
    /// The token was taken (by the flusher or another leader), or leading is not possible now.
    Busy,
    /// This thread held the token and flushed what was ready (possibly nothing).
    Flushed,
}

impl Inner {
    /// Whether a waiter may lead a flush now.
    fn may_lead(&self) -> bool {
        self.lead && self.state.load(SeqCst) == 0
    }

    /// Take the flush token without waiting.
    pub(super) fn try_take_token(&self) -> bool {
        self.flushing
            .compare_exchange(false, true, SeqCst, SeqCst)
            .is_ok()
    }

    /// Release the flush token and wake whoever sleeps waiting for it or for the durable point
    /// (see the module doc for why the order excludes lost wake-ups).
    pub(super) fn release_token(&self) {
        self.flushing.store(false, SeqCst);
        self.progress.notify();
        if self.space_waiters.load(SeqCst) > 0 || self.token_wanted.load(SeqCst) {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
    }

    /// Flush `[durable, ready)` while holding the token, and publish (or stall, or poison).
    /// Returns whether the flush succeeded (also when there was nothing to flush).
    pub(super) fn flush_held(&self, ready: Lsn) -> bool {
        let d = self.durable.load(SeqCst);
        let ready = ready.max(self.res.ready().0);
        if ready <= d {
            return true;
        }
        match self.device.flush(d, ready) {
            Ok(()) => {
                self.publish(ready);
                true
            }
            // Transient: the flusher retries with backoff.
            Err(e @ (WalError::NoSpace { .. } | WalError::Remote { .. })) => {
                self.stall(ready, e);
                let _g = self.lock.lock();
                self.flusher_cv.notify_all();
                false
            }
            Err(e) => {
                self.poison(format!("flushing LSNs {d}..{ready}"), e);
                false
            }
        }
    }

    /// Lead one flush if no flush is under way.
    pub(super) fn try_lead(&self) -> Led {
        if !self.may_lead() || !self.try_take_token() {
            return Led::Busy;
        }
        self.flush_held(0);
        self.release_token();
        Led::Flushed
    }

    /// A non-blocking check found `lsn` not durable: wake the flusher if it sleeps waiting for
    /// it and enough time or bytes have gathered (see [`CHECK_WAKE_AFTER`]).
    pub(super) fn wake_for_check(&self, lsn: Lsn) {
        if self.wake_at.load(SeqCst) > lsn || self.durable.load(SeqCst) >= lsn {
            return;
        }
        let since = (self.epoch.elapsed().as_nanos() as u64)
            .saturating_sub(self.clock.last_publish_ns.load(Relaxed));
        if since >= CHECK_WAKE_AFTER.as_nanos() as u64
            || self.res.tail() - self.durable.load(SeqCst) >= CHECK_WAKE_BYTES
        {
            self.wake_flusher(lsn);
        }
    }

    /// Wait for `lsn` on a stream whose waiters lead: lead while the token is free, otherwise
    /// wait until the token's holder publishes and releases it.
    pub(super) fn wait_leading(&self, lsn: Lsn) -> Result<(), WalError> {
        let mut idle_leads = 0u32;
        loop {
            if self.durable.load(SeqCst) >= lsn {
                return Ok(());
            }
            if let Led::Flushed = self.try_lead() {
                if self.durable.load(SeqCst) >= lsn {
                    return Ok(());
                }
                // Nothing of ours was ready: a writer below `lsn` is still filling. Its fill
                // takes nanoseconds unless it was preempted; yield the core to it. (Its end is
                // not notified: a writer whose commits are waited for wakes nobody when it
                // fills, which keeps the fence off its append.)
                idle_leads += 1;
                if idle_leads < 64 {
                    std::thread::yield_now();
                    continue;
                }
                idle_leads = 0;
            }
            // A flush is under way (or leading is not possible now): wait until the holder
            // publishes and releases the token (`release_token` notifies), or until an error
            // keeps `lsn` from ever becoming durable.
            let r = self.progress.wait(|| {
                if let Some(r) = self.poll_durable(lsn) {
                    return Some(Some(r));
                }
                (self.may_lead() && !self.flushing.load(SeqCst)).then_some(None)
            });
            if let Some(r) = r {
                return r;
            }
        }
    }
}
