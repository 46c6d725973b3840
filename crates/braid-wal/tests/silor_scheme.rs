//! The silor scheme driven directly (no engine): acknowledgement only at the durable epoch,
//! recovery discarding every epoch above it (and never resurrecting them), the latest TID
//! winning per key across streams, the delete-then-insert order of a re-created row, and its
//! options and refusals; a hand-built log recovered alike by the single-stream pipeline and
//! the recovery of several streams, and two hand-built streams recovered alike window by
//! window and in one batch.
//!
//! Devices are in-memory file-like devices whose flushes can be held back by a gate; their
//! durable bytes are the image a crash leaves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::payload::{RedoBuf, RedoOp, decode_redo};
use braid_wal::scheme::silor::{self, SilorConfig};
use braid_wal::scheme::{
    Access, CommitRequest, LogKind, NoRows, Prefetch, Replay, ReplayError, RowMeta, RowRef, Scheme,
    SchemeConfig, SchemeSpec, SchemeWorker, Ticket,
};
use parking_lot::Mutex;

use crate::integration::mem_device::{MemDev, OpenGates};

/// Replays into a (table, key) -> value map.
#[derive(Default)]
struct State {
    rows: Mutex<HashMap<(u32, u64), Vec<u8>>>,
}

impl State {
    fn get(&self, key: u64) -> Option<Vec<u8>> {
        self.rows.lock().get(&(0, key)).cloned()
    }
}

impl Replay for State {
    fn apply(&self, _txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        assert_eq!(kind, LogKind::Data);
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Insert {
                    table, key, data, ..
                }
                | RedoOp::Update {
                    table, key, data, ..
                } => {
                    self.rows.lock().insert((table, key), data.to_vec());
                }
                RedoOp::Delete { table, key } => {
                    self.rows.lock().remove(&(table, key));
                }
            }
        }
        Ok(())
    }
}

fn cfg(threads: usize) -> SchemeConfig {
    SchemeConfig {
        max_workers: 2,
        recovery_threads: threads,
        ..SchemeConfig::default()
    }
}

/// Epochs long enough that a test's commits all fall into one (the epoch thread's last round
/// at `close` makes them durable).
const LONG: u64 = 60_000;

fn open(devs: &[Arc<MemDev>], state: &State, epoch_ms: u64) -> Arc<silor::Silor> {
    let devices: Vec<Arc<dyn Device>> = devs
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    let sc = SilorConfig { epoch_ms };
    silor::open_silor(&cfg(2), &sc, devices, state, &|_| {})
        .unwrap()
        .0
}

/// Crash: recover a fresh state from the devices' durable bytes; returns the state and the
/// devices holding the image.
fn crash(devs: &[Arc<MemDev>]) -> (State, Vec<Arc<MemDev>>, Arc<silor::Silor>) {
    let img: Vec<Arc<MemDev>> = devs.iter().map(|d| MemDev::new(d.crash_image())).collect();
    let state = State::default();
    let s = open(&img, &state, 2);
    (state, img, s)
}

/// Write `key` := `[value; 4]` by identity (insert image).
fn put(w: &mut dyn SchemeWorker, id: u64, key: u64, value: u8) -> Ticket {
    w.on_write(RowRef::new(0, key));
    let mut buf = RedoBuf::default();
    buf.push(&RedoOp::Insert {
        table: 0,
        key,
        data: &[value; 4],
    });
    w.commit(&CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &buf.bytes,
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    })
    .unwrap()
}

/// T1 on stream 0 is acknowledged. Stream 1's flushes are then held back: T2 (stream 1) and
/// T3 (stream 0, flushed) stay unacknowledged, and a crash recovers neither, though T3's
/// record is durable (its epoch is above `D`). After a reopen and a new acknowledged commit
/// (so `D` moves past T3's epoch), a second crash still does not resurrect T3.
#[test]
fn acknowledged_at_the_durable_epoch_and_later_epochs_discarded_for_good() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let state = State::default();
    let s = open(&devs, &state, 2);
    let _gates = OpenGates(&devs);
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    let t1 = put(&mut *w0, 1, 1, 1);
    t1.wait().unwrap();
    let d1 = s.durable_epoch();
    devs[1].set_gate(false);
    let t2 = put(&mut *w1, 2, 2, 2);
    let t3 = put(&mut *w0, 3, 3, 3);
    let st0 = &s.streams()[0];
    st0.wait_durable(st0.tail()).unwrap();
    assert!(!t2.is_durable().unwrap());
    assert!(
        !t3.is_durable().unwrap(),
        "acknowledged above the durable epoch"
    );
    assert!(s.durable_epoch() >= d1);

    let (rec, img, s2) = crash(&devs);
    assert_eq!(rec.get(1), Some(vec![1; 4]));
    assert_eq!(rec.get(2), None);
    assert_eq!(
        rec.get(3),
        None,
        "a record of an epoch above D was replayed"
    );
    let mut w = s2.worker(0).unwrap();
    let t5 = put(&mut *w, 5, 5, 5);
    t5.wait().unwrap();
    let (rec2, _img2, _s3) = crash(&img);
    assert_eq!(rec2.get(1), Some(vec![1; 4]));
    assert_eq!(rec2.get(5), Some(vec![5; 4]));
    assert_eq!(rec2.get(3), None, "a discarded record came back");
}

/// One key written on stream 1, then on stream 0, then on stream 1 again: recovery (which
/// reads stream 0 first) must install the value of the largest TID.
#[test]
fn latest_tid_wins_across_streams() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let state = State::default();
    let s = open(&devs, &state, LONG);
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    let e = s.epoch();
    let tickets = [
        put(&mut *w1, 1, 9, 1),
        put(&mut *w0, 2, 9, 2),
        put(&mut *w0, 3, 8, 3),
        put(&mut *w1, 4, 8, 4),
        put(&mut *w0, 5, 8, 5),
    ];
    assert_eq!(s.epoch(), e, "one epoch: only TIDs order the writes");
    assert!(!tickets[0].is_durable().unwrap());
    drop((w0, w1));
    s.close().unwrap();
    for t in &tickets {
        t.wait().unwrap();
    }
    let (rec, _img, _s) = crash(&devs);
    assert_eq!(rec.get(9), Some(vec![2; 4]));
    assert_eq!(rec.get(8), Some(vec![5; 4]));
}

/// Commit through rows with [`RowMeta`] slots, as the engine does.
fn put_row(w: &mut dyn SchemeWorker, id: u64, key: u64, meta: &RowMeta, op: Option<u8>) -> Ticket {
    let row = RowRef {
        table: 0,
        key,
        meta: Some(meta),
    };
    w.on_write(row);
    let mut buf = RedoBuf::default();
    match op {
        Some(v) => {
            w.on_insert(0, key);
            buf.push(&RedoOp::Insert {
                table: 0,
                key,
                data: &[v; 4],
            });
        }
        None => {
            w.on_delete(0, key);
            buf.push(&RedoOp::Delete { table: 0, key });
        }
    }
    let rows = vec![Access {
        row,
        read: true,
        write: true,
    }];
    w.commit(&CommitRequest {
        txn: id,
        kind: LogKind::Data,
        payload: &buf.bytes,
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &rows,
        updates: 0,
    })
    .unwrap()
}

/// A key inserted and deleted on stream 1 by a worker with many commits behind it (so large
/// TIDs), then inserted again as a new row with a fresh slot by a worker without any (stream
/// 0, read first by recovery): the re-insert must order after the delete.
#[test]
fn a_reinserted_row_orders_after_its_delete() {
    let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
    let state = State::default();
    let s = open(&devs, &state, LONG);
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    let e = s.epoch();
    let old = RowMeta::default();
    let mut tickets = Vec::new();
    for i in 0..50 {
        tickets.push(put_row(
            &mut *w1,
            100 + i,
            1000 + i,
            &RowMeta::default(),
            Some(0),
        ));
    }
    tickets.push(put_row(&mut *w1, 1, 7, &old, Some(1)));
    tickets.push(put_row(&mut *w1, 2, 7, &old, None));
    let fresh = RowMeta::default();
    tickets.push(put_row(&mut *w0, 3, 7, &fresh, Some(3)));
    assert_eq!(s.epoch(), e, "one epoch: only TIDs order the writes");
    drop((w0, w1));
    s.close().unwrap();
    for t in &tickets {
        t.wait().unwrap();
    }
    let (rec, _img, _s) = crash(&devs);
    assert_eq!(rec.get(7), Some(vec![3; 4]));
}

#[test]
fn options_and_refusals() {
    let spec: SchemeSpec = "silor:epoch_ms=5".parse().unwrap();
    assert_eq!(spec.options(), vec![("epoch_ms", "5".to_string())]);
    assert_eq!(
        SchemeSpec::named("silor").unwrap().options(),
        vec![("epoch_ms", "40".to_string())]
    );
    assert!("silor:epoch_ms=0".parse::<SchemeSpec>().is_err());
    assert!("silor:group=1".parse::<SchemeSpec>().is_err());
    assert!(spec.command_logging_refusal().is_some());
    assert!(spec.mvcc_refusal().is_some());
    let devices: Vec<Arc<dyn Device>> = vec![MemDev::new(Vec::new())];
    let c = SchemeConfig {
        logging: LogKind::Command,
        ..cfg(1)
    };
    let r = silor::open_silor(
        &c,
        &SilorConfig::default(),
        devices,
        &State::default(),
        &|_| {},
    );
    assert!(matches!(r, Err(WalError::Unsupported { .. })));
}

/// A checkpoint's wait for durability ends even when nothing is running (the epoch thread
/// skips idle rounds unless someone waits).
#[test]
fn checkpoint_wait_ends_when_idle() {
    let devs = [MemDev::new(Vec::new())];
    let state = State::default();
    let s = open(&devs, &state, 2);
    let p = s.positions();
    let before = s.epoch();
    s.wait_durable(&p.lsns).unwrap();
    assert!(s.durable_epoch() >= before);
}

/// One record of a hand-built Silo-R log.
enum Entry {
    /// txn, epoch, TID counter within the epoch, key, value (an update image of 4 bytes).
    Put(u64, u64, u64, u64, u8),
    Pepoch(u64),
    /// A durable-epoch record with each stream's tail.
    PepochTails(u64, Vec<u64>),
    Void(u64, u64),
}

/// Where each of `entries`' records starts in its [`image`], and where the last one ends.
fn starts(entries: &[Entry]) -> Vec<u64> {
    let mut at = Vec::with_capacity(entries.len() + 1);
    for i in 0..=entries.len() {
        at.push(image(&entries[..i]).len() as u64);
    }
    at
}

/// Encode `entries` as one stream's durable bytes (MemDev's salt is 7).
fn image(entries: &[Entry]) -> Vec<u8> {
    use braid_wal::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
    let mut out = Vec::new();
    for e in entries {
        let mut buf = RedoBuf::default();
        let (kind, txn, stamp, payload): (Kind, u64, Stamp, Vec<u8>) = match *e {
            Entry::Put(txn, epoch, n, key, v) => {
                buf.push(&RedoOp::Update {
                    table: 0,
                    key,
                    columns: 1,
                    data: &[v; 4],
                });
                let tid = silor::first_tid(epoch) + n;
                (Kind::Redo, txn, Stamp::Gsn(tid), buf.bytes.clone())
            }
            Entry::Pepoch(d) => (
                Kind::Checkpoint,
                0,
                Stamp::None,
                silor::pepoch_payload(d).to_vec(),
            ),
            Entry::PepochTails(d, ref tails) => (
                Kind::Checkpoint,
                0,
                Stamp::None,
                silor::pepoch_tails_payload(d, tails),
            ),
            Entry::Void(lo, hi) => (
                Kind::Checkpoint,
                0,
                Stamp::None,
                silor::void_payload(lo, hi).to_vec(),
            ),
        };
        let spec = RecordSpec {
            kind,
            flags: if kind == Kind::Redo { FLAG_COMMIT } else { 0 },
            txn,
            stamp: &stamp,
            payload: &[&payload],
        };
        let len = spec.check().unwrap();
        let at = out.len();
        out.resize(at + len, 0);
        spec.encode(at as u64, at as u64, 7, &mut out[at..]);
    }
    out
}

/// Open silor on streams holding `images` with `threads` recovery threads; assert that keys 1,
/// 2 and 3 hold 4-byte images of `values` and that (replayed, skipped) is `counts`.
fn recovers(
    images: Vec<Vec<u8>>,
    threads: usize,
    values: [u8; 3],
    counts: (u64, u64),
    at: &str,
) -> (Arc<silor::Silor>, braid_wal::RecoveryReport) {
    let devices: Vec<Arc<dyn Device>> = images
        .into_iter()
        .map(|b| MemDev::new(b) as Arc<dyn Device>)
        .collect();
    let state = State::default();
    let (s, report) = silor::open_silor(
        &cfg(threads),
        &SilorConfig { epoch_ms: LONG },
        devices,
        &state,
        &|_| {},
    )
    .unwrap();
    for (key, v) in (1..).zip(values) {
        assert_eq!(state.get(key), Some(vec![v; 4]), "key {key}, {at}");
    }
    assert_eq!((report.txns, report.skipped), counts, "{at}");
    (s, report)
}

/// Records wait for a `P` covering their epoch, are released in stream order (key 1's epoch-2
/// update after its epoch-1 image), a void marker drops the epochs it covers though a later
/// `P` passes them, and what no `P` covers at the end is skipped. The single-stream pipeline
/// (with 1 and 3 replay threads) and the recovery of several streams (the same stream beside
/// an empty one; its `P` records carry no tails, so in one batch) recover the same rows and
/// counts.
#[test]
fn durable_epochs_decide_alike_in_the_pipeline_and_the_recovery_of_several_streams() {
    use Entry::{Pepoch, Put, Void};
    let log = image(&[
        Put(1, 1, 1, 1, 1),
        Pepoch(1),
        Put(2, 2, 1, 2, 2),
        Put(3, 2, 2, 1, 3),
        Put(4, 3, 1, 3, 4),
        Pepoch(2),
        Put(5, 3, 2, 2, 5),
        Void(2, 4),
        Put(6, 5, 1, 3, 6),
        Pepoch(5),
        Put(7, 6, 1, 1, 7),
    ]);
    let runs: [(usize, usize); 3] = [(1, 1), (1, 3), (2, 2)];
    for (streams, threads) in runs {
        let images = (0..streams).map(|s| if s == 0 { log.clone() } else { Vec::new() });
        let at = format!("{streams} streams, {threads} threads");
        let (s, _) = recovers(images.collect(), threads, [3, 2, 6], (4, 3), &at);
        // D was 5; the open voids epoch 6 (T7's) with a marker and starts above it.
        assert_eq!(s.durable_epoch(), 6, "{at}");
        s.close().unwrap();
    }
}

/// Two streams recovered window by window: stream 1's records of a key interleave by TID with
/// stream 0's across the windows the tails of the `P` records open (a record past a tail,
/// read early, waits for its window), a void marker drops an old life's epoch, and what no
/// `P` covers is skipped. The same streams with plain `P` records (no windows: one batch at
/// the end) recover the same rows and counts, on 1, 2 and 3 threads.
#[test]
fn windows_between_durable_epochs_recover_what_one_batch_does() {
    use Entry::{Pepoch, PepochTails, Put, Void};
    let s1 = [
        Put(10, 1, 5, 1, 11),
        Put(11, 2, 1, 1, 12),
        Put(12, 3, 1, 2, 13),
        Put(13, 4, 1, 1, 14),
        Put(14, 5, 2, 3, 15),
    ];
    let at1 = starts(&s1);
    let s0 = |tails: bool| {
        let p = |d: u64, t1: u64| {
            if tails {
                PepochTails(d, vec![0, t1])
            } else {
                Pepoch(d)
            }
        };
        vec![
            Put(1, 1, 1, 1, 1),
            Put(2, 2, 2, 1, 2),
            p(1, at1[1]),
            Put(3, 3, 2, 2, 3),
            p(3, at1[3]),
            Put(4, 4, 2, 3, 4),
            Void(3, 4),
            Put(5, 5, 1, 3, 5),
            p(5, at1[5]),
        ]
    };
    for tails in [true, false] {
        for threads in [1, 2, 3] {
            let images = vec![image(&s0(tails)), image(&s1)];
            let at = format!("tails {tails}, {threads} threads");
            let (s, report) = recovers(images, threads, [2, 3, 15], (8, 2), &at);
            assert_eq!(report.plan, Some("windows"), "{at}");
            s.close().unwrap();
        }
    }
}

/// What a replay was told, in order: announcements (step, operations) and applies.
#[derive(Debug, PartialEq)]
enum Seen {
    Hint(Prefetch, Vec<u8>),
    Apply(Vec<u8>),
}

/// Records the order of hints and applies.
#[derive(Default)]
struct Watch {
    seen: Mutex<Vec<Seen>>,
}

impl Replay for Watch {
    fn apply(&self, _txn: u64, _kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        self.seen.lock().push(Seen::Apply(payload.to_vec()));
        Ok(())
    }

    fn prefetch(&self, kind: LogKind, payloads: &mut dyn Iterator<Item = &[u8]>, step: Prefetch) {
        assert_eq!(kind, LogKind::Data);
        let mut seen = self.seen.lock();
        seen.extend(payloads.map(|p| Seen::Hint(step, p.to_vec())));
    }
}

/// A durable epoch's released records are announced to the replay before their apply (far,
/// then near), with exactly the operations then applied; a record no `P` covers is neither
/// applied nor announced.
#[test]
fn released_records_are_announced_before_they_are_applied() {
    use Entry::{Pepoch, Put};
    let mut entries: Vec<Entry> = (1..=40).map(|i| Put(i, 1, i, i, i as u8)).collect();
    entries.push(Pepoch(1));
    entries.push(Put(41, 2, 1, 41, 41));
    let devices: Vec<Arc<dyn Device>> = vec![MemDev::new(image(&entries)) as Arc<dyn Device>];
    let watch = Watch::default();
    let (s, report) = silor::open_silor(
        &cfg(1),
        &SilorConfig { epoch_ms: LONG },
        devices,
        &watch,
        &|_| {},
    )
    .unwrap();
    assert_eq!((report.txns, report.skipped), (40, 1));
    let seen = watch.seen.lock();
    let applied: Vec<&Vec<u8>> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Apply(ops) => Some(ops),
            Seen::Hint(..) => None,
        })
        .collect();
    assert_eq!(applied.len(), 40);
    let at = |want: &Seen| seen.iter().position(|s| s == want);
    let mut announced = 0;
    for ops in &applied {
        let apply = at(&Seen::Apply((*ops).clone())).unwrap();
        let locate = at(&Seen::Hint(Prefetch::Locate, (*ops).clone()));
        let body = at(&Seen::Hint(Prefetch::Body, (*ops).clone()));
        if let (Some(l), Some(b)) = (locate, body) {
            assert!(l < b && b < apply, "hints at {l} and {b}, apply at {apply}");
            announced += 1;
        }
    }
    // All but the first few of a batch (those nearer than the lookahead) are announced.
    assert!(announced >= 30, "{announced} of 40 announced");
    for s in seen.iter() {
        if let Seen::Hint(step, ops) = s {
            assert!(
                applied.contains(&ops),
                "a {step:?} hint for a record not applied"
            );
        }
    }
    drop(seen);
    s.close().unwrap();
}
