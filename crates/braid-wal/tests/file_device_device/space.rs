//! Space management: `reset_tail` (and a crash while it cuts), releasing whole segments at a
//! checkpoint, creating segments ahead.

use super::*;

#[test]
fn reset_tail_removes_stale_records_for_good() {
    for env in Env::both() {
        for direct in [false, true] {
            if direct && env.name == "real" {
                continue; // tempdir may be tmpfs; the direct path is covered on FaultFs and disk
            }
            let mut cfg = env.cfg(u32::from(direct), 4096);
            cfg.direct = direct;
            let dev = open(&env, &cfg);
            let mut w = Writer::new(&dev, 0);
            write_batch(&mut w, 1, 30, 6);
            let full_end = w.filled;
            // Recovery decided the log ends after record 12 (say txn 13 was torn).
            let (end, _) = w.expect[12];
            let kept = w.expect[..12].to_vec();
            dev.reset_tail(end).unwrap();
            assert_eq!(dev.limit(), end);
            assert_eq!(decode_from(&dev, 0).0, kept);
            for k in (end / 4096 + 1)..=(full_end / 4096) {
                assert!(
                    !env.fs
                        .exists(&env.dir.join(segment_file_name(cfg.stream, k * 4096))),
                    "segment {k} removed"
                );
            }
            drop(dev);
            let dev = open(&env, &cfg);
            // Preallocated segments are full-size: the limit is the end of the segment holding
            // `end`, and what lies between reads as zeros.
            assert_eq!(
                dev.limit(),
                end.div_ceil(4096) * 4096,
                "{} direct {direct}",
                env.name
            );
            assert_eq!(decode_from(&dev, 0).0, kept);
            // One short record after the cut: the stale ones that followed never come back.
            dev.reset_tail(end).unwrap();
            let mut w = Writer::new(&dev, end);
            w.append(9001, 10).unwrap();
            w.flush().unwrap();
            let (new_end, new) = (w.filled, w.expect);
            drop(dev);
            let dev = open(&env, &cfg);
            let (got, e) = decode_from(&dev, 0);
            let mut want = kept.clone();
            want.extend(new);
            assert_eq!(got, want, "{} direct {direct}", env.name);
            assert!(e >= new_end && e < full_end);
            let mut rest = vec![0u8; (dev.limit() - e) as usize];
            dev.read_at(e, &mut rest).unwrap();
            assert!(
                rest.iter().all(|&b| b == 0),
                "nothing but zeros after the end"
            );
        }
    }
}

#[test]
fn reset_tail_survives_a_crash_of_the_cut() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    let mut w = Writer::new(&dev, 0);
    write_batch(&mut w, 1, 30, 6);
    let (end, _) = w.expect[9];
    let kept = w.expect[..9].to_vec();
    let before = env.ffs().op_count();
    dev.reset_tail(end).unwrap();
    let after = env.ffs().op_count();
    drop(dev);
    for k in before..=after {
        for opts in [CrashOpts::drop_unsynced(), CrashOpts::keep_subset(k as u64)] {
            let e2 = env.with_fs(env.ffs().crash_after(k, opts).unwrap());
            let dev = open(&e2, &cfg);
            let (got, _) = decode_from(&dev, 0);
            assert_eq!(got[..9], kept[..], "after {k} ops");
            if k == after {
                assert_eq!(got, kept);
            }
        }
    }
}

#[test]
fn release_removes_whole_segments_before_a_checkpoint() {
    for env in Env::both() {
        let cfg = env.cfg(0, 4096);
        let dev = open(&env, &cfg);
        let mut w = Writer::new(&dev, 0);
        write_batch(&mut w, 1, 40, 5);
        let (cut, _) = *w.expect.iter().find(|(l, _)| *l > 3 * 4096 + 100).unwrap();
        let rest: Vec<_> = w
            .expect
            .iter()
            .copied()
            .filter(|(l, _)| *l >= cut)
            .collect();
        dev.release(cut).unwrap();
        assert_eq!(dev.start(), cut);
        assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 0))));
        assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 2 * 4096))));
        assert!(env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
        assert_eq!(decode_from(&dev, dev.start()).0, rest);
        drop(dev);
        let dev = open(&env, &cfg);
        assert_eq!(dev.start(), cut);
        assert_eq!(decode_from(&dev, dev.start()).0, rest);
    }
}

#[test]
fn ensure_space_creates_one_segment_ahead_and_is_cheap_when_done() {
    let env = Env::fault();
    let cfg = env.cfg(0, 4096);
    let dev = open(&env, &cfg);
    dev.ensure_space(5000).unwrap();
    for k in 0..3 {
        assert!(
            env.fs.exists(&env.dir.join(segment_file_name(0, k * 4096))),
            "segment {k}"
        );
    }
    assert!(!env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
    let ops = env.ffs().op_count();
    for upto in [1, 100, 4096, 8000] {
        dev.ensure_space(upto).unwrap();
    }
    assert_eq!(
        env.ffs().op_count(),
        ops,
        "nothing to do: no file-system operation"
    );
    dev.ensure_space(8193).unwrap();
    assert!(env.fs.exists(&env.dir.join(segment_file_name(0, 3 * 4096))));
}

#[test]
fn device_is_send_sync_and_usable_as_dyn() {
    let env = Env::fault();
    let dev: Arc<dyn Device> = Arc::new(open(&env, &env.cfg(0, 4096)));
    let rec = encode_record(dev.as_ref(), 0, 1, 10);
    dev.ensure_space(rec.len() as u64).unwrap();
    dev.fill(0, &rec);
    dev.flush(0, rec.len() as u64).unwrap();
    assert_eq!(dev.locate(10).1, 4096 + 10);
    assert_ne!(dev.salt_for(0), dev.salt_for(4096));
    assert_eq!(dev.sealed(), 0);
}
