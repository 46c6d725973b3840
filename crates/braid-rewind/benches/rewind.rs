//! Criterion benchmarks of REWIND on a pool file in /dev/shm: a 1-word transaction for each
//! log layout and policy against one persisted non-recoverable store, one B+-tree insert
//! per transaction against the non-recoverable twin, and a B+-tree lookup. The experiments of the paper's figures
//! are in the `braid` command (`braid bench rewind`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_rewind::btree::BTree;
use braid_rewind::{
    Layers, LogLayout, LogMode, Mem, PPtr, PmemConfig, Policy, Pool, PoolConfig, RawMem, Region,
};
use criterion::{Criterion, criterion_group, criterion_main};
use tempfile::TempDir;

/// A region file of `bytes` in a fresh directory under /dev/shm (DRAM standing in for
/// persistent memory) if present; the file goes when the directory is dropped.
fn region(bytes: usize) -> (TempDir, Region) {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let r = Region::create(&dir.path().join("pool"), bytes, PmemConfig::default()).unwrap();
    (dir, r)
}

/// The configurations of REWIND §5.1: each layout (and Sealed), force and no-force, one
/// layer; Optimized with two layers.
fn variants() -> Vec<(String, PoolConfig)> {
    let mut v = Vec::new();
    for (l, layout) in [
        ("simple", LogLayout::Simple),
        ("optimized", LogLayout::Optimized),
        ("batch", LogLayout::Batch),
        ("sealed", LogLayout::Sealed),
    ] {
        for (p, policy) in [("nf", Policy::NoForce), ("f", Policy::Force)] {
            v.push((format!("{l}-1l-{p}"), layout, policy, Layers::One));
        }
    }
    for (p, policy) in [("nf", Policy::NoForce), ("f", Policy::Force)] {
        v.push((
            format!("optimized-2l-{p}"),
            LogLayout::Optimized,
            policy,
            Layers::Two,
        ));
    }
    v.into_iter()
        .map(|(label, layout, policy, layers)| {
            let cfg = PoolConfig::default()
                .layout(layout)
                .policy(policy)
                .layers(layers)
                .logs(LogMode::Shared);
            (label, cfg)
        })
        .collect()
}

fn word_tx(c: &mut Criterion) {
    let mut g = c.benchmark_group("word_tx");
    {
        let (_dir, r) = region(16 << 20);
        let mut i = 0u64;
        g.bench_function("raw_persisted_store", |b| {
            b.iter(|| {
                i += 1;
                let off = 4096 + 8 * (i as usize % 4096);
                r.store_u64(off, i);
                r.persist(off, 8);
            })
        });
    }
    for (label, cfg) in variants() {
        let (_dir, r) = region(64 << 20);
        let pool = Pool::create_in(r, cfg).unwrap();
        let a = RawMem::new(&pool).alloc(8 * 4096).unwrap();
        let arr: PPtr<u64> = PPtr::from_offset(a);
        let mut i = 0u64;
        g.bench_function(&label, |b| {
            b.iter(|| {
                i += 1;
                let w = i % 4096;
                pool.transaction(|tx| tx.write(arr.field::<u64>(8 * w), i))
                    .unwrap();
            })
        });
    }
    g.finish();
}

fn btree_insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("btree_insert");
    for (label, cfg) in [("twin", None), ("batch_nf", Some(PoolConfig::default()))] {
        let (_dir, r) = region(512 << 20);
        let pool = Pool::create_in(r, cfg.unwrap_or_default()).unwrap();
        let t = BTree::create(&mut RawMem::new(&pool), 512, 32).unwrap();
        let mut k = 0u64;
        let val = [5u8; 32];
        g.bench_function(label, |b| {
            b.iter(|| {
                k = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let key = k >> 1;
                if cfg.is_some() {
                    pool.transaction(|tx| t.insert(tx, key, &val)).unwrap();
                } else {
                    t.insert(&mut RawMem::new(&pool), key, &val).unwrap();
                }
            })
        });
    }
    g.finish();
}

/// Lookups of random keys present in a tree of 200 K keys (8-byte values, 512-byte nodes, the
/// shape `scripts/pmdk-bench.sh` compares with PMDK), one key after another.
fn btree_lookup(c: &mut Criterion) {
    let (_dir, r) = region(256 << 20);
    let pool = Pool::create_in(r, PoolConfig::default()).unwrap();
    let mut m = RawMem::new(&pool);
    let t = BTree::create(&mut m, 512, 8).unwrap();
    let mut k = 0u64;
    let keys: Vec<u64> = (0..200_000)
        .map(|_| {
            k = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
            k >> 1
        })
        .collect();
    for &key in &keys {
        t.insert(&mut m, key, &key.to_le_bytes()).unwrap();
    }
    let mut i = 0usize;
    let mut out = [0u8; 8];
    c.bench_function("btree_lookup", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            assert!(t.get(&m, keys[i], &mut out));
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(2));
    targets = word_tx, btree_insert, btree_lookup
}
criterion_main!(benches);
