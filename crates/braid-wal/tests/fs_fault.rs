//! FaultFs: durability model, crash modes, fault injection and the operation log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use braid_wal::fs::{
    AlignedBuf, CrashOpts, FaultFs, Fs, FsOp, OpenOpts, SyncFault, is_invalid_input, is_no_space,
};

fn setup() -> FaultFs {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs
}

#[test]
fn unsynced_writes_are_lost_synced_ones_survive() {
    let fs = setup();
    let p = Path::new("/d/a");
    let f = fs.open(p, OpenOpts::create()).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    f.write_all_at(0, b"hello").unwrap();
    f.sync_data().unwrap();
    f.write_all_at(5, b" world").unwrap();
    assert_eq!(fs.contents(p).unwrap(), b"hello world");
    assert_eq!(fs.durable_contents(p).unwrap(), b"hello");
    assert_eq!(fs.unsynced_ops(p), 1);
    let c = fs.crash(CrashOpts::drop_unsynced());
    assert_eq!(c.contents(p).unwrap(), b"hello");
    let mut buf = [0u8; 16];
    let g = c.open(p, OpenOpts::existing()).unwrap();
    assert_eq!(g.read_at(0, &mut buf).unwrap(), 5);
    // The original file system is untouched by the crash.
    assert_eq!(fs.contents(p).unwrap(), b"hello world");
    assert_eq!(fs.stats().syncs, 1);
}

#[test]
fn names_need_a_directory_sync() {
    let fs = setup();
    let f = fs.open(Path::new("/d/new"), OpenOpts::create()).unwrap();
    f.write_all_at(0, b"x").unwrap();
    f.sync_data().unwrap();
    // Data synced but the entry is not: gone after a crash.
    assert!(
        !fs.crash(CrashOpts::drop_unsynced())
            .exists(Path::new("/d/new"))
    );
    fs.sync_dir(Path::new("/d")).unwrap();
    assert!(
        fs.crash(CrashOpts::drop_unsynced())
            .exists(Path::new("/d/new"))
    );

    fs.rename(Path::new("/d/new"), Path::new("/d/renamed"))
        .unwrap();
    let c = fs.crash(CrashOpts::drop_unsynced());
    assert!(c.exists(Path::new("/d/new")) && !c.exists(Path::new("/d/renamed")));
    fs.sync_dir(Path::new("/d")).unwrap();
    let c = fs.crash(CrashOpts::drop_unsynced());
    assert!(!c.exists(Path::new("/d/new")));
    assert_eq!(c.contents(Path::new("/d/renamed")).unwrap(), b"x");

    fs.remove_file(Path::new("/d/renamed")).unwrap();
    assert!(!fs.exists(Path::new("/d/renamed")));
    assert!(
        fs.crash(CrashOpts::drop_unsynced())
            .exists(Path::new("/d/renamed"))
    );
    fs.sync_dir(Path::new("/d")).unwrap();
    assert!(
        !fs.crash(CrashOpts::drop_unsynced())
            .exists(Path::new("/d/renamed"))
    );
    // Directories are durable at once.
    assert!(fs.crash(CrashOpts::drop_unsynced()).exists(Path::new("/d")));
}

#[test]
fn list_dir_is_sorted_and_scoped() {
    let fs = setup();
    fs.create_dir_all(Path::new("/d/sub")).unwrap();
    for n in ["c", "a", "b"] {
        fs.open(&Path::new("/d").join(n), OpenOpts::create())
            .unwrap();
    }
    fs.open(Path::new("/d/sub/z"), OpenOpts::create()).unwrap();
    let l = fs.list_dir(Path::new("/d")).unwrap();
    let names: Vec<_> = l
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a", "b", "c", "sub"]);
    assert!(fs.list_dir(Path::new("/nope")).is_err());
    assert!(fs.open(Path::new("/nope/x"), OpenOpts::create()).is_err());
    assert!(
        fs.open(Path::new("/d/missing"), OpenOpts::existing())
            .is_err()
    );
}

#[test]
fn torn_last_keeps_earlier_writes_and_a_prefix_of_the_last() {
    let fs = setup();
    let p = Path::new("/d/t");
    let f = fs.open(p, OpenOpts::create()).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    f.write_all_at(0, &[1u8; 100]).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(100, &[2u8; 100]).unwrap();
    f.write_all_at(200, &[3u8; 100]).unwrap();
    let mut lens = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let c = fs.crash(CrashOpts::tear_last(seed)).contents(p).unwrap();
        assert!(c.len() >= 200 && c.len() <= 300, "len {}", c.len());
        assert!(c[..100].iter().all(|&b| b == 1));
        assert!(c[100..200].iter().all(|&b| b == 2));
        assert!(c[200..].iter().all(|&b| b == 3));
        lens.insert(c.len());
    }
    assert!(
        lens.len() > 5,
        "tear lengths should vary with the seed: {lens:?}"
    );
    // Same seed, same result.
    assert_eq!(
        fs.crash(CrashOpts::tear_last(7)).contents(p),
        fs.crash(CrashOpts::tear_last(7)).contents(p)
    );
}

#[test]
fn keep_subset_keeps_some_unsynced_writes() {
    let fs = setup();
    let p = Path::new("/d/s");
    let f = fs.open(p, OpenOpts::create()).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    f.write_all_at(0, &[0u8; 80]).unwrap();
    f.sync_data().unwrap();
    for i in 0..8u8 {
        f.write_all_at(u64::from(i) * 10, &[i + 1; 10]).unwrap();
    }
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let c = fs.crash(CrashOpts::keep_subset(seed)).contents(p).unwrap();
        assert_eq!(c.len(), 80);
        let kept: Vec<bool> = (0..8).map(|i| c[i * 10] == i as u8 + 1).collect();
        for i in 0..8 {
            let block = &c[i * 10..i * 10 + 10];
            assert!(block.iter().all(|&b| b == 0) || block.iter().all(|&b| b == i as u8 + 1));
        }
        seen.insert(kept);
    }
    assert!(seen.len() > 3);
}

#[test]
fn sync_fault_next_after_n_and_path_filter() {
    let fs = setup();
    let a = fs.open(Path::new("/d/a.log"), OpenOpts::create()).unwrap();
    let b = fs.open(Path::new("/d/b.meta"), OpenOpts::create()).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    fs.inject_sync_fault(SyncFault::after(2).on_paths(".log"));
    b.sync_data().unwrap(); // does not match, does not count
    a.write_all_at(0, b"1").unwrap();
    a.sync_data().unwrap();
    a.sync_data().unwrap();
    a.write_all_at(1, b"2").unwrap();
    let e = a.sync_data().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(5), "EIO: {e}");
    // One-shot: the next one succeeds, but the data of the failed sync is never durable.
    a.sync_data().unwrap();
    assert_eq!(fs.durable_contents(Path::new("/d/a.log")).unwrap(), b"1");
    assert_eq!(fs.contents(Path::new("/d/a.log")).unwrap(), b"12");
    assert_eq!(fs.stats().failed_syncs, 1);

    fs.inject_sync_fault(SyncFault::next().sticky());
    assert!(b.sync_data().is_err());
    assert!(b.sync_data().is_err());
    fs.clear_sync_fault();
    b.sync_data().unwrap();
}

#[test]
fn enospc_on_allocate_and_on_growing_writes() {
    let fs = setup();
    fs.set_space_limit(Some(10_000));
    let f = fs.open(Path::new("/d/x"), OpenOpts::create()).unwrap();
    f.allocate(8_000).unwrap();
    assert_eq!(f.len().unwrap(), 0, "allocate keeps the size");
    assert_eq!(fs.used_space(), 8_000);
    // Writes inside the reservation need no new space.
    f.write_all_at(0, &[1u8; 8_000]).unwrap();
    let g = fs.open(Path::new("/d/y"), OpenOpts::create()).unwrap();
    let e = g.allocate(4_000).unwrap_err();
    assert!(is_no_space(&e), "{e}");
    let e = g.write_at(0, &[1u8; 3_000]).unwrap_err();
    assert!(is_no_space(&e), "{e}");
    g.write_all_at(0, &[1u8; 2_000]).unwrap();
    fs.set_space_limit(Some(20_000));
    g.allocate(4_000).unwrap();
    // Removing a file frees its space.
    fs.remove_file(Path::new("/d/x")).unwrap();
    assert_eq!(fs.used_space(), 4_000);
    assert!(fs.stats().enospc >= 2);
}

#[test]
fn short_writes_are_prefixes_and_write_all_completes() {
    let fs = setup();
    fs.set_short_writes(Some(3));
    let f = fs.open(Path::new("/d/s"), OpenOpts::create()).unwrap();
    let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let mut short = 0;
    for i in 0..20 {
        let n = f.write_at(i * 5000, &data).unwrap();
        assert!(n >= 1 && n <= data.len());
        if n < data.len() {
            short += 1;
        }
    }
    assert!(short > 0);
    f.write_all_at(0, &data).unwrap();
    let mut back = vec![0u8; 5000];
    f.read_at(0, &mut back).unwrap();
    assert_eq!(back, data);
    assert!(fs.stats().short_writes > 0);
}

#[test]
fn direct_handles_check_alignment_and_can_be_refused() {
    let fs = setup();
    let f = fs
        .open(Path::new("/d/o"), OpenOpts::create().with_direct(true))
        .unwrap();
    let mut buf = AlignedBuf::new(8192);
    buf.as_mut_slice()[0] = 9;
    f.write_all_at(4096, buf.as_slice()).unwrap();
    assert!(is_invalid_input(
        &f.write_at(1, buf.as_slice()).unwrap_err()
    ));
    assert!(is_invalid_input(
        &f.write_at(0, &buf.as_slice()[..100]).unwrap_err()
    ));
    assert!(is_invalid_input(
        &f.write_at(0, &buf.as_slice()[1..4097]).unwrap_err()
    ));
    let mut r = AlignedBuf::new(4096);
    assert_eq!(f.read_at(4096, r.as_mut_slice()).unwrap(), 4096);
    assert_eq!(r.as_slice()[0], 9);
    fs.set_direct_refused(true);
    let e = fs
        .open(Path::new("/d/o"), OpenOpts::existing().with_direct(true))
        .unwrap_err();
    assert!(is_invalid_input(&e));
    fs.open(Path::new("/d/o"), OpenOpts::existing()).unwrap();
}

#[test]
fn truncate_and_set_len_are_unsynced_until_synced() {
    let fs = setup();
    let p = Path::new("/d/t");
    let f = fs.open(p, OpenOpts::create()).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    f.write_all_at(0, &[7u8; 50]).unwrap();
    f.sync_data().unwrap();
    f.set_len(10).unwrap();
    assert_eq!(f.len().unwrap(), 10);
    assert_eq!(
        fs.crash(CrashOpts::drop_unsynced())
            .contents(p)
            .unwrap()
            .len(),
        50
    );
    f.sync_data().unwrap();
    assert_eq!(
        fs.crash(CrashOpts::drop_unsynced())
            .contents(p)
            .unwrap()
            .len(),
        10
    );
    let g = fs.open(p, OpenOpts::create_truncate()).unwrap();
    assert_eq!(g.len().unwrap(), 0);
}

/// Expected contents of /d/f and /d/g.
type Contents<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

#[test]
fn op_log_replays_every_prefix() {
    let fs = setup();
    let p = Path::new("/d/f");
    let f = fs.open(p, OpenOpts::create()).unwrap();
    f.write_all_at(0, b"abc").unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    f.write_all_at(3, b"def").unwrap();
    f.sync_data().unwrap();
    fs.rename(p, Path::new("/d/g")).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    let ops = fs.ops();
    assert!(matches!(ops[0], FsOp::CreateDir { .. }));
    assert_eq!(
        ops[1],
        FsOp::Create {
            path: p.to_path_buf()
        }
    );
    assert_eq!(
        ops[2],
        FsOp::Write {
            path: p.to_path_buf(),
            off: 0,
            len: 3
        }
    );
    assert_eq!(ops.len(), fs.op_count());
    let expect: Vec<Contents<'_>> = vec![
        (None, None),            // 0: nothing
        (None, None),            // 1: dir
        (None, None),            // 2: created, name not durable
        (None, None),            // 3: written
        (None, None),            // 4: synced, name not durable
        (Some(b"abc"), None),    // 5: dir synced
        (Some(b"abc"), None),    // 6: unsynced write
        (Some(b"abcdef"), None), // 7: synced
        (Some(b"abcdef"), None), // 8: renamed, not durable
        (None, Some(b"abcdef")), // 9: dir synced
    ];
    assert_eq!(ops.len() + 1, expect.len());
    for (k, (f_exp, g_exp)) in expect.iter().enumerate() {
        let c = fs.crash_after(k, CrashOpts::drop_unsynced()).unwrap();
        assert_eq!(c.contents(p).as_deref(), *f_exp, "after {k} ops");
        assert_eq!(
            c.contents(Path::new("/d/g")).as_deref(),
            *g_exp,
            "after {k} ops"
        );
    }
    assert!(
        fs.crash_after(ops.len() + 1, CrashOpts::drop_unsynced())
            .is_none()
    );
    // A crashed file system logs from its own initial state.
    let c = fs.crash(CrashOpts::drop_unsynced());
    let h = c.open(Path::new("/d/g"), OpenOpts::existing()).unwrap();
    h.write_all_at(6, b"!").unwrap();
    h.sync_data().unwrap();
    assert_eq!(
        c.crash_after(0, CrashOpts::drop_unsynced())
            .unwrap()
            .contents(Path::new("/d/g"))
            .unwrap(),
        b"abcdef"
    );
    assert_eq!(
        c.crash_after(2, CrashOpts::drop_unsynced())
            .unwrap()
            .contents(Path::new("/d/g"))
            .unwrap(),
        b"abcdef!"
    );
    c.set_record_ops(false);
    assert!(c.crash_after(0, CrashOpts::drop_unsynced()).is_none());
}
