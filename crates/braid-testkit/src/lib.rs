//! Checks and valid images shared by braid's fuzz targets (`fuzz/`), their proptest twins
//! (this crate's tests, run by CI on every toolchain) and the fuzz seed generator
//! (`cargo run -p braid-testkit --bin fuzz-seeds`).
//!
//! Each fuzz target has one check here, `fn(&[u8]) -> Result<(), Violation>`, that takes the
//! target's input format and returns `Err` describing the violation when a decoder breaks
//! docs/design.md invariant 6 (no panic, no silent skip, only an error that names the damage) or
//! invariant 5 (recovery is idempotent). A fuzz target is one line around its check; a twin
//! feeds it valid images mutated by proptest; the seeds are the valid images in the targets'
//! formats, so all three see the same bytes.
//!
//! ```
//! // A valid segment-file image passes its check; so does any byte string.
//! let seeds = braid_testkit::seeds::all();
//! for s in seeds.iter().filter(|s| s.target == "params") {
//!     braid_testkit::check(s.target, &s.bytes).unwrap();
//! }
//! braid_testkit::check("record_decode", b"not a record at all").unwrap();
//! ```
#![deny(missing_docs)]
// A test kit: a fixture that cannot be built is a failed test, so builders unwrap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod device;
pub mod params;
pub mod pertxn;
pub mod records;
pub mod region;
pub mod rewind;
pub mod seeds;

/// What a check found wrong: a description of the broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(pub String);

impl From<String> for Violation {
    fn from(s: String) -> Self {
        Violation(s)
    }
}

impl From<&str> for Violation {
    fn from(s: &str) -> Self {
        Violation(s.to_string())
    }
}

/// The result of a check.
pub type Checked = Result<(), Violation>;

/// A fuzz target's check: its input bytes in, the violation found (if any) out.
pub type Check = fn(&[u8]) -> Checked;

/// Every fuzz target, by name, with its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("record_decode", records::record_decode),
    ("payload_decode", records::payload_decode),
    ("gsn_payload", records::gsn_payload),
    ("silor_mark", records::silor_mark),
    ("scan", records::scan),
    ("segment_open", device::segment_open),
    ("pmem_ring", device::pmem_ring),
    ("pertxn_open", pertxn::pertxn_open),
    ("region_header", region::region_header),
    ("params", params::params),
    ("rewind_open", rewind::rewind_open),
];

/// Run the check of the fuzz target `target` on `data`.
///
/// # Panics
/// On an unknown target name (a programming error in the caller).
pub fn check(target: &str, data: &[u8]) -> Checked {
    let Some((_, f)) = TARGETS.iter().find(|(n, _)| *n == target) else {
        // Invariant: callers pass one of TARGETS' names.
        panic!("unknown fuzz target {target}");
    };
    f(data)
}

/// The scan mode that an options byte selects (bit 1: salvage), shared by the device checks.
pub(crate) fn mode_of(opts: u8) -> braid_wal::scan::ScanMode {
    if opts & 2 != 0 {
        braid_wal::scan::ScanMode::Salvage
    } else {
        braid_wal::scan::ScanMode::Strict
    }
}
