//! Hand-written scenarios: a frozen stream cuts its dependants, threads with one frozen
//! stream, parallel replay of a chain across streams.

use super::*;

/// The scenario of `commit.rs`: stream 2 stops persisting while streams 0 and 1 go on with
/// transactions that depend on its lost records (and on each other): those, everything after
/// them in their streams, and everything depending on those must be cut; everything
/// acknowledged before the freeze must survive.
#[test]
fn a_frozen_stream_cuts_everything_that_depends_on_it() {
    for logging in [LogKind::Data, LogKind::Command] {
        for compress in [false, true] {
            let mut txns = Vec::new();
            // Some history on every stream, then freeze stream 2 and keep going with
            // cross-stream reads and writes.
            for k in 0..30u64 {
                txns.push(Spec {
                    worker: (k % 3) as usize,
                    reads: vec![k % 7],
                    writes: vec![(k * 5) % 11],
                });
            }
            let c = Case {
                streams: 3,
                workers: 3,
                logging,
                occ: false,
                compress,
                threads: 2,
                plan: RecoveryPlan::Parallel,
                slots: compress,
                txns,
                freeze_at: 10,
                frozen: Some(2),
            };
            run_case(&c).unwrap();
        }
    }
}

/// Several threads at once on the fake engine, one stream frozen mid-run, then a power failure.
#[test]
fn threads_with_one_frozen_stream() {
    for (logging, occ) in [(LogKind::Data, false), (LogKind::Command, true)] {
        let streams = 4;
        let regions: Vec<Region> = (0..streams)
            .map(|_| CrashSim::region(4 * RING, pcfg()))
            .collect();
        let cfg = scfg(logging, 3, RecoveryPlan::Auto, true);
        let (scheme, _) = open_taurus(
            &cfg.0,
            &cfg.1,
            devices(&regions),
            &Rec::new(logging),
            &|_| {},
        )
        .unwrap();
        let db = Db::new(16, occ);
        let next = AtomicU64::new(1);
        let acked: Mutex<HashSet<u64>> = Mutex::default();
        let frozen = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for w in 0..4usize {
                let (scheme, db, next, acked, frozen, regions) =
                    (&scheme, &db, &next, &acked, &frozen, &regions);
                s.spawn(move || {
                    let mut worker = scheme.worker(w).unwrap();
                    let mut x = w as u64 * 7 + 1;
                    let mut pending: Vec<(u64, Ticket)> = Vec::new();
                    for i in 0..400u64 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let spec = Spec {
                            worker: w,
                            reads: vec![(x >> 33) % 16],
                            writes: vec![(x >> 45) % 16],
                        };
                        let txn = next.fetch_add(1, Ordering::SeqCst);
                        let (logged, t) = db.run(&mut *worker, txn, &spec, logging, occ);
                        if logged {
                            pending.push((txn, t));
                        }
                        if w == 0 && i == 150 {
                            // Acknowledgements from here on do not count (the device lies).
                            let _a = acked.lock();
                            regions[1].freeze_after(0).unwrap();
                            frozen.store(true, Ordering::SeqCst);
                        }
                        pending.retain(|(t, tk)| match tk.is_durable() {
                            Ok(true) => {
                                let mut a = acked.lock();
                                if !frozen.load(Ordering::SeqCst) {
                                    a.insert(*t);
                                }
                                false
                            }
                            _ => true,
                        });
                    }
                });
            }
        });
        let _ = scheme.close();
        drop(scheme);
        let images: Vec<Region> = regions
            .iter()
            .map(|r| r.crash(CrashMode::DropUnpersisted).unwrap())
            .collect();
        let rec = Rec::new(logging);
        let (s2, rep) = open_taurus(&cfg.0, &cfg.1, devices(&images), &rec, &|_| {}).unwrap();
        let _ = s2.close();
        let acked = acked.into_inner();
        let recovered = check(&db, &rec, &acked, logging).unwrap();
        assert!(
            !acked.is_empty() && recovered.len() as u64 == rep.txns,
            "report: {rep:?}"
        );
    }
}

/// A chain that alternates streams: parallel replay must still run it strictly in order.
#[test]
fn parallel_replay_follows_a_chain_across_streams() {
    for logging in [LogKind::Data, LogKind::Command] {
        let txns: Vec<Spec> = (0..200u64)
            .map(|k| Spec {
                worker: (k % 2) as usize,
                reads: vec![k % 3],
                writes: vec![(k + 1) % 3],
            })
            .collect();
        let c = Case {
            streams: 2,
            workers: 2,
            logging,
            occ: false,
            compress: false,
            threads: 3,
            plan: RecoveryPlan::Parallel,
            slots: logging == LogKind::Data,
            freeze_at: txns.len(),
            txns,
            frozen: None,
        };
        run_case(&c).unwrap();
    }
}
