//! A persistent region in a few lines: create a region file, write a record and persist it
//! (write-back + fence), reopen the file and read the record back; then the same write on a
//! `CrashSim` region, where a simulated power cut keeps what was persisted and drops what was
//! not. The file lives in `/dev/shm` when it exists (persistent memory emulated in RAM, not
//! power-safe, and said so by `Region::emulation`), else in the temporary directory.
//!
//! `cargo run -p braid-pmem --example persist`
//!
//! It checks its own results and exits non-zero on a failure (CI runs it).

use std::error::Error;

use braid_pmem::{CrashMode, CrashSim, PmemConfig, Region};

fn main() -> Result<(), Box<dyn Error>> {
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("braid-pmem-example-{}", std::process::id()));
    let cfg = PmemConfig::default();

    // Write and persist a record: once `persist` returns, the bytes are in the persistence
    // domain the region's media gives (or written back with msync where it is a plain file).
    let region = Region::create(&path, 4096, cfg)?;
    region.write(0, b"hello, persistent world");
    region.persist(0, 23);
    region.check()?; // an msync failure surfaces here
    println!(
        "created {} ({})",
        path.display(),
        region
            .emulation()
            .unwrap_or_else(|| format!("{}, power-safe", region.media()))
    );
    drop(region);

    // Reopen the file: the header is checked, the record is there.
    let again = Region::open(&path, Some(4096), cfg)?;
    let mut back = [0u8; 23];
    again.read(0, &mut back);
    drop(again);
    std::fs::remove_file(&path)?;
    if &back != b"hello, persistent world" {
        return Err(format!("read back {back:?}").into());
    }
    println!("reopened: {}", String::from_utf8_lossy(&back));

    // A simulated power cut: word 0 persisted, word 8 only written.
    let sim = CrashSim::region(4096, cfg);
    sim.store_u64(0, 42);
    sim.persist(0, 8);
    sim.store_u64(8, 7);
    let after = sim.crash(CrashMode::DropUnpersisted)?;
    let (kept, lost) = (after.load_u64(0), after.load_u64(8));
    println!("after a simulated power cut: persisted word {kept}, unpersisted word {lost}");
    if (kept, lost) != (42, 0) {
        return Err(format!("expected (42, 0) after the crash, found ({kept}, {lost})").into());
    }
    Ok(())
}
