//! Fuzz the file device's segment files (`braid_wal::device::file`). The input format and the oracle are those of
//! `braid_testkit::device::segment_open`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::device::segment_open(data) {
        panic!("segment_open: {v}");
    }
});
