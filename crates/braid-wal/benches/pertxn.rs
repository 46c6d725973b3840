//! Log insertion latency vs threads (NV-Logging, Huang et al. 2014, Figure 11): the average
//! time one thread takes to insert one log object, for
//!
//! * `nvdisk`: a centralized log buffer on the file system: a record appended to the one
//!   stream of a file device in `/dev/shm` (reserve in the shared buffer, encode, copy; the
//!   flusher writes and fdatasyncs in the background), as NV-Disk does;
//! * `pertxn_insert`: NV-Logging with flush-on-insert: global LSN, object built in the
//!   worker's DRAM buffer, copied into its slot of a region file in `/dev/shm` with streaming
//!   stores, fence, state word persisted;
//! * `pertxn_commit`: NV-Logging with flush-on-commit: the same object copied with cached
//!   stores, persisted later by the daemon.
//!
//! Each measured iteration is one insertion by each of `threads` threads (the reported time is
//! the per-thread average, i.e. the insertion latency); objects carry 256 payload bytes. Every
//! 50 000 insertions per thread the log is replaced by a fresh one (outside the measured time)
//! so nothing fills up and no backup or truncation runs. Run with
//! `cargo bench -p braid-wal --bench pertxn`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use braid_pmem::{Domain, Media, PmemConfig, Region};
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::fs::RealFs;
use braid_wal::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use braid_wal::scheme::{FlushPolicy, PerTxnConfig};
use braid_wal::scheme::{LogKind, Replay, ReplayError, SchemeConfig};
use braid_wal::testing::{PerTxnLog, PerTxnStorage};
use braid_wal::testing::{Stream, StreamConfig};
use criterion::{Criterion, criterion_group, criterion_main};

const PAYLOAD: usize = 256;
/// Insertions per thread before the log is replaced.
const CHUNK: u64 = 50_000;

struct NoReplay;
impl Replay for NoReplay {
    fn apply(&self, _: u64, _: LogKind, _: &[u8]) -> Result<(), ReplayError> {
        Ok(())
    }
}

fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("braid-bench-pertxn-")
        .tempdir_in("/dev/shm")
        .unwrap()
}

/// Run `per_thread` insertions on each of `threads` threads with `insert(thread, i)`; returns
/// the summed per-thread elapsed time.
fn run_threads<F, G>(threads: usize, per_thread: u64, insert: &F) -> Duration
where
    F: Fn(usize) -> G + Sync,
    G: FnMut(u64) + Send,
{
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut f = insert(t);
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..per_thread {
                        f(i);
                    }
                    start.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn nvdisk(threads: usize, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        left -= n;
        let dir = tmpdir();
        let mut cfg = FileDeviceConfig::new(dir.path().join("log"), 0);
        cfg.segment_size = 64 << 20;
        cfg.buffer_size = 16 << 20;
        let dev = Arc::new(FileDevice::open(Arc::new(RealFs), cfg).unwrap());
        let scfg = StreamConfig::default().max_writers(threads);
        let stream = Stream::start(dev, 0, scfg).unwrap();
        let payload = vec![7u8; PAYLOAD];
        {
            // Create (and preallocate) the segments outside the measured time.
            let mut w = stream.writer().unwrap();
            let p = [&payload[..]];
            let spec = RecordSpec {
                kind: Kind::Redo,
                flags: FLAG_COMMIT,
                txn: 0,
                stamp: &Stamp::None,
                payload: &p,
            };
            let (_, end) = w.append(&spec).unwrap();
            stream.wait_durable(end).unwrap();
        }
        total += run_threads(threads, n, &|t| {
            let mut w = stream.writer().unwrap();
            let payload = payload.clone();
            move |i| {
                let p = [&payload[..]];
                let spec = RecordSpec {
                    kind: Kind::Redo,
                    flags: FLAG_COMMIT,
                    txn: (t as u64) << 40 | i,
                    stamp: &Stamp::None,
                    payload: &p,
                };
                w.append(&spec).unwrap();
            }
        });
        stream.close().unwrap();
    }
    total / threads as u32
}

fn pertxn(threads: usize, iters: u64, flush: FlushPolicy) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        left -= n;
        let dir = tmpdir();
        let slot = 512;
        let objects = n as usize * threads + 1024;
        let size = 8192 + objects * (slot + 16);
        // /dev/shm stands in for persistent memory: an emulation, not power-safe.
        let pcfg = PmemConfig::default()
            .domain(Domain::Adr)
            .media(Media::Emulated);
        let region = Region::create(&dir.path().join("pertxn.region"), size, pcfg).unwrap();
        let mut options = PerTxnConfig::default();
        options.flush = flush;
        options.slot_size = slot;
        options.truncate_entries = u64::MAX;
        let storage = PerTxnStorage {
            region,
            fs: Arc::new(RealFs),
            backup_dir: dir.path().join("backup"),
            options,
        };
        let cfg = SchemeConfig::default();
        let (log, _) = PerTxnLog::open(&cfg, storage, &NoReplay, &|_| {}).unwrap();
        let payload = vec![7u8; PAYLOAD];
        total += run_threads(threads, n, &|t| {
            let mut w = log.writer();
            let payload = payload.clone();
            move |i| {
                w.insert((t as u64) << 40 | i, Kind::Redo, &payload, true)
                    .unwrap();
            }
        });
        log.close().unwrap();
    }
    total / threads as u32
}

fn insertion(c: &mut Criterion) {
    let mut g = c.benchmark_group("log_insertion");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for threads in [1usize, 2, 4, 8] {
        g.bench_function(format!("nvdisk/{threads}t"), |b| {
            b.iter_custom(|iters| nvdisk(threads, iters))
        });
        g.bench_function(format!("pertxn_insert/{threads}t"), |b| {
            b.iter_custom(|iters| pertxn(threads, iters, FlushPolicy::Insert))
        });
        g.bench_function(format!("pertxn_commit/{threads}t"), |b| {
            b.iter_custom(|iters| pertxn(threads, iters, FlushPolicy::Commit))
        });
    }
    g.finish();
}

criterion_group!(benches, insertion);
criterion_main!(benches);
