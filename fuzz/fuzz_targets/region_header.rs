//! Fuzz a braid-pmem region file's header (`braid_pmem::Region::open`): input = `[opts]`
//! then the file's bytes; opts bit 0 = open with the expected usable size (256). Opening
//! never panics and fails only with `NotARegion`, `Version`, `CorruptHeader` or
//! `SizeMismatch`; a region that opens lies inside the file and reads back its bytes. Same
//! check as `crates/braid-pmem/tests/header_mutation.rs` (DESIGN.md invariant 6).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use braid_pmem::{PmemConfig, PmemError, Region};
use libfuzzer_sys::fuzz_target;

fn path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        PathBuf::from(format!(
            "/dev/shm/braid-fuzz-region-{}.region",
            std::process::id()
        ))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&opts, bytes)) = data.split_first() else {
        return;
    };
    let p = path();
    std::fs::write(p, bytes).unwrap();
    let expected = (opts & 1 != 0).then_some(256);
    match Region::open(p, expected, PmemConfig::default()) {
        Ok(r) => {
            assert!(
                r.len() + 4096 <= bytes.len(),
                "usable area past the end of the file"
            );
            let mut buf = vec![0u8; r.len()];
            r.read(0, &mut buf);
            assert_eq!(&buf[..], &bytes[4096..4096 + r.len()]);
        }
        Err(
            PmemError::NotARegion { .. }
            | PmemError::Version { .. }
            | PmemError::CorruptHeader { .. }
            | PmemError::SizeMismatch { .. },
        ) => {}
        Err(e) => panic!("untyped failure: {e}"),
    }
});
