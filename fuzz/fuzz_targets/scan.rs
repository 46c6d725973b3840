//! Fuzz the scanner (`braid_wal::scan`). The input format and the oracle are those of
//! `braid_testkit::records::scan`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::records::scan(data) {
        panic!("scan: {v}");
    }
});
