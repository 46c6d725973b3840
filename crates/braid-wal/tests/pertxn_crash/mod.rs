//! NV-Logging (`pertxn`) under power failures and load: every persist point of a small
//! transaction (`freeze_after(k)` for every k, then a crash), multi-object transactions, abort
//! objects, crashes during truncation, concurrent writers, damage detection, and truncation
//! keeping the index bounded under sustained load; and a log on a region file written back
//! with `msync`, poisoned when an `msync` fails.
//!
//! Crash points are persist events of the simulated region (`freeze_after`), so the images are
//! exact with `CrashMode::DropUnpersisted`; `KeepRandom` is used only on images taken at an
//! instant without a frozen region (on a frozen one it would keep stores made after the cut).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use braid_pmem::{CrashMode, CrashSim, Domain, Media, PmemConfig, Region};
use braid_wal::fs::{CrashOpts, FaultFs};
use braid_wal::record::{self, Kind};
use braid_wal::scan::ScanMode;
use braid_wal::scheme::pertxn::{
    FlushPolicy, ObjectPlace, PerTxnConfig, PerTxnLog, PerTxnStorage, layout,
};
use braid_wal::scheme::{DurabilityWait, LogKind, Replay, ReplayError, SchemeConfig};
use braid_wal::{Corruption, WalError};
use parking_lot::Mutex;

mod load;
mod refusals;

/// Records every replayed transaction in order.
#[derive(Default)]
struct Recorder {
    applied: Mutex<Vec<(u64, LogKind, Vec<u8>)>>,
}

impl Replay for Recorder {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.applied.lock().push((txn, kind, payload.to_vec()));
        Ok(())
    }
}

impl Recorder {
    fn map(&self) -> BTreeMap<u64, Vec<u8>> {
        self.applied
            .lock()
            .iter()
            .map(|(t, _, p)| (*t, p.clone()))
            .collect()
    }
    fn order(&self) -> Vec<u64> {
        self.applied.lock().iter().map(|(t, _, _)| *t).collect()
    }
}

fn cfg(mode: ScanMode) -> SchemeConfig {
    SchemeConfig {
        scan_mode: mode,
        ..SchemeConfig::default()
    }
}

fn pcfg(domain: Domain) -> PmemConfig {
    PmemConfig::default()
        .domain(domain)
        .flush(None)
        .write_delay_ns(0)
}

fn opts(flush: FlushPolicy, slot: usize, truncate: u64) -> PerTxnConfig {
    PerTxnConfig {
        flush,
        slot_size: slot,
        truncate_entries: truncate,
        backup_segment_size: 64 << 10,
        backup_buffer_size: 64 << 10,
        ..PerTxnConfig::default()
    }
}

fn storage(region: &Region, fs: &FaultFs, o: &PerTxnConfig) -> PerTxnStorage {
    PerTxnStorage {
        region: region.clone(),
        fs: Arc::new(fs.clone()),
        backup_dir: PathBuf::from("/db/pertxn-backup"),
        options: o.clone(),
    }
}

fn open(
    region: &Region,
    fs: &FaultFs,
    o: &PerTxnConfig,
    mode: ScanMode,
) -> Result<(PerTxnLog, Recorder), WalError> {
    let rec = Recorder::default();
    let (log, _) = PerTxnLog::open(&cfg(mode), storage(region, fs, o), &rec, &|_| {})?;
    Ok((log, rec))
}

/// Section 5.2's persist order, checked on a crashed image: every entry whose state word is set
/// points at its slot, and the object there decodes at the entry's LSN.
fn assert_state_implies_object(region: &Region, k: u64) {
    let lay = layout::read(region).unwrap().expect("formatted");
    let mut buf = vec![0u8; lay.slot_size];
    for i in 0..lay.entries as usize {
        let soff = layout::INDEX_OFF + i * layout::ENTRY_LEN;
        let Some(lsn) = layout::state_lsn(region.load_u64(soff + 8)) else {
            continue;
        };
        assert_eq!(
            region.load_u64(soff),
            lay.slot_off(lsn) as u64,
            "k={k}: entry {i} points elsewhere"
        );
        region.read(lay.slot_off(lsn), &mut buf);
        let len = record::peek_header(&buf)
            .map_or(0, |h| h.0 as usize)
            .min(buf.len());
        assert!(
            matches!(
                record::decode(&buf[..len], lsn, lay.salt),
                record::Decoded::Record(_)
            ),
            "k={k}: the state word of LSN {lsn} is persistent but its object is not"
        );
    }
}

fn payload(txn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (txn as usize * 31 + i * 7) as u8)
        .collect()
}

/// Commit `txn` with a payload of `len` bytes and wait until it is durable.
fn commit(log: &PerTxnLog, txn: u64, len: usize) {
    let mut w = log.writer();
    let end = w.insert(txn, Kind::Redo, &payload(txn, len), true).unwrap();
    log.ticket(end).wait().unwrap();
}

/// For every persist point of one transaction (after a few committed ones): crash there,
/// recover, and check the transaction is absent or whole, present once all its persist events
/// happened, and never lost again at a later point.
fn enumerate_one(flush: FlushPolicy, domain: Domain, len: usize, slot: usize) {
    // Without the flush daemon the committing thread makes every persist event itself, so
    // crash point k names the same state in every run (with the daemon, which of the two
    // threads persists what first varies between runs).
    enumerate_with(
        PerTxnConfig {
            flush_daemon: false,
            ..opts(flush, slot, 0)
        },
        domain,
        len,
    );
}

/// [`enumerate_one`] with the log's options `o`.
fn enumerate_with(o: PerTxnConfig, domain: Domain, len: usize) {
    let setup = |log: &PerTxnLog| {
        for t in 1..=3 {
            commit(log, t, 40);
        }
    };
    // Count the persist events of the transaction under test.
    let total = {
        let region = CrashSim::region(64 << 10, pcfg(domain));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        setup(&log);
        let before = region.persist_events();
        commit(&log, 9, len);
        let n = region.persist_events() - before;
        log.close().unwrap();
        n
    };
    assert!(
        total >= 2,
        "a transaction takes at least two persist events (object, state): {total}"
    );
    let mut seen_present = false;
    for k in 0..=total + 1 {
        let region = CrashSim::region(64 << 10, pcfg(domain));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        setup(&log);
        region.freeze_after(k).unwrap();
        commit(&log, 9, len);
        let crashed = region.crash(CrashMode::DropUnpersisted).unwrap();
        let fs2 = fs.crash(CrashOpts::drop_unsynced());
        drop(log);
        assert_state_implies_object(&crashed, k);
        let (log2, rec) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        let got = rec.map();
        for t in 1..=3 {
            assert_eq!(
                got.get(&t),
                Some(&payload(t, 40)),
                "k={k}: committed txn {t} lost"
            );
        }
        match got.get(&9) {
            Some(p) => {
                assert_eq!(p, &payload(9, len), "k={k}: transaction 9 recovered torn");
                seen_present = true;
            }
            None => {
                assert!(
                    !seen_present,
                    "k={k}: transaction 9 was recovered at an earlier crash point but not here"
                );
                assert!(
                    k < total,
                    "k={k} >= {total}: every persist event happened, yet transaction 9 is lost"
                );
            }
        }
        // Recovery is idempotent, and the log works after it.
        log2.close().unwrap();
        drop(log2);
        let (log3, rec3) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        assert_eq!(
            rec3.map(),
            got,
            "k={k}: a second recovery gave another state"
        );
        commit(&log3, 20, 30);
        log3.close().unwrap();
        drop(log3);
        let (_log4, rec4) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        assert_eq!(
            rec4.map().get(&20),
            Some(&payload(20, 30)),
            "k={k}: commit after recovery lost"
        );
    }
    assert!(seen_present);
}

#[test]
fn every_persist_point_flush_on_insert_adr() {
    enumerate_one(FlushPolicy::Insert, Domain::Adr, 60, 256);
}

#[test]
fn every_persist_point_flush_on_commit_adr() {
    enumerate_one(FlushPolicy::Commit, Domain::Adr, 60, 256);
}

#[test]
fn every_persist_point_eadr() {
    enumerate_one(FlushPolicy::Insert, Domain::Eadr, 60, 256);
    enumerate_one(FlushPolicy::Commit, Domain::Eadr, 60, 256);
}

/// NV-Disk+decentralized-logging (objects and state words written through the file system;
/// on a simulated region, as stores persisted at once): every persist point, one object and
/// several.
#[test]
fn every_persist_point_objects_placed_through_the_file_system() {
    for len in [60, 1000] {
        enumerate_with(
            PerTxnConfig {
                place: ObjectPlace::File,
                ..opts(FlushPolicy::Insert, 256, 0)
            },
            Domain::Adr,
            len,
        );
    }
}

/// place=file is flush-on-insert's way; with flush-on-commit it is refused at open.
#[test]
fn objects_placed_through_the_file_system_need_flush_on_insert() {
    let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
    let o = PerTxnConfig {
        place: ObjectPlace::File,
        ..opts(FlushPolicy::Commit, 256, 0)
    };
    let Err(e) = open(&region, &FaultFs::new(), &o, ScanMode::Strict) else {
        panic!("place=file with flush=commit was accepted");
    };
    assert!(e.to_string().contains("place=file"), "{e}");
}

#[test]
fn every_persist_point_multi_object_transaction() {
    // 1000 bytes in 256-byte slots: four objects, all or nothing.
    enumerate_one(FlushPolicy::Insert, Domain::Adr, 1000, 256);
    enumerate_one(FlushPolicy::Commit, Domain::Adr, 1000, 256);
}

/// Objects of a transaction followed by an abort object are never replayed, at any crash
/// point; the transactions around it are.
#[test]
fn abort_object_drops_the_transaction_at_every_crash_point() {
    let o = opts(FlushPolicy::Insert, 256, 0);
    let run = |log: &PerTxnLog| {
        commit(log, 1, 50);
        let mut w = log.writer();
        w.insert(2, Kind::Redo, &payload(2, 50), false).unwrap();
        w.insert(2, Kind::Redo, &payload(2, 70), false).unwrap();
        assert_eq!(w.open_txn(), Some(2));
        let end = w.abort(2).unwrap().expect("an abort object was written");
        assert_eq!(w.abort(2).unwrap(), None, "nothing left to abort");
        log.ticket(end).wait().unwrap();
        commit(log, 3, 50);
    };
    let total = {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let (log, _) = open(&region, &FaultFs::new(), &o, ScanMode::Strict).unwrap();
        let before = region.persist_events();
        run(&log);
        region.persist_events() - before
    };
    for k in 0..=total {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        region.freeze_after(k).unwrap();
        run(&log);
        let crashed = region.crash(CrashMode::DropUnpersisted).unwrap();
        drop(log);
        let (_l, rec) = open(
            &crashed,
            &fs.crash(CrashOpts::drop_unsynced()),
            &o,
            ScanMode::Strict,
        )
        .unwrap();
        let got = rec.map();
        assert!(!got.contains_key(&2), "k={k}: aborted transaction replayed");
        if got.contains_key(&3) {
            assert!(got.contains_key(&1), "k={k}: 3 without 1");
        }
    }
}
