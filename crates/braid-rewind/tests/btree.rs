//! The B+-tree and the list: model checks (against BTreeMap) through REWIND transactions and
//! through the non-recoverable twin, rollback, and power failures at every persist event of
//! transactions that split nodes, with the tree's structural invariants and the heap checked
//! after every recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use braid_rewind::btree::{BTree, LeafOrder};
use braid_rewind::list::PList;
use braid_rewind::{
    CrashMode, CrashSim, Damage, Layers, LogLayout, Mem, NotAPoolReason, PPtr, PmemConfig, Pool,
    PoolConfig, RawMem, Refusal, RewindError,
};
use rand::{Rng, SeedableRng, rngs::SmallRng};

const NODE: usize = 256;
const VS: usize = 16;

fn val(k: u64, salt: u64) -> [u8; VS] {
    let mut v = [0u8; VS];
    v[..8].copy_from_slice(&k.to_le_bytes());
    v[8..].copy_from_slice(&salt.to_le_bytes());
    v
}

fn new_tree(pool: &Pool) -> BTree {
    new_tree_ordered(pool, LeafOrder::Fingerprinted)
}

fn new_tree_ordered(pool: &Pool, order: LeafOrder) -> BTree {
    pool.transaction(|tx| -> Result<BTree, RewindError> {
        let t = BTree::create_ordered(tx, NODE, VS, order)?;
        tx.set_root(PPtr::<u8>::from_offset(t.header()))?;
        Ok(t)
    })
    .unwrap()
}

fn check_model(pool: &Pool, t: &BTree, model: &BTreeMap<u64, [u8; VS]>) {
    let m = RawMem::new(pool);
    t.check(&m).unwrap();
    assert_eq!(t.keys(&m), model.keys().copied().collect::<Vec<_>>());
    let mut out = [0u8; VS];
    for (k, v) in model {
        assert!(t.get(&m, *k, &mut out));
        assert_eq!(&out, v);
    }
}

/// Heap check: allocated blocks are exactly the tree's nodes and header.
fn check_heap(pool: &Pool, t: &BTree) {
    let m = RawMem::new(pool);
    let mut want = t.nodes(&m);
    want.push(t.header());
    want.sort_unstable();
    let got = common::allocated(pool);
    assert_eq!(got, want, "allocated blocks are not the tree's nodes");
    pool.check_allocator().unwrap();
}

#[test]
fn random_ops_match_a_model() {
    let mut cfgs: Vec<(Option<PoolConfig>, LeafOrder)> = vec![(None, LeafOrder::Fingerprinted)];
    cfgs.extend(common::all_configs().into_iter().map(|mut c| {
        c.log_capacity = 4096;
        c.bucket_records = 64;
        (Some(c), LeafOrder::Fingerprinted)
    }));
    // Sorted leaves: the twin, and one configuration of each layout (force and no-force
    // alternating), whose inserts and deletes shift slots.
    cfgs.push((None, LeafOrder::Sorted));
    for (i, layout) in [
        LogLayout::Simple,
        LogLayout::Optimized,
        LogLayout::Batch,
        LogLayout::Sealed,
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = common::all_configs()[2 * i + i % 2];
        assert_eq!(c.layout, layout);
        c.log_capacity = 4096;
        c.bucket_records = 64;
        cfgs.push((Some(c), LeafOrder::Sorted));
    }
    for (cfg, order) in cfgs {
        let r = CrashSim::region(4 << 20, PmemConfig::default());
        let pool = Pool::create_in(r.clone(), cfg.unwrap_or_default()).unwrap();
        let t = new_tree_ordered(&pool, order);
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(7);
        for round in 0..60u64 {
            let ops: Vec<(u8, u64)> = (0..10)
                .map(|_| (rng.gen_range(0..3), rng.gen_range(0..300)))
                .collect();
            let abort = round % 7 == 3;
            let apply =
                |m: &mut dyn FnMut(u8, u64) -> Result<(), RewindError>| -> Result<(), RewindError> {
                    for &(op, k) in &ops {
                        m(op, k)?;
                    }
                    Ok(())
                };
            if cfg.is_none() {
                let mut raw = RawMem::new(&pool);
                apply(&mut |op, k| {
                    match op {
                        0 | 1 => drop(t.insert(&mut raw, k, &val(k, round))?),
                        _ => drop(t.remove(&mut raw, k)?),
                    }
                    Ok(())
                })
                .unwrap();
            } else {
                let res = pool.transaction(|tx| -> Result<(), RewindError> {
                    apply(&mut |op, k| {
                        match op {
                            0 | 1 => drop(t.insert(tx, k, &val(k, round))?),
                            _ => drop(t.remove(tx, k)?),
                        }
                        Ok(())
                    })?;
                    if abort {
                        return Err(RewindError::user_abort("abort"));
                    }
                    Ok(())
                });
                assert_eq!(res.is_ok(), !abort);
            }
            if cfg.is_none() || !abort {
                for &(op, k) in &ops {
                    match op {
                        0 | 1 => drop(model.insert(k, val(k, round))),
                        _ => drop(model.remove(&k)),
                    }
                }
            }
            check_model(&pool, &t, &model);
        }
        let shape = t.check(&RawMem::new(&pool)).unwrap();
        assert!(
            shape.height >= 3,
            "{cfg:?}: tree too shallow to test splits: {shape:?}"
        );
        if cfg.is_some() {
            pool.checkpoint().unwrap();
            check_heap(&pool, &t);
            let (p2, _) = Pool::open_in(r.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
            check_model(&p2, &t, &model);
            check_heap(&p2, &t);
        }
    }
}

/// Power failure at every persist event of a transaction that inserts enough keys to split
/// leaves and an inner node, for each layout and policy (one layer) and Optimized two-layer.
#[test]
fn btree_crash_points() {
    let cfgs: Vec<PoolConfig> = common::all_configs()
        .into_iter()
        .filter(|c| c.layers == Layers::One || c.layout == LogLayout::Optimized)
        .map(|mut c| {
            c.log_capacity = 1024;
            c.bucket_records = 32;
            c
        })
        .collect();
    for cfg in cfgs {
        let r = CrashSim::region(1 << 20, PmemConfig::default());
        let pool = Pool::create_in(r.clone(), cfg).unwrap();
        let t = new_tree(&pool);
        // Fill to just below a split of the root's children.
        let (lcap, _) = t.capacities();
        let n0 = (lcap * 5) as u64;
        pool.transaction(|tx| -> Result<(), RewindError> {
            for k in 0..n0 {
                t.insert(tx, k * 10, &val(k * 10, 0))?;
            }
            Ok(())
        })
        .unwrap();
        drop(pool);
        let base = r.crash(CrashMode::DropUnpersisted).unwrap();
        let before: Vec<u64> = (0..n0).map(|k| k * 10).collect();
        let new_keys: Vec<u64> = (0..lcap as u64 * 2).map(|k| k * 10 + 5).collect();
        let mut after = before.clone();
        after.extend(&new_keys);
        after.sort_unstable();
        let run = |p: &Pool| {
            p.transaction(|tx| -> Result<(), RewindError> {
                for &k in &new_keys {
                    t.insert(tx, k, &val(k, 1))?;
                }
                t.remove(tx, 0)?;
                t.insert(tx, 0, &val(0, 9))?;
                Ok(())
            })
            .unwrap();
        };
        let total = {
            let (p, _) = Pool::open_in(base.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
            let e = p.region().persist_events();
            run(&p);
            p.region().persist_events() - e
        };
        // Every event for small logs; a stride keeps the default run short.
        let stride = if std::env::var_os("REWIND_CRASH_FULL").is_some() {
            1
        } else {
            3
        };
        for k in (0..=total).step_by(stride).chain(std::iter::once(total)) {
            let c = base.crash(CrashMode::DropUnpersisted).unwrap();
            let (p, _) = Pool::open_in(c.clone()).unwrap();
            c.freeze_after(k).unwrap();
            run(&p);
            let (p2, _) = Pool::open_in(c.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
            let m = RawMem::new(&p2);
            t.check(&m).unwrap_or_else(|e| panic!("{cfg:?} k={k}: {e}"));
            let keys = t.keys(&m);
            assert!(
                keys == before || keys == after,
                "{cfg:?} k={k}: partial transaction"
            );
            if k == total {
                assert_eq!(keys, after, "{cfg:?}: committed transaction lost");
            }
            let mut out = [0u8; VS];
            assert!(t.get(&m, 0, &mut out));
            assert_eq!(out, val(0, if keys == after { 9 } else { 0 }));
            check_heap(&p2, &t);
        }
    }
}

#[test]
fn list_remove_is_atomic() {
    for cfg in common::all_configs() {
        let r = CrashSim::region(512 * 1024, PmemConfig::default());
        let pool = Pool::create_in(r.clone(), cfg).unwrap();
        let (l, nodes) = pool
            .transaction(|tx| -> Result<_, RewindError> {
                let l = PList::create(tx)?;
                tx.set_root(PPtr::<u8>::from_offset(l.header()))?;
                let mut ns = vec![];
                for v in 0..5 {
                    ns.push(l.push_back(tx, v)?);
                }
                Ok((l, ns))
            })
            .unwrap();
        drop(pool);
        let base = r.crash(CrashMode::DropUnpersisted).unwrap();
        let values = |p: &Pool| -> Vec<u64> {
            let m = RawMem::new(p);
            l.check(&m).unwrap();
            l.items(&m).iter().map(|x| x.1).collect()
        };
        let total = {
            let (p, _) = Pool::open_in(base.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
            let e = p.region().persist_events();
            p.transaction(|tx| l.remove(tx, nodes[4])).unwrap();
            p.region().persist_events() - e
        };
        for k in 0..=total {
            let c = base.crash(CrashMode::DropUnpersisted).unwrap();
            let (p, _) = Pool::open_in(c.clone()).unwrap();
            c.freeze_after(k).unwrap();
            p.transaction(|tx| -> Result<(), RewindError> {
                l.remove(tx, nodes[4])?;
                l.remove(tx, nodes[0])?;
                l.remove(tx, nodes[2])
            })
            .unwrap();
            let (p2, _) = Pool::open_in(c.crash(CrashMode::DropUnpersisted).unwrap()).unwrap();
            let v = values(&p2);
            assert!(v == [0, 1, 2, 3, 4] || v == [1, 3], "{cfg:?} k={k}: {v:?}");
            let alloc = p2.heap_report().unwrap().allocated.len();
            assert_eq!(alloc, 1 + v.len(), "{cfg:?} k={k}: leak or double free");
            p2.check_allocator().unwrap();
        }
        let _ = RawMem::new(&Pool::open_in(base).unwrap().0).read_u64(0);
    }
}

/// A tree whose nodes link in a cycle (damage): a search stops after more inner nodes than
/// any tree has, so lookups miss and writes fail with `TreeDepth` instead of looping.
#[test]
fn a_cycle_is_damage_not_a_hang() {
    let r = CrashSim::region(4 << 20, PmemConfig::default());
    let pool = Pool::create_in(r, PoolConfig::default()).unwrap();
    let t = new_tree(&pool);
    let mut m = RawMem::new(&pool);
    for k in 1..=500u64 {
        t.insert(&mut m, 100 * k, &val(k, 0)).unwrap();
    }
    // The root is inner now; its first child (keys below its first key) becomes the root.
    let root = m.read_u64(t.header());
    assert!(t.check(&m).unwrap().height > 1);
    let (_, icap) = t.capacities();
    m.write_u64(root + 16 + 8 * icap as u64, root).unwrap();
    let deep = |e: RewindError| {
        matches!(
            e,
            RewindError::Corrupt {
                damage: Damage::TreeDepth { .. }
            }
        )
    };
    let mut out = [0u8; VS];
    assert!(!t.get(&m, 5, &mut out));
    assert!(!t.contains(&m, 5));
    assert!(deep(t.insert(&mut m, 5, &val(5, 1)).unwrap_err()));
    assert!(deep(t.update(&mut m, 5, &val(5, 1)).unwrap_err()));
    assert!(deep(t.remove(&mut m, 5).unwrap_err()));
    // Keys on other paths are unaffected.
    assert!(t.get(&m, 50_000, &mut out));
}

/// A tree header of another layout and a pool of an older format are refused with errors
/// that say so.
#[test]
fn other_layouts_are_refused() {
    let r = CrashSim::region(4 << 20, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), PoolConfig::default()).unwrap();
    let t = new_tree(&pool);
    assert_eq!(BTree::open(&RawMem::new(&pool), t.header()).unwrap(), t);
    // The word after the node size is the layout tag (older trees kept their key count there).
    RawMem::new(&pool).write_u64(t.header() + 32, 7).unwrap();
    let e = BTree::open(&RawMem::new(&pool), t.header()).unwrap_err();
    assert!(
        matches!(
            e,
            RewindError::Invalid {
                refusal: Refusal::TreeLayout { header, tag: 7, .. }
            } if header == t.header()
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("layout tag 0x7"), "{e}");
    // Layout 2 (node size counted without the block header) is refused too.
    let tag2 = u64::from_le_bytes(*b"BT+FP\x00\x00\x02");
    RawMem::new(&pool).write_u64(t.header() + 32, tag2).unwrap();
    let e = BTree::open(&RawMem::new(&pool), t.header()).unwrap_err();
    assert!(e.to_string().contains("rebuild the tree"), "{e}");
    drop(pool);
    // Pool format version 1 (the slot-directory leaves) is not read.
    r.store_u64(8, 1);
    r.persist(8, 8);
    let e = Pool::open_in(r.crash(CrashMode::DropUnpersisted).unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            RewindError::NotAPool {
                reason: NotAPoolReason::Version { found: 1, .. }
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("pool format version 1"), "{e}");
}
