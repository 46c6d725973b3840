//! Profiling aid for the B+-tree (REWIND §5.2's tree, the operations `scripts/pmdk-bench.sh`
//! compares with PMDK): insert random keys (through the non-recoverable twin, or `tx`: one
//! Sealed no-force REWIND transaction each) into a pool on /dev/shm (or `anon`: anonymous
//! DRAM), then look every key up `rounds` times, printing the rates, so `perf record` sees
//! one tree's lookups without the benchmark driver around them.
//!
//! `cargo run --release -p braid-rewind --example btree_lookup -- [keys] [rounds] [raw|tx] [file|anon]`

use std::error::Error;
use std::time::Instant;

use braid_rewind::btree::BTree;
use braid_rewind::{Domain, LogLayout, PmemConfig, Pool, PoolConfig, RawMem, Region};
use rand::{Rng, SeedableRng, rngs::SmallRng};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let keys: u64 = args.get(1).map_or(Ok(1_000_000), |s| s.parse())?;
    let rounds: u64 = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let tx = args.get(3).is_some_and(|s| s == "tx");
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("btree-lookup-{}", std::process::id()));
    let cfg = PmemConfig::default()
        .domain(Domain::Adr)
        .flush(None)
        .write_delay_ns(0)
        .media(braid_pmem::Media::Emulated);
    let region = if args.get(4).is_some_and(|s| s == "anon") {
        Region::anonymous(768 << 20)
    } else {
        Region::create(&path, 768 << 20, cfg)?
    };
    let pool = Pool::create_in(region, PoolConfig::default().layout(LogLayout::Sealed))?;
    let t = BTree::create(&mut RawMem::new(&pool), 512, 8)?;
    let mut rng = SmallRng::seed_from_u64(11);
    let ks: Vec<u64> = (0..keys).map(|_| rng.r#gen::<u64>() >> 1).collect();
    let s = Instant::now();
    let s0 = pool.pmem_stats();
    for &k in &ks {
        if tx {
            pool.transaction(|m| t.insert(m, k, &k.to_le_bytes()).map(drop))?;
        } else {
            t.insert(&mut RawMem::new(&pool), k, &k.to_le_bytes())?;
        }
    }
    let d = pool.pmem_stats().since(&s0);
    println!(
        "inserts/s {:.0} fences/ins {:.2} lines/ins {:.2}",
        keys as f64 / s.elapsed().as_secs_f64(),
        d.fences as f64 / keys as f64,
        d.lines_flushed as f64 / keys as f64
    );
    let m = RawMem::new(&pool);
    if rounds > 0 {
        // Not with no lookup round: the inserts alone, for an instruction count per insert
        // taken as the difference of two runs.
        println!("{:?}", t.check(&m));
    }
    let mut out = [0u8; 8];
    for _ in 0..rounds {
        let s = Instant::now();
        let mut found = 0u64;
        for &k in &ks {
            found += u64::from(t.get(&m, k, &mut out));
        }
        println!(
            "lookups/s {:.0} found {found}",
            keys as f64 / s.elapsed().as_secs_f64()
        );
    }
    drop(pool);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
