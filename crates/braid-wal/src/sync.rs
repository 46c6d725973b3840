//! The seam between the lock-free protocols of the log layer and the atomics they run on:
//! `std` atomics and `parking_lot` locks normally, loom's under `--cfg loom`, so that the
//! loom models in `tests/loom_*.rs` check the very code that runs in production (the stream's
//! reservation protocol in [`crate::stream::ready`], Taurus's committed vector and its replay
//! pools in [`crate::scheme::taurus`]).
//!
//! Only what those modules use is re-exported. [`Mutex`] has `parking_lot`'s interface
//! (`lock` returns the guard, `try_lock` an `Option`) on both sides. Code built on these types
//! must only run inside `loom::model` when compiled with `--cfg loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, fence};

#[cfg(not(loom))]
pub(crate) use parking_lot::Mutex;

#[cfg(loom)]
pub(crate) use self::loom_mutex::{Mutex, MutexGuard};

#[cfg(loom)]
mod loom_mutex {
    /// loom's mutex with `parking_lot`'s interface. A model panics when a thread panics, so a
    /// poisoned lock is never observed (hence the `into_inner` on poisoning).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a locked [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// An unlocked mutex holding `v`.
        pub(crate) fn new(v: T) -> Mutex<T> {
            Mutex(loom::sync::Mutex::new(v))
        }

        /// Lock, blocking until the lock is free.
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// Lock if the lock is free, else `None`.
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }
}

/// One step of a wait for another thread: spin briefly, then yield, then sleep for growing
/// short intervals (at most 1 ms); under loom, a yield (loom explores the other threads).
pub(crate) fn pause(step: &mut u32) {
    let s = *step;
    *step = s.saturating_add(1);
    #[cfg(loom)]
    {
        let _ = s;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    if s < 16 {
        for _ in 0..(1u32 << (s / 4).min(3)) * 8 {
            std::hint::spin_loop();
        }
    } else if s < 32 {
        std::thread::yield_now();
    } else {
        let us = 10u64 << ((s - 32) / 8).min(6);
        std::thread::sleep(std::time::Duration::from_micros(us.min(1000)));
    }
}
