//! REWIND recovery over damaged pool bytes (DESIGN.md invariant 6: no panic on bad bytes;
//! REWIND Sections 3-4: the log's list and buckets, its records, and analysis/redo/undo):
//! pools of every log layout and both layer counts, with committed transactions still in the
//! log (no-force) and one abandoned mid-way (a crash), are mutated byte-wise (proptest:
//! overwritten and zeroed ranges anywhere, and words of the header, the log descriptors and
//! the log arenas) and opened. Opening never panics and fails only with `Corrupt`,
//! `NotAPool`, `TooSmall`, `Config` or `BadPointer`/`DoubleFree`; a pool that opens has empty,
//! consistent logs and opens again (idempotent recovery, invariant 5).
//!
//! The fuzz target `rewind_open` runs the same check on patches of the same base images (see
//! `fuzz/README.md`); with `BRAID_FUZZ_SEEDS=<dir>` set, `write_fuzz_seeds` writes its seeds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use braid_rewind::{
    CrashMode, CrashSim, Layers, LogLayout, LogMode, PPtr, PmemConfig, Policy, Pool, PoolConfig,
    Region, RewindError,
};
use proptest::prelude::*;

const SIZE: usize = 192 * 1024;

fn configs() -> Vec<PoolConfig> {
    let mut v = Vec::new();
    for layers in [Layers::One, Layers::Two] {
        for layout in [LogLayout::Simple, LogLayout::Optimized, LogLayout::Batch] {
            v.push(PoolConfig {
                layout,
                policy: Policy::NoForce,
                layers,
                logs: LogMode::Shared,
                bucket_records: 8,
                log_capacity: 256,
                batch_group: 4,
                checkpoint_fraction: 0.9,
            });
        }
    }
    v
}

/// A pool with committed transactions in its log and one abandoned transaction.
fn build(cfg: PoolConfig) -> Vec<u8> {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    let pool = Pool::create_in(r.clone(), cfg).unwrap();
    pool.transaction(|tx| -> Result<(), RewindError> {
        let a: PPtr<u64> = tx.alloc(64)?;
        for i in 0..8 {
            tx.init(a.field::<u64>(8 * i), i)?;
        }
        tx.set_root(a)
    })
    .unwrap();
    let a: PPtr<u64> = pool.root();
    for t in 0..4u64 {
        pool.transaction(|tx| -> Result<(), RewindError> {
            for i in 0..4 {
                tx.write(a.field::<u64>(8 * ((t + i) % 8)), 100 * t + i)?;
            }
            let o: PPtr<u64> = tx.alloc(24)?;
            tx.init(o, t)?;
            tx.free(o)
        })
        .unwrap();
    }
    pool.abandon_transaction(|tx| -> Result<(), RewindError> {
        tx.write(a.field::<u64>(0), 777)?;
        tx.write(a.field::<u64>(8), 778)
    })
    .unwrap();
    let c = r.crash(CrashMode::DropUnpersisted).unwrap();
    let mut img = vec![0u8; SIZE];
    c.read(0, &mut img);
    img
}

fn images() -> &'static Vec<Vec<u8>> {
    static IMGS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    IMGS.get_or_init(|| configs().into_iter().map(build).collect())
}

fn region_of(img: &[u8]) -> Region {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    r.write(0, img);
    r
}

/// The fuzz target's oracle.
fn check(img: &[u8]) -> Result<(), String> {
    let r = region_of(img);
    match Pool::open_in(r.clone()) {
        Ok((pool, _)) => {
            let live = pool
                .check_logs()
                .map_err(|e| format!("logs after recovery: {e}"))?;
            if live != 0 {
                return Err(format!("{live} records left in the logs after recovery"));
            }
            let _ = pool.heap_report();
            let _ = pool.check_allocator();
            drop(pool);
            Pool::open_in(r).map_err(|e| format!("a recovered pool does not open again: {e}"))?;
            Ok(())
        }
        Err(
            RewindError::Corrupt(_)
            | RewindError::NotAPool(_)
            | RewindError::TooSmall { .. }
            | RewindError::Config(_)
            | RewindError::BadPointer(_)
            | RewindError::DoubleFree(_),
        ) => Ok(()),
        Err(e) => Err(format!("untyped failure: {e}")),
    }
}

/// Patches: `(offset, bytes)` overwrites, offsets modulo the image.
fn patch(img: &mut [u8], at: u32, bytes: &[u8]) {
    let at = at as usize % img.len();
    let n = bytes.len().min(img.len() - at);
    img[at..at + n].copy_from_slice(&bytes[..n]);
}

fn word_strategy() -> impl Strategy<Value = (u32, Vec<u8>)> {
    // Header and log descriptors (the first 4 KiB), 8-byte aligned, with small or wild values.
    (0u32..512, prop_oneof![0u64..4096, any::<u64>()])
        .prop_map(|(w, v)| (w * 8, v.to_le_bytes().to_vec()))
}

fn range_strategy() -> impl Strategy<Value = (u32, Vec<u8>)> {
    prop_oneof![
        (any::<u32>(), proptest::collection::vec(any::<u8>(), 1..24)),
        (any::<u32>(), (1usize..256).prop_map(|n| vec![0u8; n])),
    ]
}

#[test]
fn base_images_recover() {
    for img in images() {
        check(img).unwrap();
    }
}

/// Found by the `rewind_open` fuzz target: a header whose log capacity is valid on its own
/// but describes logs far larger than the region made `open_in` size their volatile state by
/// it (an allocation of gigabytes) before noticing; now it is refused as damage first.
#[test]
fn header_describing_logs_larger_than_the_region_is_corruption() {
    for img in images() {
        for (word, v) in [(64u32, 1u64 << 30), (48, 1024)] {
            let mut img = img.clone();
            patch(&mut img, word, &v.to_le_bytes());
            let r = region_of(&img);
            assert!(
                matches!(Pool::open_in(r), Err(RewindError::Corrupt(_))),
                "header word {word} = {v}"
            );
            check(&img).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn damaged_pools_never_panic(
        which in 0usize..6,
        words in proptest::collection::vec(word_strategy(), 0..4),
        ranges in proptest::collection::vec(range_strategy(), 0..4),
    ) {
        let mut img = images()[which].clone();
        for (at, b) in words.iter().chain(&ranges) {
            patch(&mut img, *at, b);
        }
        let r = check(&img);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// With `BRAID_FUZZ_SEEDS=<dir>`: the fuzz target's input is `[config (mod 6)]` then patches
/// `[offset u32 LE][len u8][bytes]`; a seed without patches per configuration, and one that
/// zeroes a word of the log descriptor.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("BRAID_FUZZ_SEEDS") else {
        return;
    };
    let out = std::path::PathBuf::from(dir).join("rewind_open");
    std::fs::create_dir_all(&out).unwrap();
    for c in 0..6u8 {
        std::fs::write(out.join(format!("config{c}")), [c]).unwrap();
        let mut b = vec![c];
        b.extend_from_slice(&(256u32 + 64).to_le_bytes());
        b.push(8);
        b.extend_from_slice(&[0u8; 8]);
        std::fs::write(out.join(format!("config{c}_desc_word")), b).unwrap();
    }
}
