//! Region files (header checks, round trip), accessors, persistence counters, flush-kind
//! selection and the streaming copy, on real mappings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use braid_pmem::{
    CACHE_LINE, CrashMode, Domain, FlushKind, HEADER_SIZE, HeaderDamage, Media, PmemConfig,
    PmemError, PmemStats, Region,
};
use proptest::prelude::*;

mod bounds;
mod concurrency;

/// A scratch directory in tmpfs when there is one (mapped files behave like DRAM there).
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// These tests are about the accessors, the header and the persistence instructions and
/// their counters, on tmpfs: flush + fence only (`Media` has its own tests in `media.rs`).
fn adr() -> PmemConfig {
    PmemConfig::default().media(Media::Emulated)
}

fn eadr() -> PmemConfig {
    adr().domain(Domain::Eadr)
}

fn region_file(dir: &Path, name: &str, size: usize, cfg: PmemConfig) -> (PathBuf, Region) {
    let p = dir.join(name);
    let r = Region::create(&p, size, cfg).unwrap();
    (p, r)
}

/// Rewrite header bytes `at..at+bytes.len()` and, if `fix_crc`, recompute the header CRC.
fn patch_header(path: &Path, at: usize, bytes: &[u8], fix_crc: bool) {
    let mut data = std::fs::read(path).unwrap();
    data[at..at + bytes.len()].copy_from_slice(bytes);
    if fix_crc {
        let crc = crc32c_of(&data[..24]);
        data[24..28].copy_from_slice(&crc.to_le_bytes());
    }
    std::fs::write(path, data).unwrap();
}

/// CRC-32C (Castagnoli), bitwise, to patch headers without depending on the crate's helper.
fn crc32c_of(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn create_then_reopen_round_trip() {
    let dir = scratch();
    let (path, r) = region_file(dir.path(), "a.rgn", 3 * 4096 + 100, adr());
    assert_eq!(r.len(), 3 * 4096 + 100);
    assert!(!r.is_volatile());
    assert!(!r.is_simulated());
    assert_eq!(r.path(), Some(path.as_path()));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        (HEADER_SIZE + 3 * 4096 + 100) as u64
    );
    let mut zero = vec![1u8; r.len()];
    r.read(0, &mut zero);
    assert!(zero.iter().all(|&b| b == 0), "a new region is zeroed");
    r.write(5, b"hello braid");
    r.store_u64(4096, 0xDEAD_BEEF_0BAD_F00D);
    r.write_nt(r.len() - 7, b"tailend");
    r.persist(0, r.len());
    r.msync().unwrap();
    drop(r);

    for expected in [None, Some(3 * 4096 + 100)] {
        let r = Region::open(&path, expected, adr()).unwrap();
        assert_eq!(r.len(), 3 * 4096 + 100);
        let mut b = [0u8; 11];
        r.read(5, &mut b);
        assert_eq!(&b, b"hello braid");
        assert_eq!(r.load_u64(4096), 0xDEAD_BEEF_0BAD_F00D);
        let mut t = [0u8; 7];
        r.read(r.len() - 7, &mut t);
        assert_eq!(&t, b"tailend");
    }

    // Creating again overwrites: same path, new size, zeroed.
    let r = Region::create(&path, 4096, adr()).unwrap();
    assert_eq!(r.load_u64(0), 0);
    // One user at a time: the region opens again once this handle is gone.
    assert!(matches!(
        Region::open(&path, None, adr()),
        Err(PmemError::InUse { .. })
    ));
    drop(r);
    assert_eq!(Region::open(&path, None, adr()).unwrap().len(), 4096);
}

#[test]
fn zero_sized_region_is_valid() {
    let dir = scratch();
    let (path, r) = region_file(dir.path(), "z.rgn", 0, adr());
    assert!(r.is_empty());
    r.write(0, &[]);
    r.persist(0, 0);
    drop(r);
    assert!(Region::open(&path, Some(0), adr()).unwrap().is_empty());
    assert!(Region::anonymous(0).is_empty());
}

#[test]
fn header_refusals() {
    let dir = scratch();

    // Too short to hold a header.
    let short = dir.path().join("short");
    std::fs::write(&short, b"BRAIDRGN").unwrap();
    let e = Region::open(&short, None, adr()).unwrap_err();
    assert!(matches!(e, PmemError::NotARegion { .. }), "{e:?}");
    assert!(e.to_string().contains("remove it"), "{e}");

    // Long enough, wrong magic.
    let junk = dir.path().join("junk");
    let mut f = std::fs::File::create(&junk).unwrap();
    f.write_all(&vec![0x5Au8; 2 * HEADER_SIZE]).unwrap();
    drop(f);
    let e = Region::open(&junk, None, adr()).unwrap_err();
    assert!(
        matches!(e, PmemError::NotARegion { ref path } if path == &junk),
        "{e:?}"
    );

    // Another format version (with a valid CRC, so the version check is what refuses it).
    let (ver, r) = region_file(dir.path(), "ver.rgn", 4096, adr());
    drop(r);
    patch_header(&ver, 8, &7u32.to_le_bytes(), true);
    let e = Region::open(&ver, None, adr()).unwrap_err();
    assert!(
        matches!(
            e,
            PmemError::Version {
                found: 7,
                expected: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("recreate"), "{e}");

    // Another size than expected.
    let (sz, r) = region_file(dir.path(), "size.rgn", 8192, adr());
    drop(r);
    let e = Region::open(&sz, Some(4096), adr()).unwrap_err();
    assert!(
        matches!(
            e,
            PmemError::SizeMismatch {
                found: 8192,
                expected: 4096,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("open it with its size or recreate it"),
        "{e}"
    );
    assert_eq!(Region::open(&sz, Some(8192), adr()).unwrap().len(), 8192);

    // A flipped bit in the header.
    let (crc, r) = region_file(dir.path(), "crc.rgn", 4096, adr());
    drop(r);
    patch_header(&crc, 17, &[0x01], false);
    let e = Region::open(&crc, None, adr()).unwrap_err();
    assert!(
        matches!(
            e,
            PmemError::CorruptHeader {
                damage: HeaderDamage::Checksum { found, expected },
                ..
            } if found != expected
        ),
        "{e:?}"
    );

    // A file cut short of the size its header records.
    let (cut, r) = region_file(dir.path(), "cut.rgn", 8192, adr());
    drop(r);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&cut)
        .unwrap()
        .set_len((HEADER_SIZE + 100) as u64)
        .unwrap();
    let e = Region::open(&cut, None, adr()).unwrap_err();
    assert!(
        matches!(
            e,
            PmemError::CorruptHeader {
                damage: HeaderDamage::Truncated {
                    size: 8192,
                    file_len
                },
                ..
            } if file_len == (HEADER_SIZE + 100) as u64
        ),
        "{e:?}"
    );

    // A missing file is an I/O error naming it.
    let e = Region::open(&dir.path().join("missing"), None, adr()).unwrap_err();
    assert!(matches!(e, PmemError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("missing"), "{e}");
}

#[test]
fn adr_counts_lines_and_fences() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "c.rgn", 8192, adr());
    assert_eq!(r.stats(), PmemStats::default());
    r.write(10, &[1; 100]);
    r.persist(10, 100); // bytes 10..110: lines 0 and 1
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 2,
            fences: 1,
            nt_bytes: 0,
            msyncs: 0
        }
    );
    r.flush(64, 64); // exactly line 1
    r.flush(0, 0); // nothing
    r.fence();
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 3,
            fences: 2,
            nt_bytes: 0,
            msyncs: 0
        }
    );
    let before = r.stats();
    r.write_nt(3, &[7; 300]);
    r.fence();
    assert_eq!(
        r.stats().since(&before),
        PmemStats {
            lines_flushed: 0,
            fences: 1,
            nt_bytes: 300,
            msyncs: 0
        }
    );
    // Clones share the counters.
    let c = r.clone();
    c.persist(0, 1);
    assert_eq!(r.stats().lines_flushed, 4);
    // Scattered lines in one call: each counted, nothing in between.
    r.flush_lines(&[0, 64 * 5 + 8, 64 * 100]);
    r.flush_lines(&[]);
    assert_eq!(r.stats().lines_flushed, 7);
}

/// A write through the file-system API lands in the file (and so in the mapping, and in a
/// reopened region), and counts its lines and one fence, as NV-Disk's write through a file on
/// NVRAM pays per line written and per sync; without a file (simulated) it persists by stores.
#[test]
fn write_file_goes_through_the_file_and_counts_its_lines_and_sync() {
    let dir = scratch();
    let (p, r) = region_file(dir.path(), "w.rgn", 8192, adr());
    r.write_file(100, &[9; 100]).unwrap(); // bytes 100..200: lines 1, 2 and 3
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 3,
            fences: 1,
            nt_bytes: 0,
            msyncs: 0
        }
    );
    let mut got = [0u8; 102];
    r.read(99, &mut got);
    assert_eq!(got[0], 0);
    assert!(got[1..101].iter().all(|&b| b == 9));
    assert_eq!(got[101], 0);
    let on_disk = std::fs::read(&p).unwrap();
    assert!(
        on_disk[HEADER_SIZE + 100..HEADER_SIZE + 200]
            .iter()
            .all(|&b| b == 9)
    );
    let sim = braid_pmem::CrashSim::region(4096, PmemConfig::default());
    sim.write_file(0, &[5; 64]).unwrap();
    assert_eq!(sim.stats().fences, 1);
    let after = sim.crash(CrashMode::DropUnpersisted).unwrap();
    let mut b = [0u8; 64];
    after.read(0, &mut b);
    assert_eq!(b, [5; 64], "durable when write_file returns");
}

#[test]
fn eadr_flush_is_free_but_fences_count() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "e.rgn", 8192, eadr());
    r.write(0, &[1; 4096]);
    r.persist(0, 4096);
    r.flush(0, 100);
    r.write_nt(0, &[2; 128]);
    r.fence();
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 0,
            fences: 2,
            nt_bytes: 128,
            msyncs: 0
        }
    );
    let mut b = [0u8; 128];
    r.read(0, &mut b);
    assert_eq!(b, [2; 128]);
}

#[test]
fn anonymous_regions_are_volatile_and_uncounted() {
    let r = Region::anonymous(10_000);
    assert!(r.is_volatile());
    assert_eq!(r.path(), None);
    assert_eq!(r.len(), 10_000);
    r.write(1, b"abc");
    r.write_nt(100, &[9; 1000]);
    r.fill(5000, 100, 0xEE);
    r.persist(0, 10_000);
    r.fence();
    assert_eq!(r.stats(), PmemStats::default());
    let mut b = [0u8; 3];
    r.read(1, &mut b);
    assert_eq!(&b, b"abc");
    let mut b = [0u8; 1000];
    r.read(100, &mut b);
    assert!(b.iter().all(|&x| x == 9));
    let mut b = [0u8; 102];
    r.read(4999, &mut b);
    assert_eq!((b[0], b[1], b[100], b[101]), (0, 0xEE, 0xEE, 0));
    assert!(matches!(
        r.crash(CrashMode::DropUnpersisted),
        Err(PmemError::NotSimulated)
    ));
    assert!(matches!(r.freeze_after(1), Err(PmemError::NotSimulated)));
    assert_eq!(r.persist_events(), 0);
}

#[test]
fn crash_needs_a_simulated_region() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "n.rgn", 4096, adr());
    assert!(matches!(
        r.crash(CrashMode::DropUnpersisted),
        Err(PmemError::NotSimulated)
    ));
    assert!(matches!(r.freeze_after(0), Err(PmemError::NotSimulated)));
}

#[test]
fn atomics_and_fill() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "at.rgn", 4096, adr());
    r.store_u64(8, 41);
    assert_eq!(r.cas_u64(8, 41, 42), Ok(41));
    assert_eq!(r.cas_u64(8, 41, 43), Err(42));
    assert_eq!(r.load_u64(8), 42);
    r.fill(100, 20, 0xAB);
    let mut b = [0u8; 22];
    r.read(99, &mut b);
    assert_eq!((b[0], b[1], b[20], b[21]), (0, 0xAB, 0xAB, 0));

    // A word view sees the same words as the 8-byte loads, and later stores.
    let v = r.words(0, 16);
    assert_eq!(v.len(), 16);
    assert_eq!(v.get(1), 42);
    assert_eq!(v.get(13), r.load_u64(104));
    r.store_u64(120, 7);
    assert_eq!(v.get(15), 7);
    let sim = braid_pmem::CrashSim::region(4096, PmemConfig::default());
    sim.store_u64(64, 9);
    assert_eq!(
        sim.words(64, 1).get(0),
        9,
        "a simulated region's live image"
    );
    r.store_words(200, &[1, 2, 3]);
    assert_eq!(
        (r.load_u64(200), r.load_u64(208), r.load_u64(216)),
        (1, 2, 3)
    );
    let sim = braid_pmem::CrashSim::region(4096, eadr());
    sim.store_words(72, &[4, 5]);
    assert_eq!((sim.load_u64(72), sim.load_u64(80)), (4, 5));

    // A CAS counter hammered by several threads loses no increment.
    std::thread::scope(|s| {
        for _ in 0..4 {
            let r = r.clone();
            s.spawn(move || {
                for _ in 0..1000 {
                    let mut cur = r.load_u64(0);
                    while let Err(now) = r.cas_u64(0, cur, cur + 1) {
                        cur = now;
                    }
                }
            });
        }
    });
    assert_eq!(r.load_u64(0), 4000);
}

#[test]
fn forced_flush_kinds_work_or_are_refused() {
    let dir = scratch();
    let order = [FlushKind::Clwb, FlushKind::ClflushOpt, FlushKind::Clflush];
    // detect() picks the first supported instruction of the preference order.
    let expected = order
        .iter()
        .copied()
        .find(|k| k.is_supported())
        .unwrap_or(FlushKind::None);
    assert_eq!(FlushKind::detect(), expected);
    let (_, r) = region_file(dir.path(), "d.rgn", 4096, adr());
    assert_eq!(r.flush_kind(), expected);

    for kind in [
        FlushKind::Clwb,
        FlushKind::ClflushOpt,
        FlushKind::Clflush,
        FlushKind::None,
    ] {
        let cfg = adr().flush(Some(kind));
        let path = dir.path().join(format!("{kind:?}.rgn"));
        if !kind.is_supported() {
            let e = Region::create(&path, 4096, cfg).unwrap_err();
            assert!(
                matches!(e, PmemError::FlushUnsupported { kind: k } if k == kind),
                "{e:?}"
            );
            continue;
        }
        let r = Region::create(&path, 4096, cfg).unwrap();
        assert_eq!(r.flush_kind(), kind);
        assert_eq!(r.config().flush, Some(kind));
        r.write(1, &[0x11; 200]);
        r.persist(1, 200);
        r.write_nt(333, &[0x22; 101]);
        r.fence();
        assert_eq!(
            r.stats(),
            PmemStats {
                lines_flushed: 4,
                fences: 2,
                nt_bytes: 101,
                msyncs: 0
            },
            "{kind:?}"
        );
        drop(r);
        let r = Region::open(&path, Some(4096), cfg).unwrap();
        let mut b = [0u8; 433];
        r.read(1, &mut b);
        assert!(b[..200].iter().all(|&x| x == 0x11));
        assert!(b[332..].iter().all(|&x| x == 0x22));
    }
}

#[test]
fn emulated_delay_keeps_semantics() {
    // The delay only costs time; the data and counters are the same.
    let dir = scratch();
    let cfg = adr().write_delay_ns(500);
    let (_, r) = region_file(dir.path(), "delay.rgn", 4096, cfg);
    r.write(0, &[3; 256]);
    r.persist(0, 256);
    r.write_nt(256, &[4; 256]);
    r.fence();
    assert_eq!(
        r.stats(),
        PmemStats {
            lines_flushed: 4,
            fences: 2,
            nt_bytes: 256,
            msyncs: 0
        }
    );
    assert_eq!(r.config().write_delay_ns, 500);
}

#[test]
fn region_is_send_sync_and_cheap_to_clone() {
    fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_send_sync::<Region>();
    let r = Region::anonymous(64);
    let c = r.clone();
    c.store_u64(0, 5);
    assert_eq!(r.load_u64(0), 5, "clones share the memory");
    assert!(format!("{r:?}").contains("anonymous"));
}

fn nt_case(cfg: PmemConfig, writes: &[(usize, Vec<u8>)]) {
    const SIZE: usize = 3 * 4096;
    let dir = scratch();
    let (_, a) = region_file(dir.path(), "plain.rgn", SIZE, cfg);
    let (_, b) = region_file(dir.path(), "nt.rgn", SIZE, cfg);
    for (off, data) in writes {
        let off = off % (SIZE - data.len() + 1);
        a.write(off, data);
        b.write_nt(off, data);
    }
    a.persist(0, SIZE);
    b.fence();
    let (mut x, mut y) = (vec![0u8; SIZE], vec![0u8; SIZE]);
    a.read(0, &mut x);
    b.read(0, &mut y);
    assert!(x == y, "write_nt and write disagree");
    let total: usize = writes.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(b.stats().nt_bytes, total as u64);
}

fn writes_strategy() -> impl Strategy<Value = Vec<(usize, Vec<u8>)>> {
    prop::collection::vec(
        (0usize..3 * 4096, prop::collection::vec(any::<u8>(), 0..600)),
        1..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn write_nt_agrees_with_write(writes in writes_strategy(), eadr_domain in any::<bool>()) {
        let cfg = if eadr_domain { eadr() } else { adr() };
        nt_case(cfg, &writes);
    }
}
