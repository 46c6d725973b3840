//! Global read-modify-writes per commit ([`braid_wal::proxy`]): on words every worker writes,
//! whatever the streams. A scheme meant to scale with cores makes none per update-commit;
//! NV-Logging's per-transaction log makes exactly one (its global LSN); a central log makes at
//! least one (its tail is what it is). One worker at a time on devices without a flusher, so
//! the counts are exact; each scheme's count is pinned, so a regression fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use braid_pmem::{PmemConfig, Region};
use braid_wal::device::Device;
use braid_wal::device::null::NullDevice;
use braid_wal::device::pmem::PmemWrite;
use braid_wal::fs::RealFs;
use braid_wal::proxy::Proxies;
use braid_wal::scheme::{
    self, CommitRequest, LogKind, LogPlace, NoRows, Records, RegionStorage, Replay, ReplayError,
    RowRef, Scheme, SchemeConfig, SchemeSpec, SchemeWorker, Storage, UpdateRecord,
};

struct NoReplay;

impl Replay for NoReplay {
    fn apply(&self, _txn: u64, _kind: LogKind, _payload: &[u8]) -> Result<(), ReplayError> {
        Ok(())
    }
}

/// `spec` opened on `streams` null devices (a region of its own for a scheme that keeps its
/// log in one, in `dir`), for per-update records or not.
pub fn open_on_null(
    spec: &str,
    streams: usize,
    records: Records,
    dir: &std::path::Path,
) -> Arc<dyn Scheme> {
    let spec: SchemeSpec = spec.parse().unwrap();
    let cfg = SchemeConfig {
        max_workers: 4,
        records,
        ..SchemeConfig::default()
    };
    let storage = match spec.log_place() {
        LogPlace::Region => Storage::Region(RegionStorage {
            region: Region::create(&dir.join("log.region"), 16 << 20, PmemConfig::default())
                .unwrap(),
            fs: Arc::new(RealFs),
            backup_dir: dir.join("backup"),
            write: PmemWrite::NonTemporal,
        }),
        _ => Storage::Devices(
            (0..spec.streams_for(streams))
                .map(|_| Arc::new(NullDevice::new()) as Arc<dyn Device>)
                .collect(),
        ),
    };
    scheme::open(&spec, &cfg, storage, &NoReplay, &|_| {})
        .unwrap()
        .0
}

/// Global read-modify-writes per commit of `spec` on `streams` streams.
fn global_per_commit(spec: &str, streams: usize, records: Records) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let s = open_on_null(spec, streams, records, dir.path());
    let p = redo_commits(&*s, 200, records);
    s.close().unwrap();
    assert_eq!(p.commits, 200, "{spec}");
    p.global_per_commit().unwrap()
}

#[test]
fn a_central_log_makes_at_least_one_per_commit() {
    // serial: one tail compare-and-swap per record: three with per-update records.
    assert_eq!(global_per_commit("serial", 1, Records::Update), 3.0);
    assert_eq!(global_per_commit("serial", 1, Records::Txn), 1.0);
}

#[test]
fn nv_logging_makes_one_per_log_object() {
    // NV-Logging's global LSN counter, once per object: one object per transaction, or (per
    // update) one per write and one for the commit. Statistics are per worker and the
    // frontier moves in the waits.
    for spec in ["pertxn", "pertxn:flush=commit"] {
        assert_eq!(global_per_commit(spec, 1, Records::Txn), 1.0, "{spec}");
        assert_eq!(global_per_commit(spec, 1, Records::Update), 3.0, "{spec}");
    }
}

#[test]
fn aether_and_baseline_make_at_least_one_per_commit() {
    // Aether, one worker: every insert is a group of one: the join's compare-and-swap, the
    // insert lock (lock and unlock), the close of the slot and the tail's compare-and-swap.
    assert_eq!(global_per_commit("aether", 1, Records::Update), 15.0);
    assert_eq!(global_per_commit("aether", 1, Records::Txn), 5.0);
    // Baseline, and NV-Disk (Shore-MT's central buffer too): the log's mutex (lock and
    // unlock) and the tail's compare-and-swap per insert.
    for spec in ["baseline", "nvdisk"] {
        assert_eq!(global_per_commit(spec, 1, Records::Update), 9.0, "{spec}");
        assert_eq!(global_per_commit(spec, 1, Records::Txn), 3.0, "{spec}");
    }
}

/// `n` transactions of one worker, each writing two rows: with per-update records two update
/// records and a commit record, else one record at commit, with well-formed redo images
/// (gsn's page partitioning reads the rows a transaction-record commit wrote from its
/// payload). The proxies of those commits.
fn redo_commits(s: &dyn Scheme, n: u64, records: Records) -> Proxies {
    use braid_wal::payload::{RedoBuf, RedoOp};
    let before = s.proxies().expect("the scheme counts proxies");
    let mut w: Box<dyn SchemeWorker> = s.worker(0).unwrap();
    let data = [7u8; 40];
    for txn in 1..=n {
        let rows = [RowRef::new(0, txn % 64), RowRef::new(0, 64 + txn % 64)];
        let mut all = RedoBuf::default();
        let mut updates = 0;
        for r in rows {
            w.on_write(r);
            let op = RedoOp::Insert {
                table: r.table,
                key: r.key,
                data: &data,
            };
            all.push(&op);
            if records == Records::Update {
                let mut one = RedoBuf::default();
                one.push(&op);
                w.log_update(&UpdateRecord {
                    txn,
                    row: r,
                    payload: &one.bytes,
                })
                .unwrap();
                updates += 1;
            }
        }
        let payload = if updates > 0 { &[][..] } else { &all.bytes[..] };
        let req = CommitRequest {
            txn,
            kind: LogKind::Data,
            payload,
            read_only: false,
            epoch: 0,
            writes: &[],
            rows: &NoRows,
            updates,
        };
        w.commit(&req).unwrap().wait().unwrap();
    }
    drop(w);
    s.proxies().unwrap().since(&before)
}

/// Global read-modify-writes of `spec` on `streams` streams, after a few warm-up commits (so
/// a commit daemon that blocked while the scheme sat idle has been woken: that wake-up takes a
/// lock every worker may take, and is counted as global).
fn global_per_commit_warm(spec: &str, streams: usize, records: Records) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let s = open_on_null(spec, streams, records, dir.path());
    redo_commits(&*s, 8, records);
    let p = redo_commits(&*s, 200, records);
    s.close().unwrap();
    assert_eq!(p.commits, 200, "{spec}");
    assert!(
        p.shared_rmw > 0,
        "{spec}: its logs' locks are shared: {p:?}"
    );
    p.global_per_commit().unwrap()
}

#[test]
fn gsn_makes_none_per_commit() {
    // Passive group commit (the default on the null devices, which are durable on fill): each
    // worker stores what it waits for in its own queue word and counts its commits in its own
    // lane; commit records go to the worker's own log under either partitioning.
    for spec in [
        "gsn",
        "gsn:partition=page",
        "gsn:commit=durable",
        "gsn:partition=page,commit=durable",
    ] {
        for records in [Records::Txn, Records::Update] {
            let dir = tempfile::tempdir().unwrap();
            let s = open_on_null(spec, 2, records, dir.path());
            redo_commits(&*s, 8, records);
            let p = redo_commits(&*s, 200, records);
            s.close().unwrap();
            // The only global word a commit may write is the commit daemon's wake-up, when
            // the daemon has caught up and parked (how often depends on timing: never under
            // load); the proxies count those apart.
            assert_eq!(p.global_rmw, 2 * p.wakes, "{spec} {records:?}: {p:?}");
            // What is left is per log: per record, the log's tail compare-and-swap and its
            // insert lock (lock and unlock). One record per transaction (both rows lie in
            // pages of one log), or two update records and a commit record. A word every
            // worker writes, such as a shared commit queue, would add to this count.
            let per_record = 3;
            let records_per_commit = if records == Records::Update { 3 } else { 1 };
            assert_eq!(
                p.shared_rmw - 2 * p.wakes,
                200 * per_record * records_per_commit,
                "{spec} {records:?}: {p:?}"
            );
        }
    }
}

#[test]
fn taurus_makes_none_per_commit() {
    // Each stream's commit queue and anchors are per stream; its statistics are per worker.
    for spec in ["taurus", "taurus:lv_compress=off"] {
        assert_eq!(global_per_commit_warm(spec, 2, Records::Txn), 0.0, "{spec}");
    }
}
