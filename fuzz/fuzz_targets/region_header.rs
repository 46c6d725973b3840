//! Fuzz a braid-pmem region file's header (`braid_pmem::Region::open`). The input format and the oracle are those of
//! `braid_testkit::region::region_header`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::region::region_header(data) {
        panic!("region_header: {v}");
    }
});
