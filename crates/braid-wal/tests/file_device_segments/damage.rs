//! Damaged stream files at open: torn or foreign headers, gaps in the sequence.

use super::*;

#[test]
fn torn_header_at_the_end_is_discarded() {
    for env in Env::both() {
        for how in ["garbled", "short", "empty"] {
            let cfg = env.cfg(4, 4096);
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            log.write(0, &pattern(0, 5000)).unwrap();
            log.sync().unwrap();
            // A third segment created ahead of the data, then torn.
            assert_eq!(log.prepare(3 * 4096).unwrap(), 3 * 4096);
            let torn = env.dir.join(segment_file_name(4, 8192));
            drop(log);
            match how {
                "garbled" => poke(&env, &torn, 20, &[0x5A; 8]),
                "short" => {
                    let f = env.fs.open(&torn, OpenOpts::existing()).unwrap();
                    f.set_len(30).unwrap();
                    f.sync_data().unwrap();
                }
                _ => {
                    let f = env.fs.open(&torn, OpenOpts::existing()).unwrap();
                    f.set_len(0).unwrap();
                    f.sync_data().unwrap();
                }
            }
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            assert!(!env.fs.exists(&torn), "{how}: the torn segment is removed");
            assert_eq!(log.segments().len(), 2);
            // Segment 1 is preallocated to its full size: zeros after the data.
            assert_eq!(log.limit(), 8192);
            assert_bytes(&read_all(&log, 0, 5000), &pattern(0, 5000), "read back");
            // It is created again when needed.
            log.write(5000, &pattern(5000, 5000)).unwrap();
            log.sync().unwrap();
            drop(log);
            let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
            assert_bytes(&read_all(&log, 0, 10_000), &pattern(0, 10_000), "read back");
            for (_, p) in log.segments() {
                env.fs.remove_file(&p).unwrap();
            }
            env.fs
                .remove_file(&env.dir.join(meta_file_name(4)))
                .unwrap();
        }
    }
}

#[test]
fn damaged_header_in_the_middle_or_with_data_is_refused() {
    for env in Env::both() {
        let cfg = env.cfg(5, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 10_000)).unwrap();
        log.sync().unwrap();
        drop(log);
        let mid = env.dir.join(segment_file_name(5, 4096));
        flip(&env, &mid, 17);
        match SegmentLog::open(env.fs.clone(), &cfg) {
            Err(WalError::BadSegment { file, .. }) => {
                assert!(file.ends_with(&segment_file_name(5, 4096)), "{file}")
            }
            other => panic!("expected BadSegment, got {:?}", other.map(|_| ())),
        }
        // Repair it; damage the last one, which holds data: refused as well.
        let hdr = {
            let f = env
                .fs
                .open(&env.dir.join(segment_file_name(5, 0)), OpenOpts::existing())
                .unwrap();
            let mut h = vec![0u8; 40];
            f.read_at(0, &mut h).unwrap();
            h
        };
        assert_eq!(&hdr[..8], b"BRAIDSEG");
        let last = env.dir.join(segment_file_name(5, 8192));
        poke(&env, &last, 0, b"XXXX");
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, .. } if file.ends_with(&segment_file_name(5, 4096))),
            "{e}"
        );
    }
}

#[test]
fn damaged_last_header_with_data_is_refused() {
    for env in Env::both() {
        let cfg = env.cfg(6, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 6000)).unwrap();
        log.sync().unwrap();
        drop(log);
        let last = env.dir.join(segment_file_name(6, 4096));
        flip(&env, &last, 30);
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, damage: SegmentDamage::Header { data_after: true, .. } } if file.ends_with(&segment_file_name(6, 4096))),
            "{e}"
        );
        assert!(env.fs.exists(&last), "a segment with data is never removed");
    }
}

#[test]
fn foreign_segment_and_gap_are_refused() {
    for env in Env::both() {
        let other_dir = env.dir.join("other");
        let mut ocfg = env.cfg(7, 4096);
        ocfg.dir = other_dir.clone();
        let other = SegmentLog::open(env.fs.clone(), &ocfg).unwrap();
        other.write(0, &pattern(0, 9000)).unwrap();
        other.sync().unwrap();
        let cfg = env.cfg(7, 4096);
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(0, &pattern(0, 5000)).unwrap();
        log.sync().unwrap();
        drop(log);
        // Copy the other incarnation's third segment in as ours: different salt.
        let src = env
            .fs
            .open(
                &other_dir.join(segment_file_name(7, 8192)),
                OpenOpts::existing(),
            )
            .unwrap();
        let mut bytes = vec![0u8; src.len().unwrap() as usize];
        src.read_at(0, &mut bytes).unwrap();
        let dst_path = env.dir.join(segment_file_name(7, 8192));
        let dst = env.fs.open(&dst_path, OpenOpts::create()).unwrap();
        dst.write_all_at(0, &bytes).unwrap();
        dst.sync_data().unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(
            matches!(&e, WalError::BadSegment { file, damage: SegmentDamage::Salt { .. } } if file.ends_with(&segment_file_name(7, 8192))),
            "{e}"
        );
        env.fs.remove_file(&dst_path).unwrap();
        // A gap: segment 1 missing, segment 2 present.
        let log = SegmentLog::open(env.fs.clone(), &cfg).unwrap();
        log.write(5000, &pattern(5000, 5000)).unwrap();
        log.sync().unwrap();
        drop(log);
        env.fs
            .remove_file(&env.dir.join(segment_file_name(7, 4096)))
            .unwrap();
        let e = SegmentLog::open(env.fs.clone(), &cfg).err().unwrap();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
