//! The plover scheme driven directly (no engine): acknowledged commits survive, a transaction
//! missing a record is not visible after recovery (nor is what follows it in its logs), a
//! transaction that read a partition is ordered there, the cut's logs restart so nothing
//! dropped comes back, logs longer than recovery's chunks replay while they are read, and
//! the refusals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::integration::scheme_txn::txn;
use std::collections::HashMap;
use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::scheme::plover::{self, Plover, partition_of};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, RecoveryReport, Scheme, SchemeConfig, SchemeSpec,
};

use crate::integration::mem_device::{MemDev, OpenGates};
use crate::integration::redo_state::State;

fn open(devs: &[Arc<MemDev>], threads: usize, state: &State) -> (Arc<Plover>, RecoveryReport) {
    let devices: Vec<Arc<dyn Device>> = devs
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    let cfg = SchemeConfig {
        recovery_threads: threads,
        ..SchemeConfig::default()
    };
    plover::open_plover(&cfg, devices, state, &|_| {}).unwrap()
}

/// What a crash leaves of `devs`, as new devices.
fn crash(devs: &[Arc<MemDev>]) -> Vec<Arc<MemDev>> {
    devs.iter().map(|d| MemDev::new(d.crash_image())).collect()
}

/// The `i`-th key (table 0) in partition `p` of `n`.
fn key_in(p: usize, n: usize, i: usize) -> u64 {
    (0u64..)
        .filter(|&k| partition_of(0, k, n) == p)
        .nth(i)
        .unwrap()
}

fn wait_flushed(s: &dyn Scheme, log: usize) {
    let st = &s.streams()[log];
    st.wait_durable(st.tail()).unwrap();
}

#[test]
fn acknowledged_commits_survive_and_replay_in_each_logs_order() {
    let n = 4;
    let devs: Vec<_> = (0..n).map(|_| MemDev::new(Vec::new())).collect();
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let mut w = s.worker(0).unwrap();
    let mut want: HashMap<u64, u8> = HashMap::new();
    let mut x = 12345u64;
    for id in 1..=300u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // One to three keys among 40: transactions overlap on rows and partitions.
        let keys: Vec<u64> = (0..1 + x % 3).map(|i| (x >> (8 * i)) % 40).collect();
        let mut keys = keys;
        keys.sort_unstable();
        keys.dedup();
        let value = id as u8;
        txn(&mut *w, id, &[(x >> 40) % 40], &keys, value)
            .wait()
            .unwrap();
        for k in keys {
            want.insert(k, value);
        }
    }
    // Each log's numbers: the global numbers taken grow, so the last is at least the number of
    // transactions that wrote that log.
    let before: Vec<u64> = (0..n).map(|p| s.log_seq(p)).collect();
    assert!(before.iter().all(|&q| q > 0), "{before:?}");
    drop(w);
    let devs = crash(&devs);
    s.close().unwrap();
    for threads in [1, 3] {
        let state = State::default();
        // A fresh copy each time: the reopened scheme appends to its devices.
        let (s2, report) = open(&crash(&devs), threads, &state);
        assert_eq!(report.txns, 300, "{report:?}");
        assert_eq!(report.skipped, 0);
        assert_eq!(*state.rows.lock(), want, "recovered with {threads} threads");
        // New numbers go above every number found.
        let max = before.iter().copied().max().unwrap();
        let mut w = s2.worker(0).unwrap();
        txn(&mut *w, 1000, &[], &[key_in(2, n, 0)], 9)
            .wait()
            .unwrap();
        assert_eq!(s2.log_seq(2), max + 1);
        drop(w);
        s2.close().unwrap();
    }
}

/// Logs of many replay chunks (recovery publishes 4096 records at a time and replays what
/// every log has read past): with one thread reading both logs in turn or one per log, the
/// acknowledged state comes back; with log 1 held back for a last run of transactions, the
/// cut drops those of them it must, the same with either thread count.
#[test]
fn long_logs_are_replayed_while_read() {
    let n = 2;
    let devs: Vec<_> = (0..n).map(|_| MemDev::new(Vec::new())).collect();
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let _gates = OpenGates(&devs);
    let mut w = s.worker(0).unwrap();
    let mut want: HashMap<u64, u8> = HashMap::new();
    let mut x = 777u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let total = 12_000u64;
    for id in 1..=total {
        let r = next();
        // One or two keys among 64, so most transactions write one log and some both.
        let mut keys = vec![r % 64, (r >> 8) % 64];
        keys.truncate(1 + (r >> 16) as usize % 2);
        keys.dedup();
        let t = txn(&mut *w, id, &[], &keys, (r >> 24) as u8);
        if id % 64 == 0 {
            t.wait().unwrap();
        }
        for k in keys {
            want.insert(k, (r >> 24) as u8);
        }
    }
    txn(&mut *w, total + 1, &[], &[0], 1).wait().unwrap();
    want.insert(0, 1);
    for threads in [1, 2] {
        let state = State::default();
        let (s2, report) = open(&crash(&devs), threads, &state);
        assert_eq!((report.txns, report.skipped), (total + 1, 0), "{report:?}");
        assert_eq!(*state.rows.lock(), want, "recovered with {threads} threads");
        s2.close().unwrap();
    }
    // Transactions on other keys with log 1 held back, every other one with a record there
    // too: those are incomplete, and everything after the first of them in log 0 is cut.
    devs[1].set_gate(false);
    for id in 0..100u64 {
        let i = 1000 + id as usize;
        let keys = if id % 2 == 0 {
            vec![key_in(0, n, i), key_in(1, n, i)]
        } else {
            vec![key_in(0, n, i)]
        };
        let _ = txn(&mut *w, total + 2 + id, &[], &keys, 7);
    }
    wait_flushed(&*s, 0);
    let crashed = crash(&devs);
    devs[1].set_gate(true);
    drop(w);
    s.close().unwrap();
    let mut seen = Vec::new();
    for threads in [1, 2] {
        let state = State::default();
        let (_s2, report) = open(&crash(&crashed), threads, &state);
        assert_eq!(
            (report.txns, report.skipped),
            (total + 1, 100),
            "{report:?}"
        );
        let rows = state.rows.lock().clone();
        assert_eq!(rows, want, "recovered with {threads} threads");
        seen.push(rows);
    }
    assert_eq!(seen[0], seen[1]);
}

/// T1 writes a row in each of two partitions; log 1's flushes are held back. T2 overwrites
/// T1's row in partition 0 and T3 writes another row of partition 0; log 0 flushes. Neither
/// T2 nor T3 may be acknowledged (a crash now loses T1's record in log 1, and recovery then
/// has to drop them), and after that crash none of the three is visible. The logs restart at
/// the cut: a later recovery finds none of the dropped records.
#[test]
fn a_missing_record_hides_its_transaction_and_what_follows_it() {
    let n = 2;
    let devs: Vec<_> = (0..n).map(|_| MemDev::new(Vec::new())).collect();
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let _gates = OpenGates(&devs);
    let (a, b, c) = (key_in(0, n, 0), key_in(1, n, 0), key_in(0, n, 1));
    let mut w = s.worker(0).unwrap();
    devs[1].set_gate(false);
    let t1 = txn(&mut *w, 1, &[], &[a, b], 1);
    let t2 = txn(&mut *w, 2, &[], &[a], 2);
    let t3 = txn(&mut *w, 3, &[], &[c], 3);
    wait_flushed(&*s, 0);
    for t in [&t1, &t2, &t3] {
        assert!(
            !t.is_durable().unwrap(),
            "acknowledged before log 1 holds T1"
        );
    }
    let crashed = crash(&devs);
    devs[1].set_gate(true);
    t3.wait().unwrap();
    drop(w);
    s.close().unwrap();

    let state = State::default();
    let (s2, report) = open(&crashed, 1, &state);
    assert_eq!(
        (state.get(a), state.get(b), state.get(c)),
        (None, None, None)
    );
    assert_eq!((report.txns, report.skipped), (0, 3), "{report:?}");
    // The logs restarted at the cut: write one transaction, crash, recover: only it is found.
    let d = key_in(1, n, 1);
    let mut w = s2.worker(0).unwrap();
    txn(&mut *w, 4, &[], &[d], 4).wait().unwrap();
    drop(w);
    let again = crash(&crashed);
    s2.close().unwrap();
    let state = State::default();
    let (_s3, report) = open(&again, 1, &state);
    assert_eq!(report.records, 1, "dropped records came back: {report:?}");
    assert_eq!(
        (state.get(a), state.get(c), state.get(d)),
        (None, None, Some(4))
    );
}

/// T1 writes a row of partition 0, whose log is held back; T2 reads that row and writes
/// only partition 1, whose log flushes. T2 logs an empty record to partition 0 (after
/// T1's), so it is neither acknowledged nor, after a crash, recovered without T1.
#[test]
fn a_partition_only_read_orders_the_reader_after_its_writer() {
    let n = 2;
    let devs: Vec<_> = (0..n).map(|_| MemDev::new(Vec::new())).collect();
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let _gates = OpenGates(&devs);
    let (a, b) = (key_in(0, n, 0), key_in(1, n, 0));
    let mut w = s.worker(0).unwrap();
    devs[0].set_gate(false);
    let _t1 = txn(&mut *w, 1, &[], &[a], 1);
    let t2 = txn(&mut *w, 2, &[a], &[b], 2);
    wait_flushed(&*s, 1);
    assert!(!t2.is_durable().unwrap());
    let crashed = crash(&devs);
    devs[0].set_gate(true);
    t2.wait().unwrap();
    drop(w);
    s.close().unwrap();
    let state = State::default();
    let (_s2, report) = open(&crashed, 2, &state);
    assert_eq!((state.get(a), state.get(b)), (None, None), "{report:?}");
    assert_eq!(report.skipped, 1);
}

#[test]
fn plover_is_registered_and_refuses_commands_and_mvcc() {
    assert!(braid_wal::scheme::registry::names().any(|n| n == "plover"));
    let spec: SchemeSpec = "plover".parse().unwrap();
    let why = spec.command_logging_refusal().unwrap();
    assert!(why.contains("per partition"), "{why}");
    assert!(spec.mvcc_refusal().is_some());
    assert_eq!(spec.streams_for(4), 4);
    assert!("plover:x=1".parse::<SchemeSpec>().is_err());

    let devs = vec![MemDev::new(Vec::new())];
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let mut w = s.worker(0).unwrap();
    let req = CommitRequest {
        txn: 1,
        kind: LogKind::Command,
        payload: &[0; 8],
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    };
    assert!(w.commit(&req).is_err());
}

/// Recovery twice over the same crash (a crash during or right after the first recovery):
/// the same transactions, the same state.
#[test]
fn recovering_again_gives_the_same_state() {
    let n = 3;
    let devs: Vec<_> = (0..n).map(|_| MemDev::new(Vec::new())).collect();
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let _gates = OpenGates(&devs);
    let mut w = s.worker(0).unwrap();
    for id in 1..=20u64 {
        let k = [key_in(0, n, id as usize % 3), key_in(2, n, id as usize % 2)];
        txn(&mut *w, id, &[key_in(1, n, 0)], &k, id as u8)
            .wait()
            .unwrap();
    }
    // Log 2 held back: the last two transactions lose their record there.
    devs[2].set_gate(false);
    let _ = txn(&mut *w, 21, &[], &[key_in(0, n, 0), key_in(2, n, 0)], 21);
    let _ = txn(&mut *w, 22, &[], &[key_in(0, n, 1), key_in(2, n, 1)], 22);
    wait_flushed(&*s, 0);
    let crashed = crash(&devs);
    devs[2].set_gate(true);
    drop(w);
    s.close().unwrap();
    let first = State::default();
    let (s1, r1) = open(&crashed, 2, &first);
    drop(s1);
    let second = State::default();
    let (_s2, r2) = open(&crash(&crashed), 2, &second);
    assert_eq!((r1.txns, r1.skipped), (20, 2), "{r1:?}");
    // The first recovery reset log 0 at the cut: the dropped records are gone.
    assert_eq!((r2.txns, r2.skipped), (20, 0), "{r2:?}");
    assert_eq!(*first.rows.lock(), *second.rows.lock());
    assert_eq!(first.get(key_in(0, n, 0)), Some(18));
}

/// A single log is read by every recovery thread, each applying its share of the keys: with
/// 1, 2 and 3 threads the acknowledged state comes back (a key's updates in log order, keys
/// of one transaction in different shares), records held back at the crash are not, and new
/// sequence numbers go above the log's.
#[test]
fn one_log_is_replayed_alike_by_every_thread_count() {
    let devs = vec![MemDev::new(Vec::new())];
    let state = State::default();
    let (s, _) = open(&devs, 1, &state);
    let _gates = OpenGates(&devs);
    let mut w = s.worker(0).unwrap();
    let mut want: HashMap<u64, u8> = HashMap::new();
    for id in 1..=500u64 {
        // Keys among 30, several per transaction, so every key is written many times.
        let mut keys: Vec<u64> = (0..1 + id % 4).map(|i| (id * 7 + i * 11) % 30).collect();
        keys.sort_unstable();
        keys.dedup();
        let reads: &[u64] = if id % 5 == 0 { &[] } else { &[3] };
        txn(&mut *w, id, reads, &keys, id as u8).wait().unwrap();
        for k in keys {
            want.insert(k, id as u8);
        }
    }
    // Read-only transactions log nothing.
    for id in 501..=510u64 {
        txn(&mut *w, id, &[4], &[], 0).wait().unwrap();
    }
    let last = s.log_seq(0);
    // Held back: never durable, so never replayed.
    devs[0].set_gate(false);
    let _ = txn(&mut *w, 600, &[], &[1, 2], 200);
    let crashed = crash(&devs);
    devs[0].set_gate(true);
    drop(w);
    s.close().unwrap();
    for threads in [1, 2, 3] {
        let state = State::default();
        let (s2, report) = open(&crash(&crashed), threads, &state);
        assert_eq!(report.txns, 500, "{threads} threads: {report:?}");
        assert_eq!(*state.rows.lock(), want, "recovered with {threads} threads");
        let mut w = s2.worker(0).unwrap();
        txn(&mut *w, 1000, &[], &[5], 9).wait().unwrap();
        assert!(s2.log_seq(0) > last, "{} after {last}", s2.log_seq(0));
        drop(w);
        s2.close().unwrap();
    }
}
