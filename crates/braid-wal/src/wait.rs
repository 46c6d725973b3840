//! Waiting for another thread's progress: [`Progress`], the one primitive every worker,
//! committer and daemon of the log layer waits with (a durable point, a committed vector, a
//! frontier, an acknowledged GSN, a group's published base, a checkpoint epoch's drain).
//!
//! # Shape
//!
//! A waiter hands [`Progress::wait`] a *poll*: a closure that looks at the published state and
//! says whether the wait is over (`Some(result)`, which may be an error) or not (`None`). The
//! wait polls in three phases:
//!
//! 1. **Spin** ([`SPINS`] polls, [`SPIN_HINTS`] `spin_loop` hints apart: well under a few
//!    microseconds). On persistent memory the awaited value usually comes within a microsecond
//!    or so (another writer's copy and cache-line flush of a record, under 1 us), far less than
//!    parking costs: a futex wait and the publisher's futex wake-up take a few microseconds
//!    each, and a wake-up across cores on a virtual machine tens.
//! 2. **Yield** ([`YIELDS`] polls, each after `yield_now`). On a machine with two cores the
//!    thread that will publish is often runnable but not running; yielding hands it the core.
//!    A short flush (RAM files, a small group) ends within these.
//! 3. **Park** until a publisher calls [`Progress::notify`], then poll again. An `fdatasync`
//!    on this machine's disk takes about 100-170 us: a waiter for it gives the core away for
//!    the whole sync, and pays one wake-up (a few microseconds) at its end. Parking has no
//!    timer: a waiter sleeps exactly until something it may be waiting for was published, so
//!    there is neither a poll interval that delays it (a sleep of 50 us ends after 50 us at
//!    best, and a `nanosleep` here ends ~20 us late) nor one that burns the core.
//!
//! The spin is bounded by polls rather than by a clock (a clock read costs as much as a poll)
//! and is short, so a waiter on a two-core machine does not keep the publisher off the core
//! for long; everything past it sleeps.
//!
//! [`Progress::wait_yielding`] stretches the yield phase to a given time before parking, for
//! the one kind of waiter whose parking every publisher would pay for: a daemon that each
//! commit wakes (gsn's commit daemon). While it yields, a commit finds it unparked and its
//! notify is a fence and a load; once parked, each commit's notify takes the lock and makes a
//! futex call, and the daemon's wake-up (tens of microseconds across cores on a virtual
//! machine) is added to the commit's latency.
//!
//! [`Progress::wait_until`] bounds a wait by a deadline, for the few waits whose end has a
//! time limit of its own (a ring that stays full gives up after a while; a daemon that
//! signals stragglers after a delay) or whose state can change without a notify (space a
//! device frees by itself): there the deadline is the safety net, documented where it is used.
//!
//! # The publisher's fast path, and why no wake-up is lost
//!
//! A publisher stores its new value and then calls [`Progress::notify`]: a `SeqCst` fence, and
//! a load of the count of registered (parked or parking) waiters. Only when that count is not
//! zero does it take the lock, bump the round and wake the sleepers. With nobody parked the
//! publisher pays a fence and one load of a line that is written only when a waiter parks.
//!
//! A waiter registers before its last poll: it increments the count (and reads the round,
//! under the lock), issues a `SeqCst` fence, polls, and only if that poll says "not yet" takes
//! the lock and sleeps while the round is the one it read. The two fences are ordered one way
//! or the other in the single total order of `SeqCst` operations:
//!
//! * the publisher's fence first: the waiter's poll, after its own fence, sees the published
//!   value (C++ [atomics.order], two `SeqCst` fences; state a publisher writes under a mutex
//!   is covered by that mutex's order, which cannot contradict the fences' order), so it does
//!   not sleep;
//! * the waiter's fence first: the publisher's load of the count sees the registration, so it
//!   takes the lock and bumps the round. If the waiter read the round after the bump, it read
//!   it under the lock the publisher released after its store, so its poll sees the value; if
//!   before, the bump happens either before the waiter's sleep (it sees a new round and does
//!   not sleep) or while it sleeps (the `notify_all` under the same lock wakes it).
//!
//! Every publisher must therefore put the store that can end a wait *before* its `notify`
//! (any ordering: the fence in `notify` orders it), and every poll must read that state after
//! the registration (which it does: the wait calls it after its fence). Two rules for the
//! users follow:
//!
//! * a poll must look at *everything* that made it say "not yet", and every change of any of
//!   it must be followed by a `notify` (a replay worker that waits because another is busy
//!   must also see that one stop being busy, not only its count of finished records);
//! * a poll that does work itself (helps, publishes) must not `notify` its own `Progress`
//!   unless that work moved something: registered as it is while it polls, it would wake
//!   itself and never park.
//!
//! The lock of a `Progress` is a leaf: a waiter holds it only to register and to sleep, never
//! while it polls, and `notify` takes no other lock under it. So a poll may take the lock of
//! the structure it watches, and a publisher may call `notify` holding that lock.
//!
//! # Failures: poisoning and closing
//!
//! A `Progress` knows nothing of errors. A waiter's poll returns the error that will keep its
//! value from ever coming (a poisoned stream, a closed log, a stall that covers its LSN), and
//! whoever poisons, stalls or closes stores that state and then calls `notify`, like any other
//! publisher: every parked waiter wakes, polls, and returns the error. `notify_all` wakes
//! every waiter (they may wait for different targets); a waiter whose target has not come
//! parks again, so a wake-up meant for another costs it one poll.
//!
//! Under `--cfg loom` the count, the lock and the condition variable are loom's
//! ([`crate::sync`]), the spin and yield phases are skipped (loom explores the other threads at
//! every atomic operation), and a deadline is ignored: a model that needed one to make
//! progress fails as a deadlock.

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicUsize, Condvar, Mutex, fence};

/// Polls of the spin phase.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const SPINS: u32 = 16;
/// `spin_loop` hints between two polls of the spin phase (4 `pause`s take 40-500 cycles,
/// depending on the processor: the whole spin phase stays under a few microseconds).
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const SPIN_HINTS: u32 = 4;
/// Polls after a `yield_now`, before parking.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const YIELDS: u32 = 4;

/// A place where threads wait for a value other threads publish: a short spin (16 polls), a
/// few yields (4), then parking until a publisher calls [`Progress::notify`].
///
/// The waiter's condition is a closure polled by [`Progress::wait`]; the publisher stores its
/// value first and calls [`Progress::notify`] after. `notify` costs a fence and one load when
/// nobody is parked. Errors are part of the condition: whoever makes a wait hopeless (poisons,
/// closes) stores that and calls `notify`, and every waiter's poll returns the error.
///
/// No wake-up is lost: a waiter registers, issues a `SeqCst` fence and polls once more before
/// it sleeps; `notify` issues a `SeqCst` fence and then reads the count of registered waiters.
/// Of the two fences one comes first: either the waiter's last poll sees the published value,
/// or the publisher sees the waiter and wakes it under the lock it sleeps on.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
/// use braid_wal::Progress;
///
/// let done = Arc::new((AtomicU64::new(0), Progress::new()));
/// let d = Arc::clone(&done);
/// let waiter = std::thread::spawn(move || {
///     d.1.wait(|| (d.0.load(SeqCst) >= 3).then_some(()))
/// });
/// for i in 1..=3 {
///     done.0.store(i, SeqCst); // publish...
///     done.1.notify(); // ...then wake whoever is parked
/// }
/// waiter.join().unwrap();
/// ```
pub struct Progress {
    /// Waiters registered: parked, or about to poll once more and park. On its own line: a
    /// publisher reads it at every `notify`, a waiter writes it only when it parks.
    parked: CachePadded<AtomicUsize>,
    /// The round, bumped by every `notify` that found a waiter registered; a parked waiter
    /// sleeps while the round is the one it read when it registered.
    round: Mutex<u64>,
    cv: Condvar,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("parked", &self.parked.load(Relaxed))
            .finish()
    }
}

impl Default for Progress {
    fn default() -> Progress {
        Progress::new()
    }
}

impl Progress {
    /// A place nobody waits at yet.
    pub fn new() -> Progress {
        Progress {
            parked: CachePadded::new(AtomicUsize::new(0)),
            round: Mutex::new(0),
            cv: Condvar::new(),
        }
    }

    /// Wait until `poll` returns `Some`, and return what it returned: spin, yield, then park
    /// until a [`Progress::notify`] and poll again. `poll` is called from this thread only,
    /// with no lock of this `Progress` held; it may do work (help the publisher, publish
    /// itself) and may take locks. A wait whose value can never come returns only if `poll`
    /// says so (an error), so `poll` must look at the failure state too.
    pub fn wait<T>(&self, mut poll: impl FnMut() -> Option<T>) -> T {
        if let Some(v) = spin(&mut poll) {
            return v;
        }
        loop {
            if let Some(v) = self.park(None, &mut poll) {
                return v;
            }
        }
    }

    /// [`Progress::wait`] with a yield phase of `yield_for` (polling after each `yield_now`)
    /// instead of a few yields: for a waiter that every publisher would otherwise have to
    /// wake, such as a daemon that each commit wakes; while it yields, a publisher's `notify`
    /// takes no lock, and the publisher does not wait for the daemon's wake-up.
    pub fn wait_yielding<T>(&self, yield_for: Duration, mut poll: impl FnMut() -> Option<T>) -> T {
        if let Some(v) = spin(&mut poll) {
            return v;
        }
        #[cfg(not(loom))]
        {
            let start = Instant::now();
            while start.elapsed() < yield_for {
                std::thread::yield_now();
                if let Some(v) = poll() {
                    return v;
                }
            }
        }
        #[cfg(loom)]
        let _ = yield_for;
        loop {
            if let Some(v) = self.park(None, &mut poll) {
                return v;
            }
        }
    }

    /// [`Progress::wait`] until `deadline` at the latest: `None` if `poll` still said "not
    /// yet" at its last look, made at or after the deadline.
    pub fn wait_until<T>(
        &self,
        deadline: Instant,
        mut poll: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        if let Some(v) = spin(&mut poll) {
            return Some(v);
        }
        loop {
            if let Some(v) = self.park(Some(deadline), &mut poll) {
                return Some(v);
            }
            if Instant::now() >= deadline {
                return poll();
            }
        }
    }

    /// After publishing (the store that may end a wait comes first, with any ordering): wake
    /// every parked waiter so it polls again. Takes no lock when nobody is parked. Returns
    /// whether it took the lock (someone was registered).
    #[inline]
    pub fn notify(&self) -> bool {
        // Orders the caller's store before the load of the count (see the module docs).
        fence(SeqCst);
        if self.parked.load(Relaxed) == 0 {
            return false;
        }
        self.wake();
        true
    }

    #[cold]
    fn wake(&self) {
        let mut round = self.round.lock();
        *round = round.wrapping_add(1);
        self.cv.notify_all();
    }

    /// Threads registered to park right now (parked, or polling once more before they park).
    /// A relaxed load: order it after the caller's store with a `SeqCst` fence, as
    /// [`Progress::notify`] does.
    pub(crate) fn parked(&self) -> usize {
        self.parked.load(Relaxed)
    }

    /// Register, poll once more, and sleep until the round moves (or `deadline` passes) if the
    /// poll says "not yet". Returns the poll's result.
    fn park<T>(
        &self,
        deadline: Option<Instant>,
        poll: &mut impl FnMut() -> Option<T>,
    ) -> Option<T> {
        let seen = {
            let round = self.round.lock();
            self.parked.fetch_add(1, Relaxed);
            *round
        };
        // Orders the registration before the poll's loads (see the module docs).
        fence(SeqCst);
        let r = poll();
        if r.is_none() {
            let mut round = self.round.lock();
            while *round == seen {
                match deadline {
                    None => round = self.cv.wait(round),
                    Some(d) => {
                        let (g, timed_out) = self.cv.wait_until(round, d);
                        round = g;
                        if timed_out {
                            break;
                        }
                    }
                }
            }
        }
        self.parked.fetch_sub(1, Relaxed);
        r
    }
}

/// The spin and yield phases: `Some` as soon as a poll says so.
fn spin<T>(poll: &mut impl FnMut() -> Option<T>) -> Option<T> {
    if let Some(v) = poll() {
        return Some(v);
    }
    #[cfg(not(loom))]
    {
        for _ in 0..SPINS {
            for _ in 0..SPIN_HINTS {
                std::hint::spin_loop();
            }
            if let Some(v) = poll() {
                return Some(v);
            }
        }
        for _ in 0..YIELDS {
            std::thread::yield_now();
            if let Some(v) = poll() {
                return Some(v);
            }
        }
    }
    None
}

#[cfg(all(test, not(loom)))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::time::Duration;

    use super::*;

    /// Spin until `p` has `n` waiters registered (the test's threads got as far as parking).
    fn until_parked(p: &Progress, n: usize) {
        while p.parked() < n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_parked_waiter_is_woken_by_a_publish() {
        let shared = Arc::new((AtomicU64::new(0), Progress::new()));
        let s = Arc::clone(&shared);
        let polls = Arc::new(AtomicU64::new(0));
        let n = Arc::clone(&polls);
        let t = std::thread::spawn(move || {
            s.1.wait(|| {
                n.fetch_add(1, SeqCst);
                let v = s.0.load(SeqCst);
                (v >= 5).then_some(v)
            })
        });
        until_parked(&shared.1, 1);
        // Registered before its last poll: that poll (or an earlier one) has been made.
        let before = polls.load(SeqCst);
        assert!(before > u64::from(SPINS + YIELDS));
        shared.0.store(5, SeqCst);
        assert!(
            shared.1.notify(),
            "a registered waiter makes notify take the lock"
        );
        assert_eq!(t.join().unwrap(), 5);
        assert_eq!(shared.1.parked(), 0);
    }

    #[test]
    fn waiters_for_different_targets_each_return_at_theirs() {
        let shared = Arc::new((AtomicU64::new(0), Progress::new()));
        let done = Arc::new((0..4).map(|_| AtomicBool::new(false)).collect::<Vec<_>>());
        let ts: Vec<_> = (1..=4u64)
            .map(|target| {
                let s = Arc::clone(&shared);
                let d = Arc::clone(&done);
                std::thread::spawn(move || {
                    let seen = s.1.wait(|| {
                        let v = s.0.load(SeqCst);
                        (v >= target).then_some(v)
                    });
                    d[target as usize - 1].store(true, SeqCst);
                    assert!(seen >= target);
                })
            })
            .collect();
        until_parked(&shared.1, 4);
        for v in 1..=4u64 {
            shared.0.store(v, SeqCst);
            shared.1.notify();
            // The waiter for `v` returns; those for later targets park again.
            while !done[v as usize - 1].load(SeqCst) {
                std::thread::yield_now();
            }
            for later in v as usize..4 {
                assert!(
                    !done[later].load(SeqCst),
                    "waiter {} returned early",
                    later + 1
                );
            }
        }
        for t in ts {
            t.join().unwrap();
        }
    }

    #[test]
    fn poisoning_wakes_every_waiter_with_the_error() {
        // The state a poll reads: a value that never comes, and a poison flag.
        let shared = Arc::new((AtomicU64::new(0), AtomicBool::new(false), Progress::new()));
        let ts: Vec<_> = (0..3)
            .map(|i| {
                let s = Arc::clone(&shared);
                std::thread::spawn(move || {
                    s.2.wait(|| {
                        if s.0.load(SeqCst) > 100 + i {
                            return Some(Ok(()));
                        }
                        s.1.load(SeqCst).then_some(Err("poisoned"))
                    })
                })
            })
            .collect();
        until_parked(&shared.2, 3);
        shared.1.store(true, SeqCst);
        shared.2.notify();
        for t in ts {
            assert_eq!(t.join().unwrap(), Err("poisoned"));
        }
    }

    #[test]
    fn notify_without_waiters_takes_no_lock() {
        let p = Progress::new();
        // Holding the lock: a notify that took it would never return from here.
        let held = p.round.lock();
        for _ in 0..1000 {
            assert!(!p.notify());
        }
        assert_eq!(*held, 0, "no round was started");
        drop(held);
    }

    #[test]
    fn a_wait_that_is_already_over_does_not_register() {
        let p = Progress::new();
        assert_eq!(p.wait(|| Some(7)), 7);
        assert_eq!(p.parked(), 0);
        assert!(!p.notify());
    }

    #[test]
    fn wait_until_returns_none_after_its_deadline() {
        let p = Progress::new();
        let mut polls = 0u32;
        let deadline = Instant::now() + Duration::from_millis(1);
        let r: Option<()> = p.wait_until(deadline, || {
            polls += 1;
            None
        });
        assert_eq!(r, None);
        assert!(Instant::now() >= deadline);
        // The spin, the yields, at least one parked poll and the final look.
        assert!(polls > SPINS + YIELDS + 1);
        assert_eq!(p.parked(), 0);
    }

    #[test]
    fn many_publishers_and_waiters_lose_no_wake_up() {
        // Each round: waiters for the round's value park, a publisher publishes it; a lost
        // wake-up would hang a waiter (and the test).
        let shared = Arc::new((AtomicU64::new(0), Progress::new()));
        for round in 1..=200u64 {
            let ts: Vec<_> = (0..3)
                .map(|_| {
                    let s = Arc::clone(&shared);
                    std::thread::spawn(move || {
                        s.1.wait(|| (s.0.load(SeqCst) >= round).then_some(()))
                    })
                })
                .collect();
            let s = Arc::clone(&shared);
            let publisher = std::thread::spawn(move || {
                s.0.store(round, SeqCst);
                s.1.notify();
            });
            publisher.join().unwrap();
            for t in ts {
                t.join().unwrap();
            }
        }
    }
}
