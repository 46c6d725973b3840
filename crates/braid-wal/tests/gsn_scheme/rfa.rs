//! Remote Flush Avoidance (Haubenschild et al., SIGMOD 2020) on file-like logs: a commit that
//! touched only its own log's writes and durable ones is acknowledged by its own log's flush;
//! one that touched another log's volatile write, or follows such a commit in its own log,
//! waits for every log; recovery keeps local commits above the bound, and keeps them after a
//! later recovery's void marker covers them.
//!
//! Each test holds one log's flushes back with a [`MemDev`] gate and checks the tickets after
//! the other log is flushed: a commit wrongly taken as local is then durable, and the test
//! fails.

use super::*;

fn rfa_cfg() -> (SchemeConfig, GsnConfig) {
    let mut c = cfg(Partition::Transaction, CommitProtocol::Passive);
    c.1.rfa = true;
    c
}

/// Wait (up to 10 s) for `t` to be durable; false if it is not.
fn durable_soon(t: &braid_wal::scheme::Ticket) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if t.is_durable().unwrap() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// T1 writes key 1 in log 1, whose flushes are held back. T0 (log 0) reads key 1: it needs a
/// remote flush and is not acknowledged when log 0 is flushed. Later commits of log 0 (one
/// reads T0's key, one reads nothing) follow a commit waiting for a remote flush and wait too,
/// and so do read-only transactions of what T1 and T0 wrote. A crash then recovers none of
/// them.
#[test]
fn a_commit_that_touched_another_logs_volatile_write_waits_for_that_log() {
    let c = rfa_cfg();
    let mut r = HeldLog1::new(&c);
    let w0 = &mut *r.w0;
    let t0 = txn(w0, 100, &[1], &[2], 2);
    let t0b = txn(w0, 102, &[2], &[3], 3);
    let t0c = txn(w0, 103, &[], &[4], 4);
    let r1 = txn(w0, 104, &[1], &[], 0);
    let r2 = txn(w0, 105, &[3], &[], 0);
    let s = &*r.s;
    wait_flushed(s, 0);
    for (name, t) in [
        ("T0, which read log 1's key 1,", &t0),
        ("T0b, which read T0's key 3 in its own log,", &t0b),
        ("T0c, after T0 in its own log,", &t0c),
        ("a read of key 1", &r1),
        ("a read of T0b's key 3", &r2),
    ] {
        assert!(
            !t.is_durable().unwrap(),
            "{name} acknowledged by log 0's flush while T1 in log 1 is not durable"
        );
    }
    assert!(!r.t1.is_durable().unwrap());
    // T1 alone is local (it touched nothing of another log).
    assert_eq!(counter(s, "rfa_local_commits"), 1);
    assert_eq!(counter(s, "rfa_remote_commits"), 5);
    let images = r.images();
    r.finish(&[&t0, &t0b, &t0c, &r1, &r2]);

    let (_devs, st, report, s2) = recover(&c, &images);
    assert!(
        st.rows.lock().is_empty(),
        "recovered {:?} though T1 was lost",
        st.rows.lock()
    );
    assert_eq!(report.txns, 0, "{report:?}");
    s2.close().unwrap();
}

/// With log 1's flushes held back for good, a transaction of log 0 that touches only log 0's
/// keys is acknowledged by log 0's flush alone, and so is one that reads it. Recovery keeps
/// both although their GSNs lie above the bound (log 1 holds nothing newer than its start),
/// and keeps them again after new transactions, when the void marker the first recovery wrote
/// covers them.
#[test]
fn a_local_commit_is_acknowledged_by_its_own_log_and_survives_two_recoveries() {
    let c = rfa_cfg();
    let mut r = HeldLog1::new(&c);
    let w0 = &mut *r.w0;
    let t0 = txn(w0, 100, &[], &[2], 2);
    assert!(durable_soon(&t0), "a local commit waited for another log");
    let t0b = txn(w0, 102, &[2], &[4], 4);
    assert!(durable_soon(&t0b), "a read of its own log's write waited");
    let ro = txn(w0, 103, &[4], &[], 0);
    assert!(
        durable_soon(&ro),
        "a read-only transaction of local data waited"
    );
    assert!(!r.t1.is_durable().unwrap());
    assert_eq!(counter(&*r.s, "rfa_local_commits"), 4);
    assert_eq!(counter(&*r.s, "rfa_remote_commits"), 0);
    let images = r.images();
    r.finish(&[]);

    let want = |extra: &[(u64, u8)]| {
        let mut m: HashMap<(u32, u64), Vec<u8>> = HashMap::new();
        for &(k, v) in [(2u64, 2u8), (4, 4)].iter().chain(extra) {
            m.insert((0, k), vec![v; 4]);
        }
        m
    };
    let (crashed, st, report, s2) = recover(&c, &images);
    assert_eq!(*st.rows.lock(), want(&[]), "{report:?}");
    assert_eq!(report.txns, 2, "{report:?}");
    // New work after the recovery, then a clean close and another recovery: the local
    // commits lie inside the first recovery's void marker and are still replayed.
    let mut w = s2.worker(1).unwrap();
    txn(&mut *w, 200, &[], &[5], 5).wait().unwrap();
    drop(w);
    s2.close().unwrap();
    let (st, report, s3) = reopen(&c, &crashed);
    assert_eq!(*st.rows.lock(), want(&[(5, 5)]), "{report:?}");
    s3.close().unwrap();
}

/// Per-update records: a local transaction's update records and its commit record are
/// replayed above the bound; a remote one's are not.
#[test]
fn update_records_of_a_local_commit_are_replayed_and_a_remote_ones_are_not() {
    let c = rfa_cfg();
    let mut r = HeldLog1::new(&c);
    let w0 = &mut *r.w0;
    // Transaction 300 writes keys 6 and 7 (touching nothing of log 1); 301 reads key 1.
    log_update_of(w0, 300, 6, 6);
    log_update_of(w0, 300, 7, 6);
    let local = commit_updates(w0, 300, 2);
    assert!(
        durable_soon(&local),
        "a local commit waited for another log"
    );
    w0.on_read(RowRef::new(0, 1));
    log_update_of(w0, 301, 8, 8);
    let remote = commit_updates(w0, 301, 1);
    wait_flushed(&*r.s, 0);
    assert!(!remote.is_durable().unwrap());
    let images = r.images();
    r.finish(&[&remote]);

    let (_d, st, report, s2) = recover(&c, &images);
    let rows = st.rows.lock().clone();
    let want: HashMap<(u32, u64), Vec<u8>> = [((0, 6), vec![6; 4]), ((0, 7), vec![6; 4])]
        .into_iter()
        .collect();
    assert_eq!(rows, want, "{report:?}");
    s2.close().unwrap();
}

/// RFA needs each transaction in one log: with page partitioning over several logs it is
/// refused, saying what to change.
#[test]
fn rfa_with_page_partitioning_is_refused() {
    let devs: Vec<Arc<dyn Device>> = vec![MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let mut c = cfg(Partition::Page, CommitProtocol::Passive);
    c.1.rfa = true;
    let e = gsn::open_gsn(&c.0, &c.1, devs, &State::default(), &|_| {}).expect_err("refused");
    assert!(matches!(e, WalError::Unsupported { .. }), "{e}");
    assert!(e.to_string().contains("partition = tx"), "{e}");
}
