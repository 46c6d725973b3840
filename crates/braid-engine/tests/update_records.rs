//! Per-update records (`Records::Update`): every write reaches the log as it happens and the
//! commit adds a commit record. Recovery redoes exactly the committed transactions; a
//! transaction open across a checkpoint keeps the writes it logged before it (the cut's start
//! waits for it); an aborted one leaves no trace; a scheme that cannot log per update, command
//! logging and MVCC are refused with a message. Every scheme that logs per update is run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use braid_engine::log::*;
use braid_engine::*;

const KV: TableId = TableId(0);
const ROWS: u64 = 32;

fn catalog() -> Catalog {
    let mut c = Catalog::new();
    c.add(
        TableDef::new("kv", IndexKind::Ordered)
            .column("a", ColumnType::U64)
            .column("b", ColumnType::U64),
    );
    c
}

fn load(l: &Loader<'_>) -> Result<(), EngineError> {
    for k in 0..ROWS {
        let mut img = [0u8; 16];
        img[..8].copy_from_slice(&k.to_le_bytes());
        l.insert(KV, k, &img)?;
    }
    Ok(())
}

/// The schemes that log per update, each on the device it is tested on.
fn schemes() -> Vec<(&'static str, DeviceConfig)> {
    let file = || {
        DeviceConfig::File(
            FileOptions::default()
                .segment_size(64 << 10)
                .buffer_size(256 << 10),
        )
    };
    let pmem = || DeviceConfig::Pmem(PmemOptions::default().ring_size(4 << 20).destage(false));
    let mut out = Vec::new();
    for reg in braid_wal::scheme::SCHEMES {
        let def = (reg.default)();
        if def.update_records_refusal().is_some() {
            continue;
        }
        match def.log_place() {
            LogPlace::Region => out.push((reg.name, pmem())),
            LogPlace::NvramFiles => out.push((reg.name, file())),
            LogPlace::Devices => {
                out.push((reg.name, file()));
                if def.pmem_refusal().is_none() {
                    out.push((reg.name, pmem()));
                }
            }
            LogPlace::Nowhere => {}
        }
    }
    out
}

fn opts(scheme: &str, device: DeviceConfig, cc: Cc) -> Options {
    Options::default()
        .scheme(scheme.parse().unwrap())
        .device(device)
        .cc(cc)
        .records(Records::Update)
        .streams(2)
        .recovery_threads(2)
}

fn state(db: &Db) -> BTreeMap<u64, Vec<u8>> {
    let mut m = BTreeMap::new();
    db.for_each_row(KV, .., |k, img| {
        m.insert(k, img.to_vec());
    });
    m
}

fn get(db: &Db, key: u64, col: usize) -> Option<u64> {
    let mut out = None;
    db.for_each_row(KV, .., |k, img| {
        if k == key {
            out = Some(db.schema(KV).get::<u64>(img, col));
        }
    });
    out
}

/// Open (create or recover) the database in `dir` with `o`.
fn open(dir: &Path, o: Options) -> (Db, OpenReport) {
    Db::builder(dir)
        .options(o)
        .catalog(catalog())
        .loader(load)
        .open()
        .unwrap()
}

/// A run of transactions that update, insert and delete, some aborted after logging writes,
/// then a clean reopen: the recovered state is the state before it.
fn recovers_what_committed(scheme: &str, device: DeviceConfig, cc: Cc) {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let o = opts(scheme, device, cc);
    let (db, _) = open(&dir, o.clone());
    let mut w = db.worker().unwrap();
    for i in 0..400u64 {
        let mut tx = w.begin();
        let k = i % ROWS;
        tx.update(KV, k, |r| r.set::<u64>(1, i)).unwrap();
        // A second write of the same row: the record of each call holds its own columns.
        tx.update(KV, k, |r| {
            let a = r.get::<u64>(0);
            r.set::<u64>(0, a + 1)
        })
        .unwrap();
        let fresh = 1000 + i;
        let mut img = [0u8; 16];
        img[..8].copy_from_slice(&fresh.to_le_bytes());
        tx.insert(KV, fresh, &img).unwrap();
        if i % 3 == 0 {
            tx.delete(KV, fresh - 1).unwrap();
        }
        if i % 7 == 0 {
            // Logged under 2PL, then rolled back: no trace after recovery.
            tx.abort();
            continue;
        }
        tx.commit().unwrap();
    }
    let want = state(&db);
    drop(w);
    db.close().unwrap();
    drop(db);
    let (db, r) = open(&dir, o);
    assert!(
        r.recovery.txns >= 300,
        "{scheme}: {} transactions replayed",
        r.recovery.txns
    );
    assert_eq!(state(&db), want, "{scheme} {cc:?}: recovered state differs");
    drop(db);
    Db::destroy(&dir).unwrap();
}

#[test]
fn recovery_redoes_exactly_the_committed_transactions() {
    for (scheme, device) in schemes() {
        recovers_what_committed(scheme, device.clone(), Cc::TwoPl);
        recovers_what_committed(scheme, device, Cc::Occ);
    }
}

/// A transaction that logged a write before a checkpoint and commits after it (in the new
/// epoch) keeps that write: the checkpoint's cut starts at its first record, so recovery from
/// the checkpoint reads it. With the cut at the log's end when the checkpoint began, recovery
/// found the commit record and not the write.
#[test]
fn a_transaction_open_across_checkpoints_keeps_its_writes() {
    for (scheme, device) in schemes() {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        let dir = base.path().join("db");
        let o = opts(scheme, device, Cc::TwoPl);
        let (db, _) = open(&dir, o.clone());
        let mut w = db.worker().unwrap();
        let mut other = db.worker().unwrap();
        let mut tx = w.begin();
        tx.update(KV, 5, |r| r.set::<u64>(1, 777)).unwrap();
        // Other transactions and two checkpoints (the second truncates the log before the
        // first one's cut) while `tx` is open.
        for round in 0..2u64 {
            for i in 0..50u64 {
                let mut t = other.begin();
                t.update(KV, 10 + i % 8, |r| r.set::<u64>(1, round * 100 + i))
                    .unwrap();
                t.commit().unwrap();
            }
            db.checkpoint().unwrap();
        }
        tx.update(KV, 6, |r| r.set::<u64>(1, 888)).unwrap();
        tx.commit().unwrap();
        let want = state(&db);
        drop((w, other));
        db.close().unwrap();
        drop(db);
        let (db, r) = open(&dir, o);
        assert!(r.checkpoint.is_some(), "{scheme}: no checkpoint loaded");
        assert_eq!(
            get(&db, 5, 1),
            Some(777),
            "{scheme}: the write before the cut"
        );
        assert_eq!(
            get(&db, 6, 1),
            Some(888),
            "{scheme}: the write after the cut"
        );
        assert_eq!(state(&db), want, "{scheme}: recovered state differs");
        drop(db);
        Db::destroy(&dir).unwrap();
    }
}

#[test]
fn what_cannot_log_per_update_is_refused_with_a_message() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = base.path().join("db");
    let refused = |o: Options, want: &str| {
        let e = Db::builder(&dir)
            .options(o)
            .catalog(catalog())
            .loader(load)
            .open()
            .unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    };
    let mut o = opts(
        "taurus",
        DeviceConfig::File(FileOptions::default()),
        Cc::TwoPl,
    );
    refused(o.clone(), "per-update records");
    o.scheme = "serial".parse().unwrap();
    o.logging = LogKind::Command;
    refused(o.clone(), "command logging");
    o.logging = LogKind::Data;
    o.cc = Cc::Mvcc;
    refused(o, "MVCC");
}
