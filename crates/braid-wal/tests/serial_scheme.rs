//! The central log's recovery with several threads (serial and aether, driven directly): every
//! thread reads the one stream and applies its share of the keys, so 1, 2 and 3 threads
//! recover the same state, with one record per transaction and with per-update records, and a
//! transaction without its commit record is replayed by none. And a read-only commit waits
//! for the writers of the rows it read, not for the whole log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use braid_wal::device::Device;
use braid_wal::payload::{RedoBuf, RedoOp};
use braid_wal::scheme::{
    self, Access, CommitRequest, LogKind, NoRows, Records, RecoveryReport, RowMeta, RowRef, Scheme,
    SchemeConfig, SchemeSpec, SchemeWorker, Storage, Ticket, UpdateRecord,
};

use crate::integration::mem_device::{MemDev, OpenGates};
use crate::integration::redo_state::State;

fn open(
    name: &str,
    dev: &Arc<MemDev>,
    records: Records,
    threads: usize,
    state: &State,
) -> (Arc<dyn Scheme>, RecoveryReport) {
    let spec: SchemeSpec = name.parse().unwrap();
    let cfg = SchemeConfig {
        recovery_threads: threads,
        records,
        ..SchemeConfig::default()
    };
    let devices = vec![Arc::clone(dev) as Arc<dyn Device>];
    scheme::open(&spec, &cfg, Storage::Devices(devices), state, &|_| {}).unwrap()
}

fn op(key: u64, value: u8) -> RedoBuf {
    let mut buf = RedoBuf::default();
    buf.push(&RedoOp::Insert {
        table: 0,
        key,
        data: &[value; 4],
    });
    buf
}

/// Write `keys` with `value` in transaction `id` (per-update records: one record per key, then
/// the commit record unless `commit` is false).
fn txn(w: &mut dyn SchemeWorker, records: Records, id: u64, keys: &[u64], value: u8, commit: bool) {
    let mut redo = RedoBuf::default();
    for &k in keys {
        if records == Records::Update {
            w.log_update(&UpdateRecord {
                txn: id,
                row: RowRef::new(0, k),
                payload: &op(k, value).bytes,
            })
            .unwrap();
        } else {
            redo.bytes.extend_from_slice(&op(k, value).bytes);
        }
    }
    if !commit {
        return;
    }
    let req = CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &redo.bytes,
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: if records == Records::Update {
            keys.len() as u32
        } else {
            0
        },
    };
    w.commit(&req).unwrap().wait().unwrap();
}

fn replayed_alike(name: &str, records: Records) {
    let dev = MemDev::new(Vec::new());
    let (s, _) = open(name, &dev, records, 1, &State::default());
    let mut w = s.worker(0).unwrap();
    let mut want: HashMap<u64, u8> = HashMap::new();
    for id in 1..=400u64 {
        // Keys among 30, several per transaction, so every key is written many times and a
        // transaction's keys fall in different shares.
        let mut keys: Vec<u64> = (0..1 + id % 4).map(|i| (id * 7 + i * 11) % 30).collect();
        keys.sort_unstable();
        keys.dedup();
        txn(&mut *w, records, id, &keys, id as u8, true);
        for k in keys {
            want.insert(k, id as u8);
        }
    }
    if records == Records::Update {
        // Updates of a transaction that never commits, made durable by a later commit.
        txn(&mut *w, records, 500, &[1, 2, 3], 250, false);
        txn(&mut *w, records, 501, &[29], 251, true);
        want.insert(29, 251);
    }
    drop(w);
    s.close().unwrap();
    drop(s);
    let image = dev.crash_image();
    for threads in [1, 2, 3] {
        let state = State::default();
        let (s2, report) = open(name, &MemDev::new(image.clone()), records, threads, &state);
        let txns = if records == Records::Update { 401 } else { 400 };
        assert_eq!(
            report.txns, txns,
            "{name} {records:?} {threads} threads: {report:?}"
        );
        assert_eq!(
            *state.rows.lock(),
            want,
            "{name} {records:?} recovered with {threads} threads"
        );
        s2.close().unwrap();
    }
}

#[test]
fn serial_log_is_replayed_alike_by_every_thread_count() {
    replayed_alike("serial", Records::Txn);
    replayed_alike("serial", Records::Update);
}

#[test]
fn aether_log_is_replayed_alike_by_every_thread_count() {
    replayed_alike("aether", Records::Txn);
    replayed_alike("aether", Records::Update);
}

/// Commit through `rows` (engine-style rows with slots: `(key, slot, wrote)`); read-only when
/// none was written.
fn commit_rows(w: &mut dyn SchemeWorker, id: u64, rows: &[(u64, &RowMeta, bool)]) -> Ticket {
    let mut redo = RedoBuf::default();
    let mut access = Vec::new();
    for &(key, meta, wrote) in rows {
        let row = RowRef {
            table: 0,
            key,
            meta: Some(meta),
        };
        if wrote {
            w.on_write(row);
            redo.bytes.extend_from_slice(&op(key, id as u8).bytes);
        } else {
            w.on_read(row);
        }
        access.push(Access {
            row,
            read: !wrote,
            write: wrote,
        });
    }
    w.commit(&CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &redo.bytes,
        read_only: redo.bytes.is_empty(),
        epoch: 0,
        writes: &[],
        rows: &access,
        updates: 0,
    })
    .unwrap()
}

/// With the log's flushes held back, a commit writing row A is not durable. A read-only commit
/// of row B (never written) is acknowledged at once; one of A waits for A's writer; one of B
/// after a miss (the missing key's delete may be that volatile commit) waits for the tail, and
/// the next one of B alone is acknowledged at once again. Opening the gate resolves them all.
fn read_only_waits_for_what_it_read(name: &str) {
    let dev = MemDev::new(Vec::new());
    let (s, _) = open(name, &dev, Records::Txn, 1, &State::default());
    let gates = [Arc::clone(&dev)];
    let _open = OpenGates(&gates);
    let (a, b) = (RowMeta::default(), RowMeta::default());
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    commit_rows(&mut *w0, 1, &[(1, &a, true)]).wait().unwrap();
    let read_a_durable = commit_rows(&mut *w1, 2, &[(1, &a, false)]);
    assert!(read_a_durable.is_durable().unwrap(), "{name}");

    dev.set_gate(false);
    let write_a = commit_rows(&mut *w0, 3, &[(1, &a, true)]);
    let read_b = commit_rows(&mut *w1, 4, &[(2, &b, false)]);
    assert!(
        read_b.is_durable().unwrap(),
        "{name}: a read of a row no volatile commit wrote waited"
    );
    let read_a = commit_rows(&mut *w1, 5, &[(2, &b, false), (1, &a, false)]);
    w1.on_absent(0, Bound::Included(9), Bound::Included(9));
    let after_miss = commit_rows(&mut *w1, 6, &[(2, &b, false)]);
    let read_b_again = commit_rows(&mut *w1, 7, &[(2, &b, false)]);
    assert!(
        !write_a.is_durable().unwrap(),
        "{name}: the gate held nothing"
    );
    assert!(
        !read_a.is_durable().unwrap(),
        "{name}: a read of a volatile commit's row acknowledged before it"
    );
    assert!(
        !after_miss.is_durable().unwrap(),
        "{name}: a read-only commit after a miss acknowledged before the log's tail"
    );
    assert!(
        read_b_again.is_durable().unwrap(),
        "{name}: the miss outlived its commit"
    );

    dev.set_gate(true);
    for t in [write_a, read_a, after_miss] {
        t.wait().unwrap();
    }
    drop((w0, w1));
    s.close().unwrap();
}

#[test]
fn serial_read_only_commit_waits_for_what_it_read() {
    read_only_waits_for_what_it_read("serial");
    read_only_waits_for_what_it_read("aether");
}
