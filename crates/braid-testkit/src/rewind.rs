//! REWIND recovery over damaged pool bytes (Chatzistergiou et al., VLDB 2015, Sections 3-4:
//! the log's list and buckets, its records, and analysis/redo/undo): the check of the fuzz
//! target `rewind_open` and the pools it patches. Pools of every log layout (Sealed included) and both layer
//! counts hold committed transactions still in the log (no-force) and one abandoned mid-way.
//! Opening never panics and fails only with `Corrupt`, `NotAPool`, `TooSmall`, `Config`,
//! `BadPointer` or `DoubleFree`; a pool that opens has empty, consistent logs and opens again
//! (docs/design.md invariants 5 and 6).

use std::sync::OnceLock;

use braid_rewind::{
    CommitClear, CrashMode, CrashSim, Layers, LogLayout, LogMode, PPtr, PmemConfig, Policy, Pool,
    PoolConfig, Region, RewindError,
};

use crate::Checked;

/// Number of pool configurations (see [`configs`]).
pub const CONFIGS: usize = 8;

/// Bytes of the pool images.
pub const SIZE: usize = 192 * 1024;

/// The eight pool configurations: Simple / Optimized / Batch layout x one / two layers
/// (0-5), then Sealed x one / two layers (6, 7); no-force.
pub fn configs() -> Vec<PoolConfig> {
    (0..CONFIGS)
        .map(|i| {
            PoolConfig::default()
                .layout(if i < 6 {
                    [LogLayout::Simple, LogLayout::Optimized, LogLayout::Batch][i % 3]
                } else {
                    LogLayout::Sealed
                })
                .policy(Policy::NoForce)
                .layers(if i < 3 || i == 6 {
                    Layers::One
                } else {
                    Layers::Two
                })
                .logs(LogMode::Shared)
                .bucket_records(8)
                .log_capacity(256)
                .batch_group(4)
                .checkpoint_fraction(0.9)
                .commit_clear(CommitClear::Scan)
        })
        .collect()
}

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

/// The crashed pool images, one per configuration of `configs()`.
pub fn images() -> &'static Vec<Vec<u8>> {
    static IMGS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    IMGS.get_or_init(|| configs().into_iter().map(build).collect())
}

/// A simulated region holding `img`.
pub fn region_of(img: &[u8]) -> Region {
    let r = CrashSim::region(SIZE, PmemConfig::default());
    r.write(0, img);
    r
}

/// Overwrite `bytes` at `at` (modulo the image), clipped to the image.
pub fn patch(img: &mut [u8], at: u32, bytes: &[u8]) {
    let at = at as usize % img.len();
    let n = bytes.len().min(img.len() - at);
    img[at..at + n].copy_from_slice(&bytes[..n]);
}

/// Open the pool image and check recovery.
pub fn check_image(img: &[u8]) -> Checked {
    let r = region_of(img);
    match Pool::open_in(r.clone()) {
        Ok((pool, _)) => {
            let live = pool
                .check_logs()
                .map_err(|e| format!("logs after recovery: {e}"))?;
            if live != 0 {
                return Err(format!("{live} records left in the logs after recovery").into());
            }
            let _ = pool.heap_report();
            let _ = pool.check_allocator();
            drop(pool);
            Pool::open_in(r).map_err(|e| format!("a recovered pool does not open again: {e}"))?;
            Ok(())
        }
        Err(
            RewindError::Corrupt { .. }
            | RewindError::NotAPool { .. }
            | RewindError::TooSmall { .. }
            | RewindError::Config(_)
            | RewindError::BadPointer(_)
            | RewindError::DoubleFree(_),
        ) => Ok(()),
        Err(e) => Err(format!("untyped failure: {e}").into()),
    }
}

/// Fuzz target `rewind_open`: `[config]` (mod [`CONFIGS`], see `configs`) then patches
/// `[offset u32 LE][len u8][bytes]` applied to that configuration's image.
pub fn rewind_open(data: &[u8]) -> Checked {
    let Some((&which, mut rest)) = data.split_first() else {
        return Ok(());
    };
    let mut img = images()[which as usize % CONFIGS].clone();
    while rest.len() >= 5 {
        let at = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let n = (rest[4] as usize).min(rest.len() - 5);
        patch(&mut img, at, &rest[5..5 + n]);
        rest = &rest[5 + n..];
    }
    check_image(&img)
}
