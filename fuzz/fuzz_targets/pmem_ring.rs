//! Fuzz the pmem log ring (`braid_wal::device::pmem`). The input format and the oracle are those of
//! `braid_testkit::device::pmem_ring`, which the proptest twins in `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::device::pmem_ring(data) {
        panic!("pmem_ring: {v}");
    }
});
