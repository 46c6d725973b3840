//! Profiling aid for 1-word transactions (REWIND §5.1, the operation `scripts/pmdk-bench.sh`
//! compares with PMDK): `n` transactions, each writing one random word of a 4096-word array,
//! on a Sealed no-force pool (or `batch`: Batch no-force) in a file on /dev/shm, printing the
//! rate, fences and lines flushed per transaction, so `perf stat` or callgrind sees the
//! transactions without the benchmark driver around them (run it with two counts and take
//! the difference for the cost of one transaction without the set-up).
//!
//! `cargo run --release -p braid-rewind --example word_tx -- [n] [sealed|batch]`

use std::error::Error;
use std::time::Instant;

use braid_rewind::{Domain, LogLayout, Mem, PPtr, PmemConfig, Pool, PoolConfig, RawMem, Region};
use rand::{Rng, SeedableRng, rngs::SmallRng};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(Ok(1_000_000), |s| s.parse())?;
    let layout = match args.get(2).map(String::as_str) {
        Some("batch") => LogLayout::Batch,
        _ => LogLayout::Sealed,
    };
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("word-tx-{}", std::process::id()));
    let cfg = PmemConfig::default()
        .domain(Domain::Adr)
        .flush(None)
        .write_delay_ns(0)
        .media(braid_pmem::Media::Emulated);
    let pool = Pool::create_in(
        Region::create(&path, 64 << 20, cfg)?,
        PoolConfig::default().layout(layout),
    )?;
    let words = 4096usize;
    let mut m = RawMem::new(&pool);
    let a = m.alloc(8 * words)?;
    m.write_bytes(a, &vec![0u8; 8 * words])?;
    let arr: PPtr<u64> = PPtr::from_offset(a);
    let mut rng = SmallRng::seed_from_u64(1);
    let s0 = pool.pmem_stats();
    let s = Instant::now();
    for i in 0..n {
        let w = rng.gen_range(0..words) as u64;
        pool.transaction(|tx| tx.write(arr.field::<u64>(8 * w), i + 1))?;
    }
    let secs = s.elapsed().as_secs_f64();
    let d = pool.pmem_stats().since(&s0);
    println!(
        "{layout:?} no-force: tx/s {:.0} fences/tx {:.2} lines/tx {:.2}",
        n as f64 / secs,
        d.fences as f64 / n as f64,
        d.lines_flushed as f64 / n as f64
    );
    drop(pool);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
