//! An emulated device speed ([`Options::pace`]) is recorded with the database and applied when
//! it is reopened, so a log written to an emulated device is read back at that device's speed
//! (recovery's reads are paced as its writes were), unless the options name another pace.
//!
//! Each check is a lower bound on time, which a paced device cannot beat however fast the
//! machine: recovery of a log of `b` bytes from a device of `m` MB/s takes at least `b / m`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::integration::common::*;
use braid_engine::*;
use braid_wal::device::Pace;

/// Slow enough that reading the test's log back takes a measurable time.
const MBPS: f64 = 2.0;

fn paced_options(scheme: &'static str, pace: Option<Pace>) -> Options {
    let mut o = options(
        scheme,
        roomy_file_device(),
        braid_engine::testing::Env::default(),
    );
    o.pace = pace;
    o
}

/// Open `dir` with `o`; the recovery's bytes read and seconds, and the database's emulation.
fn reopen(dir: &Path, o: Options) -> (u64, f64, Option<String>) {
    let (db, report) = Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .loader(load)
        .open()
        .unwrap();
    let emulation = db.emulation();
    db.close().unwrap();
    (report.recovery.bytes, report.recovery.seconds, emulation)
}

fn recovery_is_paced_as_recorded(scheme: &'static str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let pace = Pace::default().mbps(MBPS).sync_us(0);
    {
        let db = open(&dir, paced_options(scheme, Some(pace))).unwrap();
        let mut w = db.worker().unwrap();
        for i in 0..400 {
            run_txn_durable(&mut w, i).unwrap();
        }
        drop(w);
        db.close().unwrap();
    }
    let meta = Meta::read(&dir).unwrap();
    assert_eq!(
        meta.pace,
        Some((MBPS, 0)),
        "{scheme}: braid.json records the pace"
    );

    // Reopened with the default options: the recorded pace, named, reads included.
    let (bytes, secs, emulation) = reopen(&dir, paced_options(scheme, None));
    assert!(
        bytes > 20_000,
        "{scheme}: a log of {bytes} bytes is too small to time"
    );
    let floor = bytes as f64 / (MBPS * 1e6);
    assert!(
        secs >= floor,
        "{scheme}: {bytes} bytes recovered in {secs:.3} s, faster than {MBPS} MB/s allows \
         ({floor:.3} s): recovery's reads were not paced"
    );
    let e = emulation.unwrap_or_default();
    assert!(e.contains("device speed emulated: 2 MB/s"), "{scheme}: {e}");

    // An unlimited pace overrides the recorded one for this open, and is not recorded.
    let (_, _, emulation) = reopen(&dir, paced_options(scheme, Some(Pace::default())));
    assert!(
        !emulation.unwrap_or_default().contains("device speed"),
        "{scheme}: an unlimited pace still paced the devices"
    );
    assert_eq!(Meta::read(&dir).unwrap().pace, Some((MBPS, 0)));
}

#[test]
fn serial_recovery_reads_at_the_recorded_pace() {
    recovery_is_paced_as_recorded("serial");
}

#[test]
fn taurus_recovery_reads_at_the_recorded_pace() {
    recovery_is_paced_as_recorded("taurus");
}

#[test]
fn a_database_created_without_a_pace_records_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = open(&dir, paced_options("serial", Some(Pace::default()))).unwrap();
    db.close().unwrap();
    assert_eq!(Meta::read(&dir).unwrap().pace, None);
}
