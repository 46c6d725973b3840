//! The scheme on persistent-memory rings: straggler signals under passive group commit (a
//! stalled commit, and a long transaction with update records),
//! command logging refused, and a failed msync stopping acknowledgements.

use super::*;

fn pmem_devices(n: usize) -> Vec<Arc<dyn Device>> {
    (0..n)
        .map(|i| {
            let region = Region::anonymous((1 << 20) + braid_pmem::HEADER_SIZE);
            Arc::new(PmemDevice::open(region, PmemDeviceConfig::new(i as u32)).unwrap())
                as Arc<dyn Device>
        })
        .collect()
}

/// Passive group commit: a worker stalls after inserting its records, dirty bit set; another
/// worker's commit still completes, because the daemon signals the straggler and its handler
/// publishes `dgsn`.
#[test]
fn straggler_is_signalled_and_commits_complete() {
    let (stall_tx, stall_rx) = std::sync::mpsc::channel::<()>();
    let stall_rx = Arc::new(Mutex::new(stall_rx));
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    let hook = {
        let stall_rx = Arc::clone(&stall_rx);
        Hook(Arc::new(move || {
            if std::thread::current().name() == Some("straggler") {
                entered_tx.lock().send(()).unwrap();
                stall_rx.lock().recv().unwrap();
            }
        }))
    };
    let mut c = cfg(Partition::Transaction, CommitProtocol::Passive);
    c.1.after_insert = Some(hook);
    c.1.straggler_after = Duration::from_micros(100);
    let state = State::default();
    let (s, _) = gsn::open_gsn(&c.0, &c.1, pmem_devices(2), &state, &|_| {}).unwrap();
    assert_eq!(s.stats().signals, 0, "a fresh instance counts from zero");
    let mut ws = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    std::thread::scope(|sc| {
        let h = std::thread::Builder::new()
            .name("straggler".into())
            .spawn_scoped(sc, || txn(&mut *ws, 1, &[], &[10], 1))
            .unwrap();
        entered_rx.recv().unwrap();
        // The straggler is stalled inside its commit, dirty. This commit depends on nothing
        // it wrote, yet min_dgsn is held back by it until the signal.
        let t = txn(&mut *w1, 2, &[], &[11], 2);
        t.wait().unwrap();
        assert!(
            s.stats().signals > 0,
            "the commit completed without a signal"
        );
        stall_tx.send(()).unwrap();
        h.join().unwrap().wait().unwrap();
    });
    drop((ws, w1));
    let st = s.stats();
    assert_eq!(st.commits, 2, "{st:?}");
    let named: HashMap<&str, u64> = s.counters().into_iter().collect();
    assert_eq!(named["signals"], st.signals);
    assert_eq!(named["commits"], 2);
    assert!(st.signals_per_10k() > 0.0);
    s.close().unwrap();
    // Another instance in the same process starts from zero.
    let (s2, _) = gsn::open_gsn(&c.0, &c.1, pmem_devices(2), &state, &|_| {}).unwrap();
    assert_eq!(s2.stats(), gsn::GsnStats::default());
    s2.close().unwrap();
}

#[test]
fn command_logging_is_refused_with_a_reason() {
    let mut c = cfg(Partition::Transaction, CommitProtocol::Passive);
    c.0.logging = LogKind::Command;
    let state = State::default();
    let err = gsn::open_gsn(&c.0, &c.1, pmem_devices(1), &state, &|_| {})
        .err()
        .unwrap();
    assert!(err.to_string().contains("write-after-read"), "{err}");
    assert!(
        braid_wal::scheme::SchemeSpec::named("gsn")
            .unwrap()
            .command_logging_refusal()
            .is_some()
    );
}

/// On pmem a gsn record is made durable by the committing thread's own flush, not by a
/// stream watermark: once an msync of a log region has failed, no commit is acknowledged any
/// more (durable-cache and passive modes alike), while the ones acknowledged before stand.
#[test]
fn a_failed_msync_stops_acknowledgements_on_pmem() {
    use braid_pmem::{HEADER_SIZE, Media, PmemConfig};
    for commit in [CommitProtocol::DurableCache, CommitProtocol::Passive] {
        let dir = tempfile::tempdir().unwrap();
        let cfg_r = PmemConfig::default().media(Media::Msync);
        let regions: Vec<Region> = (0..2)
            .map(|i| {
                let path = dir.path().join(format!("log-{i}.region"));
                Region::create(&path, (1 << 20) + HEADER_SIZE, cfg_r).unwrap()
            })
            .collect();
        let devices: Vec<Arc<dyn Device>> = regions
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Arc::new(PmemDevice::open(r.clone(), PmemDeviceConfig::new(i as u32)).unwrap())
                    as Arc<dyn Device>
            })
            .collect();
        let c = cfg(Partition::Transaction, commit);
        let state = State::default();
        let (s, _) = gsn::open_gsn(&c.0, &c.1, devices, &state, &|_| {}).unwrap();
        let mut w = s.worker(0).unwrap();
        let commit_one = |w: &mut dyn SchemeWorker, id: u64| -> Result<(), WalError> {
            w.on_write(RowRef::new(0, id));
            let mut buf = RedoBuf::default();
            buf.push(&RedoOp::Insert {
                table: 0,
                key: id,
                data: &[1; 4],
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
            })?
            .wait()
        };
        commit_one(&mut *w, 1).unwrap();
        regions[0].inject_msync_failure(5); // EIO on the next msync of log 0
        let mut failed = false;
        for id in 2..6 {
            if let Err(e) = commit_one(&mut *w, id) {
                assert!(
                    e.to_string().to_lowercase().contains("msync"),
                    "{commit:?}: {e}"
                );
                failed = true;
            } else {
                assert!(
                    !failed,
                    "{commit:?}: commit {id} acknowledged after a failed msync"
                );
            }
        }
        assert!(failed, "{commit:?}: the failed msync went unnoticed");
        drop(w);
        let _ = s.close();
    }
}

/// Per-update records make a long transaction a real straggler (Section 4.1): a worker that
/// logged an update and then runs on (here: waits, outside any insert) stays dirty, holding
/// `min_dgsn` below another worker's unrelated commit. Returns whether that commit was
/// acknowledged while the long transaction still ran, and the instance's counters once both
/// committed. `mute` turns the straggler signal's handler off for the instance's workers.
fn long_transaction_straggler(mute: bool, patience: Duration) -> (bool, gsn::GsnStats) {
    let mut c = cfg(Partition::Transaction, CommitProtocol::Passive);
    c.0.records = braid_wal::scheme::Records::Update;
    c.1.straggler_after = Duration::from_micros(100);
    c.1.mute_signal_handler = mute;
    let state = State::default();
    let (s, _) = gsn::open_gsn(&c.0, &c.1, pmem_devices(2), &state, &|_| {}).unwrap();
    let mut long = s.worker(0).unwrap();
    let mut w1 = s.worker(1).unwrap();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let released = std::thread::scope(|sc| {
        let h = sc.spawn(move || {
            log_update_of(&mut *long, 1, 10, 1);
            entered_tx.send(()).unwrap();
            // The transaction runs on, dirty (a signal interrupts this wait).
            go_rx.recv().unwrap();
            commit_updates(&mut *long, 1, 1).wait().unwrap();
            long
        });
        entered_rx.recv().unwrap();
        let t = txn(&mut *w1, 2, &[], &[11], 2);
        let start = std::time::Instant::now();
        let mut released = false;
        while start.elapsed() < patience {
            if t.is_durable().unwrap() {
                released = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        go_tx.send(()).unwrap();
        let long = h.join().unwrap();
        t.wait().unwrap();
        drop(long);
        released
    });
    drop(w1);
    let st = s.stats();
    assert_eq!(st.commits, 2, "{st:?}");
    let named: HashMap<&str, u64> = s.counters().into_iter().collect();
    assert_eq!(named["signals_helped"], st.signals_helped);
    s.close().unwrap();
    (released, st)
}

#[test]
fn a_long_transactions_signal_releases_the_commit_queue() {
    let (released, st) = long_transaction_straggler(false, Duration::from_secs(10));
    assert!(
        released,
        "the queue stayed stuck behind the long transaction: {st:?}"
    );
    assert!(st.signals >= 1, "{st:?}");
    assert!(
        st.signals_helped >= 1,
        "no signal counted as helping: {st:?}"
    );
    assert!(st.signals_helped <= st.signals, "{st:?}");
    // The same with the handler muted: signals go out, nothing publishes on the straggler's
    // behalf, and the commit waits for the long transaction to end.
    let (released, st) = long_transaction_straggler(true, Duration::from_millis(300));
    assert!(
        !released,
        "acknowledged while a dirty straggler held min_dgsn back: {st:?}"
    );
    assert!(st.signals >= 1, "{st:?}");
    assert_eq!(st.signals_helped, 0, "{st:?}");
}
