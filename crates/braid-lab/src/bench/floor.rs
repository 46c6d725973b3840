//! The disk's own commit floor, measured beside every run on a file device: a loop of one
//! small `pwrite` and one `fdatasync` into a file preallocated the way the log's segments are
//! (full size, see `braid_wal::device::file`). That is the least a durable commit on this disk
//! costs with nothing else in the way, so a run's commit latency is read against it: what
//! lies above the floor is braid's (hand-offs, wake-ups, copies), not the disk's.
//!
//! The disk's latency moves during the day by tens of microseconds, so the floor is measured
//! right before each run, in the run's own directory, never taken from an earlier sitting.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use braid_wal::fs::{Fs, OpenOpts, RealFs};
use serde::Serialize;

/// Bytes per write of the floor loop: one TPC-B commit record (the size `braid bench
/// --workload tpcb` logs per commit).
pub const FLOOR_WRITE_BYTES: usize = 200;
/// How long the loop runs at most, and how many syncs it takes at most.
const FLOOR_TIME: Duration = Duration::from_millis(500);
const FLOOR_SYNCS: usize = 4000;
/// Bytes preallocated for the loop (more than `FLOOR_SYNCS` writes need).
const FLOOR_FILE_BYTES: u64 = 1 << 20;

/// What the floor loop measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Floor {
    /// Median time of one `pwrite` + `fdatasync`, us.
    pub p50_us: f64,
    /// 99th percentile, us.
    pub p99_us: f64,
    /// Iterations measured.
    pub syncs: usize,
}

/// Measure the floor in `dir` (a scratch file, removed again); `None` where syncing is not
/// what a durable commit would pay (a RAM file system: `fdatasync` does nothing there).
pub fn measure(dir: &Path) -> anyhow::Result<Option<Floor>> {
    let fs = RealFs;
    if fs.is_ram_backed(dir) {
        return Ok(None);
    }
    let path = dir.join("disk-floor.tmp");
    let r = run(&fs, &path);
    // Best effort: the run directory is removed after the run anyway.
    let _ = fs.remove_file(&path);
    r.map(Some)
}

fn run(fs: &RealFs, path: &Path) -> anyhow::Result<Floor> {
    let f = fs
        .open(path, OpenOpts::create_truncate())
        .with_context(|| format!("creating {}", path.display()))?;
    f.allocate(FLOOR_FILE_BYTES)
        .and_then(|()| f.set_len(FLOOR_FILE_BYTES))
        .and_then(|()| f.sync_data())
        .with_context(|| format!("preallocating {}", path.display()))?;
    let buf = [0x5au8; FLOOR_WRITE_BYTES];
    let mut ns: Vec<u64> = Vec::with_capacity(FLOOR_SYNCS);
    let start = Instant::now();
    let mut off = 0u64;
    while ns.len() < FLOOR_SYNCS && start.elapsed() < FLOOR_TIME {
        let t = Instant::now();
        f.write_all_at(off, &buf)
            .and_then(|()| f.sync_data())
            .with_context(|| format!("writing {}", path.display()))?;
        ns.push(t.elapsed().as_nanos() as u64);
        off += FLOOR_WRITE_BYTES as u64;
    }
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    Ok(Floor {
        p50_us: at(0.5),
        p99_us: at(0.99),
        syncs: ns.len(),
    })
}
