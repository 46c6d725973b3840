//! Crashes under load: during truncation, with concurrent writers, with random eviction of
//! unpersisted words, and the index staying bounded under sustained truncation.

use super::*;

/// A single writer commits many transactions through repeated truncations; crashes at a
/// stride of persist points (region frozen, then both region and backup files crash) recover a
/// prefix of the commit order containing every acknowledged transaction.
#[test]
fn crashes_during_truncation_recover_a_prefix() {
    // 64 KiB region, 256-byte slots: ~225 entries; truncate every 40.
    let o = opts(FlushPolicy::Insert, 256, 40);
    let n_txn = 600u64;
    let total = {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let (log, _) = open(&region, &FaultFs::new(), &o, ScanMode::Strict).unwrap();
        let before = region.persist_events();
        for t in 1..=n_txn {
            commit(&log, t, 20 + (t as usize * 13) % 300);
        }
        // The backup daemon truncates in batches whose size depends on how it is scheduled:
        // 790 objects through ~225 entries take at least a few truncations, not a fixed number.
        assert!(
            log.stats().truncations >= 2,
            "the run must truncate more than once: {:?}",
            log.stats()
        );
        region.persist_events() - before
    };
    let step = (total / 25).max(1);
    let mut k = 0;
    while k <= total {
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let base = region.persist_events();
        region.freeze_after(k).unwrap();
        let mut acked = 0;
        for t in 1..=n_txn {
            commit(&log, t, 20 + (t as usize * 13) % 300);
            if region.persist_events() - base <= k {
                acked = t;
            }
        }
        let crashed = region.crash(CrashMode::DropUnpersisted).unwrap();
        let fs2 = fs.crash(CrashOpts::drop_unsynced());
        drop(log);
        let (_l, rec) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        let order = rec.order();
        let expect: Vec<u64> = (1..=order.len() as u64).collect();
        assert_eq!(
            order, expect,
            "k={k}: recovery is not a prefix in commit order"
        );
        assert!(
            order.len() as u64 >= acked,
            "k={k}: acknowledged up to {acked}, recovered {}",
            order.len()
        );
        for (t, p) in rec.map() {
            assert_eq!(
                p,
                payload(t, 20 + (t as usize * 13) % 300),
                "k={k}: txn {t} damaged"
            );
        }
        k += step;
    }
}

/// Several writers; the image is cut at a persist point while they run. Recovery yields
/// exactly the transactions whose LSNs lie below some point (a prefix in LSN order), and every
/// acknowledged one.
#[test]
fn concurrent_writers_recover_an_lsn_prefix() {
    for (seed, flush, place) in [
        (0u64, FlushPolicy::Insert, ObjectPlace::Memory),
        (1, FlushPolicy::Commit, ObjectPlace::Memory),
        (2, FlushPolicy::Insert, ObjectPlace::Memory),
        (3, FlushPolicy::Commit, ObjectPlace::Memory),
        (4, FlushPolicy::Insert, ObjectPlace::File),
    ] {
        let o = PerTxnConfig {
            place,
            ..opts(flush, 256, 30)
        };
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let log = Arc::new(log);
        let base = region.persist_events();
        let freeze_at = 300 + seed * 211;
        region.freeze_after(freeze_at).unwrap();
        let handles: Vec<_> = (0..3u64)
            .map(|th| {
                let log = Arc::clone(&log);
                let region = region.clone();
                std::thread::spawn(move || {
                    let mut w = log.writer();
                    let mut ends = Vec::new();
                    let mut acked = Vec::new();
                    for i in 0..150u64 {
                        let txn = th * 10_000 + i + 1;
                        let end = w
                            .insert(
                                txn,
                                Kind::Command,
                                &payload(txn, 30 + (i as usize % 5) * 50),
                                true,
                            )
                            .unwrap();
                        ends.push((end, txn));
                        if i % 3 == 2 {
                            log.ticket(end).wait().unwrap();
                            if region.persist_events() - base <= freeze_at {
                                acked.extend(ends.iter().map(|&(_, t)| t));
                            }
                        }
                    }
                    (ends, acked)
                })
            })
            .collect();
        let mut by_end = BTreeMap::new();
        let mut acked = HashSet::new();
        for h in handles {
            let (ends, a) = h.join().unwrap();
            by_end.extend(ends);
            acked.extend(a);
        }
        let crashed = region.crash(CrashMode::DropUnpersisted).unwrap();
        let fs2 = fs.crash(CrashOpts::drop_unsynced());
        drop(log);
        let (_l, rec) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        let order = rec.order();
        // Replay order is LSN order, and the recovered set is a prefix of it.
        let lsn_order: Vec<u64> = by_end.values().copied().collect();
        assert_eq!(
            order,
            lsn_order[..order.len()],
            "seed {seed}: not an LSN prefix"
        );
        let got: HashSet<u64> = order.iter().copied().collect();
        for t in &acked {
            assert!(got.contains(t), "seed {seed}: acknowledged txn {t} lost");
        }
        assert!(
            rec.applied
                .lock()
                .iter()
                .all(|(_, k, _)| *k == LogKind::Command)
        );
    }
}

/// KeepRandom on an image taken at an instant (no frozen region, so no store made after the
/// cut can survive): unpersisted words may survive, yet recovery still yields a prefix with
/// every acknowledged transaction, and no error.
#[test]
fn random_eviction_of_unpersisted_words() {
    for seed in 0..12u64 {
        let flush = if seed % 2 == 0 {
            FlushPolicy::Insert
        } else {
            FlushPolicy::Commit
        };
        let o = opts(flush, 256, 50);
        let region = CrashSim::region(64 << 10, pcfg(Domain::Adr));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let mut w = log.writer();
        let mut acked = 0;
        let n = 100 + seed * 17;
        for t in 1..=n {
            let end = w.insert(t, Kind::Redo, &payload(t, 100), true).unwrap();
            if t % 7 == 0 || t + 5 < n {
                log.ticket(end).wait().unwrap();
                acked = t;
            }
        }
        // Cut the power now, while the log runs: the image is the durable one plus a random
        // subset of the words stored but not yet persisted at this instant.
        drop(w);
        let crashed = region
            .crash(CrashMode::KeepRandom {
                seed,
                keep_probability: 0.5,
            })
            .unwrap();
        let fs2 = fs.crash(CrashOpts::keep_subset(seed));
        drop(log);
        let (_l, rec) = open(&crashed, &fs2, &o, ScanMode::Strict).unwrap();
        let order = rec.order();
        let expect: Vec<u64> = (1..=order.len() as u64).collect();
        assert_eq!(order, expect, "seed {seed}");
        assert!(
            order.len() as u64 >= acked,
            "seed {seed}: acked {acked}, recovered {}",
            order.len()
        );
    }
}

/// Sustained load from four writers through a small index: truncation keeps the index bounded
/// (writers wait for space instead of overwriting), every transaction survives in backup +
/// index, and replay is in LSN order.
#[test]
fn truncation_under_sustained_load_keeps_the_index_bounded() {
    for flush in [FlushPolicy::Insert, FlushPolicy::Commit] {
        let o = opts(flush, 128, 16);
        let region = CrashSim::region(16 << 10, pcfg(Domain::Adr));
        let fs = FaultFs::new();
        let (log, _) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let entries = log.layout().entries;
        assert!(entries < 100, "small index expected, got {entries}");
        let log = Arc::new(log);
        let max_span = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let handles: Vec<_> = (0..4u64)
            .map(|th| {
                let log = Arc::clone(&log);
                let max_span = Arc::clone(&max_span);
                std::thread::spawn(move || {
                    let mut w = log.writer();
                    let mut ends = Vec::new();
                    for i in 0..500u64 {
                        let txn = th * 100_000 + i + 1;
                        let end = w.insert(txn, Kind::Redo, &payload(txn, 40), true).unwrap();
                        // The head may already have passed `end` (another thread's truncation).
                        let span = end.saturating_sub(log.head());
                        max_span.fetch_max(span, std::sync::atomic::Ordering::Relaxed);
                        if i % 10 == 9 {
                            log.ticket(end).wait().unwrap();
                        }
                        ends.push((end, txn));
                    }
                    ends
                })
            })
            .collect();
        let mut by_end = BTreeMap::new();
        for h in handles {
            by_end.extend(h.join().unwrap());
        }
        let stats = log.stats();
        assert!(stats.truncations >= 10, "{flush}: {stats:?}");
        assert!(
            max_span.load(std::sync::atomic::Ordering::Relaxed) <= entries,
            "{flush}: an object was written more than {entries} entries past the head"
        );
        log.close().unwrap();
        assert!(log.frontier() - log.head() <= entries);
        drop(log);
        let (_l, rec) = open(&region, &fs, &o, ScanMode::Strict).unwrap();
        let lsn_order: Vec<u64> = by_end.values().copied().collect();
        assert_eq!(
            rec.order(),
            lsn_order,
            "{flush}: all 2000 transactions in LSN order"
        );
    }
}
