//! A read that finds no row (`on_absent`): the missing row's writer (its delete, in the
//! engine) raised the page's clock, so a read-only transaction that missed the key waits for
//! that writer's log like one that read the row, with and without Remote Flush Avoidance; a
//! range too wide to walk page by page waits for every log's clock; a miss of a key nobody
//! wrote waits for nothing.

use std::ops::Bound;

use super::*;

fn absent_waits(c: &(SchemeConfig, GsnConfig), what: &str) {
    let r = HeldLog1::new(c);
    // Each miss on a fresh worker of log 0 (a worker's clock only grows, so one miss would
    // carry into the next transaction). Key 1 is T1's, in log 1, whose flushes are held back;
    // key 7 nobody wrote.
    let misses = [
        (
            "a point miss of key 1",
            Bound::Included(1),
            Bound::Included(1),
        ),
        (
            "a miss over keys 0-3",
            Bound::Included(0),
            Bound::Excluded(4),
        ),
        (
            "a miss over the whole table",
            Bound::Unbounded,
            Bound::Unbounded,
        ),
        (
            "a point miss of key 7",
            Bound::Included(7),
            Bound::Included(7),
        ),
    ];
    let mut workers = Vec::new();
    let mut tickets = Vec::new();
    for (i, &(_, lo, hi)) in misses.iter().enumerate() {
        let mut w = r.s.worker(2 * i + 2).unwrap();
        w.on_absent(0, lo, hi);
        tickets.push(txn(&mut *w, 100 + i as u64, &[], &[], 0));
        workers.push(w);
    }
    wait_flushed(&*r.s, 0);
    for ((name, ..), t) in misses.iter().zip(&tickets).take(3) {
        assert!(
            !t.is_durable().unwrap(),
            "{what}: a read-only transaction after {name} was acknowledged while key 1's \
             writer in log 1 is not durable"
        );
    }
    assert!(
        tickets[3].is_durable().unwrap(),
        "{what}: a miss of a key no transaction wrote waited for something"
    );
    let held: Vec<_> = tickets.iter().take(3).collect();
    r.finish(&held);
    drop(workers);
}

#[test]
fn a_read_only_transaction_after_a_miss_waits_for_the_missing_keys_writer() {
    let c = cfg(Partition::Transaction, CommitProtocol::Passive);
    absent_waits(&c, "gsn");
    let mut c = c;
    c.1.rfa = true;
    absent_waits(&c, "gsn + RFA");
}
