//! Fuzz the silor scheme's bookkeeping records (durable epoch with or without the streams'
//! tails, void marker; `braid_wal::scheme::silor::durable`). The input format and the oracle
//! are those of `braid_testkit::records::silor_mark`, which the proptest twins in
//! `crates/braid-testkit` also run.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(v) = braid_testkit::records::silor_mark(data) {
        panic!("silor_mark: {v}");
    }
});
