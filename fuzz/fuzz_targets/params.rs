//! Fuzz command parameters (`braid_engine::ParamReader`). The input format and the oracle are those of
//! `braid_testkit::params::params`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::params::params(data) {
        panic!("params: {v}");
    }
});
