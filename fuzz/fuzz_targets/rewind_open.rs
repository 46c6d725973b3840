//! Fuzz REWIND recovery over damaged pool bytes (`braid_rewind::Pool::open_in`: the pool
//! header, the log descriptors and ADLL headers, buckets, slots and records, the heap): input
//! = `[config]` (mod 6: Simple / Optimized / Batch layout x one / two layers, no-force) then
//! patches `[offset u32 LE][len u8][bytes]` applied (offsets modulo the pool) to a pool with
//! committed transactions still in its log and one transaction abandoned mid-way. Opening
//! never panics and fails only with `Corrupt`, `NotAPool`, `TooSmall`, `Config`, `BadPointer`
//! or `DoubleFree`; a pool that opens has empty logs and opens again. Same check as
//! `crates/braid-rewind/tests/pool_mutation.rs` (DESIGN.md invariants 5 and 6).
#![no_main]

use std::sync::OnceLock;

use braid_rewind::{
    CrashMode, CrashSim, Layers, LogLayout, LogMode, PPtr, PmemConfig, Policy, Pool, PoolConfig,
    RewindError,
};
use libfuzzer_sys::fuzz_target;

const SIZE: usize = 192 * 1024;

fn config(i: usize) -> PoolConfig {
    let layout = [LogLayout::Simple, LogLayout::Optimized, LogLayout::Batch][i % 3];
    let layers = if i < 3 { Layers::One } else { Layers::Two };
    PoolConfig {
        layout,
        policy: Policy::NoForce,
        layers,
        logs: LogMode::Shared,
        bucket_records: 8,
        log_capacity: 256,
        batch_group: 4,
        checkpoint_fraction: 0.9,
    }
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

fn images() -> &'static Vec<Vec<u8>> {
    static IMGS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    IMGS.get_or_init(|| (0..6).map(|i| build(config(i))).collect())
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, mut rest)) = data.split_first() else {
        return;
    };
    let mut img = images()[which as usize % 6].clone();
    while rest.len() >= 5 {
        let at = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize % SIZE;
        let n = (rest[4] as usize).min(rest.len() - 5).min(SIZE - at);
        img[at..at + n].copy_from_slice(&rest[5..5 + n]);
        rest = &rest[5 + n..];
    }
    let r = CrashSim::region(SIZE, PmemConfig::default());
    r.write(0, &img);
    match Pool::open_in(r.clone()) {
        Ok((pool, _)) => {
            assert_eq!(pool.check_logs(), Ok(0), "logs not empty after recovery");
            let _ = pool.heap_report();
            let _ = pool.check_allocator();
            drop(pool);
            if let Err(e) = Pool::open_in(r) {
                panic!("a recovered pool does not open again: {e}");
            }
        }
        Err(
            RewindError::Corrupt(_)
            | RewindError::NotAPool(_)
            | RewindError::TooSmall { .. }
            | RewindError::Config(_)
            | RewindError::BadPointer(_)
            | RewindError::DoubleFree(_),
        ) => {}
        Err(e) => panic!("untyped failure: {e}"),
    }
});
