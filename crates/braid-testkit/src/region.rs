//! A braid-pmem region file's header (`braid_pmem::Region::open`): the check of the fuzz
//! target `region_header` and the valid file it starts from. Opening never panics and fails
//! only with `NotARegion`, `Version`, `CorruptHeader` or `SizeMismatch`; a region that opens
//! lies inside the file, reads back its bytes, and takes a store (docs/design.md invariant 6).

use std::path::Path;

use braid_pmem::{PmemConfig, PmemError, Region};

use crate::Checked;

/// Usable bytes of the valid region file.
pub const USABLE: usize = 256;
/// Bytes of a region file's header page.
const HEADER: usize = 4096;

/// A scratch directory for region files: in RAM (`/dev/shm`) where there is one.
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// The bytes of a valid region file with `USABLE` usable bytes.
pub fn valid_file() -> Vec<u8> {
    let d = scratch_dir();
    let p = d.path().join("valid.region");
    drop(Region::create(&p, USABLE, PmemConfig::default()).unwrap());
    std::fs::read(&p).unwrap()
}

/// Write `bytes` to `path` and open it as a region; `opts` bit 0: expect `USABLE` bytes.
pub fn check_file(path: &Path, opts: u8, bytes: &[u8]) -> Checked {
    std::fs::write(path, bytes).unwrap();
    let expected = (opts & 1 != 0).then_some(USABLE);
    match Region::open(path, expected, PmemConfig::default()) {
        Ok(r) => {
            if r.len() + HEADER > bytes.len() {
                return Err(format!(
                    "opened {} usable bytes from a file of {}",
                    r.len(),
                    bytes.len()
                )
                .into());
            }
            let mut buf = vec![0u8; r.len()];
            r.read(0, &mut buf);
            if buf[..] != bytes[HEADER..HEADER + r.len()] {
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
        Err(e) => Err(format!("untyped failure: {e}").into()),
    }
}

/// Fuzz target `region_header`: `[opts]` (bit 0: expect `USABLE` bytes) then the file.
pub fn region_header(data: &[u8]) -> Checked {
    let Some((&opts, bytes)) = data.split_first() else {
        return Ok(());
    };
    let d = scratch_dir();
    check_file(&d.path().join("fuzz.region"), opts, bytes)
}
