//! Straggler signals for passive group commit (Wang & Johnson 2014, Section 4.1).
//!
//! This is the generic thread-signal primitive that gsn's passive group commit uses; it lives
//! in braid-pmem rather than braid-wal because installing a signal handler needs `unsafe`.
//!
//! Passive group commit keeps, per worker thread, a published word (`dgsn` plus a dirty bit)
//! that a commit daemon reads. A worker that stays dirty too long is sent a signal
//! (`pthread_kill`); its handler issues a store fence (which, with signal delivery itself,
//! drains the thread's write-combining buffers) and publishes the value the thread has staged
//! as persistent, clearing the dirty bit, so the daemon can proceed without waiting for the
//! thread to reach its next commit.
//!
//! This module is the primitive only; what the words mean is the logging scheme's business:
//!
//! * A [`PublishCell`] is one of [`CELLS`] statically allocated cells (never freed, so a
//!   handler can never touch freed memory), claimed by a worker and bound to the thread that
//!   runs it ([`PublishCell::bind_current_thread`]).
//! * `word`: bit 63 ([`DIRTY`]) set means "this thread may have written records that are not
//!   yet published"; the low bits are the published value.
//! * `staged`: bit 63 ([`BUSY`]) set means "the thread is in the middle of writing something
//!   that must not be published yet"; otherwise the low bits are a value the handler may
//!   publish on the thread's behalf.
//! * The handler (async-signal-safe: a fence, `pthread_self`, and atomic loads / one
//!   compare-and-swap) looks up the cell bound to the interrupted thread; if the word is dirty
//!   and nothing is busy it replaces the word by `max(staged, published)` without the dirty
//!   bit. It never lowers a published value.
//!
//! Thread lifetime: `pthread_kill` on a thread that has exited is undefined behaviour. The
//! daemon therefore signals only under the cell's kill lock and only while the word is dirty,
//! and the owning thread clears the dirty bit only under the same lock
//! ([`PublishCell::publish`]); the dirty bit is set only by the bound thread and cleared before
//! it leaves the code that set it, so a thread seen dirty under the lock is alive.
//!
//! Choices: the signal is `SIGUSR2` ([`SIGNAL`]) with `SA_RESTART`, installed once per
//! process; if another handler already owns `SIGUSR2`, [`install`] fails rather than replace
//! it. Up to [`CELLS`] cells exist at once.

use std::sync::OnceLock;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64};

/// The signal sent to stragglers.
pub const SIGNAL: libc::c_int = libc::SIGUSR2;
/// Dirty bit of a cell's published word.
pub const DIRTY: u64 = 1 << 63;
/// Busy bit of a cell's staged word.
pub const BUSY: u64 = 1 << 63;
/// Cells that can be claimed at once.
pub const CELLS: usize = 1024;

struct Cell {
    owned: AtomicBool,
    bound: AtomicBool,
    tid: AtomicU64,
    lock: AtomicBool,
    word: AtomicU64,
    staged: AtomicU64,
    handled: AtomicU64,
    /// Test switch: the handler leaves this cell alone.
    muted: AtomicBool,
}

impl Cell {
    const fn new() -> Cell {
        Cell {
            owned: AtomicBool::new(false),
            bound: AtomicBool::new(false),
            tid: AtomicU64::new(0),
            lock: AtomicBool::new(false),
            word: AtomicU64::new(0),
            staged: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            muted: AtomicBool::new(false),
        }
    }

    fn lock(&self) {
        while self
            .lock
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn unlock(&self) {
        self.lock.store(false, Release);
    }
}

static TABLE: [Cell; CELLS] = [const { Cell::new() }; CELLS];
static INSTALLED: OnceLock<Result<(), SignalError>> = OnceLock::new();

/// Why [`install`] could not install the handler.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// `sigaction` failed (shared, as [`install`] hands the first result to every caller).
    #[error("sigaction: {0}")]
    Sigaction(#[source] std::sync::Arc<std::io::Error>),
    /// The signal already has another handler.
    #[error("SIGUSR2 already has a handler; passive group commit needs it")]
    Taken,
}

fn self_tid() -> u64 {
    // SAFETY: `pthread_self` has no preconditions and only reads the thread pointer; it is
    // safe to call from a signal handler on Linux (glibc and musl).
    let t = unsafe { libc::pthread_self() };
    t as u64
}

extern "C" fn on_signal(_sig: libc::c_int) {
    crate::persist::sfence();
    let me = self_tid();
    for c in TABLE.iter() {
        if !c.bound.load(Acquire) || c.tid.load(Acquire) != me {
            continue;
        }
        if c.muted.load(Acquire) {
            return;
        }
        let s = c.staged.load(SeqCst);
        let w = c.word.load(SeqCst);
        if s & BUSY == 0 && w & DIRTY != 0 {
            let v = s.max(w & !DIRTY);
            if c.word.compare_exchange(w, v, SeqCst, SeqCst).is_ok() {
                c.handled.fetch_add(1, Relaxed);
            }
        }
        return;
    }
}

/// Install the handler for [`SIGNAL`] (once per process; later calls return the first result).
pub fn install() -> Result<(), SignalError> {
    INSTALLED
        .get_or_init(|| {
            // SAFETY: `sigaction` is plain data; all-zero is a valid value (no handler, empty
            // flags) that is fully overwritten below before use.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: `sa.sa_mask` is a valid, writable sigset_t.
            unsafe { libc::sigemptyset(&mut sa.sa_mask) };
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            // SAFETY: zeroed is a valid `sigaction` to receive the old disposition.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointers to a query-only call (null new action).
            if unsafe { libc::sigaction(SIGNAL, std::ptr::null(), &mut old) } != 0 {
                return Err(SignalError::Sigaction(std::sync::Arc::new(
                    std::io::Error::last_os_error(),
                )));
            }
            if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
                return Err(SignalError::Taken);
            }
            // SAFETY: `sa` is fully initialised; the handler is async-signal-safe (see the
            // module doc) and lives for the whole program.
            if unsafe { libc::sigaction(SIGNAL, &sa, std::ptr::null_mut()) } != 0 {
                return Err(SignalError::Sigaction(std::sync::Arc::new(
                    std::io::Error::last_os_error(),
                )));
            }
            Ok(())
        })
        .clone()
}

/// A claimed cell: a published word and a staged word for one worker thread.
#[derive(Debug)]
pub struct PublishCell {
    idx: usize,
}

impl PublishCell {
    /// Claim a free cell (words zeroed, bound to no thread). `None` if all are in use.
    pub fn claim() -> Option<PublishCell> {
        let idx = TABLE.iter().position(|c| {
            c.owned
                .compare_exchange(false, true, SeqCst, Relaxed)
                .is_ok()
        })?;
        let c = &TABLE[idx];
        c.word.store(0, SeqCst);
        c.staged.store(0, SeqCst);
        c.handled.store(0, SeqCst);
        c.muted.store(false, SeqCst);
        Some(PublishCell { idx })
    }

    fn cell(&self) -> &'static Cell {
        &TABLE[self.idx]
    }

    /// Make the calling thread the one signals go to (cheap if it already is).
    pub fn bind_current_thread(&self) {
        let c = self.cell();
        let me = self_tid();
        if c.bound.load(Relaxed) && c.tid.load(Relaxed) == me {
            return;
        }
        c.lock();
        c.tid.store(me, SeqCst);
        c.bound.store(true, SeqCst);
        c.unlock();
    }

    /// The published word (`DIRTY` | value).
    pub fn word(&self) -> &'static AtomicU64 {
        &self.cell().word
    }

    /// The staged word (`BUSY` | value).
    pub fn staged(&self) -> &'static AtomicU64 {
        &self.cell().staged
    }

    /// Owner only: replace the word `expected` by `new` (clearing the dirty bit) under the kill
    /// lock; false if the word changed meanwhile (e.g. the handler published it).
    pub fn publish(&self, expected: u64, new: u64) -> bool {
        let c = self.cell();
        c.lock();
        let ok = c
            .word
            .compare_exchange(expected, new, SeqCst, SeqCst)
            .is_ok();
        c.unlock();
        ok
    }

    /// Signal the bound thread if its word is dirty; true if a signal was sent.
    pub fn signal_if_dirty(&self) -> bool {
        let c = self.cell();
        if install().is_err() {
            return false;
        }
        c.lock();
        let sent = if c.bound.load(SeqCst) && c.word.load(SeqCst) & DIRTY != 0 {
            let tid = c.tid.load(SeqCst) as libc::pthread_t;
            // SAFETY: the word is dirty under the kill lock, so the bound thread is alive (see
            // the module doc); the handler for SIGNAL is installed.
            unsafe { libc::pthread_kill(tid, SIGNAL) == 0 }
        } else {
            false
        };
        c.unlock();
        sent
    }

    /// Test switch: with `true` the handler ignores this cell (signals are still sent), so a
    /// test can show that what releases a straggler is the handler.
    #[cfg(any(test, feature = "testing"))]
    pub fn mute_handler(&self, muted: bool) {
        self.cell().muted.store(muted, SeqCst);
    }

    /// How many times the handler published on this cell's behalf.
    pub fn handled(&self) -> u64 {
        self.cell().handled.load(Relaxed)
    }
}

impl Drop for PublishCell {
    fn drop(&mut self) {
        let c = self.cell();
        c.lock();
        c.bound.store(false, SeqCst);
        c.tid.store(0, SeqCst);
        c.unlock();
        c.owned.store(false, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn handler_publishes_staged_value_of_a_dirty_thread() {
        install().unwrap();
        let cell = PublishCell::claim().unwrap();
        let cell_ref = &cell;
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                cell_ref.bind_current_thread();
                cell_ref.staged().store(7, SeqCst);
                cell_ref.word().store(DIRTY | 3, SeqCst);
                ready_tx.send(()).unwrap();
                // Stall with the dirty bit set until told to go.
                go_rx.recv().unwrap();
            });
            ready_rx.recv().unwrap();
            let mut sent = 0;
            while cell.word().load(SeqCst) & DIRTY != 0 {
                if cell.signal_if_dirty() {
                    sent += 1;
                }
                std::thread::yield_now();
            }
            assert!(sent >= 1);
            assert_eq!(cell.word().load(SeqCst), 7);
            go_tx.send(()).unwrap();
        });
        assert!(cell.handled() >= 1);
        // A busy staged word is never published.
        cell.word().store(DIRTY | 3, SeqCst);
        cell.staged().store(BUSY | 9, SeqCst);
        cell.bind_current_thread();
        assert!(cell.signal_if_dirty());
        assert_eq!(cell.word().load(SeqCst), DIRTY | 3);
    }
}
