//! Cost of the persistence primitives on a region file in /dev/shm (DRAM standing in for
//! persistent memory): persist of 64 B / 256 B / 4 KiB under ADR and eADR, and plain versus
//! streaming writes of 4 KiB (each alone, and made durable).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_pmem::{Domain, Media, PmemConfig, Region};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Each iteration moves to the next slot so the same lines are not hit back to back.
const SPAN: usize = 4 << 20;

fn region(dir: &std::path::Path, name: &str, domain: Domain) -> Region {
    // /dev/shm stands in for persistent memory: an emulation, not power-safe.
    let cfg = PmemConfig::default().domain(domain).media(Media::Emulated);
    let r = Region::create(&dir.join(name), SPAN, cfg).unwrap();
    r.fill(0, SPAN, 0); // fault every page in before measuring
    r
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();

    let mut g = c.benchmark_group("persist");
    for (label, domain) in [("adr", Domain::Adr), ("eadr", Domain::Eadr)] {
        let r = region(dir.path(), label, domain);
        for size in [64usize, 256, 4096] {
            let data = vec![0x5Au8; size];
            g.throughput(Throughput::Bytes(size as u64));
            let mut off = 0;
            g.bench_with_input(BenchmarkId::new(label, size), &size, |b, &size| {
                b.iter(|| {
                    r.write(off, &data);
                    r.persist(off, size);
                    off = (off + size) % SPAN;
                })
            });
        }
    }
    g.finish();

    let mut g = c.benchmark_group("write_4k");
    let r = region(dir.path(), "w", Domain::Adr);
    let data = vec![0xA5u8; 4096];
    g.throughput(Throughput::Bytes(4096));
    let mut off = 0;
    let mut next = move || {
        let o = off;
        off = (off + 4096) % SPAN;
        o
    };
    g.bench_function("write", |b| b.iter(|| r.write(next(), &data)));
    g.bench_function("write_nt", |b| b.iter(|| r.write_nt(next(), &data)));
    g.bench_function("write+persist", |b| {
        b.iter(|| {
            let o = next();
            r.write(o, &data);
            r.persist(o, 4096);
        })
    });
    g.bench_function("write_nt+fence", |b| {
        b.iter(|| {
            r.write_nt(next(), &data);
            r.fence();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
