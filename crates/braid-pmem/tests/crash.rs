//! CrashSim: what survives a simulated power failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_pmem::{CrashMode, CrashSim, Domain, PmemConfig, PmemStats, Region};
use proptest::prelude::*;

fn adr() -> PmemConfig {
    PmemConfig::default()
}

fn eadr() -> PmemConfig {
    PmemConfig::default().domain(Domain::Eadr)
}

fn bytes(r: &Region, off: usize, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    r.read(off, &mut b);
    b
}

fn drop_unpersisted(r: &Region) -> Region {
    r.crash(CrashMode::DropUnpersisted).unwrap()
}

#[test]
fn unpersisted_writes_are_lost_persisted_kept() {
    let r = CrashSim::region(1024, adr());
    assert!(r.is_simulated() && !r.is_volatile());
    r.write(0, &[1; 64]);
    r.persist(0, 64);
    r.write(64, &[2; 64]); // never flushed
    r.store_u64(128, 77); // never flushed
    r.fill(200, 10, 9); // never flushed
    // Reads see the live image.
    assert_eq!(bytes(&r, 64, 64), vec![2; 64]);
    assert_eq!(r.load_u64(128), 77);

    let c = drop_unpersisted(&r);
    assert_eq!(c.len(), 1024);
    assert_eq!(c.config(), r.config());
    assert!(c.is_simulated());
    assert_eq!(bytes(&c, 0, 64), vec![1; 64]);
    assert_eq!(bytes(&c, 64, 64), vec![0; 64]);
    assert_eq!(c.load_u64(128), 0);
    assert_eq!(bytes(&c, 200, 10), vec![0; 10]);
    assert_eq!(
        c.stats(),
        PmemStats::default(),
        "a crashed region starts with fresh counters"
    );
    assert_eq!(c.persist_events(), 0);

    // The crashed region is itself persistent memory: its image is durable, and crashing it
    // again keeps it.
    let cc = drop_unpersisted(&c);
    assert_eq!(bytes(&cc, 0, 64), vec![1; 64]);
    // The original is untouched by crashing it.
    assert_eq!(bytes(&r, 64, 64), vec![2; 64]);
}

#[test]
fn flush_snapshots_the_line_at_flush_time() {
    let r = CrashSim::region(256, adr());
    r.write(0, &[1; 8]);
    r.flush(0, 8);
    r.write(8, &[2; 8]); // same line, after the flush
    r.fence();
    let c = drop_unpersisted(&r);
    assert_eq!(bytes(&c, 0, 16), [vec![1; 8], vec![0; 8]].concat());
}

#[test]
fn flushed_but_not_fenced_is_lost() {
    let r = CrashSim::region(256, adr());
    r.write(0, &[5; 100]);
    r.flush(0, 100);
    let c = drop_unpersisted(&r);
    assert_eq!(bytes(&c, 0, 100), vec![0; 100]);
    // With every unpersisted word kept, the flushed data is there.
    let k = r
        .crash(CrashMode::KeepRandom {
            seed: 1,
            keep_probability: 1.0,
        })
        .unwrap();
    assert_eq!(bytes(&k, 0, 100), vec![5; 100]);
}

#[test]
fn write_nt_then_fence_is_kept_without_a_fence_lost() {
    let r = CrashSim::region(512, adr());
    r.write_nt(3, &[7; 150]);
    assert_eq!(
        drop_unpersisted(&r).load_u64(8),
        0,
        "streaming stores need a fence"
    );
    r.fence();
    r.write_nt(300, &[8; 10]); // not fenced
    let c = drop_unpersisted(&r);
    assert_eq!(
        bytes(&c, 0, 160),
        [vec![0; 3], vec![7; 150], vec![0; 7]].concat()
    );
    assert_eq!(bytes(&c, 300, 10), vec![0; 10]);
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 0,
            fences: 1,
            nt_bytes: 160,
            msyncs: 0
        }
    );
}

#[test]
fn write_nt_persists_only_its_own_words() {
    let r = CrashSim::region(128, adr());
    r.write(0, &[1; 8]); // word 0, plain, never flushed
    r.write_nt(8, &[2; 8]); // word 1, same line
    r.fence();
    let c = drop_unpersisted(&r);
    assert_eq!(bytes(&c, 0, 16), [vec![0; 8], vec![2; 8]].concat());
}

#[test]
fn eadr_keeps_every_store() {
    let r = CrashSim::region(512, eadr());
    r.write(1, &[1; 10]);
    r.write_nt(64, &[2; 64]);
    r.fill(200, 5, 3);
    r.store_u64(256, 99);
    assert_eq!(r.cas_u64(264, 0, 5), Ok(0));
    assert_eq!(r.cas_u64(264, 0, 6), Err(5));
    let c = drop_unpersisted(&r);
    assert_eq!(bytes(&c, 0, 12), [vec![0], vec![1; 10], vec![0]].concat());
    assert_eq!(bytes(&c, 64, 64), vec![2; 64]);
    assert_eq!(bytes(&c, 200, 5), vec![3; 5]);
    assert_eq!(c.load_u64(256), 99);
    assert_eq!(c.load_u64(264), 5);
    // Flush is free under eADR.
    r.persist(0, 512);
    assert_eq!(r.stats().lines_flushed, 0);
}

#[test]
fn adr_atomics_need_persist() {
    let r = CrashSim::region(64, adr());
    r.store_u64(0, 1);
    assert_eq!(r.cas_u64(8, 0, 2), Ok(0));
    assert_eq!(drop_unpersisted(&r).load_u64(0), 0);
    r.persist(0, 16);
    let c = drop_unpersisted(&r);
    assert_eq!((c.load_u64(0), c.load_u64(8)), (1, 2));
}

/// `flush_lines` writes back exactly the lines named (a clean or dirty line between them is
/// left), one persist event per line, durable at the fence; each line is counted.
#[test]
fn flush_lines_persists_the_named_lines_only() {
    let r = CrashSim::region(1024, adr());
    for line in 0..8 {
        r.store_u64(64 * line, line as u64 + 1);
    }
    let e0 = r.persist_events();
    r.flush_lines(&[8, 64 * 3 + 40, 64 * 6]);
    assert_eq!(r.persist_events() - e0, 3);
    assert_eq!(drop_unpersisted(&r).load_u64(0), 0, "not fenced yet");
    r.fence();
    let c = drop_unpersisted(&r);
    let kept: Vec<u64> = (0..8).map(|l| c.load_u64(64 * l)).collect();
    assert_eq!(kept, vec![1, 0, 0, 4, 0, 0, 7, 0]);
    assert_eq!(r.stats().lines_flushed, 3);
    assert_eq!(r.stats().fences, 1);
    // Under eADR every store was durable already; flush_lines neither counts nor adds events.
    let e = CrashSim::region(256, eadr());
    e.store_u64(0, 9);
    let before = e.persist_events();
    e.flush_lines(&[0, 64]);
    assert_eq!(e.persist_events(), before);
    assert_eq!(e.stats().lines_flushed, 0);
    assert_eq!(drop_unpersisted(&e).load_u64(0), 9);
}

/// A simulated region's loads and ADR stores go straight to its live image (the
/// fast path taken whether or not the region is simulated); a crash still drops what was not
/// persisted, and under eADR keeps every store.
#[test]
fn direct_loads_and_stores_on_a_sim() {
    for domain in [Domain::Adr, Domain::Eadr] {
        let cfg = PmemConfig::default().domain(domain);
        let r = CrashSim::region(512, cfg);
        r.write(64, &[3; 24]);
        r.store_u64(128, 11);
        assert_eq!(r.cas_u64(136, 0, 12), Ok(0));
        r.fill(200, 3, 0xAB);
        assert_eq!(r.load_u64(64), u64::from_ne_bytes([3; 8]));
        assert_eq!((r.load_u64(128), r.load_u64(136)), (11, 12));
        assert_eq!(bytes(&r, 200, 4), vec![0xAB, 0xAB, 0xAB, 0]);
        let c = drop_unpersisted(&r);
        let survived = (c.load_u64(64), c.load_u64(128), c.load_u64(136));
        match domain {
            Domain::Adr => assert_eq!(survived, (0, 0, 0)),
            Domain::Eadr => assert_eq!(survived, (u64::from_ne_bytes([3; 8]), 11, 12)),
        }
        r.persist(64, 192);
        let c = drop_unpersisted(&r);
        assert_eq!(c.load_u64(136), 12);
        assert_eq!(bytes(&c, 200, 4), vec![0xAB, 0xAB, 0xAB, 0]);
    }
}

#[test]
fn freeze_after_enumerates_crash_points() {
    // The operation: two lines persisted together, then one line streamed.
    // Events: flush line 0 (1), flush line 1 (2), fence (3), nt line 2 (4), fence (5).
    fn op(r: &Region) {
        r.write(0, &[0xA; 64]);
        r.write(64, &[0xB; 64]);
        r.persist(0, 128);
        r.write_nt(128, &[0xC; 64]);
        r.fence();
    }
    let probe = CrashSim::region(256, adr());
    op(&probe);
    assert_eq!(probe.persist_events(), 5);

    let mut states = Vec::new();
    for n in 0..=probe.persist_events() {
        let r = CrashSim::region(256, adr());
        r.freeze_after(n).unwrap();
        op(&r);
        let c = drop_unpersisted(&r);
        states.push([
            c.load_u64(0) != 0,
            c.load_u64(64) != 0,
            c.load_u64(128) != 0,
        ]);
        assert_eq!(r.persist_events(), 5, "events are counted even when frozen");
    }
    let f = false;
    let t = true;
    assert_eq!(
        states,
        vec![
            [f, f, f],
            [t, f, f],
            [t, t, f],
            [t, t, f],
            [t, t, t],
            [t, t, t]
        ],
        "crash point n keeps exactly the first n events"
    );
}

#[test]
fn freeze_after_counts_from_now_and_under_eadr_counts_stores() {
    let r = CrashSim::region(128, eadr());
    r.store_u64(0, 1); // event 1
    r.freeze_after(1).unwrap();
    r.store_u64(8, 2); // event 2: allowed
    r.store_u64(16, 3); // event 3: frozen
    r.fence(); // event 4
    assert_eq!(r.persist_events(), 4);
    let c = drop_unpersisted(&r);
    assert_eq!((c.load_u64(0), c.load_u64(8), c.load_u64(16)), (1, 2, 0));
    // The live image still has everything.
    assert_eq!(r.load_u64(16), 3);
}

#[test]
fn concurrent_writers_on_a_sim() {
    let r = CrashSim::region(64 * 64, adr());
    std::thread::scope(|s| {
        for t in 0..4usize {
            let r = r.clone();
            s.spawn(move || {
                for i in 0..32usize {
                    // 24-byte records interleaved across threads share cache lines.
                    let off = (i * 4 + t) * 24 + 5;
                    r.write(off, &[(t * 32 + i) as u8; 24]);
                    if i % 3 != 2 {
                        r.persist(off, 24);
                    }
                }
            });
        }
    });
    let c = drop_unpersisted(&r);
    for t in 0..4usize {
        for i in 0..32usize {
            let off = (i * 4 + t) * 24 + 5;
            if i % 3 != 2 {
                assert_eq!(
                    bytes(&c, off, 24),
                    vec![(t * 32 + i) as u8; 24],
                    "t={t} i={i}"
                );
            }
        }
    }
}

/// Random program of stores, flushes and fences on a simulated region.
#[derive(Debug, Clone)]
enum Op {
    Write(usize, Vec<u8>),
    WriteNt(usize, Vec<u8>),
    Store(usize, u64),
    Flush(usize, usize),
    Fence,
}

const SIM: usize = 1024;

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..SIM, prop::collection::vec(any::<u8>(), 1..100)).prop_map(|(o, d)| Op::Write(o, d)),
        (0..SIM, prop::collection::vec(any::<u8>(), 1..100)).prop_map(|(o, d)| Op::WriteNt(o, d)),
        (0..SIM / 8, any::<u64>()).prop_map(|(w, v)| Op::Store(w * 8, v)),
        (0..SIM, 1usize..200).prop_map(|(o, l)| Op::Flush(o, l)),
        Just(Op::Fence),
    ]
}

fn run(r: &Region, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Write(o, d) => r.write((*o).min(SIM - d.len()), d),
            Op::WriteNt(o, d) => r.write_nt((*o).min(SIM - d.len()), d),
            Op::Store(o, v) => r.store_u64(*o, *v),
            Op::Flush(o, l) => r.flush(*o, (*l).min(SIM - o)),
            Op::Fence => r.fence(),
        }
    }
}

fn words(r: &Region) -> Vec<u64> {
    (0..SIM / 8).map(|w| r.load_u64(w * 8)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn keep_random_is_deterministic_and_word_wise(
        ops in prop::collection::vec(op_strategy(), 1..40),
        seed in any::<u64>(),
        p in 0.0f64..=1.0,
    ) {
        let r = CrashSim::region(SIM, adr());
        run(&r, &ops);
        let live = words(&r);
        let durable = words(&drop_unpersisted(&r));
        let mode = CrashMode::KeepRandom { seed, keep_probability: p };
        let a = words(&r.crash(mode).unwrap());
        let b = words(&r.crash(mode).unwrap());
        prop_assert_eq!(&a, &b, "same seed, same image");
        for i in 0..a.len() {
            prop_assert!(a[i] == durable[i] || a[i] == live[i], "word {} is neither old nor new", i);
        }
        prop_assert_eq!(&words(&r.crash(CrashMode::KeepRandom { seed, keep_probability: 0.0 }).unwrap()), &durable);
        prop_assert_eq!(&words(&r.crash(CrashMode::KeepRandom { seed, keep_probability: 1.0 }).unwrap()), &live);
    }

    #[test]
    fn everything_persisted_survives(ops in prop::collection::vec(op_strategy(), 1..40)) {
        let r = CrashSim::region(SIM, adr());
        run(&r, &ops);
        r.persist(0, SIM);
        prop_assert_eq!(words(&drop_unpersisted(&r)), words(&r));
    }
}

#[test]
fn keep_random_varies_with_the_seed() {
    let r = CrashSim::region(4096, adr());
    r.fill(0, 4096, 0xFF);
    let half = CrashMode::KeepRandom {
        seed: 1,
        keep_probability: 0.5,
    };
    let other = CrashMode::KeepRandom {
        seed: 2,
        keep_probability: 0.5,
    };
    let a = words_n(&r.crash(half).unwrap(), 512);
    let b = words_n(&r.crash(other).unwrap(), 512);
    assert_ne!(a, b);
    let kept = a.iter().filter(|&&w| w != 0).count();
    assert!(
        kept > 0 && kept < 512,
        "about half the words survive, got {kept}"
    );
}

fn words_n(r: &Region, n: usize) -> Vec<u64> {
    (0..n).map(|w| r.load_u64(w * 8)).collect()
}

#[test]
fn crash_together_cuts_all_regions_at_one_instant() {
    use braid_pmem::{CrashMode, CrashSim, PmemConfig, Region};
    let a = CrashSim::region(4096, PmemConfig::default());
    let b = CrashSim::region(4096, PmemConfig::default());
    // A record in `a`, made durable, then a dependent record in `b`, made durable.
    a.store_u64(0, 7);
    a.persist(0, 8);
    b.store_u64(0, 8);
    b.persist(0, 8);
    // An unpersisted store in each.
    a.store_u64(64, 9);
    b.store_u64(64, 9);
    let out = Region::crash_together(&[
        (&a, CrashMode::DropUnpersisted),
        (&b, CrashMode::DropUnpersisted),
    ])
    .unwrap();
    assert_eq!((out[0].load_u64(0), out[1].load_u64(0)), (7, 8));
    assert_eq!((out[0].load_u64(64), out[1].load_u64(64)), (0, 0));
    let anon = Region::anonymous(4096);
    assert!(Region::crash_together(&[(&anon, CrashMode::DropUnpersisted)]).is_err());
}
