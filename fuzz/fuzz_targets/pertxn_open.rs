//! Fuzz recovery of the NV-Logging region (`braid_wal::scheme::pertxn`). The input format and the oracle are those of
//! `braid_testkit::pertxn::pertxn_open`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::pertxn::pertxn_open(data) {
        panic!("pertxn_open: {v}");
    }
});
