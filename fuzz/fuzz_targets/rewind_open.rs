//! Fuzz REWIND recovery over damaged pool bytes (`braid_rewind::Pool::open_in`). The input format and the oracle are those of
//! `braid_testkit::rewind::rewind_open`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::rewind::rewind_open(data) {
        panic!("rewind_open: {v}");
    }
});
