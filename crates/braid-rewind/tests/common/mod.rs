//! Shared helpers for the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use braid_rewind::{CommitClear, Layers, LogLayout, LogMode, PPtr, Policy, Pool, PoolConfig};

/// Every layout x policy x layer count, shared log, small logs; and the one-layer force
/// configurations once more with commits clearing by kept positions instead of a log scan.
pub fn all_configs() -> Vec<PoolConfig> {
    let mut v = Vec::new();
    for layers in [Layers::One, Layers::Two] {
        for layout in [
            LogLayout::Simple,
            LogLayout::Optimized,
            LogLayout::Batch,
            LogLayout::Sealed,
        ] {
            for policy in [Policy::Force, Policy::NoForce] {
                v.push(
                    PoolConfig::default()
                        .layout(layout)
                        .policy(policy)
                        .layers(layers)
                        .logs(LogMode::Shared)
                        .bucket_records(8)
                        .log_capacity(256)
                        .batch_group(4)
                        .checkpoint_fraction(0.5)
                        .commit_clear(CommitClear::Scan),
                );
            }
        }
    }
    let kept: Vec<PoolConfig> = v
        .iter()
        .filter(|c| c.layers == Layers::One && c.policy == Policy::Force)
        .map(|c| c.commit_clear(CommitClear::KeptPositions))
        .collect();
    v.extend(kept);
    v
}

/// Every one-layer layout under no-force, with a checkpoint after every commit (so that
/// crashes hit checkpoints too: the removal of gaps, of emptied buckets and of END records).
pub fn checkpointing_configs() -> Vec<PoolConfig> {
    [
        LogLayout::Simple,
        LogLayout::Optimized,
        LogLayout::Batch,
        LogLayout::Sealed,
    ]
    .into_iter()
    .map(|layout| {
        PoolConfig::default()
            .layout(layout)
            .policy(Policy::NoForce)
            .layers(Layers::One)
            .logs(LogMode::Shared)
            .bucket_records(8)
            .log_capacity(256)
            .batch_group(4)
            .checkpoint_fraction(1.0 / 256.0)
            .commit_clear(CommitClear::Scan)
    })
    .collect()
}

/// The offsets of the blocks the pool's allocator holds, in order.
pub fn allocated(pool: &Pool) -> Vec<u64> {
    pool.heap_report()
        .unwrap()
        .allocated
        .iter()
        .map(|&(o, _)| o)
        .collect()
}

/// What the root's link word `link` reaches: the linked block's first word (0 without one), and
/// the offsets of the reachable blocks (the root and the linked one), in order.
pub fn follow_link(pool: &Pool, link: u64) -> (u64, Vec<u64>) {
    let root: PPtr<u64> = pool.root();
    let mut reach = vec![root.offset()];
    let linked = if link == 0 {
        0
    } else {
        reach.push(link);
        pool.read(PPtr::<u64>::from_offset(link))
    };
    reach.sort_unstable();
    (linked, reach)
}
