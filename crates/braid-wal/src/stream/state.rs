//! A stream's shared state and its failure states: the state bits (closed, poisoned, stalled
//! on `NoSpace`), poisoning with its cause, and the errors appends and waiters get from them
//! (see the module docs of [`super`], "Failures").

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use super::ready::Reservations;
use crate::WalError;
use crate::device::Device;
use crate::wait::Progress;

/// Writer slots claimed and flusher threads running, over every stream of the process, and
/// the [`BusyThread`]s alive: a flusher lingers only where these fit in the machine's cores
/// (`flusher.rs`).
pub(super) static BUSY_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Whether every writer and flusher of the process has a core of its own, so that a thread
/// waiting by spinning takes a core from none of them (`device::pace`'s waits for I/O).
pub(crate) fn spare_core() -> bool {
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    BUSY_THREADS.load(std::sync::atomic::Ordering::Relaxed) <= cores
}

/// A thread that keeps a core busy without holding a stream's writer slot (a `pertxn` log
/// writer, whose objects go to its persistent region, not to a stream; its flush daemon),
/// counted in [`BUSY_THREADS`] while the guard lives: otherwise a stream's flusher (`pertxn`'s
/// backup stream) would take the cores for idle and spin where the log's workers need them.
#[derive(Debug)]
pub(crate) struct BusyThread(());

impl BusyThread {
    /// Count one more busy thread until the guard is dropped.
    pub(crate) fn new() -> BusyThread {
        BUSY_THREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        BusyThread(())
    }
}

impl Drop for BusyThread {
    fn drop(&mut self) {
        BUSY_THREADS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `wake_at` value while the flusher is awake.
pub(super) const NO_WAKE: u64 = u64::MAX;

/// State bits.
pub(super) const CLOSED: u8 = 1;
pub(super) const POISONED: u8 = 2;
pub(super) const STALLED: u8 = 4;

/// State behind the stream's mutex (slow paths only).
#[derive(Default)]
pub(super) struct Locked {
    /// The `NoSpace` error of the current stall.
    pub(super) nospace: Option<WalError>,
    /// The flusher thread has exited (or there is none and the stream is closed).
    pub(super) flusher_done: bool,
    /// Why the flusher stopped without flushing everything (NoSpace at close).
    pub(super) close_error: Option<WalError>,
}

/// The counters a flush updates.
#[derive(Debug)]
pub(super) struct FlushClock {
    /// How long the flusher's last flush took, ns (decides whether it lingers).
    pub(super) last_flush_ns: AtomicU64,
    /// When the durable point last advanced on a file device, ns since `Inner::epoch`.
    pub(super) last_publish_ns: AtomicU64,
    pub(super) flushes: AtomicU64,
    /// Times the flusher went to sleep having found nothing to flush (for
    /// [`super::Stream::flusher_idle_pass`]).
    pub(super) idle_passes: AtomicU64,
}

/// What the stream's handles, its writers and its flusher share.
pub(super) struct Inner {
    pub(super) id: u32,
    pub(super) device: Arc<dyn Device>,
    pub(super) capacity: u64,
    pub(super) durable_on_fill: bool,
    /// Waiters lead flushes (file devices without a group-commit delay; see `lead.rs`).
    pub(super) lead: bool,
    /// The flush token: held by whoever flushes (the flusher thread or a leader).
    pub(super) flushing: CachePadded<AtomicBool>,
    /// The flusher thread sleeps waiting for the token.
    pub(super) token_wanted: AtomicBool,
    /// Some writer defers waking the flusher to its waiter (`lead.rs`): the flusher polls.
    pub(super) defers: AtomicBool,
    /// The machine's cores (`available_parallelism`).
    pub(super) cores: usize,
    /// When the stream started; `clock.last_publish_ns` counts from it.
    pub(super) epoch: std::time::Instant,
    /// What every flush writes, on a line of its own: the writers read the fields around
    /// it at every append, and would miss the cache after every flush.
    pub(super) clock: CachePadded<FlushClock>,
    pub(super) group_delay: Duration,
    pub(super) group_bytes: u64,
    pub(super) res: Reservations,
    pub(super) durable: CachePadded<AtomicU64>,
    pub(super) state: CachePadded<AtomicU8>,
    /// The flusher sleeps until a writer finishes a record ending at or beyond this.
    pub(super) wake_at: CachePadded<AtomicU64>,
    /// Writers waiting for ring space (the flusher cuts a group-commit delay short for them).
    pub(super) space_waiters: AtomicUsize,
    /// During a stall: the end of the largest range whose flush failed with `NoSpace`.
    pub(super) nospace_upto: AtomicU64,
    pub(super) cause: OnceLock<(String, WalError)>,
    pub(super) lock: Mutex<Locked>,
    /// The flusher sleeps here.
    pub(super) flusher_cv: Condvar,
    /// Commit waiters, writers waiting for ring space and a closer draining a pmem stream
    /// wait here. Notified after every change that can end such a wait: a new durable point
    /// (`release_token` on file devices; every finished fill on pmem, which moves the ready
    /// point the waiters publish themselves), a stall, a state change (poisoned, closed) and
    /// the flusher's exit.
    pub(super) progress: Progress,
}

impl Inner {
    /// Set state bits, then wake every sleeper: the flusher under the lock it sleeps on, the
    /// waiters through `progress` (after the store, so no wake-up is lost).
    pub(super) fn set_state(&self, bits: u8) {
        self.state.fetch_or(bits, SeqCst);
        {
            let _g = self.lock.lock();
            self.flusher_cv.notify_all();
        }
        self.progress.notify();
    }

    /// Poison the stream: `cause` failed it while it was doing `during`.
    pub(super) fn poison(&self, during: String, cause: WalError) {
        // The cause is set before the flag, so whoever sees the flag sees the cause.
        let _ = self.cause.set((during, cause));
        self.set_state(POISONED);
    }

    pub(super) fn poison_error(&self) -> Option<WalError> {
        if self.state.load(SeqCst) & POISONED == 0 {
            return None;
        }
        // The flag is set after the cause, so the cause is there.
        let (during, cause) = self
            .cause
            .get()
            .cloned()
            .unwrap_or_else(|| (String::new(), WalError::Internal(crate::Invariant::NoCause)));
        Some(WalError::Poisoned {
            stream: self.id,
            during,
            cause: std::sync::Arc::new(cause),
        })
    }

    /// Fail fast if appends are refused: poisoned, closed, or (`stall` = check it) stalled.
    #[inline]
    pub(super) fn check_state(&self, stall: bool) -> Result<(), WalError> {
        let st = self.state.load(SeqCst);
        let mask = if stall {
            POISONED | CLOSED | STALLED
        } else {
            POISONED | CLOSED
        };
        if st & mask == 0 {
            return Ok(());
        }
        Err(self.state_error(st))
    }

    #[cold]
    pub(super) fn state_error(&self, st: u8) -> WalError {
        if st & POISONED != 0
            && let Some(e) = self.poison_error()
        {
            return e;
        }
        if st & CLOSED != 0 {
            return WalError::Closed(self.id);
        }
        self.nospace_error()
    }

    /// The error of the current stall. Takes the lock.
    fn nospace_error(&self) -> WalError {
        let g = self.lock.lock();
        g.nospace.clone().unwrap_or_else(|| self.default_nospace())
    }

    pub(super) fn default_nospace(&self) -> WalError {
        WalError::NoSpace {
            path: self.device.info().location.into(),
        }
    }
}
