//! A bounded log by default (`CheckpointOptions::default`, which `Options::default()` takes):
//! automatic checkpoints by log size keep the log held under a bound however long the database
//! runs, a reopen recovers the right state from the newest checkpoint, and a power cut at any
//! moment of an automatic checkpoint (and its truncation), with commits going on, loses no
//! acknowledged transaction (docs/design.md invariants 1-4).
//!
//! The runs here use the default options with the size threshold and the segment files scaled
//! down (the default's 64 MiB of log per checkpoint and 64 MiB segments would make a test write
//! hundreds of MiB); the trigger and the truncation are the default's own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::integration::common::*;
use braid_engine::log::*;
use braid_engine::*;
use braid_wal::fs::{CrashOpts, FaultFs};

/// Bytes of segment file: the log is released by whole segments.
const SEGMENT: u64 = 16 << 10;

/// The default options on `fs`, with `threshold` bytes of log per checkpoint and small
/// segments.
fn scaled_default(fs: &FaultFs, threshold: u64) -> Options {
    Options::default()
        .env(file_env(fs))
        .device(DeviceConfig::File(
            FileOptions::default()
                .segment_size(SEGMENT)
                .buffer_size(64 << 10),
        ))
        .checkpoint(CheckpointOptions::default().log_bytes(Some(threshold)))
}

/// From one look at the public stats: the log grown since the last checkpoint (or since open:
/// `base_at_open` is the log held then), the growth that makes the size trigger due, and the
/// checkpoints taken so far.
fn growth(db: &Db, threshold: u64, base_at_open: u64) -> (u64, u64, u64) {
    let st = db.stats();
    let (base, image) = st
        .checkpoints
        .last
        .as_ref()
        .map_or((base_at_open, 0), |l| (l.log_bytes_after, l.bytes));
    (
        st.log_bytes.saturating_sub(base),
        threshold.max(image),
        st.checkpoints.taken,
    )
}

/// If the size trigger is due, wait (generously: the machine is shared) until the trigger
/// thread has taken the checkpoint, or until it is no longer due (the look that found it due
/// may have read the log held before a truncation and the stats after it).
fn settle(db: &Db, threshold: u64, base_at_open: u64) {
    let (grown, due, taken) = growth(db, threshold, base_at_open);
    if grown < due {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = db.stats().checkpoints;
        assert!(st.failed == 0, "an automatic checkpoint failed: {st:?}");
        let (grown, due, _) = growth(db, threshold, base_at_open);
        if st.taken > taken || grown < due {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no automatic checkpoint within 60 s of the log passing the threshold: {st:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn the_default_checkpoints_by_log_size() {
    let c = Options::default().checkpoint;
    assert_eq!(c.log_bytes, Some(CheckpointOptions::DEFAULT_LOG_BYTES));
    assert_eq!(c.log_ratio, Some(1.0));
    assert!(c.interval.is_none() && c.log_cap.is_none(), "{c:?}");
    assert!(!CheckpointOptions::off().automatic());
    // Scheme none keeps no log: its automatic checkpoints are off, and say why.
    let none: SchemeSpec = "none".parse().unwrap();
    assert!(c.automatic_for(&none).unwrap_err().contains("no log"));
    assert_eq!(c.automatic_for(&"serial".parse().unwrap()), Ok(true));
    let dir = tempfile::tempdir().unwrap();
    let db = open(
        &dir.path().join("db"),
        Options::default().scheme(none).device(DeviceConfig::Null),
    )
    .unwrap();
    assert!(
        db.stats()
            .checkpoints
            .off
            .is_some_and(|why| why.contains("no log"))
    );
    db.close().unwrap();

    // Checkpoint settings are not part of braid.json: a database written without automatic
    // checkpoints opens with the default, and the other way round.
    let fs = FaultFs::new();
    let dir = Path::new("/db");
    let off = scaled_default(&fs, 1 << 20).checkpoint(CheckpointOptions::off());
    let mut h = History::default();
    for (k, o) in [off.clone(), scaled_default(&fs, 1 << 20), off]
        .into_iter()
        .enumerate()
    {
        let db = open(dir, o).unwrap();
        assert_eq!(check(&db, &h), Ok(h.installed.len()), "open {k}");
        run_clean(&db, 10 * k as u64, 10, &mut h, &mut |_| {});
        db.close().unwrap();
    }
}

/// Run under the (scaled) default past five thresholds of log: the log held never exceeds
/// about two thresholds and a segment (checked: under three thresholds, the threshold being
/// the last checkpoint's size where that is larger), five checkpoints were taken by the trigger
/// alone, and the database reopens from the newest to the same state, reading and replaying
/// only the log after it.
#[test]
fn the_default_keeps_the_log_bounded_and_reopens_from_its_checkpoint() {
    const T: u64 = 256 << 10;
    let fs = FaultFs::new();
    fs.set_record_ops(false);
    let dir = Path::new("/db");
    let o = scaled_default(&fs, T);
    let db = open(dir, o.clone()).unwrap();
    let base_at_open = db.stats().log_bytes;
    let mut w = db.worker().unwrap();
    let mut h = History::default();
    let (mut i, mut max_held, mut max_due) = (0u64, 0u64, 0u64);
    while db.stats().checkpoints.taken < 5 {
        // Bursts of 16 transactions (under a sixteenth of the threshold); once a checkpoint is
        // due, wait for the trigger thread to take it (it polls every 50 ms), so how far the
        // log overshoots does not depend on how busy the machine is.
        for _ in 0..16 {
            run_txn_durable(&mut w, i).unwrap();
            h.installed.push(i);
            h.acked.push(h.installed.len() - 1);
            i += 1;
        }
        max_held = max_held.max(db.stats().log_bytes);
        // The growth that makes a checkpoint due: the threshold, or the last checkpoint's size
        // if larger (`log_ratio` 1.0; the history table grows with every transaction).
        max_due = max_due.max(growth(&db, T, base_at_open).1);
        settle(&db, T, base_at_open);
        assert!(
            i < 200_000,
            "five thresholds of log not reached in {i} transactions"
        );
    }
    let st = db.stats();
    assert_eq!(st.checkpoints.failed, 0, "{:?}", st.checkpoints);
    max_held = max_held.max(st.checkpoints.max_log_bytes);
    assert!(
        max_held > T && max_held < 3 * max_due,
        "log held at most {max_held} bytes with checkpoints due every {T} to {max_due} bytes"
    );
    assert_eq!(
        checkpoint::list_in(&o.env, dir).unwrap().len(),
        checkpoint::KEEP
    );
    let held_at_close = db.stats().log_bytes;
    drop(w);
    db.close().unwrap();
    drop(db);

    let (db, r) = Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .loader(load)
        .open()
        .unwrap();
    let ck = r
        .checkpoint
        .as_ref()
        .expect("reopened without a checkpoint");
    assert!(ck.epoch >= 5, "{ck:?}");
    assert!(
        r.recovery.txns < i / 2,
        "replayed {} of {i} transactions after the checkpoint",
        r.recovery.txns
    );
    // The log is kept from the older of the two checkpoints, at least a threshold before the
    // newer one: recovery reads from the newer one's cut on, not from the first byte kept.
    assert!(
        r.recovery.bytes + T / 2 < held_at_close,
        "recovery read {} bytes of the {held_at_close} held",
        r.recovery.bytes
    );
    assert_eq!(check(&db, &h), Ok(h.installed.len()));
    db.close().unwrap();
}

/// A power cut after every file-system operation of an automatic checkpoint (triggered by log
/// size) and of the truncation after it, while a worker goes on committing: every recovery
/// holds a prefix of the transactions that covers every one acknowledged by then, and the cuts
/// land both before and after the new checkpoint counts.
#[test]
fn a_power_cut_during_an_automatic_checkpoint_loses_nothing_acknowledged() {
    const T: u64 = 64 << 10;
    let fs = FaultFs::new();
    fs.set_record_ops(false);
    let dir = Path::new("/db");
    let o = scaled_default(&fs, T);
    let db = open(dir, o.clone()).unwrap();
    let base_at_open = db.stats().log_bytes;
    let mut w = db.worker().unwrap();
    let mut h = History::default();
    let mut i = 0u64;
    let mut commit = |w: &mut Worker, h: &mut History| {
        run_txn_durable(w, i).unwrap();
        h.installed.push(i);
        h.acked.push(h.installed.len() - 1);
        i += 1;
    };
    // Up to the first automatic checkpoint (the second one truncates the log), then up to
    // shortly before the second is due.
    while db.stats().checkpoints.taken < 1 {
        commit(&mut w, &mut h);
        settle(&db, T, base_at_open);
    }
    loop {
        let (grown, due, _) = growth(&db, T, base_at_open);
        if grown + due / 32 >= due {
            break;
        }
        commit(&mut w, &mut h);
    }
    // Everything so far is acknowledged and durable: the operation log starts here.
    let before = h.installed.len();
    fs.set_record_ops(true);
    // Commit one transaction a millisecond until the trigger thread has taken the checkpoint,
    // noting how many file-system operations had happened when each was acknowledged.
    let mut acked_at = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.stats().checkpoints.taken < 2 {
        assert!(Instant::now() < deadline, "{:?}", db.stats().checkpoints);
        commit(&mut w, &mut h);
        acked_at.push(fs.op_count());
        std::thread::sleep(Duration::from_millis(1));
    }
    // A few more after it, so cuts land after the truncation too.
    for _ in 0..3 {
        commit(&mut w, &mut h);
        acked_at.push(fs.op_count());
    }
    let n = fs.op_count();
    drop(w);
    let mut loaded = [0usize; 3];
    for k in 0..=n {
        // The acknowledged transactions a cut after operation k must keep.
        let mut hk = History {
            installed: h.installed.clone(),
            acked: (0..before).collect(),
        };
        hk.acked.extend(
            acked_at
                .iter()
                .enumerate()
                .filter(|&(_, &at)| at <= k)
                .map(|(j, _)| before + j),
        );
        for (mode, co) in [CrashOpts::drop_unsynced(), CrashOpts::tear_last(k as u64)]
            .into_iter()
            .enumerate()
        {
            let crashed = fs.crash_after(k, co).unwrap();
            let (back, r) = Db::builder(dir)
                .options(o.clone().env(file_env(&crashed)))
                .catalog(catalog())
                .loader(load)
                .open()
                .unwrap_or_else(|e| panic!("power cut after operation {k} ({mode}): {e}"));
            if let Err(e) = check(&back, &hk) {
                panic!("power cut after operation {k} of {n} ({mode}): {e}");
            }
            let epoch = r.checkpoint.as_ref().map_or(0, |c| c.epoch as usize);
            loaded[epoch.min(2)] += 1;
            back.close().unwrap();
        }
    }
    assert!(
        loaded[1] > 0 && loaded[2] > 0,
        "recoveries by checkpoint loaded (none, first, second): {loaded:?}"
    );
    db.close().unwrap();
}
