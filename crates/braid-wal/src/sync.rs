//! The seam between the lock-free protocols of the log layer and the atomics they run on:
//! `std` atomics and `parking_lot` locks normally, loom's under `--cfg loom`, so that the
//! loom models in `tests/loom_*.rs` check the very code that runs in production (the stream's
//! reservation protocol in [`crate::stream::ready`], Taurus's committed vector and its replay
//! pools in [`crate::scheme::taurus`]).
//!
//! It also carries the parking of [`crate::wait::Progress`], the one way a thread waits for
//! another's progress, so the loom models check that no wake-up is lost in the code that uses
//! it (Aether's consolidation array, `tests/loom_aether.rs`; the primitive itself,
//! `tests/loom_wait.rs`).
//!
//! Only what those modules use is re-exported. [`Mutex`] has `parking_lot`'s interface
//! (`lock` returns the guard, `try_lock` an `Option`) on both sides; [`Condvar`] takes and
//! returns the guard (loom's way) on both sides. Code built on these types must only run
//! inside `loom::model` when compiled with `--cfg loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, fence};

#[cfg(not(loom))]
pub(crate) use parking_lot::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use self::std_condvar::Condvar;

#[cfg(loom)]
pub(crate) use self::loom_mutex::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
mod std_condvar {
    use std::time::Instant;

    use super::MutexGuard;

    /// `parking_lot`'s condition variable, with the guard passed by value (as loom's takes it).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        /// A condition variable nobody waits on.
        pub(crate) fn new() -> Condvar {
            Condvar(parking_lot::Condvar::new())
        }

        /// Unlock, sleep until notified (or spuriously woken), lock again.
        pub(crate) fn wait<'a, T>(&self, mut g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut g);
            g
        }

        /// [`Condvar::wait`], but no later than `deadline`; the flag says it timed out.
        pub(crate) fn wait_until<'a, T>(
            &self,
            mut g: MutexGuard<'a, T>,
            deadline: Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            let timed_out = self.0.wait_until(&mut g, deadline).timed_out();
            (g, timed_out)
        }

        /// Wake every thread waiting.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

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

    /// loom's condition variable with the interface of the `std` side of the seam.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A condition variable nobody waits on.
        pub(crate) fn new() -> Condvar {
            Condvar(loom::sync::Condvar::new())
        }

        /// Unlock, sleep until notified, lock again.
        pub(crate) fn wait<'a, T>(&self, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(g).unwrap_or_else(|e| e.into_inner())
        }

        /// loom has no clock: an untimed [`Condvar::wait`] (never reports a timeout). A model
        /// that needed the timeout to make progress fails as a deadlock, which is the point:
        /// timeouts are only safety nets.
        pub(crate) fn wait_until<'a, T>(
            &self,
            g: MutexGuard<'a, T>,
            _deadline: std::time::Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            (self.wait(g), false)
        }

        /// Wake every thread waiting.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
