//! [`PersistTrip`]: a power cut placed by persist-event count, so a seed replays a failure.
//!
//! Crash tests that cut the power after a random wall-clock delay do not replay: the same seed
//! cuts at a different point on every run. A trip counts *persist events* instead — every
//! `fsync`/`fdatasync`/directory sync on a fault-injecting file system, every fence of a
//! simulated persistent-memory region it is attached to — and holds the thread making the
//! `n`th event (and any later one) before that event takes effect. The test waits for the
//! trip ([`PersistTrip::wait_tripped`]), takes the crash image, and releases the held threads
//! ([`PersistTrip::release`]); events that happen after the release are after the cut and are
//! not counted.
//!
//! The thread is held at the very start of the persisting operation, before it takes any
//! lock of the file system or the region, so the crash (which takes those locks) cannot
//! deadlock with it. Choice beyond what a single-threaded count needs: with several threads,
//! events numbered above `n` are held too, so the crashed image holds exactly the events
//! numbered below `n` however the threads race.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Debug, Default)]
struct TripState {
    /// Events counted (those before the release).
    events: u64,
    /// The `n`th event happened and its thread is held.
    tripped: bool,
    /// Held threads go on; later events are not counted.
    released: bool,
}

/// A tripwire on persist events shared by the simulated devices of one crash test (see the
/// module documentation). `Sync`; share it as an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use braid_pmem::{CrashMode, CrashSim, PersistTrip, PmemConfig};
///
/// let r = CrashSim::region(4096, PmemConfig::default());
/// let trip = Arc::new(PersistTrip::new(2));
/// r.set_trip(Arc::clone(&trip))?;
/// let writer = {
///     let r = r.clone();
///     std::thread::spawn(move || {
///         r.write(0, b"first!!!");
///         r.persist(0, 8); // event 1
///         r.write(64, b"second!!");
///         r.persist(64, 8); // event 2: held until the release
///     })
/// };
/// assert!(trip.wait_tripped(Duration::from_secs(10)));
/// let after = r.crash(CrashMode::DropUnpersisted)?;
/// trip.release();
/// writer.join().unwrap();
/// let mut buf = [0u8; 8];
/// after.read(0, &mut buf);
/// assert_eq!(&buf, b"first!!!");
/// after.read(64, &mut buf);
/// assert_eq!(buf, [0; 8]);
/// # Ok::<(), braid_pmem::PmemError>(())
/// ```
#[derive(Debug)]
pub struct PersistTrip {
    /// The event that trips (1-based).
    at: u64,
    state: Mutex<TripState>,
    cv: Condvar,
}

impl PersistTrip {
    /// A trip that holds the `n`th persist event (counted from 1; `0` is taken as `1`) and
    /// every later one until [`PersistTrip::release`].
    pub fn new(n: u64) -> PersistTrip {
        PersistTrip {
            at: n.max(1),
            state: Mutex::new(TripState::default()),
            cv: Condvar::new(),
        }
    }

    /// The event number that trips.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// Called by a device at the start of each persist event, before the event takes effect
    /// and holding no lock: counts the event and, from the `n`th on, blocks until
    /// [`PersistTrip::release`]. After the release it returns at once and counts nothing.
    pub fn persist_event(&self) {
        let mut st = self.state.lock();
        if st.released {
            return;
        }
        st.events += 1;
        if st.events < self.at {
            return;
        }
        if !st.tripped {
            st.tripped = true;
            self.cv.notify_all();
        }
        while !st.released {
            self.cv.wait(&mut st);
        }
    }

    /// Wait until the `n`th event is held (`true`), or until `timeout` passes or the trip is
    /// released without having tripped (`false`: the run made fewer events).
    pub fn wait_tripped(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        while !st.tripped && !st.released {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                break;
            }
        }
        st.tripped
    }

    /// Let held threads go on; later events proceed at once and are not counted. Also wakes a
    /// [`PersistTrip::wait_tripped`] that is still waiting (call it when the run ends, so a trip
    /// beyond the events made does not wait out its timeout).
    pub fn release(&self) {
        let mut st = self.state.lock();
        st.released = true;
        self.cv.notify_all();
    }

    /// Whether the `n`th event happened (and, until the release, is held).
    pub fn is_tripped(&self) -> bool {
        self.state.lock().tripped
    }

    /// Persist events counted so far: those before the release, held ones included.
    pub fn events(&self) -> u64 {
        self.state.lock().events
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::sync::Arc;

    use super::*;

    #[test]
    fn events_before_n_pass_and_the_nth_is_held() {
        let trip = Arc::new(PersistTrip::new(3));
        trip.persist_event();
        trip.persist_event();
        assert!(!trip.is_tripped());
        let t = Arc::clone(&trip);
        let h = std::thread::spawn(move || t.persist_event());
        assert!(trip.wait_tripped(Duration::from_secs(10)));
        assert!(!h.is_finished());
        trip.release();
        h.join().unwrap();
        trip.persist_event();
        assert_eq!(trip.events(), 3);
    }

    #[test]
    fn release_without_trip_wakes_the_waiter() {
        let trip = Arc::new(PersistTrip::new(5));
        trip.persist_event();
        let t = Arc::clone(&trip);
        let h = std::thread::spawn(move || t.wait_tripped(Duration::from_secs(60)));
        trip.release();
        assert!(!h.join().unwrap());
        assert!(!trip.wait_tripped(Duration::from_millis(1)));
        assert_eq!(trip.events(), 1);
    }

    #[test]
    fn timeout_returns_false() {
        let trip = PersistTrip::new(1);
        assert!(!trip.wait_tripped(Duration::from_millis(20)));
        assert_eq!(trip.at(), 1);
        assert_eq!(PersistTrip::new(0).at(), 1);
    }
}
