//! What backs a file region (`Media`): DAX detection and refusal, msync write-back and its
//! counter, and the sticky msync error of `Region::check`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use braid_pmem::{CrashSim, Domain, Media, PmemConfig, PmemError, Region};

fn media(media: Media) -> PmemConfig {
    PmemConfig::default().media(media)
}

/// A directory on the disk the build lives on (not /tmp, which may be tmpfs: what matters is
/// a file system on storage that is not DAX, as almost every test machine's).
fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Files in RAM (/dev/shm) are never power-safe: `Auto` resolves to an emulation there, and
/// an explicit `Msync` region says it is not power-safe either.
#[test]
fn a_ram_file_system_is_only_an_emulation() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    assert!(braid_pmem::is_ram_backed(&shm.join("not-yet/created")));
    let dir = tempfile::tempdir_in(shm).unwrap();
    let r = Region::create(&dir.path().join("a.rgn"), 8192, PmemConfig::default()).unwrap();
    assert_eq!(r.media(), Media::Emulated, "{r:?}");
    assert!(!r.is_power_safe());
    let r = Region::create(&dir.path().join("m.rgn"), 8192, media(Media::Msync)).unwrap();
    assert_eq!(r.media(), Media::Msync);
    assert!(
        !r.is_power_safe(),
        "msync cannot make RAM survive a power cut"
    );
}

#[test]
fn default_media_is_auto() {
    assert_eq!(Media::default(), Media::Auto);
    assert_eq!(PmemConfig::default().media, Media::Auto);
    assert!(Media::Dax.is_power_safe() && Media::Msync.is_power_safe());
    assert!(!Media::Emulated.is_power_safe() && !Media::Auto.is_power_safe());
}

#[test]
fn auto_resolves_to_a_power_safe_media() {
    let dir = tmp();
    let path = dir.path().join("auto.rgn");
    let r = Region::create(&path, 8192, PmemConfig::default()).unwrap();
    // Msync unless this machine's temp dir is DAX; never emulated, never left unresolved.
    assert!(matches!(r.media(), Media::Msync | Media::Dax), "{r:?}");
    assert!(r.is_power_safe());
    assert_eq!(
        r.config().media,
        Media::Auto,
        "config() keeps what was asked"
    );
    let resolved = r.media();
    r.write(100, b"durable");
    r.persist(100, 7);
    r.check().unwrap();
    drop(r);
    let r = Region::open(&path, Some(8192), PmemConfig::default()).unwrap();
    assert_eq!(r.media(), resolved);
    let mut b = [0u8; 7];
    r.read(100, &mut b);
    assert_eq!(&b, b"durable");
}

#[test]
fn emulated_stays_emulated() {
    let dir = tmp();
    let path = dir.path().join("emu.rgn");
    let r = Region::create(&path, 8192, media(Media::Emulated)).unwrap();
    assert_eq!(r.media(), Media::Emulated);
    assert!(!r.is_power_safe());
    r.write(0, &[1; 300]);
    r.persist(0, 300);
    r.write_nt(400, &[2; 100]);
    r.fence();
    assert_eq!(r.stats().msyncs, 0, "emulated regions never msync");
    assert_eq!(r.stats().lines_flushed, 5);
    drop(r);
    let r = Region::open(&path, None, media(Media::Emulated)).unwrap();
    assert_eq!(r.media(), Media::Emulated);
}

#[test]
fn dax_is_refused_on_a_file_system_without_dax() {
    let dir = tmp();
    let path = dir.path().join("dax.rgn");
    match Region::create(&path, 8192, media(Media::Dax)) {
        Ok(r) => {
            // This machine's temp dir really is DAX: nothing to refuse.
            assert_eq!(r.media(), Media::Dax);
            assert!(r.is_power_safe());
        }
        Err(e) => {
            assert!(matches!(e, PmemError::NotDax { .. }), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains("dax.rgn"), "{msg}");
            assert!(msg.contains("not on a DAX file system"), "{msg}");
            assert!(
                msg.contains("Media::Msync") && msg.contains("Media::Emulated"),
                "{msg}"
            );
            // The same for opening an existing region.
            drop(Region::create(&path, 8192, media(Media::Msync)).unwrap());
            let e = Region::open(&path, Some(8192), media(Media::Dax)).unwrap_err();
            assert!(matches!(e, PmemError::NotDax { .. }), "{e:?}");
        }
    }
}

#[test]
fn msync_counter_follows_flushes() {
    let dir = tmp();
    for domain in [Domain::Adr, Domain::Eadr] {
        let cfg = PmemConfig::default().domain(domain).media(Media::Msync);
        let path = dir.path().join(format!("{domain:?}.rgn"));
        let r = Region::create(&path, 3 * 4096, cfg).unwrap();
        assert_eq!(r.media(), Media::Msync);
        assert!(r.is_power_safe());
        assert_eq!(r.stats().msyncs, 0);
        r.write(10, &[1; 100]);
        r.persist(10, 100);
        assert_eq!(r.stats().msyncs, 1, "{domain:?}");
        // A range across a page boundary is still one msync; an empty flush is none.
        r.write(4000, &[2; 200]);
        r.flush(4000, 200);
        r.flush(0, 0);
        r.fence();
        assert_eq!(r.stats().msyncs, 2, "{domain:?}");
        // Streaming stores are written back too (eADR included: the page cache is not the
        // CPU cache).
        r.write_nt(5000, &[3; 77]);
        assert_eq!(r.stats().msyncs, 3, "{domain:?}");
        r.store_u64(8192, 42);
        r.persist(8192, 8);
        assert_eq!(r.stats().msyncs, 4, "{domain:?}");
        // Fences alone do not msync.
        r.fence();
        assert_eq!(r.stats().msyncs, 4, "{domain:?}");
        // Scattered lines: one msync per page they fall in (a run of them in one page).
        r.store_u64(64, 5);
        r.store_u64(640, 6);
        r.store_u64(4096 + 128, 7);
        r.flush_lines(&[64, 640, 4096 + 128]);
        assert_eq!(r.stats().msyncs, 6, "{domain:?}");
        // eADR still does not count write-backs of lines it does not need.
        if domain == Domain::Eadr {
            assert_eq!(r.stats().lines_flushed, 0);
        }
        r.check().unwrap();
        drop(r);
        let r = Region::open(&path, Some(3 * 4096), cfg).unwrap();
        let mut b = [0u8; 200];
        r.read(4000, &mut b);
        assert_eq!(b, [2; 200]);
        let mut c = [0u8; 77];
        r.read(5000, &mut c);
        assert_eq!(c, [3; 77]);
        assert_eq!(r.load_u64(8192), 42);
    }
}

#[test]
fn anonymous_and_simulated_media() {
    let a = Region::anonymous(4096);
    assert_eq!(a.media(), Media::Emulated);
    assert!(!a.is_power_safe());
    a.check().unwrap();
    let s = CrashSim::region(4096, PmemConfig::default());
    assert_eq!(
        s.media(),
        Media::Dax,
        "CrashSim models real persistent memory"
    );
    assert!(s.is_power_safe());
    s.persist(0, 64);
    assert_eq!(s.stats().msyncs, 0);
}

#[test]
fn msync_failure_is_sticky() {
    let dir = tmp();
    let path = dir.path().join("fail.rgn");
    let r = Region::create(&path, 8192, media(Media::Msync)).unwrap();
    r.write(0, &[1; 64]);
    r.persist(0, 64);
    r.check().unwrap();
    r.inject_msync_failure(libc::EIO);
    r.write(64, &[2; 64]);
    r.persist(64, 64); // the injected failure
    let e = r.check().unwrap_err();
    match &e {
        PmemError::Msync { path: p, source } => {
            assert_eq!(p, &path);
            assert_eq!(source.raw_os_error(), Some(libc::EIO));
        }
        other => panic!("expected an msync error, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("fail.rgn") && msg.contains("msync"), "{msg}");
    // Once failed, always failed: later msyncs succeed but the region stays untrusted, and
    // clones share the verdict.
    r.persist(0, 64);
    assert!(matches!(r.check(), Err(PmemError::Msync { .. })));
    assert!(matches!(r.clone().check(), Err(PmemError::Msync { .. })));
    assert!(matches!(r.msync(), Err(PmemError::Msync { .. })));
    assert_eq!(r.stats().msyncs, 4);
    // A region opened afresh has no such history.
    drop(r);
    let r = Region::open(&path, None, media(Media::Msync)).unwrap();
    r.check().unwrap();
    assert!(r.msync().is_ok());

    // Emulated regions never msync, so an injected failure never fires.
    let e = Region::create(&dir.path().join("emu.rgn"), 4096, media(Media::Emulated)).unwrap();
    e.inject_msync_failure(libc::EIO);
    e.persist(0, 64);
    e.check().unwrap();
}
