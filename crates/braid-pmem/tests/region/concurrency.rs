//! Concurrent and streaming access: disjoint writers, streaming stores at every small
//! alignment, writers sharing words, overlapping access as a logical error only, odd sizes.

use super::*;

#[test]
fn disjoint_concurrent_writers() {
    let dir = scratch();
    let (_, r) = region_file(dir.path(), "mt.rgn", 8 * 4096, adr());
    std::thread::scope(|s| {
        for t in 0..8u8 {
            let r = r.clone();
            s.spawn(move || {
                for i in 0..64usize {
                    // 64-byte records, not line-aligned, interleaved: neighbours share lines.
                    let off = 3 + (i * 8 + usize::from(t)) * 63;
                    let rec = [t.wrapping_mul(31).wrapping_add(i as u8); 63];
                    if i % 2 == 0 {
                        r.write(off, &rec);
                        r.persist(off, 63);
                    } else {
                        r.write_nt(off, &rec);
                        r.fence();
                    }
                }
            });
        }
    });
    for t in 0..8u8 {
        for i in 0..64usize {
            let off = 3 + (i * 8 + usize::from(t)) * 63;
            let mut b = [0u8; 63];
            r.read(off, &mut b);
            assert!(
                b.iter()
                    .all(|&x| x == t.wrapping_mul(31).wrapping_add(i as u8)),
                "t={t} i={i}"
            );
        }
    }
    assert_eq!(r.stats().fences, 8 * 64);
}

#[test]
fn write_nt_every_small_alignment() {
    // Exhaustive over head/tail shapes around one cache line, for each usable flush kind.
    for kind in [
        FlushKind::Clwb,
        FlushKind::ClflushOpt,
        FlushKind::Clflush,
        FlushKind::None,
    ] {
        if !kind.is_supported() {
            continue;
        }
        let cfg = adr().flush(Some(kind));
        let mut writes = Vec::new();
        for off in 0..CACHE_LINE + 9 {
            for len in [
                0, 1, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 191,
            ] {
                let off = 4096 + off + 256 * (writes.len() % 8);
                writes.push((
                    off,
                    (0..len).map(|i| (i * 13 + off) as u8).collect::<Vec<u8>>(),
                ));
            }
        }
        nt_case(cfg, &writes);
    }
}

#[test]
fn disjoint_writers_sharing_words_are_exact() {
    // Threads write 3-byte ranges that share 8-byte words with their neighbours' (partial words
    // go through a compare-and-swap of the whole word); nothing a neighbour wrote is lost.
    const THREADS: usize = 4;
    const ROUNDS: usize = 200;
    let anon = Region::anonymous(4096);
    let dir = scratch();
    let (_, file) = region_file(dir.path(), "words.rgn", 4096, adr());
    for r in [anon, file] {
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let r = r.clone();
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let v = (t * 31 + round) as u8;
                        for k in 0..64 {
                            let off = 1 + 3 * (k * THREADS + t);
                            r.write(off, &[v; 3]);
                        }
                        if round % 2 == 0 {
                            r.fill(1 + 3 * t, 3, v);
                        }
                    }
                });
            }
        });
        let last = |t: usize| (t * 31 + ROUNDS - 1) as u8;
        let mut b = vec![0u8; 1 + 3 * 64 * THREADS + 1];
        r.read(0, &mut b);
        assert_eq!(b[0], 0);
        assert_eq!(*b.last().unwrap(), 0);
        for k in 0..64 * THREADS {
            let t = k % THREADS;
            assert_eq!(&b[1 + 3 * k..4 + 3 * k], &[last(t); 3], "range {k}");
        }
    }
}

#[test]
fn overlapping_access_is_a_logical_error_only() {
    // Overlapping writers and readers race; each 8-byte word read is one some writer wrote
    // (every access is an aligned 8-byte atomic), and nothing crashes.
    let r = Region::anonymous(256);
    std::thread::scope(|s| {
        for t in 1..=3u8 {
            let r = r.clone();
            s.spawn(move || {
                for _ in 0..2000 {
                    r.write(0, &[t; 256]);
                    r.fill(8, 240, t);
                }
            });
        }
        let r = r.clone();
        s.spawn(move || {
            let mut b = [0u8; 256];
            for _ in 0..2000 {
                r.read(0, &mut b);
                for w in b.chunks_exact(8) {
                    assert!(w.iter().all(|&x| x == w[0]), "torn word {w:?}");
                    assert!(w[0] <= 3);
                }
            }
        });
    });
}

#[test]
fn odd_sized_regions_read_and_write_their_last_bytes() {
    // The last partial word of the usable area is accessed as a whole mapped word.
    let dir = scratch();
    for size in [1usize, 5, 13, 4095, 4097] {
        let (path, r) = region_file(dir.path(), &format!("odd{size}.rgn"), size, adr());
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8 + 1).collect();
        r.write(0, &data);
        r.persist(0, size);
        r.fill(size - 1, 1, 0xFE);
        let mut b = vec![0u8; size];
        r.read(0, &mut b);
        assert_eq!(&b[..size - 1], &data[..size - 1]);
        assert_eq!(b[size - 1], 0xFE);
        drop(r);
        let r = Region::open(&path, Some(size), adr()).unwrap();
        let mut c = vec![0u8; size];
        r.read(0, &mut c);
        assert_eq!(b, c);
        let a = Region::anonymous(size);
        a.write(0, &data);
        a.write_nt(0, &data);
        let mut d = vec![0u8; size];
        a.read(0, &mut d);
        assert_eq!(d, data);
    }
}
