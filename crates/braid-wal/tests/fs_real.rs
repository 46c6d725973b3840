//! RealFs: positional I/O, fallocate keeping the size, directories, O_DIRECT.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_wal::fs::{AlignedBuf, Fs, OpenOpts, RealFs, is_invalid_input};

#[test]
fn read_write_allocate_rename_list() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = RealFs;
    let d = tmp.path().join("a/b");
    fs.create_dir_all(&d).unwrap();
    let p = d.join("f");
    let f = fs.open(&p, OpenOpts::create()).unwrap();
    f.write_all_at(10, b"xyz").unwrap();
    assert_eq!(f.len().unwrap(), 13);
    f.allocate(1 << 20).unwrap();
    assert_eq!(
        f.len().unwrap(),
        13,
        "allocate must not change the size (or the fallback grew it)"
    );
    f.sync_data().unwrap();
    let mut buf = [0xffu8; 20];
    let n = f.read_at(0, &mut buf).unwrap();
    assert_eq!(n, 13);
    assert_eq!(&buf[..13], b"\0\0\0\0\0\0\0\0\0\0xyz");
    fs.open(&d.join("e"), OpenOpts::create()).unwrap();
    fs.rename(&p, &d.join("g")).unwrap();
    fs.sync_dir(&d).unwrap();
    let names: Vec<_> = fs
        .list_dir(&d)
        .unwrap()
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["e", "g"]);
    assert!(fs.exists(&d.join("g")) && !fs.exists(&p));
    fs.remove_file(&d.join("g")).unwrap();
    assert!(!fs.exists(&d.join("g")));
    let t = fs.open(&d.join("e"), OpenOpts::create_truncate()).unwrap();
    t.set_len(5).unwrap();
    assert_eq!(t.len().unwrap(), 5);
}

#[test]
fn direct_io_on_the_root_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = RealFs;
    let p = tmp.path().join("direct");
    let f = match fs.open(&p, OpenOpts::create().with_direct(true)) {
        Ok(f) => f,
        Err(e) if is_invalid_input(&e) => {
            println!("note: {} refuses O_DIRECT; skipping", tmp.path().display());
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let mut b = AlignedBuf::new(8192);
    b.as_mut_slice()
        .iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = i as u8);
    f.write_all_at(4096, b.as_slice()).unwrap();
    f.sync_data().unwrap();
    let mut r = AlignedBuf::new(8192);
    assert_eq!(f.read_at(4096, r.as_mut_slice()).unwrap(), 8192);
    assert_eq!(r.as_slice(), b.as_slice());
    // A buffered handle sees the same bytes.
    let g = fs.open(&p, OpenOpts::existing()).unwrap();
    let mut s = [0u8; 3];
    g.read_at(4097, &mut s).unwrap();
    assert_eq!(s, [1, 2, 3]);
}

#[test]
fn next_data_skips_reserved_space() {
    // On the root file system (tmpfs would do too): reserved, never-written space is a hole
    // to SEEK_DATA, so a reader of a preallocated segment skips it.
    let tmp = tempfile::tempdir().unwrap();
    let f = RealFs
        .open(&tmp.path().join("f"), OpenOpts::create())
        .unwrap();
    f.allocate(4 << 20).unwrap();
    f.set_len(4 << 20).unwrap();
    assert_eq!(f.next_data(0).unwrap(), None, "nothing written yet");
    f.write_all_at((1 << 20) + 10, b"xyz").unwrap();
    f.sync_data().unwrap();
    let at = f.next_data(0).unwrap().expect("the written block");
    assert!(at <= (1 << 20) + 10, "SEEK_DATA went past the data: {at}");
    assert!(
        at >= 1 << 20,
        "SEEK_DATA found data in reserved space: {at}"
    );
    assert_eq!(
        f.next_data(2 << 20).unwrap(),
        None,
        "reserved space after the data"
    );
}
