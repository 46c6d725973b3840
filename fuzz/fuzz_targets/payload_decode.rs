//! Fuzz the redo and command payload codecs (`braid_wal::payload`). The input format and the oracle are those of
//! `braid_testkit::records::payload_decode`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::records::payload_decode(data) {
        panic!("payload_decode: {v}");
    }
});
