//! Fuzz the gsn scheme's commit payloads (sparse dependency vectors) and void markers
//! (`braid_wal::scheme::gsn::deps`). The input format and the oracle are those of
//! `braid_testkit::records::gsn_payload`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::records::gsn_payload(data) {
        panic!("gsn_payload: {v}");
    }
});
