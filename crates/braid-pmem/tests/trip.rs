//! `PersistTrip` on simulated regions: the fence that trips, and every later one, is held
//! before it takes effect, so the crashed image holds exactly the lines persisted by the
//! fences before it; a trip past the last fence reports `false` without hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use braid_pmem::{CrashMode, CrashSim, PersistTrip, PmemConfig, PmemError, Region};

/// Persists made by each writer.
const K: u64 = 12;
const WAIT: Duration = Duration::from_secs(60);

/// Persist `K` lines one by one (line `i` holds `i + 1`): fence `i + 1` makes line `i` durable.
/// Releases the trip at the end, as a test driver does when its run is over.
fn writer(r: Region, trip: Arc<PersistTrip>) {
    for i in 0..K {
        let off = i as usize * 64;
        r.write(off, &(i + 1).to_le_bytes());
        r.persist(off, 8);
    }
    trip.release();
}

/// Lines of `r` holding their value (a prefix, and nothing after it).
fn persisted_lines(r: &Region) -> u64 {
    let n = (0..K)
        .take_while(|&i| r.load_u64(i as usize * 64) == i + 1)
        .count() as u64;
    for i in n..K {
        assert_eq!(
            r.load_u64(i as usize * 64),
            0,
            "line {i} after a missing one"
        );
    }
    n
}

#[test]
fn the_nth_fence_and_later_ones_are_not_in_the_image() {
    for n in [1, 2, 7, K] {
        let r = CrashSim::region(64 * K as usize, PmemConfig::default());
        let trip = Arc::new(PersistTrip::new(n));
        r.set_trip(Arc::clone(&trip)).unwrap();
        let h = std::thread::spawn({
            let (r, trip) = (r.clone(), Arc::clone(&trip));
            move || writer(r, trip)
        });
        assert!(trip.wait_tripped(WAIT), "n = {n}");
        assert_eq!(trip.events(), n);
        let after = r.crash(CrashMode::DropUnpersisted).unwrap();
        trip.release();
        h.join().unwrap();
        assert_eq!(persisted_lines(&after), n - 1, "n = {n}");
        // Events after the release do not count.
        assert_eq!(trip.events(), n);
    }
}

#[test]
fn regions_sharing_a_trip_are_cut_at_one_event() {
    // n <= K: no writer can finish (and release the trip) before the nth fence.
    let n = 9;
    let regions: Vec<Region> = (0..2)
        .map(|_| CrashSim::region(64 * K as usize, PmemConfig::default()))
        .collect();
    let trip = Arc::new(PersistTrip::new(n));
    for r in &regions {
        r.set_trip(Arc::clone(&trip)).unwrap();
    }
    let hs: Vec<_> = regions
        .iter()
        .map(|r| {
            let (r, trip) = (r.clone(), Arc::clone(&trip));
            std::thread::spawn(move || writer(r, trip))
        })
        .collect();
    assert!(trip.wait_tripped(WAIT));
    let list: Vec<(&Region, CrashMode)> = regions
        .iter()
        .map(|r| (r, CrashMode::DropUnpersisted))
        .collect();
    let after = Region::crash_together(&list).unwrap();
    trip.release();
    for h in hs {
        h.join().unwrap();
    }
    let total: u64 = after.iter().map(persisted_lines).sum();
    assert_eq!(total, n - 1, "every fence from the nth on is held");
}

#[test]
fn a_trip_past_the_last_fence_returns_false() {
    let r = CrashSim::region(64 * K as usize, PmemConfig::default());
    let trip = Arc::new(PersistTrip::new(K + 1));
    r.set_trip(Arc::clone(&trip)).unwrap();
    let h = std::thread::spawn({
        let (r, trip) = (r.clone(), Arc::clone(&trip));
        move || writer(r, trip)
    });
    assert!(!trip.wait_tripped(WAIT));
    h.join().unwrap();
    assert_eq!(trip.events(), K);
    assert_eq!(
        persisted_lines(&r.crash(CrashMode::DropUnpersisted).unwrap()),
        K
    );
}

#[test]
fn only_simulated_regions_take_a_trip() {
    let r = Region::anonymous(4096);
    assert!(matches!(
        r.set_trip(Arc::new(PersistTrip::new(1))),
        Err(PmemError::NotSimulated)
    ));
}
