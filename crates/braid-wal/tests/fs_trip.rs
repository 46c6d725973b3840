//! `PersistTrip` on a `FaultFs`: every `sync_data` and `sync_dir` is a persist event; the one
//! that trips, and every later one, is held before it takes effect, so the crashed file system
//! holds exactly what the syncs before it made durable; a trip past the last sync reports
//! `false` without hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use braid_pmem::PersistTrip;
use braid_wal::fs::{CrashOpts, FaultFs, Fs, OpenOpts};

/// Synced writes made by each writer.
const K: u64 = 10;
const WAIT: Duration = Duration::from_secs(60);

/// Create `dir/name` and sync the directory (one event), then append `K` 8-byte words, each
/// synced on its own (one event each). With `release`, releases the trip at the end, as a test
/// driver does when its run is over.
fn writer(fs: FaultFs, dir: PathBuf, name: &str, trip: Arc<PersistTrip>, release: bool) {
    let f = fs
        .open(&dir.join(name), OpenOpts::create_truncate())
        .unwrap();
    fs.sync_dir(&dir).unwrap();
    for i in 0..K {
        f.write_all_at(i * 8, &(i + 1).to_le_bytes()).unwrap();
        f.sync_data().unwrap();
    }
    if release {
        trip.release();
    }
}

/// Synced words found in `path` of a crashed file system (`None`: the file is not there).
fn words(fs: &FaultFs, path: &Path) -> Option<u64> {
    let b = fs.contents(path)?;
    assert_eq!(b.len() % 8, 0);
    for (i, w) in b.chunks(8).enumerate() {
        assert_eq!(w, (i as u64 + 1).to_le_bytes(), "word {i}");
    }
    Some(b.len() as u64 / 8)
}

#[test]
fn the_nth_sync_and_later_ones_are_not_in_the_crash() {
    let dir = PathBuf::from("/trip");
    for n in [1, 2, 3, 8, K + 1] {
        let fs = FaultFs::new();
        fs.create_dir_all(&dir).unwrap();
        let trip = Arc::new(PersistTrip::new(n));
        fs.set_trip(Arc::clone(&trip));
        let h = std::thread::spawn({
            let (fs, dir, trip) = (fs.clone(), dir.clone(), Arc::clone(&trip));
            move || writer(fs, dir, "log", trip, true)
        });
        assert!(trip.wait_tripped(WAIT), "n = {n}");
        assert_eq!(trip.events(), n);
        let (after, ()) = fs.crash_with(CrashOpts::drop_unsynced(), || ());
        trip.release();
        h.join().unwrap();
        // Event 1 (the directory sync) makes the file exist; event `k > 1` makes word `k - 1`.
        let expect = (n > 1).then(|| n - 2);
        assert_eq!(words(&after, &dir.join("log")), expect, "n = {n}");
        assert_eq!(trip.events(), n, "events after the release do not count");
    }
}

#[test]
fn concurrent_syncs_are_cut_at_one_event() {
    let dir = PathBuf::from("/trip2");
    let fs = FaultFs::new();
    fs.create_dir_all(&dir).unwrap();
    let n = 13;
    let trip = Arc::new(PersistTrip::new(n));
    fs.set_trip(Arc::clone(&trip));
    let hs: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let (fs, dir, trip) = (fs.clone(), dir.clone(), Arc::clone(&trip));
            // No release at the end: one writer may finish before the nth event.
            std::thread::spawn(move || writer(fs, dir, name, trip, false))
        })
        .collect();
    assert!(trip.wait_tripped(WAIT));
    let after = fs.crash(CrashOpts::drop_unsynced());
    trip.release();
    for h in hs {
        h.join().unwrap();
    }
    // Each file's directory sync is one event and makes both entries durable once it ran; the
    // remaining events before the nth each made one word durable.
    let got: Vec<Option<u64>> = ["a", "b"]
        .iter()
        .map(|name| words(&after, &dir.join(name)))
        .collect();
    let dir_syncs = 2;
    let synced_words: u64 = got.iter().flatten().sum();
    assert!(got.iter().all(Option::is_some), "{got:?}");
    assert_eq!(synced_words, n - 1 - dir_syncs, "{got:?}");
}

#[test]
fn a_trip_past_the_last_sync_returns_false() {
    let dir = PathBuf::from("/trip3");
    let fs = FaultFs::new();
    fs.create_dir_all(&dir).unwrap();
    let trip = Arc::new(PersistTrip::new(K + 2));
    fs.set_trip(Arc::clone(&trip));
    let h = std::thread::spawn({
        let (fs, dir, trip) = (fs.clone(), dir.clone(), Arc::clone(&trip));
        move || writer(fs, dir, "log", trip, true)
    });
    assert!(!trip.wait_tripped(WAIT));
    h.join().unwrap();
    assert_eq!(trip.events(), K + 1);
    let after = fs.crash(CrashOpts::drop_unsynced());
    assert_eq!(words(&after, &dir.join("log")), Some(K));
}
