//! Fuzz `braid_wal::record::decode`. The input format and the oracle are those of
//! `braid_testkit::records::record_decode`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::records::record_decode(data) {
        panic!("record_decode: {v}");
    }
});
