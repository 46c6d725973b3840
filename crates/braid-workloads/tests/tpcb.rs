//! TPC-B: balances agree after concurrent runs, the Account-Update transaction does what Clause
//! 1.2 says, and recovery through the serial scheme on persistent memory under data and command
//! logging gives back the same tables.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use braid_engine::{Db, Params, log::LogKind};
use braid_workloads::Workload;
use braid_workloads::tpcb::*;

fn small() -> Tpcb {
    Tpcb::new(TpcbConfig::default().branches(2).accounts_per_branch(1000)).unwrap()
}

fn mem_db(w: &Tpcb) -> (tempfile::TempDir, Db) {
    let base = tempfile::tempdir().unwrap();
    let db = open(&base.path().join("db"), none(), w);
    (base, db)
}

#[test]
fn concurrent_account_updates_keep_the_balances_equal() {
    let w = small();
    let (_d, db) = mem_db(&w);
    w.check(&db).unwrap();
    assert_eq!(
        (db.rows(BRANCH), db.rows(TELLER), db.rows(ACCOUNT)),
        (2, 20, 2000)
    );
    let o = run(&db, &w, 2, 2000, 1);
    assert_eq!((o.committed, o.user_aborts), (4000, 0));
    assert_eq!(db.rows(HISTORY), 4000);
    w.check(&db).unwrap();
    let s = db.schema(BRANCH);
    assert!((1..=2).all(|b| s.get::<i64>(&db.peek(BRANCH, b).unwrap(), branch::B_BALANCE) != 0));
}

#[test]
fn account_update_moves_the_delta_everywhere() {
    let w = small();
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let mut p = Params::new();
    AccountUpdateParams {
        account: 1500,
        teller: 3,
        branch: 1,
        delta: -42,
        time: 7,
    }
    .encode(&mut p);
    worker.call(ACCOUNT_UPDATE_TXN, &p.bytes).unwrap();
    let bal = |t, k, c| db.schema(t).get::<i64>(&db.peek(t, k).unwrap(), c);
    assert_eq!(bal(ACCOUNT, 1500, account::A_BALANCE), -42);
    assert_eq!(bal(TELLER, 3, teller::T_BALANCE), -42);
    assert_eq!(bal(BRANCH, 1, branch::B_BALANCE), -42);
    assert_eq!(bal(BRANCH, 2, branch::B_BALANCE), 0);
    assert_eq!(db.rows(HISTORY), 1);
    w.check(&db).unwrap();
    // A missing account is an error and changes nothing.
    AccountUpdateParams {
        account: 99_999,
        teller: 3,
        branch: 1,
        delta: 5,
        time: 7,
    }
    .encode(&mut p);
    assert!(worker.call(ACCOUNT_UPDATE_TXN, &p.bytes).is_err());
    assert_eq!(bal(TELLER, 3, teller::T_BALANCE), -42);
}

#[test]
fn check_reports_unequal_balances() {
    let w = small();
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let mut tx = worker.begin();
    tx.update(TELLER, 12, |r| r.set::<i64>(teller::T_BALANCE, 1))
        .unwrap();
    tx.commit().unwrap();
    let e = w.check(&db).unwrap_err().to_string();
    assert!(
        e.contains("balances differ") && e.contains("branch 2"),
        "{e}"
    );
}

#[test]
fn serial_pmem_data_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(), LogKind::Data, 2, 1500);
    assert!(o.committed > 3000, "{o:?}");
}

#[test]
fn serial_pmem_command_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(), LogKind::Command, 2, 1500);
    assert!(o.committed > 3000, "{o:?}");
}
