//! Stream throughput: append one ~250-byte record and wait until it is durable, the commit path
//! of every scheme (Taurus Alg. 1-2), per device and writer count:
//!
//! * `file_shm`: the file device on tmpfs (`/dev/shm`): the protocol and copy costs, no media.
//! * `file_disk`: the file device on the root file system (`/var/tmp`): group fdatasync.
//! * `pmem_adr` / `pmem_eadr`: the pmem ring in a region file in `/dev/shm`, with streaming
//!   stores under ADR and eADR (the fence-only persistence domain).
//!
//! With 1 and 2 writer threads; each measured iteration is one record appended and waited for
//! by one of the threads. Checkpoints are simulated by releasing the durable prefix now and
//! then so neither the ring nor the disk fills up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use braid_pmem::{Domain, Media, PmemConfig, Region};
use braid_wal::device::Device;
use braid_wal::device::{FileDevice, FileDeviceConfig};
use braid_wal::device::{PmemDevice, PmemDeviceConfig, PmemWrite};
use braid_wal::fs::RealFs;
use braid_wal::record::{FLAG_COMMIT, Kind, RecordSpec, Stamp};
use braid_wal::scan::{ScanMode, Scanner};
use braid_wal::testing::{Stream, StreamConfig};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Release the durable prefix every this many appends (per writer).
const RELEASE_EVERY: u64 = 4096;

fn file_device(dir: &Path) -> Arc<dyn Device> {
    let mut cfg = FileDeviceConfig::new(dir.join("log"), 0);
    cfg.segment_size = 16 << 20;
    cfg.buffer_size = 4 << 20;
    Arc::new(FileDevice::open(Arc::new(RealFs), cfg).unwrap())
}

fn pmem_device(dir: &Path, domain: Domain) -> Arc<dyn Device> {
    // /dev/shm stands in for persistent memory: an emulation, not power-safe.
    let cfg = PmemConfig::default().domain(domain).media(Media::Emulated);
    let region = Region::create(&dir.join("ring"), 64 << 20, cfg).unwrap();
    let mut dcfg = PmemDeviceConfig::new(0);
    dcfg.write = PmemWrite::NonTemporal;
    Arc::new(PmemDevice::open(region, dcfg).unwrap())
}

/// Where appends continue: the end of the device's valid records.
fn scan_end(dev: &dyn Device) -> u64 {
    let mut s = Scanner::new(dev, ScanMode::Strict);
    while s.next_record().unwrap().is_some() {}
    s.end().unwrap().end
}

/// `iters` appends + waits spread over `threads` writers; returns the elapsed time.
fn run(stream: &Stream, threads: usize, iters: u64) -> Duration {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = stream.clone();
            let b = barrier.clone();
            let n = iters / threads as u64 + u64::from((t as u64) < iters % threads as u64);
            std::thread::spawn(move || {
                let mut w = s.writer().unwrap();
                let payload = [0xA5u8; 250];
                let parts: [&[u8]; 1] = [&payload];
                let stamp = Stamp::Gsn(1);
                b.wait();
                for i in 0..n {
                    let spec = RecordSpec {
                        kind: Kind::Redo,
                        flags: FLAG_COMMIT,
                        txn: i,
                        stamp: &stamp,
                        payload: &parts,
                    };
                    let (_, end) = w.append(&spec).unwrap();
                    s.wait_durable(end).unwrap();
                    if i % RELEASE_EVERY == RELEASE_EVERY - 1 {
                        s.device().release(s.durable()).unwrap();
                    }
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for h in handles {
        h.join().unwrap();
    }
    start.elapsed()
}

fn wal(c: &mut Criterion) {
    let mut g = c.benchmark_group("append_wait_250B");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(3));
    type Make = fn(&Path) -> Arc<dyn Device>;
    let devices: [(&str, &str, Make); 4] = [
        ("file_shm", "/dev/shm", file_device),
        ("file_disk", "/var/tmp", file_device),
        ("pmem_adr", "/dev/shm", |d| pmem_device(d, Domain::Adr)),
        ("pmem_eadr", "/dev/shm", |d| pmem_device(d, Domain::Eadr)),
    ];
    for (name, base, make) in devices {
        for threads in [1usize, 2] {
            let dir = tempfile::tempdir_in(base).unwrap();
            let dev = make(dir.path());
            let end = scan_end(&*dev);
            let stream = Stream::start(dev, end, StreamConfig::default().max_writers(4)).unwrap();
            g.bench_function(format!("{name}/{threads}w"), |b| {
                b.iter_custom(|iters| run(&stream, threads, iters))
            });
            stream.close().unwrap();
        }
    }
    g.finish();
}

criterion_group!(benches, wal);
criterion_main!(benches);
