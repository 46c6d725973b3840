//! TATP: consistency after concurrent runs of both mixes, the specified outcomes of single
//! transactions, deterministic loading, and recovery through the serial scheme on persistent
//! memory under data and command logging.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use braid_engine::{Db, Params, TxError, log::LogKind};
use braid_workloads::Workload;
use braid_workloads::tatp::*;

fn small(mix: TatpMix) -> Tatp {
    Tatp::new(TatpConfig::default().subscribers(2000).mix(mix)).unwrap()
}

fn mem_db(w: &Tatp) -> (tempfile::TempDir, Db) {
    let base = tempfile::tempdir().unwrap();
    let db = open(&base.path().join("db"), none(), w);
    (base, db)
}

#[test]
fn the_population_is_consistent_and_deterministic() {
    let w = small(TatpMix::Standard);
    let (_a, db1) = mem_db(&w);
    let (_b, db2) = mem_db(&w);
    w.check(&db1).unwrap();
    assert_same(&snapshot(&db1), &snapshot(&db2));
    assert_eq!(db1.rows(SUBSCRIBER), 2000);
    // 1..4 rows per subscriber, 2.5 on average; 0..3 forwardings per facility.
    let (ai, sf, cf) = (
        db1.rows(ACCESS_INFO),
        db1.rows(SPECIAL_FACILITY),
        db1.rows(CALL_FORWARDING),
    );
    assert!(
        (4500..5500).contains(&ai) && (4500..5500).contains(&sf),
        "{ai} {sf}"
    );
    assert!((cf as f64 / sf as f64 - 1.5).abs() < 0.15, "{cf} {sf}");
    let img = db1.peek(SUBSCRIBER, 17).unwrap();
    assert_eq!(
        &img[db1.schema(SUBSCRIBER).range(subscriber::SUB_NBR)],
        b"000000000000017"
    );
}

#[test]
fn standard_mix_from_two_threads_stays_consistent() {
    let w = small(TatpMix::Standard);
    let (_d, db) = mem_db(&w);
    let cf_before = db.rows(CALL_FORWARDING);
    let o = run(&db, &w, 2, 2000, 1);
    assert_eq!(o.committed + o.user_aborts, 4000);
    // Update-Subscriber-Data and the call-forwarding transactions fail part of the time.
    assert!(o.user_aborts > 20 && o.user_aborts < 400, "{o:?}");
    w.check(&db).unwrap();
    assert_ne!(db.rows(CALL_FORWARDING), cf_before);
}

#[test]
fn update_location_only_changes_only_locations() {
    let w = small(TatpMix::UpdateLocationOnly);
    let (_a, fresh) = mem_db(&w);
    let (_b, db) = mem_db(&w);
    let o = run(&db, &w, 2, 500, 3);
    assert_eq!((o.committed, o.user_aborts), (1000, 0));
    w.check(&db).unwrap();
    let (a, b) = (snapshot(&fresh), snapshot(&db));
    for t in [
        "access_info",
        "special_facility",
        "call_forwarding",
        "subscriber_nbr",
    ] {
        assert_eq!(a[t], b[t], "{t}");
    }
    let s = db.schema(SUBSCRIBER);
    let vlr = s.range(subscriber::VLR_LOCATION);
    let mut changed = 0;
    for (k, old) in &a["subscriber"] {
        let new = &b["subscriber"][k];
        assert_eq!(old[..vlr.start], new[..vlr.start], "subscriber {k}");
        changed += usize::from(old[vlr.clone()] != new[vlr.clone()]);
    }
    assert!(changed > 100, "{changed}");
}

#[test]
fn call_forwarding_transactions_fail_as_specified() {
    let w = small(TatpMix::Standard);
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    // A subscriber, a facility it has, one it lacks (if any), and a start time it does not use.
    let s_id = (1..=2000u64)
        .find(|&s| {
            (1..=4).any(|t| {
                db.peek(SPECIAL_FACILITY, special_facility_key(s, t))
                    .is_none()
            })
        })
        .unwrap();
    let has = (1..=4)
        .find(|&t| {
            db.peek(SPECIAL_FACILITY, special_facility_key(s_id, t))
                .is_some()
        })
        .unwrap();
    let lacks = (1..=4)
        .find(|&t| {
            db.peek(SPECIAL_FACILITY, special_facility_key(s_id, t))
                .is_none()
        })
        .unwrap();
    let free = [0u64, 8, 16].into_iter().find(|&st| {
        db.peek(CALL_FORWARDING, call_forwarding_key(s_id, has, st))
            .is_none()
    });
    let insert = |t: u64, start: u64| {
        let mut p = Params::new();
        p.bytes(&sub_nbr(s_id))
            .put::<u32>(t as u32)
            .put::<u32>(start as u32)
            .put::<u32>(start as u32 + 5)
            .bytes(b"123456789012345");
        p
    };
    let delete = |t: u64, start: u64| {
        let mut p = Params::new();
        p.bytes(&sub_nbr(s_id))
            .put::<u32>(t as u32)
            .put::<u32>(start as u32);
        p
    };
    let e = worker
        .call(INSERT_CALL_FORWARDING_TXN, &insert(lacks, 0).bytes)
        .unwrap_err();
    assert!(matches!(e, TxError::UserAbort { .. }), "{e}");
    if let Some(start) = free {
        worker
            .call(INSERT_CALL_FORWARDING_TXN, &insert(has, start).bytes)
            .unwrap();
        let row = db
            .peek(CALL_FORWARDING, call_forwarding_key(s_id, has, start))
            .unwrap();
        assert_eq!(
            db.schema(CALL_FORWARDING)
                .get::<u64>(&row, call_forwarding::END_TIME),
            start + 5
        );
        let e = worker
            .call(INSERT_CALL_FORWARDING_TXN, &insert(has, start).bytes)
            .unwrap_err();
        assert!(matches!(e, TxError::UserAbort { .. }), "duplicate: {e}");
        worker
            .call(DELETE_CALL_FORWARDING_TXN, &delete(has, start).bytes)
            .unwrap();
        assert!(
            db.peek(CALL_FORWARDING, call_forwarding_key(s_id, has, start))
                .is_none()
        );
        let e = worker
            .call(DELETE_CALL_FORWARDING_TXN, &delete(has, start).bytes)
            .unwrap_err();
        assert!(matches!(e, TxError::UserAbort { .. }), "{e}");
    }
    let mut p = Params::new();
    p.put::<u64>(s_id)
        .put::<u32>(lacks as u32)
        .put::<u32>(1)
        .put::<u32>(7);
    let before = db.peek(SUBSCRIBER, s_id);
    let e = worker
        .call(UPDATE_SUBSCRIBER_DATA_TXN, &p.bytes)
        .unwrap_err();
    assert!(matches!(e, TxError::UserAbort { .. }), "{e}");
    assert_eq!(
        db.peek(SUBSCRIBER, s_id),
        before,
        "the subscriber update is rolled back too"
    );
    w.check(&db).unwrap();
}

#[test]
fn check_reports_an_orphaned_call_forwarding_row() {
    let w = small(TatpMix::Standard);
    let (_d, db) = mem_db(&w);
    let mut key = None;
    db.for_each_row(CALL_FORWARDING, .., |k, _| key = key.or(Some(k)));
    let sf = key.unwrap() >> 2;
    let mut worker = db.worker().unwrap();
    let mut tx = worker.begin();
    assert!(tx.delete(SPECIAL_FACILITY, sf).unwrap());
    tx.commit().unwrap();
    let e = w.check(&db).unwrap_err().to_string();
    assert!(e.contains("missing special facility"), "{e}");
}

#[test]
fn serial_pmem_data_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(TatpMix::Standard), LogKind::Data, 2, 1000);
    assert!(o.committed > 2000, "{o:?}");
}

#[test]
fn serial_pmem_command_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(TatpMix::Standard), LogKind::Command, 2, 1000);
    assert!(o.committed > 2000, "{o:?}");
}
