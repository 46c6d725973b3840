//! The `aether` and `baseline` central logs driven directly (no engine): a consolidated group
//! counts as ready only once every member has filled its part; several threads inserting at
//! once (groups crossing segment boundaries and ring laps) leave a valid log in which every
//! record is found exactly once and every committed transaction is replayed exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use braid_wal::device::Device;
use braid_wal::device::file::{FileDevice, FileDeviceConfig};
use braid_wal::fs::RealFs;
use braid_wal::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use braid_wal::scan::{ScanMode, Scanner};
use braid_wal::scheme::aether::carray::ConsolidationArray;
use braid_wal::scheme::{
    self, CommitRequest, LogKind, NoRows, Records, Replay, ReplayError, RowRef, SchemeConfig,
    SchemeSpec, Storage, UpdateRecord,
};
use braid_wal::stream::{Stream, StreamConfig};
use parking_lot::Mutex;

fn file_device(dir: &std::path::Path) -> Arc<dyn Device> {
    let mut cfg = FileDeviceConfig::new(dir, 0);
    cfg.segment_size = 16 << 10;
    cfg.buffer_size = 32 << 10;
    cfg.preallocate = false;
    Arc::new(FileDevice::open(Arc::new(RealFs), cfg).unwrap())
}

fn spec(txn: u64, payload: &[u8]) -> (Vec<u8>, usize) {
    let p = [payload];
    let s = RecordSpec {
        kind: Kind::Redo,
        flags: FLAG_COMMIT,
        txn,
        stamp: &Stamp::None,
        payload: &p,
    };
    let len = s.check().unwrap();
    (payload.to_vec(), len)
}

fn encode(txn: u64, payload: &[u8]) -> impl FnOnce(u64, u64, u32, &mut [u8]) + '_ {
    move |lsn, synced, salt, out| {
        let p = [payload];
        RecordSpec {
            kind: Kind::Redo,
            flags: FLAG_COMMIT,
            txn,
            stamp: &Stamp::None,
            payload: &p,
        }
        .encode(lsn, synced, salt, out)
    }
}

/// Three members join one slot; the leader reserves for all of them; the ready point (and so
/// the durable point) stays at the group's start until the last member, whichever it is, has
/// filled its part and finished. The slot then reopens for a new group.
#[test]
fn a_group_is_ready_only_when_every_member_filled() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = file_device(tmp.path());
    let stream = Stream::start(dev.clone(), 0, StreamConfig::default()).unwrap();
    let gw = stream.group_writer().unwrap();
    let ca = ConsolidationArray::new(2, 1 << 20);
    let recs: Vec<_> = (1..=3u64)
        .map(|t| spec(t, &vec![t as u8; 10 * t as usize]))
        .collect();
    let joined: Vec<_> = recs.iter().map(|(_, len)| ca.join(*len as u64)).collect();
    assert!(joined[0].leader && !joined[1].leader && !joined[2].leader);
    assert_eq!(joined[1].offset, recs[0].1 as u64);
    assert_eq!(joined[2].offset, (recs[0].1 + recs[1].1) as u64);
    assert!(joined.iter().all(|j| j.slot == 0));
    let group = ca
        .lead(&joined[0], |bytes, members| {
            assert_eq!(members, 3);
            gw.reserve(bytes, members).map(|(lsn, _)| lsn)
        })
        .unwrap();
    assert!(!group.alone);
    // The slot is closed: a new arrival takes the next one.
    let other = ca.join(64);
    assert_eq!((other.slot, other.leader), (1, true));
    let mut scratch = Vec::new();
    let mut released = 0;
    // Fill and finish in the order 2, 0, 1 (member, leader, member).
    for (n, i) in [2usize, 0, 1].into_iter().enumerate() {
        let j = &joined[i];
        let g = if j.leader {
            group
        } else {
            ca.wait(j, || false).unwrap()
        };
        assert_eq!((g.base, g.end), (group.base, group.end));
        let (payload, len) = &recs[i];
        stream.fill_part(
            g.base + j.offset,
            *len,
            &mut scratch,
            encode(i as u64 + 1, payload),
        );
        let f = ca.finish(j, Some(&g), |g| {
            released += 1;
            gw.release(g.end);
        });
        assert_eq!(f.last, n == 2);
        if n < 2 {
            assert!(stream.flusher_idle_pass(Duration::from_secs(5)));
            assert!(
                !stream.check_durable(group.end).unwrap(),
                "durable before every member filled"
            );
            assert_eq!(stream.durable(), group.base);
        }
    }
    assert_eq!(released, 1);
    stream.wait_durable(group.end).unwrap();
    // Reopened: the next join of slot 0 leads a new group.
    assert!(ca.join(64).leader);
    stream.close().unwrap();
    drop(gw);
    drop(stream);
    let mut s = Scanner::new(&*dev, ScanMode::Strict);
    let mut txns = Vec::new();
    while let Some(r) = s.next_record().unwrap() {
        txns.push((r.header.txn, r.payload.to_vec()));
    }
    let want: Vec<_> = recs
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (i as u64 + 1, p.clone()))
        .collect();
    assert_eq!(txns, want);
}

/// Replays into a map txn -> (kind, payloads), failing on a transaction replayed twice.
#[derive(Default)]
struct Collect {
    seen: Mutex<HashMap<u64, Vec<Vec<u8>>>>,
}

impl Replay for Collect {
    fn apply(&self, txn: u64, kind: LogKind, payload: &[u8]) -> Result<(), ReplayError> {
        assert_eq!(kind, LogKind::Data);
        self.seen
            .lock()
            .entry(txn)
            .or_default()
            .push(payload.to_vec());
        Ok(())
    }
}

fn cfg(records: Records) -> SchemeConfig {
    SchemeConfig {
        max_workers: 4,
        records,
        ..SchemeConfig::default()
    }
}

const THREADS: u64 = 4;
const TXNS: u64 = 300;

/// What transaction `txn` writes: one payload per update record, of varied sizes.
fn writes(txn: u64) -> Vec<Vec<u8>> {
    (0..2)
        .map(|k| vec![(txn + k) as u8; 1 + ((txn * 7 + k * 13) % 200) as usize])
        .collect()
}

/// Four threads insert at once (per-update records: two updates and a commit record per
/// transaction; else one record per transaction) through `name`; after a clean close, a
/// strict scan finds a valid log holding each record once, and recovery replays each
/// transaction once with what it wrote.
fn concurrent_inserts_recover_exactly_once(name: &str, records: Records) {
    let tmp = tempfile::tempdir().unwrap();
    let spec: SchemeSpec = name.parse().unwrap();
    let dev = file_device(tmp.path());
    let (s, _) = scheme::open(
        &spec,
        &cfg(records),
        Storage::Devices(vec![dev]),
        &Collect::default(),
        &|_| {},
    )
    .unwrap();
    std::thread::scope(|sc| {
        for t in 0..THREADS {
            let s = &s;
            sc.spawn(move || {
                let mut w = s.worker(t as usize).unwrap();
                let mut tickets = Vec::new();
                for i in 0..TXNS {
                    let txn = 1 + t * TXNS + i;
                    let ws = writes(txn);
                    let mut redo = Vec::new();
                    let updates = if records == Records::Update {
                        for (k, p) in ws.iter().enumerate() {
                            w.log_update(&UpdateRecord {
                                txn,
                                row: RowRef::new(0, k as u64),
                                payload: p,
                            })
                            .unwrap();
                        }
                        ws.len() as u32
                    } else {
                        redo = ws.concat();
                        0
                    };
                    let req = CommitRequest {
                        txn,
                        kind: LogKind::Data,
                        payload: &redo,
                        read_only: false,
                        epoch: 0,
                        writes: &[],
                        rows: &NoRows,
                        updates,
                    };
                    tickets.push(w.commit(&req).unwrap());
                }
                for tk in tickets {
                    tk.wait().unwrap();
                }
            });
        }
    });
    s.close().unwrap();
    let stream = s.streams()[0].clone();
    let stats = stream.stats();
    let per_txn = if records == Records::Update { 3 } else { 1 };
    assert_eq!(stats.records, THREADS * TXNS * per_txn, "{name}");
    let dev = stream.device().clone();
    drop(stream);
    drop(s);

    let mut scan = Scanner::new(&*dev, ScanMode::Strict);
    let mut found: HashMap<u64, u64> = HashMap::new();
    while let Some(r) = scan.next_record().unwrap() {
        *found.entry(r.header.txn).or_default() += 1;
    }
    assert_eq!(found.len() as u64, THREADS * TXNS, "{name}");
    assert!(found.values().all(|&n| n == per_txn), "{name}");
    drop(scan);
    drop(dev);

    let replay = Collect::default();
    let dev2 = file_device(tmp.path());
    let (s2, report) = scheme::open(
        &spec,
        &cfg(records),
        Storage::Devices(vec![dev2]),
        &replay,
        &|_| {},
    )
    .unwrap();
    assert_eq!(report.txns, THREADS * TXNS, "{name}");
    let seen = replay.seen.lock();
    for txn in 1..=THREADS * TXNS {
        let want = match records {
            Records::Update => writes(txn),
            Records::Txn => vec![writes(txn).concat()],
        };
        assert_eq!(seen.get(&txn), Some(&want), "{name}: txn {txn}");
    }
    s2.close().unwrap();
}

#[test]
fn aether_concurrent_inserts_recover_exactly_once() {
    concurrent_inserts_recover_exactly_once("aether", Records::Update);
    concurrent_inserts_recover_exactly_once("aether", Records::Txn);
    concurrent_inserts_recover_exactly_once("aether:slots=1", Records::Update);
}

#[test]
fn baseline_concurrent_inserts_recover_exactly_once() {
    concurrent_inserts_recover_exactly_once("baseline", Records::Update);
    concurrent_inserts_recover_exactly_once("baseline", Records::Txn);
}

#[test]
fn aether_options_are_checked_and_baseline_holds_locks() {
    let spec: SchemeSpec = "aether:slots=8".parse().unwrap();
    assert_eq!(spec.options(), vec![("slots", "8".to_string())]);
    assert!(spec.early_lock_release());
    // Each refusal is a typed kind naming the option, and the parse error is kept as source.
    let e = "aether:slots=0".parse::<SchemeSpec>().unwrap_err();
    assert!(
        matches!(
            e,
            braid_wal::WalError::BadOption(braid_wal::BadOption::Range {
                key: "slots",
                value: 0,
                min: 1,
                ..
            })
        ),
        "{e}"
    );
    let e = "aether:slotz=2".parse::<SchemeSpec>().unwrap_err();
    assert!(
        matches!(&e, braid_wal::WalError::BadOption(braid_wal::BadOption::Unknown { key, known, .. })
            if key == "slotz" && known.contains(&"slots")),
        "{e}"
    );
    let e = "aether:slots=many".parse::<SchemeSpec>().unwrap_err();
    let kind = std::error::Error::source(&e).expect("the kind is the source");
    let parse = kind.source().expect("the value's parse error is kept");
    let expected = "many".parse::<usize>().unwrap_err();
    assert_eq!(parse.to_string(), expected.to_string(), "{e}");
    assert!(
        "aether:slots"
            .parse::<SchemeSpec>()
            .is_err_and(|e| matches!(
                e,
                braid_wal::WalError::BadOption(braid_wal::BadOption::NotKeyValue { .. })
            ))
    );
    let b: SchemeSpec = "baseline".parse().unwrap();
    assert!(!b.early_lock_release());
    assert!(b.update_records_refusal().is_none());
    assert!(spec.follower(&SchemeConfig::default(), 1).is_ok());
}
