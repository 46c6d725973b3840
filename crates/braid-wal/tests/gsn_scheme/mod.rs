//! The gsn scheme driven directly (no engine): commit protection across logs, passive group
//! commit with a straggler, recovery's bound and the page-partitioned record layout.
//!
//! Devices are in-memory: [`MemDev`] is a file-like device (durable only when flushed) whose
//! flushes can be held back by a gate, so a test decides exactly which log is durable; its
//! durable bytes are the image a crash would leave.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::integration::scheme_txn::txn;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_pmem::Region;
use braid_wal::WalError;
use braid_wal::device::Device;
use braid_wal::device::pmem::{PmemDevice, PmemDeviceConfig};
use braid_wal::payload::{RedoBuf, RedoOp, decode_redo};
use braid_wal::scheme::gsn::{self, CommitProtocol, GsnConfig, Hook, Partition};
use braid_wal::scheme::{
    CommitRequest, LogKind, NoRows, Replay, ReplayError, RowRef, Scheme, SchemeConfig, SchemeWorker,
};
use parking_lot::Mutex;

use crate::integration::mem_device::{MemDev, OpenGates};

mod absent;
mod autonomous;
mod command;
mod follow;
mod pmem;
mod rfa;

/// Replays into a key -> (table, value) map, remembering the order of transactions.
#[derive(Default)]
struct State {
    rows: Mutex<HashMap<(u32, u64), Vec<u8>>>,
    txns: Mutex<Vec<u64>>,
}

impl Replay for State {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        assert_eq!(kind, LogKind::Data);
        self.txns.lock().push(txn);
        for op in decode_redo(payload) {
            match op? {
                RedoOp::Insert { table, key, data }
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

fn cfg(partition: Partition, commit: CommitProtocol) -> (SchemeConfig, GsnConfig) {
    (
        SchemeConfig {
            ..SchemeConfig::default()
        },
        GsnConfig {
            partition,
            commit,
            rows_per_page: 1,
            page_slots: 1 << 12,
            ..GsnConfig::default()
        },
    )
}

fn open(cfg: &(SchemeConfig, GsnConfig), devs: &[Arc<MemDev>], state: &State) -> Arc<dyn Scheme> {
    let devices: Vec<Arc<dyn Device>> = devs
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    gsn::open_gsn(&cfg.0, &cfg.1, devices, state, &|_| {})
        .unwrap()
        .0
}

/// The commit daemon's rounds so far.
fn daemon_rounds(s: &dyn Scheme) -> u64 {
    s.counters()
        .into_iter()
        .find(|(name, _)| *name == "daemon_rounds")
        .map(|(_, n)| n)
        .expect("the gsn scheme counts its daemon rounds")
}

/// The scheme's counter `name` (the test fails if it has none).
fn counter(s: &dyn Scheme, name: &str) -> u64 {
    s.counters()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

fn wait_flushed(s: &dyn Scheme, log: usize) {
    let st = &s.streams()[log];
    st.wait_durable(st.tail()).unwrap();
}

/// Per-update records: name `key` written and log its insert of `value` as transaction `txn`'s
/// update record.
fn log_update_of(w: &mut dyn SchemeWorker, txn: u64, key: u64, value: u8) {
    let row = RowRef::new(0, key);
    w.on_write(row);
    let mut op = RedoBuf::default();
    op.push(&RedoOp::Insert {
        table: 0,
        key,
        data: &[value; 4],
    });
    w.log_update(&braid_wal::scheme::UpdateRecord {
        txn,
        row,
        payload: &op.bytes,
    })
    .unwrap();
}

/// Per-update records: commit transaction `txn` after its `updates` update records.
fn commit_updates(w: &mut dyn SchemeWorker, txn: u64, updates: u32) -> braid_wal::scheme::Ticket {
    w.commit(&CommitRequest {
        txn,
        kind: LogKind::Data,
        payload: &[],
        read_only: false,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates,
    })
    .unwrap()
}

/// Two logs on gated in-memory devices with log 1's flushes held back, a worker on each, and
/// T1 (transaction 101, key 1, value 1) committed into log 1 by `w1`: what the tests of a
/// dependency across logs start from. Dropping it opens the gates first, so the scheme's
/// close does not wait on a held flush.
struct HeldLog1 {
    w0: Box<dyn SchemeWorker>,
    /// T1's worker, kept until the scheme closes.
    _w1: Box<dyn SchemeWorker>,
    t1: braid_wal::scheme::Ticket,
    s: Arc<dyn Scheme>,
    devs: [Arc<MemDev>; 2],
}

impl HeldLog1 {
    fn new(c: &(SchemeConfig, GsnConfig)) -> HeldLog1 {
        let devs = [MemDev::new(Vec::new()), MemDev::new(Vec::new())];
        let s = open(c, &devs, &State::default());
        let w0 = s.worker(0).unwrap();
        let mut w1 = s.worker(1).unwrap();
        // Page-level partitioning: key k goes to log k mod 2, so key 1 is in log 1.
        devs[1].set_gate(false);
        let t1 = txn(&mut *w1, 101, &[], &[1], 1);
        HeldLog1 {
            w0,
            _w1: w1,
            t1,
            s,
            devs,
        }
    }

    /// What a crash now would leave of each log.
    fn images(&self) -> Vec<Vec<u8>> {
        self.devs.iter().map(|d| d.crash_image()).collect()
    }

    /// Let log 1 flush, wait for `tickets` and T1, and close the scheme.
    fn finish(self, tickets: &[&braid_wal::scheme::Ticket]) {
        self.devs[1].set_gate(true);
        for t in tickets.iter().chain([&&self.t1]) {
            t.wait().unwrap();
        }
        self.s.close().unwrap();
    }
}

impl Drop for HeldLog1 {
    fn drop(&mut self) {
        OpenGates(&self.devs);
    }
}

/// Open (recover) the scheme on `devs`: what it replayed, its report, and the scheme.
fn reopen(
    c: &(SchemeConfig, GsnConfig),
    devs: &[Arc<MemDev>],
) -> (State, braid_wal::scheme::RecoveryReport, Arc<dyn Scheme>) {
    let st = State::default();
    let devices: Vec<Arc<dyn Device>> = devs
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    let (s, report) = gsn::open_gsn(&c.0, &c.1, devices, &st, &|_| {}).unwrap();
    (st, report, s)
}

/// [`reopen`] on new devices holding `images` (a crash's leftovers), returned first.
fn recover(
    c: &(SchemeConfig, GsnConfig),
    images: &[Vec<u8>],
) -> (
    Vec<Arc<MemDev>>,
    State,
    braid_wal::scheme::RecoveryReport,
    Arc<dyn Scheme>,
) {
    let crashed: Vec<Arc<MemDev>> = images.iter().cloned().map(MemDev::new).collect();
    let (st, report, s) = reopen(c, &crashed);
    (crashed, st, report, s)
}

/// T1 writes key 1 into log 1, whose flushes are held back; T0 reads key 1 and writes key 2
/// into log 0, which flushes. T0 must not be acknowledged while T1's record is not durable,
/// and a crash in that state must recover neither.
fn dependency_across_logs(partition: Partition) {
    let c = cfg(partition, CommitProtocol::Passive);
    let mut r = HeldLog1::new(&c);
    // Page-level partitioning: key 2 is in log 0.
    let t0 = txn(&mut *r.w0, 100, &[1], &[2], 2);
    let (s, devs, t1) = (&*r.s, &r.devs, &r.t1);
    wait_flushed(s, 0);
    // Give the commit daemon every chance to (wrongly) acknowledge: wait until it is blocked
    // waiting for log 1 (nobody else waits for it): asleep as the stream's waiter, or leading
    // the stream's flush itself and held at the gate; or, for a daemon that does not block,
    // until it has started three more rounds (the second read its target after T0 committed
    // and has acknowledged what it could once the third starts), or until it acknowledged T0.
    let rounds = || daemon_rounds(s);
    let daemon_blocked = || {
        s.streams()[1].blocked_waiters() > 0
            || devs[1].held_by().iter().any(|n| n == "braid-gsn-commit")
    };
    let r0 = rounds();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon_blocked() && rounds() < r0 + 3 && !t0.is_durable().unwrap() {
        assert!(
            Instant::now() < deadline,
            "the commit daemon neither waited for log 1 nor ran its rounds"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        !t0.is_durable().unwrap(),
        "T0 acknowledged while T1, which it read, is not durable"
    );
    assert!(!t1.is_durable().unwrap());
    let images = r.images();
    r.finish(&[&t0]);

    // Recover the image the crash would have left: log 0 holds T0, log 1 lacks T1.
    let (crashed, st, report, s2) = recover(&c, &images);
    assert!(
        st.rows.lock().is_empty(),
        "recovered {:?} though T1 was lost",
        st.rows.lock()
    );
    assert_eq!(report.txns, 0);
    assert!(report.skipped >= 1);
    s2.close().unwrap();
    // And again (idempotent, and the void marker keeps T0 out for good).
    let (_, _, s3) = reopen(&c, &crashed);
    let mut w = s3.worker(0).unwrap();
    txn(&mut *w, 200, &[], &[5], 5).wait().unwrap();
    drop(w);
    s3.close().unwrap();
    let (st, _, s4) = reopen(&c, &crashed);
    let rows = st.rows.lock().clone();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows.get(&(0, 5)), Some(&vec![5u8; 4]));
    s4.close().unwrap();
}

#[test]
fn no_ack_while_a_dependency_is_unpersisted_in_another_log_tx() {
    dependency_across_logs(Partition::Transaction);
}

#[test]
fn no_ack_while_a_dependency_is_unpersisted_in_another_log_page() {
    dependency_across_logs(Partition::Page);
}

/// Page partitioning: a transaction writing keys in both logs is atomic, and later writers of
/// a key win after recovery (replay follows GSN order per page).
#[test]
fn page_partitioned_recovery_is_atomic_and_ordered() {
    let devs = [
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
        MemDev::new(Vec::new()),
    ];
    let state = State::default();
    let mut c = cfg(Partition::Page, CommitProtocol::Passive);
    c.0.recovery_threads = 3;
    let s = open(&c, &devs, &state);
    // Declared after `s`, so dropped (gates opened) before it.
    let _gates = OpenGates(&devs);
    let mut w0 = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    let mut tickets = Vec::new();
    for i in 0..200u64 {
        let (w, v) = if i % 2 == 0 {
            (&mut w0, 1)
        } else {
            (&mut w1, 2)
        };
        tickets.push(txn(
            &mut **w,
            1000 + i,
            &[i % 7],
            &[i % 7, (i + 1) % 7, (i + 2) % 7],
            v + (i % 50) as u8,
        ));
    }
    for t in &tickets {
        t.wait().unwrap();
    }
    // Then a transaction whose part in log 2 never becomes durable.
    devs[2].set_gate(false);
    let torn = txn(&mut *w0, 5000, &[], &[0, 1, 2], 99);
    wait_flushed(&*s, 0);
    wait_flushed(&*s, 1);
    assert!(!torn.is_durable().unwrap());
    let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
    devs[2].set_gate(true);
    drop((w0, w1));
    s.close().unwrap();
    let crashed: Vec<Arc<MemDev>> = images.into_iter().map(MemDev::new).collect();
    let st = State::default();
    let devices: Vec<Arc<dyn Device>> = crashed
        .iter()
        .map(|d| Arc::clone(d) as Arc<dyn Device>)
        .collect();
    let (s2, report) = gsn::open_gsn(&c.0, &c.1, devices, &st, &|_| {}).unwrap();
    assert_eq!(report.txns, 200, "{report:?}");
    let rows = st.rows.lock().clone();
    // The last writer of key k among transactions 0..200 is the largest i with k in {i, i+1, i+2} mod 7.
    for k in 0..7u64 {
        let i = (0..200u64)
            .rev()
            .find(|i| [i % 7, (i + 1) % 7, (i + 2) % 7].contains(&k))
            .unwrap();
        let v = if i % 2 == 0 { 1 } else { 2 } + (i % 50) as u8;
        assert_eq!(rows.get(&(0, k)), Some(&vec![v; 4]), "key {k}");
    }
    assert!(!st.txns.lock().contains(&5000));
    s2.close().unwrap();
}

/// The recovery pipeline (Section 3.2) gives the same state whatever its N scanners and M
/// appliers, for both partitionings: the last writer of every key wins, every committed
/// transaction is replayed once per page it wrote, and every stage is timed.
#[test]
fn pipeline_thread_counts_recover_the_same_state() {
    for partition in [Partition::Transaction, Partition::Page] {
        let devs = [
            MemDev::new(Vec::new()),
            MemDev::new(Vec::new()),
            MemDev::new(Vec::new()),
        ];
        let state = State::default();
        let c = cfg(partition, CommitProtocol::Passive);
        let s = open(&c, &devs, &state);
        let mut ws: Vec<Box<dyn SchemeWorker>> = (0..3).map(|w| s.worker(w).unwrap()).collect();
        let mut last: HashMap<u64, u8> = HashMap::new();
        let mut tickets = Vec::new();
        for i in 0..600u64 {
            let keys = [i % 23, (i * 7 + 3) % 23, (i * 11 + 5) % 23];
            let v = (i % 251) as u8;
            tickets.push(txn(&mut *ws[(i % 3) as usize], 10_000 + i, &[], &keys, v));
            for k in keys {
                last.insert(k, v);
            }
        }
        for t in &tickets {
            t.wait().unwrap();
        }
        drop(ws);
        s.close().unwrap();
        let images: Vec<Vec<u8>> = devs.iter().map(|d| d.crash_image()).collect();
        let want: HashMap<(u32, u64), Vec<u8>> =
            last.iter().map(|(&k, &v)| ((0, k), vec![v; 4])).collect();
        for (n, m) in [(1, 1), (1, 3), (2, 2), (3, 1), (4, 5)] {
            let mut c = c.clone();
            c.1.scan_threads = n;
            c.1.apply_threads = m;
            let devices: Vec<Arc<dyn Device>> = images
                .iter()
                .map(|i| MemDev::new(i.clone()) as Arc<dyn Device>)
                .collect();
            let st = State::default();
            let report = gsn::recover_only(&c.0, &c.1, &devices, &st, &|_| {}).unwrap();
            assert_eq!(report.txns, 600, "N={n} M={m} {partition}: {report:?}");
            assert_eq!(
                *st.rows.lock(),
                want,
                "N={n} M={m} {partition}: the recovered state differs"
            );
            let stages: Vec<&str> = report.stages.iter().map(|s| s.0).collect();
            assert_eq!(stages, ["scan", "plan", "partition", "apply"]);
            // Every transaction's writes reach the replay, split by bucket at most M ways.
            let mut txns = st.txns.lock().clone();
            txns.sort_unstable();
            txns.dedup();
            assert_eq!(txns.len(), 600, "N={n} M={m} {partition}");
        }
    }
}
