//! The scalability proxies ([`braid_wal::proxy`]) count, per scheme, exactly the shared
//! read-modify-writes and shared cache lines its worker's commit path performs, so the counts
//! cannot drift from the code. One worker at a time (no compare-and-swap retries), on
//! devices without a flusher (no wake-ups), and with the schemes' background threads that
//! would race the worker for a shared word turned off, so every count is exact.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_pmem::{PmemConfig, Region};
use braid_wal::device::Device;
use braid_wal::device::null::NullDevice;
use braid_wal::device::pmem::PmemWrite;
use braid_wal::fs::RealFs;
use braid_wal::proxy::{AppendCost, Proxies};
use braid_wal::scheme::pertxn::{FlushPolicy, PerTxnConfig};
use braid_wal::scheme::{
    self, CommitRequest, LogKind, NoRows, RegionStorage, Replay, ReplayError, Scheme, SchemeConfig,
    SchemeSpec, SchemeWorker, Storage,
};

struct NoReplay;

impl Replay for NoReplay {
    fn apply(&self, _txn: u64, _kind: LogKind, _payload: &[u8]) -> Result<(), ReplayError> {
        Ok(())
    }
}

fn open(spec: &SchemeSpec, storage: Storage) -> Arc<dyn Scheme> {
    let cfg = SchemeConfig {
        max_workers: 4,
        ..SchemeConfig::default()
    };
    scheme::open(spec, &cfg, storage, &NoReplay, &|_| {})
        .unwrap()
        .0
}

fn null_devices(n: usize) -> Storage {
    Storage::Devices(
        (0..n)
            .map(|_| Arc::new(NullDevice::new()) as Arc<dyn Device>)
            .collect(),
    )
}

fn commit(w: &mut dyn SchemeWorker, txn: u64, payload: &[u8], read_only: bool) {
    let req = CommitRequest {
        txn,
        kind: LogKind::Data,
        payload,
        read_only,
        epoch: 0,
        writes: &[],
        rows: &NoRows,
        updates: 0,
    };
    w.commit(&req).unwrap().wait().unwrap();
}

/// Payload sizes that put records on and off cache-line boundaries.
fn payload(i: u64) -> Vec<u8> {
    vec![i as u8; 3 + (i as usize * 13) % 150]
}

/// Commit `count` update transactions through worker `w` of stream/log `stream` and one
/// read-only one; returns what the proxies should say given `per_append`, the shared
/// read-modify-writes and lines of the commit besides the stream append.
fn run_stream_scheme(
    s: &dyn Scheme,
    w: &mut dyn SchemeWorker,
    stream: usize,
    count: u64,
    per_commit: (u64, u64),
    expected: &mut Proxies,
) {
    for i in 0..count {
        let start = s.streams()[stream].tail();
        commit(w, 1 + i, &payload(i), false);
        let end = s.streams()[stream].tail();
        expected.commits += 1;
        // One compare-and-swap on the tail, its line, the record's partial lines.
        expected.shared_rmw += 1 + per_commit.0;
        expected.shared_lines += 1 + AppendCost::boundary_lines(start, end) + per_commit.1;
    }
    commit(w, 1_000_000, &[], true);
    expected.commits += 1;
}

#[test]
fn serial_counts_one_tail_cas_per_commit() {
    let s = open(&SchemeSpec::named("serial").unwrap(), null_devices(1));
    let mut w = s.worker(0).unwrap();
    let mut expected = Proxies {
        lanes: 1,
        ..Proxies::default()
    };
    run_stream_scheme(&*s, &mut *w, 0, 40, (0, 0), &mut expected);
    // The central log's tail is written by every worker: each compare-and-swap is global too.
    expected.global_rmw = expected.shared_rmw;
    drop(w);
    // The central tail: every one of its compare-and-swaps is on a word every worker writes.
    expected.global_rmw = expected.shared_rmw;
    let got = s.proxies().unwrap();
    assert_eq!(got, expected);
    assert!(
        expected.shared_lines > expected.shared_rmw,
        "some records straddle lines"
    );
    s.close().unwrap();
}

#[test]
fn taurus_counts_its_stream_and_commit_queue() {
    let mut spec = SchemeSpec::named("taurus").unwrap();
    spec.set("lv_compress", "off").unwrap();
    let s = open(&spec, null_devices(3));
    let mut expected = Proxies {
        lanes: 3,
        ..Proxies::default()
    };
    for i in 0..3 {
        let mut w = s.worker(i).unwrap();
        // The stream's commit queue: its lock taken and released, two lines.
        run_stream_scheme(&*s, &mut *w, i, 20, (2, 2), &mut expected);
    }
    assert_eq!(s.proxies().unwrap(), expected);
    s.close().unwrap();
}

#[test]
fn taurus_with_one_stream_is_serial() {
    let s = open(&SchemeSpec::named("taurus").unwrap(), null_devices(1));
    let mut w = s.worker(0).unwrap();
    let mut expected = Proxies {
        lanes: 1,
        ..Proxies::default()
    };
    run_stream_scheme(&*s, &mut *w, 0, 20, (0, 0), &mut expected);
    assert_eq!(s.proxies().unwrap(), expected);
    s.close().unwrap();
}

#[test]
fn gsn_counts_log_lock_and_commit_batches() {
    let mut spec = SchemeSpec::named("gsn").unwrap();
    // Durable cache: no commit queue, so nothing races the worker.
    spec.set("commit", "durable").unwrap();
    let s = open(&spec, null_devices(1));
    let mut w = s.worker(0).unwrap();
    let mut expected = Proxies {
        lanes: 1,
        ..Proxies::default()
    };
    // The log's lock (lock and unlock) on the line of its clock. Nothing else: commits are
    // counted in the worker's own lane (once every 256th commit added its batch to a shared
    // counter of the scheme, one read-modify-write more), and a durable cache has no queue.
    run_stream_scheme(&*s, &mut *w, 0, 300, (2, 1), &mut expected);
    assert_eq!(s.proxies().unwrap(), expected);
    assert_eq!(expected.global_rmw, 0);
    s.close().unwrap();
}

#[test]
fn none_counts_commits_only() {
    let s = open(&SchemeSpec::named("none").unwrap(), Storage::Nothing);
    let mut w = s.worker(0).unwrap();
    for i in 0..10 {
        commit(&mut *w, 1 + i, &payload(i), i % 2 == 0);
    }
    let p = s.proxies().unwrap();
    assert_eq!((p.commits, p.shared_rmw, p.shared_lines), (10, 0, 0));
    s.close().unwrap();
}

fn pertxn(opts: PerTxnConfig) -> (tempfile::TempDir, Arc<dyn Scheme>) {
    let dir = tempfile::tempdir().unwrap();
    let region = Region::create(
        &dir.path().join("log.region"),
        16 << 20,
        PmemConfig::default(),
    )
    .unwrap();
    let storage = Storage::Region(RegionStorage {
        region,
        fs: Arc::new(RealFs),
        backup_dir: dir.path().join("backup"),
        write: PmemWrite::NonTemporal,
    });
    let s = open(&SchemeSpec::new(opts), storage);
    (dir, s)
}

#[test]
fn pertxn_counts_global_lsn_and_index() {
    let (_dir, s) = pertxn(PerTxnConfig::default());
    let mut w = s.worker(0).unwrap();
    for i in 0..30 {
        commit(&mut *w, 1 + i, &payload(i), false);
    }
    commit(&mut *w, 1_000, &[], true);
    // Per one-object commit: the LSN counter (statistics are per writer, and the frontier
    // moves in the commit's wait, not in the insert); lines: the counter, the index entry,
    // the region's state word.
    let p = s.proxies().unwrap();
    assert_eq!(
        (p.commits, p.shared_rmw, p.shared_lines, p.global_rmw),
        (31, 30, 30 * 3, 30)
    );
    s.close().unwrap();
}

#[test]
fn pertxn_flush_on_commit_counts_the_daemon_flag() {
    let opts = PerTxnConfig {
        flush: FlushPolicy::Commit,
        flush_daemon: false,
        ..PerTxnConfig::default()
    };
    let (_dir, s) = pertxn(opts);
    let mut w = s.worker(0).unwrap();
    for i in 0..30 {
        commit(&mut *w, 1 + i, &payload(i), false);
    }
    // Per commit: the LSN counter (the daemon flag is read, and swapped only when the
    // daemon sleeps, which it never does here); lines: the counter and the index entry.
    let p = s.proxies().unwrap();
    assert_eq!(
        (p.commits, p.shared_rmw, p.shared_lines, p.global_rmw),
        (30, 30, 30 * 2, 30)
    );
    s.close().unwrap();
}

#[test]
fn concurrent_serial_counts_at_least_one_cas_per_commit() {
    let s = open(&SchemeSpec::named("serial").unwrap(), null_devices(1));
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let s = &s;
            sc.spawn(move || {
                let mut w = s.worker(t as usize).unwrap();
                for i in 0..500 {
                    commit(&mut *w, 1 + t * 1000 + i, &payload(i), false);
                }
            });
        }
    });
    let p = s.proxies().unwrap();
    assert_eq!(p.commits, 2000);
    // Retries of the tail's compare-and-swap add to the one every commit makes.
    assert!(p.shared_rmw >= 2000, "{p:?}");
    assert!(p.shared_lines >= 2000, "{p:?}");
    s.close().unwrap();
}
