//! Byte mutation of a region file's header (DESIGN.md invariant 6: no panic on bad bytes;
//! the header layout is in `region.rs`): a valid region file is created, its bytes mutated
//! (proptest: overwritten, zeroed, cut short, extended), and opened with and without an
//! expected size. Opening never panics; it fails with `NotARegion`, `Version`,
//! `CorruptHeader` or `SizeMismatch`, or succeeds with a usable area that lies inside the file
//! and can be read and written.
//!
//! The fuzz target `region_header` runs the same check (see `fuzz/README.md`); with
//! `BRAID_FUZZ_SEEDS=<dir>` set, `write_fuzz_seeds` writes a valid header file in its input
//! format to `<dir>/region_header/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use braid_pmem::{PmemConfig, PmemError, Region};
use proptest::prelude::*;

const USABLE: usize = 256;

fn valid_file(dir: &Path) -> Vec<u8> {
    let p = dir.join("valid.region");
    let r = Region::create(&p, USABLE, PmemConfig::default()).unwrap();
    drop(r);
    std::fs::read(&p).unwrap()
}

/// The fuzz target's oracle. `opts` bit 0: open with the expected size.
fn check(path: &Path, opts: u8, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).unwrap();
    let expected = (opts & 1 != 0).then_some(USABLE);
    match Region::open(path, expected, PmemConfig::default()) {
        Ok(r) => {
            if r.len() + 4096 > bytes.len() {
                return Err(format!(
                    "opened {} usable bytes from a file of {}",
                    r.len(),
                    bytes.len()
                ));
            }
            let mut buf = vec![0u8; r.len()];
            r.read(0, &mut buf);
            if buf[..] != bytes[4096..4096 + r.len()] {
                return Err("the usable area does not read back the file's bytes".into());
            }
            if r.len() >= 8 {
                r.store_u64(0, 42);
                if r.load_u64(0) != 42 {
                    return Err("a store does not read back".into());
                }
            }
            Ok(())
        }
        Err(
            PmemError::NotARegion { .. }
            | PmemError::Version { .. }
            | PmemError::CorruptHeader { .. }
            | PmemError::SizeMismatch { .. },
        ) => Ok(()),
        Err(e) => Err(format!("untyped failure: {e}")),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(u16, Vec<u8>),
    Zero(u16, u16),
    Resize(u16),
}

fn set(at: impl Strategy<Value = u16>) -> impl Strategy<Value = Mutation> {
    (at, proptest::collection::vec(any::<u8>(), 1..9)).prop_map(|(o, b)| Mutation::Set(o, b))
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        // Mostly the 28 bytes that carry information.
        4 => set(0u16..40),
        1 => set(any::<u16>()),
        1 => (0u16..40, 1u16..32).prop_map(|(o, n)| Mutation::Zero(o, n)),
        1 => (0u16..8192).prop_map(Mutation::Resize),
    ]
}

fn apply(b: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Set(o, bytes) => {
            let at = *o as usize % b.len().max(1);
            for (i, x) in bytes.iter().enumerate() {
                if let Some(y) = b.get_mut(at + i) {
                    *y = *x;
                }
            }
        }
        Mutation::Zero(o, n) => {
            let at = (*o as usize).min(b.len());
            let end = (at + *n as usize).min(b.len());
            b[at..end].fill(0);
        }
        Mutation::Resize(n) => b.resize(*n as usize, 0),
    }
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let p = d.path().join("fuzz.region");
    (d, p)
}

#[test]
fn valid_header_opens() {
    let (d, p) = scratch();
    let bytes = valid_file(d.path());
    check(&p, 0, &bytes).unwrap();
    check(&p, 1, &bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn mutated_headers_never_panic(
        opts in 0u8..2,
        ms in proptest::collection::vec(mutation(), 1..5),
    ) {
        let (d, p) = scratch();
        let mut bytes = valid_file(d.path());
        for m in &ms {
            apply(&mut bytes, m);
        }
        let r = check(&p, opts, &bytes);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}

/// With `BRAID_FUZZ_SEEDS=<dir>`: the fuzz target's input is `[opts]` then the file.
#[test]
fn write_fuzz_seeds() {
    let Some(dir) = std::env::var_os("BRAID_FUZZ_SEEDS") else {
        return;
    };
    let out = PathBuf::from(dir).join("region_header");
    std::fs::create_dir_all(&out).unwrap();
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let file = valid_file(d.path());
    for (name, opts) in [("valid", 0u8), ("valid_sized", 1)] {
        let mut b = vec![opts];
        b.extend_from_slice(&file);
        std::fs::write(out.join(name), b).unwrap();
    }
}
