//! Transactions: commit, rollback on error and on panic, allocation and deferred frees,
//! reopening, per-thread logs. Every configuration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use braid_rewind::{
    CrashMode, CrashSim, LogLayout, LogMode, Mem, PPtr, PmemConfig, Policy, Pool, PoolConfig,
    RawMem, Refusal, RewindError,
};

const SIZE: usize = 1 << 20;

fn setup(cfg: braid_rewind::PoolConfig) -> (braid_rewind::Region, Pool, PPtr<u64>) {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), cfg).unwrap();
    let arr = pool
        .transaction(|tx| -> Result<_, RewindError> {
            let a: PPtr<u64> = tx.alloc(64)?;
            for i in 0..8 {
                tx.init(a.field::<u64>(8 * i), i)?;
            }
            tx.set_root(a)?;
            Ok(a)
        })
        .unwrap();
    (r, pool, arr)
}

fn words(pool: &Pool, a: PPtr<u64>) -> Vec<u64> {
    (0..8).map(|i| pool.read(a.field::<u64>(8 * i))).collect()
}

#[test]
fn commit_rollback_panic_every_config() {
    for cfg in common::all_configs() {
        let (r, pool, a) = setup(cfg);
        assert_eq!(pool.root::<u64>(), a);
        pool.transaction(|tx| -> Result<(), RewindError> {
            tx.write(a, 100)?;
            tx.write(a.field::<u64>(8), 101)?;
            assert_eq!(tx.read(a), 100, "reads see own writes");
            Ok(())
        })
        .unwrap();
        assert_eq!(words(&pool, a)[..3], [100, 101, 2], "{cfg:?}");
        // An error rolls back.
        let e = pool.transaction(|tx| -> Result<(), RewindError> {
            for i in 0..8 {
                tx.write(a.field::<u64>(8 * i), 1000 + i)?;
            }
            let _tmp: PPtr<u64> = tx.alloc(100)?;
            Err(RewindError::user_abort("no"))
        });
        assert!(
            matches!(&e, Err(RewindError::UserAbort { reason }) if reason == "no"),
            "{e:?}"
        );
        assert_eq!(words(&pool, a)[..3], [100, 101, 2], "{cfg:?}");
        // A panic rolls back and keeps unwinding.
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = pool.transaction(|tx| -> Result<(), RewindError> {
                tx.write(a.field::<u64>(16), 55)?;
                panic!("boom");
            });
        }));
        assert!(p.is_err());
        assert_eq!(words(&pool, a)[..3], [100, 101, 2], "{cfg:?}");
        // Allocate and free.
        let obj = pool
            .transaction(|tx| -> Result<PPtr<u64>, RewindError> {
                let o: PPtr<u64> = tx.alloc(24)?;
                tx.init(o, 7)?;
                tx.write(a.field::<u64>(56), o.offset())?;
                Ok(o)
            })
            .unwrap();
        let before = pool.heap_report().unwrap().allocated.len();
        pool.transaction(|tx| -> Result<(), RewindError> {
            tx.free(obj)?;
            assert!(matches!(tx.free(obj), Err(RewindError::DoubleFree(_))));
            tx.write(a.field::<u64>(56), 0)
        })
        .unwrap();
        pool.checkpoint().unwrap();
        assert_eq!(
            pool.heap_report().unwrap().allocated.len(),
            before - 1,
            "{cfg:?}"
        );
        pool.check_allocator().unwrap();
        // Reopen after a clean stop and after a crash.
        let expect = words(&pool, a);
        drop(pool);
        let c = r.crash(CrashMode::DropUnpersisted).unwrap();
        let (pool2, rep) = Pool::open_in(c).unwrap();
        assert_eq!(words(&pool2, a), expect, "{cfg:?} {rep:?}");
        pool2.check_allocator().unwrap();
        assert_eq!(pool2.heap_report().unwrap().allocated.len(), 1, "{cfg:?}");
        assert_eq!(pool2.check_logs().unwrap(), 0);
    }
}

/// An object allocated and freed by the same transaction (its allocation header still
/// buffered under the Batch layout when it is freed: found by the pool mutation tests, where
/// `free` re-read the header from memory and reported a double free), then the heap after
/// commit, a checkpoint and a reopen.
#[test]
fn alloc_and_free_in_one_transaction_every_config() {
    for cfg in common::all_configs() {
        let (r, pool, _) = setup(cfg);
        let before = pool.heap_report().unwrap().allocated.len();
        for t in 0..3u64 {
            pool.transaction(|tx| -> Result<(), RewindError> {
                let o: PPtr<u64> = tx.alloc(24)?;
                tx.init(o, t)?;
                tx.free(o)?;
                assert!(matches!(tx.free(o), Err(RewindError::DoubleFree(_))));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
        }
        pool.checkpoint().unwrap();
        assert_eq!(
            pool.heap_report().unwrap().allocated.len(),
            before,
            "{cfg:?}"
        );
        pool.check_allocator().unwrap();
        drop(pool);
        let (pool, _) = Pool::open_in(r.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
        assert_eq!(
            pool.heap_report().unwrap().allocated.len(),
            before,
            "{cfg:?}"
        );
        pool.check_allocator().unwrap();
    }
}

#[test]
fn per_thread_logs_and_threads() {
    for policy in [Policy::Force, Policy::NoForce] {
        for mut cfg in common::all_configs()
            .into_iter()
            .filter(|c| c.policy == policy)
        {
            cfg.logs = LogMode::PerThread(2);
            cfg.log_capacity = 512;
            let (r, pool, _a) = setup(cfg);
            // Each thread owns one counter object; 4 threads, 20 transactions each.
            let objs: Vec<PPtr<u64>> = (0..4)
                .map(|_| {
                    pool.transaction(|tx| -> Result<_, RewindError> {
                        let o: PPtr<u64> = tx.alloc(8)?;
                        tx.init(o, 0)?;
                        Ok(o)
                    })
                    .unwrap()
                })
                .collect();
            std::thread::scope(|s| {
                for &o in &objs {
                    let pool = pool.clone();
                    s.spawn(move || {
                        for i in 0..20u64 {
                            let res = pool.transaction(|tx| -> Result<(), RewindError> {
                                let v = tx.read(o);
                                tx.write(o, v + 1)?;
                                if i % 5 == 4 {
                                    return Err(RewindError::user_abort("abort"));
                                }
                                Ok(())
                            });
                            assert_eq!(res.is_ok(), i % 5 != 4);
                        }
                    });
                }
            });
            for &o in &objs {
                assert_eq!(pool.read(o), 16, "{cfg:?}");
            }
            let c = r.crash(CrashMode::DropUnpersisted).unwrap();
            let (pool2, _) = Pool::open_in(c).unwrap();
            for &o in &objs {
                assert_eq!(pool2.read(o), 16, "{cfg:?}");
            }
        }
    }
}

#[test]
fn log_full_is_an_error_and_rolls_back() {
    for cfg in common::all_configs() {
        let (_r, pool, a) = setup(cfg);
        let res = pool.transaction(|tx| -> Result<(), RewindError> {
            for i in 0..10_000u64 {
                tx.write(a.field::<u64>(8 * (i % 8)), 10_000 + i)?;
            }
            Ok(())
        });
        assert!(
            matches!(res, Err(RewindError::LogFull { .. })),
            "{cfg:?}: {res:?}"
        );
        assert_eq!(words(&pool, a), (0..8).collect::<Vec<_>>(), "{cfg:?}");
        // And the pool still works.
        pool.transaction(|tx| tx.write(a, 5)).unwrap();
        assert_eq!(pool.read(a), 5);
    }
}

/// A transaction stopped after its END but before clearing (`crash_before_clearing`), its
/// records interleaved with an unfinished one's, then a power failure: recovery keeps the
/// committed words, undoes the unfinished ones and leaves empty logs, in every
/// configuration.
#[test]
fn committed_uncleared_records_are_skipped_by_recovery_every_config() {
    for cfg in common::all_configs() {
        let (r, pool, a) = setup(cfg);
        pool.abandon_transaction(|t| -> Result<(), RewindError> {
            t.write(a, 500)?;
            pool.crash_before_clearing(|o| {
                o.write(a.field::<u64>(8), 601)?;
                o.write(a.field::<u64>(16), 602)
            })?;
            t.write(a.field::<u64>(24), 503)?;
            pool.crash_before_clearing(|o| o.write(a.field::<u64>(32), 604))
        })
        .unwrap();
        let live = pool.check_logs().unwrap();
        if cfg.policy == Policy::Force {
            assert!(live >= 5, "{cfg:?}: the committed records stay: {live}");
        }
        drop(pool);
        let img = r.crash(CrashMode::DropUnpersisted).unwrap();
        let (pool, rep) = Pool::open_in(img).unwrap();
        assert_eq!(rep.undone, 1, "{cfg:?}: {rep:?}");
        assert_eq!(rep.undone_records, 2, "{cfg:?}: {rep:?}");
        assert_eq!(
            words(&pool, a),
            vec![0, 601, 602, 3, 604, 5, 6, 7],
            "{cfg:?}"
        );
        assert_eq!(pool.check_logs().unwrap(), 0, "{cfg:?}");
    }
}

/// A no-force checkpoint writes back the lines its transactions wrote and the header's cut
/// line, and no line between them (lines 0, 10 and 30 of an array: 4 lines, not the 31 of
/// the run from line 0 to line 30); what it wrote back survives a crash that drops every
/// unpersisted line.
#[test]
fn checkpoint_flushes_only_dirty_lines() {
    let cfg = PoolConfig::default()
        .layout(LogLayout::Sealed)
        .policy(Policy::NoForce)
        .log_capacity(1024)
        .bucket_records(64);
    let r = CrashSim::region(SIZE, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), cfg).unwrap();
    let mut m = RawMem::new(&pool);
    let a = m.alloc(64 * 40).unwrap();
    m.write_bytes(a, &[0u8; 64 * 40]).unwrap();
    // The object starts 8 bytes into a line-aligned block: words 0, 80, 81 and 240 lie in
    // its lines 0, 10, 10 and 30.
    assert_eq!(a % 64, 8);
    let arr = PPtr::<u64>::from_offset(a);
    let words = [0u64, 80, 81, 240];
    for (i, w) in words.into_iter().enumerate() {
        pool.transaction(|tx| tx.write(arr.field::<u64>(8 * w), i as u64 + 1))
            .unwrap();
    }
    let s0 = pool.pmem_stats();
    assert_eq!(pool.checkpoint().unwrap(), words.len());
    let d = pool.pmem_stats().since(&s0);
    assert_eq!(d.lines_flushed, 4, "{d:?}");
    drop(pool);
    let (pool, _) = Pool::open_in(r.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
    for (i, w) in words.into_iter().enumerate() {
        assert_eq!(pool.read(arr.field::<u64>(8 * w)), i as u64 + 1);
    }
}

/// A configuration out of range is refused naming the field, its value and what is accepted;
/// an unlogged init outside the transaction's fresh objects is refused with where it was.
#[test]
fn refusals_are_typed() {
    let e = Pool::create_in(
        braid_rewind::Region::anonymous(8 << 20),
        PoolConfig::default().bucket_records(1),
    )
    .err()
    .unwrap();
    assert!(
        matches!(&e, RewindError::Config(c) if c.field == "bucket_records" && c.value == "1"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("PoolConfig::bucket_records is 1; it must be 2..=65536"),
        "{e}"
    );
    let pool = Pool::create_in(
        braid_rewind::Region::anonymous(8 << 20),
        PoolConfig::default(),
    )
    .unwrap();
    let a: PPtr<u64> = pool
        .transaction(|tx| -> Result<_, RewindError> { tx.alloc(8) })
        .unwrap();
    let e = pool
        .transaction(|tx| -> Result<(), RewindError> { tx.init(a, 5) })
        .unwrap_err();
    assert!(
        matches!(
            e,
            RewindError::Invalid {
                refusal: Refusal::InitOutsideObject { at, len: 8 }
            } if at == a.offset()
        ),
        "{e:?}"
    );
}
