//! The flusher thread of a file-device stream (Taurus, Xia et al. 2021, Alg. 2, the log
//! manager): it sleeps until a writer fills a record past the durable point, gathers a group
//! commit (up to `group_delay` or `group_bytes`), flushes `[durable, ready)`, publishes the new
//! durable point and wakes its waiters; on `NoSpace` (or a replicated device's `Remote`
//! timeout) it stalls the stream and retries with exponential backoff.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use super::lead::DEFERRED_POLL;
use super::state::{BUSY_THREADS, CLOSED, Inner, NO_WAKE, POISONED, STALLED};
use crate::{Lsn, WalError};

/// How long an idle flusher spins for the next record before it sleeps (see `linger`).
const LINGER: Duration = Duration::from_micros(50);
/// Flushes slower than this (a disk's sync) make the flusher sleep at once when idle.
const LINGER_FLUSH_MAX: Duration = Duration::from_micros(20);

/// First and longest pause between flush attempts while the device is out of space.
const NOSPACE_BACKOFF_MIN: Duration = Duration::from_millis(1);
const NOSPACE_BACKOFF_MAX: Duration = Duration::from_millis(100);

impl Inner {
    pub(super) fn flusher_main(self: Arc<Self>) {
        BUSY_THREADS.fetch_add(1, Relaxed);
        // A group delay of a few microseconds is a timed sleep of that length; Linux adds a
        // thread's timer slack (50 us by default) to every timed sleep, which turned a 5 us
        // delay into 50. One microsecond of slack is what the delay's resolution asks for.
        // Refused only by kernels without prctl, where delays stay coarse.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1000));
        let r = catch_unwind(AssertUnwindSafe(|| self.flusher_loop()));
        BUSY_THREADS.fetch_sub(1, Relaxed);
        if r.is_err() {
            self.poison(
                "running the flusher".to_string(),
                WalError::ThreadPanicked {
                    thread: "the flusher",
                },
            );
        }
        self.lock.lock().flusher_done = true;
        self.progress.notify();
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
                if !closing && self.linger(d, st) {
                    continue;
                }
                self.sleep_until_filled(d, st);
                continue;
            }
            if !self.group_delay.is_zero() && !closing && ready - d < self.group_bytes {
                ready = ready.max(self.gather(d, st));
            }
            // A leader may have flushed while we looked: read the durable point again under
            // the token.
            self.take_token();
            let d = self.durable.load(SeqCst);
            let ready = ready.max(self.res.ready().0);
            if ready <= d {
                self.release_token();
                continue;
            }
            let started = Instant::now();
            let flushed = self.device.flush(d, ready);
            self.clock
                .last_flush_ns
                .store(started.elapsed().as_nanos() as u64, Relaxed);
            // Published or stalled while the token is held, so that no leader flushes in
            // between (a stall set after a leader's publish would outlive it).
            match &flushed {
                Ok(()) => self.publish(ready),
                Err(e @ (WalError::NoSpace { .. } | WalError::Remote { .. })) => {
                    self.stall(ready, e.clone());
                }
                Err(_) => {}
            }
            self.release_token();
            match flushed {
                Ok(()) => {
                    nospace_backoff = NOSPACE_BACKOFF_MIN;
                }
                // Transient: the device may take the same bytes again later.
                Err(e @ (WalError::NoSpace { .. } | WalError::Remote { .. })) => {
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
                    self.poison(format!("flushing LSNs {d}..{ready}"), e);
                    return;
                }
            }
        }
    }

    /// Sleep until a writer finishes a record past `d` (or the state changes). Where writers
    /// leave the wake-up to their waiters (`lead.rs`), wake every [`DEFERRED_POLL`] to look.
    fn sleep_until_filled(&self, d: Lsn, st: u8) {
        let mut g = self.lock.lock();
        self.wake_at.store(d + 1, SeqCst);
        let (ready, busy) = self.res.ready();
        let closing_done = st & CLOSED != 0 && !busy && self.res.tail() <= d;
        if ready <= d && self.state.load(SeqCst) == st && !closing_done {
            self.clock.idle_passes.fetch_add(1, SeqCst);
            // For `Stream::flusher_idle_pass`, which waits in `progress` for this count.
            self.progress.notify();
            if self.defers.load(SeqCst) {
                self.flusher_cv.wait_for(&mut g, DEFERRED_POLL);
            } else {
                self.flusher_cv.wait(&mut g);
            }
        }
        self.wake_at.store(NO_WAKE, SeqCst);
    }

    /// Before sleeping, spin up to [`LINGER`] for the next record, where that costs nothing:
    /// flushes are cheap (the last one took under [`LINGER_FLUSH_MAX`], as on a RAM file
    /// system, where a flush is a copy) and a core would otherwise idle (the writers and
    /// flushers of every stream of the process fit in the machine's cores). A writer finding
    /// the flusher awake takes no lock and makes no system call to wake it, which at one writer
    /// on RAM files was the largest cost of a commit. Where flushes are slow (a disk) a
    /// committer leads its own flush instead (`lead.rs`), and a lingering flusher would only
    /// take that from it.
    /// Returns whether a record was filled past `d` (or the state changed).
    fn linger(&self, d: Lsn, st: u8) -> bool {
        if !self.may_spin() {
            return false;
        }
        spin_until(Instant::now() + LINGER, || {
            self.res.ready().0 > d || self.state.load(SeqCst) != st
        })
    }

    /// Whether waiting by spinning costs nothing: flushes are cheap (the last one took under
    /// [`LINGER_FLUSH_MAX`]) and a core would otherwise idle (the writers and flushers of every
    /// stream of the process, with the busy threads that write no stream, fit in the machine's
    /// cores: see `state::BusyThread`).
    fn may_spin(&self) -> bool {
        self.clock.last_flush_ns.load(Relaxed) <= LINGER_FLUSH_MAX.as_nanos() as u64
            && BUSY_THREADS.load(Relaxed) <= self.cores
    }

    /// Take the flush token, sleeping while a leader holds it.
    fn take_token(&self) {
        if self.try_take_token() {
            return;
        }
        // Registered before the look under the lock: the leader releasing the token either
        // is seen or sees us (`lead.rs`).
        self.token_wanted.store(true, SeqCst);
        let mut g = self.lock.lock();
        while !self.try_take_token() {
            self.flusher_cv.wait_for(&mut g, DEFERRED_POLL);
        }
        self.token_wanted.store(false, SeqCst);
    }

    /// Group commit: wait up to `group_delay` for `group_bytes` to be ready; returns the ready
    /// point reached.
    fn gather(&self, d: Lsn, st: u8) -> Lsn {
        let deadline = Instant::now() + self.group_delay;
        if self.group_delay <= LINGER && self.may_spin() {
            // A delay this short is below what a sleep resolves on most machines: spin, where
            // spinning costs nothing (as `linger` does).
            spin_until(deadline, || {
                self.res.ready().0 - d >= self.group_bytes
                    || self.state.load(SeqCst) != st
                    || self.space_waiters.load(SeqCst) > 0
            });
            return self.res.ready().0;
        }
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
    pub(super) fn publish(&self, ready: Lsn) {
        self.device.note_durable(ready);
        self.durable.store(ready, SeqCst);
        self.clock.flushes.fetch_add(1, Relaxed);
        self.clock
            .last_publish_ns
            .store(self.epoch.elapsed().as_nanos() as u64, Relaxed);
        if self.state.load(SeqCst) & STALLED != 0 {
            let mut g = self.lock.lock();
            self.state.fetch_and(!STALLED, SeqCst);
            self.nospace_upto.store(0, SeqCst);
            g.nospace = None;
        }
        // The waiters are woken when the token is released (`Inner::release_token`), which
        // every publisher does right after this.
    }

    /// A flush up to `ready` failed with `NoSpace` (or a replicated device's `Remote`): fail
    /// its waiters, refuse new appends.
    pub(super) fn stall(&self, ready: Lsn, e: WalError) {
        let mut g = self.lock.lock();
        g.nospace = Some(e);
        self.nospace_upto.fetch_max(ready, SeqCst);
        self.state.fetch_or(STALLED, SeqCst);
        drop(g);
        self.progress.notify();
    }
}

/// Spin until `done` holds (true) or `until` passes (false), looking every few dozen pauses.
fn spin_until(until: Instant, mut done: impl FnMut() -> bool) -> bool {
    loop {
        for _ in 0..64 {
            std::hint::spin_loop();
        }
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
    }
}
