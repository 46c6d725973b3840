//! TPC-C: consistency after concurrent runs of every mix, the specified behaviour of single
//! transactions (rollback, customer selection by last name, delivery), deterministic loading,
//! and recovery through the serial scheme on persistent memory under data and command logging.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use braid_engine::{Db, Params, TxError, log::LogKind};
use braid_workloads::Workload;
use braid_workloads::tpcc::*;

fn small(mix: Mix) -> Tpcc {
    Tpcc::new(
        TpccConfig::default()
            .warehouses(2)
            .items(1000)
            .customers_per_district(60)
            .mix(mix),
    )
    .unwrap()
}

fn mem_db(w: &Tpcc) -> (tempfile::TempDir, Db) {
    let base = tempfile::tempdir().unwrap();
    let db = open(&base.path().join("db"), none(), w);
    (base, db)
}

fn district_col(db: &Db, w: u64, d: u64, col: usize) -> u64 {
    db.schema(DISTRICT)
        .get::<u64>(&db.peek(DISTRICT, district_key(w, d)).unwrap(), col)
}

#[test]
fn the_initial_population_is_consistent_and_deterministic() {
    let w = small(Mix::Full);
    let (_a, db1) = mem_db(&w);
    let (_b, db2) = mem_db(&w);
    w.check(&db1).unwrap();
    assert_same(&snapshot(&db1), &snapshot(&db2));
    assert_eq!(db1.rows(ITEM), 1000);
    assert_eq!(db1.rows(STOCK), 2000);
    assert_eq!(db1.rows(CUSTOMER), 2 * 10 * 60);
    assert_eq!(db1.rows(NEW_ORDER), 2 * 10 * 18);
    assert_eq!(district_col(&db1, 2, 10, district::D_NEXT_O_ID), 61);
    let other = Tpcc::new(w.config().seed(1)).unwrap();
    let (_c, db3) = mem_db(&other);
    assert_ne!(snapshot(&db1)["customer"], snapshot(&db3)["customer"]);
}

#[test]
fn full_mix_from_two_threads_stays_consistent() {
    let w = small(Mix::Full);
    let (_d, db) = mem_db(&w);
    let o = run(&db, &w, 2, 1500, 1);
    assert_eq!(o.committed + o.user_aborts, 3000);
    assert!(o.user_aborts > 0, "{o:?}");
    w.check(&db).unwrap();
    // New orders were entered and some delivered.
    let next: u64 = (1..=2)
        .flat_map(|wh| (1..=10).map(move |d| (wh, d)))
        .map(|(wh, d)| district_col(&db, wh, d, district::D_NEXT_O_ID))
        .sum();
    assert!(next > 20 * 61, "no New-Order committed");
    assert!(db.rows(HISTORY) > 2 * 10 * 60, "no Payment committed");
}

#[test]
fn payment_only_and_new_order_only_mixes_stay_consistent() {
    for mix in [Mix::PaymentOnly, Mix::NewOrderOnly] {
        let w = small(mix);
        let (_d, db) = mem_db(&w);
        let o = run(&db, &w, 2, 300, 2);
        w.check(&db).unwrap();
        match mix {
            Mix::PaymentOnly => assert_eq!(db.rows(HISTORY) as u64, 1200 + o.committed),
            _ => assert_eq!(db.rows(ORDER) as u64, 1200 + o.committed),
        }
    }
}

fn new_order(w: u64, d: u64, c: u64, lines: &[(u64, u64, u64)]) -> Params {
    let mut p = NewOrderParams {
        w,
        d,
        c,
        entry_d: 5,
        ol_cnt: lines.len(),
        ..Default::default()
    };
    for (n, &(i_id, supply_w, qty)) in lines.iter().enumerate() {
        p.lines[n] = NewOrderLine {
            i_id,
            supply_w,
            qty,
        };
    }
    let mut out = Params::new();
    p.encode(&mut out);
    out
}

#[test]
fn new_order_rolls_back_on_an_unused_item_and_commits_otherwise() {
    let w = small(Mix::Full);
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let before = snapshot(&db);
    let bad = new_order(1, 3, 7, &[(5, 1, 3), (6, 2, 4), (1001, 1, 1)]);
    let e = worker.call(NEW_ORDER_TXN, &bad.bytes).unwrap_err();
    assert!(
        matches!(&e, TxError::UserAbort { reason } if reason.contains("item number 1001")),
        "{e}"
    );
    assert_same(&before, &snapshot(&db));

    let ss = db.schema(STOCK);
    let q = |db: &Db, wh, i| {
        ss.get::<i64>(
            &db.peek(STOCK, stock_key(wh, i)).unwrap(),
            stock::S_QUANTITY,
        )
    };
    let (q5, q6) = (q(&db, 1, 5), q(&db, 2, 6));
    let good = new_order(1, 3, 7, &[(5, 1, 3), (6, 2, 4)]);
    worker.call(NEW_ORDER_TXN, &good.bytes).unwrap();
    assert_eq!(district_col(&db, 1, 3, district::D_NEXT_O_ID), 62);
    let o = db.peek(ORDER, order_key(1, 3, 61)).unwrap();
    let os = db.schema(ORDER);
    assert_eq!(os.get::<u64>(&o, order::O_C_ID), 7);
    assert_eq!(os.get::<u64>(&o, order::O_OL_CNT), 2);
    assert_eq!(os.get::<u64>(&o, order::O_ALL_LOCAL), 0);
    assert!(db.peek(NEW_ORDER, order_key(1, 3, 61)).is_some());
    assert!(
        db.peek(ORDER_BY_CUSTOMER, order_customer_key(1, 3, 7, 61))
            .is_some()
    );
    let expect = |old: i64, qty: i64| {
        if old - qty >= 10 {
            old - qty
        } else {
            old - qty + 91
        }
    };
    assert_eq!(q(&db, 1, 5), expect(q5, 3));
    assert_eq!(q(&db, 2, 6), expect(q6, 4));
    let remote = ss.get::<u64>(
        &db.peek(STOCK, stock_key(2, 6)).unwrap(),
        stock::S_REMOTE_CNT,
    );
    assert_eq!(remote, 1);
    let ls = db.schema(ORDER_LINE);
    let line = db.peek(ORDER_LINE, order_line_key(1, 3, 61, 2)).unwrap();
    let price = db
        .schema(ITEM)
        .get::<i64>(&db.peek(ITEM, 6).unwrap(), item::I_PRICE);
    assert_eq!(ls.get::<i64>(&line, order_line::OL_AMOUNT), 4 * price);
    assert_eq!(ls.get::<u64>(&line, order_line::OL_SUPPLY_W_ID), 2);
    w.check(&db).unwrap();
}

#[test]
fn payment_by_last_name_picks_the_middle_customer_by_first_name() {
    // More than 1,000 customers per district, so some last names are shared.
    let w = Tpcc::new(
        TpccConfig::default()
            .warehouses(1)
            .items(200)
            .customers_per_district(1200),
    )
    .unwrap();
    let (_d, db) = mem_db(&w);
    let mut by_last: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    db.for_each_row(
        CUSTOMER_BY_NAME,
        customer_name_key(1, 4, 0, 0)..=customer_name_key(1, 4, 999, 0xFFFF),
        |k, _| {
            by_last
                .entry((k >> 16) & 0xFFFF)
                .or_default()
                .push(k & 0xFFFF);
        },
    );
    let (&last, ids) = by_last.iter().max_by_key(|(_, v)| v.len()).unwrap();
    assert!(ids.len() >= 3, "{ids:?}");
    let cs = db.schema(CUSTOMER);
    let mut named: Vec<(Vec<u8>, u64)> = ids
        .iter()
        .map(|&c| {
            let img = db.peek(CUSTOMER, customer_key(1, 4, c)).unwrap();
            (img[cs.range(customer::C_FIRST)].to_vec(), c)
        })
        .collect();
    named.sort();
    let chosen = named[(named.len() - 1) / 2].1;

    let mut p = Params::new();
    let pay = PaymentParams {
        w: 1,
        d: 2,
        c_w: 1,
        c_d: 4,
        customer: CustomerSel::ByLastName(last),
        amount: 12_345,
        date: 9,
    };
    pay.encode(&mut p);
    let mut worker = db.worker().unwrap();
    worker.call(PAYMENT_TXN, &p.bytes).unwrap();
    for &(_, c) in &named {
        let img = db.peek(CUSTOMER, customer_key(1, 4, c)).unwrap();
        let (cnt, bal) = (
            cs.get::<u64>(&img, customer::C_PAYMENT_CNT),
            cs.get::<i64>(&img, customer::C_BALANCE),
        );
        if c == chosen {
            assert_eq!((cnt, bal), (2, -1000 - 12_345), "customer {c}");
        } else {
            assert_eq!((cnt, bal), (1, -1000), "customer {c}");
        }
    }
    let ws = db.schema(WAREHOUSE);
    assert_eq!(
        ws.get::<i64>(&db.peek(WAREHOUSE, 1).unwrap(), warehouse::W_YTD),
        10 * 1200 * 1000 + 12_345
    );
    let mut os = Params::new();
    OrderStatusParams {
        w: 1,
        d: 4,
        customer: CustomerSel::ByLastName(last),
    }
    .encode(&mut os);
    worker.call(ORDER_STATUS_TXN, &os.bytes).unwrap();
    w.check(&db).unwrap();
}

#[test]
fn delivery_delivers_the_oldest_order_of_every_district() {
    let w = small(Mix::Full);
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let mut p = Params::new();
    DeliveryParams {
        w: 2,
        carrier: 7,
        date: 99,
    }
    .encode(&mut p);
    let no_before = db.rows(NEW_ORDER);
    worker.call(DELIVERY_TXN, &p.bytes).unwrap();
    assert_eq!(db.rows(NEW_ORDER), no_before - 10);
    let first = w.config().first_undelivered();
    let os = db.schema(ORDER);
    for d in 1..=10 {
        assert!(db.peek(NEW_ORDER, order_key(2, d, first)).is_none());
        assert!(db.peek(NEW_ORDER, order_key(2, d, first + 1)).is_some());
        let o = db.peek(ORDER, order_key(2, d, first)).unwrap();
        assert_eq!(os.get::<u64>(&o, order::O_CARRIER_ID), 7);
        let line = db.peek(ORDER_LINE, order_line_key(2, d, first, 1)).unwrap();
        assert_eq!(
            db.schema(ORDER_LINE)
                .get::<u64>(&line, order_line::OL_DELIVERY_D),
            99
        );
        assert!(
            db.peek(NEW_ORDER, order_key(1, d, first)).is_some(),
            "warehouse 1 untouched"
        );
    }
    w.check(&db).unwrap();
    let mut sl = Params::new();
    StockLevelParams {
        w: 2,
        d: 3,
        threshold: 20,
    }
    .encode(&mut sl);
    worker.call(STOCK_LEVEL_TXN, &sl.bytes).unwrap();
}

#[test]
fn check_reports_broken_conditions() {
    let w = small(Mix::Full);
    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let mut tx = worker.begin();
    tx.update(DISTRICT, district_key(1, 2), |r| {
        r.set::<i64>(district::D_YTD, r.get::<i64>(district::D_YTD) + 1)
    })
    .unwrap();
    tx.commit().unwrap();
    let e = w.check(&db).unwrap_err().to_string();
    assert!(
        e.contains("condition 1") && e.contains("condition 9"),
        "{e}"
    );

    let (_d, db) = mem_db(&w);
    let mut worker = db.worker().unwrap();
    let mut tx = worker.begin();
    assert!(tx.delete(ORDER_LINE, order_line_key(2, 5, 3, 1)).unwrap());
    assert!(tx.delete(NEW_ORDER, order_key(1, 1, 60)).unwrap());
    tx.commit().unwrap();
    let e = w.check(&db).unwrap_err().to_string();
    assert!(
        e.contains("condition 4") && e.contains("condition 6"),
        "{e}"
    );
    assert!(
        e.contains("condition 2") && e.contains("condition 5"),
        "{e}"
    );
}

#[test]
fn serial_pmem_data_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(Mix::Full), LogKind::Data, 2, 400);
    assert!(o.committed > 600, "{o:?}");
}

#[test]
fn serial_pmem_command_logging_recovers_the_same_tables() {
    let o = recovery_round_trip(&small(Mix::Full), LogKind::Command, 2, 400);
    assert!(o.committed > 600, "{o:?}");
}
